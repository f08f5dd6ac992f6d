//! Rate limits through the real binary: per session and global, exact
//! under concurrency, the retry-after text, units given back when Proxmox
//! did not answer (and kept when it answered, even with a 500), Redis shared by two server processes, and an
//! unreachable Redis failing closed (or open when configured).
//!
//! Limits here are per day, so a window never ends during a test (except
//! across midnight UTC, once a day for a second).

use pve_sim::Fault;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::common::*;
use crate::policy_harness::*;

/// `n` concurrent `pve_get_version` calls on one client: (ok, limited).
async fn concurrent_version_calls(server: &Server, n: usize) -> (usize, usize) {
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..n {
        let peer = server.client.peer().clone();
        calls.spawn(async move {
            peer.call_tool(CallToolRequestParams::new("pve_get_version"))
                .await
                .expect("tools/call")
        });
    }
    let (mut ok, mut limited) = (0, 0);
    while let Some(result) = calls.join_next().await {
        let result = result.expect("call task");
        if result.is_error == Some(false) {
            ok += 1;
        } else {
            let t = text(&result);
            assert!(t.starts_with("Rate limit reached"), "{t}");
            limited += 1;
        }
    }
    (ok, limited)
}

fn version_requests(sim: &pve_sim::Simulator) -> usize {
    sim.requests()
        .iter()
        .filter(|r| r.path == "/api2/json/version")
        .count()
}

#[tokio::test]
async fn a_session_limit_refuses_after_n_and_says_when_to_retry() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(
            &sim,
            "[policy.tools.pve_get_version]\nrate_limit = \"3/day\"\n",
        )
        .await;
        let (ok, limited) = count_version_calls(&p.server, 5).await;
        assert_eq!((ok, limited.len()), (3, 2), "{limited:?}");
        let t = &limited[0];
        assert!(
            t.contains("(policy.tools.pve_get_version.rate_limit: 3/day per session)"),
            "{t}"
        );
        let secs: u64 = t
            .split("retry after ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no retry-after seconds in {t}"));
        assert!((1..=86_400).contains(&secs), "{t}");
        // The refused calls never reached Proxmox; other tools are unlimited.
        assert_eq!(version_requests(&sim), 3);
        p.server.ok("pve_list_nodes", json!({})).await;
    })
    .await;
}

#[tokio::test]
async fn twenty_concurrent_calls_get_exactly_the_limit() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(
            &sim,
            "[policy.tools.pve_get_version]\nrate_limit_global = \"7/day\"\n",
        )
        .await;
        assert_eq!(concurrent_version_calls(&p.server, 20).await, (7, 13));
        assert_eq!(version_requests(&sim), 7);
    })
    .await;
}

#[tokio::test]
async fn a_wildcard_limit_counts_every_tool_together() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(
            &sim,
            "[policy.tools.\"*\"]\nrate_limit_global = \"3/day\"\n",
        )
        .await;
        p.server.ok("pve_get_version", json!({})).await;
        p.server.ok("pve_list_nodes", json!({})).await;
        p.server.ok("pve_get_cluster_status", json!({})).await;
        let t = p.server.err("pve_list_vms", json!({})).await;
        assert!(
            t.contains("policy.tools.\"*\".rate_limit_global: 3/day for all callers together"),
            "{t}"
        );
    })
    .await;
}

/// Under a `2/day` limit, one `pve_get_version` call fails on an injected
/// `status`; then three more are made: (ok, limited).
async fn version_calls_after_a_fault(status: u16, reason: &str) -> (usize, usize) {
    let sim = simulator().await;
    let p = with_policy(
        &sim,
        "[policy.tools.pve_get_version]\nrate_limit = \"2/day\"\n",
    )
    .await;
    sim.add_fault(Fault {
        path_prefix: "/version".into(),
        status,
        reason: reason.into(),
        times: Some(1),
        delay: None,
        ..Default::default()
    });
    let failed = p.server.err("pve_get_version", json!({})).await;
    assert!(!failed.starts_with("Rate limit"), "{failed}");
    assert!(
        p.server.stderr().contains("outcome=\"upstream\"")
            || p.server.stderr().contains("outcome=upstream"),
        "the failure is an upstream one: {}",
        p.server.stderr()
    );
    let (ok, limited) = count_version_calls(&p.server, 3).await;
    (ok, limited.len())
}

