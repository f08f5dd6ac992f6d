//! Three `pve-mcp serve --http` replicas sharing one real `redis-server`,
//! behind a real nginx running `deploy/nginx/pve-mcp.conf.template` on
//! loopback, the topology of docs/deploy.md: 2026-07-28 clients spread over
//! the replicas, sessions stay on the replica that opened them, a global
//! rate limit is exact across replicas, an approval given once is honoured
//! by whichever replica gets the retry, and killing a replica loses no
//! acknowledged call.
//!
//! Which replica answered is read from each replica's own request log, so
//! nothing is added to the responses for the test's sake.

use std::collections::{BTreeSet, HashMap};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::approvals::approval_id;
use crate::common::*;
use crate::http::{HttpServer, call_request, http_client, initialize_request};
use crate::policy_harness::{Redis, free_port};

/// The agents' bearer token (named `agent` on every replica).
const AGENT: &str = crate::http::TOKEN;
const ADMIN_TOKEN: &str = "e2e-replicas-admin-token-7c2d";

/// Where Debian installs nginx; a non-root `PATH` often lacks it.
const SBIN_NGINX: &str = "/usr/sbin/nginx";

fn nginx_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("nginx"))
        .chain([PathBuf::from(SBIN_NGINX)])
        .find(|p| p.is_file())
}

/// Whether redis-server and nginx are here (see [`installed`]).
fn available() -> bool {
    Redis::available()
        && installed(
            nginx_binary().is_some(),
            "nginx",
            "install nginx (Debian: apt-get install nginx-light)",
        )
}

/// A real nginx of our own, in the foreground, on a free loopback port,
/// serving deploy/'s config for these replicas; killed when dropped.
struct Nginx {
    child: std::process::Child,
    /// The MCP endpoint through nginx.
    url: String,
    _dir: tempfile::TempDir,
}

