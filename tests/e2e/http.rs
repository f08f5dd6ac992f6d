//! MCP over Streamable HTTP: the real binary on 127.0.0.1, raw HTTP with
//! reqwest for the status codes the spec asks for, and the rmcp streamable
//! HTTP client for whole sessions.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common::*;

/// A bearer token for tests (never a real one).
pub const TOKEN: &str = "3f1c9a7e5b2d4f608e1a3c5b7d9f1e2a";
const INITIALIZE: &str = "initialize";

/// A reqwest client for plain HTTP (ring as the rustls provider, no proxy).
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("reqwest client")
}

/// A running `pve-mcp` serving Streamable HTTP.
pub struct HttpServer {
    child: tokio::process::Child,
    /// The MCP endpoint, e.g. `http://127.0.0.1:41234/mcp`.
    pub url: String,
    /// `scheme://host:port`.
    pub base: String,
    /// The bearer token clients send, if any.
    pub token: Option<String>,
    /// The client to talk to it with.
    pub http: reqwest::Client,
    log: Arc<Mutex<String>>,
    /// Scans the log (and audit log) for the test's secrets when dropped.
    _scan: crate::secret_scan::ScanOnDrop,
    _dir: tempfile::TempDir,
}

/// Starts `cmd` (stdin and stdout closed, stderr kept) and waits for the
/// stderr line that starts with `announce`: the child, the rest of that
/// line, and everything it logs, kept up to date.
pub async fn spawn_announcing(
    mut cmd: tokio::process::Command,
    announce: &str,
) -> (tokio::process::Child, String, Arc<Mutex<String>>) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawning pve-mcp");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let log = Arc::new(Mutex::new(String::new()));
    let found = tokio::time::timeout(Duration::from_secs(90), async {
        while let Ok(Some(line)) = lines.next_line().await {
            log.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(rest) = line.strip_prefix(announce) {
                return Some(rest.trim().to_string());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_else(|| {
        panic!(
            "pve-mcp never logged {announce:?}:\n{}",
            log.lock().unwrap()
        )
    });
    {
        let log = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                log.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
    }
    (child, found, log)
}

impl HttpServer {
    /// `pve-mcp serve --http 127.0.0.1:0` with `MCP_AUTH_TOKEN` = [`TOKEN`].
    pub async fn start(sim: &pve_sim::Simulator, opts: Opts) -> HttpServer {
        let opts = opts.env("MCP_AUTH_TOKEN", TOKEN);
        HttpServer::spawn(
            sim,
            opts,
            &["serve", "--http", "127.0.0.1:0"],
            http_client(),
        )
        .await
    }

    /// Runs `pve-mcp ARGS`, waits for its endpoint line and for `/readyz`.
    pub async fn spawn(
        sim: &pve_sim::Simulator,
        opts: Opts,
        args: &[&str],
        http: reqwest::Client,
    ) -> HttpServer {
        let dir = tempfile::tempdir().unwrap();
        let secrets = Secrets::of(&opts);
        let token = opts
            .env
            .iter()
            .find(|(k, _)| k == "MCP_AUTH_TOKEN")
            .map(|(_, v)| v.clone());
        let cmd = command(sim, &opts, dir.path(), args);
        let (child, url, log) = spawn_announcing(cmd, "pve-mcp: MCP endpoint ").await;
        let base = url.trim_end_matches("/mcp").to_string();
        let server = HttpServer {
            child,
            url,
            base,
            token,
            http,
            _scan: crate::secret_scan::ScanOnDrop {
                secrets,
                stderr: log.clone(),
            },
            log,
            _dir: dir,
        };
        server.wait_ready().await;
        server
    }

    async fn wait_ready(&self) {
        let url = format!("{}/readyz", self.base);
        wait_until(
            Lazy(|| format!("pve-mcp to answer {url}; it logged:\n{}", self.log())),
            Duration::from_secs(60),
            async || {
                let answer = self.http.get(&url).send().await;
                answer.is_ok_and(|r| r.status() == 200).then_some(())
            },
        )
        .await
    }

    /// Waits for a log line containing `needle`: the log is read from the
    /// server's stderr as it comes, so a line may trail the answer it is
    /// about.
    pub async fn expect_log(&self, needle: &str) {
        wait_until(
            Lazy(|| format!("the server to log {needle:?}; it logged:\n{}", self.log())),
            Duration::from_secs(30),
            async || self.log().contains(needle).then_some(()),
        )
        .await
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// A POST of one JSON-RPC message with the headers clients send.
    pub fn post(&self, message: &Value) -> reqwest::RequestBuilder {
        self.post_as(self.token.as_deref(), message)
    }

    /// The same with this bearer token (or none).
    pub fn post_as(&self, token: Option<&str>, message: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r
    }

    /// A POST within a session, with the protocol version header.
    pub fn post_in(&self, session: &str, message: &Value) -> reqwest::RequestBuilder {
        self.post(message)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
    }

    /// Opens a session by hand (initialize, then initialized); its id.
    pub async fn session(&self) -> String {
        let r = self
            .post(&initialize_request(1))
            .send()
            .await
            .expect("initialize");
        assert_eq!(r.status(), 200, "{}", self.log());
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        let messages = messages(r).await;
        assert_eq!(messages[0]["result"]["protocolVersion"], "2025-11-25");
        let r = self
            .post_in(
                &id,
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        id
    }

    /// An rmcp client session with this server's token.
    pub async fn client(&self) -> RunningService<RoleClient, ()> {
        self.client_with(self.token.as_deref())
            .await
            .unwrap_or_else(|e| panic!("rmcp client could not connect: {e}\n{}", self.log()))
    }

    /// An rmcp client session with this token (or none).
    pub async fn client_with(
        &self,
        token: Option<&str>,
    ) -> Result<RunningService<RoleClient, ()>, rmcp::service::ClientInitializeError> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.clone());
        if let Some(t) = token {
            config = config.auth_header(t);
        }
        let transport = StreamableHttpClientTransport::with_client(self.http.clone(), config);
        ().serve(transport).await
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the server is running")
    }

    /// Sends a signal to the server process.
    pub fn signal(&self, signal: &str) {
        let pid = self.pid();
        let status = std::process::Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .expect("running kill");
        assert!(status.success());
    }

    /// Waits for the process to exit.
    pub async fn wait(&mut self) -> std::process::ExitStatus {
        tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("pve-mcp did not exit")
            .unwrap()
    }
}

/// An `initialize` request for 2025-11-25.
pub fn initialize_request(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": INITIALIZE, "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "e2e-raw", "version": "1"}}})
}

