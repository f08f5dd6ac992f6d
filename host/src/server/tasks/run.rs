//! A task's call in the background: it is authorized first (by the
//! caller of `tools/call`, as any call), then spawned holding the server's
//! [`App`] and the session's call slot, so a session still runs no more
//! calls at once than its limit; its wait takes a wait slot in the sandbox
//! as a waiting call always does. The guest's progress lines become the
//! task's status message; the host learns the Proxmox task it waits for
//! from its status polls ([`super::upid`]).

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CreateTaskResult, Notification, ServerNotification, TaskStatusNotificationParams,
};
use rmcp::service::Peer;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

use super::store::{Status, StopGrant, TaskRecord};
use super::{Tasks, detailed, event, new_id, now, upid};
use crate::audit::AuditDecision;
use crate::caller::Caller;
use crate::egress::{Access, Binding, EgressLog, credential_tier};
use crate::policy::Grant;
use crate::sandbox::CallReport;
use crate::server::app::{Admitted, App};
use crate::tier::Tier;
use crate::tools::JsonObject;

/// How often a running task checks whether another replica cancelled it.
const CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// A call that may become a task: everything [`Admitted`] holds, owned, so
/// it can outlive the request.
struct Job {
    tool: String,
    arguments: JsonObject,
    binding: Binding,
    grant: Grant,
    decision: AuditDecision,
}

