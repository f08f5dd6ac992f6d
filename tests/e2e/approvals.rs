//! Human approval (policy action `require_approval`) through the real
//! binary: a client that can show a form is asked (elicitation); any other
//! client gets a pending approval that a person grants or refuses with
//! `pve-mcp approvals`, and the identical retry runs exactly once.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pve_sim::Simulator;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::common::*;
use crate::policy_harness::{Redis, free_port};

const ADMIN_TOKEN: &str = "e2e-admin-token-5b1f0c9d2e7a";
const TOOL: &str = "pve_get_vm_status";

fn vm(vmid: u64) -> Value {
    json!({"vmid": vmid, "node": "pve1", "vm_type": "qemu"})
}

/// How many `status/current` requests reached the simulator: how many
/// times the tool really ran.
fn runs(sim: &Simulator) -> usize {
    sim.requests()
        .iter()
        .filter(|r| r.path.ends_with("/status/current"))
        .count()
}

/// A config file that makes `pve_get_vm_status` need approval, with the
/// admin endpoint on a unix socket in `dir` (or the given `[approvals]`
/// lines), any extra `[policy]` lines and extra lines for the tool's rule.
struct Setup {
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl Setup {
    fn new(approvals: &str, policy: &str) -> Setup {
        Setup::with_rule(approvals, policy, "")
    }

    fn with_rule(approvals: &str, policy: &str, rule: &str) -> Setup {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("pve-mcp.toml");
        let approvals = if approvals.contains("admin_listen") || approvals.contains("admin_socket")
        {
            approvals.to_string()
        } else {
            format!(
                "admin_socket = \"{}\"\n{approvals}",
                dir.path().join("admin.sock").display()
            )
        };
        std::fs::write(
            &config,
            format!(
                "[policy]\n{policy}\n[policy.tools.{TOOL}]\naction = \"require_approval\"\n{rule}\n[approvals]\n{approvals}\n"
            ),
        )
        .expect("writing the config");
        Setup { dir, config }
    }

    fn socket() -> Setup {
        Setup::new("", "")
    }

    fn opts(&self) -> Opts {
        Opts::default()
            .arg("--config")
            .arg(self.config.to_str().expect("utf-8 path"))
            .env("PVE_MCP_ADMIN_TOKEN", ADMIN_TOKEN)
    }

    /// `pve-mcp --config FILE approvals ARGS` with this admin token.
    async fn cli(&self, token: Option<&str>, args: &[&str]) -> Cli {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .arg("--config")
            .arg(&self.config)
            .arg("approvals")
            .args(args)
            .stdin(Stdio::null());
        if let Some(token) = token {
            cmd.env("PVE_MCP_ADMIN_TOKEN", token);
        }
        let out = cmd.output().await.expect("running pve-mcp approvals");
        Cli {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Approves or denies, which must succeed.
    async fn decide(&self, action: &str, id: &str) -> String {
        let out = self.cli(Some(ADMIN_TOKEN), &[action, id]).await;
        assert_eq!(out.code, Some(0), "approvals {action} {id}: {out:?}");
        out.stdout
    }

    /// `approvals list --json`.
    async fn list(&self) -> Vec<Value> {
        let out = self.cli(Some(ADMIN_TOKEN), &["list", "--json"]).await;
        assert_eq!(out.code, Some(0), "{out:?}");
        serde_json::from_str(&out.stdout).expect("approvals list --json prints JSON")
    }
}

#[derive(Debug)]
struct Cli {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// The approval id a pending result quotes.
pub fn approval_id(text: &str) -> String {
    let start = text
        .find("ap-")
        .unwrap_or_else(|| panic!("no approval id in: {text}"));
    let id: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    assert_eq!(id.len(), 19, "{text}");
    id
}

/// A pending result: an `isError` naming the id and how to approve it.
async fn pending(server: &Server, args: Value) -> String {
    let text = server.err(TOOL, args).await;
    let id = approval_id(&text);
    assert!(
        text.contains(&format!("pve-mcp approvals approve {id}")),
        "{text}"
    );
    assert!(text.contains("retry exactly the same call"), "{text}");
    id
}

#[tokio::test]
async fn pending_then_retry_runs_the_identical_call_exactly_once() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::socket();
        let server = Server::start(&sim, setup.opts()).await;

        let id = pending(&server, vm(100)).await;
        // A retry before anyone decided: the same approval, no duplicate.
        let again = server.err(TOOL, vm(100)).await;
        assert!(again.starts_with("Still waiting"), "{again}");
        assert_eq!(approval_id(&again), id);
        assert_eq!(runs(&sim), 0);

        let table = setup.cli(Some(ADMIN_TOKEN), &["list"]).await;
        assert_eq!(table.code, Some(0), "{table:?}");
        let lines: Vec<&str> = table.stdout.lines().collect();
        assert_eq!(
            lines.len(),
            2,
            "one approval, no duplicate: {}",
            table.stdout
        );
        for column in [
            "ID",
            "TOOL",
            "STATE",
            "AGE",
            "EXPIRES",
            "CALLER",
            "ARGUMENTS",
        ] {
            assert!(lines[0].contains(column), "{}", table.stdout);
        }
        for cell in [
            id.as_str(),
            TOOL,
            "pending",
            "session:stdio",
            r#""vmid":100"#,
            "in 15 min",
        ] {
            assert!(lines[1].contains(cell), "{cell} missing: {}", table.stdout);
        }

        let said = setup.decide("approve", &id).await;
        assert!(said.starts_with(&format!("approved {id}")), "{said}");

        // The identical call (keys in another order) runs, once.
        let status = server
            .ok(
                TOOL,
                json!({"vm_type": "qemu", "node": "pve1", "vmid": 100}),
            )
            .await;
        assert_eq!(status["name"], "web-frontend-01");
        assert_eq!(runs(&sim), 1);

        // A further retry needs a new approval.
        let next = pending(&server, vm(100)).await;
        assert_ne!(next, id);
        assert_eq!(runs(&sim), 1);

        let listed = setup.list().await;
        let states: Vec<(&str, &str)> = listed
            .iter()
            .map(|a| (a["id"].as_str().unwrap(), a["state"].as_str().unwrap()))
            .collect();
        assert_eq!(states, [(id.as_str(), "used"), (next.as_str(), "pending")]);
        assert_eq!(listed[0]["tool"], TOOL);
        let caller = listed[0]["caller"].as_str().unwrap_or_default();
        assert!(caller.starts_with("session:stdio@"), "{caller}");
        assert!(
            listed[0]["arguments_hash"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );

        // Approving a used approval is a clear error.
        let used = setup.cli(Some(ADMIN_TOKEN), &["approve", &id]).await;
        assert_eq!(used.code, Some(1));
        assert!(used.stderr.contains("already used"), "{used:?}");

        let log = server.stop().await;
        assert!(
            !log.contains(ADMIN_TOKEN),
            "the admin token reached the log"
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_denied_call_is_refused_saying_so() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::socket();
        let server = Server::start(&sim, setup.opts()).await;
        let id = pending(&server, vm(100)).await;
        let said = setup.decide("deny", &id).await;
        assert!(said.starts_with(&format!("denied {id}")), "{said}");
        for _ in 0..2 {
            let text = server.err(TOOL, vm(100)).await;
            assert!(text.starts_with("Not approved: a person denied"), "{text}");
            assert!(text.contains(&id), "{text}");
        }
        assert_eq!(runs(&sim), 0);
        let listed = setup.list().await;
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0]["state"], "denied");
        // Denied is final: approving it now is refused.
        let late = setup.cli(Some(ADMIN_TOKEN), &["approve", &id]).await;
        assert_eq!(late.code, Some(1));
        assert!(late.stderr.contains("already denied"), "{late:?}");
    })
    .await;
}

#[tokio::test]
async fn changed_arguments_are_not_covered_by_an_approval() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::socket();
        let server = Server::start(&sim, setup.opts()).await;
        let id = pending(&server, vm(100)).await;
        setup.decide("approve", &id).await;

