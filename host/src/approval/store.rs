//! Where approvals live: the records, the one atomic step a retried call
//! takes ([`ApprovalStore::check_or_request`]), and a person's decision.
//!
//! Two implementations share this contract: [`MemoryApprovals`] (one process)
//! and [`super::redis_store::RedisApprovals`] (several replicas). The unit tests
//! at the bottom run the same cases against both.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::approvals::DEFAULT_MAX_PENDING_PER_CALLER;

/// Milliseconds since the Unix epoch.
pub type Millis = u64;

pub use crate::state::now_ms;

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Waiting for a person.
    Pending,
    /// A person approved it; the next identical call consumes it.
    Approved,
    /// A person denied it; identical calls are refused until it expires.
    Denied,
    /// An identical call ran on it; it cannot be used again.
    Used,
    /// Its time ran out before it was used (only ever computed, never
    /// stored: see [`Approval::state_at`]).
    Expired,
}

impl State {
    /// The lowercase name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Approved => "approved",
            State::Denied => "denied",
            State::Used => "used",
            State::Expired => "expired",
        }
    }

    /// The state with this stored name.
    pub fn parse(name: &str) -> Option<State> {
        Some(match name {
            "pending" => State::Pending,
            "approved" => State::Approved,
            "denied" => State::Denied,
            "used" => State::Used,
            "expired" => State::Expired,
            _ => return None,
        })
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One request for a person's approval of one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// What people and agents quote: `ap-` and 16 hex digits.
    pub id: String,
    /// The tool the call names.
    pub tool: String,
    /// [`crate::canonical::arguments_hash`] of the call's arguments.
    pub arguments_hash: String,
    /// The complete canonical arguments as a person may see them: secrets
    /// redacted, nothing else left out unless the whole passes
    /// [`super::redact::MAX_SHOWN`] bytes, and then folded saying its size
    /// and SHA-256.
    pub arguments: String,
    /// The complete plan (the host's record of the writes a dry run plans,
    /// which the approved call must send exactly), redacted and
    /// bounded like [`Approval::arguments`]; `None` for a tool that
    /// declares no writes (and in records stored before plans were kept).
    #[serde(default)]
    pub plan: Option<String>,
    /// Who may use it: `token:NAME` or `session:ID` (see [`super::binding`]).
    pub caller: String,
    /// When the call first asked.
    pub created_ms: Millis,
    /// When a person approved or denied it, or the call consumed it.
    pub decided_ms: Option<Millis>,
    /// When it stops counting: `ttl` after it was asked for, or after a
    /// person decided.
    pub expires_ms: Millis,
    /// The stored state; see [`Approval::state_at`] for the one to show.
    pub state: State,
}

impl Approval {
    /// The state as of `now`: pending, approved and denied approvals past
    /// their expiry are expired.
    pub fn state_at(&self, now: Millis) -> State {
        match self.state {
            State::Pending | State::Approved | State::Denied if now >= self.expires_ms => {
                State::Expired
            }
            state => state,
        }
    }
}

/// What a call that needs approval brings to the store.
#[derive(Debug, Clone)]
pub struct Request {
    /// The caller binding (see [`super::binding`]).
    pub caller: String,
    /// The tool.
    pub tool: String,
    /// The canonical hash of the arguments.
    pub arguments_hash: String,
    /// The redacted arguments, for people ([`Approval::arguments`]).
    pub arguments: String,
    /// The redacted plan, for people ([`Approval::plan`]).
    pub plan: Option<String>,
}

impl Request {
    /// The key that identical calls share: caller, tool and arguments.
    /// Hashed so that a long caller name cannot make a long store key.
    pub fn binding_key(&self) -> String {
        key_of(&[&self.caller, &self.tool, &self.arguments_hash])
    }

    /// The key of the caller alone, under which a shared store counts the
    /// caller's open approvals; hashed like [`Request::binding_key`].
    pub fn caller_key(&self) -> String {
        key_of(&[&self.caller])
    }
}

