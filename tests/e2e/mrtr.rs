//! Approval inside the call for MCP 2026-07-28 clients (multi round-trip
//! requests): the real binary answers a call that needs the client's
//! approval with an `InputRequiredResult` (the approval form and a sealed
//! `requestState`), and the retry carrying the person's answer runs once.
//! Driven by the official Python SDK over stdio and Streamable HTTP, and
//! by raw JSON-RPC for what an SDK never sends: replays, altered
//! arguments, another token's retry, an expired state, and a retry that
//! lands on another replica. Also: the request's `traceparent` in the
//! call's audit record and log line.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pve_sim::Simulator;
use serde_json::{Value, json};

use crate::common::*;
use crate::http::{HttpServer, http_client, messages};
use crate::interop::has_python_sdk;
use crate::policy_harness::Redis;

const ADMIN_TOKEN: &str = "e2e-mrtr-admin-token-4c8e1f";
/// The second agent's bearer token (the first is [`crate::http::TOKEN`]).
const OTHER_TOKEN: &str = "9d2b7e41c0a35f68b1e4d7c2a9f05e3b";
/// A write whose approver is the client (the Python SDK's case).
const WRITE: &str = "pve_stop_vm";
/// A read whose approver is the client (the raw cases: its dry run plans
/// nothing, so a replay is judged on its state alone).
const READ: &str = "pve_get_vm_status";
/// A valid W3C traceparent.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The `[policy]` rules and `[approvals]` section every server here gets:
/// both tools need the client's approval.
fn approvals_config(dir: &Path, ttl_secs: u64, extra: &str) -> String {
    approvals_config_with(dir, ttl_secs, "", extra)
}

/// The same with `read_rule` lines added to the read tool's rule.
fn approvals_config_with(dir: &Path, ttl_secs: u64, read_rule: &str, extra: &str) -> String {
    format!(
        "[policy.tools.{WRITE}]\naction = \"require_approval\"\napprover = \"client\"\n\
         [policy.tools.{READ}]\naction = \"require_approval\"\napprover = \"client\"\n{read_rule}\n\
         [approvals]\nadmin_socket = \"{}\"\nttl_secs = {ttl_secs}\n{extra}",
        dir.join("admin.sock").display()
    )
}

/// How many times `pve_get_vm_status` really ran on the simulator.
fn reads(sim: &Simulator) -> usize {
    sim.requests()
        .iter()
        .filter(|r| r.path.ends_with("/status/current"))
        .count()
}

/// The stop requests the simulator received.
fn stops(sim: &Simulator) -> Vec<String> {
    sim.writes()
        .into_iter()
        .map(|r| r.path)
        .filter(|p| p.ends_with("/status/stop"))
        .collect()
}

/// Runs tests/interop/python_sdk_mrtr.py with `args` in `env` (only),
/// without blocking the runtime the simulator answers on: its stdout, and
/// its stderr (where a stdio server's log goes).
async fn python(args: &[&str], env: &[(String, String)]) -> (String, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/python_sdk_mrtr.py");
    let out = tokio::process::Command::new("python3")
        .arg(script)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PVE_MCP_CACHE_DIR", cache_dir())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .await
        .expect("running python3");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python_sdk_mrtr.py {args:?} failed:\n{stdout}\n{stderr}"
    );
    Secrets::fixed().check("the Python SDK's output", &stdout);
    Secrets::fixed().check("the server's log", &stderr);
    (stdout, stderr.into_owned())
}