/// A `tools/call` request.
pub fn call_request(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
}

/// The JSON-RPC messages of a response: an SSE stream's `data:` events or
/// a JSON body.
pub async fn messages(response: reqwest::Response) -> Vec<Value> {
    let sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
    let body = response.text().await.expect("response body");
    Secrets::fixed().check("an HTTP response", &body);
    if !sse {
        return vec![serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))];
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect()
}

/// The JSON error body pve-mcp's own rejections carry.
async fn error_message(response: reqwest::Response) -> String {
    let body: Value = response.json().await.expect("a JSON-RPC error body");
    Secrets::fixed().check("an HTTP error", &body.to_string());
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    body["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message: {body}"))
        .to_string()
}

#[tokio::test]
async fn missing_or_wrong_tokens_get_401_with_a_bearer_challenge() {
    within(async {
        let sim = simulator().await;
        // Everything at trace level: the token must still appear nowhere.
        let server = HttpServer::start(&sim, Opts::default().env("RUST_LOG", "trace")).await;
        let init = initialize_request(1);
        let no_token = server.post_as(None, &init).send().await.unwrap();
        assert_eq!(no_token.status(), 401);
        let challenge = no_token.headers()["www-authenticate"].to_str().unwrap();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
        assert!(error_message(no_token).await.contains("bearer token"));
        let wrong = server
            .post_as(Some("not-the-token-0123456789abcdef"), &init)
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401);
        let challenge = wrong.headers()["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.starts_with("Bearer") && challenge.contains("invalid_token"),
            "{challenge}"
        );
        // The rmcp client fails the same way; with the token it works.
        assert!(server.client_with(None).await.is_err());
        assert!(
            server
                .client_with(Some("not-the-token-0123456789abcdef"))
                .await
                .is_err()
        );
        let client = server.client().await;
        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), catalog().len());
        let result = client
            .call_tool(
                CallToolRequestParams::new("pve_get_vm_status")
                    .with_arguments(json!({"vmid": 100}).as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(false), "{result:?}");
        assert_eq!(result.structured_content.unwrap()["vmid"], 100);
        // Health checks need no token.
        let health = server
            .http
            .get(format!("{}/healthz", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status(), 200);
        // One structured line per request, naming the token, never showing it.
        let log = server.log();
        assert!(
            log.contains("http request")
                && log.contains("status=401")
                && log.contains("token=\"default\""),
            "{log}"
        );
        assert!(
            log.contains("tool call") && log.contains("pve_get_vm_status"),
            "{log}"
        );
        assert!(
            !log.contains(TOKEN),
            "the bearer token reached the log:\n{log}"
        );
        assert!(!log.contains(ADMIN_TOKEN_SECRET), "{log}");
        client.cancel().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn named_tokens_are_logged_by_name_and_cannot_share_a_session() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let bob_file = dir.path().join("bob");
        std::fs::write(&bob_file, "b0b-b0b-b0b-b0b-b0b-b0b-b0b\n").unwrap();
        let config = dir.path().join("pve-mcp.toml");
        std::fs::write(
            &config,
            format!(
                "[http]\nlisten = \"127.0.0.1:0\"\n[http.tokens]\nalice = \"{TOKEN}\"\nbob_file = \"{}\"\n",
                bob_file.display()
            ),
        )
        .unwrap();
        let opts = Opts::default().arg("--config").arg(config.to_str().unwrap());
        // The [http] listen key alone selects Streamable HTTP.
        let mut server = HttpServer::spawn(&sim, opts, &["serve"], http_client()).await;
        server.token = Some(TOKEN.into());
        let alice = server.session().await;
        let bob_uses_alice = server
            .post_as(
                Some("b0b-b0b-b0b-b0b-b0b-b0b-b0b"),
                &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
            )
            .header("mcp-session-id", &alice)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(
            bob_uses_alice.status(),
            404,
            "a session belongs to the token that opened it"
        );
        let alice_call = server
            .post_in(&alice, &call_request(3, "pve_get_version", json!({})))
            .send()
            .await
            .unwrap();
        assert_eq!(alice_call.status(), 200);
        let reply = messages(alice_call).await;
        assert_eq!(reply.last().unwrap()["result"]["isError"], false, "{reply:?}");
        let bob = server
            .client_with(Some("b0b-b0b-b0b-b0b-b0b-b0b-b0b"))
            .await
            .unwrap();
        bob.call_tool(CallToolRequestParams::new("pve_get_version"))
            .await
            .unwrap();
        let log = server.log();
        let call_lines: Vec<&str> = log.lines().filter(|l| l.contains("tool call")).collect();
        assert!(
            call_lines
                .iter()
                .any(|l| l.contains("token=\"alice\"") && l.contains(&alice)),
            "the audit line names alice's token and session: {call_lines:#?}"
        );
        assert!(
            call_lines.iter().any(|l| l.contains("token=\"bob\"")),
            "{call_lines:#?}"
        );
        assert!(!log.contains("b0b-b0b-b0b"), "{log}");
        bob.cancel().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn foreign_origin_gets_403_and_a_rebinding_host_is_refused() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(&sim, Opts::default()).await;
        let init = initialize_request(1);
        let r = server
            .post(&init)
            .header("origin", "http://evil.example.com")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        assert!(error_message(r).await.contains("allowed_origins"));
        let r = server
            .post(&init)
            .header("host", "evil.example.com")
            .send()
            .await
            .unwrap();
        assert!(r.status().is_client_error(), "{}", r.status());
        assert!(error_message(r).await.contains("allowed_hosts"));
        // The conformance suite's DNS-rebinding probe: both at once.
        let r = server
            .post(&init)
            .header("host", "evil.example.com")
            .header("origin", "http://evil.example.com")
            .send()
            .await
            .unwrap();
        assert!(r.status().is_client_error(), "{}", r.status());
        // The server's own origin on its bound port is fine.
        let r = server
            .post(&init)
            .header("origin", server.base.as_str())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{}", server.log());
        // Configured lists replace the defaults.
        let custom = HttpServer::start(
            &sim,
            Opts::default()
                .env("MCP_ALLOWED_ORIGINS", "https://agents.example.com")
                .env("MCP_ALLOWED_HOSTS", "127.0.0.1"),
        )
        .await;
        let r = custom
            .post(&init)
            .header("origin", "https://agents.example.com")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let r = custom
            .post(&init)
            .header("origin", custom.base.as_str())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
    })
    .await;
}