/// The hex SHA-256 of `parts`, each ended by a NUL so that no two lists
/// of parts run together into the same text.
fn key_of(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The outcome of the step a call takes when it needs approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// An approval for exactly this call was waiting; it is now used, and
    /// the call runs.
    Granted(Approval),
    /// A person has not decided yet.
    Pending {
        /// The approval to quote.
        approval: Approval,
        /// Whether this call opened it (false: an earlier identical call did).
        created: bool,
        /// An earlier approval for the same call that expired unused.
        expired: Option<String>,
    },
    /// A person denied this call.
    Denied(Approval),
    /// Too many approvals are open; nothing was recorded.
    Full,
    /// This caller already has `open` pending approvals, its cap
    /// (`[approvals] max_pending_per_caller`); nothing was recorded.
    CallerFull {
        /// The caller's pending approvals.
        open: usize,
    },
}

/// A person's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Let the next identical call run once.
    Approve,
    /// Refuse identical calls until the denial expires.
    Deny,
}

/// Why a decision was not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecideError {
    /// No approval has this id (never, or purged long ago).
    #[error("no approval has the id {0:?}; `pve-mcp approvals list` shows the current ones")]
    Unknown(String),
    /// It expired before the decision.
    #[error(
        "approval {} ({}) has expired; the agent's next identical call will ask again",
        .0.id,
        .0.tool
    )]
    Expired(Box<Approval>),
    /// It was already decided or used, so this decision does not apply.
    #[error("approval {} ({}) is already {}; nothing changed", .0.id, .0.tool, .0.state)]
    AlreadyDecided(Box<Approval>),
    /// The store could not be reached.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The store could not be used (Redis down, bad data). Its message never
/// carries a credential: Redis URLs are not part of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the approval store is unavailable: {0}")]
pub struct StoreError(pub String);

/// How long approvals count, how long they are kept for `list` after that,
/// and how many may be open at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// `[approvals] ttl_secs`.
    pub ttl: Duration,
    /// How long an expired or used approval stays visible (and answers
    /// "expired" rather than "unknown").
    pub retain: Duration,
    /// The most approvals kept at once; beyond it new requests are refused
    /// rather than letting an agent fill memory or Redis.
    pub max_records: usize,
    /// The most pending approvals one caller may have, so that one agent
    /// cannot reach `max_records` and block every other caller for the ttl
    /// (`[approvals] max_pending_per_caller`).
    pub max_pending_per_caller: usize,
}

/// Expired and used approvals stay listed this long.
pub const RETAIN: Duration = Duration::from_secs(3600);

/// At most this many approvals are kept (all states).
pub const MAX_RECORDS: usize = 10_000;

impl StoreLimits {
    /// The limits for this time to live, with the default per-caller cap.
    pub fn with_ttl(ttl: Duration) -> StoreLimits {
        StoreLimits {
            ttl,
            retain: RETAIN,
            max_records: MAX_RECORDS,
            max_pending_per_caller: DEFAULT_MAX_PENDING_PER_CALLER,
        }
    }

    pub(crate) fn ttl_ms(&self) -> Millis {
        self.ttl.as_millis().max(1) as Millis
    }

    pub(crate) fn retain_ms(&self) -> Millis {
        self.retain.as_millis() as Millis
    }
}

