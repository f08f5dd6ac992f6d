//! The tamper-evident audit log: one JSONL record per tool call and one per
//! egress decision, hash-chained ([`chain`]) so `pve-mcp audit verify`
//! ([`verify`]) finds any edited, dropped or reordered record.
//!
//! [`App::run`](crate::server::app::App::run) opens a [`CallAudit`] for
//! every call it runs, writes its `call-start` record before the guest
//! starts ([`CallAudit::start`]) and finishes it with the call's report; a
//! write failure refuses the call unless `[audit] on_failure = "continue"`.
//! Calls refused by the policy never run, and get only their end record.
//! Each server start first writes a `server-start` record naming the
//! component that runs ([`AuditLog::server_start`]).

pub mod chain;
pub mod record;
pub mod verify;

use std::sync::mpsc;
use std::time::Instant;

use chrono::{SecondsFormat, Utc};

use crate::caller::Caller;
use crate::canonical::arguments_hash;
use crate::config::audit::{AuditSettings, OnFailure};
use crate::egress::{Access, Denial, EgressLog, EgressRecord};
use crate::error::ConfigError;
use crate::policy::Approver;
use crate::sandbox::CallReport;
use crate::sandbox::component::{CONTRACT, ComponentIdentity};
use crate::secret::Redactor;
use crate::tools::{CallOutcome, FailureKind, JsonObject};

use chain::{Batch, FileSink, Head, Sinks};
use record::{
    CallHead, CallRecord, CallStartRecord, EgressEntry, Record, ServerStartRecord, TaskEventRecord,
};

/// The decision recorded for a call, and the rule that made it, as the
/// policy engine gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditDecision {
    /// `allow`, `deny`, `rate-limited`, `require-approval`, `approved`,
    /// `not-approved`, ...
    pub decision: String,
    /// The rule that decided, e.g. `policy.tools.pve_list_vms`.
    pub rule: String,
    /// Who decided an approval: `operator` or `client`.
    pub approver: Option<String>,
}

impl AuditDecision {
    /// A call allowed by this rule.
    pub fn allowed(rule: &str) -> AuditDecision {
        AuditDecision {
            decision: "allow".into(),
            rule: rule.into(),
            approver: None,
        }
    }
}

impl AuditDecision {
    /// A call the host refused before the policy saw it, because the
    /// argument `field` names a request that cannot be sent.
    pub fn invalid_arguments(field: &str) -> AuditDecision {
        AuditDecision {
            decision: "invalid-arguments".into(),
            rule: format!("arguments.{field}"),
            approver: None,
        }
    }

    /// A call that ran because a person approved it, under this rule:
    /// the operator, or the person at the client.
    pub fn approved(rule: &str, approver: Approver) -> AuditDecision {
        AuditDecision {
            decision: "approved".into(),
            rule: rule.into(),
            approver: Some(approver.as_str().into()),
        }
    }

    /// A call of a tool the caller is not offered (its toolset is not
    /// enabled, or the server or token is read-only).
    pub fn not_offered() -> AuditDecision {
        AuditDecision {
            decision: "not-offered".into(),
            rule: "tools.toolsets".into(),
            approver: None,
        }
    }

    /// A call that needed a person's approval and was refused before
    /// anyone was asked: its dry run planned a request the gate refuses.
    pub fn plan_refused(rule: &str) -> AuditDecision {
        AuditDecision {
            decision: "plan-refused".into(),
            rule: rule.into(),
            approver: None,
        }
    }

    /// A call that needed a person's approval and did not run: still
    /// pending, declined, denied or expired.
    pub fn not_approved(rule: &str) -> AuditDecision {
        AuditDecision {
            decision: "not-approved".into(),
            rule: rule.into(),
            approver: None,
        }
    }
}

impl From<&crate::policy::Decision> for AuditDecision {
    fn from(decision: &crate::policy::Decision) -> Self {
        AuditDecision {
            decision: decision.kind().into(),
            rule: decision.rule().into(),
            approver: None,
        }
    }
}

/// The session and tool of the egress proxy's records.
const PROXY: &str = "egress-proxy";

