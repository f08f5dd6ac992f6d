//! `pve_stop_task`: `DELETE /nodes/{node}/tasks/{upid}`, after reading the
//! task's status: a task that already ended is refused, saying how it
//! ended, with nothing sent. The node comes from the UPID.
//!
//! Destructive, as the host ranks every DELETE: an interrupted backup,
//! restore or disk move leaves its work half done, so only the tool's own
//! policy rule runs it (issue 24 asked for `write`; see the stop notes).

use serde::Serialize;

use crate::action::{self, Execution, TaskReport, action_input};
use crate::api::Pve;
use crate::arg::NodeName;
use crate::error::ToolError;
use crate::path::ApiPath;
use crate::route::Route;
use crate::task::{self, Upid};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, PlannedRequest, WriteRequest};

action_input! {
    new:
    /// The task to stop.
    pub struct Input {
        upid: Upid,
        /// Default: the UPID's node
        node: Option<NodeName>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_stop_task",
    title: "Stop a running task",
    description: "Stop a running task by UPID (a hung backup, migration or clone). What the \
        task did so far stays. Refused if it already ended.",
    annotations: Annotations::write(true, true),
    routes: &[Route::new("DELETE", "/nodes/{node}/tasks/{upid}", &[]).once()],
    privileges: [
        "/nodes/{node}": "Sys.Audit",
        "/nodes/{node}": "Sys.Modify",
    ],
    run: run,
};

/// What a stop did, or would do.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct StopOutput {
    /// The task
    pub upid: String,
    /// Node it runs on
    pub node: String,
    /// true: a dry run; nothing was sent and requests is the plan
    pub dry_run: bool,
    /// Whether the stop was sent to Proxmox
    pub sent: bool,
    /// What pve-mcp read first, e.g. "task vzdump on pve1 is running"
    pub found: String,
    /// The writes sent, or on a dry run those that would be sent
    pub requests: Vec<PlannedRequest>,
    /// The task after the stop (its end when the call waited); null on a dry run
    pub task: Option<TaskReport>,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<StopOutput>, ToolError> {
    let execution = input.execution();
    let node = task::task_node(&input.upid, input.node.as_ref())?;
    let upid = input.upid;
    let task_path = ApiPath::new("nodes").seg(&node).lit("tasks").seg(&upid.raw);
    let data = pve.get(&task_path.clone().lit("status"))?;
    let status = task::shape(&upid, &data).structured;
    let what = format!("task {} on {node}", upid.task_type);
    if status.status != task::RunState::Running {
        let how = status
            .exitstatus
            .as_deref()
            .map_or_else(|| "with no exit status".to_owned(), |e| format!("with \"{e}\""));
        return Err(ToolError::Precondition(format!(
            "The {what} already ended ({how}), so there is nothing to stop. Nothing was sent. \
             Its log says why: pve_get_task_log."
        )));
    }
    let request = WriteRequest::new(Method::Delete, task_path);
    let found = format!("{what} is running");
    stop(pve, &upid, &node, request, found, execution)
}

/// Sends the stop unless a dry run, then follows the task as asked.
fn stop(
    pve: &mut dyn Pve,
    upid: &Upid,
    node: &str,
    request: WriteRequest,
    found: String,
    execution: Execution,
) -> Result<Answer<StopOutput>, ToolError> {
    let planned = request.planned();
    let line = format!("{} {}", planned.method.as_str(), planned.path);
    let mut out = StopOutput {
        upid: upid.raw.clone(),
        node: node.to_owned(),
        dry_run: execution.dry_run,
        sent: false,
        found,
        requests: vec![planned],
        task: None,
    };
    if execution.dry_run {
        let summary = format!(
            "Dry run, nothing was sent. Would send {line}: the task stops, and what it did so \
             far stays. Found: {}.",
            out.found
        );
        return Ok(Answer { summary, structured: out });
    }
    pve.send(&request)?;
    out.sent = true;
    let report = action::follow(pve, upid, execution);
    let summary = match &report.end {
        Some(end) => format!(
            "Sent {line}; the task ended with \"{}\".",
            end.exitstatus.as_deref().unwrap_or("no exit status yet")
        ),
        None => format!(
            "Sent {line}; Proxmox is stopping the task (pve_wait_task {} shows its end).",
            upid.raw
        ),
    };
    out.task = Some(report);
    Ok(Answer { summary, structured: out })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::{Value, json};

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:vzdump:104:mcp@pve!ops:";
    const TASK: &str =
        "/nodes/pve1/tasks/UPID%3Apve1%3A0000A1B2%3A00C3D4E5%3A67E12345%3Avzdump%3A104%3Amcp%40pve%21ops%3A";

    fn status(status: &str, exitstatus: Option<&str>) -> Value {
        json!({"upid": UPID, "node": "pve1", "type": "vzdump", "id": "104", "user": "mcp@pve!ops",
               "starttime": 1_700_000_000, "status": status, "exitstatus": exitstatus})
    }

    fn fake(state: Value) -> FakePve {
        FakePve::default()
            .with(&format!("{TASK}/status"), state)
            .answering(&format!("DELETE {TASK}"), Value::Null)
    }

    #[test]
    fn a_running_task_is_stopped_with_one_delete() {
        let mut pve = fake(status("running", None));
        let out = TOOL
            .call(&mut pve, &json!({"upid": UPID}).to_string())
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(pve.writes, [format!("DELETE {TASK} ")]);
        assert_eq!(out.structured["sent"], true);
        assert_eq!(out.structured["node"], "pve1");
        assert_eq!(out.structured["found"], "task vzdump on pve1 is running");
        assert!(out.summary.starts_with("Sent DELETE /api2/json/nodes/pve1/tasks/"), "{}", out.summary);
    }

    #[test]
    fn a_dry_run_plans_the_delete_and_sends_nothing() {
        let mut pve = fake(status("running", None));
        let out = TOOL
            .call(&mut pve, &json!({"upid": UPID, "dry_run": true}).to_string())
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert!(pve.writes.is_empty());
        assert_eq!(out.structured["requests"][0]["method"], "DELETE");
        assert_eq!(out.structured["task"], Value::Null);
    }

    #[test]
    fn an_ended_task_is_refused_saying_how_it_ended() {
        let mut pve = fake(status("stopped", Some("interrupted by signal")));
        let e = TOOL
            .call(&mut pve, &json!({"upid": UPID}).to_string())
            .unwrap_err();
        assert!(matches!(e, ToolError::Precondition(_)), "{e:?}");
        assert!(e.message().contains("already ended (with \"interrupted by signal\")"), "{e}");
        assert!(e.message().contains("Nothing was sent"), "{e}");
        assert!(pve.writes.is_empty());
    }

    #[test]
    fn another_node_than_the_upids_is_refused_before_any_request() {
        let mut pve = FakePve::default();
        let e = TOOL
            .call(&mut pve, &json!({"upid": UPID, "node": "pve2"}).to_string())
            .unwrap_err();
        assert!(e.message().contains("node"), "{e}");
        assert!(pve.writes.is_empty());
    }
}
