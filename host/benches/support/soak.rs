//! The soak: many Streamable HTTP sessions, each making tool calls back to
//! back against `pve-mcp serve --http` with a policy and the audit log on,
//! every answer checked against its request. The `soak` bench runs it at
//! full size (64 sessions x 10,000 calls); the e2e test `soak_short` runs
//! a short version in CI. Both use this file, so they check the same way.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rmcp::model::{CallToolRequestParams, ClientConfig, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

/// The tool every soak call makes: one upstream GET when node and type are
/// given.
pub const TOOL: &str = "pve_get_vm_status";

/// Audit records per call of [`TOOL`] (and of the one `pve_list_vms`):
/// `call-start`, `call`, and one `egress` for its one upstream request.
pub const RECORDS_PER_CALL: u64 = 3;

/// Audit records a run of `calls` calls of [`TOOL`] leaves: the server's
/// `server-start`, then [`RECORDS_PER_CALL`] for each call and for the one
/// `pve_list_vms`.
pub fn expected_records(calls: u64) -> u64 {
    1 + RECORDS_PER_CALL * (calls + 1)
}

/// Guests in the soak's simulated cluster: enough that neighbouring calls
/// ask about different guests, so an answer given to the wrong request
/// shows.
pub const GUESTS: usize = 1000;

/// The policy and audit configuration the soak runs under: only the two
/// tools it calls, a condition and a per-session rate limit on the one it
/// loops on (so the policy's checks and counters are exercised on every
/// call, never refusing one), and the audit log at `audit`.
pub fn config(audit: &Path) -> String {
    format!(
        "[policy]\ndefault = \"deny\"\n\
         [policy.tools.pve_list_vms]\naction = \"allow\"\n\
         [policy.tools.pve_get_vm_status]\naction = \"allow\"\n\
         rate_limit = \"1000000/minute\"\n\
         conditions = [{{ arg = \"vmid\", op = \"gt\", value = 99 }}]\n\
         [audit]\npath = \"{}\"\n",
        audit.display()
    )
}

/// A guest a soak call asks about, and what the answer must say.
#[derive(Debug, Clone)]
pub struct Guest {
    pub vmid: u64,
    pub node: String,
    pub vm_type: String,
    pub name: String,
}

impl Guest {
    fn args(&self) -> JsonObject {
        json!({"vmid": self.vmid, "node": self.node, "vm_type": self.vm_type})
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    /// Why `answer` is not this guest's status, if it is not.
    fn mismatch(&self, answer: &Value) -> Option<String> {
        let same = answer["vmid"].as_u64() == Some(self.vmid)
            && answer["name"].as_str() == Some(&self.name)
            && answer["node"].as_str() == Some(&self.node)
            && answer["vm_type"].as_str() == Some(&self.vm_type);
        (!same).then(|| {
            format!(
                "asked for {} ({} on {}), got vmid {} name {} node {}",
                self.vmid, self.name, self.node, answer["vmid"], answer["name"], answer["node"]
            )
        })
    }
}

/// How big a soak is.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub sessions: usize,
    /// Calls per session.
    pub calls: usize,
    /// After this many calls in all, [`run`] calls its checkpoint hook
    /// (the bench reads the server's memory there).
    pub checkpoint: u64,
}

impl Plan {
    pub fn total(&self) -> u64 {
        (self.sessions * self.calls) as u64
    }
}

/// What a soak did.
#[derive(Debug)]
pub struct Outcome {
    /// Calls answered with the right guest.
    pub matched: u64,
    /// Calls that failed or were answered wrongly.
    pub failed: u64,
    /// The first few of those, described.
    pub failures: Vec<String>,
    /// Wall time of all sessions' calls.
    pub wall: Duration,
}

pub type Client = RunningService<RoleClient, ClientConfig>;

/// One MCP session over Streamable HTTP with the bearer token.
pub async fn connect(url: &str, bearer: &str) -> Result<Client> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(bearer),
    );
    Ok(ClientConfig::default().serve(transport).await?)
}