/// The Python SDK at 2026-07-28 over stdio: the server is its child, on
/// the simulator's cluster. A declined form runs nothing; an approved one
/// runs the write exactly once.
#[tokio::test]
async fn python_sdk_approves_inside_the_call_over_stdio() {
    if !has_python_sdk() {
        return;
    }
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("pve-mcp.toml");
        std::fs::write(&config, approvals_config(dir.path(), 900, "")).unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, sim.ca_pem()).unwrap();
        let env: Vec<(String, String)> = [
            ("HOME", dir.path().to_str().unwrap()),
            ("PVE_BASE_URL", &sim.base_url()),
            ("PVE_API_TOKEN_ID", ADMIN_TOKEN_ID),
            ("PVE_API_TOKEN_SECRET", ADMIN_TOKEN_SECRET),
            ("PVE_CA_FILE", ca.to_str().unwrap()),
            ("PVE_MCP_ADMIN_TOKEN", ADMIN_TOKEN),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let config = config.to_str().unwrap();
        let (out, log) = python(&["stdio", BIN, config, "decline"], &env).await;
        assert!(out.contains("mrtr [stdio] decline"), "{out}");
        assert!(stops(&sim).is_empty(), "a declined call ran: {out}");
        // Asked inside the call: a 2026-07-28 client has no session for
        // an elicitation/create request.
        assert!(
            log.contains("outcome=\"input-required\" approver=\"client\""),
            "{log}"
        );
        let (out, log) = python(&["stdio", BIN, config, "approve"], &env).await;
        assert!(out.contains("mrtr [stdio] approve"), "{out}");
        assert!(
            log.contains("outcome=\"approved\" approver=\"client\""),
            "{log}"
        );
        assert_eq!(
            stops(&sim),
            ["/api2/json/nodes/pve1/qemu/100/status/stop"],
            "the approved write ran exactly once: {out}"
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// A `pve-mcp serve` over HTTP with the approvals config and `extra`
/// lines; two bearer tokens, `agent` ([`crate::http::TOKEN`]) and
/// `other` ([`OTHER_TOKEN`]).
async fn http_server(sim: &Simulator, dir: &Path, ttl_secs: u64, extra: &str) -> HttpServer {
    http_server_with(sim, dir, approvals_config(dir, ttl_secs, extra)).await
}

/// The same with this `[policy]`/`[approvals]` text.
async fn http_server_with(sim: &Simulator, dir: &Path, approvals: String) -> HttpServer {
    let config = dir.join("pve-mcp.toml");
    std::fs::write(
        &config,
        format!(
            "[http]\nlisten = \"127.0.0.1:0\"\nallowed_hosts = [\"127.0.0.1\"]\n\
             [http.tokens]\nagent = \"{}\"\nother = \"{OTHER_TOKEN}\"\n{}",
            crate::http::TOKEN,
            approvals
        ),
    )
    .unwrap();
    let opts = Opts::default()
        .arg("--config")
        .arg(config.to_str().unwrap())
        .env("PVE_MCP_ADMIN_TOKEN", ADMIN_TOKEN);
    HttpServer::spawn(sim, opts, &["serve"], http_client()).await
}

/// The Python SDK at 2026-07-28 over Streamable HTTP (no session): a
/// declined form runs nothing; an approved one runs the write once.
#[tokio::test]
async fn python_sdk_approves_inside_the_call_over_http() {
    if !has_python_sdk() {
        return;
    }
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let server = http_server(&sim, dir.path(), 900, "").await;
        let token = crate::http::TOKEN;
        let (out, _) = python(&["http", &server.url, token, "decline"], &[]).await;
        assert!(out.contains("mrtr [http] decline"), "{out}");
        assert!(stops(&sim).is_empty(), "a declined call ran: {out}");
        let (out, _) = python(&["http", &server.url, token, "approve"], &[]).await;
        assert!(out.contains("mrtr [http] approve"), "{out}");
        assert_eq!(
            stops(&sim),
            ["/api2/json/nodes/pve1/qemu/100/status/stop"],
            "the approved write ran exactly once: {out}"
        );
        // Both rounds of each call are in the log; the approved retry as
        // approved by the client.
        server
            .expect_log("outcome=\"input-required\" approver=\"client\"")
            .await;
        server
            .expect_log("outcome=\"approved\" approver=\"client\"")
            .await;
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// A raw 2026-07-28 client: stateless `tools/call`s with the version,
/// client info and capabilities (form elicitation) in `_meta`.
struct Raw<'a> {
    http: reqwest::Client,
    url: &'a str,
    token: &'a str,
}

/// What the first round answered: the form's question and the state.
struct Asked {
    question: String,
    state: String,
}

impl Raw<'_> {
    fn new<'a>(url: &'a str, token: &'a str) -> Raw<'a> {
        Raw {
            http: http_client(),
            url,
            token,
        }
    }

    /// One `tools/call`; `extra` is merged into its params (`requestState`,
    /// `inputResponses`), `meta` into its `_meta`. The JSON-RPC result.
    async fn call(&self, tool: &str, arguments: Value, extra: Value, meta: Value) -> Value {
        let mut params = json!({
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "e2e-mrtr", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
            }
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            params[k] = v.clone();
        }
        for (k, v) in meta.as_object().into_iter().flatten() {
            params["_meta"][k] = v.clone();
        }
        let message = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
        let response = self
            .http
            .post(self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .bearer_auth(self.token)
            .body(message.to_string())
            .send()
            .await
            .expect("a response");
        assert_eq!(response.status(), 200, "{tool}");
        let all = messages(response).await;
        all.iter()
            .find_map(|m| m.get("result").cloned())
            .unwrap_or_else(|| panic!("no result: {all:?}"))
    }

    /// The first round: an InputRequiredResult with the approval form.
    async fn ask(&self, tool: &str, arguments: Value) -> Asked {
        let result = self.call(tool, arguments, json!({}), json!({})).await;
        assert_eq!(result["resultType"], "input_required", "{result}");
        let form = &result["inputRequests"]["approval"];
        assert_eq!(form["method"], "elicitation/create", "{result}");
        assert_eq!(
            form["params"]["requestedSchema"]["required"],
            json!(["approve"]),
            "{result}"
        );
        Asked {
            question: form["params"]["message"].as_str().unwrap().to_string(),
            state: result["requestState"].as_str().unwrap().to_string(),
        }
    }

    /// The retry with the person's `answer` (an ElicitResult) and `state`.
    async fn retry(&self, tool: &str, arguments: Value, state: &str, answer: Value) -> Value {
        self.retry_traced(tool, arguments, state, answer, json!({}))
            .await
    }

    async fn retry_traced(
        &self,
        tool: &str,
        arguments: Value,
        state: &str,
        answer: Value,
        meta: Value,
    ) -> Value {
        let extra = json!({"requestState": state, "inputResponses": {"approval": answer}});
        self.call(tool, arguments, extra, meta).await
    }
}

fn approve() -> Value {
    json!({"action": "accept", "content": {"approve": true}})
}

/// The text of a tool error.
fn refusal(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected a tool error: {result}");
    result["content"][0]["text"].as_str().unwrap().to_string()
}

fn vm(vmid: u64) -> Value {
    json!({"vmid": vmid, "node": "pve1", "vm_type": "qemu"})
}

/// Raw JSON-RPC over HTTP: the approved retry runs once (audited as the
/// client's approval, with the retry's traceparent); a replay, altered
/// arguments, another token's retry, a declined form and a changed state
/// are each refused saying which, and nothing runs.
#[tokio::test]
async fn a_retry_runs_once_and_every_other_retry_is_refused_saying_why() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let extra = format!("[audit]\npath = \"{}\"\n", audit.display());
        let server = http_server(&sim, dir.path(), 900, &extra).await;
        let agent = Raw::new(&server.url, crate::http::TOKEN);
        let other = Raw::new(&server.url, OTHER_TOKEN);

        let asked = agent.ask(READ, vm(100)).await;
        assert!(
            asked
                .question
                .starts_with(&format!("Approve a call to {READ}?")),
            "{}",
            asked.question
        );
        assert!(
            asked.question.contains("\"vmid\":100"),
            "{}",
            asked.question
        );
        assert!(
            asked.question.contains("Requested by: token:agent"),
            "{}",
            asked.question
        );
        assert_eq!(reads(&sim), 0, "nothing runs before the answer");

        // Another token cannot use it, and that does not use it up.
        let text = refusal(&other.retry(READ, vm(100), &asked.state, approve()).await);
        assert!(text.contains("issued to another caller"), "{text}");
        assert!(text.contains("nothing was sent"), "{text}");
        // Nor can the same token for other arguments.
        let text = refusal(&agent.retry(READ, vm(101), &asked.state, approve()).await);
        assert!(
            text.contains("not the call the person was asked about"),
            "{text}"
        );
        // A state changed by the client is not the server's.
        let mut changed = asked.state.clone();
        let middle = changed.len() / 2;
        let flip = if &changed[middle..=middle] == "A" {
            "B"
        } else {
            "A"
        };
        changed.replace_range(middle..=middle, flip);
        let text = refusal(&agent.retry(READ, vm(100), &changed, approve()).await);
        assert!(text.contains("not issued by this server"), "{text}");
        assert_eq!(reads(&sim), 0);

        let meta = json!({"traceparent": TRACEPARENT});
        let ran = agent
            .retry_traced(READ, vm(100), &asked.state, approve(), meta)
            .await;
        assert_eq!(ran["isError"], false, "{ran}");
        assert_eq!(ran["structuredContent"]["vmid"], 100, "{ran}");
        assert_eq!(reads(&sim), 1, "the approved retry ran once");

        // The same retry again is a replay.
        let text = refusal(&agent.retry(READ, vm(100), &asked.state, approve()).await);
        assert!(text.contains("already used"), "{text}");
        assert!(text.contains("nothing was sent"), "{text}");
        assert_eq!(reads(&sim), 1, "a replay runs nothing");

        // A person who declines or answers no: not approved.
        let asked = agent.ask(READ, vm(101)).await;
        let declined = json!({"action": "decline"});
        let text = refusal(&agent.retry(READ, vm(101), &asked.state, declined).await);
        assert!(
            text.starts_with("Not approved: the person declined"),
            "{text}"
        );
        let no = json!({"action": "accept", "content": {"approve": false}});
        let text = refusal(&agent.retry(READ, vm(101), &asked.state, no).await);
        assert!(
            text.starts_with("Not approved: the person answered no"),
            "{text}"
        );
        assert_eq!(reads(&sim), 1);

        // The audit: one call ran, approved by the client, with the
        // retry's traceparent; the refused retries are on record too.
        let records = audit_records(&audit);
        let ran: Vec<&Value> = records
            .iter()
            .filter(|r| r["kind"] == "call" && r["outcome"] == "ok")
            .collect();
        assert_eq!(ran.len(), 1, "{records:#?}");
        assert_eq!(ran[0]["decision"], "approved", "{}", ran[0]);
        assert_eq!(ran[0]["approver"], "client", "{}", ran[0]);
        assert_eq!(ran[0]["traceparent"], TRACEPARENT, "{}", ran[0]);
        let refused = records
            .iter()
            .filter(|r| r["kind"] == "call" && r["decision"] == "not-approved")
            .count();
        assert_eq!(refused, 6, "{records:#?}");
        server
            .expect_log(&format!("traceparent=\"{TRACEPARENT}\""))
            .await;
        let verify = Command::new(BIN)
            .args(["audit", "verify"])
            .arg(&audit)
            .output()
            .unwrap();
        assert!(verify.status.success(), "{verify:?}");
    })
    .await;
}