#[tokio::test]
async fn a_call_that_fails_upstream_gives_its_unit_back() {
    within(async {
        // 596: PVE's proxy got no answer from the node, so Proxmox never
        // did the work. Both units are still there.
        assert_eq!(
            version_calls_after_a_fault(596, "Broken pipe").await,
            (2, 1)
        );
    })
    .await;
}

/// Proxmox answers some client mistakes ("Configuration file ... does not
/// exist") with a 500: that is Proxmox doing its work, so the unit stays
/// taken, or an agent could loop on such calls past its limit.
#[tokio::test]
async fn a_call_proxmox_answers_with_a_500_keeps_its_unit() {
    within(async {
        let reason = "Configuration file 'nodes/pve1/qemu-server/999.conf' does not exist";
        // One unit is left, not two.
        assert_eq!(version_calls_after_a_fault(500, reason).await, (1, 2));
    })
    .await;
}

#[tokio::test]
async fn redis_limits_are_shared_by_two_server_processes() {
    if !Redis::available() {
        return;
    }
    within(async {
        let redis = Redis::start().await;
        let sim = simulator().await;
        let policy = format!(
            "[policy]\nstate = \"{}\"\n[policy.tools.pve_get_version]\nrate_limit_global = \"5/day\"\n[policy.tools.pve_list_nodes]\nrate_limit = \"2/day\"\n",
            redis.url()
        );
        let a = with_policy(&sim, &policy).await;
        let b = with_policy(&sim, &policy).await;
        // Both at once, 6 calls each, against one budget of 5.
        let (from_a, from_b) = tokio::join!(
            concurrent_version_calls(&a.server, 6),
            concurrent_version_calls(&b.server, 6)
        );
        assert_eq!(from_a.0 + from_b.0, 5, "a {from_a:?}, b {from_b:?}");
        assert_eq!(version_requests(&sim), 5);
        // A per-session limit is per session, even though both processes
        // serve a session called "stdio".
        for server in [&a.server, &b.server] {
            server.ok("pve_list_nodes", json!({})).await;
            server.ok("pve_list_nodes", json!({})).await;
            let t = server.err("pve_list_nodes", json!({})).await;
            assert!(t.contains("2/day per session"), "{t}");
        }
        assert!(a.server.stderr().contains(&format!("state={}", redis.url())), "{}", a.server.stderr());
    })
    .await;
}

#[tokio::test]
async fn an_unreachable_redis_fails_closed_by_default_and_open_when_configured() {
    within(async {
        let sim = simulator().await;
        let url = format!("redis://:hunter2-not-shown@127.0.0.1:{}", free_port());
        let limited = format!(
            "[policy]\nstate = \"{url}\"\n[policy.tools.pve_get_version]\nrate_limit = \"5/day\"\n"
        );
        let p = with_policy(&sim, &limited).await;
        let t = refused(
            &p.server,
            "pve_get_version",
            json!({}),
            "policy.state_failure",
        )
        .await;
        assert!(
            t.contains("policy.tools.pve_get_version.rate_limit")
                && t.contains("unavailable")
                && t.contains("fails closed"),
            "{t}"
        );
        assert!(t.contains("[REDACTED]@127.0.0.1"), "{t}");
        assert_eq!(version_requests(&sim), 0);
        // Tools without limits do not need the store.
        p.server.ok("pve_list_nodes", json!({})).await;
        let log = p.server.stop().await;
        assert!(
            !log.contains("hunter2") && !t.contains("hunter2"),
            "the Redis password leaked"
        );

        let open = limited.replace("[policy]\n", "[policy]\nstate_failure = \"open\"\n");
        let p = with_policy(&sim, &open).await;
        p.server.ok("pve_get_version", json!({})).await;
        assert!(
            p.server.stderr().contains("runs uncounted"),
            "{}",
            p.server.stderr()
        );
        assert_eq!(version_requests(&sim), 1);
    })
    .await;
}

