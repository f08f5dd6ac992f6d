//! `pve_get_task_log`: lines of one task's log from
//! `/nodes/{node}/tasks/{upid}/log`, by default the end of it.
//!
//! Proxmox's log endpoint takes `start` (lines to skip) and `limit`, and
//! puts the log's line count in the envelope's `total`. It reads the whole
//! file on every call anyway, so the cheapest way to the tail is: ask for
//! the first `tail` lines; if `total` says that was all of it, done (one
//! request, the common case for short tasks); otherwise ask again for
//! `start = total - tail`. (`limit=0` is no probe: it means "everything".)

use serde::{Deserialize, Serialize};

use crate::task::{self, Upid};
use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{Int, NodeName, choice};
use crate::error::ToolError;
use crate::paging::Limit;
use crate::path::ApiPath;

/// Default for `tail` and `limit`.
pub const DEFAULT_LINES: u64 = 50;
/// Largest `tail` and `limit`.
pub const MAX_LINES: u64 = 500;
/// Largest `start`.
const START_MAX: u64 = 10_000_000;
/// Longest line text we pass on, in characters.
const LINE_MAX: usize = 2000;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_task_log",
    title: "Read a task's log",
    description: "A task's log by UPID: its last lines by default, where Proxmox says why it \
        failed, or lines from start on.",
    reads: ["/nodes/{node}/tasks/{upid}/log"],
    privileges: [
        "/nodes/{node}": "Sys.Audit",
    ],
    run: run,
};

/// The task, and which lines of its log.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    upid: Upid,
    /// Task's node (in the UPID)
    node: Option<NodeName>,
    /// How many last lines (default 50)
    tail: Option<Limit<DEFAULT_LINES, MAX_LINES>>,
    /// First line (0-based) instead of the tail
    start: Option<Int<0, START_MAX>>,
    /// With start: lines to read
    limit: Option<Limit<DEFAULT_LINES, MAX_LINES>>,
}

/// Part of a task's log.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TaskLog {
    /// The task id
    pub upid: String,
    /// Node the task runs on
    pub node: String,
    /// tail: the end of the log; range: from start forward
    pub mode: ReadMode,
    /// The log lines, in order
    pub lines: Vec<LogLine>,
    /// Lines in the whole log; null if Proxmox did not say
    pub total_lines: Option<u64>,
    /// Number of the first line returned; null if none
    pub first_line: Option<u64>,
    /// Number of the last line returned; null if none
    pub last_line: Option<u64>,
    /// true if earlier lines exist
    pub has_more_before: bool,
    /// true if later lines exist; null if unknown
    pub has_more_after: Option<bool>,
    /// The final "TASK OK" / "TASK ERROR: ..." / "TASK WARNINGS: n" line if this answer
    /// includes it; null otherwise (e.g. still running)
    pub task_result: Option<String>,
}

choice! {
    /// How a log was read.
    pub enum ReadMode {
        /// Its last lines.
        Tail = "tail",
        /// Forward from a line.
        Range = "range",
    }
}

/// One log line.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct LogLine {
    /// 1-based line number
    pub n: u64,
    /// Line text (cut at 2000 characters)
    pub text: String,
}

/// Numbered lines and the envelope's `total`.
type Page = (Vec<(u64, String)>, Option<u64>);

/// How the caller wants to read the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Tail(u64),
    Range { start: u64, limit: u64 },
}

fn mode(input: &Input) -> Result<Mode, ToolError> {
    let tail = input.tail.map(|t| t.0);
    let start = input.start.map(|s| s.0);
    let limit = input.limit.map(|l| l.0);
    match (tail, start, limit) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => Err(ToolError::field(
            "tail",
            "cannot be combined with start/limit; use tail for the end of the log, or start \
             (+ limit) to read forward",
        )),
        (None, None, Some(_)) => Err(ToolError::field(
            "limit",
            "goes with start; pass start (0 = first line) too, or use tail for the end of the log",
        )),
        (None, Some(start), limit) => Ok(Mode::Range {
            start,
            limit: limit.unwrap_or(DEFAULT_LINES),
        }),
        (tail, None, None) => Ok(Mode::Tail(tail.unwrap_or(DEFAULT_LINES))),
    }
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<TaskLog>, ToolError> {
    let node = task::task_node(&input.upid, input.node.as_ref())?;
    let mode = mode(&input)?;
    let upid = input.upid;
    let mut fetch = |start: u64, limit: u64| -> Result<Page, ToolError> {
        let path = ApiPath::new("nodes")
            .seg(&node)
            .lit("tasks")
            .seg(&upid.raw)
            .lit("log")
            .query("start", &start.to_string())
            .query("limit", &limit.to_string());
        let crate::api::Envelope { data, total, .. } = pve.get_envelope(&path)?;
        Ok((task::lines(&data, LINE_MAX), total))
    };
    let (start, limit) = match mode {
        Mode::Tail(n) => (0, n),
        Mode::Range { start, limit } => (start, limit),
    };
    let (mut got, mut total) = fetch(start, limit)?;
    let mut start = start;
    if let Mode::Tail(n) = mode
        && let Some(t) = total
        && t > n
    {
        start = t - n;
        let (again, t2) = fetch(start, n)?;
        got = again;
        total = t2.or(total);
    }
    if total.is_none() && (got.len() as u64) < limit {
        // A short page means the log ended there.
        total = Some(start + got.len() as u64);
    }
    Ok(shape(&upid.raw, &node, mode, start, got, total))
}