/// A boxed future, so the store can be a trait object.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Approval state, in memory or shared.
pub trait ApprovalStore: Send + Sync {
    /// The one atomic step of a call that needs approval: consume an
    /// approval for exactly this call, or report the pending or denied one,
    /// or open a new one with `new_id`.
    fn check_or_request<'a>(
        &'a self,
        request: &'a Request,
        new_id: &'a str,
        now: Millis,
    ) -> StoreFuture<'a, Result<Check, StoreError>>;

    /// Records a person's decision.
    fn decide<'a>(
        &'a self,
        id: &'a str,
        verdict: Verdict,
        now: Millis,
    ) -> StoreFuture<'a, Result<Approval, DecideError>>;

    /// Every approval still kept, oldest first.
    fn list(&self, now: Millis) -> StoreFuture<'_, Result<Vec<Approval>, StoreError>>;

    /// Records that the approval with this single-use `nonce` (from a
    /// 2026-07-28 client's sealed `requestState`) runs its call: `true` the
    /// first time, `false` once it was used. Remembered until `until`, its
    /// expiry, after which the seal refuses it anyway.
    fn use_once<'a>(
        &'a self,
        nonce: &'a str,
        until: Millis,
        now: Millis,
    ) -> StoreFuture<'a, Result<bool, StoreError>>;
}

/// At most this many used nonces are remembered at once; past it a retry
/// is refused (fail closed) rather than letting memory grow.
pub const MAX_NONCES: usize = 100_000;