        let other = pending(&server, vm(101)).await;
        assert_ne!(other, id, "another vmid is another call");
        let typed = pending(
            &server,
            json!({"vmid": "100", "node": "pve1", "vm_type": "qemu"}),
        )
        .await;
        assert_ne!(typed, id, "\"100\" is not 100");
        assert_eq!(runs(&sim), 0);

        // The approved call itself still runs.
        server.ok(TOOL, vm(100)).await;
        assert_eq!(runs(&sim), 1);
        assert_eq!(setup.list().await.len(), 3);
    })
    .await;
}

#[tokio::test]
async fn approvals_expire_pending_or_not() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::new("ttl_secs = 1", "");
        let server = Server::start(&sim, setup.opts()).await;
        let id = pending(&server, vm(100)).await;
        // Letting the 1 s TTL pass is what is tested: no event to await.
        tokio::time::sleep(Duration::from_millis(1500)).await;

        let late = setup.cli(Some(ADMIN_TOKEN), &["approve", &id]).await;
        assert_eq!(late.code, Some(1), "{late:?}");
        assert!(late.stderr.contains("has expired"), "{late:?}");
        let listed = setup.list().await;
        assert_eq!(listed[0]["state"], "expired");

        let text = server.err(TOOL, vm(100)).await;
        assert!(
            text.contains(&format!("earlier approval {id} expired")),
            "{text}"
        );
        let fresh = approval_id(&text[text.find("new approval").unwrap()..]);
        assert_ne!(fresh, id);

        // Approved, but the call comes too late: it does not run.
        setup.decide("approve", &fresh).await;
        // As above: the approval's TTL runs out while nobody calls.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let text = server.err(TOOL, vm(100)).await;
        assert!(
            text.contains(&format!("earlier approval {fresh} expired")),
            "{text}"
        );
        assert_eq!(runs(&sim), 0);
    })
    .await;
}