/// An expired state is refused (ttl_secs = 1), and a traceparent that is
/// not a valid one is not recorded.
#[tokio::test]
async fn an_expired_state_is_refused_and_a_bad_traceparent_is_not_recorded() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let extra = format!("[audit]\npath = \"{}\"\n", audit.display());
        let server = http_server(&sim, dir.path(), 1, &extra).await;
        let agent = Raw::new(&server.url, crate::http::TOKEN);
        let asked = agent.ask(READ, vm(100)).await;
        // Past its one second, whatever the machine's load.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let text = refusal(&agent.retry(READ, vm(100), &asked.state, approve()).await);
        assert!(text.contains("expired"), "{text}");
        assert!(text.contains("nothing was sent"), "{text}");
        assert_eq!(reads(&sim), 0);

        let asked = agent.ask(READ, vm(100)).await;
        let junk = json!({"traceparent": "00-not-a-trace\n{\"forged\":true}"});
        let ran = agent
            .retry_traced(READ, vm(100), &asked.state, approve(), junk)
            .await;
        assert_eq!(ran["isError"], false, "{ran}");
        let records = audit_records(&audit);
        let call = records
            .iter()
            .find(|r| r["kind"] == "call" && r["outcome"] == "ok")
            .expect("the call's record");
        assert!(call.get("traceparent").is_none(), "{call}");
        assert!(!server.log().contains("forged"), "{}", server.log());
    })
    .await;
}