impl Tasks {
    /// Makes `call` a task: records it, spawns it and returns its handle.
    /// When the store cannot record it, the call comes back to be run as
    /// an ordinary waiting call. `slot` (the session's call slot, if any)
    /// is held until the task ends. `peer` is told when it ends.
    pub async fn start<'t>(
        self: &Arc<Self>,
        app: &Arc<App>,
        caller: &Caller,
        call: Admitted<'t>,
        slot: &mut Option<OwnedSemaphorePermit>,
        peer: Option<Peer<RoleServer>>,
    ) -> Result<CreateTaskResult, Admitted<'t>> {
        let stop = (call.grant.access == Access::Write).then(|| {
            let gate = app.gate();
            let bound = gate.as_bound(&call.binding, &call.arguments);
            let tier = credential_tier(call.grant.access, Tier::of_call(call.tool, &bound));
            StopGrant {
                rule: call.grant.rule.clone(),
                cluster: call
                    .arguments
                    .get(crate::egress::CLUSTER_ARG)
                    .and_then(|c| c.as_str())
                    .map(str::to_owned),
                tier: tier.as_str().into(),
            }
        });
        let created = now();
        let record = TaskRecord {
            id: new_id(),
            owner: crate::approval::binding(caller),
            tool: call.tool.name.clone(),
            status: Status::Working,
            message: Some(format!("{}: started", call.tool.name)),
            created_at: created.clone(),
            updated_at: created,
            upid: None,
            node: None,
            stop,
            outcome: None,
        };
        if let Err(e) = self.store.create(&record, super::TTL).await {
            tracing::warn!(tool = %call.tool.name, "the call waits instead of becoming a task: {e}");
            return Err(call);
        }
        app.audit_task(event(caller, "created", &record)).await;
        tracing::info!(task = %record.id, tool = %record.tool, "task created");
        let handle = CreateTaskResult::new(detailed(&record).task);
        let job = Job {
            tool: call.tool.name.clone(),
            arguments: call.arguments,
            binding: call.binding,
            grant: call.grant,
            decision: call.decision,
        };
        let cancel = self.register(&record.id);
        let (tasks, app, caller, slot) = (self.clone(), app.clone(), caller.clone(), slot.take());
        tokio::spawn(async move {
            let _slot = slot;
            tasks.run(&app, &caller, job, record, cancel, peer).await;
        });
        Ok(handle)
    }

    /// Runs the task's call to its end, or until it is cancelled here or
    /// elsewhere; then records, audits and announces how it ended.
    async fn run(
        &self,
        app: &App,
        caller: &Caller,
        job: Job,
        mut record: TaskRecord,
        cancel: CancellationToken,
        peer: Option<Peer<RoleServer>>,
    ) {
        let report = match app.tool(&job.tool) {
            Some(tool) => {
                let call = Admitted {
                    tool,
                    arguments: job.arguments,
                    binding: job.binding,
                    grant: job.grant,
                    decision: job.decision,
                };
                self.watch(app, caller, call, &mut record, &cancel).await
            }
            None => None,
        };
        if let Some(report) = report {
            let ended = match crate::server::mcp::to_call_result(report.outcome) {
                Some(result) => {
                    // A tool error is a completed task too, as the
                    // extension has it: the result says what went wrong.
                    record.status = Status::Completed;
                    record.message = Some(if result.is_error == Some(true) {
                        format!("{} ended with an error: see the result", record.tool)
                    } else {
                        format!("{}: done", record.tool)
                    });
                    serde_json::to_value(result).ok()
                }
                None => {
                    record.status = Status::Failed;
                    record.message = Some(format!("{} is not a tool here", record.tool));
                    let error = rmcp::ErrorData::invalid_params("unknown tool", None);
                    serde_json::to_value(error).ok()
                }
            };
            record.outcome = ended;
            record.updated_at = now();
            // `false`: cancelled first, and the cancel's record stands.
            if let Err(e) = self.store.replace_if(Status::Working, &record).await {
                tracing::warn!(task = %record.id, "the task's end was not stored: {e}");
            }
        }
        self.forget(&record.id);
        let ended = match self.store.get(&record.id).await {
            Ok(Some(stored)) => stored,
            _ => record,
        };
        tracing::info!(task = %ended.id, status = %ended.status.as_str(), "task ended");
        app.audit_task(event(caller, "end", &ended)).await;
        if let Some(peer) = peer {
            let params = TaskStatusNotificationParams::new(detailed(&ended));
            let note = ServerNotification::TaskStatusNotification(Notification::new(params));
            if let Err(e) = peer.send_notification(note).await {
                tracing::debug!(error = %e, "task notification not delivered");
            }
        }
    }

    /// Runs the call, keeping the stored record's message and Proxmox task
    /// up to date; `None` when the task was cancelled (the call's future is
    /// dropped, and with it its wait).
    async fn watch(
        &self,
        app: &App,
        caller: &Caller,
        call: Admitted<'_>,
        record: &mut TaskRecord,
        cancel: &CancellationToken,
    ) -> Option<CallReport> {
        let (sender, mut reports) = crate::sandbox::progress::channel();
        let egress = EgressLog::default();
        let call = app.run_observed(caller, call, Some(sender), egress.clone());
        tokio::pin!(call);
        let mut ticks = tokio::time::interval(CHECK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut reports_open = true;
        // When the record was last written: a working task's record is
        // rewritten at least every HEARTBEAT, so other replicas can tell a
        // task whose replica died from one that runs.
        let mut saved = std::time::Instant::now();
        loop {
            tokio::select! {
                biased;
                report = &mut call => return Some(report),
                _ = cancel.cancelled() => return None,
                report = reports.recv(), if reports_open => match report {
                    Some(report) => {
                        let changed = report.message.is_some() && report.message != record.message;
                        if changed {
                            record.message = report.message;
                        }
                        if learn(&egress, record) || changed {
                            saved = std::time::Instant::now();
                            if !self.save(record).await {
                                return None;
                            }
                        }
                    }
                    None => reports_open = false,
                },
                _ = ticks.tick() => {
                    if learn(&egress, record) || saved.elapsed() >= super::HEARTBEAT {
                        saved = std::time::Instant::now();
                        if !self.save(record).await {
                            return None;
                        }
                    } else if self.cancelled_elsewhere(&record.id).await {
                        return None;
                    }
                }
            }
        }
    }

    /// Stores the working task's new state; `false` when it is no longer
    /// working (a cancel ended it).
    async fn save(&self, record: &mut TaskRecord) -> bool {
        record.updated_at = now();
        match self.store.replace_if(Status::Working, record).await {
            Ok(working) => working,
            Err(e) => {
                tracing::warn!(task = %record.id, "the task's progress was not stored: {e}");
                true
            }
        }
    }

    async fn cancelled_elsewhere(&self, id: &str) -> bool {
        matches!(self.store.get(id).await, Ok(Some(r)) if r.status != Status::Working)
    }
}

/// Takes the Proxmox task the call now waits for into `record`; whether
/// it changed.
fn learn(egress: &EgressLog, record: &mut TaskRecord) -> bool {
    let Some(seen) = upid::waited(egress) else {
        return false;
    };
    if record.upid.as_deref() == Some(seen.upid.as_str()) {
        return false;
    }
    record.upid = Some(seen.upid);
    record.node = Some(seen.node);
    true
}
