//! Prometheus metrics through the real binary and a real Prometheus:
//! Debian's `prometheus` (installed by `.ci/run`) scrapes a running
//! `pve-mcp serve --http` with its bearer token while it serves an ok call,
//! a policy refusal and a call whose upstream request fails, and the series
//! are read back through Prometheus's own query API with the labels
//! `docs/deploy.md` documents. Also: `/metrics` needs the bearer token, and
//! `[metrics] listen` serves it on loopback without one.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;
use crate::http::*;
use crate::secret_scan::Secrets;

/// Where Debian puts it.
const PROMETHEUS: &str = "/usr/bin/prometheus";

/// The path of `prometheus`, if it can be run here; without it the test
/// is skipped locally and fails under CI.
fn prometheus_binary() -> Option<PathBuf> {
    let found = [PathBuf::from(PROMETHEUS)]
        .into_iter()
        .chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths)
                .map(|dir| dir.join("prometheus")),
        )
        .find(|p| p.is_file());
    pve_sim::testing::installed(found.is_some(), "prometheus", "apt-get install prometheus")
        .then(|| found.unwrap())
}

/// A free port on 127.0.0.1 (Prometheus cannot report one it picked).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Prometheus of the test's own: its config and data in a tempdir, on a
/// loopback port, killed when dropped. Never the system service.
struct Prometheus {
    child: tokio::process::Child,
    base: String,
    dir: tempfile::TempDir,
    http: reqwest::Client,
}