#[tokio::test]
async fn the_admin_endpoint_checks_its_token_and_ids() {
    within(async {
        let sim = simulator().await;
        let port = free_port();
        let setup = Setup::new(&format!("admin_listen = \"127.0.0.1:{port}\""), "");
        let server = Server::start(&sim, setup.opts()).await;
        let id = pending(&server, vm(100)).await;

        let wrong = "this-is-not-the-admin-token";
        for args in [vec!["list"], vec!["approve", id.as_str()], vec!["deny", id.as_str()]] {
            let out = setup.cli(Some(wrong), &args).await;
            assert_eq!(out.code, Some(1), "{args:?}: {out:?}");
            assert!(out.stderr.contains("refused the admin token"), "{out:?}");
            assert!(!out.stderr.contains(wrong) && !out.stdout.contains(wrong), "{out:?}");
        }
        assert_eq!(setup.list().await[0]["state"], "pending", "nothing changed");

        let none = setup.cli(None, &["list"]).await;
        assert_eq!(none.code, Some(2), "{none:?}");
        assert!(none.stderr.contains("PVE_MCP_ADMIN_TOKEN") && none.stderr.contains("fix:"), "{none:?}");

        let unknown = setup.cli(Some(ADMIN_TOKEN), &["approve", "ap-0000000000000000"]).await;
        assert_eq!(unknown.code, Some(1));
        assert!(unknown.stderr.contains("no approval has the id"), "{unknown:?}");
        let garbage = setup.cli(Some(ADMIN_TOKEN), &["deny", "../../etc"]).await;
        assert_eq!(garbage.code, Some(2));
        assert!(garbage.stderr.contains("not an approval id"), "{garbage:?}");

        // The admin API itself, without the CLI: no token, no answer.
        let mut raw = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(
            &mut raw,
            format!("POST /v1/approvals/{id}/approve HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut answer = String::new();
        raw.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
        assert_eq!(setup.list().await[0]["state"], "pending");
        assert_eq!(runs(&sim), 0);
        let log = server.stop().await;
        assert!(log.contains("admin request refused"), "{log}");
        assert!(!log.contains(ADMIN_TOKEN) && !log.contains(wrong));
    })
    .await;
}

#[tokio::test]
async fn serve_refuses_to_start_without_a_token_or_on_a_public_address() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::socket();
        let dir = tempfile::tempdir().unwrap();
        let mut opts = setup.opts();
        opts.env.retain(|(k, _)| k != "PVE_MCP_ADMIN_TOKEN");
        let out = command(&sim, &opts, dir.path(), &["serve"])
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("PVE_MCP_ADMIN_TOKEN") && err.contains(TOOL),
            "{err}"
        );

        let public = Setup::new("admin_listen = \"0.0.0.0:7391\"", "");
        let out = command(&sim, &public.opts(), dir.path(), &["serve"])
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("approvals.admin_listen") && err.contains("loopback"),
            "{err}"
        );
    })
    .await;
}

/// A tool result's text over HTTP, for one call of `TOOL`.
async fn http_call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    args: Value,
) -> (bool, String) {
    let params = rmcp::model::CallToolRequestParams::new(TOOL)
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    let result = client.call_tool(params).await.expect("a tool result");
    (result.is_error == Some(true), text(&result))
}

/// Two replicas behind a load balancer: Streamable HTTP, the same agent
/// token, one Redis. An approval asked through one is seen, approved and
/// consumed through the other, once.
#[tokio::test]
async fn an_approval_given_through_one_server_is_honoured_by_another_sharing_redis() {
    if !Redis::available() {
        return;
    }
    within(async {
        let sim = simulator().await;
        let redis = Redis::start().await;
        let state = format!("state = \"{}\"", redis.url());
        let http = format!(
            "\n[http]\nlisten = \"127.0.0.1:0\"\n[http.tokens]\nagent = \"{}\"\n",
            crate::http::TOKEN
        );
        let a = Setup::new(&http, &state);
        let b = Setup::new(&http, &state);
        let spawn = |setup: &Setup| {
            crate::http::HttpServer::spawn(
                &sim,
                setup.opts(),
                &["serve"],
                crate::http::http_client(),
            )
        };
        let server_a = spawn(&a).await;
        let server_b = spawn(&b).await;
        let client_a = server_a
            .client_with(Some(crate::http::TOKEN))
            .await
            .unwrap();
        let client_b = server_b
            .client_with(Some(crate::http::TOKEN))
            .await
            .unwrap();

        let (refused, text) = http_call(&client_a, vm(100)).await;
        assert!(refused, "{text}");
        let id = approval_id(&text);
        // The other replica sees the same pending approval...
        let (_, seen) = http_call(&client_b, vm(100)).await;
        assert_eq!(approval_id(&seen), id);
        // ...and its admin endpoint approves it.
        b.decide("approve", &id).await;
        let (refused, text) = http_call(&client_b, vm(100)).await;
        assert!(!refused, "{text}");
        assert_eq!(runs(&sim), 1);
        // Consumed once for both.
        let (_, again) = http_call(&client_a, vm(100)).await;
        assert_ne!(approval_id(&again), id);
        assert_eq!(runs(&sim), 1);
        assert_eq!(a.list().await.len(), 2);
    })
    .await;
}

