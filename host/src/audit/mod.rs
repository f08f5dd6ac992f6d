//! The tamper-evident audit log: one JSONL record per tool call and one per
//! egress decision, hash-chained ([`chain`]) so `pve-mcp audit verify`
//! ([`verify`]) finds any edited, dropped or reordered record.
//!
//! [`App::call`](crate::server::app::App::call) opens a [`CallAudit`] for every call
//! and finishes it with the call's report; a write failure refuses the call
//! unless `[audit] on_failure = "continue"`.

pub mod chain;
pub mod record;
pub mod verify;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use chrono::{SecondsFormat, Utc};

use crate::caller::Caller;
use crate::canonical::arguments_hash;
use crate::config::audit::{AuditSettings, OnFailure};
use crate::error::ConfigError;
use crate::sandbox::CallReport;
use crate::secret::Redactor;
use crate::tools::{CallOutcome, FailureKind, JsonObject};

use chain::{Batch, FileSink, Head, Sinks};
use record::{CallRecord, EgressEntry, Record};

/// The decision recorded for a call, and the rule that made it, as the
/// policy engine gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditDecision {
    /// `allow`, `deny`, `rate-limited`, `require-approval`, `approved`,
    /// `not-approved`, ...
    pub decision: String,
    /// The rule that decided, e.g. `policy.tools.pve_list_vms`.
    pub rule: String,
}

impl AuditDecision {
    /// A call allowed by this rule.
    pub fn allowed(rule: &str) -> AuditDecision {
        AuditDecision {
            decision: "allow".into(),
            rule: rule.into(),
        }
    }
}

impl AuditDecision {
    /// A call that ran because a person approved it, under this rule.
    pub fn approved(rule: &str) -> AuditDecision {
        AuditDecision {
            decision: "approved".into(),
            rule: rule.into(),
        }
    }

    /// A call that needed a person's approval and did not run: still
    /// pending, declined, denied or expired.
    pub fn not_approved(rule: &str) -> AuditDecision {
        AuditDecision {
            decision: "not-approved".into(),
            rule: rule.into(),
        }
    }
}

impl From<&crate::policy::Decision> for AuditDecision {
    fn from(decision: &crate::policy::Decision) -> Self {
        AuditDecision {
            decision: decision.kind().into(),
            rule: decision.rule().into(),
        }
    }
}

/// An open audit log: a writer thread that owns the file.
pub struct AuditLog {
    sender: mpsc::Sender<Batch>,
    writer: Option<std::thread::JoinHandle<()>>,
    failing: Arc<AtomicBool>,
    include_arguments: bool,
    on_failure: OnFailure,
    redactor: Redactor,
}

impl AuditLog {
    /// Opens the log these settings describe (`None` when auditing is off),
    /// continuing the chain of an existing file.
    pub fn open(
        settings: &AuditSettings,
        redactor: Redactor,
    ) -> Result<Option<AuditLog>, ConfigError> {
        if !settings.enabled() {
            return Ok(None);
        }
        let (file, head) = match &settings.path {
            Some(path) => {
                let (sink, head) = FileSink::open(path, settings.max_size_bytes, settings.fsync)
                    .map_err(|e| ConfigError {
                        key: format!("audit.path ({})", path.display()),
                        problem: e.problem,
                        fix: e.fix,
                    })?;
                (Some(sink), head)
            }
            // On stderr alone every start begins a new chain.
            None => (None, Head::genesis()),
        };
        tracing::info!(
            path = ?settings.path,
            stderr = settings.stderr,
            seq = head.seq,
            "audit log open"
        );
        let failing = Arc::new(AtomicBool::new(false));
        let sinks = Sinks {
            file,
            stderr: settings.stderr,
        };
        let (sender, writer) =
            chain::start_writer(sinks, head, failing.clone()).map_err(|e| ConfigError {
                key: "audit".into(),
                problem: format!("cannot start the audit writer thread: {e}"),
                fix: "check the process's thread limit".into(),
            })?;
        Ok(Some(AuditLog {
            sender,
            writer: Some(writer),
            failing,
            include_arguments: settings.include_arguments,
            on_failure: settings.on_failure,
            redactor,
        }))
    }

    /// Starts the record of one call; finish it with the call's report.
    pub fn begin(
        &self,
        call_id: &str,
        caller: &Caller,
        tool: &str,
        arguments: &JsonObject,
        decision: &AuditDecision,
    ) -> CallAudit<'_> {
        let r = |s: &str| self.redactor.redact(s).into_owned();
        let args = self.include_arguments.then(|| {
            record::redact_arguments(
                &serde_json::Value::Object(arguments.clone()),
                &self.redactor,
            )
        });
        CallAudit {
            log: self,
            started: Instant::now(),
            refused: false,
            record: Some(CallRecord {
                time: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
                call_id: call_id.to_string(),
                session: r(&caller.session),
                client: caller.client.as_deref().map(r),
                token: caller.token.as_deref().map(r),
                tool: r(tool),
                args_hash: arguments_hash(arguments),
                args,
                decision: r(&decision.decision),
                rule: r(&decision.rule),
                outcome: String::new(),
                ms: 0.0,
                result_bytes: 0,
                upstream: Vec::new(),
            }),
        }
    }

    fn refuses(&self) -> bool {
        self.on_failure == OnFailure::Refuse && self.failing.load(Ordering::SeqCst)
    }
}

