//! `pve_wait_task`: wait for a task (a UPID) to end, reporting progress
//! from its log; see [`crate::task_wait`].

use serde::{Deserialize, Serialize};

use crate::task::{self, Upid};
use crate::tool::{Answer, Tool, read_tool};
use crate::action;
use crate::api::Pve;
use crate::arg::{Int, NodeName};
use crate::error::ToolError;
use crate::task_wait::{self, TaskEnd};
use crate::task::Outcome;

/// The tool.
pub static TOOL: Tool = Tool {
    waits: true,
    ..read_tool! {
    name: "pve_wait_task",
    title: "Wait for a task to end",
    description: "Wait for a task (UPID) to end or timeout; returns its exit status and, if it \
        failed, its log's end. Still running: call again.",
    reads: ["/nodes/{node}/tasks/{upid}/status", "/nodes/{node}/tasks/{upid}/log"],
    privileges: [
        "/nodes/{node}": "Sys.Audit",
    ],
    run: run,
    }
};

/// The task to wait for.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    upid: Upid,
    /// Default: the UPID's node
    node: Option<NodeName>,
    /// Seconds at most (default 120)
    timeout: Option<Int<1, 86400>>,
}

/// How the wait ended.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Waited {
    /// The task id
    pub upid: String,
    /// Node the task runs on
    pub node: String,
    /// Task type, e.g. qmstart, vzdump
    #[serde(rename = "type")]
    pub task_type: String,
    /// How it ended, or that it still runs
    #[serde(flatten)]
    pub end: TaskEnd,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<Waited>, ToolError> {
    let node = task::task_node(&input.upid, input.node.as_ref())?;
    let limit = action::wait_limit(pve, input.timeout.map(|t| t.0));
    let end = task_wait::wait(
        pve,
        &input.upid,
        &node,
        limit,
        &mut action::ReportToHost::default(),
    )?;
    let summary = match end.outcome {
        Outcome::Running => format!(
            "Task {} is still running after {} s; call pve_wait_task again to keep waiting.",
            input.upid.task_type, end.waited_secs
        ),
        Outcome::Ok | Outcome::Warning => format!(
            "Task {} ended {} after {} s.",
            input.upid.task_type,
            end.exitstatus.as_deref().unwrap_or("OK"),
            end.waited_secs
        ),
        Outcome::Error => format!(
            "Task {} FAILED after {} s: {}. The end of its log is in log_tail.",
            input.upid.task_type,
            end.waited_secs,
            end.exitstatus.as_deref().unwrap_or("unknown error")
        ),
    };
    Ok(Answer {
        structured: Waited {
            upid: input.upid.raw.clone(),
            node,
            task_type: input.upid.task_type.clone(),
            end,
        },
        summary,
    })
}