/// Two stdio servers on one Redis serve two different clients, each called
/// "stdio": neither may use the other's approval.
#[tokio::test]
async fn stdio_servers_sharing_redis_keep_their_approvals_apart() {
    if !Redis::available() {
        return;
    }
    within(async {
        let sim = simulator().await;
        let redis = Redis::start().await;
        let state = format!("state = \"{}\"", redis.url());
        let a = Setup::new("", &state);
        let b = Setup::new("", &state);
        let server_a = Server::start(&sim, a.opts()).await;
        let server_b = Server::start(&sim, b.opts()).await;

        let id_a = pending(&server_a, vm(100)).await;
        let id_b = pending(&server_b, vm(100)).await;
        assert_ne!(id_a, id_b, "one client's approval is not the other's");
        a.decide("approve", &id_a).await;
        let refused = server_b.err(TOOL, vm(100)).await;
        assert_eq!(approval_id(&refused), id_b, "{refused}");
        assert_eq!(runs(&sim), 0);
        server_a.ok(TOOL, vm(100)).await;
        assert_eq!(runs(&sim), 1);
    })
    .await;
}

// ---- elicitation: the person at the client answers ----

/// A client that declares elicitation and gives a set answer, recording
/// what it was asked.
#[derive(Clone)]
struct Person {
    /// `None`: fail the request, as a client whose form broke would.
    answer: Arc<Mutex<Option<ElicitResult>>>,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Person {
    fn answering(answer: ElicitResult) -> Person {
        Person {
            answer: Arc::new(Mutex::new(Some(answer))),
            asked: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn set(&self, answer: Option<ElicitResult>) {
        *self.answer.lock().unwrap() = answer;
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("e2e-person", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        {
            let schema = serde_json::to_value(requested_schema).unwrap_or_default();
            self.asked.lock().unwrap().push((message, schema));
        }
        self.answer
            .lock()
            .unwrap()
            .clone()
            .ok_or_else(|| ErrorData::internal_error("the form could not be shown", None))
    }
}

/// `pve-mcp serve` with a [`Person`] as its client.
async fn with_person(
    sim: &Simulator,
    opts: &Opts,
    dir: &Path,
    person: Person,
) -> (RunningService<RoleClient, Person>, Arc<Mutex<String>>) {
    let cmd = command(sim, opts, dir, &["-vv", "serve"]);
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning pve-mcp serve");
    let log = Arc::new(Mutex::new(String::new()));
    if let Some(mut stderr) = stderr {
        let log = log.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                log.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
    }
    let client = person.serve(transport).await.expect("MCP handshake");
    (client, log)
}

async fn call(client: &RunningService<RoleClient, Person>, args: Value) -> CallToolResult {
    client
        .call_tool(
            CallToolRequestParams::new(TOOL).with_arguments(args.as_object().cloned().unwrap()),
        )
        .await
        .expect("a result, not a protocol error")
}

fn accept(approve: bool) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "approve": approve }))
}