impl Nginx {
    async fn start(replicas: &[String]) -> Nginx {
        let dir = tempfile::tempdir().expect("temp dir");
        // Started as root, nginx's workers run as nobody: let them in.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod the nginx dir");
        let template =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/nginx/pve-mcp.conf.template");
        let port = free_port();
        let mut site = std::fs::read_to_string(&template)
            .expect("reading deploy/nginx/pve-mcp.conf.template")
            .replace("${PVE_MCP_LISTEN}", &format!("127.0.0.1:{port}"));
        for (n, addr) in replicas.iter().enumerate() {
            site = site.replace(&format!("${{PVE_MCP_REPLICA_{}}}", n + 1), addr);
        }
        assert!(!site.contains("${"), "a placeholder was left:\n{site}");
        let d = dir.path().display();
        std::fs::write(dir.path().join("pve-mcp.conf"), site).unwrap();
        // The packaged nginx.conf's job, with every path in the temp dir.
        let conf = dir.path().join("nginx.conf");
        std::fs::write(
            &conf,
            format!(
                "worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
                 events {{ worker_connections 1024; }}\n\
                 http {{\n  access_log {d}/access.log;\n  client_body_temp_path {d}/body;\n  \
                 proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  \
                 scgi_temp_path {d}/scgi;\n  include {d}/pve-mcp.conf;\n}}\n"
            ),
        )
        .unwrap();
        let mut child = std::process::Command::new(nginx_binary().expect("nginx"))
            .arg("-c")
            .arg(&conf)
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting nginx");
        let log = dir.path().join("error.log");
        wait_until(
            format!("nginx to listen on 127.0.0.1:{port}"),
            Duration::from_secs(30),
            async || {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!(
                        "nginx exited ({status}):\n{}",
                        std::fs::read_to_string(&log).unwrap_or_default()
                    );
                }
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .ok()
            },
        )
        .await;
        Nginx {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            _dir: dir,
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One replica: the server and its config file (for `pve-mcp approvals`).
struct Replica {
    server: HttpServer,
    config: PathBuf,
    _dir: tempfile::TempDir,
}

/// The topology: simulator, Redis, three replicas (`r1-`, `r2-`, `r3-`
/// session ids) and nginx in front.
struct Topology {
    sim: pve_sim::Simulator,
    replicas: Vec<Replica>,
    agent: Agent,
    _nginx: Nginx,
    _redis: Redis,
}

impl Topology {
    /// Starts it all; `policy` adds `[policy.tools.*]` tables.
    async fn start(policy: &str) -> Topology {
        let sim = simulator().await;
        let redis = Redis::start().await;
        let spawn = |n: usize| {
            let dir = tempfile::tempdir().expect("temp dir");
            let config = dir.path().join("pve-mcp.toml");
            std::fs::write(
                &config,
                format!(
                    "[http]\nlisten = \"127.0.0.1:0\"\nsession_id_prefix = \"r{n}-\"\nallowed_hosts = [\"127.0.0.1\"]\n\
                     max_calls_per_session = 64\n[http.tokens]\nagent = \"{AGENT}\"\n\
                     [approvals]\nadmin_socket = \"{}\"\n\
                     [policy]\nstate = \"{}\"\n{policy}",
                    dir.path().join("admin.sock").display(),
                    redis.url()
                ),
            )
            .unwrap();
            let opts = Opts::default()
                .arg("--config")
                .arg(config.to_str().unwrap())
                .env("PVE_MCP_ADMIN_TOKEN", ADMIN_TOKEN);
            let sim = &sim;
            async move {
                let server = HttpServer::spawn(sim, opts, &["serve"], http_client()).await;
                Replica {
                    server,
                    config,
                    _dir: dir,
                }
            }
        };
        let (r1, r2, r3) = tokio::join!(spawn(1), spawn(2), spawn(3));
        let replicas = vec![r1, r2, r3];
        let addrs: Vec<String> = replicas
            .iter()
            .map(|r| r.server.base.trim_start_matches("http://").to_string())
            .collect();
        let nginx = Nginx::start(&addrs).await;
        Topology {
            agent: Agent {
                http: http_client(),
                url: nginx.url.clone(),
            },
            sim,
            replicas,
            _nginx: nginx,
            _redis: redis,
        }
    }

    /// Session-less POSTs each replica has answered so far.
    fn stateless_counts(&self) -> Vec<usize> {
        let lines = |log: String| {
            log.lines()
                .filter(|l| {
                    l.contains("http request")
                        && l.contains("method=POST")
                        && !l.contains("session=")
                })
                .count()
        };
        self.replicas
            .iter()
            .map(|r| lines(r.server.log()))
            .collect()
    }

    /// Waits until the replicas' logs (which trail the answers) account for
    /// `total` session-less POSTs; the count per replica.
    async fn stateless_served(&self, total: usize) -> Vec<usize> {
        wait_until(
            Lazy(|| {
                format!(
                    "{total} stateless requests in the logs: {:?}",
                    self.stateless_counts()
                )
            }),
            Duration::from_secs(30),
            async || {
                let counts = self.stateless_counts();
                (counts.iter().sum::<usize>() >= total).then_some(counts)
            },
        )
        .await
    }

    /// A stateless call, and the replica that answered it.
    async fn call_on(&self, tool: &str, args: Value) -> (Result<Value, String>, usize) {
        let before = self.stateless_counts();
        let result = self.agent.call(tool, args).await;
        let after = self
            .stateless_served(before.iter().sum::<usize>() + 1)
            .await;
        let replica = (0..3).find(|&i| after[i] > before[i]).unwrap();
        (result, replica)
    }

    /// The request log lines that name `session`, per replica.
    fn session_lines(&self, session: &str) -> Vec<usize> {
        self.replicas
            .iter()
            .map(|r| {
                r.server
                    .log()
                    .lines()
                    .filter(|l| l.contains("http request") && l.contains(session))
                    .count()
            })
            .collect()
    }

    /// `pve-mcp approvals approve ID` against replica `n`'s admin endpoint.
    async fn approve_on(&self, n: usize, id: &str) {
        let out = tokio::process::Command::new(BIN)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PVE_MCP_ADMIN_TOKEN", ADMIN_TOKEN)
            .arg("--config")
            .arg(&self.replicas[n].config)
            .args(["approvals", "approve", id])
            .stdin(Stdio::null())
            .output()
            .await
            .expect("running pve-mcp approvals");
        assert!(out.status.success(), "approvals approve {id}: {out:?}");
    }
}

/// The session ids in a replica's request log lines.
fn logged_sessions(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("http request"))
        .filter_map(|l| {
            l.split("session=\"")
                .nth(1)?
                .split('"')
                .next()
                .map(str::to_string)
        })
        .collect()
}

/// What the replicas' prefix says about a session id: replica 0, 1 or 2.
fn home(session: &str) -> usize {
    ["r1-", "r2-", "r3-"]
        .iter()
        .position(|p| session.starts_with(p))
        .unwrap_or_else(|| panic!("{session} has no replica prefix"))
}

/// An MCP client through nginx, speaking raw HTTP.
#[derive(Clone)]
struct Agent {
    http: reqwest::Client,
    url: String,
}

impl Agent {
    fn post(&self, session: Option<&str>, message: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(AGENT)
            .body(message.to_string());
        if let Some(id) = session {
            r = r
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-11-25");
        }
        r
    }

