//! A write about a node's storage rather than a guest (a volume deleted,
//! a file downloaded): the same flow and answer as a guest's action
//! ([`crate::action`]), without the guest's fields.

use serde::Serialize;

use crate::action::{self, Execution, Prepared, TaskReport};
use crate::api::Pve;
use crate::error::ToolError;
use crate::tool::Answer;
use crate::write::PlannedRequest;

/// A node-level write tool's answer: the plan, and what happened when it
/// was sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct NodeActionOutput {
    /// Node the request is about; "cluster" for a cluster-wide one (a pool)
    pub node: String,
    /// true: a dry run; nothing was sent and requests is the plan
    pub dry_run: bool,
    /// Whether the write was sent to Proxmox
    pub sent: bool,
    /// What pve-mcp read before writing
    pub found: String,
    /// The writes sent, or on a dry run those that would be sent; empty when there was
    /// nothing to do
    pub requests: Vec<PlannedRequest>,
    /// What the action does (or would do, or why there was nothing to do)
    pub effect: String,
    /// The task Proxmox started; null when none was started
    pub task: Option<TaskReport>,
}

/// Runs a prepared write on `node` as `execution` asks.
pub fn run(
    pve: &mut dyn Pve,
    node: &str,
    found: String,
    prepared: Prepared,
    execution: Execution,
) -> Result<Answer<NodeActionOutput>, ToolError> {
    let done = action::execute(pve, &found, prepared, execution)?;
    Ok(Answer {
        summary: done.summary,
        structured: NodeActionOutput {
            node: node.to_owned(),
            dry_run: execution.dry_run,
            sent: done.sent,
            found,
            requests: done.requests,
            effect: done.effect,
            task: done.task,
        },
    })
}
