//! MCP over stdio on the wire: version negotiation, an early
//! `server/discover`, ping, and a stdout that carries nothing but MCP.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::*;

/// A `pve-mcp serve` driven by hand, one JSON-RPC line at a time.
pub struct Raw {
    pub child: tokio::process::Child,
    pub stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    _dir: Option<tempfile::TempDir>,
    /// How long [`Raw::receive`] waits for a line.
    patience: Duration,
}

impl Raw {
    /// A server with the default options in a directory of its own.
    pub async fn start(sim: &pve_sim::Simulator) -> Raw {
        let dir = tempfile::tempdir().unwrap();
        let mut raw = Raw::spawn(sim, &Opts::default(), dir.path(), &["-vv", "serve"]);
        raw._dir = Some(dir);
        raw
    }

    /// A server with `opts`, working in `dir`, that may take up to
    /// `patience` to say each thing (a task that waits, say).
    pub fn with(sim: &pve_sim::Simulator, opts: &Opts, dir: &Path, patience: Duration) -> Raw {
        let mut raw = Raw::spawn(sim, opts, dir, &["serve"]);
        raw.patience = patience;
        raw
    }

    fn spawn(sim: &pve_sim::Simulator, opts: &Opts, dir: &Path, args: &[&str]) -> Raw {
        let mut cmd = command(sim, opts, dir, args);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Raw {
            child,
            stdin,
            stdout,
            _dir: None,
            patience: Duration::from_secs(5),
        }
    }

    pub async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next line on stdout, which must be a JSON-RPC 2.0 message.
    pub async fn receive(&mut self) -> Value {
        let line = tokio::time::timeout(self.patience, self.stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("pve-mcp did not answer within {:?}", self.patience))
            .unwrap()
            .expect("stdout closed");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// Sends a request; its answer, which must come next.
    pub async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let reply = self.receive().await;
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    /// Sends a request and returns its answer; the notifications that
    /// come first are kept in `seen`.
    pub async fn request_seeing(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        seen: &mut Vec<Value>,
    ) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.receive().await;
            if message["id"] == id {
                return message;
            }
            seen.push(message);
        }
    }
}

fn initialize(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "1"}})
}

#[tokio::test]
async fn negotiates_2025_versions_and_answers_ping_and_tools() {
    within(async {
        let sim = simulator().await;
        for version in ["2025-06-18", "2025-11-25", "2025-03-26"] {
            let mut raw = Raw::start(&sim).await;
            let init = raw.request(1, "initialize", initialize(version)).await;
            assert_eq!(init["result"]["protocolVersion"], version, "{init}");
            assert_eq!(init["result"]["serverInfo"]["name"], "pve-mcp");
            assert!(
                init["result"]["capabilities"]["tools"].is_object(),
                "{init}"
            );
            raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
            let pong = raw.request(2, "ping", json!({})).await;
            assert_eq!(pong["result"], json!({}), "{pong}");
            let tools = raw.request(3, "tools/list", json!({})).await;
            assert_eq!(
                tools["result"]["tools"].as_array().unwrap().len(),
                catalog().len(),
                "{tools}"
            );
            let call = raw
                .request(
                    4,
                    "tools/call",
                    json!({"name": "pve_get_vm_status", "arguments": {"vmid": 100}}),
                )
                .await;
            assert_eq!(call["result"]["isError"], false, "{call}");
            assert_eq!(call["result"]["structuredContent"]["vmid"], 100, "{call}");
            let unknown = raw
                .request(5, "tools/call", json!({"name": "nope", "arguments": {}}))
                .await;
            assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
            drop(raw.stdin);
            let status = tokio::time::timeout(Duration::from_secs(5), raw.child.wait())
                .await
                .unwrap()
                .unwrap();
            assert!(
                status.success(),
                "pve-mcp exits cleanly when stdin closes: {status}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn unsupported_version_gets_the_latest_supported_one() {
    within(async {
        let sim = simulator().await;
        let mut raw = Raw::start(&sim).await;
        let init = raw.request(1, "initialize", initialize("2024-01-01")).await;
        let offered = init["result"]["protocolVersion"]
            .as_str()
            .unwrap_or_default();
        assert!(offered.starts_with("2025-"), "{init}");
    })
    .await;
}

#[tokio::test]
async fn early_server_discover_is_answered_at_once() {
    within(async {
        let sim = simulator().await;
        let mut raw = Raw::start(&sim).await;
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let started = std::time::Instant::now();
        let reply = raw
            .request(1, "server/discover", json!({"_meta": meta}))
            .await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "a 2026 client would stall: {:?}",
            started.elapsed()
        );
        // Either a discovery result (rmcp speaks 2026-07-28) or an error the
        // client falls back on is fine; silence is not.
        assert!(
            reply.get("result").is_some() || reply.get("error").is_some(),
            "{reply}"
        );
        if let Some(result) = reply.get("result") {
            let versions = result["supportedVersions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(versions.iter().any(|v| v == "2025-11-25"), "{reply}");
        }
        // A legacy client on the same connection can still initialize.
        let init = raw.request(2, "initialize", initialize("2025-11-25")).await;
        assert!(
            init.get("result").is_some() || init.get("error").is_some(),
            "{init}"
        );
    })
    .await;
}

#[tokio::test]
async fn cancelling_a_call_drops_its_upstream_request() {
    within(async {
        let sim = simulator().await;
        sim.add_fault(pve_sim::Fault {
            path_prefix: "/cluster/resources".into(),
            status: 0,
            reason: String::new(),
            times: Some(1),
            delay: Some(Duration::from_secs(3)),
            ..Default::default()
        });
        let mut raw = Raw::start(&sim).await;
        raw.request(1, "initialize", initialize("2025-11-25")).await;
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "pve_list_vms", "arguments": {}}}))
            .await;
        // Wait until the guest's request is being held by the simulator.
        wait_for_request(&sim).await;
        raw.send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 2, "reason": "user gave up"}}),
        )
        .await;
        // The server keeps answering while the upstream request is held.
        let pong = raw.request(3, "ping", json!({})).await;
        assert_eq!(pong["result"], json!({}), "{pong}");
        // Past the injected delay, the simulator saw the client leave
        // before it could answer: the upstream request was dropped, not
        // left to run to the end of its 30 s timeout. A dropped request
        // shows only as one that never completes, so outwaiting the delay
        // is the observation itself.
        tokio::time::sleep(Duration::from_millis(3500)).await;
        let requests = sim.requests();
        assert_eq!(requests.len(), 1, "{requests:?}");
        assert!(
            !requests[0].completed,
            "the upstream request ran to completion: {requests:?}"
        );
        // And the next call works normally.
        let call = raw
            .request(
                4,
                "tools/call",
                json!({"name": "pve_list_vms", "arguments": {}}),
            )
            .await;
        assert_eq!(call["result"]["structuredContent"]["total"], 13, "{call}");
    })
    .await;
}