#[tokio::test]
async fn sessions_follow_the_spec_400_404_405_202() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(&sim, Opts::default()).await;
        let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
        // A request other than initialize without a session id: 400.
        let r = server.post(&ping).send().await.unwrap();
        assert_eq!(r.status(), 400);
        let session = server.session().await;
        // A notification: 202 and no body.
        let r = server
            .post_in(
                &session,
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 77}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        assert!(r.bytes().await.unwrap().is_empty());
        // An unsupported MCP-Protocol-Version: 400.
        let r = server
            .post(&ping)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "1999-01-01")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        // Each supported version is accepted on the header.
        for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
            let r = server
                .post(&ping)
                .header("mcp-session-id", &session)
                .header("mcp-protocol-version", version)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{version}");
            assert_eq!(messages(r).await[0]["result"], json!({}), "{version}");
        }
        // GET opens the server's stream for the session.
        let mut get = server
            .http
            .get(&server.url)
            .bearer_auth(TOKEN)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), 200);
        assert_eq!(get.headers()["content-type"], "text/event-stream");
        let first = tokio::time::timeout(Duration::from_secs(10), get.chunk())
            .await
            .expect("the stream sends its priming event")
            .unwrap();
        assert!(first.is_some());
        drop(get);
        // Other methods: 405.
        let r = server
            .http
            .put(&server.url)
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 405);
        // DELETE ends the session; then 404.
        let r = server
            .http
            .delete(&server.url)
            .bearer_auth(TOKEN)
            .header("mcp-session-id", &session)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "the SDKs expect 200 or 204");
        let r = server
            .post(&ping)
            .header("mcp-session-id", &session)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
        // Versions are negotiated on initialize as on stdio.
        for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
            let mut init = initialize_request(1);
            init["params"]["protocolVersion"] = json!(version);
            let r = server.post(&init).send().await.unwrap();
            assert_eq!(r.status(), 200);
            assert_eq!(messages(r).await[0]["result"]["protocolVersion"], version);
        }
    })
    .await;
}

