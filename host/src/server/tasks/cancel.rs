//! `tasks/cancel`. A task whose call was granted write access has its
//! Proxmox task stopped: `pve_stop_task` runs, bound to that UPID, with
//! the original call's grant and credential tier, through the sandbox and
//! the gate, and is audited like any call. Otherwise pve-mcp only stops
//! waiting and the Proxmox task goes on. Either way the task ends
//! `cancelled` and its status message says which. The UPID and node come
//! from the shared store, so the replica that gets the cancel sends the
//! stop; the one running the call sees the task cancelled and stops
//! waiting.

use rmcp::ErrorData;

use super::store::{Status, StopGrant};
use super::{Tasks, event, now};
use crate::audit::AuditDecision;
use crate::caller::Caller;
use crate::egress::Access;
use crate::policy::{Approver, Grant, Permit};
use crate::server::app::{Admitted, App};
use crate::tier::Tier;
use crate::tools::{CallOutcome, JsonObject};

/// The tool a cancel runs to stop a Proxmox task.
pub const STOP_TOOL: &str = "pve_stop_task";

impl Tasks {
    /// `tasks/cancel` of the caller's task `id`. A task that already ended
    /// is left as it ended.
    pub async fn cancel(&self, app: &App, caller: &Caller, id: &str) -> Result<(), ErrorData> {
        let record = self.owned(caller, id).await?;
        if record.status != Status::Working {
            let mut seen = record.clone();
            seen.message = Some(format!(
                "cancel ignored: the task had already ended ({})",
                record.status.as_str()
            ));
            app.audit_task(event(caller, "cancel", &seen)).await;
            return Ok(());
        }
        let target = match (&record.stop, &record.upid, &record.node) {
            (Some(grant), Some(upid), Some(node)) => Some((grant.clone(), upid, node)),
            _ => None,
        };
        let mut cancelled = record.clone();
        cancelled.status = Status::Cancelled;
        cancelled.updated_at = now();
        cancelled.message = Some(match (&target, &record.upid, &record.stop) {
            (Some((_, upid, node)), _, _) => {
                format!("Cancelled: stopping the Proxmox task {upid} on {node}")
            }
            (None, Some(upid), None) => format!(
                "Cancelled: pve-mcp stopped waiting. The call was granted read access only, \
                 so the Proxmox task {upid} goes on (pve_get_task_status shows it)."
            ),
            (None, _, _) => format!(
                "Cancelled: pve-mcp stopped waiting. No Proxmox task was seen yet, so nothing \
                 was stopped; pve_list_tasks shows any task {} started.",
                record.tool
            ),
        });
        let won = self
            .store
            .replace_if(Status::Working, &cancelled)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if !won {
            // It ended first; that end stands.
            return Ok(());
        }
        self.stop_local(id);
        if let Some((grant, upid, node)) = target {
            let stopped = stop(app, caller, &grant, upid, node).await;
            cancelled.message = Some(match stopped {
                Ok(()) => format!(
                    "Cancelled: the Proxmox task {upid} on {node} was stopped ({STOP_TOOL})."
                ),
                Err(why) => format!(
                    "Cancelled: pve-mcp stopped waiting, but the Proxmox task {upid} on {node} \
                     could not be stopped: {why}"
                ),
            });
            cancelled.updated_at = now();
            if let Err(e) = self.store.replace_if(Status::Cancelled, &cancelled).await {
                tracing::warn!(task = %id, "the cancel's outcome was not stored: {e}");
            }
        }
        tracing::info!(task = %id, status_message = cancelled.message.as_deref(), "task cancelled");
        app.audit_task(event(caller, "cancel", &cancelled)).await;
        Ok(())
    }
}

/// Runs `pve_stop_task` for `upid` with the original call's grant: write
/// access, its rule (recorded as `task-cancel`), its credential tier from
/// the caller's credential set. Not judged by the policy again: stopping
/// what a granted call started is part of that grant.
async fn stop(
    app: &App,
    caller: &Caller,
    grant: &StopGrant,
    upid: &str,
    node: &str,
) -> Result<(), String> {
    let tool = app
        .tool(STOP_TOOL)
        .ok_or_else(|| format!("this component has no {STOP_TOOL}"))?;
    let mut arguments = JsonObject::new();
    arguments.insert("upid".into(), upid.into());
    arguments.insert("node".into(), node.into());
    if let Some(cluster) = &grant.cluster {
        arguments.insert(crate::egress::CLUSTER_ARG.into(), cluster.as_str().into());
    }
    let gate = app.gate();
    let mut binding = gate.bind(&tool.routes, &arguments);
    let cluster = binding
        .cluster
        .ok_or_else(|| "its cluster is no longer configured".to_string())?;
    let tier = [Tier::Read, Tier::Write, Tier::Destructive]
        .into_iter()
        .find(|t| t.as_str() == grant.tier)
        .unwrap_or(Tier::Write);
    binding.credential = gate.credential(cluster, app.credential_set(caller), tier)?;
    let call = Admitted {
        tool,
        arguments,
        binding,
        grant: Grant {
            rule: grant.rule.clone(),
            access: Access::Write,
            approver: Approver::Operator,
            permit: Permit::none(),
        },
        decision: AuditDecision {
            decision: "task-cancel".into(),
            rule: grant.rule.clone(),
            approver: None,
        },
    };
    match app.run(caller, call, None).await.outcome {
        CallOutcome::Output {
            is_error: false, ..
        } => Ok(()),
        CallOutcome::Output { summary, .. } => Err(summary),
        CallOutcome::Failed { message, .. } => Err(message),
        CallOutcome::UnknownTool(name) => Err(format!("{name} is not a tool here")),
    }
}
