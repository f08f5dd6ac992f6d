//! The egress gate follows the policy: only a call the policy allows to
//! write may send non-GET requests, and only during that call. The hostile
//! component claims every tool is read-only; that neither grants nor
//! withholds anything.

use serde_json::{Value, json};

use crate::common::*;
use crate::policy_harness::*;

async fn hostile_with(sim: &pve_sim::Simulator, policy: &str) -> PolicyServer {
    with_policy_opts(
        sim,
        policy,
        Opts::default().arg("--component").arg(HOSTILE_WASM),
    )
    .await
}

fn attempt(report: &Value, what: &str) -> Value {
    report["attempts"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["what"] == what))
        .cloned()
        .unwrap_or_else(|| panic!("no attempt {what:?} in {report}"))
}

fn methods_seen(sim: &pve_sim::Simulator) -> Vec<String> {
    sim.requests().iter().map(|r| r.method.clone()).collect()
}

/// `write = false` keeps a tool its own rule enables to GET, although
/// its declared routes would otherwise go out.
#[tokio::test]
async fn a_read_only_call_cannot_send_a_post_even_when_allowed() {
    within(async {
        let sim = simulator().await;
        let p = hostile_with(
            &sim,
            "[policy.tools.hostile_methods]\naction = \"allow\"\nwrite = false\n",
        )
        .await;
        let report = p.server.ok("hostile_methods", json!({})).await;
        for what in ["POST", "PUT", "DELETE", "POST with body"] {
            assert_eq!(attempt(&report, what)["outcome"], "denied", "{report}");
        }
        assert!(sim.requests().is_empty(), "{:?}", methods_seen(&sim));
    })
    .await;
}

#[tokio::test]
async fn a_call_allowed_to_write_gets_its_post_through_and_no_other_call_does() {
    within(async {
        let sim = simulator().await;
        let p = hostile_with(
            &sim,
            "[policy.tools.hostile_methods]\naction = \"allow\"\nwrite = true\n",
        )
        .await;
        let report = p.server.ok("hostile_methods", json!({})).await;
        for what in ["POST", "PUT", "DELETE", "POST with body"] {
            let a = attempt(&report, what);
            assert_eq!(a["outcome"], "ok", "{what} reached Proxmox: {a}");
        }
        // Methods Proxmox does not use stay closed.
        for what in ["PATCH", "OPTIONS", "TRACE", "CONNECT", "other: PROPFIND"] {
            assert_ne!(attempt(&report, what)["outcome"], "ok", "{report}");
        }
        let seen = methods_seen(&sim);
        assert_eq!(seen.iter().filter(|m| *m == "POST").count(), 2, "{seen:?}");
        assert!(
            seen.contains(&"PUT".to_string()) && seen.contains(&"DELETE".to_string()),
            "{seen:?}"
        );

        // Another tool, in the same session right after: GET only.
        sim.clear_requests();
        let other = p
            .server
            .ok("hostile_slow_upstream", json!({"method": "POST"}))
            .await;
        assert_eq!(other["outcome"], "denied", "{other}");
        assert!(sim.requests().is_empty(), "{:?}", methods_seen(&sim));
        let get = p.server.ok("hostile_slow_upstream", json!({})).await;
        assert_eq!(get["outcome"], "ok", "{get}");
    })
    .await;
}