#[tokio::test]
async fn bodies_over_the_limit_get_413() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(&sim, Opts::default().env("MCP_MAX_BODY_KIB", "1")).await;
        let big = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "x".repeat(2048), "version": "1"}}});
        let r = server.post(&big).send().await.unwrap();
        assert_eq!(r.status(), 413);
        assert!(error_message(r).await.contains("max_body_kib"));
        let session = server.session().await;
        let big_call = call_request(2, "pve_list_vms", json!({"name": "x".repeat(2048)}));
        let r = server.post_in(&session, &big_call).send().await.unwrap();
        assert_eq!(r.status(), 413);
        // The session and the server go on.
        let r = server
            .post_in(&session, &call_request(3, "pve_get_version", json!({})))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    })
    .await;
}

#[tokio::test]
async fn non_loopback_without_a_token_is_refused_before_listening() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        // 192.0.2.1 (TEST-NET-1) is not an address of this machine: were
        // the check missing, binding would fail rather than listen.
        // (arguments, environment, the key the error names)
        type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
        let cases: [Case; 2] = [
            (&["serve", "--http", "192.0.2.1:8000"], &[], "--http"),
            (
                &["serve"],
                &[
                    ("MCP_TRANSPORT", "streamable-http"),
                    ("MCP_HOST", "192.0.2.1"),
                ],
                "MCP_HOST",
            ),
        ];
        for (args, env, key) in cases {
            let mut opts = Opts::default();
            for (k, v) in env {
                opts = opts.env(k, v);
            }
            let out = command(&sim, &opts, dir.path(), args)
                .stdin(Stdio::null())
                .output()
                .await
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{stderr}");
            assert!(
                stderr.contains(key)
                    && stderr.contains("not a loopback address")
                    && stderr.contains("MCP_AUTH_TOKEN"),
                "{stderr}"
            );
            assert!(!stderr.contains("cannot listen"), "{stderr}");
        }
        // A weak token is refused too, without being echoed.
        let out = command(
            &sim,
            &Opts::default().env("MCP_AUTH_TOKEN", "hunter2"),
            dir.path(),
            &["serve", "--http", "127.0.0.1:0"],
        )
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("MCP_AUTH_TOKEN") && stderr.contains("openssl rand -hex 32"),
            "{stderr}"
        );
        assert!(!stderr.contains("hunter2"), "{stderr}");
    })
    .await;
}

