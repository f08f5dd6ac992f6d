//! Limits that keep one client from starving the others: the connection
//! budget (a cap on open connections, a cap per address on connections
//! that have not authenticated, and who makes room when one is reached),
//! and the count of requests in flight that a graceful shutdown waits for.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::response::Body;

/// At most one warning about closed connections per this long: a flood
/// must not become a flood of log lines.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// How many connections a listener keeps open.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Open connections, authenticated or not.
    pub max_total: usize,
    /// Connections from one address that have not yet sent a request that
    /// passed the token check; `None` for no such limit (a unix socket's
    /// clients have no address).
    pub max_anonymous_per_peer: Option<usize>,
}

/// The address a per-peer limit counts by: an IPv4 address, or the /64 an
/// IPv6 address is in (one host is usually given a whole /64, so counting
/// single IPv6 addresses would count nothing).
pub fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

/// The open connections of one listener. When a new connection would go
/// over a limit, the oldest connection that has not authenticated (from
/// the same address for the per-peer limit, from anyone for the total) is
/// closed to make room; only when every connection has authenticated is
/// the new one refused. So connections that never authenticate cannot
/// lock anyone out: a newcomer displaces them, while a client that has
/// shown a token keeps its connection.
#[derive(Debug)]
pub struct ConnectionBudget {
    limits: ConnectionLimits,
    state: Mutex<BudgetState>,
}

#[derive(Debug, Default)]
struct BudgetState {
    /// Every open connection, oldest first.
    open: BTreeMap<u64, Open>,
    /// Connections not yet authenticated, per address.
    anonymous_per_peer: HashMap<IpAddr, usize>,
    next: u64,
    /// Connections closed or refused since the last warning.
    displaced: u64,
    refused: u64,
    warned: Option<Instant>,
}

#[derive(Debug)]
struct Open {
    peer: Option<IpAddr>,
    anonymous: bool,
    close: CancellationToken,
}

/// One admitted connection. It counts until it is dropped;
/// its [`Admitted::closed`] fires when the budget takes its place for a
/// newer connection.
#[derive(Debug)]
pub struct Admitted(Arc<AdmittedInner>);

#[derive(Debug)]
struct AdmittedInner {
    budget: Arc<ConnectionBudget>,
    id: u64,
    close: CancellationToken,
}