    /// A 2026-07-28 `tools/call` (no session, the version in `_meta`): its
    /// result, or what went wrong on the way.
    async fn call(&self, tool: &str, args: Value) -> Result<Value, String> {
        let mut call = call_request(1, tool, args);
        call["params"]["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "e2e-replicas", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let request = self
            .post(None, &call)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool);
        result_of(request.send().await).await
    }

    /// `initialize` and `initialized` through nginx; the session id.
    async fn open_session(&self) -> String {
        let r = self
            .post(None, &initialize_request(1))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = self.post(Some(&id), &initialized).send().await.unwrap();
        assert_eq!(
            r.status(),
            202,
            "initialized in session {id} did not reach its replica"
        );
        id
    }

    /// A `tools/call` in a session.
    async fn call_in(&self, session: &str, tool: &str) -> Result<Value, String> {
        let call = call_request(2, tool, json!({}));
        result_of(self.post(Some(session), &call).send().await).await
    }
}

/// The JSON-RPC result in a response (SSE or JSON), or why there is none:
/// an HTTP error, a cut stream, no result.
async fn result_of(sent: reqwest::Result<reqwest::Response>) -> Result<Value, String> {
    let response = sent.map_err(|e| format!("no response: {e}"))?;
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| format!("HTTP {status}, body cut: {e}"))?;
    Secrets::fixed().check("a response through nginx", &body);
    if status != 200 {
        return Err(format!("HTTP {status}: {body}"));
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(body.starts_with('{').then_some(body.as_str()))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find_map(|m| m.get("result").cloned())
        .ok_or_else(|| format!("HTTP {status} without a result: {body}"))
}

fn succeeded(result: &Value) -> bool {
    result["isError"] == false
}

fn result_text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn stateless_clients_spread_over_the_replicas_and_sessions_stay_on_theirs() {
    if !available() {
        return;
    }
    within(async {
        let t = Topology::start("").await;
        for vmid in [100, 101, 102].repeat(3) {
            let result = t
                .agent
                .call("pve_get_vm_status", json!({"vmid": vmid}))
                .await
                .unwrap();
            assert_eq!(result["structuredContent"]["vmid"], vmid, "{result}");
        }
        let served = t.stateless_served(9).await;
        assert!(
            served.iter().all(|&n| n > 0),
            "not every replica served: {served:?}"
        );

        // Sessions open anywhere, and each replica opened some...
        let mut sessions = Vec::new();
        for _ in 0..6 {
            sessions.push(t.agent.open_session().await);
        }
        let homes: BTreeSet<usize> = sessions.iter().map(|s| home(s)).collect();
        assert_eq!(homes.len(), 3, "{sessions:?}");
        // ...then all their requests go to that replica and no other.
        for s in &sessions {
            for _ in 0..3 {
                let result = t.agent.call_in(s, "pve_get_version").await.unwrap();
                assert!(succeeded(&result), "{result}");
            }
        }
        for s in &sessions {
            let mut expected = vec![0; 3];
            expected[home(s)] = 5; // initialize, initialized, 3 calls
            wait_until(
                Lazy(|| {
                    format!(
                        "session {s}'s 5 requests on its replica: {:?}",
                        t.session_lines(s)
                    )
                }),
                Duration::from_secs(30),
                async || (t.session_lines(s) == expected).then_some(()),
            )
            .await;
        }

        // The rmcp client, SSE stream and all, through nginx. It would
        // quietly start over after a misrouted request's 404; none is logged.
        let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
            http_client(),
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                t.agent.url.clone(),
            )
            .auth_header(AGENT),
        );
        let client = rmcp::ServiceExt::serve((), transport)
            .await
            .expect("rmcp client through nginx");
        assert_eq!(
            client.list_all_tools().await.unwrap().len(),
            catalog().len()
        );
        for _ in 0..3 {
            let result = client
                .call_tool(rmcp::model::CallToolRequestParams::new("pve_get_version"))
                .await
                .unwrap();
            assert_eq!(result.is_error, Some(false), "{}", text(&result));
        }
        client.cancel().await.unwrap();
        // Its session (the one not opened by hand) was on one replica only.
        let theirs: BTreeSet<String> = t
            .replicas
            .iter()
            .flat_map(|r| logged_sessions(&r.server.log()))
            .filter(|s| !sessions.contains(s))
            .collect();
        assert_eq!(theirs.len(), 1, "{theirs:?}");
        let lines = t.session_lines(theirs.first().unwrap());
        assert_eq!(lines.iter().filter(|&&n| n > 0).count(), 1, "{lines:?}");
        for (n, r) in t.replicas.iter().enumerate() {
            assert!(
                !r.server.log().contains("status=404"),
                "replica {n}:\n{}",
                r.server.log()
            );
        }
    })
    .await;
}

