//! Limits that keep one client from starving the others, and the count of
//! requests in flight that a graceful shutdown waits for.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::BodyExt;
use tokio::sync::Notify;

use super::response::Body;

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
pub fn hold_until_sent(body: Body, guard: InFlightGuard) -> Body {
    body.map_frame(move |frame| {
        let _held = &guard;
        frame
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
