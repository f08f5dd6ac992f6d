//! Counters in this process's memory: the default, for one replica.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::counter::{CounterStore, Reservation, Reserve, StateError, StateFuture, Window, now_ms};

/// Past this many counters, ones whose window has ended are dropped.
const SWEEP_AT: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Slot {
    window: u64,
    length_ms: u64,
    used: u64,
}

/// Fixed-window counters behind one mutex (held only to compare and add).
#[derive(Debug, Default)]
pub struct MemoryStore {
    slots: Mutex<HashMap<String, Slot>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn reserve_at(&self, key: &str, window: Window, now: u64) -> Result<Reserve, StateError> {
        let length_ms = (window.length.as_millis() as u64).max(1);
        let index = now / length_ms;
        let mut slots = self
            .slots
            .lock()
            .map_err(|_| StateError("the in-memory counters are unusable after a crash".into()))?;
        if slots.len() >= SWEEP_AT {
            slots.retain(|_, s| s.window >= now / s.length_ms);
        }
        let slot = slots.entry(key.to_string()).or_insert(Slot {
            window: index,
            length_ms,
            used: 0,
        });
        if slot.window != index || slot.length_ms != length_ms {
            *slot = Slot {
                window: index,
                length_ms,
                used: 0,
            };
        }
        if slot.used >= window.limit {
            let ends = (index + 1) * length_ms;
            return Ok(Reserve::Exhausted {
                retry_after: Duration::from_millis(ends.saturating_sub(now)),
            });
        }
        slot.used += 1;
        Ok(Reserve::Granted(Reservation {
            key: key.to_string(),
            window: index,
        }))
    }

    fn release_now(&self, reservation: &Reservation) -> Result<(), StateError> {
        let mut slots = self
            .slots
            .lock()
            .map_err(|_| StateError("the in-memory counters are unusable after a crash".into()))?;
        if let Some(slot) = slots.get_mut(&reservation.key)
            && slot.window == reservation.window
        {
            slot.used = slot.used.saturating_sub(1);
        }
        Ok(())
    }
}

impl CounterStore for MemoryStore {
    fn reserve<'a>(&'a self, key: &'a str, window: Window) -> StateFuture<'a, Reserve> {
        let result = self.reserve_at(key, window, now_ms());
        Box::pin(async move { result })
    }

    fn release<'a>(&'a self, reservation: &'a Reservation) -> StateFuture<'a, ()> {
        let result = self.release_now(reservation);
        Box::pin(async move { result })
    }

    fn describe(&self) -> String {
        "memory".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Window = Window {
        limit: 2,
        length: Duration::from_secs(60),
    };

    #[test]
    fn a_window_allows_its_limit_and_says_when_to_retry() {
        let store = MemoryStore::new();
        let t = 120_000 + 15_000;
        assert!(matches!(
            store.reserve_at("k", W, t),
            Ok(Reserve::Granted(_))
        ));
        assert!(matches!(
            store.reserve_at("k", W, t),
            Ok(Reserve::Granted(_))
        ));
        assert_eq!(
            store.reserve_at("k", W, t),
            Ok(Reserve::Exhausted {
                retry_after: Duration::from_secs(45)
            })
        );
        // Another key has its own budget; the next window starts afresh.
        assert!(matches!(
            store.reserve_at("other", W, t),
            Ok(Reserve::Granted(_))
        ));
        assert!(matches!(
            store.reserve_at("k", W, 180_000),
            Ok(Reserve::Granted(_))
        ));
    }

    #[test]
    fn release_gives_a_unit_back_in_its_own_window_only() {
        let store = MemoryStore::new();
        let Ok(Reserve::Granted(first)) = store.reserve_at("k", W, 0) else {
            panic!()
        };
        let _ = store.reserve_at("k", W, 0);
        store.release_now(&first).unwrap();
        assert!(matches!(
            store.reserve_at("k", W, 1),
            Ok(Reserve::Granted(_))
        ));
        assert!(matches!(
            store.reserve_at("k", W, 1),
            Ok(Reserve::Exhausted { .. })
        ));
        // A release from an old window does not add to the new one.
        let _ = store.reserve_at("k", W, 60_000);
        let _ = store.reserve_at("k", W, 60_000);
        store.release_now(&first).unwrap();
        assert!(matches!(
            store.reserve_at("k", W, 60_001),
            Ok(Reserve::Exhausted { .. })
        ));
    }
}
