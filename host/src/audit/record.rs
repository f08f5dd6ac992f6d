//! What one audit record says, and how argument values are made safe to
//! record.

use serde::Serialize;
use serde_json::Value;

use crate::egress::{Denial, EgressRecord};
use crate::secret::{MASK, Redactor, holds_private_key, is_secret_name};

/// The body of one record; the chain puts `seq` and `prev` in front of it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Record {
    /// The server started: which component it runs, so every record after
    /// it can be tied to the exact code that produced it.
    ServerStart(ServerStartRecord),
    /// A call about to run, written (and flushed) before the guest starts:
    /// the write-ahead half of a call whose [`Record::Call`] comes at its
    /// end, with the same `call_id`.
    CallStart(CallStartRecord),
    /// One tool call, written when it ends.
    Call(CallRecord),
    /// One request the guest attempted during a call.
    Egress(EgressEntry),
    /// A step in the life of a task (MCP tasks extension): its creation,
    /// each cancel, its end.
    Task(TaskEventRecord),
}

/// A task's creation, a cancel of it, or its end, as recorded. The call
/// it runs has its own `call-start` and `call` records.
#[derive(Debug, Clone, Serialize)]
pub struct TaskEventRecord {
    /// When, RFC 3339 UTC.
    pub time: String,
    /// `created`, `cancel` or `end`.
    pub event: &'static str,
    /// The task's id.
    pub task_id: String,
    /// The MCP session of the request (`stdio` over stdio).
    pub session: String,
    /// The name of the bearer token, over HTTP with auth on.
    pub token: Option<String>,
    /// The tool the task runs.
    pub tool: String,
    /// The task's status after this step.
    pub status: String,
    /// The Proxmox task it waits for, once known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upid: Option<String>,
    /// Its status message after this step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A server start, as recorded.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStartRecord {
    /// When the server started, RFC 3339 UTC.
    pub time: String,
    /// The `pve-mcp` version.
    pub version: &'static str,
    /// Hex SHA-256 of the component that runs.
    pub component_sha256: String,
    /// `embedded`, or the file `--component` named.
    pub component: String,
    /// The WIT package the host implements.
    pub contract: &'static str,
}

/// What a call's start and end records both say: who called which tool
/// with what, and what the policy decided. Flattened into both, so the two
/// can always be matched field for field.
#[derive(Debug, Clone, Serialize)]
pub struct CallHead {
    /// When the call started, RFC 3339 UTC.
    pub time: String,
    /// The host's id for the call (also in its log lines).
    pub call_id: String,
    /// The MCP session (`stdio` over stdio).
    pub session: String,
    /// The client's name and version from its MCP `initialize`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The name of the bearer token, over HTTP with auth on.
    pub token: Option<String>,
    /// The tool.
    pub tool: String,
    /// `sha256:` of the arguments' canonical JSON.
    pub args_hash: String,
    /// The redacted arguments, only with `include_arguments`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// What the policy decided.
    pub decision: String,
    /// The rule that decided it.
    pub rule: String,
    /// Who approved it (`operator` or `client`), when a person did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// The tool the call came through, when it was not called by name
    /// (`pve_call_tool`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The Proxmox token id (or user) the call's requests carry: its
    /// granted tier's, from its caller's credential set. Never the secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pve_token: Option<String>,
    /// The W3C `traceparent` the request carried in `params._meta`, when
    /// it was a valid one (in its canonical version-00 form), so a record
    /// can be found from the caller's trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// A call about to run. It carries what is known before the guest starts,
/// so a call whose end record is lost (the disk failed, the process died)
/// is still on record as having been let through.
#[derive(Debug, Clone, Serialize)]
pub struct CallStartRecord {
    /// The same head as the call's end record.
    #[serde(flatten)]
    pub head: CallHead,
    /// `read` or `write`: the methods the egress gate lets the call send.
    pub access: &'static str,
}

/// One tool call, as recorded.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    /// Who called what, and the policy's decision.
    #[serde(flatten)]
    pub head: CallHead,
    /// `ok`, `tool-error`, a failure kind, `refused` or `cancelled`.
    pub outcome: String,
    /// Wall time of the call in milliseconds.
    pub ms: f64,
    /// Bytes of the result (its structured JSON, or the error text).
    pub result_bytes: usize,
    /// Every upstream request the guest attempted, in order.
    pub upstream: Vec<UpstreamRequest>,
    /// The Proxmox task a write started, as its answer reports it; absent
    /// when it started none. `upstream` holds what was actually sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSeen>,
}