#[tokio::test]
async fn counting_resumes_when_redis_comes_back() {
    if !Redis::available() {
        return;
    }
    within(async {
        let sim = simulator().await;
        let port = free_port();
        let policy = format!(
            "[policy]\nstate = \"redis://127.0.0.1:{port}\"\n[policy.tools.pve_get_version]\nrate_limit_global = \"2/day\"\n"
        );
        let p = with_policy(&sim, &policy).await;
        refused(&p.server, "pve_get_version", json!({}), "policy.state_failure").await;
        let _redis = Redis::start_on(port).await;
        // The connection is retried on later calls; refusals until then
        // take no unit.
        wait_until(
            "a call to go through once redis is back",
            std::time::Duration::from_secs(30),
            async || {
                let result = p.server.call("pve_get_version", json!({})).await;
                if result.is_error == Some(false) {
                    return Some(());
                }
                assert!(text(&result).contains("policy.state_failure"), "{}", text(&result));
                None
            },
        )
        .await;
        let (ok, limited) = count_version_calls(&p.server, 2).await;
        assert_eq!((ok, limited.len()), (1, 1), "{limited:?}");
    })
    .await;
}

/// Over Streamable HTTP with two named tokens: `rate_limit_per_token`
/// counts each agent across all its sessions, and one agent's budget is not
/// another's.
#[tokio::test]
async fn per_token_limits_follow_the_agent_across_sessions() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let (alice, bob) = ("a11ce-a11ce-a11ce-a11ce-a11ce", "b0b-b0b-b0b-b0b-b0b-b0b-b0b");
        let config = dir.path().join("pve-mcp.toml");
        std::fs::write(
            &config,
            format!(
                "[http]\nlisten = \"127.0.0.1:0\"\n[http.tokens]\nalice = \"{alice}\"\nbob = \"{bob}\"\n\n\
                 [policy.tools.pve_get_version]\nrate_limit_per_token = \"2/day\"\n"
            ),
        )
        .unwrap();
        let opts = Opts::default().arg("--config").arg(config.to_str().unwrap());
        let server = crate::http::HttpServer::spawn(&sim, opts, &["serve"], crate::http::http_client())
            .await;
        let call = || CallToolRequestParams::new("pve_get_version");
        let mut outcomes = Vec::new();
        // Alice's three calls over three sessions: two run, the third is over
        // her budget although each session made only one call.
        for _ in 0..3 {
            let session = server.client_with(Some(alice)).await.expect("alice connects");
            let result = session.call_tool(call()).await.expect("a tool result");
            outcomes.push((result.is_error == Some(true), text(&result)));
            let _ = session.cancel().await;
        }
        assert!(!outcomes[0].0 && !outcomes[1].0, "{outcomes:?}");
        assert!(outcomes[2].0, "{outcomes:?}");
        assert!(
            outcomes[2].1.contains("policy.tools.pve_get_version.rate_limit_per_token")
                && outcomes[2].1.contains("retry after"),
            "{}",
            outcomes[2].1
        );
        // Bob has his own budget.
        let session = server.client_with(Some(bob)).await.expect("bob connects");
        let result = session.call_tool(call()).await.expect("a tool result");
        assert_ne!(result.is_error, Some(true), "{}", text(&result));
        let _ = session.cancel().await;
        let upstream = sim
            .requests()
            .iter()
            .filter(|r| r.path == "/api2/json/version")
            .count();
        assert_eq!(upstream, 3, "only allowed calls reach Proxmox");
    })
    .await;
}
