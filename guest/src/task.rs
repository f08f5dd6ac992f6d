//! Proxmox tasks as the tools see them: UPIDs (parsed with the rules of
//! PVE's decoder), a task's status and how it ended, and the lines of its
//! log. The task tools report them and every write tool follows the task
//! it starts with them (`task_wait`).

use serde::Serialize;
use serde_json::Value;

use crate::arg::{self, NodeName, choice, is_node_name};
use crate::error::{ToolError, quoted};
use crate::format;
use crate::json as pj;
use crate::tool::Answer;

/// Longest UPID we accept; real ones are well under 200 characters.
pub const UPID_MAX: usize = 512;

/// A parsed Proxmox task id, `UPID:node:pid:pstart:starttime:type:id:user:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upid {
    /// The whole UPID as given.
    pub raw: String,
    /// Node the task runs on.
    pub node: String,
    /// Worker process id.
    pub pid: u32,
    /// Process start in clock ticks since boot.
    pub pstart: u64,
    /// Start time, Unix epoch seconds.
    pub starttime: u64,
    /// Task type, e.g. `qmstart`, `vzdump`.
    pub task_type: String,
    /// Task object id (often a vmid); `None` when empty.
    pub id: Option<String>,
    /// User that started the task, without the token part.
    pub user: String,
    /// API token name when a token started the task.
    pub tokenid: Option<String>,
}

fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `[^:\s/]`: what PVE's UPID regex allows in type, id and user.
fn is_field(s: &str) -> bool {
    !s.chars().any(|c| c == ':' || c == '/' || c.is_whitespace())
}

/// Parses a UPID with the rules of PVE's decoder
/// (`^UPID:(node):([0-9A-F]{8}):([0-9A-F]{8,9}):([0-9A-F]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$`).
pub fn parse_upid(s: &str) -> Result<Upid, String> {
    let Some(rest) = s.strip_prefix("UPID:") else {
        return Err("it must start with \"UPID:\"".into());
    };
    let Some(rest) = rest.strip_suffix(':') else {
        return Err(
            "it must end with ':' (copy the whole UPID, including the trailing colon)".into(),
        );
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() != 7 {
        return Err(format!(
            "it must have 8 ':'-separated fields (UPID:node:pid:pstart:starttime:type:id:user:), found {}",
            parts.len() + 1
        ));
    }
    let [node, pid, pstart, starttime, task_type, id, user] =
        <[&str; 7]>::try_from(parts).expect("length checked");
    if !is_node_name(node) {
        return Err(format!("{} is not a valid node name", quoted(node, 64)));
    }
    if pid.len() != 8 || !is_hex(pid) {
        return Err("pid must be 8 hex digits".into());
    }
    if !(8..=9).contains(&pstart.len()) || !is_hex(pstart) {
        return Err("pstart must be 8 or 9 hex digits".into());
    }
    if starttime.len() != 8 || !is_hex(starttime) {
        return Err("starttime must be 8 hex digits".into());
    }
    if task_type.is_empty() || !is_field(task_type) {
        return Err("the task type must be non-empty without ':', '/' or spaces".into());
    }
    if !is_field(id) {
        return Err("the task id must not contain ':', '/' or spaces".into());
    }
    if user.is_empty() || !is_field(user) {
        return Err("the user must be non-empty without ':', '/' or spaces".into());
    }
    let hex = |h: &str| u64::from_str_radix(h, 16).expect("hex checked");
    let (user, tokenid) = match user.split_once('!') {
        Some((u, t)) => (u.to_owned(), Some(t.to_owned())),
        None => (user.to_owned(), None),
    };
    Ok(Upid {
        raw: s.to_owned(),
        node: node.to_owned(),
        pid: hex(pid) as u32,
        pstart: hex(pstart),
        starttime: hex(starttime),
        task_type: task_type.to_owned(),
        id: (!id.is_empty()).then(|| id.to_owned()),
        user,
        tokenid,
    })
}

impl Upid {
    fn from_json(v: &Value) -> Result<Self, String> {
        let raw = match v {
            Value::Null => {
                return Err("missing required argument; pass a task id such as \
                     \"UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:\" (pve_list_tasks lists them)"
                    .into());
            }
            Value::String(s) => s.as_str(),
            _ => return Err("must be a string".into()),
        };
        if raw.chars().count() > UPID_MAX {
            return Err(format!("must be at most {UPID_MAX} characters"));
        }
        parse_upid(raw)
            .map_err(|why| format!("{} is not a valid Proxmox task id: {why}", quoted(raw, 96)))
    }
}
arg::deserialize_from_json!(Upid);
arg::fixed_schema!(
    Upid,
    serde_json::json!({
        "type": "string",
        "minLength": 1,
        "maxLength": UPID_MAX,
        "description": "Task UPID, trailing colon included",
        "pattern": "^UPID:[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?:[0-9A-Fa-f]{8}:[0-9A-Fa-f]{8,9}:[0-9A-Fa-f]{8}:[^:\\s/]+:[^:\\s/]*:[^:\\s/]+:$",
    })
);

/// The node to ask about a task: the UPID's, which an optional `node`
/// argument must agree with.
pub fn task_node(upid: &Upid, node: Option<&NodeName>) -> Result<String, ToolError> {
    match node {
        Some(n) if n.as_str() != upid.node => Err(ToolError::field(
            "node",
            format!(
                "{} disagrees with the UPID, whose task runs on node {}; omit node (it is \
                 taken from the UPID) or pass {}",
                quoted(n.as_str(), 64),
                quoted(&upid.node, 64),
                quoted(&upid.node, 64)
            ),
        )),
        _ => Ok(upid.node.clone()),
    }
}

choice! {
    /// How a task ended, or that it has not.
    pub enum Outcome {
        /// Still running.
        Running = "running",
        /// Finished OK.
        Ok = "ok",
        /// Finished with warnings.
        Warning = "warning",
        /// Failed.
        Error = "error",
    }
}

/// How a finished task ended.
pub fn outcome(exitstatus: Option<&str>) -> Outcome {
    match exitstatus.map(str::trim) {
        None => Outcome::Running,
        Some(s) if s.eq_ignore_ascii_case("RUNNING") => Outcome::Running,
        Some("OK") => Outcome::Ok,
        Some(s) if s.starts_with("WARNINGS") => Outcome::Warning,
        Some(_) => Outcome::Error,
    }
}

/// One task's state.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TaskStatus {
    /// The task id
    pub upid: String,
    /// Node the task runs on
    pub node: String,
    /// Worker process id
    pub pid: u32,
    /// Process start, clock ticks since boot
    pub pstart: u64,
    /// Start time, Unix epoch seconds
    pub starttime: u64,
    /// Start time, ISO-8601 UTC
    pub starttime_iso: String,
    /// Task type, e.g. qmstart, vzdump, qmigrate
    #[serde(rename = "type")]
    pub task_type: String,
    /// Object the task is about (often a vmid); null if none
    pub id: Option<String>,
    /// User that started the task
    pub user: String,
    /// API token name if a token started it; null otherwise
    pub tokenid: Option<String>,
    /// Whether the task still runs
    pub status: RunState,
    /// Proxmox's exit status: OK, "WARNINGS: n" or the error message; null while running
    pub exitstatus: Option<String>,
    /// running, ok, warning (finished with warnings) or error
    pub outcome: Outcome,
    /// What to do next; null if nothing
    pub hint: Option<String>,
}

