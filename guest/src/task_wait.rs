//! Waiting for a Proxmox task to end.
//!
//! Polls `GET /nodes/{node}/tasks/{upid}/status` (1 s at first, backing off
//! to 5 s) and reads the log lines written since the last poll, reporting
//! the newest as progress (with the percentage when PVE logs one: vzdump's
//! `INFO:  45% (...)`, clone's `transferred ... (45.00%)`, restore's
//! `progress 45% (...)`). The node is the UPID's: a task lives on the node
//! that ran it, which for a migration is the source. Stops at the limit
//! and says the task is still running; that is an answer, not an error.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::api::Pve;
use crate::error::ToolError;
use crate::path::ApiPath;
use crate::task::{self, Outcome, RunState, Upid};

/// How long a call waits unless its `timeout` says otherwise.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(120);

/// Lines of the log a failed task's report carries.
pub const TAIL_LINES: u64 = 12;

/// Longest log line kept; PVE's are short, a hostile one is cut.
const LINE_MAX: usize = 400;

/// The first poll interval, and the longest.
const FIRST_POLL: Duration = Duration::from_secs(1);
const LAST_POLL: Duration = Duration::from_secs(5);

/// How a task ended, or that it had not ended when the wait stopped.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TaskEnd {
    /// running (the wait stopped first) or stopped
    pub status: RunState,
    /// Proxmox's exit status: OK, "WARNINGS: n" or the error text; null while running
    pub exitstatus: Option<String>,
    /// running, ok, warning or error
    pub outcome: Outcome,
    /// Seconds waited
    pub waited_secs: u64,
    /// The last lines of the task log when it failed; empty otherwise
    pub log_tail: Vec<String>,
}

/// Reports progress while a task runs. The host forwards it to the client
/// as `notifications/progress` when the call asked for progress.
pub trait Progress {
    /// The newest log line and its percentage, if it had one.
    fn report(&mut self, pve: &mut dyn Pve, percent: Option<f64>, line: &str);
}

/// Waits until the task `upid` (on `node`) ends or `limit` passes.
pub fn wait(
    pve: &mut dyn Pve,
    upid: &Upid,
    node: &str,
    limit: Duration,
    progress: &mut dyn Progress,
) -> Result<TaskEnd, ToolError> {
    let started = pve.elapsed();
    let status_path = status_path(upid, node);
    let mut next_line = 0u64;
    let mut interval = FIRST_POLL;
    loop {
        let data = pve.get(&status_path)?;
        let status = task::shape(upid, &data).structured;
        next_line = read_new_lines(pve, upid, node, next_line, progress)?;
        let waited = pve.elapsed().saturating_sub(started);
        if status.outcome != Outcome::Running {
            let log_tail = if status.outcome == Outcome::Error {
                tail(pve, upid, node, next_line)?
            } else {
                Vec::new()
            };
            return Ok(TaskEnd {
                status: RunState::Stopped,
                exitstatus: status.exitstatus,
                outcome: status.outcome,
                waited_secs: waited.as_secs(),
                log_tail,
            });
        }
        if waited >= limit {
            return Ok(TaskEnd {
                status: RunState::Running,
                exitstatus: None,
                outcome: Outcome::Running,
                waited_secs: waited.as_secs(),
                log_tail: Vec::new(),
            });
        }
        pve.sleep(interval.min(limit - waited));
        interval = (interval + FIRST_POLL).min(LAST_POLL);
    }
}

fn status_path(upid: &Upid, node: &str) -> ApiPath {
    ApiPath::new("nodes")
        .seg(node)
        .lit("tasks")
        .seg(&upid.raw)
        .lit("status")
}

fn log_path(upid: &Upid, node: &str, start: u64, limit: u64) -> ApiPath {
    ApiPath::new("nodes")
        .seg(node)
        .lit("tasks")
        .seg(&upid.raw)
        .lit("log")
        .query("start", &start.to_string())
        .query("limit", &limit.to_string())
}

/// Reads the lines from `start` on, reports the newest, and returns where
/// the next read starts.
fn read_new_lines(
    pve: &mut dyn Pve,
    upid: &Upid,
    node: &str,
    start: u64,
    progress: &mut dyn Progress,
) -> Result<u64, ToolError> {
    let data = pve.get(&log_path(upid, node, start, 500))?;
    let lines = texts(&data);
    if let Some(last) = lines.iter().rev().find(|l| !l.trim().is_empty()) {
        let percent = lines.iter().rev().find_map(|l| percent(l));
        progress.report(pve, percent, last);
    }
    Ok(start + lines.len() as u64)
}

