//! The hostile component (tests/hostile), run through the real binary with
//! `--component`: every escape it tries must fail, and the server must keep
//! serving after each attack.

use std::time::Duration;

use pve_sim::Fault;
use serde_json::{Value, json};

use crate::common::*;

/// A server running the hostile component with a short deadline.
async fn hostile(sim: &pve_sim::Simulator) -> (Server, tempfile::TempDir) {
    hostile_with(sim, |_| String::new()).await
}

/// [`hostile`], with more configuration: `extra` gets the directory the
/// config file is in and returns the text to append to it.
async fn hostile_with(
    sim: &pve_sim::Simulator,
    extra: impl FnOnce(&std::path::Path) -> String,
) -> (Server, tempfile::TempDir) {
    hostile_timed(sim, 4, extra).await
}

/// [`hostile_with`] with a deadline of `timeout_secs`.
async fn hostile_timed(
    sim: &pve_sim::Simulator,
    timeout_secs: u64,
    extra: impl FnOnce(&std::path::Path) -> String,
) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pve-mcp.toml");
    let text = format!(
        "[sandbox]\ntimeout_secs = {timeout_secs}\nmemory_mib = 64\n{}",
        extra(dir.path())
    );
    std::fs::write(&config, text).unwrap();
    let opts = Opts::default()
        .arg("--component")
        .arg(HOSTILE_WASM)
        .arg("--config")
        .arg(config.to_str().unwrap());
    (Server::start(sim, opts).await, dir)
}

fn attempts(report: &Value) -> Vec<Value> {
    report["attempts"].as_array().cloned().unwrap_or_default()
}

/// The legitimate request still works: the server is serving normally.
async fn still_serving(server: &Server) {
    let attempt = server.ok("hostile_slow_upstream", json!({})).await;
    assert_eq!(attempt["outcome"], "ok", "{attempt}");
    assert_eq!(attempt["status"], 200, "{attempt}");
}

#[tokio::test]
async fn other_hosts_ports_schemes_and_paths_are_denied() {
    within(async {
        let sim = simulator().await;
        let (server, _dir) = hostile(&sim).await;
        let report = server.ok("hostile_egress", json!({})).await;
        let all = attempts(&report);
        assert!(all.len() >= 14, "{report}");
        for a in &all {
            if a["what"] == "control" {
                assert_eq!(a["outcome"], "ok", "{a}");
                assert_eq!(a["status"], 200, "{a}");
            } else {
                assert_ne!(a["outcome"], "ok", "an escape went through: {a}");
                assert_ne!(a["outcome"], "accepted", "an escape went through: {a}");
            }
        }
        let denied = all.iter().filter(|a| a["outcome"] == "denied").count();
        assert!(
            denied >= 10,
            "most attempts reach the gate and are denied there: {report}"
        );
        // Only the control request ever reached Proxmox.
        let paths: Vec<_> = sim.requests().iter().map(|r| r.path.clone()).collect();
        assert_eq!(paths, ["/api2/json/version"]);
        assert!(
            server.stderr().contains("egress denied"),
            "denials are logged"
        );
    })
    .await;
}

/// `hostile_methods` declares POST, PUT and DELETE routes (so it is
/// destructive and the default policy would not run it at all); enabled
/// with `write = false`, nothing but GET leaves.
#[tokio::test]
async fn only_get_leaves_the_sandbox() {
    within(async {
        let sim = simulator().await;
        let (server, _dir) = hostile_with(&sim, |_| {
            "\n[policy.tools.hostile_methods]\naction = \"allow\"\nwrite = false\n".into()
        })
        .await;
        let report = server.ok("hostile_methods", json!({})).await;
        let all = attempts(&report);
        assert!(all.len() >= 12, "{report}");
        for a in &all {
            assert_ne!(
                a["outcome"], "ok",
                "a non-GET (or GET with body) went through: {a}"
            );
            assert_ne!(
                a["outcome"], "error",
                "the guest must see a clean denial, not a reset: {a}"
            );
        }
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());
        still_serving(&server).await;
    })
    .await;
}

