//! Reloading the policy of a running server: on SIGHUP and on a file
//! change. A bad new file is rejected and the old policy stays in force;
//! counters of unchanged limits survive.

use serde_json::json;

use crate::common::*;
use crate::policy_harness::*;

fn hangup(server: &Server) {
    let pid = server.pid.expect("the server's pid");
    let status = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .expect("running kill");
    assert!(status.success());
}

const RELOADED: &str = "policy reloaded";
const REJECTED: &str = "policy reload rejected";

#[tokio::test]
async fn sighup_reloads_the_policy_and_a_bad_file_keeps_the_old_one() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, "[policy]\ndefault = \"read-only\"\n").await;
        p.server.ok("pve_get_version", json!({})).await;

        write_policy(
            &p.path,
            "[policy.tools.pve_get_version]\naction = \"deny\"\nreason = \"version two\"\n",
        );
        let seen = p.server.stderr().matches("trigger=\"SIGHUP\"").count();
        hangup(&p.server);
        wait_for_log(&p.server, "trigger=\"SIGHUP\"", seen).await;
        assert!(
            p.server.stderr().contains(RELOADED),
            "{}",
            p.server.stderr()
        );
        let t = refused(
            &p.server,
            "pve_get_version",
            json!({}),
            "policy.tools.pve_get_version",
        )
        .await;
        assert!(t.ends_with("version two"), "{t}");

        // A typo: rejected with the line, and "version two" stays.
        write_policy(
            &p.path,
            "[policy.tools.pve_get_version]\nactoin = \"allow\"\n",
        );
        let seen = p.server.stderr().matches(REJECTED).count();
        hangup(&p.server);
        wait_for_log(&p.server, REJECTED, seen).await;
        let log = p.server.stderr();
        assert!(log.contains("actoin") && log.contains("line 2"), "{log}");
        assert!(log.contains("WARN"), "{log}");
        let t = refused(
            &p.server,
            "pve_get_version",
            json!({}),
            "policy.tools.pve_get_version",
        )
        .await;
        assert!(t.ends_with("version two"), "{t}");
        // The server still serves.
        p.server.ok("pve_list_nodes", json!({})).await;
    })
    .await;
}

#[tokio::test]
async fn a_file_change_reloads_and_unchanged_limits_keep_their_count() {
    within(async {
        let sim = simulator().await;
        let first = "[policy.tools.pve_get_version]\nrate_limit = \"2/day\"\n";
        let p = with_policy(&sim, first).await;
        p.server.ok("pve_get_version", json!({})).await;
        p.server.ok("pve_get_cluster_status", json!({})).await;

        let seen = p.server.stderr().matches("trigger=\"a file change\"").count();
        write_policy(
            &p.path,
            &format!("{first}[policy.tools.pve_get_cluster_status]\naction = \"deny\"\nreason = \"second policy\"\n"),
        );
        wait_for_log(&p.server, "trigger=\"a file change\"", seen).await;
        assert!(p.server.stderr().contains(RELOADED), "{}", p.server.stderr());
        refused(&p.server, "pve_get_cluster_status", json!({}), "policy.tools.pve_get_cluster_status").await;
        // One unit of 2 was used before the reload: one is left.
        let (ok, limited) = count_version_calls(&p.server, 2).await;
        assert_eq!((ok, limited.len()), (1, 1), "{limited:?}");

        // A bad rate: rejected, the old policy (and its counters) stays.
        let seen = p.server.stderr().matches(REJECTED).count();
        write_policy(&p.path, "[policy.tools.pve_get_version]\nrate_limit = \"lots\"\n");
        wait_for_log(&p.server, REJECTED, seen).await;
        assert!(p.server.stderr().contains("rate_limit"), "{}", p.server.stderr());
        refused(&p.server, "pve_get_cluster_status", json!({}), "policy.tools.pve_get_cluster_status").await;
        let (ok, _) = count_version_calls(&p.server, 1).await;
        assert_eq!(ok, 0);

        // A changed limit is a new limit: it starts from zero.
        let seen = p.server.stderr().matches(RELOADED).count();
        write_policy(&p.path, "[policy.tools.pve_get_version]\nrate_limit = \"3/day\"\n");
        wait_for_log(&p.server, RELOADED, seen).await;
        let (ok, _) = count_version_calls(&p.server, 4).await;
        assert_eq!(ok, 3);
        p.server.ok("pve_get_cluster_status", json!({})).await;
    })
    .await;
}

/// A client that reports `notifications/tools/list_changed`.
struct ListWatcher(tokio::sync::mpsc::UnboundedSender<()>);

impl rmcp::ClientHandler for ListWatcher {
    fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) -> impl std::future::Future<Output = ()> + rmcp::service::MaybeSendFuture + '_ {
        let _ = self.0.send(());
        std::future::ready(())
    }
}