/// A task a call started: its UPID and, when the call waited for it, how
/// it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskSeen {
    /// The task's UPID.
    pub upid: String,
    /// Proxmox's exit status (`OK`, `WARNINGS: n` or the error), when the
    /// call waited until the task ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exitstatus: Option<String>,
}

impl TaskSeen {
    /// The task in a write tool's structured answer (`task.upid`,
    /// `task.end.exitstatus`), if any. Only a string that looks like a
    /// UPID, of bounded size, is taken: the answer comes from the guest.
    pub fn from_answer(structured: &serde_json::Value) -> Option<TaskSeen> {
        let task = structured.get("task")?;
        let upid = task.get("upid")?.as_str()?;
        if !upid.starts_with("UPID:") || upid.len() > 512 {
            return None;
        }
        let exitstatus = task
            .get("end")
            .and_then(|e| e.get("exitstatus"))
            .and_then(serde_json::Value::as_str)
            .map(|s| s.chars().take(512).collect());
        Some(TaskSeen {
            upid: upid.to_owned(),
            exitstatus,
        })
    }
}

/// One upstream request, as summarised in its call's record.
#[derive(Debug, Clone, Serialize)]
pub struct UpstreamRequest {
    /// The configured cluster the request was for, when its authority is
    /// one of theirs.
    pub cluster: Option<String>,
    /// HTTP method.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// `allow` or `deny` (the egress gate's decision).
    pub decision: &'static str,
    /// The status Proxmox answered with, if it answered.
    pub status: Option<u16>,
    /// Milliseconds to the response head (or the failure).
    pub ms: f64,
}

/// One egress decision, a record of its own.
#[derive(Debug, Clone, Serialize)]
pub struct EgressEntry {
    /// When the call started, RFC 3339 UTC.
    pub time: String,
    /// The call it belongs to (the host's id).
    pub call_id: String,
    /// The `seq` of that call's record, filled in by the writer.
    pub call_seq: u64,
    /// The MCP session.
    pub session: String,
    /// The bearer token's name.
    pub token: Option<String>,
    /// The tool that made the request.
    pub tool: String,
    /// The configured cluster the request was for, when its authority is
    /// one of theirs.
    pub cluster: Option<String>,
    /// HTTP method.
    pub method: String,
    /// The authority the guest asked for.
    pub authority: String,
    /// Path without the query.
    pub path: String,
    /// A write's parameters as the gate read them: `values` (bounded,
    /// secrets masked), their `count` and the `sha256` of the whole list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
    /// A guarded read's answer as the gate read it: each field of its
    /// `data`, a string as its `bytes` and `sha256` (and its first 4 KiB
    /// as `text` under `[audit] record_output = true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<serde_json::Value>,
    /// `allow` or `deny`.
    pub decision: &'static str,
    /// The gate's rule: `egress.gate` when allowed, else which check refused.
    pub rule: &'static str,
    /// Why it was denied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The status Proxmox answered with.
    pub status: Option<u16>,
    /// Why no response came, if none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Milliseconds to the response head (or the failure).
    pub ms: f64,
}

/// Milliseconds with microsecond precision.
pub fn millis(d: std::time::Duration) -> f64 {
    (d.as_micros() as f64) / 1000.0
}

/// The rule name of an egress decision.
pub fn egress_rule(denied: Option<&Denial>) -> &'static str {
    match denied {
        None => "egress.gate",
        Some(Denial::Authority) => "egress.authority",
        Some(Denial::OtherCluster) => "egress.cluster",
        Some(Denial::Path(_)) => "egress.path",
        Some(Denial::Method) => "egress.method",
        Some(Denial::Route) => "egress.route",
        Some(Denial::Params(_)) => "egress.params",
        Some(Denial::Plan(_)) => "egress.plan",
        Some(Denial::GuardedRead(_)) => "egress.guarded",
        Some(Denial::Once) => "egress.once",
        Some(Denial::BodyOnGet) => "egress.body-on-get",
        Some(Denial::BodyTooLarge) => "egress.body-too-large",
        Some(Denial::TooManyRequests(_)) => "egress.too-many-requests",
        Some(Denial::RefusedMore(_)) => "egress.refused-more",
    }
}

/// The summary of one request for its call's record.
pub fn upstream(record: &EgressRecord, redactor: &Redactor) -> UpstreamRequest {
    UpstreamRequest {
        cluster: record.cluster.clone(),
        method: redactor.redact(&record.method).into_owned(),
        path: redactor.redact(&record.path).into_owned(),
        decision: if record.denied.is_some() {
            "deny"
        } else {
            "allow"
        },
        status: record.status,
        ms: millis(record.elapsed),
    }
}