#[tokio::test]
async fn credential_headers_cannot_be_set_or_seen() {
    within(async {
        let sim = simulator().await;
        let (server, _dir) = hostile(&sim).await;
        let report = server.ok("hostile_headers", json!({})).await;
        for a in attempts(&report) {
            assert_eq!(a["outcome"], "forbidden-header", "{a}");
        }
        let control = &report["control"];
        assert_eq!(control["outcome"], "ok", "{report}");
        assert_eq!(control["credential_markers_seen"], json!([]), "{report}");
        assert!(
            !report.to_string().contains(ADMIN_TOKEN_SECRET),
            "the guest saw the token"
        );
    })
    .await;
}

#[tokio::test]
async fn no_environment_files_stdin_terminal_or_sockets() {
    within(async {
        let sim = simulator().await;
        let (server, _dir) = hostile(&sim).await;
        let report = server.ok("hostile_ambient", json!({})).await;
        assert_eq!(report["env"], json!([]), "{report}");
        assert_eq!(report["args"], json!([]), "{report}");
        assert_eq!(report["preopens"], json!([]), "{report}");
        assert_eq!(report["credential_markers_seen"], json!([]), "{report}");
        assert!(!report.to_string().contains(ADMIN_TOKEN_SECRET));
        for a in attempts(&report) {
            let what = a["what"].as_str().unwrap_or_default().to_string();
            if what == "stdin" {
                assert_eq!(a["eof"], true, "{a}");
                assert_eq!(a["bytes"], 0, "{a}");
            } else {
                assert_ne!(a["outcome"], "ok", "{what} was reachable: {a}");
            }
        }
        let names: Vec<_> = attempts(&report)
            .iter()
            .map(|a| a["what"].to_string())
            .collect();
        assert!(
            names
                .iter()
                .any(|n| n.contains("tcp") || n.contains("socket")),
            "socket attempts ran: {names:?}"
        );
        assert!(sim.requests().is_empty());
    })
    .await;
}

#[tokio::test]
async fn infinite_loop_hits_the_deadline() {
    within(async {
        let sim = simulator().await;
        let (server, _dir) = hostile(&sim).await;
        let started = std::time::Instant::now();
        let message = server.err("hostile_spin", json!({})).await;
        assert!(
            message.contains("deadline") || message.contains("time"),
            "{message}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{:?}",
            started.elapsed()
        );
        still_serving(&server).await;
    })
    .await;
}

#[tokio::test]
async fn memory_bomb_hits_the_cap() {
    within(async {
        let sim = simulator().await;
        let (server, _dir) = hostile(&sim).await;
        let message = server.err("hostile_memory", json!({})).await;
        assert!(message.contains("memory limit of 64 MiB"), "{message}");
        let graceful = server.ok("hostile_memory", json!({"graceful": true})).await;
        let got = graceful["allocated_mib"].as_u64().unwrap();
        assert!(got < 64, "the guest got {got} MiB past a 64 MiB cap");
        still_serving(&server).await;
    })
    .await;
}

#[tokio::test]
async fn panic_exit_floods_and_huge_output_are_contained() {
    within(async {
        let sim = simulator().await;
        let (server, _dir) = hostile(&sim).await;
        let panic = server.err("hostile_panic", json!({})).await;
        assert!(
            panic.contains("crashed") && panic.contains("hostile panic"),
            "{panic}"
        );
        still_serving(&server).await;

        let exit = server.err("hostile_exit", json!({"code": 3})).await;
        assert!(exit.contains("crashed") || exit.contains("exit"), "{exit}");
        still_serving(&server).await;

        let flood = server.ok("hostile_stderr_flood", json!({"mib": 10})).await;
        assert_eq!(
            flood["bytes_written"], flood["requested_bytes"],
            "the capped log accepts and drops: {flood}"
        );
        still_serving(&server).await;

        let big = server.err("hostile_big_output", json!({"mib": 32})).await;
        assert!(big.contains("limit"), "{big}");
        still_serving(&server).await;
    })
    .await;
}

#[tokio::test]
async fn a_stalled_upstream_is_cut_off_by_the_timeout() {
    within(async {
        let sim = simulator().await;
        let (server, _dir) = hostile(&sim).await;
        sim.add_fault(Fault {
            path_prefix: "/version".into(),
            status: 0,
            reason: String::new(),
            times: Some(1),
            delay: Some(Duration::from_secs(30)),
            ..Default::default()
        });
        let started = std::time::Instant::now();
        let result = server.call("hostile_slow_upstream", json!({})).await;
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        if result.is_error != Some(true) {
            let a = result.structured_content.clone().unwrap();
            assert_ne!(a["outcome"], "ok", "{a}");
        }
        still_serving(&server).await;
    })
    .await;
}

