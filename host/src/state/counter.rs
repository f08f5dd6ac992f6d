//! What a counter store is: windows, reservations and the trait both
//! stores implement.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A limit as the store sees it: so many units per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Units allowed per window.
    pub limit: u64,
    /// The window's length (whole milliseconds).
    pub length: Duration,
}

/// The answer to a reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reserve {
    /// One unit is held; give it back with [`CounterStore::release`].
    Granted(Reservation),
    /// The window's budget is spent; the next window starts after this.
    Exhausted {
        /// Time until the window ends.
        retry_after: Duration,
    },
}

/// One unit held in one window of one counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// The counter.
    pub key: String,
    /// The window it was taken in (milliseconds since the epoch divided by
    /// the window's length).
    pub window: u64,
}

/// The store could not be reached or answered nonsense. The text never
/// holds credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StateError(pub String);

/// A boxed future, so the trait can be used as `dyn CounterStore`.
pub type StateFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StateError>> + Send + 'a>>;

/// Where rate-limit counters live.
pub trait CounterStore: Send + Sync {
    /// Takes one unit of `key` in the current window if any is left. The
    /// check and the increment are one atomic step, so N concurrent callers
    /// against a budget of N all get through and the next one does not.
    fn reserve<'a>(&'a self, key: &'a str, window: Window) -> StateFuture<'a, Reserve>;

    /// Gives a unit back (the call failed upstream). A reservation from a
    /// window that has ended is ignored.
    fn release<'a>(&'a self, reservation: &'a Reservation) -> StateFuture<'a, ()>;

    /// What the store is, for logs and messages: `memory`, or the Redis
    /// address without credentials.
    fn describe(&self) -> String;
}

/// Milliseconds since the Unix epoch by this host's clock.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
