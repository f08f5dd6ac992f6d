//! A limit on tool calls at once, per MCP session, and per token for
//! requests without a session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Tool calls one session may run at once. Each session's server gets its
/// own; a call over the limit is answered at once with a tool error, which
/// an agent reads and acts on (wait, retry), rather than an HTTP error a
/// client library might treat as a broken session.
#[derive(Clone, Debug)]
pub struct CallSlots {
    slots: Arc<Semaphore>,
    limit: usize,
}

impl CallSlots {
    /// Room for `limit` calls at once.
    pub fn new(limit: usize) -> CallSlots {
        CallSlots {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    /// A slot for one call, or `None` when all are taken.
    pub fn try_acquire(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().try_acquire_owned().ok()
    }

    /// The configured limit.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// The call slots of requests without a session (MCP 2026-07-28): rmcp
/// makes a new server for each such request, so slots of its own would
/// bind nothing. Instead every stateless request of one caller session
/// (`stateless:TOKEN`, see [`crate::caller`]) shares one set. There is one
/// entry per configured token (and one without a token), so the map stays
/// as small as the configuration.
#[derive(Debug)]
pub struct StatelessSlots {
    limit: usize,
    by_session: Mutex<HashMap<Arc<str>, CallSlots>>,
}

impl StatelessSlots {
    /// Room for `limit` calls at once per token.
    pub fn new(limit: usize) -> StatelessSlots {
        StatelessSlots {
            limit,
            by_session: Mutex::new(HashMap::new()),
        }
    }

    /// The slots shared by the stateless requests of `session`.
    pub fn for_session(&self, session: &Arc<str>) -> CallSlots {
        self.by_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(session.clone())
            .or_insert_with(|| CallSlots::new(self.limit))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_run_out_and_come_back() {
        let slots = CallSlots::new(1);
        let first = slots.try_acquire().unwrap();
        assert!(slots.try_acquire().is_none());
        drop(first);
        assert!(slots.try_acquire().is_some());
    }

    #[test]
    fn stateless_requests_of_one_token_share_their_slots() {
        let shared = StatelessSlots::new(1);
        let a: Arc<str> = Arc::from("stateless:a");
        let held = shared.for_session(&a).try_acquire().unwrap();
        assert!(shared.for_session(&a).try_acquire().is_none());
        assert!(
            shared
                .for_session(&Arc::from("stateless:b"))
                .try_acquire()
                .is_some()
        );
        drop(held);
        assert!(shared.for_session(&a).try_acquire().is_some());
    }
}