/// The guests on nodes that answer, from one `pve_list_vms` call (one of
/// the calls the audit log records).
pub async fn guests(client: &Client) -> Result<Vec<Guest>> {
    let args = json!({"limit": 1000})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let result = client
        .call_tool(CallToolRequestParams::new("pve_list_vms".to_string()).with_arguments(args))
        .await?;
    let list = result
        .structured_content
        .filter(|_| result.is_error != Some(true))
        .with_context(|| format!("pve_list_vms failed: {:?}", result.content))?;
    let guests: Vec<Guest> = list["vms"]
        .as_array()
        .context("pve_list_vms has no vms")?
        .iter()
        .filter(|g| g["status"] != "unknown")
        .filter_map(|g| {
            Some(Guest {
                vmid: g["vmid"].as_u64()?,
                node: g["node"].as_str()?.to_string(),
                vm_type: g["type"].as_str()?.to_string(),
                name: g["name"].as_str()?.to_string(),
            })
        })
        .collect();
    if guests.len() < 2 {
        bail!("only {} guests to ask about: {list}", guests.len());
    }
    Ok(guests)
}

/// Opens `plan.sessions` sessions and makes `plan.calls` calls in each,
/// all sessions at once, each call about a different guest than the one
/// before it; checks every answer. `checkpoint` runs once, when
/// `plan.checkpoint` calls have been answered.
pub async fn run(
    url: &str,
    bearer: &str,
    plan: Plan,
    guests: Arc<Vec<Guest>>,
    checkpoint: impl FnOnce() + Send + 'static,
) -> Result<Outcome> {
    let mut sessions = Vec::with_capacity(plan.sessions);
    for _ in 0..plan.sessions {
        sessions.push(connect(url, bearer).await?);
    }
    let done = Arc::new(AtomicU64::new(0));
    let checkpoint = Arc::new(std::sync::Mutex::new(Some(checkpoint)));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(plan.sessions);
    for (s, session) in sessions.into_iter().enumerate() {
        let guests = guests.clone();
        let done = done.clone();
        let checkpoint = checkpoint.clone();
        tasks.push(tokio::spawn(async move {
            let mut matched = 0u64;
            let mut failures = Vec::new();
            for i in 0..plan.calls {
                // A stride prime to the guest count: consecutive calls, and
                // the sessions' calls at one moment, ask about different
                // guests.
                let guest = &guests[(s * 7919 + i * 31) % guests.len()];
                let params =
                    CallToolRequestParams::new(TOOL.to_string()).with_arguments(guest.args());
                match session.call_tool(params).await {
                    Ok(r) if r.is_error == Some(true) => failures.push(format!(
                        "session {s} call {i}: {} failed: {:?}",
                        guest.vmid, r.content
                    )),
                    Ok(r) => match r.structured_content.as_ref().map(|a| guest.mismatch(a)) {
                        Some(None) => matched += 1,
                        Some(Some(why)) => failures.push(format!("session {s} call {i}: {why}")),
                        None => {
                            failures.push(format!("session {s} call {i}: no structured content"))
                        }
                    },
                    Err(e) => failures.push(format!("session {s} call {i}: {e}")),
                }
                if done.fetch_add(1, Ordering::Relaxed) + 1 == plan.checkpoint
                    && let Some(hook) = checkpoint.lock().ok().and_then(|mut h| h.take())
                {
                    hook();
                }
            }
            let _ = session.cancel().await;
            (matched, failures)
        }));
    }
    let mut outcome = Outcome {
        matched: 0,
        failed: 0,
        failures: Vec::new(),
        wall: Duration::ZERO,
    };
    for task in tasks {
        let (matched, failures) = task.await.context("a soak session panicked")?;
        outcome.matched += matched;
        outcome.failed += failures.len() as u64;
        outcome.failures.extend(
            failures
                .into_iter()
                .take(10 - outcome.failures.len().min(10)),
        );
    }
    outcome.wall = started.elapsed();
    Ok(outcome)
}

/// Runs `pve-mcp audit verify` on `log` and the files it was rotated
/// into (`LOG.<seq>`, oldest first); the record count it reports.
pub fn verify_audit(bin: &str, log: &Path) -> Result<u64> {
    let name = log
        .file_name()
        .and_then(|n| n.to_str())
        .context("the audit log has a file name")?;
    let dir = log.parent().context("the audit log is in a directory")?;
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(name))
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|seq| seq.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    // Zero-padded sequence numbers: the names sort in chain order.
    files.sort();
    files.push(log.to_path_buf());
    let out = std::process::Command::new(bin)
        .args(["audit", "verify"])
        .args(&files)
        .env_clear()
        .output()
        .context("running pve-mcp audit verify")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "audit verify failed ({}): {stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    stdout
        .strip_prefix("ok: ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("no record count in: {stdout}"))
}

/// `VmRSS` of a process, in MB (10^6 bytes).
pub fn rss_mb(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS in /proc/<pid>/status")?;
    Ok(kib * 1024.0 / 1e6)
}