#[tokio::test]
async fn a_component_refused_too_often_is_stopped_and_its_refusals_summarised() {
    within(async {
        let sim = simulator().await;
        let (server, dir) = hostile_with(&sim, |dir| {
            let audit = dir.join("audit.jsonl");
            format!("\n[audit]\npath = \"{}\"\n", audit.display())
        })
        .await;
        let audit = dir.path().join("audit.jsonl");

        // 100,000 refused requests with 8 KiB paths, unless the host stops it.
        let started = std::time::Instant::now();
        let message = server.err("hostile_refusal_flood", json!({})).await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(
            message.contains("too many requests")
                && message.contains("refused")
                && message.contains("bug in the component or an attack"),
            "{message}"
        );
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());

        let text = std::fs::read_to_string(&audit).unwrap();
        assert!(text.len() < 1 << 20, "{} bytes of audit log", text.len());
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let call = records
            .iter()
            .find(|r| r["kind"] == "call" && r["tool"] == "hostile_refusal_flood")
            .expect("the call's record");
        assert_eq!(call["outcome"], "sandbox", "{call}");
        let egress: Vec<&Value> = records
            .iter()
            .filter(|r| r["kind"] == "egress" && r["call_seq"] == call["seq"])
            .collect();
        let (summaries, denials): (Vec<&Value>, Vec<&Value>) = egress
            .iter()
            .partition(|r| r["rule"] == "egress.refused-more");
        assert!(
            !denials.is_empty() && denials.len() <= 32,
            "{} denial records",
            denials.len()
        );
        for d in &denials {
            assert_eq!(d["decision"], "deny", "{d}");
            let path = d["path"].as_str().unwrap();
            assert!(
                path.len() <= 512 + "…[truncated]".len() && path.ends_with("…[truncated]"),
                "{path}"
            );
        }
        assert_eq!(summaries.len(), 1, "{egress:?}");
        let reason = summaries[0]["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("and ") && reason.ends_with(" more refused"),
            "{reason}"
        );

        still_serving(&server).await;
    })
    .await;
}

/// A component that sends allowed requests without end is stopped at the
/// per-call request cap, so what the host keeps for one call stays bounded
/// whatever the guest does within its deadline.
#[tokio::test]
async fn a_component_sending_without_end_is_stopped_at_the_request_cap() {
    within(async {
        let sim = simulator().await;
        // A low cap keeps the test quick: each request is a TLS round trip.
        let (server, dir) = hostile_timed(&sim, 120, |dir| {
            let audit = dir.join("audit.jsonl");
            format!(
                "max_requests_per_call = 40\n[audit]\npath = \"{}\"\n",
                audit.display()
            )
        })
        .await;
        let message = server
            .err("hostile_request_flood", json!({"count": 5000}))
            .await;
        assert!(
            message.contains("more than 40 requests") && message.contains("stopped"),
            "{message}"
        );
        assert_eq!(sim.requests().len(), 40);
        let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let call = records
            .iter()
            .find(|r| r["kind"] == "call" && r["tool"] == "hostile_request_flood")
            .expect("the call's record");
        assert_eq!(call["outcome"], "sandbox", "{call}");
        assert_eq!(call["upstream"].as_array().unwrap().len(), 41, "{call}");
        let over: Vec<&Value> = records
            .iter()
            .filter(|r| r["rule"] == "egress.too-many-requests")
            .collect();
        assert_eq!(over.len(), 1, "{over:?}");
        still_serving(&server).await;
    })
    .await;
}