#[tokio::test]
async fn a_client_that_can_ask_its_person_gets_a_form() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::socket();
        let person = Person::answering(accept(true));
        let (client, log) =
            with_person(&sim, &setup.opts(), setup.dir.path(), person.clone()).await;

        let result = call(&client, vm(100)).await;
        assert_eq!(
            result.is_error,
            Some(false),
            "{result:?}\n{}",
            log.lock().unwrap()
        );
        assert_eq!(
            result.structured_content.as_ref().unwrap()["name"],
            "web-frontend-01"
        );
        assert_eq!(runs(&sim), 1);
        {
            let asked = person.asked.lock().unwrap();
            assert_eq!(asked.len(), 1);
            let (message, schema) = &asked[0];
            assert!(message.contains(TOOL), "{message}");
            assert!(message.contains(r#""vmid":100"#), "{message}");
            assert_eq!(schema["properties"]["approve"]["type"], "boolean");
            assert_eq!(schema["required"], json!(["approve"]));
        }
        // Every call asks again; nothing is left pending for the CLI.
        call(&client, vm(100)).await;
        assert_eq!(person.asked.lock().unwrap().len(), 2);
        assert_eq!(runs(&sim), 2);
        assert!(setup.list().await.is_empty());

        for (answer, says) in [
            (accept(false), "the person answered no"),
            (ElicitResult::new(ElicitationAction::Decline), "declined"),
            (ElicitResult::new(ElicitationAction::Cancel), "dismissed"),
            (
                ElicitResult::new(ElicitationAction::Accept),
                "the person answered no",
            ),
        ] {
            person.set(Some(answer));
            let result = call(&client, vm(100)).await;
            assert_eq!(result.is_error, Some(true), "{says}: {result:?}");
            let text = text(&result);
            assert!(text.starts_with("Not approved: "), "{text}");
            assert!(text.contains(says) && text.contains(TOOL), "{text}");
        }
        assert_eq!(runs(&sim), 2, "no refused call reached Proxmox");
        assert_eq!(person.asked.lock().unwrap().len(), 6);

        // A client whose form fails falls back to pending-then-retry.
        person.set(None);
        let result = call(&client, vm(100)).await;
        assert_eq!(result.is_error, Some(true));
        let id = approval_id(&text(&result));
        setup.decide("approve", &id).await;
        let result = call(&client, vm(100)).await;
        assert_eq!(result.is_error, Some(false), "{result:?}");
        assert_eq!(runs(&sim), 3);
        let _ = client.cancel().await;
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// A pending call keeps its rate-limit unit, so neither opening
/// approvals nor polling them gets past the tool's `rate_limit`: here the
/// pending call and its approved retry spend the day's two units.
#[tokio::test]
async fn a_pending_call_keeps_its_rate_limit_unit() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::with_rule("", "", "rate_limit = \"2/day\"");
        let server = Server::start(&sim, setup.opts()).await;
        let id = pending(&server, vm(100)).await;
        setup.decide("approve", &id).await;
        server.ok(TOOL, vm(100)).await;
        let text = server.err(TOOL, vm(100)).await;
        assert!(text.starts_with("Rate limit reached"), "{text}");
        assert_eq!(runs(&sim), 1);
    })
    .await;
}

/// One bearer token at `max_pending_per_caller` is refused a new approval,
/// saying how many are open and what to do; another token is not held up.
#[tokio::test]
async fn one_token_at_its_pending_cap_does_not_stop_another() {
    within(async {
        let sim = simulator().await;
        const OTHER: &str = "9d2b7c4e1a6f3e8d5c2b9a7f4e1d6c3b";
        let http = format!(
            "max_pending_per_caller = 2\n\n[http]\nlisten = \"127.0.0.1:0\"\n[http.tokens]\nagent = \"{}\"\nother = \"{OTHER}\"\n",
            crate::http::TOKEN
        );
        let setup = Setup::new(&http, "");
        let server =
            crate::http::HttpServer::spawn(&sim, setup.opts(), &["serve"], crate::http::http_client())
                .await;
        let agent = server.client_with(Some(crate::http::TOKEN)).await.unwrap();
        let other = server.client_with(Some(OTHER)).await.unwrap();
        for vmid in [100, 101] {
            let (refused, text) = http_call(&agent, vm(vmid)).await;
            assert!(refused && text.contains("is pending"), "{text}");
        }
        let (refused, text) = http_call(&agent, vm(102)).await;
        assert!(refused, "{text}");
        for part in [
            "2 approvals requested by you (token:agent)",
            "max_pending_per_caller",
            "pve-mcp approvals deny",
        ] {
            assert!(text.contains(part), "{part:?} in {text}");
        }
        // A retry of an open one still gets its approval's id.
        let (_, text) = http_call(&agent, vm(100)).await;
        assert!(text.starts_with("Still waiting"), "{text}");
        let (refused, text) = http_call(&other, vm(102)).await;
        assert!(refused && text.contains("is pending"), "{text}");
        assert_eq!(setup.list().await.len(), 3);
        assert_eq!(runs(&sim), 0);
    })
    .await;
}

