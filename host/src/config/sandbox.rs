//! The `[sandbox]` section: the limits every tool call runs under. Only
//! `max_wait_secs` has a variable; the other keys are read from the file
//! alone.

use std::time::Duration;

use super::section::section;

/// The variable that overrides `[sandbox] max_wait_secs`.
pub const MAX_WAIT_ENV: &str = "PVE_MCP_MAX_WAIT_SECS";

/// How many requests one call may send unless `[sandbox]
/// max_requests_per_call` says otherwise. The busiest read tool makes a few
/// dozen (one per node at most); waiting on a task polls about once a
/// second. The cap bounds what a call's bookkeeping can cost the host
/// whatever the guest does within its deadline: at most this many egress
/// records of under 2 KiB each, so under 2 MiB at the default.
pub const DEFAULT_MAX_REQUESTS_PER_CALL: usize = 1000;

section! {
    /// `[sandbox]` as written in the file.
    file FileSandbox;
    /// Limits applied to every tool call's sandbox.
    #[derive(Debug, Clone)]
    settings SandboxLimits in "sandbox";

    /// Linear memory cap for the guest.
    memory_bytes: usize = number(8..=4096, default 64, mib) from memory_mib;
    /// Deadline for a whole call: guest CPU time and upstream waits.
    timeout: Duration = number(1..=3600, default 30, secs, hint " seconds") from timeout_secs;
    /// Cap on one upstream response body.
    max_response_bytes: usize = number(1..=1024, default 16, mib) from max_response_mib;
    /// Cap on a tool's structured output.
    max_output_bytes: usize = number(1..=256, default 4, mib) from max_output_mib;
    /// Cap on what the guest may write to stderr per call.
    max_log_bytes: usize = fixed(64 << 10);
    /// Calls that may run at once; more wait for a slot.
    max_concurrent_calls: usize = number(1..=1024, default 32, count) from max_concurrent_calls;
    /// Requests one call may send before it is stopped.
    max_requests_per_call: usize = number(
        10..=100_000,
        default DEFAULT_MAX_REQUESTS_PER_CALL,
        count,
        hint "; a task wait polls about once a second"
    ) from max_requests_per_call;
    /// The longest a call may wait for Proxmox tasks: the guest clamps a
    /// tool's `timeout` to it, and a call of a tool that waits may run
    /// this much longer than [`SandboxLimits::timeout`].
    max_wait: Duration = number(1..=3600, default 600, secs, env MAX_WAIT_ENV) from max_wait_secs;
    /// How many calls that wait one caller (a bearer token, else a
    /// session; stdio is exempt) may run or queue at once; unset, a
    /// quarter of the wait slots (`sandbox::wait_slots::share_of`).
    max_waiting_per_caller: Option<usize> = number(
        1..=1024,
        default none,
        count,
        hint "; unset, a quarter of the wait slots"
    ) from max_waiting_per_caller;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::layered::test_env::env;
    use crate::error::ConfigError;

    fn load_sandbox(
        s: &FileSandbox,
        file_name: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SandboxLimits, ConfigError> {
        SandboxLimits::load(s, file_name, env)
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let d = SandboxLimits::default();
        assert_eq!(d.memory_bytes, 64 << 20);
        assert_eq!(d.timeout, Duration::from_secs(30));
        assert_eq!(d.max_response_bytes, 16 << 20);
        assert_eq!(d.max_output_bytes, 4 << 20);
        assert_eq!(d.max_log_bytes, 64 << 10);
        assert_eq!(d.max_concurrent_calls, 32);
        assert_eq!(d.max_requests_per_call, DEFAULT_MAX_REQUESTS_PER_CALL);
        assert_eq!(d.max_wait, Duration::from_secs(600));
        assert_eq!(d.max_waiting_per_caller, None);
    }

    #[test]
    fn the_waiting_share_is_read_and_bounded() {
        let limits = |text: &str| {
            let file: FileSandbox = toml::from_str(text).unwrap();
            load_sandbox(&file, "f.toml", &env(&[]))
        };
        assert_eq!(
            limits("max_waiting_per_caller = 20")
                .unwrap()
                .max_waiting_per_caller,
            Some(20)
        );
        for bad in ["0", "1025"] {
            let e = limits(&format!("max_waiting_per_caller = {bad}")).unwrap_err();
            assert_eq!(e.key, "sandbox.max_waiting_per_caller (in f.toml)");
            assert_eq!(
                e.fix,
                "use between 1 and 1024; unset, a quarter of the wait slots"
            );
        }
    }

    #[test]
    fn file_only_keys_say_their_range() {
        let limits = |text: &str| {
            let file: FileSandbox = toml::from_str(text).unwrap();
            load_sandbox(&file, "f.toml", &env(&[]))
        };
        let e = limits("memory_mib = 4").unwrap_err();
        assert_eq!(e.key, "sandbox.memory_mib (in f.toml)");
        assert_eq!(e.problem, "4 is out of range");
        assert_eq!(e.fix, "use between 8 and 4096");
        let e = limits("timeout_secs = 0").unwrap_err();
        assert_eq!(e.fix, "use between 1 and 3600 seconds");
        let e = limits("max_concurrent_calls = 2000").unwrap_err();
        assert_eq!(e.fix, "use between 1 and 1024");
        assert_eq!(
            limits("memory_mib = 32\nmax_output_mib = 1")
                .unwrap()
                .max_output_bytes,
            1 << 20
        );
    }

    #[test]
    fn the_request_cap_is_read_and_bounded() {
        let limits = |n: u64| {
            let file = FileSandbox {
                max_requests_per_call: Some(n),
                ..FileSandbox::default()
            };
            load_sandbox(&file, "f.toml", &env(&[]))
        };
        assert_eq!(limits(40).unwrap().max_requests_per_call, 40);
        for bad in [0, 9, 100_001] {
            let e = limits(bad).unwrap_err();
            assert!(e.key.contains("sandbox.max_requests_per_call"), "{e}");
            assert!(e.to_string().contains("between 10 and 100000"), "{e}");
        }
    }
}
