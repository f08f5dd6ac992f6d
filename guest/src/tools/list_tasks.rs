//! `pve_list_tasks`: recent Proxmox tasks, cluster-wide from
//! `/cluster/tasks` or for one node from `/nodes/{node}/tasks`.
//!
//! `/cluster/tasks` accepts no parameters at all (sending any gets a 400),
//! so there every filter and the paging run here. `/nodes/{node}/tasks`
//! filters and pages itself, and we pass it only parameters it declares:
//! `start`, `limit`, `since`, `typefilter`, `vmid`, `errors`, `source`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::task::{self, Outcome};
use crate::arg::time::{Time};
use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{self, Flag, NodeName, Vmid, choice};
use crate::error::ToolError;
use crate::json as pj;
use crate::paging::{self, Limit, Offset, Page, PageInfo};
use crate::path::ApiPath;

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 50;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 500;
/// Longest `type` filter.
const TYPE_MAX: usize = 64;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_tasks",
    title: "List tasks",
    description: "Recent tasks, newest first, with UPID, type, guest, user, times and outcome: \
        what happened or runs now. Then pve_get_task_log.",
    reads: ["/nodes/{node}/tasks", "/cluster/tasks"],
    privileges: [
        "/nodes/{node}": "Sys.Audit",
    ],
    run: run,
};

/// Which tasks to list; filters combine with AND.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Only this node's (full archive)
    node: Option<NodeName>,
    /// Only about this guest
    vmid: Option<Vmid>,
    /// e.g. vzdump, qmstart
    #[serde(rename = "type")]
    task_type: Option<TaskType>,
    /// true: only tasks that failed
    #[serde(default)]
    errors: Flag,
    /// Epoch seconds or ISO-8601
    since: Option<Time>,
    /// true: running; false: finished
    running: Option<Flag>,
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    #[serde(default)]
    offset: Offset,
}

/// A Proxmox task type such as `vzdump`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskType(String);

impl TaskType {
    fn from_json(v: &Value) -> Result<Self, String> {
        let t = arg::string(v, TYPE_MAX)?;
        if !t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        {
            return Err(
                "must be a task type such as \"vzdump\" or \"qmstart\" (letters, digits, \
                 '_', '.', '-')"
                    .into(),
            );
        }
        Ok(TaskType(t.to_owned()))
    }
}
arg::deserialize_from_json!(TaskType);
arg::fixed_schema!(
    TaskType,
    serde_json::json!({"type": "string", "minLength": 1, "maxLength": TYPE_MAX, "pattern": "^[A-Za-z0-9_.-]+$"})
);

/// Matching tasks, one page of them.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TaskList {
    /// The tasks, newest first
    pub tasks: Vec<Task>,
    /// cluster: /cluster/tasks (recent tasks, filtered by pve-mcp); node: the node's task archive
    pub source: Source,
    /// Tasks in this answer by status.
    pub counts: OutcomeCounts,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

choice! {
    /// Where a task list comes from.
    pub enum Source {
        /// `/cluster/tasks`: recent tasks of every node, filtered by pve-mcp.
        Cluster = "cluster",
        /// `/nodes/{node}/tasks`: the node's task archive, filtered by Proxmox.
        Node = "node",
    }
}

/// Tasks in this answer by status.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct OutcomeCounts {
    /// Still running
    pub running: usize,
    /// Finished OK
    pub ok: usize,
    /// Finished with warnings
    pub warning: usize,
    /// Failed
    pub error: usize,
}

/// One task.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Task {
    /// Task id; pass it to pve_get_task_status / pve_get_task_log
    pub upid: String,
    /// Node the task ran on
    pub node: String,
    /// Task type, e.g. vzdump, qmstart
    #[serde(rename = "type")]
    pub task_type: String,
    /// Object the task is about (often a vmid); null if none
    pub id: Option<String>,
    /// User that started it; null if unknown
    pub user: Option<String>,
    /// API token name if a token started it; null otherwise
    pub tokenid: Option<String>,
    /// Start, Unix epoch seconds; null if unknown
    pub starttime: Option<u64>,
    /// Start, ISO-8601 UTC; null if unknown
    pub starttime_iso: Option<String>,
    /// End, Unix epoch seconds; null while running
    pub endtime: Option<u64>,
    /// End, ISO-8601 UTC; null while running
    pub endtime_iso: Option<String>,
    /// Seconds from start to end; null while running
    pub duration: Option<u64>,
    /// running, ok, warning or error
    pub status: Outcome,
    /// Proxmox's raw status text (OK, "WARNINGS: n", the error); null while running
    pub exitstatus: Option<String>,
}