#[tokio::test]
async fn fifty_sessions_each_get_their_own_answers() {
    within(async {
        let sim = pve_sim::Simulator::start(pve_sim::SimConfig {
            scenario: pve_sim::Scenario::Large { guests: 120 },
            schema_path: Some(schema_path()),
            ..pve_sim::SimConfig::default()
        })
        .await
        .unwrap();
        let server = Arc::new(HttpServer::start(&sim, Opts::default()).await);
        // Guests 1000.. on the online nodes (pve3, every third, is offline).
        let vmids: Vec<u64> = (0..)
            .filter(|i| i % 3 != 2)
            .map(|i| 1000 + i)
            .take(50)
            .collect();
        let mut tasks = Vec::new();
        for vmid in vmids.clone() {
            let server = server.clone();
            tasks.push(tokio::spawn(async move {
                let client = server.client().await;
                for _ in 0..3 {
                    let result = client
                        .call_tool(
                            CallToolRequestParams::new("pve_get_vm_status")
                                .with_arguments(json!({"vmid": vmid}).as_object().unwrap().clone()),
                        )
                        .await
                        .unwrap();
                    assert_eq!(result.is_error, Some(false), "{vmid}: {result:?}");
                    let got = result.structured_content.unwrap()["vmid"].as_u64();
                    assert_eq!(got, Some(vmid), "session for {vmid} got another guest");
                }
                client.cancel().await.unwrap();
                vmid
            }));
        }
        let mut done = Vec::new();
        for task in tasks {
            done.push(task.await.expect("a session failed"));
        }
        assert_eq!(done, vmids, "every session finished");
        let log = server.log();
        let sessions: std::collections::HashSet<&str> = log
            .lines()
            .filter(|l| l.contains("tool call"))
            .filter_map(|l| l.split("session=").nth(1))
            .filter_map(|s| s.split_whitespace().next())
            .collect();
        assert_eq!(
            sessions.len(),
            50,
            "one session per client in the audit lines"
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_slow_proxmox_request_does_not_block_another_session() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(&sim, Opts::default()).await;
        sim.add_fault(pve_sim::Fault {
            path_prefix: "/cluster/resources".into(),
            status: 0,
            reason: String::new(),
            times: Some(1),
            // Long enough that the other session's call surely ends first.
            delay: Some(Duration::from_secs(8)),
            ..Default::default()
        });
        let slow_client = server.client().await;
        let slow = tokio::spawn(async move {
            let r = slow_client
                .call_tool(CallToolRequestParams::new("pve_list_vms"))
                .await
                .unwrap();
            slow_client.cancel().await.unwrap();
            r
        });
        wait_for_request(&sim).await;
        // Another session's call (node and type given: no resource lookup)
        // finishes while the first one's request is still held.
        let fast = server.client().await;
        let result = fast
            .call_tool(
                CallToolRequestParams::new("pve_get_vm_status").with_arguments(
                    json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"})
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
            )
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(false));
        let held = sim
            .requests()
            .into_iter()
            .find(|r| r.path.ends_with("/cluster/resources"))
            .unwrap();
        assert!(
            !held.completed,
            "the slow request had already finished, so this proves nothing"
        );
        let slow = slow.await.unwrap();
        assert_eq!(slow.is_error, Some(false));
        fast.cancel().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_2026_client_discovers_and_calls_without_a_session() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(&sim, Opts::default()).await;
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "e2e-modern", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let modern = |message: Value, method: &str| {
            server
                .post(&message)
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method)
        };
        let r = modern(
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
            "server/discover",
        )
        .send()
        .await
        .unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.headers().get("mcp-session-id").is_none(), "no session in 2026-07-28");
        let discovered = messages(r).await;
        let versions = discovered[0]["result"]["supportedVersions"].as_array().unwrap().clone();
        for v in ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"] {
            assert!(versions.iter().any(|x| x == v), "{v}: {versions:?}");
        }
        let mut call = call_request(2, "pve_get_vm_status", json!({"vmid": 102}));
        call["params"]["_meta"] = meta.clone();
        let r = modern(call.clone(), "tools/call")
            .header("mcp-name", "pve_get_vm_status")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let reply = messages(r).await;
        assert_eq!(reply.last().unwrap()["result"]["structuredContent"]["vmid"], 102);
        // The bearer token is still required.
        let r = server
            .post_as(None, &call)
            .header("mcp-protocol-version", "2026-07-28")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        server.expect_log("session=stateless").await;
    })
    .await;
}