fn shape(
    upid: &str,
    node: &str,
    mode: Mode,
    start: u64,
    got: Vec<(u64, String)>,
    total: Option<u64>,
) -> Answer<TaskLog> {
    let first = got.first().map(|(n, _)| *n);
    let last = got.last().map(|(n, _)| *n);
    let has_more_before = first.map_or(start > 0, |f| f > 1);
    let end = last.unwrap_or(start);
    let has_more_after = total.map(|t| t > end);
    let task_result = match (has_more_after, got.last()) {
        (Some(false), Some((_, t))) if t.starts_with("TASK ") => Some(t.clone()),
        _ => None,
    };
    let range = match (first, last) {
        (Some(f), Some(l)) => format!("lines {f}-{l}"),
        _ => "no lines".to_owned(),
    };
    let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
    let mut summary = format!("Task log on {node}: {range}{of}.");
    match (&task_result, has_more_after) {
        (Some(r), _) => summary.push_str(&format!(" Final status: {r}.")),
        (None, Some(false)) => summary.push_str(" No TASK status line yet (still running?)."),
        (None, _) => summary.push_str(" More lines follow; page on with start."),
    }
    Answer {
        structured: TaskLog {
            upid: upid.to_owned(),
            node: node.to_owned(),
            mode: match mode {
                Mode::Tail(_) => ReadMode::Tail,
                Mode::Range { .. } => ReadMode::Range,
            },
            lines: got
                .into_iter()
                .map(|(n, text)| LogLine { n, text })
                .collect(),
            total_lines: total,
            first_line: first,
            last_line: last,
            has_more_before,
            has_more_after,
            task_result,
        },
        summary,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::Output;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:";
    const BASE: &str = "/nodes/pve1/tasks/UPID%3Apve1%3A0020C066%3A042DF204%3A69C26EB0%3Avzdump%3A%3Aroot%40pam%3A/log";

    fn log(from: u64, to: u64, total: u64) -> Value {
        Value::Array(
            (from..=to)
                .map(|n| {
                    let t = if n == total {
                        "TASK ERROR: job failed with err -5 - Input/output error".to_owned()
                    } else {
                        format!("INFO: line {n}")
                    };
                    json!({"n": n, "t": t})
                })
                .collect(),
        )
    }

    fn call(pve: &mut FakePve, args: Value) -> Result<Output, ToolError> {
        TOOL.call(pve, &args.to_string())
    }

    #[test]
    fn short_log_needs_one_request() {
        let mut pve =
            FakePve::default().with_total(&format!("{BASE}?start=0&limit=50"), log(1, 12, 12), 12);
        let out = call(&mut pve, json!({"upid": UPID})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(pve.requests.len(), 1);
        assert_eq!(s["total_lines"], 12);
        assert_eq!(
            (s["first_line"].as_u64(), s["last_line"].as_u64()),
            (Some(1), Some(12))
        );
        assert_eq!(s["has_more_before"], false);
        assert_eq!(s["has_more_after"], false);
        assert!(s["task_result"].as_str().unwrap().starts_with("TASK ERROR"));
        assert!(out.summary.contains("TASK ERROR"), "{}", out.summary);
    }

    #[test]
    fn long_log_tail_takes_two_requests() {
        let mut pve = FakePve::default()
            .with_total(&format!("{BASE}?start=0&limit=20"), log(1, 20, 1000), 1000)
            .with_total(
                &format!("{BASE}?start=980&limit=20"),
                log(981, 1000, 1000),
                1000,
            );
        let out = call(&mut pve, json!({"upid": UPID, "tail": 20})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["lines"].as_array().unwrap().len(), 20);
        assert_eq!(s["first_line"], 981);
        assert_eq!(s["has_more_before"], true);
        assert_eq!(s["has_more_after"], false);
        assert_eq!(s["mode"], "tail");
    }

    #[test]
    fn range_pages_forward() {
        let mut pve = FakePve::default().with_total(
            &format!("{BASE}?start=100&limit=10"),
            log(101, 110, 1000),
            1000,
        );
        let out = call(&mut pve, json!({"upid": UPID, "start": 100, "limit": 10})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["mode"], "range");
        assert_eq!(s["has_more_before"], true);
        assert_eq!(s["has_more_after"], true);
        assert_eq!(s["task_result"], Value::Null);
        // Without an envelope total, a short page ends the log.
        let mut pve = FakePve::default().with(&format!("{BASE}?start=0&limit=50"), log(1, 3, 3));
        let out = call(&mut pve, json!({"upid": UPID, "start": 0})).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["total_lines"], 3);
    }

    #[test]
    fn bad_arguments_make_no_request() {
        let mut pve = FakePve::default();
        for (args, needle) in [
            (
                json!({"upid": UPID, "tail": 0}),
                "tail: must be an integer between 1 and 500",
            ),
            (json!({"upid": UPID, "tail": 501}), "tail: must be"),
            (
                json!({"upid": UPID, "tail": 5, "start": 0}),
                "tail: cannot be combined",
            ),
            (json!({"upid": UPID, "limit": 5}), "limit: goes with start"),
            (
                json!({"upid": "nope"}),
                "upid: \"nope\" is not a valid Proxmox task id",
            ),
        ] {
            let e = call(&mut pve, args.clone()).unwrap_err();
            assert!(e.message().contains(needle), "{args}: {e}");
        }
        assert!(pve.requests.is_empty());
    }

    /// Found by fuzzing: a line numbered u64::MAX followed by one without
    /// a number overflowed the next number.
    #[test]
    fn a_huge_line_number_does_not_overflow() {
        let got = task::lines(&json!([{"n": u64::MAX, "t": "a"}, {"t": "b"}]), LINE_MAX);
        assert_eq!(
            got,
            vec![(u64::MAX, "a".to_owned()), (u64::MAX, "b".to_owned())]
        );
    }
}
