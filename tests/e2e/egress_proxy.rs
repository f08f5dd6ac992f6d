//! `pve-mcp egress-proxy` against the simulator, over real HTTP: what a
//! component hosted elsewhere (jco, the wasmtime CLI) gets through it. The
//! proxy adds the credentials only to what its gate lets out, copies
//! Proxmox's reason phrase, audits every request, and never hands the
//! Proxmox token back.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::common::*;
use crate::http::{http_client, spawn_announcing};

/// A proxy token for the tests that set one.
pub const PROXY_TOKEN: &str = "proxy-0123456789abcdef-token";

/// A running `pve-mcp egress-proxy`.
pub struct Proxy {
    _child: tokio::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    http: reqwest::Client,
    log: Arc<Mutex<String>>,
    _scan: crate::secret_scan::ScanOnDrop,
    _dir: tempfile::TempDir,
}

impl Proxy {
    /// `pve-mcp egress-proxy --listen 127.0.0.1:0` for the simulator.
    pub async fn start(sim: &pve_sim::Simulator, opts: Opts) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let secrets = crate::secret_scan::Secrets::of(&opts);
        let cmd = command(
            sim,
            &opts,
            dir.path(),
            &["egress-proxy", "--listen", "127.0.0.1:0"],
        );
        let (child, base, log) = spawn_announcing(cmd, "pve-mcp: egress proxy ").await;
        Proxy {
            _child: child,
            base,
            http: http_client(),
            _scan: crate::secret_scan::ScanOnDrop {
                secrets,
                stderr: log.clone(),
            },
            log,
            _dir: dir,
        }
    }

    /// A proxy that needs [`PROXY_TOKEN`] in every request's path.
    pub async fn with_token(sim: &pve_sim::Simulator) -> Proxy {
        // Logging every request (-vv), so a token in a log line would show.
        let opts = Opts::default()
            .arg("-vv")
            .env("PVE_MCP_EGRESS_PROXY_TOKEN", PROXY_TOKEN);
        Proxy::start(sim, opts).await
    }

    /// `METHOD base+path`: the status, the reason-phrase header and the
    /// body as text.
    async fn send(&self, method: reqwest::Method, path: &str) -> (u16, Option<String>, String) {
        let response = self
            .http
            .request(method, format!("{}{path}", self.base))
            .send()
            .await
            .expect("the proxy answers");
        let status = response.status().as_u16();
        let reason = response
            .headers()
            .get("pve-mcp-reason-phrase")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        for header in ["authorization", "set-cookie"] {
            assert!(
                response.headers().get(header).is_none(),
                "{header} came back"
            );
        }
        (status, reason, response.text().await.unwrap_or_default())
    }

    async fn get(&self, path: &str) -> (u16, Option<String>, String) {
        self.send(reqwest::Method::GET, path).await
    }

    /// The status of `GET path` sent byte for byte, as a component's host
    /// may send it: an HTTP client library would resolve `..` and `%2e%2e`
    /// itself first.
    async fn raw_get(&self, path: &str) -> u16 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let authority = self.base.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        let head = String::from_utf8_lossy(&answer);
        head.split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {head}"))
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

fn token_of(request: &pve_sim::LoggedRequest) -> Option<String> {
    match &request.auth {
        pve_sim::AuthSeen::Token {
            token_id,
            secret_ok: true,
        } => Some(token_id.clone()),
        _ => None,
    }
}

#[tokio::test]
async fn reads_get_the_token_added_and_everything_else_is_gated() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let proxy = Proxy::start(
            &sim,
            Opts::default().env("PVE_MCP_AUDIT_PATH", audit.to_str().unwrap()),
        )
        .await;

        // A read goes out with the configured token, added by the proxy.
        sim.clear_requests();
        let (status, _, body) = proxy.get("/api2/json/version").await;
        assert_eq!(status, 200, "{body}\n{}", proxy.log());
        let data: Value = serde_json::from_str(&body).unwrap();
        assert!(data["data"]["version"].is_string(), "{data}");
        let seen = sim.requests();
        assert_eq!(seen.len(), 1);
        assert!(token_of(&seen[0]).is_some(), "{:?}", seen[0].auth);

        // Proxmox's error message travels in the reason-phrase header.
        let (status, reason, _) = proxy
            .get("/api2/json/nodes/pve1/qemu/999/status/current")
            .await;
        assert_eq!(status, 500);
        assert!(
            reason
                .as_deref()
                .is_some_and(|r| r.contains("does not exist")),
            "{reason:?}"
        );

        // Under the default read-only policy no write goes out; neither do
        // paths outside the API, encoded escapes, nor unknown clusters.
        sim.clear_requests();
        let post = proxy
            .send(
                reqwest::Method::POST,
                "/api2/json/nodes/pve1/qemu/104/status/start",
            )
            .await;
        assert_eq!(post.0, 403, "{post:?}");
        assert!(post.2.contains("refused by the egress proxy"), "{post:?}");
        for (path, want) in [
            (
                "/api2/json/nodes/pve1/qemu/100/%2e%2e/%2e%2e/%2e%2e/access/users",
                403,
            ),
            ("/api2/json/nodes/pve1/qemu/100/../../../access/users", 403),
            ("/api2/json/nodes/pve1%2Fqemu/100", 403),
            ("/api2/extjs/version", 400),
            ("/version", 400),
            ("/cluster/nope/api2/json/version", 404),
        ] {
            assert_eq!(proxy.raw_get(path).await, want, "{path}");
        }
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());
        // The default cluster by name is the same as none.
        let (status, _, _) = proxy.get("/cluster/default/api2/json/version").await;
        assert_eq!(status, 200);

        // Each request it decided is in the audit log, after the start
        // record that names the component.
        let records: Vec<Value> = std::fs::read_to_string(&audit)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(records[0]["kind"], "server-start");
        let proxied: Vec<&Value> = records
            .iter()
            .filter(|r| r["kind"] == "egress" && r["tool"] == "egress-proxy")
            .collect();
        assert_eq!(proxied.len(), 7, "{records:#?}");
        assert_eq!(proxied[0]["decision"], "allow");
        assert_eq!(proxied[0]["status"], 200);
        assert_eq!(proxied[0]["path"], "/api2/json/version");
        assert_eq!(proxied[2]["decision"], "deny");
        assert_eq!(proxied[2]["rule"], "egress.route");
        assert_eq!(proxied[3]["rule"], "egress.path");
        let (code, stdout, stderr) = crate::audit::verify(&[audit.to_str().unwrap()]).await;
        assert_eq!(code, Some(0), "{stdout}{stderr}");
    })
    .await;
}

