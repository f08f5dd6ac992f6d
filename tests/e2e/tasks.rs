//! Long calls as tasks (the MCP tasks extension,
//! `io.modelcontextprotocol/tasks`) through the real binary, raw JSON-RPC
//! (the Python SDK 2.3 only has the older tasks): a waiting call from a
//! client that declares the extension is answered with a task handle and
//! polled with `tasks/get` to the tool's result; a task belongs to its
//! token; a cancel stops the Proxmox task when the call was granted write
//! access and only stops waiting otherwise; two replicas sharing Redis
//! answer for each other's tasks; a stdio client, and an HTTP session on
//! its GET stream, are sent `notifications/tasks`; a client without the extension waits as before;
//! and the audit log records each task's creation, cancel and end.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;
use crate::http::{HttpServer, http_client, messages};
use crate::policy_harness::Redis;
use crate::protocol::Raw;

const ALICE: &str = "a11ce-task-a11ce-task-a11ce-task";
const BOB: &str = "b0b-task-b0b-task-b0b-task-b0b-t";
const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// Long enough that a task on it is still running whatever the machine's
/// speed; it only ends when stopped.
const LONG: Duration = Duration::from_secs(600);
/// Short enough to wait for.
const SHORT: Duration = Duration::from_secs(2);

/// `pve-mcp serve --http` with tokens alice and bob, an audit log, the
/// policy's `state` (memory or a Redis URL), and the start, wait and
/// stop tools allowed.
struct Replica {
    server: HttpServer,
    audit: PathBuf,
    _dir: tempfile::TempDir,
}

impl Replica {
    async fn start(sim: &pve_sim::Simulator, state: &str) -> Replica {
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let config = dir.path().join("pve-mcp.toml");
        std::fs::write(
            &config,
            format!(
                "[http]\nlisten = \"127.0.0.1:0\"\n[http.tokens]\nalice = \"{ALICE}\"\nbob = \"{BOB}\"\n\n\
                 [audit]\npath = \"{}\"\n",
                audit.display()
            ),
        )
        .unwrap();
        let policy = dir.path().join("policy.toml");
        std::fs::write(
            &policy,
            format!(
                "[policy]\nstate = \"{state}\"\n\
                 [policy.tools.pve_start_vm]\naction = \"allow\"\n\
                 [policy.tools.pve_backup_vm]\naction = \"allow\"\n\
                 [policy.tools.pve_stop_task]\naction = \"allow\"\n"
            ),
        )
        .unwrap();
        let opts = Opts::default()
            .arg("--config")
            .arg(config.to_str().unwrap())
            .arg("--policy")
            .arg(policy.to_str().unwrap());
        let server = HttpServer::spawn(sim, opts, &["serve"], http_client()).await;
        Replica {
            server,
            audit,
            _dir: dir,
        }
    }

    /// A 2026-07-28 client of this replica with `token`.
    fn client<'a>(&'a self, token: &'a str, tasks: bool) -> Modern<'a> {
        Modern {
            server: &self.server,
            token,
            tasks,
        }
    }