#[tokio::test]
async fn an_unreachable_redis_refuses_calls_that_need_approval() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::new(
            "",
            &format!("state = \"redis://127.0.0.1:{}\"", free_port()),
        );
        let server = Server::start(&sim, setup.opts()).await;
        let text = server.err(TOOL, vm(100)).await;
        assert!(text.starts_with("Not approved: "), "{text}");
        assert!(text.contains("approval store is unavailable"), "{text}");
        assert_eq!(runs(&sim), 0);
        // The server keeps serving other tools.
        server.ok("pve_get_version", json!({})).await;
        let out = setup.cli(Some(ADMIN_TOKEN), &["list"]).await;
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(
            out.stderr.contains("approval store is unavailable"),
            "{out:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn elicitation_can_be_turned_off_for_clients_that_answer_forms_themselves() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::new("elicitation = false", "");
        let person = Person::answering(accept(true));
        let (client, _log) =
            with_person(&sim, &setup.opts(), setup.dir.path(), person.clone()).await;
        let result = call(&client, vm(100)).await;
        assert_eq!(result.is_error, Some(true));
        let id = approval_id(&text(&result));
        assert!(
            person.asked.lock().unwrap().is_empty(),
            "the form was shown"
        );
        assert_eq!(runs(&sim), 0);
        setup.decide("approve", &id).await;
        assert_eq!(call(&client, vm(100)).await.is_error, Some(false));
        assert_eq!(runs(&sim), 1);
        let _ = client.cancel().await;
    })
    .await;
}

#[tokio::test]
async fn concurrent_retries_of_an_approved_call_run_it_once() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::socket();
        let server = Server::start(&sim, setup.opts()).await;
        let id = pending(&server, vm(100)).await;
        setup.decide("approve", &id).await;
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let peer = server.client.peer().clone();
            calls.spawn(async move {
                let args = vm(100).as_object().cloned().unwrap();
                peer.call_tool(CallToolRequestParams::new(TOOL).with_arguments(args))
                    .await
                    .expect("a result, not a protocol error")
            });
        }
        let results = calls.join_all().await;
        let ran = results.iter().filter(|r| r.is_error == Some(false)).count();
        assert_eq!(ran, 1, "{results:?}");
        assert_eq!(runs(&sim), 1);
        // The others wait on one new approval, not seven.
        let waiting: std::collections::BTreeSet<String> = results
            .iter()
            .filter(|r| r.is_error == Some(true))
            .map(|r| approval_id(&text(r)))
            .collect();
        assert_eq!(waiting.len(), 1, "{waiting:?}");
        assert!(!waiting.contains(&id));
        assert_eq!(setup.list().await.len(), 2);
    })
    .await;
}

/// The audit log says who waited and what ran: the pending call as
/// `not-approved`, the approved retry as `approved`, both under the rule
/// that asked for approval, and the chain verifies.
#[tokio::test]
async fn the_audit_log_records_pending_and_approved_calls() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let setup = Setup::new(&format!("\n[audit]\npath = \"{}\"\n", audit.display()), "");
        let server = Server::start(&sim, setup.opts()).await;

        let id = pending(&server, vm(100)).await;
        setup.decide("approve", &id).await;
        server.ok(TOOL, vm(100)).await;
        assert_eq!(runs(&sim), 1);

        let text = std::fs::read_to_string(&audit).expect("the audit log");
        let calls: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a JSON record"))
            .filter(|r| r["kind"] == "call")
            .collect();
        assert_eq!(calls.len(), 2, "{text}");
        let rule = format!("policy.tools.{TOOL}");
        assert_eq!(calls[0]["decision"], "not-approved", "{}", calls[0]);
        assert_eq!(calls[0]["rule"], rule.as_str(), "{}", calls[0]);
        assert_eq!(calls[1]["decision"], "approved", "{}", calls[1]);
        assert_eq!(calls[1]["rule"], rule.as_str(), "{}", calls[1]);
        assert_eq!(calls[1]["outcome"], "ok", "{}", calls[1]);
        assert_eq!(calls[1]["approver"], "operator", "{}", calls[1]);
        assert!(calls[0].get("approver").is_none(), "{}", calls[0]);
        assert_eq!(calls[0]["args_hash"], calls[1]["args_hash"]);
        assert!(!text.contains(ADMIN_TOKEN));

        let out = tokio::process::Command::new(BIN)
            .args(["audit", "verify"])
            .arg(&audit)
            .output()
            .await
            .expect("running pve-mcp audit verify");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    })
    .await;
}

/// The audit records of a log file whose `kind` is `call`.
fn call_records(audit: &Path) -> Vec<Value> {
    std::fs::read_to_string(audit)
        .expect("the audit log")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON record"))
        .filter(|r| r["kind"] == "call")
        .collect()
}