/// An open audit log: a writer thread that owns the file.
pub struct AuditLog {
    sender: mpsc::Sender<Batch>,
    writer: Option<std::thread::JoinHandle<()>>,
    include_arguments: bool,
    record_output: bool,
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
        let sinks = Sinks {
            file,
            stderr: settings.stderr,
        };
        let (sender, writer) = chain::start_writer(sinks, head).map_err(|e| ConfigError {
            key: "audit".into(),
            problem: format!("cannot start the audit writer thread: {e}"),
            fix: "check the process's thread limit".into(),
        })?;
        Ok(Some(AuditLog {
            sender,
            writer: Some(writer),
            include_arguments: settings.include_arguments,
            record_output: settings.record_output,
            on_failure: settings.on_failure,
            redactor,
        }))
    }

    /// Writes the `server-start` record naming the component that runs,
    /// and waits until it is written. A failure is logged and the server
    /// goes on: each call still needs its own `call-start` record, so
    /// under `on_failure = "refuse"` nothing runs unrecorded while the log
    /// cannot be written.
    pub async fn server_start(&self, component: &ComponentIdentity) {
        let record = Record::ServerStart(ServerStartRecord {
            time: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
            version: env!("CARGO_PKG_VERSION"),
            component_sha256: component.sha256.clone(),
            component: self.redactor.redact(&component.source).into_owned(),
            contract: CONTRACT,
        });
        if let Err(error) = self.write(vec![record]).await {
            let then = match self.on_failure {
                OnFailure::Refuse => "every call is refused until its own record can be written",
                OnFailure::Continue => "calls run anyway ([audit] on_failure = \"continue\")",
            };
            tracing::error!("audit server-start record lost ({error}); {then}");
        }
    }

    /// Records one request the egress proxy decided: an `egress` record
    /// of its own (`tool` and `session` `egress-proxy`, `call_seq` 0: there
    /// is no call), written before the proxy answers. A failure is logged.
    pub async fn proxied(&self, id: &str, request: EgressRecord) {
        let head = CallHead {
            time: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
            call_id: id.to_owned(),
            session: PROXY.into(),
            client: None,
            token: None,
            tool: PROXY.into(),
            args_hash: String::new(),
            args: None,
            decision: String::new(),
            rule: String::new(),
            approver: None,
            via: None,
            pve_token: None,
            traceparent: None,
        };
        let records = egress_records(&head, &[request], &self.redactor, self.record_output);
        if let Err(error) = self.write(records).await {
            tracing::error!("audit record of a proxied request lost ({error})");
        }
    }

    /// Records a step in a task's life (its creation, a cancel, its end),
    /// redacted like a call's head. A failure is logged: the task's call
    /// has its own records, written ahead as always.
    pub async fn task_event(&self, mut event: TaskEventRecord) {
        let r = |s: &str| self.redactor.redact(s).into_owned();
        event.time = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
        event.session = r(&event.session);
        event.token = event.token.as_deref().map(r);
        event.message = event.message.as_deref().map(r);
        if let Err(error) = self.write(vec![Record::Task(event)]).await {
            tracing::error!("audit record of a task lost ({error})");
        }
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
            // A guest file's content as its size and SHA-256, as the
            // egress record and the approval show it.
            record::redact_arguments(
                &serde_json::Value::Object(crate::egress::guest_file::summarised(arguments)),
                &self.redactor,
            )
        });
        CallAudit {
            log: self,
            started: Instant::now(),
            refused: false,
            egress: EgressLog::default(),
            record: Some(CallRecord {
                head: CallHead {
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
                    approver: decision.approver.clone(),
                    via: caller.via.map(str::to_string),
                    pve_token: None,
                    traceparent: caller.trace.as_deref().map(str::to_string),
                },
                outcome: String::new(),
                ms: 0.0,
                result_bytes: 0,
                upstream: Vec::new(),
                task: None,
            }),
        }
    }

    /// Queues records for the writer thread and waits until they are
    /// written and flushed (or why not). Waiting on the oneshot keeps the
    /// async runtime free while the thread does the blocking write.
    async fn write(&self, records: Vec<Record>) -> Result<(), String> {
        let (ack, written) = tokio::sync::oneshot::channel();
        self.sender
            .send(Batch {
                records,
                ack: Some(ack),
            })
            .map_err(|_| "the audit writer has stopped".to_string())?;
        written
            .await
            .unwrap_or_else(|_| Err("the audit writer has stopped".to_string()))
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
/// client cancelled the call), the call is still recorded, as `cancelled`,
/// with the upstream requests it had sent by then.
pub struct CallAudit<'a> {
    log: &'a AuditLog,
    started: Instant,
    refused: bool,
    /// Where the sandbox records the call's requests as they happen, so a
    /// cancelled call's record can still list them.
    egress: EgressLog,
    record: Option<CallRecord>,
}