/// A call the policy lets write may send only its tool's declared writes,
/// bound to its arguments: `hostile_routes {vmid: 100}` declares
/// POST .../{vmid}/status/start and gets exactly that one through; another
/// vmid, another action, DELETE, encoded `..` or `/`, localhost as the node
/// and an extra segment are all refused at the gate.
#[tokio::test]
async fn a_write_call_can_send_only_its_bound_routes() {
    within(async {
        let sim = simulator().await;
        let (server, _dir) = hostile_with(&sim, |_| {
            "\n[policy.tools.hostile_routes]\naction = \"allow\"\nwrite = true\n".into()
        })
        .await;
        let report = server.ok("hostile_routes", json!({"vmid": 100})).await;
        let all = attempts(&report);
        assert!(all.len() >= 13, "{report}");
        for a in &all {
            if a["what"] == "control" {
                assert!(
                    a["status"].as_u64().is_some(),
                    "the declared write reached Proxmox: {a}"
                );
            } else {
                assert_eq!(
                    a["outcome"], "denied",
                    "a write beside the route went through: {a}"
                );
            }
        }
        let sent: Vec<(String, String)> = sim
            .requests()
            .iter()
            .map(|r| (r.method.clone(), r.path.clone()))
            .collect();
        assert_eq!(
            sent,
            [(
                "POST".to_string(),
                "/api2/json/nodes/pve1/qemu/100/status/start".to_string()
            )]
        );
        // The node given: bound to it, so the same write on another node
        // is refused too.
        sim.clear_requests();
        let report = server
            .ok("hostile_routes", json!({"vmid": 100, "node": "pve2"}))
            .await;
        let control = attempts(&report)
            .into_iter()
            .find(|a| a["what"] == "control")
            .unwrap();
        assert!(control["status"].as_u64().is_some(), "{control}");
        assert_eq!(sim.requests().len(), 1);
        assert!(
            server
                .stderr()
                .contains("not a request this call's tool declares"),
            "refusals are logged with their reason"
        );
        still_serving(&server).await;
    })
    .await;
}

/// Finding 2: a call admitted for one cluster cannot reach another. The
/// component tries a GET and a POST on every cluster it is told of; only
/// the one the call names (or the default) is reached, with the policy
/// letting the tool write, and the audit names the cluster per request.
#[tokio::test]
async fn a_call_reaches_only_the_cluster_it_was_admitted_for() {
    within(async {
        let main = simulator().await;
        let lab = lab_simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = two_clusters(&main, &lab, &dir);
        let log = dir.path().join("audit.jsonl");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!(
            "\n[sandbox]\ntimeout_secs = 8\n\n[audit]\npath = \"{}\"\n\n\
             [policy.tools.hostile_clusters]\naction = \"allow\"\nwrite = true\n\
             conditions = [{{ arg = \"cluster\", op = \"eq\", value = \"lab\" }}]\n",
            log.display()
        ));
        std::fs::write(&config, text).unwrap();
        let opts = Opts {
            env_cluster: false,
            tls: Tls::Nothing,
            ..Opts::default()
        }
        .arg("--component")
        .arg(HOSTILE_WASM)
        .arg("--config")
        .arg(&config);
        let server = Server::start(&main, opts).await;

        // Admitted for lab (spelt in another case: the same cluster).
        let report = server
            .ok("hostile_clusters", json!({"cluster": "LAB"}))
            .await;
        let all = attempts(&report);
        assert_eq!(all.len(), 4, "{report}");
        for a in &all {
            if a["cluster"] == "lab" {
                assert_ne!(a["outcome"], "denied", "lab is this call's cluster: {a}");
                assert!(a["status"].as_u64().is_some(), "lab answered: {a}");
            } else {
                assert_eq!(a["outcome"], "denied", "main is not this call's: {a}");
            }
        }
        assert!(main.requests().is_empty(), "{:?}", main.requests());
        let on_lab: Vec<_> = lab.requests().iter().map(|r| r.method.clone()).collect();
        assert_eq!(on_lab, ["GET", "POST"]);

        // Left out, the cluster is the default (main), and the condition
        // judges that: refused before anything is sent.
        let text = server.err("hostile_clusters", json!({})).await;
        assert!(
            text.contains("policy.tools.hostile_clusters.conditions[0]") && text.contains("main"),
            "{text}"
        );
        assert!(main.requests().is_empty());
        server.stop().await;

        let records: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let egress: Vec<&Value> = records.iter().filter(|r| r["kind"] == "egress").collect();
        assert_eq!(egress.len(), 4, "{records:?}");
        for e in egress {
            match e["cluster"].as_str() {
                Some("lab") => assert_eq!(e["decision"], "allow", "{e}"),
                Some("main") => {
                    assert_eq!(e["decision"], "deny", "{e}");
                    assert_eq!(e["rule"], "egress.cluster", "{e}");
                }
                other => panic!("an egress record without its cluster ({other:?}): {e}"),
            }
        }
    })
    .await;
}