/// Finding 5: with `approver = "operator"` the client is never asked, even
/// one that would approve at once (an agent answering its own form): the
/// call waits for `pve-mcp approvals approve`, and the audit says the
/// operator decided. With `approver = "client"` the form decides, and the
/// audit says so.
#[tokio::test]
async fn the_rule_names_who_approves_and_the_audit_records_it() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let audit_section = format!("\n[audit]\npath = \"{}\"\n", audit.display());
        let setup = Setup::with_rule(&audit_section, "", "approver = \"operator\"");
        let person = Person::answering(accept(true));
        let (client, _log) =
            with_person(&sim, &setup.opts(), setup.dir.path(), person.clone()).await;
        let result = call(&client, vm(100)).await;
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let id = approval_id(&text(&result));
        assert!(
            person.asked.lock().unwrap().is_empty(),
            "an operator's approval must not be asked of the client"
        );
        assert_eq!(runs(&sim), 0);
        setup.decide("approve", &id).await;
        assert_eq!(call(&client, vm(100)).await.is_error, Some(false));
        assert_eq!(runs(&sim), 1);
        let _ = client.cancel().await;
        let calls = call_records(&audit);
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(calls[1]["decision"], "approved", "{}", calls[1]);
        assert_eq!(calls[1]["approver"], "operator", "{}", calls[1]);

        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let audit_section = format!("\n[audit]\npath = \"{}\"\n", audit.display());
        let setup = Setup::with_rule(&audit_section, "", "approver = \"client\"");
        let (client, _log) =
            with_person(&sim, &setup.opts(), setup.dir.path(), person.clone()).await;
        assert_eq!(call(&client, vm(100)).await.is_error, Some(false));
        assert_eq!(person.asked.lock().unwrap().len(), 1);
        assert_eq!(runs(&sim), 2);
        let _ = client.cancel().await;
        let calls = call_records(&audit);
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0]["approver"], "client", "{}", calls[0]);
    })
    .await;
}

/// Without an `approver` in the rule, who approves follows the host's
/// tier, not the tool's claim: `hostile_rollback` claims to be harmless
/// but declares a rollback route, so it is destructive and its approval
/// waits for an operator (the client, which would approve at once, is not
/// asked, and nothing is sent until then); `hostile_write` (tier write)
/// asks the client's form.
#[tokio::test]
async fn the_default_approver_follows_the_hosts_tier() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::socket();
        std::fs::write(
            &setup.config,
            format!(
                "[policy.tools.hostile_rollback]\naction = \"require_approval\"\n\
                 [policy.tools.hostile_write]\naction = \"require_approval\"\n\
                 [approvals]\nadmin_socket = \"{}\"\n",
                setup.dir.path().join("admin.sock").display()
            ),
        )
        .unwrap();
        let opts = setup.opts().arg("--component").arg(HOSTILE_WASM);
        let person = Person::answering(accept(true));
        let (client, _log) = with_person(&sim, &opts, setup.dir.path(), person.clone()).await;
        let call = |tool: &'static str| {
            let client = &client;
            async move {
                client
                    .call_tool(
                        CallToolRequestParams::new(tool)
                            .with_arguments(json!({"vmid": 100}).as_object().cloned().unwrap()),
                    )
                    .await
                    .expect("a result, not a protocol error")
            }
        };
        let rollback = "/api2/json/nodes/pve1/qemu/100/snapshot/before/rollback";

        let result = call("hostile_rollback").await;
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let id = approval_id(&text(&result));
        assert!(
            person.asked.lock().unwrap().is_empty(),
            "a destructive tool's approval must not be asked of the client"
        );
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        setup.decide("approve", &id).await;
        let result = call("hostile_rollback").await;
        assert_eq!(result.is_error, Some(false), "{result:?}");
        let sent: Vec<_> = sim.writes().into_iter().map(|r| r.path).collect();
        assert_eq!(sent, [rollback]);
        assert!(person.asked.lock().unwrap().is_empty());

        let result = call("hostile_write").await;
        assert_eq!(result.is_error, Some(false), "{result:?}");
        assert_eq!(
            person.asked.lock().unwrap().len(),
            1,
            "the client's form decided"
        );
        assert_eq!(sim.writes().len(), 2, "{:?}", sim.writes());
        let _ = client.cancel().await;
    })
    .await;
}