impl CallAudit<'_> {
    /// The log to hand to
    /// [`Sandbox::call_recording`](crate::sandbox::Sandbox::call_recording)
    /// for this call.
    pub fn egress_log(&self) -> EgressLog {
        self.egress.clone()
    }

    /// Records the call's requests in `log` instead (one its caller also
    /// watches: a task learns from it which Proxmox task the call waits for).
    pub fn record_into(&mut self, log: EgressLog) {
        self.egress = log;
    }

    /// Writes the call's `call-start` record and waits until it is written
    /// and flushed (fsynced too with `fsync = true`): the write-ahead record
    /// that must be on disk before the guest can send anything. If it
    /// cannot be and the log fails closed, the report that refuses the call
    /// before it runs; `None` means run it.
    /// Names the Proxmox token id the call's requests carry (never the
    /// secret) in its records.
    pub fn set_pve_token(&mut self, token_id: &str) {
        if let Some(call) = self.record.as_mut() {
            call.head.pve_token = Some(self.log.redactor.redact(token_id).into_owned());
        }
    }

    pub async fn start(&mut self, access: Access) -> Option<CallReport> {
        let call = self.record.as_ref()?;
        let start = Record::CallStart(CallStartRecord {
            head: call.head.clone(),
            access: access.name(),
        });
        let error = self.log.write(vec![start]).await.err()?;
        match self.log.on_failure {
            OnFailure::Refuse => {
                self.refused = true;
                Some(CallReport {
                    outcome: refused(&format!(
                        "its call-start audit record could not be written ({error})"
                    )),
                    egress: Vec::new(),
                })
            }
            OnFailure::Continue => {
                tracing::error!(
                    "audit call-start record lost ({error}); the call goes ahead because [audit] on_failure = \"continue\""
                );
                None
            }
        }
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
        if let CallOutcome::Output { structured, .. } = &report.outcome {
            call.task = record::TaskSeen::from_answer(structured);
        }
        let records = end_records(call, &report.egress, redactor, self.log.record_output);
        let result = self.log.write(records).await;
        if let Err(error) = result {
            match self.log.on_failure {
                // Already refused by its start record: that reason stands.
                OnFailure::Refuse if self.refused => {}
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
        // cancelled it. The requests it sent so far are in the shared
        // egress log (each is entered as it leaves). Sending to the writer
        // thread never blocks, and nobody waits for the ack.
        if let Some(mut call) = self.record.take() {
            call.outcome = "cancelled".into();
            call.ms = record::millis(self.started.elapsed());
            let egress = match self.egress.lock() {
                Ok(records) => records.clone(),
                // A hook panicked mid-push; the call is recorded anyway.
                Err(poisoned) => poisoned.into_inner().clone(),
            };
            let records = end_records(call, &egress, &self.log.redactor, self.log.record_output);
            let _ = self.log.sender.send(Batch { records, ack: None });
        }
    }
}

/// A call's end record followed by one record per egress decision, the
/// call's summary of them filled in.
fn end_records(
    mut call: CallRecord,
    egress: &[EgressRecord],
    redactor: &Redactor,
    record_output: bool,
) -> Vec<Record> {
    // The summary of refusals past the cap is no request: it gets its own
    // egress record (`egress.refused-more`) but no place in this list.
    call.upstream = egress
        .iter()
        .filter(|e| !matches!(e.denied, Some(Denial::RefusedMore(_))))
        .map(|e| record::upstream(e, redactor))
        .collect();
    let mut records = egress_records(&call.head, egress, redactor, record_output);
    records.insert(0, Record::Call(call));
    records
}

/// One `egress` record per request of a call with this head (the writer
/// fills in `call_seq` from the call record before them, if any): a
/// guarded read's answer with its text only when `record_output`.
fn egress_records(
    head: &CallHead,
    egress: &[EgressRecord],
    redactor: &Redactor,
    record_output: bool,
) -> Vec<Record> {
    egress
        .iter()
        .map(|e| {
            Record::Egress(EgressEntry {
                time: head.time.clone(),
                call_id: head.call_id.clone(),
                call_seq: 0,
                session: head.session.clone(),
                token: head.token.clone(),
                tool: head.tool.clone(),
                cluster: e.cluster.clone(),
                method: redactor.redact(&e.method).into_owned(),
                authority: redactor.redact(&e.authority).into_owned(),
                path: redactor.redact(&e.path).into_owned(),
                params: e
                    .params
                    .as_ref()
                    .map(|p| record::redact_arguments(p, redactor)),
                answer: e.answer.as_ref().map(|a| {
                    let shown = if record_output {
                        a.clone()
                    } else {
                        crate::egress::answer::without_text(a)
                    };
                    record::redact_arguments(&shown, redactor)
                }),
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
            })
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::path::Path;

    /// The record of `kind` for `tool`, found by content: the order of a
    /// log's lines is the chain's business, not these tests'.
    fn find<'a>(records: &'a [Value], kind: &str, tool: &str) -> &'a Value {
        records
            .iter()
            .find(|r| r["kind"] == kind && r["tool"] == tool)
            .unwrap_or_else(|| panic!("no {kind} record for {tool} in {records:#?}"))
    }

    fn records(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn open(path: &Path, on_failure: OnFailure) -> AuditLog {
        let settings = AuditSettings {
            path: Some(path.to_path_buf()),
            on_failure,
            ..AuditSettings::default()
        };
        AuditLog::open(&settings, Redactor::new([]))
            .unwrap()
            .unwrap()
    }

    fn ok() -> CallReport {
        CallReport {
            outcome: CallOutcome::Output {
                summary: "ok".into(),
                structured: serde_json::json!({}),
                is_error: false,
            },
            egress: Vec::new(),
        }
    }

    #[tokio::test]
    async fn the_start_record_is_on_disk_before_start_returns_and_its_end_names_the_same_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = open(&path, OnFailure::Refuse);
        let decision = AuditDecision::allowed("policy.default");
        let mut call = log.begin(
            "call-7",
            &Caller::stdio(),
            "t",
            &JsonObject::new(),
            &decision,
        );
        assert!(
            call.start(Access::Write).await.is_none(),
            "a good log runs the call"
        );
        // Written and flushed before the guest would start: readable now.
        let before = records(&path);
        assert_eq!(before.len(), 1, "{before:#?}");
        let start = find(&before, "call-start", "t");
        assert_eq!(start["call_id"], "call-7");
        assert_eq!(start["access"], "write");
        assert_eq!(start["decision"], "allow");
        assert_eq!(start["rule"], "policy.default");
        assert_eq!(start["seq"], 1);
        let report = call.finish(ok()).await;
        assert!(matches!(report.outcome, CallOutcome::Output { .. }));
        let after = records(&path);
        let end = find(&after, "call", "t");
        assert_eq!(end["call_id"], start["call_id"]);
        assert_eq!(end["outcome"], "ok");
        assert!(end["seq"].as_u64() > start["seq"].as_u64());
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn an_unwritable_start_record_refuses_the_call_before_it_runs() {
        // /dev/full opens, and fails every write with "no space left"; the
        // failing-log tests in chain.rs and the e2e suite use it too.
        let full = Path::new("/dev/full");
        let log = open(full, OnFailure::Refuse);
        let decision = AuditDecision::allowed("policy.default");
        let mut call = log.begin(
            "call-1",
            &Caller::stdio(),
            "t",
            &JsonObject::new(),
            &decision,
        );
        let refusal = call.start(Access::Write).await.expect("refused");
        let CallOutcome::Failed { kind, message } = &refusal.outcome else {
            panic!("{refusal:?}");
        };
        assert_eq!(*kind, FailureKind::Sandbox);
        assert!(message.contains("call-start audit record"), "{message}");
        assert!(message.contains("on_failure = \"refuse\""), "{message}");
        // The refusal is still offered to the log, and still refused.
        let report = call.finish(refusal).await;
        assert!(matches!(report.outcome, CallOutcome::Failed { .. }));

        // Told to continue, the call runs without its start record.
        let log = open(full, OnFailure::Continue);
        let mut call = log.begin(
            "call-2",
            &Caller::stdio(),
            "t",
            &JsonObject::new(),
            &decision,
        );
        assert!(call.start(Access::Read).await.is_none());
    }

    #[tokio::test]
    async fn a_dropped_call_is_recorded_as_cancelled_with_the_requests_it_sent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = open(&path, OnFailure::Refuse);
        let decision = AuditDecision::allowed("policy.default");
        let mut call = log.begin(
            "call-3",
            &Caller::stdio(),
            "t",
            &JsonObject::new(),
            &decision,
        );
        assert!(call.start(Access::Read).await.is_none());
        // As the egress hook enters a request when it leaves: no answer yet.
        call.egress_log().lock().unwrap().push(EgressRecord {
            cluster: Some("main".into()),
            method: "GET".into(),
            authority: "h:8006".into(),
            path: "/api2/json/cluster/resources".into(),
            params: None,
            answer: None,
            denied: None,
            status: None,
            failure: None,
            elapsed: std::time::Duration::ZERO,
        });
        drop(call);
        // Dropping the log waits for its writer, so the batch is written.
        drop(log);
        let r = records(&path);
        let end = find(&r, "call", "t");
        assert_eq!(end["outcome"], "cancelled");
        assert_eq!(end["call_id"], "call-3");
        assert_eq!(end["upstream"][0]["path"], "/api2/json/cluster/resources");
        assert_eq!(end["upstream"][0]["status"], Value::Null);
        assert_eq!(end["upstream"][0]["cluster"], "main");
        let egress = find(&r, "egress", "t");
        assert_eq!(egress["cluster"], "main");
        assert_eq!(egress["call_seq"], end["seq"]);
        assert_eq!(find(&r, "call-start", "t")["call_id"], "call-3");
    }
}
