//! A call's limits inside its store: the memory cap and the guest's
//! running time, each remembering that it was hit so the outcome can say
//! which; and how long a call may take in all.

use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;

use crate::config::SandboxLimits;

/// How often the epoch advances; deadlines are counted in these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The memory cap, remembering whether the guest hit it, so a trap can be
/// reported as "memory limit" rather than as a crash; and the guest's
/// running time, so a call that may wait long cannot compute long.
pub struct Limits {
    pub memory_bytes: usize,
    pub hit_memory: bool,
    /// Wasm running time allowed to a call that may wait: the sandbox
    /// timeout, however long it may wait (other calls' deadline is that).
    pub max_busy: Duration,
    /// Wasm running time so far, sampled at epoch ticks.
    pub busy: Duration,
    /// When the epoch callback last ran.
    pub last_tick: Option<Instant>,
    pub hit_busy: bool,
}

impl Limits {
    /// Counts one epoch tick of the guest's time. The callback runs once a
    /// tick while the guest executes, and once when it resumes after
    /// waiting on the host; only the gap since a tick just before is
    /// running time. Whether the budget is spent.
    pub fn tick(&mut self, now: Instant) -> bool {
        if let Some(last) = self.last_tick {
            let gap = now.saturating_duration_since(last);
            if gap < EPOCH_TICK * 2 {
                self.busy += gap;
            }
        }
        self.last_tick = Some(now);
        self.hit_busy = self.busy > self.max_busy;
        self.hit_busy
    }
}

const MAX_TABLE_ELEMENTS: usize = 100_000;
const MAX_INSTANCES: usize = 64;

impl ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            self.hit_memory = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }
}

/// How long a call may run in all: the sandbox timeout, plus the wait limit
/// for a tool that waits for Proxmox tasks.
pub fn time_limit(limits: &SandboxLimits, waits: bool) -> Duration {
    if waits {
        limits.timeout + limits.max_wait
    } else {
        limits.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_busy: Duration) -> Limits {
        Limits {
            memory_bytes: 0,
            hit_memory: false,
            max_busy,
            busy: Duration::ZERO,
            last_tick: None,
            hit_busy: false,
        }
    }

    #[test]
    fn running_time_counts_ticks_in_a_row_not_time_spent_waiting() {
        let start = Instant::now();
        let mut l = limits(Duration::from_millis(100));
        // Resuming once a second for a minute is waiting, not running.
        for s in 0..60 {
            assert!(!l.tick(start + Duration::from_secs(s)));
        }
        assert_eq!(l.busy, Duration::ZERO);
        // Running: a tick every 10 ms, 100 ms allowed.
        let run = start + Duration::from_secs(61);
        let spent = (0..100)
            .position(|i| l.tick(run + EPOCH_TICK * i))
            .expect("stopped");
        assert_eq!(spent, 11, "stopped just past 100 ms of running");
        assert!(l.hit_busy);
    }
}