choice! {
    /// Whether a task still runs, as Proxmox says.
    pub enum RunState {
        /// Still running.
        Running = "running",
        /// Finished, one way or another.
        Stopped = "stopped",
    }
}

/// Normalises a `tasks/{upid}/status` answer; the UPID's own fields win
/// over missing ones.
pub fn shape(upid: &Upid, data: &Value) -> Answer<TaskStatus> {
    let d = data.as_object();
    let field = |k: &str| d.and_then(|d| d.get(k));
    let running = match pj::text(field("status")).as_deref() {
        Some("running") => true,
        Some(_) => false,
        None => pj::text(field("exitstatus")).is_none(),
    };
    let exitstatus = if running {
        None
    } else {
        pj::text(field("exitstatus")).map(|s| s.trim().to_owned())
    };
    let outcome = if running {
        Outcome::Running
    } else {
        // Stopped without an exit status is Proxmox's "unexpected status".
        match exitstatus.as_deref() {
            None => Outcome::Error,
            s => outcome(s),
        }
    };
    let hint = match outcome {
        Outcome::Running => Some(
            "The task is still running; ask again later, or read its progress with pve_get_task_log."
                .to_owned(),
        ),
        Outcome::Error => {
            Some("Use pve_get_task_log to see why it failed (the end of the log).".to_owned())
        }
        Outcome::Warning => Some("Use pve_get_task_log to read the warnings.".to_owned()),
        Outcome::Ok => None,
    };
    let structured = TaskStatus {
        upid: upid.raw.clone(),
        node: upid.node.clone(),
        pid: upid.pid,
        pstart: upid.pstart,
        starttime: upid.starttime,
        starttime_iso: format::iso_utc(upid.starttime as i64),
        task_type: upid.task_type.clone(),
        id: upid.id.clone(),
        user: upid.user.clone(),
        tokenid: upid.tokenid.clone(),
        status: if running {
            RunState::Running
        } else {
            RunState::Stopped
        },
        exitstatus: exitstatus.clone(),
        outcome,
        hint,
    };
    let what = match &upid.id {
        Some(id) => format!("Task {} ({id}) on {}", upid.task_type, upid.node),
        None => format!("Task {} on {}", upid.task_type, upid.node),
    };
    let started = format::iso_utc(upid.starttime as i64);
    let summary = match outcome {
        Outcome::Running => format!("{what}, started {started}, is still running."),
        Outcome::Ok => format!("{what}, started {started}, finished OK."),
        Outcome::Warning => format!(
            "{what}, started {started}, finished with {}; see pve_get_task_log.",
            exitstatus.as_deref().unwrap_or("warnings")
        ),
        Outcome::Error => format!(
            "{what}, started {started}, failed: {}. Use pve_get_task_log to see why.",
            exitstatus.as_deref().unwrap_or("unexpected status")
        ),
    };
    Answer {
        structured,
        summary,
    }
}

