//! Shared state for the policy: rate-limit counters, in this process's
//! memory or in Redis so several `pve-mcp` replicas share one budget.
//!
//! Counters are fixed windows aligned to the UTC clock (a `10/minute` limit
//! resets at every full minute), as PolicyLayer's are. A call reserves one
//! unit before it runs and gives it back when it fails upstream.

pub mod counter;
pub mod memory;
pub mod redis;

pub use self::redis::{RedisStore, redis_connection};
pub use counter::{CounterStore, Reservation, Reserve, StateError, StateFuture, Window, now_ms};
pub use memory::MemoryStore;