/// Two replicas sharing a `state_key_file` and Redis: the question comes
/// from replica A, the retry to B runs, and the same retry replayed on A is
/// refused.
#[tokio::test]
async fn a_retry_runs_on_another_replica_once() {
    if !Redis::available() {
        return;
    }
    within(async {
        let sim = simulator().await;
        let redis = Redis::start().await;
        let shared = tempfile::tempdir().unwrap();
        let key: PathBuf = shared.path().join("state.key");
        std::fs::write(&key, format!("{}\n", "5e".repeat(32))).unwrap();
        let extra = format!(
            "state_key_file = \"{}\"\n[policy]\nstate = \"{}\"\n",
            key.display(),
            redis.url()
        );
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (a, b) = tokio::join!(
            http_server(&sim, dir_a.path(), 900, &extra),
            http_server(&sim, dir_b.path(), 900, &extra)
        );
        let on_a = Raw::new(&a.url, crate::http::TOKEN);
        let on_b = Raw::new(&b.url, crate::http::TOKEN);
        let asked = on_a.ask(READ, vm(100)).await;
        let ran = on_b.retry(READ, vm(100), &asked.state, approve()).await;
        assert_eq!(ran["isError"], false, "{ran}\n{}", b.log());
        assert_eq!(reads(&sim), 1);
        let text = refusal(&on_a.retry(READ, vm(100), &asked.state, approve()).await);
        assert!(text.contains("already used"), "{text}");
        assert_eq!(reads(&sim), 1, "the replay on A ran nothing");
    })
    .await;
}

/// The first round gives its rate-limit unit back (the retry is the call
/// that counts): with `rate_limit = "1/hour"` the approved retry runs, and
/// only then is the hour's unit spent.
#[tokio::test]
async fn the_question_costs_no_rate_limit_unit_and_the_retry_does() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = approvals_config_with(dir.path(), 900, "rate_limit = \"1/hour\"", "");
        let server = http_server_with(&sim, dir.path(), config).await;
        let agent = Raw::new(&server.url, crate::http::TOKEN);
        let asked = agent.ask(READ, vm(100)).await;
        let again = agent.ask(READ, vm(100)).await;
        assert_ne!(asked.state, again.state, "each question has its own state");
        let ran = agent.retry(READ, vm(100), &asked.state, approve()).await;
        assert_eq!(ran["isError"], false, "{ran}");
        assert_eq!(reads(&sim), 1);
        let text = refusal(&agent.call(READ, vm(100), json!({}), json!({})).await);
        assert!(text.starts_with("Rate limit reached"), "{text}");
    })
    .await;
}