/// The `_meta` a 2026-07-28 request carries, declaring `capabilities`.
fn meta_2026(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities
    })
}

/// Issue 26: what `initialize` and `server/discover` advertise is exactly
/// what is served. Each capability's methods answer (not -32601), the
/// ones not advertised (resource subscriptions) are not found, and the two
/// revisions see the same capabilities.
#[tokio::test]
async fn capabilities_are_exactly_what_is_served() {
    within(async {
        let sim = simulator().await;
        let mut raw = Raw::start(&sim).await;
        let init = raw.request(1, "initialize", initialize("2025-11-25")).await;
        let advertised = init["result"]["capabilities"].clone();
        let mut keys: Vec<&str> = advertised
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "completions",
                "extensions",
                "logging",
                "prompts",
                "resources",
                "tools"
            ],
            "{advertised}"
        );
        assert_eq!(advertised["tools"]["listChanged"], true, "{advertised}");
        assert_ne!(
            advertised["resources"]["subscribe"], true,
            "no subscriptions are served: {advertised}"
        );
        let extensions: Vec<&String> = advertised["extensions"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(
            extensions,
            ["io.modelcontextprotocol/tasks"],
            "{advertised}"
        );
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;

        let served = [
            ("tools/list", json!({})),
            ("logging/setLevel", json!({"level": "info"})),
            ("resources/list", json!({})),
            ("resources/templates/list", json!({})),
            ("prompts/list", json!({})),
            (
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "diagnose_guest"},
                    "argument": {"name": "vmid", "value": "1"}}),
            ),
        ];
        for (id, (method, params)) in (10..).zip(served) {
            let reply = raw.request(id, method, params).await;
            assert!(reply.get("result").is_some(), "{method}: {reply}");
        }
        let reply = raw
            .request(
                30,
                "resources/subscribe",
                json!({"uri": "pve://pve/resources"}),
            )
            .await;
        assert_eq!(reply["error"]["code"], -32601, "{reply}");
        // The tasks extension answers for a client that declares it: an
        // unknown task is a parameter error, not a missing method.
        let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        let reply = raw
            .request(
                31,
                "tasks/get",
                json!({"taskId": "no-such-task", "_meta": meta_2026(tasks)}),
            )
            .await;
        assert_ne!(reply["error"]["code"], -32601, "{reply}");
        assert!(reply.get("error").is_some(), "{reply}");

        // A 2026-07-28 client discovers the same capabilities.
        let mut raw = Raw::start(&sim).await;
        let discovered = raw
            .request(1, "server/discover", json!({"_meta": meta_2026(json!({}))}))
            .await;
        let versions = discovered["result"]["supportedVersions"].clone();
        assert!(
            versions
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v == "2026-07-28"),
            "{discovered}"
        );
        let mut theirs = discovered["result"]["capabilities"].clone();
        let mut ours = advertised.clone();
        // Logging is a 2025 method (2026-07-28 moved it into `_meta`).
        for caps in [&mut theirs, &mut ours] {
            caps.as_object_mut().unwrap().remove("logging");
        }
        assert_eq!(theirs, ours, "{discovered}");
    })
    .await;
}