/// `[{n, t}]` → `(n, text)`, tolerating missing numbers; a text longer
/// than `max` characters is cut there and ends in `…`.
pub fn lines(data: &Value, max: usize) -> Vec<(u64, String)> {
    let Some(items) = data.as_array() else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let text = match item.get("t") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => pj::text(Some(v)).unwrap_or_default(),
            None => String::new(),
        };
        let n = pj::uint(item.get("n")).unwrap_or_else(|| {
            out.last()
                .map_or(1, |(p, _): &(u64, String)| p.saturating_add(1))
        });
        let text = if text.chars().count() > max {
            let mut cut: String = text.chars().take(max).collect();
            cut.push('…');
            cut
        } else {
            text
        };
        out.push((n, text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upids_parse() {
        let u = parse_upid("UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:").unwrap();
        assert_eq!(u.node, "pve1");
        assert_eq!(u.pid, 0x0020C066);
        assert_eq!(u.pstart, 0x042DF204);
        assert_eq!(u.starttime, 0x69C26EB0);
        assert_eq!(u.task_type, "vzdump");
        assert_eq!(u.id, None);
        assert_eq!(u.user, "root@pam");
        assert_eq!(u.tokenid, None);
        // 9-hex pstart, token user, id set.
        let u = parse_upid("UPID:node-2:000FF1FD:110F9374C:630D702C:qmstart:110:api@pve!ci-tok:")
            .unwrap();
        assert_eq!(u.pstart, 0x110F9374C);
        assert_eq!(u.id.as_deref(), Some("110"));
        assert_eq!(u.user, "api@pve");
        assert_eq!(u.tokenid.as_deref(), Some("ci-tok"));
        assert_eq!(format::iso_utc(u.starttime as i64), "2022-08-30T02:04:28Z");
    }

    #[test]
    fn bad_upids_are_rejected() {
        for bad in [
            "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam",
            "pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:",
            "UPID:pve1:0020C06G:042DF204:69C26EB0:vzdump::root@pam:",
            "UPID:pve1:0020C06:042DF204:69C26EB0:vzdump::root@pam:",
            "UPID:pve1:0020C066:042DF2:69C26EB0:vzdump::root@pam:",
            "UPID:pve1:0020C066:042DF204A0:69C26EB0:vzdump::root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB:vzdump::root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB0:::root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump:1:2:root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump:a/b:root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump:a b:root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump:1::",
            "UPID:-pve:0020C066:042DF204:69C26EB0:vzdump:1:root@pam:",
            "UPID:pve.x:0020C066:042DF204:69C26EB0:vzdump:1:root@pam:",
            "",
            // Proxmox reads "localhost" as whichever node answers.
            "UPID:localhost:0000A1B2:00C0FFEE:6500AA00:qmstart:100:root@pam:",
        ] {
            assert!(parse_upid(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn outcomes() {
        assert_eq!(outcome(None), Outcome::Running);
        assert_eq!(outcome(Some("RUNNING")), Outcome::Running);
        assert_eq!(outcome(Some("OK")), Outcome::Ok);
        assert_eq!(outcome(Some("WARNINGS: 2")), Outcome::Warning);
        assert_eq!(outcome(Some("VM 100 already running")), Outcome::Error);
        assert_eq!(outcome(Some("unexpected status")), Outcome::Error);
    }
}
