//! Waiting and progress: `hostile_wait` (a tool that declares it waits for
//! Proxmox tasks) and `hostile_sleep` (one that does not) sleep on a wasi
//! timer, using no CPU, to probe the host's deadlines; `hostile_progress`
//! abuses the `progress` import (a flood, huge messages, progress going
//! back, a secret in a message, numbers that are not numbers).

use serde_json::{Value, json};
use wasip2::clocks::monotonic_clock;

use crate::component::pve_mcp::guest::progress::report;

const SECOND_NS: u64 = 1_000_000_000;

fn sleep_ms(ms: u64) {
    monotonic_clock::subscribe_duration(ms * 1_000_000).block();
}

/// Sleeps `seconds`, one second at a time, reporting `i` of `seconds`
/// after each when `reports` is set; returns what it did and the wait
/// limit the host passed in the call context.
pub fn wait(seconds: u64, reports: bool, wait_limit_secs: u32) -> Value {
    let start = monotonic_clock::now();
    for i in 1..=seconds {
        monotonic_clock::subscribe_duration(SECOND_NS).block();
        if reports {
            report(
                i as f64,
                Some(seconds as f64),
                &format!("waited {i} of {seconds} s"),
            );
        }
    }
    json!({
        "waited_secs": seconds,
        "wait_limit_secs": wait_limit_secs,
        "elapsed_ms": (monotonic_clock::now() - start) / 1_000_000,
    })
}

/// One abuse of the progress import; returns how many reports it made.
pub fn abuse(mode: &str, count: u64, secret: &str) -> Result<Value, String> {
    let made = match mode {
        // As fast as it can: the host forwards a burst, then 10 a second.
        "flood" => {
            for i in 1..=count {
                report(i as f64, None, &format!("flood {i}"));
            }
            count
        }
        // 1 MiB, just over 64 KiB, 2000 bytes and 600 two-byte characters;
        // spaced out so the rate cap is not what drops them.
        "huge" => {
            let messages = [
                "h".repeat(1 << 20),
                "o".repeat((64 << 10) + 1),
                "m".repeat(2000),
                "é".repeat(600),
            ];
            for (i, message) in messages.iter().enumerate() {
                report((i + 1) as f64, Some(4.0), message);
                sleep_ms(150);
            }
            messages.len() as u64
        }
        // Progress that goes back, then forward again.
        "backwards" => {
            let values = [50.0, 40.0, 30.0, 20.0, 70.0];
            for p in values {
                report(p, Some(100.0), &format!("at {p}"));
                sleep_ms(150);
            }
            values.len() as u64
        }
        // The secret in the middle of a message, and straddling the
        // length cap.
        "secret" => {
            report(1.0, None, &format!("the token is {secret}, keep it"));
            sleep_ms(150);
            let padding = "p".repeat(500);
            report(2.0, None, &format!("{padding}{secret}"));
            2
        }
        // NaN and infinities, then one good report.
        "nonfinite" => {
            report(f64::NAN, None, "nan progress");
            report(f64::INFINITY, None, "infinite progress");
            report(1.0, Some(f64::NAN), "nan total");
            report(2.0, Some(f64::NEG_INFINITY), "infinite total");
            report(3.0, Some(3.0), "finite");
            5
        }
        other => return Err(format!("`mode` {other:?} is not one of the modes")),
    };
    Ok(json!({ "mode": mode, "reports": made }))
}