/// The longest string value recorded whole: the audit log of a call with a
/// 1 MiB argument stays small, and the cut value keeps its SHA-256.
pub const MAX_RECORDED_VALUE: usize = 4 << 10;

/// The argument values fit to record: secret-looking keys and private keys
/// masked at every level, every known secret scrubbed from keys and
/// strings, and a string over [`MAX_RECORDED_VALUE`] bytes cut, with the
/// length and SHA-256 of the whole (as redacted) after it.
pub fn redact_arguments(value: &Value, redactor: &Redactor) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = redactor.redact(k).into_owned();
                    let value = if is_secret_name(k) {
                        Value::String(MASK.into())
                    } else {
                        redact_arguments(v, redactor)
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| redact_arguments(v, redactor))
                .collect(),
        ),
        Value::String(s) if holds_private_key(s) => Value::String(MASK.into()),
        Value::String(s) => Value::String(bounded(&redactor.redact(s))),
        other => other.clone(),
    }
}

/// `text` whole when short, else its first [`MAX_RECORDED_VALUE`] bytes (on
/// a character boundary) and what was cut: `…[cut: 1048576 bytes, sha256 …]`.
fn bounded(text: &str) -> String {
    if text.len() <= MAX_RECORDED_VALUE {
        return text.to_owned();
    }
    let mut cut = MAX_RECORDED_VALUE;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}…[cut: {} bytes, sha256 {hex}]", &text[..cut], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;
    use serde_json::json;
    use sha2::Digest;

    #[test]
    fn secret_keys_are_masked_at_every_level_and_known_secrets_scrubbed() {
        let redactor = Redactor::new([Secret::new("0b5a5c2e-6f7d")]);
        let args = json!({
            "vmid": 100,
            "Password": "hunter22",
            "nested": [{"api_token": "x", "note": "uses 0b5a5c2e-6f7d here"}],
            "ssh-keys": "ssh-ed25519 AAAA",
            "sshkeys": "ssh-ed25519 AAAA agent@host",
            "description": "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
        });
        let out = redact_arguments(&args, &redactor);
        assert_eq!(
            out,
            json!({
                "vmid": 100,
                "Password": MASK,
                "nested": [{"api_token": MASK, "note": "uses [REDACTED] here"}],
                // Issue 21 (F6): which public key was installed is shown;
                // a private key is masked wherever it is.
                "ssh-keys": "ssh-ed25519 AAAA",
                "sshkeys": "ssh-ed25519 AAAA agent@host",
                "description": MASK,
            })
        );
        assert!(!is_secret_name("vmid") && !is_secret_name("node"));
    }

    #[test]
    fn long_values_are_cut_with_the_hash_of_the_whole() {
        let redactor = Redactor::new([]);
        let huge = "é".repeat(1 << 19);
        let out = redact_arguments(&json!({"node": huge, "vmid": 100}), &redactor);
        let node = out["node"].as_str().unwrap();
        assert!(node.len() < MAX_RECORDED_VALUE + 120, "{}", node.len());
        let digest = sha2::Sha256::digest(huge.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert!(
            node.ends_with(&format!("…[cut: {} bytes, sha256 {hex}]", huge.len())),
            "{}",
            &node[node.len() - 120..]
        );
        assert_eq!(out["vmid"], 100);
        let short = "x".repeat(MAX_RECORDED_VALUE);
        assert_eq!(redact_arguments(&json!(short), &redactor), json!(short));
    }

    #[test]
    fn records_serialize_with_their_kind_first() {
        let entry = Record::Egress(EgressEntry {
            time: "t".into(),
            call_id: "call-1".into(),
            call_seq: 4,
            session: "stdio".into(),
            token: None,
            tool: "x".into(),
            cluster: None,
            method: "GET".into(),
            authority: "h:1".into(),
            path: "/p".into(),
            params: None,
            answer: None,
            decision: "deny",
            rule: egress_rule(Some(&Denial::Method)),
            reason: Some("method not allowed".into()),
            status: None,
            failure: None,
            ms: 0.25,
        });
        let text = serde_json::to_string(&entry).unwrap();
        assert!(text.starts_with(r#"{"kind":"egress","time":"t""#), "{text}");
        assert!(text.contains(r#""rule":"egress.method""#), "{text}");
        assert!(!text.contains("failure"), "{text}");
    }
}