#[tokio::test]
async fn clients_are_told_when_a_reload_changes_the_tool_list() {
    use rmcp::ServiceExt;
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        write_policy(&path, "[policy]\n");
        let opts = Opts::default().arg("--policy").arg(path.to_str().unwrap());
        let cmd = command(&sim, &opts, dir.path(), &["serve"]);
        let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawning pve-mcp serve");
        let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
        let client = ListWatcher(tx).serve(transport).await.expect("handshake");
        assert_eq!(
            client.list_all_tools().await.unwrap().len(),
            catalog().len()
        );

        write_policy(&path, "[policy.tools.pve_list_nodes]\nhide = true\n");
        changes
            .recv()
            .await
            .expect("a tools/list_changed notification");
        let names: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(names.len(), catalog().len() - 1, "{names:?}");
        assert!(!names.contains(&"pve_list_nodes".to_string()), "{names:?}");

        write_policy(&path, "[policy]\n");
        changes.recv().await.expect("a second notification");
        assert_eq!(
            client.list_all_tools().await.unwrap().len(),
            catalog().len()
        );
        let _ = client.cancel().await;
    })
    .await;
}

#[tokio::test]
async fn http_sessions_are_told_when_a_reload_changes_the_tool_list() {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        write_policy(&path, "[policy]\n");
        let opts = Opts::default().arg("--policy").arg(path.to_str().unwrap());
        let server = crate::http::HttpServer::start(&sim, opts).await;
        let config = StreamableHttpClientTransportConfig::with_uri(server.url.clone())
            .auth_header(crate::http::TOKEN);
        let transport = StreamableHttpClientTransport::with_client(server.http.clone(), config);
        let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
        let client = ListWatcher(tx).serve(transport).await.expect("handshake");
        assert_eq!(
            client.list_all_tools().await.unwrap().len(),
            catalog().len()
        );

        write_policy(&path, "[policy.tools.pve_list_nodes]\nhide = true\n");
        changes
            .recv()
            .await
            .expect("a tools/list_changed notification over HTTP");
        let names: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        assert!(!names.contains(&"pve_list_nodes".to_string()), "{names:?}");
        let _ = client.cancel().await;
    })
    .await;
}

/// The deny rule the misspelt-section test starts with is in force.
async fn assert_still_denied(server: &Server) {
    let t = refused(
        server,
        "pve_get_version",
        json!({}),
        "policy.tools.pve_get_version",
    )
    .await;
    assert!(t.ends_with("kept"), "{t}");
}

/// A section name misspelt in the configuration file (`[Policy...]`) is
/// rejected on reload as it is at start, not read as "no `[policy]`
/// section": the deny rule stays, and the log names the key.
#[tokio::test]
async fn a_misspelt_policy_section_in_the_config_keeps_the_old_policy() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("pve-mcp.toml");
        let deny = "[policy.tools.pve_get_version]\naction = \"deny\"\nreason = \"kept\"\n";
        write_policy(&config, deny);
        let opts = Opts::default()
            .arg("--config")
            .arg(config.to_str().unwrap());
        let server = Server::start(&sim, opts).await;
        assert_still_denied(&server).await;

        let seen = server.stderr().matches(REJECTED).count();
        write_policy(&config, &deny.replace("[policy.", "[Policy."));
        hangup(&server);
        wait_for_log(&server, REJECTED, seen).await;
        let log = server.stderr();
        assert!(log.contains("WARN") && log.contains("`Policy`"), "{log}");
        assert!(!log.contains("no [policy] section"), "{log}");
        assert_still_denied(&server).await;
    })
    .await;
}

/// The next `data:` event of an SSE response, as JSON.
async fn next_event(response: &mut reqwest::Response, buffered: &mut String) -> serde_json::Value {
    loop {
        if let Some(end) = buffered.find("\n\n") {
            let event: String = buffered.drain(..end + 2).collect();
            let data: String = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            if data.is_empty() {
                continue;
            }
            return serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data}"));
        }
        let chunk = response
            .chunk()
            .await
            .expect("reading the listen stream")
            .expect("the listen stream ended");
        buffered.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// Issue 26: a 2026-07-28 client has no session, so it opens
/// `subscriptions/listen`: the stream acknowledges what it accepted (tool
/// list changes only), then carries `notifications/tools/list_changed`,
/// tagged with the subscription, when a reload hides a tool.
#[tokio::test]
async fn a_2026_listener_is_told_when_a_reload_changes_the_tool_list() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        write_policy(&path, "[policy]\n");
        let opts = Opts::default().arg("--policy").arg(path.to_str().unwrap());
        let server = crate::http::HttpServer::start(&sim, opts).await;
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "e2e-listener", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let listen = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
            "params": {"_meta": meta, "notifications": {
                "toolsListChanged": true, "promptsListChanged": true,
                "resourceSubscriptions": ["pve://default/resources"]}}});
        let mut stream = server
            .post(&listen)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        let mut buffered = String::new();
        let ack = next_event(&mut stream, &mut buffered).await;
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        // Only what this server announces is accepted.
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true}),
            "{ack}"
        );

        write_policy(&path, "[policy.tools.pve_list_nodes]\nhide = true\n");
        let changed = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            next_event(&mut stream, &mut buffered),
        )
        .await
        .expect("a tools/list_changed notification on the listen stream");
        assert_eq!(
            changed["method"], "notifications/tools/list_changed",
            "{changed}"
        );
        assert_eq!(
            changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7,
            "{changed}"
        );
    })
    .await;
}