    /// The audit records of task `id`'s steps: (event, status).
    fn task_events(&self, id: &str) -> Vec<(String, String)> {
        audit_records(&self.audit)
            .iter()
            .filter(|r| r["kind"] == "task" && r["task_id"] == id)
            .map(|r| {
                (
                    r["event"].as_str().unwrap().to_owned(),
                    r["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

/// Raw JSON-RPC without a session, as a 2026-07-28 client sends it,
/// declaring the tasks extension or not.
struct Modern<'a> {
    server: &'a HttpServer,
    token: &'a str,
    tasks: bool,
}

impl Modern<'_> {
    async fn request(&self, method: &str, mut params: Value) -> Value {
        let capabilities = if self.tasks {
            json!({"extensions": {EXTENSION: {}}})
        } else {
            json!({})
        };
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "e2e-tasks", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities
        });
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut post = self
            .server
            .post_as(Some(self.token), &message)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
            post = post.header("mcp-name", name);
        }
        let r = post.send().await.expect("the server answers");
        if r.status() != 200 {
            // A JSON-RPC error the transport answers itself (400).
            let status = r.status();
            let body = r.text().await.unwrap_or_default();
            return match serde_json::from_str::<Value>(&body) {
                Ok(error) if status == 400 && error["error"].is_object() => error,
                _ => panic!("{method}: {status} {body}\n{}", self.server.log()),
            };
        }
        messages(r).await.pop().expect("a JSON-RPC answer")
    }

    async fn call(&self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await
    }

    /// Calls `tool` and expects a task handle: its id.
    async fn start(&self, tool: &str, arguments: Value) -> String {
        let handle = self.call(tool, arguments).await;
        let result = &handle["result"];
        assert_eq!(result["resultType"], "task", "{handle}");
        assert_eq!(result["status"], "working", "{handle}");
        assert_eq!(result["pollIntervalMs"], 1000, "{handle}");
        assert!(result["ttlMs"].as_u64().unwrap() >= 3_600_000, "{handle}");
        let id = result["taskId"].as_str().unwrap().to_owned();
        assert!(id.len() >= 32, "an unguessable id: {id}");
        id
    }

    async fn get(&self, id: &str) -> Value {
        self.request("tasks/get", json!({"taskId": id})).await
    }

    async fn cancel(&self, id: &str) -> Value {
        self.request("tasks/cancel", json!({"taskId": id})).await
    }

    /// Polls task `id` until it is no longer working: its last state.
    async fn until_ended(&self, id: &str) -> Value {
        wait_until(
            Lazy(|| {
                format!(
                    "task {id} to end; the server logged:\n{}",
                    self.server.log()
                )
            }),
            Duration::from_secs(60),
            async || {
                let got = self.get(id).await;
                let result = &got["result"];
                assert!(result.is_object(), "{got}");
                (result["status"] != "working").then(|| result.clone())
            },
        )
        .await
    }

    /// Polls task `id` until the host knows the Proxmox task it waits
    /// for: its UPID.
    async fn until_upid(&self, id: &str) -> String {
        wait_until(
            Lazy(|| {
                format!(
                    "task {id}'s UPID; the server logged:\n{}",
                    self.server.log()
                )
            }),
            Duration::from_secs(60),
            async || {
                let got = self.get(id).await;
                assert_eq!(got["result"]["status"], "working", "{got}");
                let meta = &got["result"]["_meta"];
                let upid = meta["pve-mcp/upid"].as_str()?;
                // The node is the UPID's: a task lives where it ran.
                assert_eq!(
                    meta["pve-mcp/node"],
                    upid.split(':').nth(1).unwrap(),
                    "{got}"
                );
                Some(upid.to_owned())
            },
        )
        .await
    }
}

/// `METHOD /api/path` of every write the simulator saw.
fn writes(sim: &pve_sim::Simulator) -> Vec<String> {
    sim.writes()
        .iter()
        .map(|w| format!("{} {}", w.method, w.api_path()))
        .collect()
}

/// A JSON-RPC error's code and message.
fn error_of(answer: &Value) -> (i64, String) {
    let error = &answer["error"];
    assert!(error.is_object(), "an error: {answer}");
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn a_long_call_becomes_a_task_polled_to_its_result_and_only_its_token_sees_it() {
    within(async {
        let sim = simulator().await;
        sim.set_task_duration_for("qmstart", SHORT);
        let r = Replica::start(&sim, "memory").await;
        let alice = r.client(ALICE, true);
        let bob = r.client(BOB, true);

        let id = alice
            .start("pve_start_vm", json!({"vmid": 104, "wait": true}))
            .await;

        // Bob is told exactly what he is told of a task that does not
        // exist: nothing reveals Alice's.
        let unknown = error_of(&bob.get("task-00000000000000000000000000000000").await);
        assert_eq!(unknown.0, -32602, "{unknown:?}");
        assert!(
            unknown.1.contains("Unknown task") && unknown.1.contains("taskId"),
            "{unknown:?}"
        );
        let foreign = error_of(&bob.get(&id).await);
        assert_eq!(foreign.0, -32602);
        assert_eq!(
            foreign.1,
            unknown
                .1
                .replace("task-00000000000000000000000000000000", &id)
        );
        let foreign_cancel = error_of(&bob.cancel(&id).await);
        assert_eq!(foreign_cancel, foreign);

        let ended = alice.until_ended(&id).await;
        assert_eq!(ended["status"], "completed", "{ended}");
        assert_eq!(ended["taskId"], id.as_str());
        let result = &ended["result"];
        assert_eq!(result["isError"], false, "{ended}");
        assert_eq!(
            result["structuredContent"]["task"]["end"]["exitstatus"], "OK",
            "{ended}"
        );
        assert_eq!(sim.guest(104).unwrap().status, "running");

        // Bob's cancel changed nothing; Alice's cancel of an ended task is
        // acknowledged and changes nothing either.
        assert!(alice.cancel(&id).await["result"].is_object());
        assert_eq!(alice.get(&id).await["result"]["status"], "completed");

        // Without the extension the same kind of call waits, as before.
        let plain = r.client(ALICE, false);
        let waited = plain
            .call("pve_start_vm", json!({"vmid": 110, "wait": true}))
            .await;
        let result = &waited["result"];
        assert_ne!(result["resultType"], "task", "{waited}");
        assert_eq!(
            result["structuredContent"]["task"]["end"]["exitstatus"], "OK",
            "{waited}"
        );
        // tasks/* need the extension.
        let refused = error_of(&plain.get(&id).await);
        assert_ne!(refused.0, -32602, "{refused:?}");

        // A call that does not wait is answered as always.
        let quick = alice.call("pve_get_vm_status", json!({"vmid": 104})).await;
        assert_eq!(quick["result"]["structuredContent"]["vmid"], 104, "{quick}");

        r.server
            .expect_log(&format!("task ended task={id} status=completed"))
            .await;
        // The cancel may be recorded before the end: the end record
        // follows the state a poll sees.
        let mut events = r.task_events(&id);
        events.sort();
        assert_eq!(
            events,
            [
                ("cancel".into(), "completed".into()),
                ("created".into(), "working".into()),
                ("end".into(), "completed".into()),
            ]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn cancelling_a_write_stops_its_proxmox_task_and_a_read_only_stops_waiting() {
    within(async {
        let sim = simulator().await;
        sim.set_task_duration_for("qmstart", LONG);
        sim.set_task_duration_for("vzdump", LONG);
        let r = Replica::start(&sim, "memory").await;
        let alice = r.client(ALICE, true);

        // A write: its Proxmox task is stopped with one DELETE.
        let id = alice
            .start(
                "pve_backup_vm",
                json!({"vmid": 104, "storage": "local", "wait": true}),
            )
            .await;
        let upid = alice.until_upid(&id).await;
        assert!(sim.task(&upid).unwrap().running());
        // The status message is the task log's latest line, as the guest
        // reported it.
        wait_until(
            "the backup's first log line as the status message",
            Duration::from_secs(60),
            async || {
                let got = alice.get(&id).await;
                let message = got["result"]["statusMessage"].as_str()?.to_owned();
                message
                    .starts_with("INFO: Backup started at ")
                    .then_some(message)
            },
        )
        .await;
        assert!(alice.cancel(&id).await["result"].is_object());
        let ended = alice.get(&id).await["result"].clone();
        assert_eq!(ended["status"], "cancelled", "{ended}");
        let message = ended["statusMessage"].as_str().unwrap();
        assert!(
            message.contains(&format!("the Proxmox task {upid} on pve1 was stopped")),
            "{message}"
        );
        assert_eq!(
            writes(&sim),
            [
                "POST /nodes/pve1/vzdump".to_owned(),
                format!("DELETE /nodes/pve1/tasks/{upid}"),
            ]
        );
        let task = sim.task(&upid).unwrap();
        assert_eq!(task.exitstatus.as_deref(), Some("interrupted by signal"));
        r.server
            .expect_log(&format!("task ended task={id} status=cancelled"))
            .await;

        // A read (pve_wait_task, read access): it only stops waiting.
        let started = alice.call("pve_start_vm", json!({"vmid": 110})).await;
        let other = started["result"]["structuredContent"]["task"]["upid"]
            .as_str()
            .expect("a start task")
            .to_owned();
        sim.clear_requests();
        let waiting = alice
            .start("pve_wait_task", json!({"upid": other, "timeout": 300}))
            .await;
        assert_eq!(alice.until_upid(&waiting).await, other);
        assert!(alice.cancel(&waiting).await["result"].is_object());
        let ended = alice.get(&waiting).await["result"].clone();
        assert_eq!(ended["status"], "cancelled", "{ended}");
        let message = ended["statusMessage"].as_str().unwrap();
        assert!(
            message.contains("stopped waiting") && message.contains("read access only"),
            "{message}"
        );
        assert!(writes(&sim).is_empty(), "{:?}", writes(&sim));
        assert!(sim.task(&other).unwrap().running());
        r.server
            .expect_log(&format!("task ended task={waiting} status=cancelled"))
            .await;

        // The audit log: each task's creation, cancel and end, and the
        // stop as a call of its own under the original grant.
        for task in [&id, &waiting] {
            let events: Vec<String> = r.task_events(task).into_iter().map(|(e, _)| e).collect();
            let mut sorted = events.clone();
            sorted.sort();
            assert_eq!(sorted, ["cancel", "created", "end"], "{task}: {events:?}");
            assert_eq!(events[0], "created");
        }
        let stops: Vec<Value> = audit_records(&r.audit)
            .into_iter()
            .filter(|c| c["kind"] == "call" && c["tool"] == "pve_stop_task")
            .collect();
        assert_eq!(stops.len(), 1, "{stops:?}");
        assert_eq!(stops[0]["decision"], "task-cancel");
        assert_eq!(stops[0]["rule"], "policy.tools.pve_backup_vm");
        assert_eq!(stops[0]["outcome"], "ok");
        // The task records keep the hash chain whole.
        let (code, stdout, stderr) = crate::audit::verify(&[r.audit.to_str().unwrap()]).await;
        assert_eq!(code, Some(0), "stdout: {stdout}\nstderr: {stderr}");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn two_replicas_sharing_redis_answer_for_each_others_tasks() {
    if !Redis::available() {
        return;
    }
    within(async {
        let redis = Redis::start().await;
        let sim = simulator().await;
        let url = redis.url();
        let (r1, r2) = tokio::join!(Replica::start(&sim, &url), Replica::start(&sim, &url));
        let (on1, on2) = (r1.client(ALICE, true), r2.client(ALICE, true));

        // Cancelled on the other replica: r2 sends the stop, r1's wait
        // ends.
        sim.set_task_duration_for("qmstart", LONG);
        let id = on1
            .start("pve_start_vm", json!({"vmid": 104, "wait": true}))
            .await;
        let upid = on2.until_upid(&id).await;
        assert!(on2.cancel(&id).await["result"].is_object());
        assert_eq!(
            writes(&sim),
            [
                "POST /nodes/pve1/qemu/104/status/start".to_owned(),
                format!("DELETE /nodes/pve1/tasks/{upid}"),
            ]
        );
        r1.server
            .expect_log(&format!("task ended task={id} status=cancelled"))
            .await;
        let seen = on1.get(&id).await["result"].clone();
        assert_eq!(seen["status"], "cancelled", "{seen}");
        assert!(!r2.server.log().contains(&format!("task ended task={id}")));
        let (mut created, mut cancelled) = (r1.task_events(&id), r2.task_events(&id));
        created.extend(std::mem::take(&mut cancelled));
        let events: Vec<&str> = created.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(events, ["created", "end", "cancel"]);

        // Polled to its end on the other replica.
        sim.set_task_duration_for("qmstart", SHORT);
        let id = on1
            .start("pve_start_vm", json!({"vmid": 110, "wait": true}))
            .await;
        let ended = on2.until_ended(&id).await;
        assert_eq!(ended["status"], "completed", "{ended}");
        assert_eq!(
            ended["result"]["structuredContent"]["task"]["end"]["exitstatus"], "OK",
            "{ended}"
        );
        // Another token is refused on either replica.
        let bob = r2.client(BOB, true);
        assert_eq!(error_of(&bob.get(&id).await).0, -32602);
    })
    .await;
}

/// `pve-mcp serve` over stdio that may run `pve_start_vm`, driven one
/// JSON-RPC line at a time, patient enough for a task to end.
fn stdio_server(sim: &pve_sim::Simulator, dir: &Path) -> Raw {
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, "[policy.tools.pve_start_vm]\naction = \"allow\"\n").unwrap();
    let opts = Opts::default()
        .arg("--policy")
        .arg(policy.to_str().unwrap());
    Raw::with(sim, &opts, dir, Duration::from_secs(60))
}

#[tokio::test]
async fn a_stdio_client_is_told_when_its_task_ends() {
    within(async {
        let sim = simulator().await;
        sim.set_task_duration_for("qmstart", SHORT);
        let dir = tempfile::tempdir().unwrap();
        let mut raw = stdio_server(&sim, dir.path());
        let mut seen = Vec::new();
        let init = raw
            .request_seeing(
                1,
                "initialize",
                json!({"protocolVersion": "2025-11-25",
                    "capabilities": {"extensions": {EXTENSION: {}}},
                    "clientInfo": {"name": "e2e-tasks", "version": "1"}}),
                &mut seen,
            )
            .await;
        assert!(
            init["result"]["capabilities"]["extensions"][EXTENSION].is_object(),
            "{init}"
        );
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        let handle = raw
            .request_seeing(
                2,
                "tools/call",
                json!({"name": "pve_start_vm", "arguments": {"vmid": 104, "wait": true}}),
                &mut seen,
            )
            .await;
        assert_eq!(handle["result"]["resultType"], "task", "{handle}");
        let id = handle["result"]["taskId"].as_str().unwrap().to_owned();
        let note = loop {
            let message = match seen.pop() {
                Some(m) => m,
                None => raw.receive().await,
            };
            if message["method"] == "notifications/tasks" {
                break message;
            }
        };
        let params = &note["params"];
        assert_eq!(params["taskId"], id.as_str(), "{note}");
        assert_eq!(params["status"], "completed", "{note}");
        assert_eq!(
            params["result"]["structuredContent"]["task"]["end"]["exitstatus"], "OK",
            "{note}"
        );
        let got = raw
            .request_seeing(3, "tasks/get", json!({"taskId": id}), &mut seen)
            .await;
        assert_eq!(got["result"]["status"], "completed", "{got}");
        assert_eq!(got["result"]["result"], params["result"], "{got}");
    })
    .await;
}

#[tokio::test]
async fn an_http_session_hears_on_its_get_stream_when_its_task_ends() {
    within(async {
        let sim = simulator().await;
        sim.set_task_duration_for("qmstart", SHORT);
        let r = Replica::start(&sim, "memory").await;
        let server = &r.server;
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"extensions": {EXTENSION: {}}},
            "clientInfo": {"name": "e2e-tasks", "version": "1"}}});
        let answer = server
            .post_as(Some(ALICE), &initialize)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{}", server.log());
        let session = answer.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let in_session = |message: &Value| {
            server
                .post_as(Some(ALICE), message)
                .header("mcp-session-id", &session)
                .header("mcp-protocol-version", "2025-11-25")
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(in_session(&initialized).send().await.unwrap().status(), 202);
        let mut stream = server
            .http
            .get(&server.url)
            .bearer_auth(ALICE)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);

        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "pve_start_vm", "arguments": {"vmid": 104, "wait": true}}});
        let handle = messages(in_session(&call).send().await.unwrap()).await;
        let handle = handle.last().unwrap();
        assert_eq!(handle["result"]["resultType"], "task", "{handle}");
        let id = handle["result"]["taskId"].as_str().unwrap().to_owned();

        // The session's stream carries the task's end.
        let mut text = String::new();
        let note = loop {
            let chunk = tokio::time::timeout(Duration::from_secs(60), stream.chunk())
                .await
                .expect("the task's notification within 60 s")
                .unwrap()
                .expect("the stream stays open");
            text.push_str(&String::from_utf8_lossy(&chunk));
            let found = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m["method"] == "notifications/tasks");
            if let Some(note) = found {
                break note;
            }
        };
        assert_eq!(note["params"]["taskId"], id.as_str(), "{note}");
        assert_eq!(note["params"]["status"], "completed", "{note}");
        assert_eq!(
            note["params"]["result"]["structuredContent"]["task"]["end"]["exitstatus"], "OK",
            "{note}"
        );
    })
    .await;
}