#[tokio::test]
async fn writes_go_out_only_on_the_routes_of_tools_the_policy_allows() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("policy.toml");
        std::fs::write(
            &policy,
            "[policy.tools.pve_start_vm]\naction = \"allow\"\n\
             [policy.tools.pve_stop_vm]\naction = \"require_approval\"\n\
             [policy.tools.pve_api_request]\naction = \"allow\"\n",
        )
        .unwrap();
        let proxy = Proxy::start(
            &sim,
            Opts::default()
                .arg("--policy")
                .arg(policy.to_str().unwrap()),
        )
        .await;
        sim.clear_requests();
        let (status, _, body) = proxy
            .send(
                reqwest::Method::POST,
                "/api2/json/nodes/pve1/qemu/104/status/start",
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("UPID:pve1:"), "{body}");
        // Asking first is impossible here, and pve_api_request's one
        // request has no call to bind to: neither lets anything out.
        for (method, path) in [
            (
                reqwest::Method::POST,
                "/api2/json/nodes/pve1/qemu/104/status/stop",
            ),
            (reqwest::Method::DELETE, "/api2/json/nodes/pve1/qemu/104"),
            (
                reqwest::Method::PUT,
                "/api2/json/nodes/pve1/qemu/104/config",
            ),
            (
                reqwest::Method::POST,
                "/api2/json/nodes/localhost/qemu/104/status/start",
            ),
        ] {
            let (status, _, body) = proxy.send(method.clone(), path).await;
            assert_eq!(status, 403, "{method} {path}: {body}");
        }
        let writes: Vec<String> = sim
            .writes()
            .iter()
            .map(|w| format!("{} {}", w.method, w.api_path()))
            .collect();
        assert_eq!(writes, ["POST /nodes/pve1/qemu/104/status/start"]);
    })
    .await;
}

#[tokio::test]
async fn a_proxy_token_is_needed_when_set_and_loopback_is_the_only_place() {
    within(async {
        let sim = simulator().await;
        let proxy = Proxy::with_token(&sim).await;
        sim.clear_requests();
        for path in [
            "/api2/json/version".to_string(),
            "/token/wrong-0123456789abcdef/api2/json/version".to_string(),
            format!("/token/{}x/api2/json/version", PROXY_TOKEN),
        ] {
            let (status, _, body) = proxy.get(&path).await;
            assert_eq!(status, 401, "{path}: {body}");
            assert!(!body.contains(PROXY_TOKEN));
        }
        assert!(sim.requests().is_empty());
        for path in [
            format!("/token/{PROXY_TOKEN}/api2/json/version"),
            format!("/token/{PROXY_TOKEN}/cluster/default/api2/json/version"),
        ] {
            let (status, _, body) = proxy.get(&path).await;
            assert_eq!(status, 200, "{path}: {body}");
        }
        assert!(!proxy.log().contains(PROXY_TOKEN), "{}", proxy.log());

        // Anywhere but loopback is refused before anything listens, and a
        // weak token is refused naming its variable.
        let dir = tempfile::tempdir().unwrap();
        for (args, env, says) in [
            (
                vec!["egress-proxy", "--listen", "0.0.0.0:0"],
                vec![],
                "loopback only",
            ),
            (
                vec!["egress-proxy", "--listen", "127.0.0.1:0"],
                vec![("PVE_MCP_EGRESS_PROXY_TOKEN", "short")],
                "PVE_MCP_EGRESS_PROXY_TOKEN",
            ),
        ] {
            let mut opts = Opts::default();
            for (k, v) in env {
                opts = opts.env(k, v);
            }
            let out = command(&sim, &opts, dir.path(), &args)
                .stdin(Stdio::null())
                .output()
                .await
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{stderr}");
            assert!(stderr.contains(says), "{stderr}");
        }
    })
    .await;
}
