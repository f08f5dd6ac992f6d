//! `pve_get_node_log`: the last lines of a node's system log (`GET
//! /nodes/{node}/syslog`, journalctl's short form), optionally one
//! service's and within a time window, newest last.
//!
//! A read the host guards (the `node-logs` class: what other processes
//! logged), so the tool declares the GET as its route and runs only under
//! its own policy rule. It asks once for the count (`limit=1`), then for
//! the last `lines` of them, so a long log costs two requests and a
//! bounded answer.

use serde::Serialize;

use crate::api::Pve;
use crate::arg::time::Time;
use crate::arg::{Int, NodeName, Text};
use crate::error::ToolError;
use crate::format;
use crate::json as pj;
use crate::path::ApiPath;
use crate::route::{Kind, Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};

/// What journalctl prints when nothing matches.
const NO_ENTRIES: &str = "-- No entries --";

/// Lines when the call names none.
pub const DEFAULT_LINES: u64 = 50;

/// The node and what of its log.
#[derive(Debug, Clone, serde::Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Node whose log to read
    node: NodeName,
    /// Only this unit, e.g. pveproxy or corosync
    service: Option<Text<128>>,
    /// From this time (epoch or ISO-8601, the node's clock)
    since: Option<Time>,
    /// Up to this time (epoch or ISO-8601)
    until: Option<Time>,
    /// Newest lines to return (default 50, at most 500)
    lines: Option<Int<1, 500>>,
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_get_node_log",
    title: "Read a node's system log",
    description: "The newest lines of a node's system log (journal), optionally one service's \
        and within since/until; newest last.",
    annotations: Annotations::write(true, true),
    routes: &[Route::new(
        "GET",
        "/nodes/{node}/syslog",
        &[
            Param::arg("service"),
            Param::free("since", Kind::Text(19)),
            Param::free("until", Kind::Text(19)),
            Param::free("start", Kind::Integer),
            Param::free("limit", Kind::Integer),
        ],
    )],
    privileges: [
        "/nodes/{node}": "Sys.Syslog",
    ],
    run: run,
};

/// A node's log lines.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct NodeLog {
    /// The node
    pub node: String,
    /// The lines, oldest first, newest last
    pub lines: Vec<String>,
    /// Lines that matched in all
    pub total: u64,
    /// Older matching lines left out
    pub omitted: u64,
}

/// `YYYY-MM-DD HH:MM:SS`, as journalctl reads `--since`.
fn journal_time(t: Time) -> String {
    format::iso_utc(t.0)
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_owned()
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeLog>, ToolError> {
    if let (Some(s), Some(u)) = (input.since, input.until)
        && s.0 > u.0
    {
        return Err(ToolError::field("until", "is before since; swap them"));
    }
    let node = input.node.as_str();
    let want = input.lines.map_or(DEFAULT_LINES, |l| l.0);
    let base = || {
        let mut path = ApiPath::new("nodes").seg(node).lit("syslog");
        if let Some(s) = &input.service {
            path = path.query("service", s.as_str());
        }
        if let Some(t) = input.since {
            path = path.query("since", &journal_time(t));
        }
        if let Some(t) = input.until {
            path = path.query("until", &journal_time(t));
        }
        path
    };
    let total = pve
        .get_envelope(&base().query("limit", "1"))?
        .total
        .unwrap_or(0);
    let start = total.saturating_sub(want);
    let lines: Vec<String> = if total == 0 {
        Vec::new()
    } else {
        let path = base()
            .query("start", &start.to_string())
            .query("limit", &want.to_string());
        crate::fetch::list(pve, &path)?
            .iter()
            .filter_map(|l| pj::text(l.get("t")))
            .collect()
    };
    // journalctl's one line for an empty window.
    let (lines, total) = if lines == [NO_ENTRIES] {
        (Vec::new(), 0)
    } else {
        (lines, total)
    };
    let omitted = total.saturating_sub(lines.len() as u64);
    let summary = format!(
        "{} of {node}'s log{}{}.",
        format::count(lines.len(), "line", "lines"),
        input
            .service
            .as_ref()
            .map(|s| format!(" for {}", s.as_str()))
            .unwrap_or_default(),
        if omitted > 0 {
            format!(" ({omitted} older left out; narrow with since, or raise lines)")
        } else {
            String::new()
        }
    );
    Ok(Answer {
        summary,
        structured: NodeLog {
            node: node.to_owned(),
            lines,
            total,
            omitted,
        },
    })
}