/// The last [`TAIL_LINES`] lines of a log `total` lines long.
fn tail(pve: &mut dyn Pve, upid: &Upid, node: &str, total: u64) -> Result<Vec<String>, ToolError> {
    let start = total.saturating_sub(TAIL_LINES);
    let data = pve.get(&log_path(upid, node, start, TAIL_LINES))?;
    Ok(texts(&data))
}

/// The text of each `{n, t}` line, cut to [`LINE_MAX`] characters.
fn texts(data: &Value) -> Vec<String> {
    task::lines(data, LINE_MAX)
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

/// The percentage a PVE progress line states: the number before the last
/// `%` in it, if it is one between 0 and 100.
pub fn percent(line: &str) -> Option<f64> {
    let before = &line[..line.rfind('%')?];
    let digits: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let value: f64 = digits.parse().ok()?;
    (0.0..=100.0).contains(&value).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::task::parse_upid;
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:vzdump:100:mcp@pve!ro:";

    #[derive(Default)]
    struct Seen(Vec<(Option<f64>, String)>);

    impl Progress for Seen {
        fn report(&mut self, _: &mut dyn Pve, percent: Option<f64>, line: &str) {
            self.0.push((percent, line.to_owned()));
        }
    }

    fn status_key() -> String {
        status_path(&parse_upid(UPID).unwrap(), "pve1").to_path_and_query()
    }

    fn log_key(start: u64, limit: u64) -> String {
        log_path(&parse_upid(UPID).unwrap(), "pve1", start, limit).to_path_and_query()
    }

    #[test]
    fn percentages_are_read_from_pve_progress_lines() {
        assert_eq!(percent("INFO:  45% (1.2 GiB of 2.0 GiB) in 3s"), Some(45.0));
        assert_eq!(
            percent("transferred 1.0 GiB of 2.0 GiB (50.00%)"),
            Some(50.0)
        );
        assert_eq!(percent("progress 7% (read 1 bytes)"), Some(7.0));
        assert_eq!(percent("starting"), None);
        assert_eq!(percent("odd 250%"), None);
    }

    #[test]
    fn a_finished_task_is_reported_with_its_exit_status() {
        let mut pve = FakePve::default()
            .with(
                &status_key(),
                json!({"status": "stopped", "exitstatus": "OK", "upid": UPID}),
            )
            .with(&log_key(0, 500), json!([{"n": 1, "t": "INFO:  100% done"}]));
        let mut seen = Seen::default();
        let upid = parse_upid(UPID).unwrap();
        let end = wait(&mut pve, &upid, "pve1", DEFAULT_WAIT, &mut seen).unwrap();
        assert_eq!(end.outcome, Outcome::Ok);
        assert_eq!(end.exitstatus.as_deref(), Some("OK"));
        assert!(end.log_tail.is_empty());
        assert_eq!(seen.0, vec![(Some(100.0), "INFO:  100% done".to_owned())]);
    }

    #[test]
    fn a_failed_task_carries_its_log_tail() {
        let mut pve = FakePve::default()
            .with(
                &status_key(),
                json!({"status": "stopped", "exitstatus": "VM is locked (backup)"}),
            )
            .with(
                &log_key(0, 500),
                json!([{"n": 1, "t": "a"}, {"n": 2, "t": "b"}]),
            )
            .with(
                &log_key(0, TAIL_LINES),
                json!([{"n": 1, "t": "a"}, {"n": 2, "t": "b"}]),
            );
        let upid = parse_upid(UPID).unwrap();
        let end = wait(&mut pve, &upid, "pve1", DEFAULT_WAIT, &mut Seen::default()).unwrap();
        assert_eq!(end.outcome, Outcome::Error);
        assert_eq!(end.log_tail, vec!["a", "b"]);
    }

    #[test]
    fn the_wait_stops_at_its_limit_and_says_the_task_still_runs() {
        let mut pve = FakePve::default()
            .with(&status_key(), json!({"status": "running"}))
            .with(&log_key(0, 500), json!([]));
        let upid = parse_upid(UPID).unwrap();
        let limit = Duration::from_secs(10);
        let end = wait(&mut pve, &upid, "pve1", limit, &mut Seen::default()).unwrap();
        assert_eq!(end.status, RunState::Running);
        assert_eq!(end.waited_secs, 10);
        assert_eq!(pve.clock, limit);
        // 1 + 2 + 3 + 4 s, then the 0 s left: five polls and the last one.
        let polls = pve
            .requests
            .iter()
            .filter(|r| r.ends_with("/status"))
            .count();
        assert_eq!(polls, 5, "{:?}", pve.requests);
    }
}