#[tokio::test]
async fn a_global_rate_limit_is_exact_across_replicas() {
    if !available() {
        return;
    }
    within(async {
        let t = Topology::start("[policy.tools.pve_get_version]\nrate_limit_global = \"10/day\"\n")
            .await;
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..30 {
            let agent = t.agent.clone();
            calls.spawn(async move { agent.call("pve_get_version", json!({})).await.unwrap() });
        }
        let (mut ok, mut limited) = (0, 0);
        while let Some(result) = calls.join_next().await {
            let result = result.unwrap();
            if succeeded(&result) {
                ok += 1;
            } else {
                let text = result_text(&result);
                assert!(
                    text.starts_with("Rate limit reached") && text.contains("rate_limit_global"),
                    "{text}"
                );
                limited += 1;
            }
        }
        assert_eq!((ok, limited), (10, 20));
        let upstream = t
            .sim
            .requests()
            .iter()
            .filter(|r| r.path == "/api2/json/version")
            .count();
        assert_eq!(upstream, 10, "only the allowed calls reach Proxmox");
        let served = t.stateless_served(30).await;
        assert!(
            served.iter().all(|&n| n > 0),
            "not every replica counted: {served:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn an_approval_given_once_is_honoured_by_whichever_replica_gets_the_retry() {
    if !available() {
        return;
    }
    within(async {
        let t = Topology::start(
            "[policy.tools.pve_get_vm_status]\naction = \"require_approval\"\napprover = \"operator\"\n",
        )
        .await;
        let runs = |vmid: u64| {
            let path = format!("/{vmid}/status/current");
            t.sim.requests().iter().filter(|r| r.path.ends_with(&path)).count()
        };
        let vmids: [u64; 3] = [100, 101, 102];
        let mut asked = HashMap::new();
        for vmid in vmids {
            let (result, replica) = t.call_on("pve_get_vm_status", json!({"vmid": vmid})).await;
            let result = result.unwrap();
            assert!(!succeeded(&result), "{result}");
            asked.insert(vmid, (approval_id(&result_text(&result)), replica));
        }
        // One person, one replica's admin endpoint, once each.
        for (id, _) in asked.values() {
            t.approve_on(0, id).await;
        }
        // The retries, in another order, land where they land.
        let mut retried = HashMap::new();
        for vmid in [102u64, 100, 101] {
            let (result, replica) = t.call_on("pve_get_vm_status", json!({"vmid": vmid})).await;
            let result = result.unwrap();
            assert!(succeeded(&result), "the approved retry of {vmid}: {result}");
            assert_eq!(result["structuredContent"]["vmid"], vmid);
            retried.insert(vmid, replica);
        }
        for vmid in vmids {
            assert_eq!(runs(vmid), 1, "{vmid} ran once");
        }
        assert!(
            vmids.iter().any(|v| retried[v] != asked[v].1),
            "no retry reached another replica than its first call; asked {asked:?}, retried {retried:?}"
        );
        // Used up: the next identical call needs a new approval.
        let again = t.agent.call("pve_get_vm_status", json!({"vmid": 100})).await.unwrap();
        assert_ne!(approval_id(&result_text(&again)), asked[&100].0);
        assert_eq!(runs(100), 1);
    })
    .await;
}

/// One snapshot call's outcome in the kill test.
struct Outcome {
    vmid: u64,
    snapname: String,
    after_kill: bool,
    result: Result<Value, String>,
}

#[tokio::test]
async fn killing_a_replica_loses_no_acknowledged_call() {
    if !available() {
        return;
    }
    within(async {
        let mut t = Topology::start(&crate::actions::allow(&["pve_create_snapshot"])).await;
        // A snapshot is there as soon as the call is acknowledged.
        t.sim.set_task_duration(Duration::ZERO);
        let mut sessions: HashMap<usize, String> = HashMap::new();
        while sessions.len() < 3 {
            let id = t.agent.open_session().await;
            sessions.insert(home(&id), id);
        }
        const VICTIM: usize = 1;

        // Four agents take snapshots of a VM each, one call after another.
        let killed = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicUsize::new(0));
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let mut agents = tokio::task::JoinSet::new();
        for vmid in [100u64, 101, 102, 104] {
            let (agent, killed, done, outcomes) = (
                t.agent.clone(),
                killed.clone(),
                done.clone(),
                outcomes.clone(),
            );
            agents.spawn(async move {
                for n in 0..12 {
                    let snapname = format!("s{vmid}n{n}");
                    let after_kill = killed.load(Ordering::SeqCst);
                    let args = json!({"vmid": vmid, "snapname": snapname});
                    let result = agent.call("pve_create_snapshot", args).await;
                    outcomes.lock().unwrap().push(Outcome {
                        vmid,
                        snapname,
                        after_kill,
                        result,
                    });
                    done.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        wait_until(
            "8 calls before the kill",
            Duration::from_secs(60),
            async || (done.load(Ordering::SeqCst) >= 8).then_some(()),
        )
        .await;
        t.replicas[VICTIM].server.signal("KILL");
        t.replicas[VICTIM].server.wait().await;
        killed.store(true, Ordering::SeqCst);
        while let Some(agent) = agents.join_next().await {
            agent.unwrap();
        }

        let outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
        let describe = || {
            outcomes
                .iter()
                .map(|o| {
                    format!(
                        "{} {} after_kill={}: {:?}",
                        o.vmid,
                        o.snapname,
                        o.after_kill,
                        o.result.as_ref().map(result_text)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        // Every acknowledged snapshot exists.
        for o in &outcomes {
            if let Ok(result) = &o.result {
                assert!(succeeded(result), "{}: {result}", o.snapname);
                let guest = t.sim.guest(o.vmid as u32).unwrap();
                assert!(
                    guest.snapshots.contains(&o.snapname),
                    "acknowledged but lost: {}\n{}",
                    o.snapname,
                    describe()
                );
            }
        }
        // Calls after the kill succeed on the replicas left.
        let after: Vec<&Outcome> = outcomes.iter().filter(|o| o.after_kill).collect();
        assert!(!after.is_empty(), "{}", describe());
        assert!(after.iter().all(|o| o.result.is_ok()), "{}", describe());
        // nginx never sent a call to a second replica: no snapshot was asked for twice.
        let mut asked: HashMap<String, usize> = HashMap::new();
        for w in t
            .sim
            .writes()
            .iter()
            .filter(|w| w.path.ends_with("/snapshot"))
        {
            let name = w
                .params
                .iter()
                .find(|(k, _)| k.as_str() == "snapname")
                .map(|(_, v)| v.clone())
                .unwrap();
            *asked.entry(name).or_default() += 1;
        }
        assert!(asked.values().all(|&n| n == 1), "{asked:?}");
        assert!(
            t.stateless_counts()[VICTIM] > 0,
            "the victim served nothing before it died"
        );

        // Its session is gone, and the answer says why; the others' work.
        let answer = t
            .agent
            .call_in(&sessions[&VICTIM], "pve_get_version")
            .await
            .unwrap_err();
        assert!(
            answer.starts_with("HTTP 404") && answer.contains("opened on another replica"),
            "{answer}"
        );
        for n in [0, 2] {
            let result = t
                .agent
                .call_in(&sessions[&n], "pve_get_version")
                .await
                .unwrap();
            assert!(succeeded(&result), "{result}");
        }
        // New sessions open on the replicas left.
        for _ in 0..3 {
            assert_ne!(home(&t.agent.open_session().await), VICTIM);
        }
    })
    .await;
}