/// The validated filters.
#[derive(Debug, Clone, Default)]
struct Filters {
    node: Option<String>,
    vmid: Option<u64>,
    task_type: Option<String>,
    errors: bool,
    since: Option<i64>,
    running: Option<bool>,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<TaskList>, ToolError> {
    let f = Filters {
        node: input.node.map(|n| n.0),
        vmid: input.vmid.map(|v| u64::from(v.0)),
        task_type: input.task_type.map(|t| t.0),
        errors: input.errors.0,
        since: input.since.map(|t| t.0),
        running: input.running.map(|r| r.0),
    };
    if f.errors && f.running == Some(true) {
        return Err(ToolError::InvalidArguments(
            "errors: a running task has not failed yet; use errors: true for finished tasks that \
             did not end OK, or running: true for tasks still running, not both"
                .into(),
        ));
    }
    let page = Page::new(input.limit, input.offset);
    match &f.node {
        None => {
            let data = pve.get(&ApiPath::new("cluster").lit("tasks"))?;
            let mut tasks: Vec<Task> = data
                .as_array()
                .map(|a| a.iter().filter_map(task).collect())
                .unwrap_or_default();
            tasks.retain(|t| keep(t, &f));
            tasks.sort_by_key(|t| std::cmp::Reverse(t.starttime.unwrap_or(0)));
            let (tasks, info) = paging::paginate(tasks, page);
            Ok(shape(tasks, info, Source::Cluster, &f))
        }
        Some(node) => {
            let mut path = ApiPath::new("nodes")
                .seg(node)
                .lit("tasks")
                .query("start", &page.offset.to_string())
                .query("limit", &page.limit.to_string());
            if let Some(since) = f.since {
                path = path.query("since", &since.to_string());
            }
            if let Some(t) = &f.task_type {
                path = path.query("typefilter", t);
            }
            if let Some(v) = f.vmid {
                path = path.query("vmid", &v.to_string());
            }
            if f.errors {
                path = path.query("errors", "1");
            }
            // Proxmox's errors filter only drops tasks that ended OK, so
            // running ones would pass it: ask for finished tasks only.
            let source = match f.running {
                Some(true) => "active",
                Some(false) => "archive",
                None if f.errors => "archive",
                None => "all",
            };
            path = path.query("source", source);
            let crate::api::Envelope { data, total, .. } = pve.get_envelope(&path)?;
            let mut tasks: Vec<Task> = data
                .as_array()
                .map(|a| a.iter().filter_map(task).collect())
                .unwrap_or_default();
            tasks.truncate(page.limit as usize);
            tasks.sort_by_key(|t| std::cmp::Reverse(t.starttime.unwrap_or(0)));
            let returned = tasks.len();
            let total = total
                .map(|t| t as usize)
                .unwrap_or(page.offset as usize + returned)
                .max(page.offset as usize + returned);
            let end = page.offset as usize + returned;
            let info = PageInfo {
                total,
                returned,
                omitted: total - returned,
                offset: page.offset,
                limit: page.limit,
                next_offset: (end < total).then_some(end as u64),
            };
            Ok(shape(tasks, info, Source::Node, &f))
        }
    }
}

/// Normalises one task entry (from either endpoint); `None` without a UPID.
pub fn task(v: &Value) -> Option<Task> {
    let upid = pj::text(v.get("upid"))?;
    let parsed = task::parse_upid(&upid).ok();
    let raw_user = pj::text(v.get("user")).or_else(|| {
        parsed.as_ref().map(|p| match &p.tokenid {
            Some(t) => format!("{}!{t}", p.user),
            None => p.user.clone(),
        })
    });
    let (user, tokenid) = match raw_user.as_deref().and_then(|u| u.split_once('!')) {
        Some((u, t)) => (Some(u.to_owned()), Some(t.to_owned())),
        None => (raw_user, pj::text(v.get("tokenid"))),
    };
    let starttime = pj::uint(v.get("starttime")).or(parsed.as_ref().map(|p| p.starttime));
    let endtime = pj::uint(v.get("endtime"));
    let raw_status = pj::text(v.get("status")).map(|s| s.trim().to_owned());
    let status = match (&raw_status, endtime) {
        (None, None) => Outcome::Running,
        (None, Some(_)) => Outcome::Error,
        (Some(s), _) => task::outcome(Some(s)),
    };
    let exitstatus = raw_status.filter(|_| status != Outcome::Running);
    let node = pj::text(v.get("node")).or(parsed.as_ref().map(|p| p.node.clone()))?;
    let task_type = pj::text(v.get("type"))
        .or(parsed.as_ref().map(|p| p.task_type.clone()))
        .unwrap_or_default();
    let id = match v.get("id") {
        Some(x) => pj::text(Some(x)),
        None => parsed.as_ref().and_then(|p| p.id.clone()),
    };
    let iso = |t: Option<u64>| t.map(|t| crate::format::iso_utc(t as i64));
    Some(Task {
        upid,
        node,
        task_type,
        id,
        user,
        tokenid,
        starttime,
        starttime_iso: iso(starttime),
        endtime,
        endtime_iso: iso(endtime),
        duration: match (starttime, endtime) {
            (Some(s), Some(e)) if e >= s => Some(e - s),
            _ => None,
        },
        status,
        exitstatus,
    })
}

/// The client-side filters for `/cluster/tasks`.
fn keep(t: &Task, f: &Filters) -> bool {
    let status = t.status;
    f.vmid
        .is_none_or(|v| t.id.as_deref() == Some(v.to_string().as_str()))
        && f.task_type.as_deref().is_none_or(|ty| t.task_type == ty)
        && (!f.errors || status == Outcome::Error || status == Outcome::Warning)
        && f.since
            .is_none_or(|s| t.starttime.is_some_and(|st| st as i64 >= s))
        && f.running.is_none_or(|r| r == (status == Outcome::Running))
}

fn shape(tasks: Vec<Task>, info: PageInfo, source: Source, f: &Filters) -> Answer<TaskList> {
    let mut counts = OutcomeCounts::default();
    for t in &tasks {
        *match t.status {
            Outcome::Running => &mut counts.running,
            Outcome::Ok => &mut counts.ok,
            Outcome::Warning => &mut counts.warning,
            Outcome::Error => &mut counts.error,
        } += 1;
    }
    let scope = match &f.node {
        Some(n) => format!("on node {n}"),
        None => "in the cluster's recent-task list".to_owned(),
    };
    let mut summary = format!(
        "{} matching {scope}; {}.",
        crate::format::count(info.total, "task", "tasks"),
        info.describe()
    );
    if info.total == 0 {
        let on = f
            .node
            .as_deref()
            .map_or("/".to_owned(), |n| format!("/nodes/{n}"));
        summary.push_str(&format!(
            " Without Sys.Audit on {on} the token sees only tasks it started itself \
             (pve_check_permissions shows its privileges)."
        ));
    }
    if info.returned > 0 {
        summary.push_str(&format!(
            " Shown: {} running, {} ok, {} warning, {} error.",
            counts.running, counts.ok, counts.warning, counts.error
        ));
    }
    Answer {
        structured: TaskList {
            tasks,
            source,
            counts,
            page: info,
        },
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::Output;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    fn cluster_tasks() -> Value {
        json!([
            {"upid":"UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:","node":"pve1","pid":2146406,
             "starttime":1774350000,"type":"vzdump","id":"","user":"root@pam","status":"OK","endtime":1774350433,"saved":"1"},
            {"upid":"UPID:pve2:00001234:00ABCDEF:69C27000:qmstart:101:api@pve!ci:","node":"pve2",
             "starttime":1774350336,"type":"qmstart","id":"101","user":"api@pve","tokenid":"ci",
             "status":"VM 101 already running","endtime":1774350337},
            {"upid":"UPID:pve2:00001235:00ABCDF0:69C27100:qmigrate:102:root@pam:","node":"pve2",
             "starttime":1774350592,"type":"qmigrate","id":"102","user":"root@pam"},
            {"upid":"UPID:pve1:00001236:00ABCDF1:69C26000:vzdump:101:root@pam:","node":"pve1",
             "starttime":1774346240,"type":"vzdump","id":"101","user":"root@pam","status":"WARNINGS: 1","endtime":1774346300}
        ])
    }

    fn call(pve: &mut FakePve, args: Value) -> Result<Output, ToolError> {
        TOOL.call(pve, &args.to_string())
    }

    #[test]
    fn cluster_list_is_sorted_and_classified() {
        let mut pve = FakePve::default().with("/cluster/tasks", cluster_tasks());
        let out = call(&mut pve, json!({})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        let types: Vec<&str> = s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["qmigrate", "qmstart", "vzdump", "vzdump"]);
        assert_eq!(
            s["counts"],
            json!({"running": 1, "ok": 1, "warning": 1, "error": 1})
        );
        let t = &s["tasks"][1];
        assert_eq!(t["status"], "error");
        assert_eq!(t["exitstatus"], "VM 101 already running");
        assert_eq!(
            (t["user"].as_str(), t["tokenid"].as_str()),
            (Some("api@pve"), Some("ci"))
        );
        assert_eq!(t["duration"], 1);
        let t = &s["tasks"][2];
        assert_eq!(t["id"], Value::Null);
        assert_eq!(t["starttime_iso"], "2026-03-24T11:00:00Z");
        assert_eq!(s["tasks"][0]["endtime"], Value::Null);
        assert_eq!(s["total"], 4);
        assert_eq!(pve.requests, ["/cluster/tasks"]);
    }

    #[test]
    fn cluster_filters_and_paging_are_client_side() {
        let mut pve = FakePve::default().with("/cluster/tasks", cluster_tasks());
        let out = call(&mut pve, json!({"vmid": 101})).unwrap();
        assert_eq!(out.structured["total"], 2);
        let out = call(&mut pve, json!({"type": "vzdump", "limit": 1})).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["total"], 2);
        assert_eq!(out.structured["returned"], 1);
        assert_eq!(out.structured["next_offset"], 1);
        let out = call(&mut pve, json!({"errors": true})).unwrap();
        assert_eq!(out.structured["tasks"][0]["type"], "qmstart");
        assert!(
            out.structured["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["status"] == "error" || t["status"] == "warning")
        );
        let out = call(&mut pve, json!({"running": true})).unwrap();
        assert_eq!(out.structured["tasks"][0]["type"], "qmigrate");
        let out = call(&mut pve, json!({"since": "2026-03-24T11:00:00Z"})).unwrap();
        assert_eq!(out.structured["total"], 3);
        let out = call(&mut pve, json!({"since": 1774350400})).unwrap();
        assert_eq!(out.structured["total"], 1);
        assert!(pve.requests.iter().all(|r| r == "/cluster/tasks"));
    }

    #[test]
    fn node_list_passes_only_accepted_parameters() {
        let path = "/nodes/pve1/tasks?start=10&limit=2&since=1774310400&typefilter=vzdump&vmid=101&errors=1&source=archive";
        let mut pve = FakePve::default().with_total(
            path,
            json!([{"pid":2146406,"type":"vzdump","user":"root@pam","starttime":1774350000,"pstart":70119940,"status":"backup failed",
                "node":"pve1","id":"101","endtime":1774350433,"upid":"UPID:pve1:0020C066:042DF204:69C26EB0:vzdump:101:root@pam:"}]),
            11,
        );
        let out = call(
            &mut pve,
            json!({"node": "pve1", "vmid": 101, "type": "vzdump", "errors": true, "since": "2026-03-24",
                   "running": false, "limit": 2, "offset": 10}),
        )
        .unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["source"], "node");
        assert_eq!(
            (
                s["total"].as_u64(),
                s["returned"].as_u64(),
                s["omitted"].as_u64()
            ),
            (Some(11), Some(1), Some(10))
        );
        assert_eq!(s["next_offset"], Value::Null);
        assert_eq!(s["tasks"][0]["status"], "error");

        let mut pve = FakePve::default().with_total(
            "/nodes/pve1/tasks?start=0&limit=50&source=active",
            json!([{"upid":"UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:","node":"pve1","starttime":1774350000,
                "type":"vzdump","id":"","user":"root@pam","status":"RUNNING"}]),
            1,
        );
        let out = call(&mut pve, json!({"node": "pve1", "running": true})).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["tasks"][0]["status"], "running");
        assert_eq!(out.structured["tasks"][0]["exitstatus"], Value::Null);

        let mut pve =
            FakePve::default().with("/nodes/pve1/tasks?start=0&limit=50&source=all", json!([]));
        let out = call(&mut pve, json!({"node": "pve1"})).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["total"], 0);
    }

    #[test]
    fn bad_arguments_make_no_request() {
        let mut pve = FakePve::default();
        for (args, needle) in [
            (
                json!({"limit": 501}),
                "limit: must be an integer between 1 and 500",
            ),
            (json!({"limit": 0}), "limit: must be"),
            (json!({"offset": -1}), "offset: must be"),
            (json!({"vmid": 99}), "vmid: must be"),
            (json!({"errors": "true"}), "errors: must be a boolean"),
            (json!({"running": 1}), "running: must be true or false"),
            (json!({"since": "yesterday"}), "since: must be Unix epoch"),
            (json!({"since": -5}), "since: must be"),
            (json!({"type": "a b"}), "type: must be a task type"),
            (json!({"node": "x y"}), "node: "),
        ] {
            let e = call(&mut pve, args.clone()).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{args}: {e:?}");
            assert!(e.message().contains(needle), "{args}: {e}");
        }
        assert!(pve.requests.is_empty());
    }
}