impl ConnectionBudget {
    /// A budget with these limits.
    pub fn new(limits: ConnectionLimits) -> Arc<ConnectionBudget> {
        Arc::new(ConnectionBudget {
            limits,
            state: Mutex::new(BudgetState::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a new connection from `peer` (`None` for a unix socket),
    /// making room if a limit is reached; `None` when there is no room.
    pub fn admit(self: &Arc<Self>, peer: Option<IpAddr>) -> Option<Admitted> {
        let peer = peer.map(peer_key);
        let mut state = self.state();
        if let (Some(peer), Some(max)) = (peer, self.limits.max_anonymous_per_peer)
            && state.anonymous_per_peer.get(&peer).copied().unwrap_or(0) >= max
        {
            state.displace(|open| open.peer == Some(peer));
        }
        if state.open.len() >= self.limits.max_total && !state.displace(|_| true) {
            state.refused += 1;
            state.warn(self.limits);
            return None;
        }
        state.warn(self.limits);
        let id = state.next;
        state.next += 1;
        let close = CancellationToken::new();
        state.open.insert(
            id,
            Open {
                peer,
                anonymous: true,
                close: close.clone(),
            },
        );
        if let Some(peer) = peer {
            *state.anonymous_per_peer.entry(peer).or_default() += 1;
        }
        Some(Admitted(Arc::new(AdmittedInner {
            budget: self.clone(),
            id,
            close,
        })))
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.state().open.len()
    }
}

impl BudgetState {
    /// Closes the oldest anonymous connection that `pick` accepts; whether
    /// there was one.
    fn displace(&mut self, pick: impl Fn(&Open) -> bool) -> bool {
        let Some(id) = self
            .open
            .iter()
            .find(|(_, open)| open.anonymous && pick(open))
            .map(|(id, _)| *id)
        else {
            return false;
        };
        self.remove(id);
        self.displaced += 1;
        true
    }

    /// Forgets a connection (and tells it to close, if it has not).
    fn remove(&mut self, id: u64) {
        let Some(open) = self.open.remove(&id) else {
            return;
        };
        open.close.cancel();
        if open.anonymous {
            self.forget_anonymous(open.peer);
        }
    }

    fn forget_anonymous(&mut self, peer: Option<IpAddr>) {
        if let Some(peer) = peer
            && let Some(n) = self.anonymous_per_peer.get_mut(&peer)
        {
            *n -= 1;
            if *n == 0 {
                self.anonymous_per_peer.remove(&peer);
            }
        }
    }

    fn warn(&mut self, limits: ConnectionLimits) {
        if self.displaced == 0 && self.refused == 0 {
            return;
        }
        let now = Instant::now();
        if self
            .warned
            .is_some_and(|at| now.duration_since(at) < WARN_EVERY)
        {
            return;
        }
        tracing::warn!(
            displaced = self.displaced,
            refused = self.refused,
            open = self.open.len(),
            max_connections = limits.max_total,
            max_anonymous_per_peer = limits.max_anonymous_per_peer,
            "connection limits reached: closed the oldest unauthenticated connections to make room \
             (displaced) or new ones when every connection had authenticated (refused)"
        );
        self.displaced = 0;
        self.refused = 0;
        self.warned = Some(now);
    }
}

/// What a request carries of its connection's place in the budget, for
/// the token check to mark. It does not keep the place: rmcp may keep a
/// request's extensions after the connection has gone.
#[derive(Debug, Clone)]
pub struct ConnectionMark(Weak<AdmittedInner>);

impl ConnectionMark {
    /// The connection sent a request that passed the token check: it no
    /// longer counts against its address's anonymous limit, and is never
    /// closed to make room.
    pub fn authenticated(&self) {
        if let Some(admitted) = self.0.upgrade() {
            Admitted(admitted).authenticated();
        }
    }
}

impl Admitted {
    /// The mark for this connection's requests.
    pub fn mark(&self) -> ConnectionMark {
        ConnectionMark(Arc::downgrade(&self.0))
    }

    /// See [`ConnectionMark::authenticated`].
    pub fn authenticated(&self) {
        let mut state = self.0.budget.state();
        let Some(open) = state.open.get_mut(&self.0.id) else {
            return;
        };
        if std::mem::replace(&mut open.anonymous, false) {
            let peer = open.peer;
            state.forget_anonymous(peer);
        }
    }

    /// Resolves when the budget closed this connection to make room.
    pub async fn closed(&self) {
        self.0.close.cancelled().await
    }
}

impl Drop for AdmittedInner {
    fn drop(&mut self) {
        self.budget.state().remove(self.id);
    }
}

/// Requests whose responses are still being produced.
#[derive(Debug, Default)]
pub struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

/// One request in flight; dropping it (when its response body has been
/// sent or abandoned) ends it.
#[derive(Debug)]
pub struct InFlightGuard(Arc<InFlight>);

impl InFlight {
    /// Counts a request until the guard is dropped.
    pub fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(self.clone())
    }

    /// Requests in flight now.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Resolves when no request is in flight.
    pub async fn drained(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count() == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// The body, holding the guard until the body is finished or dropped: an
/// SSE response is in flight until its last event is written.
pub fn hold_until_sent<G: Send + Sync + 'static>(body: Body, guard: G) -> Body {
    body.map_frame(move |frame| {
        let _held = &guard;
        frame
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(max_total: usize, per_peer: usize) -> Arc<ConnectionBudget> {
        ConnectionBudget::new(ConnectionLimits {
            max_total,
            max_anonymous_per_peer: Some(per_peer),
        })
    }

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn an_address_over_its_limit_displaces_its_own_oldest() {
        let b = budget(100, 2);
        let first = b.admit(ip("10.0.0.1")).unwrap();
        let second = b.admit(ip("10.0.0.1")).unwrap();
        let other = b.admit(ip("10.0.0.2")).unwrap();
        let third = b.admit(ip("10.0.0.1")).unwrap();
        assert!(first.0.close.is_cancelled());
        assert!(!second.0.close.is_cancelled() && !other.0.close.is_cancelled());
        assert!(!third.0.close.is_cancelled());
        assert_eq!(b.open(), 3);
        drop(first);
        assert_eq!(b.open(), 3, "a displaced connection is already forgotten");
    }

    #[test]
    fn authenticated_connections_are_never_displaced() {
        let b = budget(2, 10);
        let a = b.admit(ip("10.0.0.1")).unwrap();
        a.authenticated();
        let anon = b.admit(ip("10.0.0.2")).unwrap();
        let newer = b.admit(ip("10.0.0.3")).unwrap();
        assert!(
            anon.0.close.is_cancelled(),
            "the total displaces the oldest anonymous"
        );
        assert!(!a.0.close.is_cancelled());
        newer.authenticated();
        assert!(
            b.admit(ip("10.0.0.4")).is_none(),
            "all authenticated: refused"
        );
        drop(newer);
        assert!(b.admit(ip("10.0.0.4")).is_some());
    }

    #[test]
    fn ipv6_counts_by_its_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(
            peer_key("2001:db8:1:2:3:4:5:6".parse().unwrap()),
            "2001:db8:1:2::".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            peer_key("::ffff:10.0.0.1".parse().unwrap()),
            "10.0.0.1".parse::<IpAddr>().unwrap()
        );
        let b = budget(100, 1);
        let a = b.admit(ip("2001:db8::1")).unwrap();
        let _b = b.admit(ip("2001:db8::2")).unwrap();
        assert!(a.0.close.is_cancelled());
    }

    #[tokio::test]
    async fn drained_waits_for_the_last_guard() {
        let inflight = Arc::new(InFlight::default());
        inflight.drained().await;
        let a = inflight.enter();
        let b = inflight.enter();
        let waiter = tokio::spawn({
            let inflight = inflight.clone();
            async move { inflight.drained().await }
        });
        drop(a);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        drop(b);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn the_body_holds_its_guard() {
        let inflight = Arc::new(InFlight::default());
        let body = hold_until_sent(super::super::response::full("x"), inflight.enter());
        assert_eq!(inflight.count(), 1);
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"x");
        assert_eq!(inflight.count(), 0);
    }
}