/// A fresh approval id: 64 random bits, short enough to type.
pub fn new_id() -> String {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut id = String::with_capacity(19);
    id.push_str("ap-");
    for b in &bytes[..8] {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// Approvals in this process's memory.
pub struct MemoryApprovals {
    limits: StoreLimits,
    inner: Mutex<Records>,
    /// Used round-trip nonces and when each may be forgotten.
    nonces: Mutex<HashMap<String, Millis>>,
}

#[derive(Default)]
struct Records {
    by_id: HashMap<String, Approval>,
    /// Binding key → the id of the approval identical calls currently use.
    by_binding: HashMap<String, String>,
}

impl MemoryApprovals {
    /// An empty store.
    pub fn new(limits: StoreLimits) -> MemoryApprovals {
        MemoryApprovals {
            limits,
            inner: Mutex::new(Records::default()),
            nonces: Mutex::new(HashMap::new()),
        }
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Records> {
        // A panic while holding the lock cannot leave a record half-written
        // (every update is a single insert), so a poisoned lock is usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn purge(&self, records: &mut Records, now: Millis) {
        let retain = self.limits.retain_ms();
        records
            .by_id
            .retain(|_, a| now < a.expires_ms.saturating_add(retain));
        let Records { by_id, by_binding } = records;
        by_binding.retain(|_, id| by_id.contains_key(id));
    }

    fn check_now(&self, request: &Request, new_id: &str, now: Millis) -> Check {
        let mut records = self.records();
        self.purge(&mut records, now);
        let key = request.binding_key();
        let mut expired = None;
        if let Some(id) = records.by_binding.get(&key).cloned()
            && let Some(approval) = records.by_id.get_mut(&id)
        {
            match approval.state_at(now) {
                State::Approved => {
                    approval.state = State::Used;
                    approval.decided_ms = Some(now);
                    let granted = approval.clone();
                    records.by_binding.remove(&key);
                    return Check::Granted(granted);
                }
                State::Denied => return Check::Denied(approval.clone()),
                State::Pending => {
                    return Check::Pending {
                        approval: approval.clone(),
                        created: false,
                        expired: None,
                    };
                }
                State::Expired => expired = Some(id),
                State::Used => {}
            }
        }
        if records.by_id.len() >= self.limits.max_records {
            return Check::Full;
        }
        let open = records
            .by_id
            .values()
            .filter(|a| a.caller == request.caller && a.state_at(now) == State::Pending)
            .count();
        if open >= self.limits.max_pending_per_caller {
            return Check::CallerFull { open };
        }
        let approval = Approval {
            id: new_id.to_string(),
            tool: request.tool.clone(),
            arguments_hash: request.arguments_hash.clone(),
            arguments: request.arguments.clone(),
            plan: request.plan.clone(),
            caller: request.caller.clone(),
            created_ms: now,
            decided_ms: None,
            expires_ms: now.saturating_add(self.limits.ttl_ms()),
            state: State::Pending,
        };
        records.by_id.insert(approval.id.clone(), approval.clone());
        records.by_binding.insert(key, approval.id.clone());
        Check::Pending {
            approval,
            created: true,
            expired,
        }
    }

    fn decide_now(&self, id: &str, verdict: Verdict, now: Millis) -> Result<Approval, DecideError> {
        let mut records = self.records();
        self.purge(&mut records, now);
        let ttl = self.limits.ttl_ms();
        let Some(approval) = records.by_id.get_mut(id) else {
            return Err(DecideError::Unknown(id.to_string()));
        };
        match (approval.state_at(now), verdict) {
            (State::Expired, _) => return Err(DecideError::Expired(Box::new(approval.clone()))),
            (State::Pending, _) | (State::Approved, Verdict::Deny) => {}
            _ => return Err(DecideError::AlreadyDecided(Box::new(approval.clone()))),
        }
        approval.state = match verdict {
            Verdict::Approve => State::Approved,
            Verdict::Deny => State::Denied,
        };
        approval.decided_ms = Some(now);
        approval.expires_ms = now.saturating_add(ttl);
        Ok(approval.clone())
    }

    fn use_now(&self, nonce: &str, until: Millis, now: Millis) -> Result<bool, StoreError> {
        // Poisoning cannot leave the map half-written (one insert).
        let mut nonces = self.nonces.lock().unwrap_or_else(|p| p.into_inner());
        if nonces.contains_key(nonce) {
            return Ok(false);
        }
        if nonces.len() >= MAX_NONCES {
            nonces.retain(|_, forget| now < *forget);
            if nonces.len() >= MAX_NONCES {
                return Err(StoreError(format!(
                    "{MAX_NONCES} approvals given in the last ttl are still remembered"
                )));
            }
        }
        nonces.insert(nonce.to_string(), until);
        Ok(true)
    }

    fn list_now(&self, now: Millis) -> Vec<Approval> {
        let mut records = self.records();
        self.purge(&mut records, now);
        let mut all: Vec<Approval> = records.by_id.values().cloned().collect();
        all.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        all
    }
}

impl ApprovalStore for MemoryApprovals {
    fn check_or_request<'a>(
        &'a self,
        request: &'a Request,
        new_id: &'a str,
        now: Millis,
    ) -> StoreFuture<'a, Result<Check, StoreError>> {
        Box::pin(async move { Ok(self.check_now(request, new_id, now)) })
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        verdict: Verdict,
        now: Millis,
    ) -> StoreFuture<'a, Result<Approval, DecideError>> {
        Box::pin(async move { self.decide_now(id, verdict, now) })
    }

    fn list(&self, now: Millis) -> StoreFuture<'_, Result<Vec<Approval>, StoreError>> {
        Box::pin(async move { Ok(self.list_now(now)) })
    }

    fn use_once<'a>(
        &'a self,
        nonce: &'a str,
        until: Millis,
        now: Millis,
    ) -> StoreFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { self.use_now(nonce, until, now) })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! The store contract, run against every implementation.

    use super::*;

    pub(crate) const TTL: Duration = Duration::from_secs(60);

    pub(crate) fn request(caller: &str, tool: &str, hash: &str) -> Request {
        Request {
            caller: caller.into(),
            tool: tool.into(),
            arguments_hash: hash.into(),
            arguments: r#"{"vmid":100}"#.into(),
            plan: None,
        }
    }

    /// A long argument and a long plan come back from the store whole, and
    /// a record without a plan has none.
    pub(crate) async fn records_carry_arguments_and_plan_whole(store: &dyn ApprovalStore) {
        let t = now_ms();
        let arguments = format!(
            r#"{{"config":{{"description":"{}","net0":"virtio,bridge=vmbr666"}},"vmid":102}}"#,
            "d".repeat(4096)
        );
        let plan = format!(
            "PUT /api2/json/nodes/pve1/qemu/102/config {}",
            "p".repeat(8192)
        );
        let req = Request {
            arguments: arguments.clone(),
            plan: Some(plan.clone()),
            ..request("token:alice", "pve_set_vm_config", "sha256:long")
        };
        store.check_or_request(&req, "ap-long", t).await.unwrap();
        store
            .check_or_request(&request("token:alice", "t", "sha256:none"), "ap-none", t)
            .await
            .unwrap();
        let listed = store.list(t + 1).await.unwrap();
        let long = listed.iter().find(|a| a.id == "ap-long").unwrap();
        assert_eq!(long.arguments, arguments);
        assert_eq!(long.plan.as_deref(), Some(plan.as_str()));
        let none = listed.iter().find(|a| a.id == "ap-none").unwrap();
        assert_eq!(none.plan, None);
    }

    fn pending_id(check: &Check) -> (String, bool, Option<String>) {
        match check {
            Check::Pending {
                approval,
                created,
                expired,
            } => (approval.id.clone(), *created, expired.clone()),
            other => panic!("expected pending, got {other:?}"),
        }
    }

    /// Pending, the same id again, approve, consumed once, pending again.
    pub(crate) async fn approve_then_consume_once(store: &dyn ApprovalStore) {
        let req = request("session:stdio", "pve_get_vm_status", "sha256:aa");
        let t = now_ms();
        let first = store.check_or_request(&req, "ap-1", t).await.unwrap();
        assert_eq!(pending_id(&first), ("ap-1".into(), true, None));
        let again = store.check_or_request(&req, "ap-2", t + 1).await.unwrap();
        assert_eq!(pending_id(&again), ("ap-1".into(), false, None));
        assert_eq!(store.list(t + 2).await.unwrap().len(), 1, "no duplicate");

        let approved = store.decide("ap-1", Verdict::Approve, t + 3).await.unwrap();
        assert_eq!(approved.state, State::Approved);
        assert_eq!(approved.expires_ms, t + 3 + TTL.as_millis() as u64);

        match store.check_or_request(&req, "ap-3", t + 4).await.unwrap() {
            Check::Granted(a) => {
                assert_eq!(a.id, "ap-1");
                assert_eq!(a.state, State::Used);
            }
            other => panic!("expected granted, got {other:?}"),
        }
        let next = store.check_or_request(&req, "ap-4", t + 5).await.unwrap();
        assert_eq!(pending_id(&next), ("ap-4".into(), true, None));
        let listed = store.list(t + 6).await.unwrap();
        let states: Vec<_> = listed.iter().map(|a| (a.id.as_str(), a.state)).collect();
        assert_eq!(states, [("ap-1", State::Used), ("ap-4", State::Pending)]);
        assert!(matches!(
            store.decide("ap-1", Verdict::Approve, t + 7).await,
            Err(DecideError::AlreadyDecided(_))
        ));
    }

    /// Another caller, tool or argument hash never matches.
    pub(crate) async fn binding_is_exact(store: &dyn ApprovalStore) {
        let t = now_ms();
        let req = request("token:alice", "pve_list_vms", "sha256:bb");
        store.check_or_request(&req, "ap-a", t).await.unwrap();
        store.decide("ap-a", Verdict::Approve, t + 1).await.unwrap();
        for (other, id) in [
            (request("token:bob", "pve_list_vms", "sha256:bb"), "ap-b"),
            (
                request("token:alice", "pve_list_nodes", "sha256:bb"),
                "ap-c",
            ),
            (request("token:alice", "pve_list_vms", "sha256:cc"), "ap-d"),
        ] {
            let check = store.check_or_request(&other, id, t + 2).await.unwrap();
            assert_eq!(pending_id(&check), (id.into(), true, None));
        }
        assert!(matches!(
            store.check_or_request(&req, "ap-e", t + 3).await.unwrap(),
            Check::Granted(a) if a.id == "ap-a"
        ));
    }

    /// A denial stands for the ttl, then a new request opens.
    pub(crate) async fn deny_stands_until_expiry(store: &dyn ApprovalStore) {
        let t = now_ms();
        let ttl = TTL.as_millis() as u64;
        let req = request("session:s1", "pve_list_vms", "sha256:dd");
        store.check_or_request(&req, "ap-x", t).await.unwrap();
        let denied = store.decide("ap-x", Verdict::Deny, t + 10).await.unwrap();
        assert_eq!(denied.state, State::Denied);
        assert!(matches!(
            store.check_or_request(&req, "ap-y", t + 11).await.unwrap(),
            Check::Denied(a) if a.id == "ap-x"
        ));
        assert!(matches!(
            store.decide("ap-x", Verdict::Approve, t + 12).await,
            Err(DecideError::AlreadyDecided(_))
        ));
        let later = store
            .check_or_request(&req, "ap-z", t + 10 + ttl)
            .await
            .unwrap();
        assert_eq!(
            pending_id(&later),
            ("ap-z".into(), true, Some("ap-x".into()))
        );
    }

    /// Pending and approved approvals expire; expired ones cannot be
    /// decided and are listed as expired; unknown ids are reported.
    pub(crate) async fn expiry_and_unknown(store: &dyn ApprovalStore) {
        let t = now_ms();
        let ttl = TTL.as_millis() as u64;
        let req = request("session:s2", "pve_list_vms", "sha256:ee");
        store.check_or_request(&req, "ap-p", t).await.unwrap();
        assert!(matches!(
            store.decide("ap-p", Verdict::Approve, t + ttl).await,
            Err(DecideError::Expired(a)) if a.id == "ap-p"
        ));
        let listed = store.list(t + ttl).await.unwrap();
        assert_eq!(listed[0].state_at(t + ttl), State::Expired);

        let req2 = request("session:s2", "pve_list_vms", "sha256:ff");
        store.check_or_request(&req2, "ap-q", t).await.unwrap();
        store.decide("ap-q", Verdict::Approve, t + 1).await.unwrap();
        let retry = store
            .check_or_request(&req2, "ap-r", t + 1 + ttl)
            .await
            .unwrap();
        assert_eq!(
            pending_id(&retry),
            ("ap-r".into(), true, Some("ap-q".into())),
            "an expired approval does not run the call"
        );
        assert!(matches!(
            store.decide("ap-nope", Verdict::Deny, t).await,
            Err(DecideError::Unknown(id)) if id == "ap-nope"
        ));
    }

    /// An approved-but-unused approval can still be denied.
    pub(crate) async fn approved_can_be_withdrawn(store: &dyn ApprovalStore) {
        let t = now_ms();
        let req = request("session:s3", "pve_list_vms", "sha256:11");
        store.check_or_request(&req, "ap-w", t).await.unwrap();
        store.decide("ap-w", Verdict::Approve, t + 1).await.unwrap();
        store.decide("ap-w", Verdict::Deny, t + 2).await.unwrap();
        assert!(matches!(
            store.check_or_request(&req, "ap-v", t + 3).await.unwrap(),
            Check::Denied(_)
        ));
    }

    /// One caller at its cap of pending approvals is refused a new one,
    /// while another caller still gets one; a decision frees a place.
    pub(crate) async fn pending_cap_is_per_caller(store: &dyn ApprovalStore) {
        let t = now_ms();
        for (i, hash) in ["a", "b"].iter().enumerate() {
            let req = request("token:alice", "pve_list_vms", hash);
            let check = store.check_or_request(&req, &format!("ap-cap{i}"), t).await;
            assert!(matches!(
                check.unwrap(),
                Check::Pending { created: true, .. }
            ));
        }
        let third = request("token:alice", "pve_list_vms", "c");
        assert_eq!(
            store
                .check_or_request(&third, "ap-cap2", t + 1)
                .await
                .unwrap(),
            Check::CallerFull { open: 2 }
        );
        // An identical retry of an open one still answers "pending".
        let retry = request("token:alice", "pve_list_vms", "a");
        assert!(matches!(
            store
                .check_or_request(&retry, "ap-cap3", t + 1)
                .await
                .unwrap(),
            Check::Pending { created: false, .. }
        ));
        let bob = request("token:bob", "pve_list_vms", "c");
        assert!(matches!(
            store
                .check_or_request(&bob, "ap-cap4", t + 2)
                .await
                .unwrap(),
            Check::Pending { created: true, .. }
        ));
        store.decide("ap-cap0", Verdict::Deny, t + 3).await.unwrap();
        assert!(matches!(
            store
                .check_or_request(&third, "ap-cap5", t + 4)
                .await
                .unwrap(),
            Check::Pending { created: true, .. }
        ));
    }

    /// A round-trip nonce is used once; another is independent.
    pub(crate) async fn nonces_are_used_once(store: &dyn ApprovalStore) {
        let t = now_ms();
        let until = t + TTL.as_millis() as u64;
        assert!(store.use_once("0123abcd", until, t).await.unwrap());
        assert!(!store.use_once("0123abcd", until, t + 1).await.unwrap());
        assert!(store.use_once("4567ef01", until, t + 1).await.unwrap());
    }

    /// The limits [`pending_cap_is_per_caller`] runs with.
    pub(crate) fn capped() -> StoreLimits {
        StoreLimits {
            max_pending_per_caller: 2,
            ..StoreLimits::with_ttl(TTL)
        }
    }

    #[tokio::test]
    async fn memory_store_contract() {
        pending_cap_is_per_caller(&MemoryApprovals::new(capped())).await;
        let limits = StoreLimits::with_ttl(TTL);
        approve_then_consume_once(&MemoryApprovals::new(limits)).await;
        binding_is_exact(&MemoryApprovals::new(limits)).await;
        deny_stands_until_expiry(&MemoryApprovals::new(limits)).await;
        expiry_and_unknown(&MemoryApprovals::new(limits)).await;
        approved_can_be_withdrawn(&MemoryApprovals::new(limits)).await;
        records_carry_arguments_and_plan_whole(&MemoryApprovals::new(limits)).await;
        nonces_are_used_once(&MemoryApprovals::new(limits)).await;
    }

    #[tokio::test]
    async fn expired_approvals_are_kept_for_a_while_then_purged() {
        // Redis purges by its own clock, so this runs on memory only.
        let store = MemoryApprovals::new(StoreLimits::with_ttl(TTL));
        let ttl = TTL.as_millis() as u64;
        let t = 1_000_000;
        store
            .check_or_request(&request("s", "t", "h"), "ap-k", t)
            .await
            .unwrap();
        let kept = t + ttl + RETAIN.as_millis() as u64 - 1;
        assert!(matches!(
            store.decide("ap-k", Verdict::Deny, kept).await,
            Err(DecideError::Expired(_))
        ));
        assert!(matches!(
            store.decide("ap-k", Verdict::Deny, kept + 1).await,
            Err(DecideError::Unknown(_))
        ));
        assert!(store.list(kept + 1).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_full_store_refuses_new_requests() {
        let store = MemoryApprovals::new(StoreLimits {
            max_records: 2,
            ..StoreLimits::with_ttl(TTL)
        });
        for (i, hash) in ["a", "b"].iter().enumerate() {
            let check = store
                .check_or_request(&request("s", "t", hash), &format!("ap-{i}"), 1)
                .await
                .unwrap();
            assert!(matches!(check, Check::Pending { .. }));
        }
        // Still answers for an existing one, refuses a new one.
        assert!(matches!(
            store
                .check_or_request(&request("s", "t", "a"), "ap-9", 2)
                .await
                .unwrap(),
            Check::Pending { created: false, .. }
        ));
        assert_eq!(
            store
                .check_or_request(&request("s", "t", "c"), "ap-9", 2)
                .await
                .unwrap(),
            Check::Full
        );
    }

    #[test]
    fn ids_are_short_and_distinct() {
        let a = new_id();
        assert_eq!(a.len(), 19);
        assert!(a.starts_with("ap-"));
        assert_ne!(a, new_id());
    }
}