impl Drop for AuditLog {
    /// Closes the queue and waits for the writer, so records nobody waited
    /// for (cancelled calls) are on disk before the process exits.
    fn drop(&mut self) {
        drop(std::mem::replace(&mut self.sender, mpsc::channel().0));
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The record of one call in progress. If it is dropped unfinished (the
/// client cancelled the call), the call is still recorded, as `cancelled`.
pub struct CallAudit<'a> {
    log: &'a AuditLog,
    started: Instant,
    refused: bool,
    record: Option<CallRecord>,
}

impl CallAudit<'_> {
    /// When the last record could not be written and the log fails closed,
    /// the report that refuses this call before it runs.
    pub fn refusal(&mut self) -> Option<CallReport> {
        if !self.log.refuses() {
            return None;
        }
        self.refused = true;
        Some(CallReport {
            outcome: refused("the audit log could not be written for an earlier call"),
            egress: Vec::new(),
        })
    }

    /// Writes the call's record and one per egress decision, and waits until
    /// they are written. If they cannot be and the log fails closed, the
    /// result is withheld: the agent gets a tool error instead.
    pub async fn finish(mut self, mut report: CallReport) -> CallReport {
        let Some(mut call) = self.record.take() else {
            return report;
        };
        let redactor = &self.log.redactor;
        call.ms = record::millis(self.started.elapsed());
        call.outcome = if self.refused {
            "refused".to_string()
        } else {
            outcome_name(&report.outcome).to_string()
        };
        call.result_bytes = result_bytes(&report.outcome);
        call.upstream = report
            .egress
            .iter()
            .map(|e| record::upstream(e, redactor))
            .collect();
        let mut records = Vec::with_capacity(1 + report.egress.len());
        for e in &report.egress {
            records.push(Record::Egress(EgressEntry {
                time: call.time.clone(),
                call_id: call.call_id.clone(),
                call_seq: 0,
                session: call.session.clone(),
                token: call.token.clone(),
                tool: call.tool.clone(),
                method: redactor.redact(&e.method).into_owned(),
                authority: redactor.redact(&e.authority).into_owned(),
                path: redactor.redact(&e.path).into_owned(),
                decision: if e.denied.is_some() { "deny" } else { "allow" },
                rule: record::egress_rule(e.denied.as_ref()),
                reason: e
                    .denied
                    .as_ref()
                    .map(|d| redactor.redact(&d.to_string()).into_owned()),
                status: e.status,
                failure: e
                    .failure
                    .as_ref()
                    .map(|f| redactor.redact(&f.to_string()).into_owned()),
                ms: record::millis(e.elapsed),
            }));
        }
        records.insert(0, Record::Call(call));
        let (ack, written) = tokio::sync::oneshot::channel();
        let sent = self.log.sender.send(Batch {
            records,
            ack: Some(ack),
        });
        let result = match sent {
            Err(_) => Err("the audit writer has stopped".to_string()),
            Ok(()) => written
                .await
                .unwrap_or_else(|_| Err("the audit writer has stopped".to_string())),
        };
        if let Err(error) = result {
            match self.log.on_failure {
                OnFailure::Refuse => {
                    report.outcome =
                        refused(&format!("its audit record could not be written ({error})"));
                }
                OnFailure::Continue => {
                    tracing::error!(
                        "audit record lost ({error}); the call went ahead because [audit] on_failure = \"continue\""
                    );
                }
            }
        }
        report
    }
}

impl Drop for CallAudit<'_> {
    fn drop(&mut self) {
        // Unfinished means the call's future was dropped: the client
        // cancelled it. Its egress is unknown here; the call is not.
        if let Some(mut call) = self.record.take() {
            call.outcome = "cancelled".into();
            call.ms = record::millis(self.started.elapsed());
            let _ = self.log.sender.send(Batch {
                records: vec![Record::Call(call)],
                ack: None,
            });
        }
    }
}

fn refused(why: &str) -> CallOutcome {
    CallOutcome::Failed {
        kind: FailureKind::Sandbox,
        message: format!(
            "pve-mcp refused this call: {why}. The audit log fails closed ([audit] on_failure = \"refuse\"), so no call runs unrecorded; ask the operator to check the audit log's disk and permissions"
        ),
    }
}

/// The outcome as the record names it.
pub fn outcome_name(outcome: &CallOutcome) -> &'static str {
    match outcome {
        CallOutcome::Output {
            is_error: false, ..
        } => "ok",
        CallOutcome::Output { is_error: true, .. } => "tool-error",
        CallOutcome::UnknownTool(_) => "unknown-tool",
        CallOutcome::Failed { kind, .. } => kind.as_str(),
    }
}

/// Bytes of what the call returned: its structured JSON, or its message.
fn result_bytes(outcome: &CallOutcome) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    match outcome {
        CallOutcome::Output { structured, .. } => {
            let mut count = Count(0);
            let _ = serde_json::to_writer(&mut count, structured);
            count.0
        }
        CallOutcome::Failed { message, .. } => message.len(),
        CallOutcome::UnknownTool(_) => 0,
    }
}