#[tokio::test]
async fn a_made_up_session_id_gets_404_even_on_the_stateless_path() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(&sim, Opts::default()).await;
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "e2e-modern", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let mut call = call_request(2, "pve_get_vm_status", json!({"vmid": 102}));
        call["params"]["_meta"] = meta;
        let stateless = |session: Option<&str>| {
            let mut r = server
                .post(&call)
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "pve_get_vm_status");
            if let Some(id) = session {
                r = r.header("mcp-session-id", id);
            }
            r
        };
        // A session id per call would be a fresh rate-limit bucket, audit
        // session and approval binding each time.
        let r = stateless(Some("made-up-0123456789")).send().await.unwrap();
        assert_eq!(r.status(), 404, "{}", server.log());
        // One this server issued still works.
        let session = server.session().await;
        let r = stateless(Some(&session)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{}", server.log());
        let reply = messages(r).await;
        assert_eq!(
            reply.last().unwrap()["result"]["structuredContent"]["vmid"],
            102
        );
        // Without a session header the caller's session is named after
        // its token.
        let r = stateless(None).send().await.unwrap();
        assert_eq!(r.status(), 200, "{}", server.log());
        server.expect_log("session=stateless:default").await;
        assert!(
            !server.log().contains("session=made-up"),
            "the made-up session reached a tool call:\n{}",
            server.log()
        );
    })
    .await;
}

#[tokio::test]
async fn bad_settings_exit_2_over_http_as_over_stdio() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("pve-mcp.toml");
        // One setting read when the config loads, one only when serving
        // starts (the audit file is opened then).
        let cases = [
            ("on_failure = \"bogus\"", "audit.on_failure"),
            ("path = \"/nonexistent-dir/audit.jsonl\"", "audit.path"),
        ];
        for (body, key) in cases {
            std::fs::write(&config, format!("[audit]\n{body}\n")).unwrap();
            let opts = Opts::default()
                .env("MCP_AUTH_TOKEN", TOKEN)
                .arg("--config")
                .arg(config.to_str().unwrap());
            let out = command(&sim, &opts, dir.path(), &["serve", "--http", "127.0.0.1:0"])
                .stdin(Stdio::null())
                .output()
                .await
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{body}: {stderr}");
            assert!(stderr.contains(key), "{body}: {stderr}");
            assert!(stderr.contains("fix:"), "{body}: {stderr}");
        }
    })
    .await;
}