impl Prometheus {
    /// Scrapes `target` (`host:port`) every second, with `token` as its
    /// bearer token (from a file, so it is in no command line).
    async fn start(binary: &Path, target: &str, token: Option<&str>) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let auth = match token {
            Some(token) => {
                let file = dir.path().join("token");
                std::fs::write(&file, token).unwrap();
                format!(
                    "    authorization:\n      type: Bearer\n      credentials_file: {}\n",
                    file.display()
                )
            }
            None => String::new(),
        };
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: pve-mcp\n    metrics_path: /metrics\n{auth}    \
             static_configs:\n      - targets: ['{target}']\n"
        );
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = tokio::process::Command::new(binary)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("starting prometheus");
        let prometheus = Prometheus {
            child,
            base: format!("http://127.0.0.1:{port}"),
            dir,
            http: reqwest::Client::new(),
        };
        let ready = format!("{}/-/ready", prometheus.base);
        wait_until(
            Lazy(|| format!("prometheus to be ready; it logged:\n{}", prometheus.log())),
            Duration::from_secs(60),
            async || {
                let r = prometheus.http.get(&ready).send().await;
                r.is_ok_and(|r| r.status() == 200).then_some(())
            },
        )
        .await;
        prometheus
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The instant vector `query` evaluates to now.
    async fn query(&self, query: &str) -> Vec<Value> {
        let r = self
            .http
            .get(format!(
                "{}/api/v1/query?query={}",
                self.base,
                percent_encoding::utf8_percent_encode(query, percent_encoding::NON_ALPHANUMERIC)
            ))
            .send()
            .await
            .expect("querying prometheus");
        let body: Value = r.json().await.expect("a JSON answer");
        assert_eq!(body["status"], "success", "{query}: {body}");
        body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Waits until `query` has one series whose value is `expected`; that
    /// series' labels.
    async fn expect(&self, query: &str, expected: f64) -> Value {
        wait_until(
            Lazy(|| {
                format!(
                    "prometheus to answer {query} with {expected}; it logged:\n{}",
                    self.log()
                )
            }),
            Duration::from_secs(45),
            async || {
                let result = self.query(query).await;
                let [series] = result.as_slice() else {
                    return None;
                };
                let value: f64 = series["value"][1].as_str()?.parse().ok()?;
                (value == expected).then(|| series["metric"].clone())
            },
        )
        .await
    }

    /// Whether the last scrape of the target succeeded.
    async fn target_up(&self) -> bool {
        let r = self.query("up{job=\"pve-mcp\"}").await;
        r.first().is_some_and(|s| s["value"][1] == "1")
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The policy: one tool refused.
const POLICY: &str = r#"
[policy.tools.pve_list_backups]
action = "deny"
reason = "backups are out of scope for this agent"
"#;

/// A call in `session`; the tool result.
async fn call(server: &HttpServer, session: &str, id: u64, tool: &str, arguments: Value) -> Value {
    let r = server
        .post_in(session, &call_request(id, tool, arguments))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", server.log());
    let messages = messages(r).await;
    messages
        .into_iter()
        .find(|m| m["id"] == id)
        .expect("the call's response")["result"]
        .clone()
}

#[tokio::test]
async fn prometheus_scrapes_calls_refusals_and_upstream_errors_with_the_documented_labels() {
    let Some(binary) = prometheus_binary() else {
        return;
    };
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("policy.toml");
        std::fs::write(&policy, POLICY).unwrap();
        let opts = Opts::default()
            .arg("--policy")
            .arg(policy.to_str().unwrap());
        let server = HttpServer::start(&sim, opts.clone()).await;
        let target = server.base.trim_start_matches("http://").to_string();
        let prometheus = Prometheus::start(&binary, &target, server.token.as_deref()).await;
        wait_until(
            Lazy(|| format!("prometheus to scrape pve-mcp; it logged:\n{}", prometheus.log())),
            Duration::from_secs(30),
            async || prometheus.target_up().await.then_some(()),
        )
        .await;

        let session = server.session().await;
        for id in [2, 3] {
            let ok = call(&server, &session, id, "pve_list_vms", json!({})).await;
            assert_ne!(ok["isError"], true, "{ok}");
        }
        let refused = call(
            &server,
            &session,
            4,
            "pve_list_backups",
            json!({"node": "pve1", "storage": "local"}),
        )
        .await;
        assert_eq!(refused["isError"], true, "{refused}");
        sim.add_fault(pve_sim::Fault {
            path_prefix: "/version".into(),
            status: 500,
            reason: "simulated failure".into(),
            ..Default::default()
        });
        let failed = call(&server, &session, 5, "pve_get_version", json!({})).await;
        assert_eq!(failed["isError"], true, "{failed}");

        // The call counter, by tool and outcome.
        prometheus
            .expect(
                "pve_mcp_tool_calls_total{job=\"pve-mcp\",tool=\"pve_list_vms\",outcome=\"ok\"}",
                2.0,
            )
            .await;
        prometheus
            .expect(
                "pve_mcp_tool_calls_total{tool=\"pve_list_backups\",outcome=\"policy_refused\"}",
                1.0,
            )
            .await;
        prometheus
            .expect(
                "pve_mcp_tool_calls_total{tool=\"pve_get_version\",outcome=\"upstream_error\"}",
                1.0,
            )
            .await;
        // The upstream error, by cluster, method class and status class.
        prometheus
            .expect(
                "sum(pve_mcp_upstream_requests_total{cluster=\"default\",method_class=\"read\",status=\"5xx\"})",
                1.0,
            )
            .await;
        // The MCP semantic conventions' histogram, with every label.
        let series = prometheus
            .expect(
                "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",\
                 gen_ai_tool_name=\"pve_list_vms\",network_transport=\"tcp\",\
                 mcp_protocol_version=\"2025-11-25\"}",
                2.0,
            )
            .await;
        // An empty error_type is no label at all to Prometheus.
        assert!(series.get("error_type").is_none(), "{series}");
        for tool in ["pve_list_backups", "pve_get_version"] {
            prometheus
                .expect(
                    &format!(
                        "mcp_server_operation_duration_seconds_count{{gen_ai_tool_name=\"{tool}\",\
                         error_type=\"tool_error\",network_transport=\"tcp\"}}"
                    ),
                    1.0,
                )
                .await;
        }
        prometheus
            .expect(
                "sum(mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name=\"pve_list_vms\",le=\"300\"})",
                2.0,
            )
            .await;
        // Gauges: one session open, no slot held now, the capacity.
        prometheus.expect("pve_mcp_sessions", 1.0).await;
        prometheus.expect("pve_mcp_sandbox_slots_in_use", 0.0).await;
        prometheus.expect("pve_mcp_sandbox_slots", 32.0).await;
        prometheus.expect("pve_mcp_approvals_pending", 0.0).await;

        // What Prometheus stored names no secret and no argument.
        let page = metrics_page(&server, server.token.as_deref()).await;
        assert_eq!(page.0, 200);
        Secrets::of(&opts).check("/metrics", &page.1);
        Secrets::fixed().check("/metrics", &page.1);
        for argument in ["pve1", "local", "simulated failure"] {
            assert!(!page.1.contains(argument), "{argument} in /metrics:\n{}", page.1);
        }
        let labels = prometheus.query("group by (tool) (pve_mcp_tool_calls_total)").await;
        let mut tools: Vec<&str> = labels
            .iter()
            .filter_map(|s| s["metric"]["tool"].as_str())
            .collect();
        tools.sort_unstable();
        assert_eq!(
            tools,
            ["pve_get_version", "pve_list_backups", "pve_list_vms"]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// `GET /metrics` on `server`'s MCP listener with `token`: status and body.
async fn metrics_page(server: &HttpServer, token: Option<&str>) -> (u16, String, String) {
    let mut request = server.http.get(format!("{}/metrics", server.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let r = request.send().await.unwrap();
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, r.text().await.unwrap(), content_type)
}

#[tokio::test]
async fn metrics_on_the_mcp_listener_need_the_bearer_token() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(&sim, Opts::default()).await;
        let (status, body, _) = metrics_page(&server, None).await;
        assert_eq!(status, 401, "{body}");
        assert!(!body.contains("pve_mcp_"), "{body}");
        let (status, body, _) = metrics_page(&server, Some("wrong-token-0123456789")).await;
        assert_eq!(status, 401, "{body}");
        let (status, body, content_type) = metrics_page(&server, server.token.as_deref()).await;
        assert_eq!(status, 200, "{body}");
        assert!(
            content_type.starts_with("text/plain; version=0.0.4"),
            "{content_type}"
        );
        // No call yet: the gauges are there, the families without a series
        // are not.
        assert!(
            body.contains("# TYPE pve_mcp_sandbox_slots gauge"),
            "{body}"
        );
        assert!(
            !body.contains("mcp_server_operation_duration_seconds"),
            "{body}"
        );
        // The compile cache was looked up once as the server started.
        assert!(
            body.contains("pve_mcp_compile_cache_lookups_total{result="),
            "{body}"
        );
        // Off: no /metrics at all.
        let off = HttpServer::start(&sim, Opts::default().env("PVE_MCP_METRICS", "false")).await;
        let (status, _, _) = metrics_page(&off, off.token.as_deref()).await;
        assert_eq!(status, 404);
    })
    .await;
}

#[tokio::test]
async fn a_metrics_listener_of_its_own_serves_loopback_without_a_token() {
    within(async {
        let sim = simulator().await;
        let port = free_port();
        let opts = Opts::default().env("PVE_MCP_METRICS_LISTEN", &format!("127.0.0.1:{port}"));
        let server = HttpServer::start(&sim, opts).await;
        server
            .expect_log(&format!("pve-mcp: metrics http://127.0.0.1:{port}/metrics"))
            .await;
        let r = http_client()
            .get(format!("http://127.0.0.1:{port}/metrics"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let body = r.text().await.unwrap();
        assert!(body.contains("# TYPE pve_mcp_sessions gauge"), "{body}");
        Secrets::fixed().check("/metrics", &body);
        let r = http_client()
            .get(format!("http://127.0.0.1:{port}/mcp"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
    })
    .await;
}
