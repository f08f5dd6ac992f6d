//! A limit on tool calls at once, per MCP session.

use std::sync::Arc;

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
}