/// Issue 21: the plan an operator approves is the host's record of the
/// writes the dry run plans, and the approved call sends exactly those.
/// `hostile_plan` plans a start and then, approved, sends a stop: refused
/// as not the plan; the start goes out once; a second start, beyond the
/// plan, is refused too. The audit names the plan as the rule.
#[tokio::test]
async fn an_approved_call_sends_only_the_plan_the_operator_saw() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::socket();
        let audit = setup.dir.path().join("audit.jsonl");
        std::fs::write(
            &setup.config,
            format!(
                "[policy.tools.hostile_plan]\naction = \"require_approval\"\napprover = \"operator\"\n\
                 [approvals]\nadmin_socket = \"{}\"\n[audit]\npath = \"{}\"\n",
                setup.dir.path().join("admin.sock").display(),
                audit.display()
            ),
        )
        .unwrap();
        let opts = setup.opts().arg("--component").arg(HOSTILE_WASM);
        let server = Server::start(&sim, opts).await;
        let args = json!({"node": "pve1", "vmid": 100});
        let text = server.err("hostile_plan", args.clone()).await;
        let id = approval_id(&text);
        let start = "/api2/json/nodes/pve1/qemu/100/status/start";
        let listed = setup.list().await;
        let shown = listed[0].to_string();
        assert!(shown.contains(&format!("POST {start}")), "{shown}");
        assert!(shown.contains("the component says: VM 100 starts"), "{shown}");
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());

        setup.decide("approve", &id).await;
        let report = server.ok("hostile_plan", args).await;
        let attempts = report["attempts"].as_array().cloned().unwrap_or_default();
        let outcome = |what: &str| {
            attempts
                .iter()
                .find(|a| a["what"] == what)
                .map(|a| a["outcome"].clone())
                .unwrap_or_else(|| panic!("no {what} in {report}"))
        };
        assert_eq!(outcome("a stop where a start was approved"), "denied");
        assert_eq!(outcome("control"), "ok");
        assert_eq!(outcome("a second start beyond the plan"), "denied");
        let sent: Vec<_> = sim.writes().into_iter().map(|r| r.path).collect();
        assert_eq!(sent, [start]);
        let records = audit_records(&audit);
        let plan_refusals: Vec<&Value> = records
            .iter()
            .filter(|r| r["kind"] == "egress" && r["rule"] == "egress.plan")
            .collect();
        assert_eq!(plan_refusals.len(), 2, "{records:#?}");
        assert!(
            plan_refusals[0]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("where the plan has POST /nodes/pve1/qemu/100/status/start")),
            "{}",
            plan_refusals[0]
        );
        assert!(
            plan_refusals[1]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("beyond the 1 write(s) approved")),
            "{}",
            plan_refusals[1]
        );
    })
    .await;
}

/// Issue 21 F4: a `net0` change behind a long description is not approved
/// unseen. `approvals list` folds the description and says so (and shows
/// `net0` beside it); `approvals show ID` and `list --json` carry every
/// argument and the whole plan.
#[tokio::test]
async fn the_operator_sees_everything_an_approval_would_run() {
    within(async {
        let sim = simulator().await;
        let setup = Setup::new(
            "",
            "[policy.tools.pve_set_vm_config]\naction = \"require_approval\"\napprover = \"operator\"\n",
        );
        let server = Server::start(&sim, setup.opts()).await;
        let description = format!("routine note {}", "n".repeat(1024));
        let net0 = "virtio=BC:24:11:00:00:01,bridge=vmbr666,firewall=0";
        let args = json!({"vmid": 104, "config": {"description": description, "net0": net0}});
        let text = server.err("pve_set_vm_config", args).await;
        let id = approval_id(&text);
        assert!(sim.writes().is_empty(), "nothing is sent before approval");

        let table = setup.cli(Some(ADMIN_TOKEN), &["list"]).await;
        assert_eq!(table.code, Some(0), "{table:?}");
        let row = table
            .stdout
            .lines()
            .find(|l| l.starts_with(&id))
            .unwrap_or_else(|| panic!("no row for {id}: {}", table.stdout));
        assert!(
            row.contains(&format!(
                "[folded: {} chars; `pve-mcp approvals show {id}` shows all]",
                description.chars().count() - 120
            )),
            "{row}"
        );
        assert!(row.contains(net0), "net0 shows beside the fold: {row}");
        assert!(!row.contains(&description), "{row}");

        let shown = setup.cli(Some(ADMIN_TOKEN), &["show", &id]).await;
        assert_eq!(shown.code, Some(0), "{shown:?}");
        assert!(shown.stdout.contains(&description), "{}", shown.stdout);
        assert!(shown.stdout.contains(net0), "{}", shown.stdout);
        assert!(!shown.stdout.contains("folded"), "{}", shown.stdout);
        // The plan is the dry run's, whole: the PUT with both values.
        let plan_line = shown
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("plan "))
            .nth(1)
            .unwrap_or_default();
        assert!(plan_line.contains("PUT "), "{}", shown.stdout);
        assert!(plan_line.contains(net0), "{}", shown.stdout);
        assert!(plan_line.contains(&description), "{}", shown.stdout);

        let listed = setup.list().await;
        let record = listed
            .iter()
            .find(|a| a["id"] == id.as_str())
            .expect("the approval in --json");
        let arguments: Value =
            serde_json::from_str(record["arguments"].as_str().unwrap()).expect("complete JSON");
        assert_eq!(arguments["config"]["description"], description.as_str());
        assert_eq!(arguments["config"]["net0"], net0);
        let plan = record["plan"].as_str().expect("the plan");
        assert!(plan.contains(net0) && plan.contains(&description), "{plan}");

        let unknown = setup
            .cli(Some(ADMIN_TOKEN), &["show", "ap-ffffffffffffffff"])
            .await;
        assert_eq!(unknown.code, Some(1), "{unknown:?}");
        assert!(unknown.stderr.contains("no approval has the id"), "{unknown:?}");
        server.stop().await;
    })
    .await;
}
