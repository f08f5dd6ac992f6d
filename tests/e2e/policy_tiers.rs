//! Risk tiers: the host decides each tool's tier from what it may send
//! (every hostile tool claims `readOnlyHint`). A tool that may write is
//! hidden and refused, with nothing sent, until a rule enables it; a
//! destructive one only by a rule of its own, never by `default =
//! "allow"` or the `"*"` table.

use serde_json::{Value, json};

use crate::common::*;
use crate::policy_harness::*;

/// The hostile tools that declare routes (so may write), with their tier.
const WRITERS: &[(&str, &str)] = &[
    ("hostile_write", "write"),
    ("hostile_routes", "write"),
    ("hostile_clusters", "write"),
    // POST .../snapshot/{snapname}/rollback: destructive by the host's table.
    ("hostile_rollback", "destructive"),
    // A DELETE route.
    ("hostile_methods", "destructive"),
    // A harmless route, but it declares destructiveHint.
    ("hostile_hinted", "destructive"),
];

const DESTRUCTIVE: &[&str] = &["hostile_rollback", "hostile_methods", "hostile_hinted"];

fn hostile() -> Opts {
    Opts::default().arg("--component").arg(HOSTILE_WASM)
}

fn writes(sim: &pve_sim::Simulator) -> Vec<(String, String)> {
    sim.writes()
        .into_iter()
        .map(|r| (r.method, r.path))
        .collect()
}

fn enabling_line(tool: &str) -> String {
    format!("an operator can enable it with [policy.tools.{tool}] action = \"allow\"")
}

/// The one write `hostile_write`, `hostile_rollback` or `hostile_hinted`
/// sends for `{vmid: 100}`.
fn write_of(tool: &str) -> (String, String) {
    let path = match tool {
        "hostile_rollback" => "/api2/json/nodes/pve1/qemu/100/snapshot/before/rollback",
        _ => "/api2/json/nodes/pve1/qemu/100/status/start",
    };
    ("POST".into(), path.into())
}

/// Runs a tool the policy enables: its one write reaches Proxmox.
async fn runs(server: &Server, sim: &pve_sim::Simulator, tool: &str) {
    sim.clear_requests();
    let report = server.ok(tool, json!({"vmid": 100})).await;
    let attempt = &report["attempts"][0];
    assert!(
        attempt["status"].as_u64().is_some(),
        "{tool}'s write reached Proxmox: {report}"
    );
    assert_eq!(writes(sim), [write_of(tool)], "{tool}");
}

/// Calls a tool the policy does not enable: refused by `rule` with the
/// line that would enable it, and nothing at all reaches Proxmox.
async fn refused_unsent(
    server: &Server,
    sim: &pve_sim::Simulator,
    tool: &str,
    rule: &str,
) -> String {
    sim.clear_requests();
    let text = refused(server, tool, json!({"vmid": 100}), rule).await;
    assert!(text.starts_with("Denied by policy ("), "{text}");
    assert!(text.ends_with(&enabling_line(tool)), "{text}");
    assert!(sim.requests().is_empty(), "{tool}: {:?}", sim.requests());
    text
}

#[tokio::test]
async fn the_default_policy_hides_and_refuses_every_tool_that_may_write() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, hostile()).await;
        let names = server.tool_names().await;
        for (tool, tier) in WRITERS {
            assert!(!names.iter().any(|n| n == tool), "{tool} is listed: {names:?}");
            let text = refused_unsent(&server, &sim, tool, "policy.default").await;
            assert!(
                text.contains(&format!(
                    "the policy is read-only (default = \"read-only\") and {tool} may write (tier {tier})"
                )),
                "{text}"
            );
        }
        // Tools that declare no routes are still offered, and run GET-only.
        for tool in ["hostile_egress", "hostile_slow_upstream"] {
            assert!(names.iter().any(|n| n == tool), "{tool}: {names:?}");
        }
        let get = server.ok("hostile_slow_upstream", json!({})).await;
        assert_eq!(get["outcome"], "ok", "{get}");
        let post = server
            .ok("hostile_slow_upstream", json!({"method": "POST"}))
            .await;
        assert_eq!(post["outcome"], "denied", "{post}");
        assert!(writes(&sim).is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_rule_of_its_own_enables_a_write_or_destructive_tool_and_its_writes() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(
            &sim,
            "[policy.tools.hostile_write]\naction = \"allow\"\n\
             [policy.tools.hostile_rollback]\naction = \"allow\"\n",
            hostile(),
        )
        .await;
        let names = p.server.tool_names().await;
        for tool in ["hostile_write", "hostile_rollback"] {
            assert!(names.iter().any(|n| n == tool), "{tool}: {names:?}");
            runs(&p.server, &sim, tool).await;
        }
        // The others are still hidden and refused.
        assert!(!names.iter().any(|n| n == "hostile_hinted"), "{names:?}");
        refused_unsent(&p.server, &sim, "hostile_hinted", "policy.default").await;
    })
    .await;
}

#[tokio::test]
async fn default_allow_and_the_wildcard_enable_write_tools_never_destructive_ones() {
    within(async {
        let sim = simulator().await;
        for (policy, rule) in [
            ("[policy]\ndefault = \"allow\"\n", "policy.default"),
            (
                "[policy.tools.\"*\"]\naction = \"allow\"\n",
                "policy.tools.\"*\"",
            ),
            (
                "[policy]\ndefault = \"allow\"\n[policy.tools.\"*\"]\naction = \"allow\"\nwrite = true\n",
                "policy.tools.\"*\"",
            ),
        ] {
            sim.clear_requests();
            let p = with_policy_opts(&sim, policy, hostile()).await;
            let names = p.server.tool_names().await;
            assert!(
                names.iter().any(|n| n == "hostile_write"),
                "{policy}: {names:?}"
            );
            runs(&p.server, &sim, "hostile_write").await;
            for tool in DESTRUCTIVE {
                assert!(!names.iter().any(|n| n == tool), "{policy}: {tool} listed");
                let text = refused_unsent(&p.server, &sim, tool, rule).await;
                assert!(
                    text.contains(&format!("{tool} is destructive, and "))
                        && text.contains("it needs its own rule"),
                    "{text}"
                );
            }
        }
        // With its own table, the destructive tool runs under the same
        // default; `hostile_hinted` (no table) still does not.
        let p = with_policy_opts(
            &sim,
            "[policy]\ndefault = \"allow\"\n[policy.tools.hostile_hinted]\naction = \"allow\"\n",
            hostile(),
        )
        .await;
        runs(&p.server, &sim, "hostile_hinted").await;
        refused_unsent(&p.server, &sim, "hostile_rollback", "policy.default").await;
    })
    .await;
}

/// Hiding follows the verdict before the arguments: a tool allowed under
/// conditions is listed (a call that meets them runs), and one whose own
/// rule denies it is not.
#[tokio::test]
async fn conditions_do_not_hide_a_tool_and_a_denial_does() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(
            &sim,
            "[policy.tools.hostile_rollback]\naction = \"allow\"\n\
             conditions = [{ arg = \"vmid\", op = \"in\", value = [100] }]\n\
             [policy.tools.hostile_write]\naction = \"deny\"\nreason = \"not today\"\n",
            hostile(),
        )
        .await;
        let names = p.server.tool_names().await;
        assert!(names.iter().any(|n| n == "hostile_rollback"), "{names:?}");
        assert!(!names.iter().any(|n| n == "hostile_write"), "{names:?}");
        runs(&p.server, &sim, "hostile_rollback").await;
        sim.clear_requests();
        refused(
            &p.server,
            "hostile_rollback",
            json!({"vmid": 101}),
            "policy.tools.hostile_rollback.conditions[0]",
        )
        .await;
        let text = refused(
            &p.server,
            "hostile_write",
            json!({}),
            "policy.tools.hostile_write",
        )
        .await;
        assert!(text.ends_with("not today"), "{text}");
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());
    })
    .await;
}

/// `tools/list` tells clients what the host decided, not what the
/// component claims: a tool that may write is not `readOnlyHint`, and a
/// destructive one is `destructiveHint`.
#[tokio::test]
async fn listed_annotations_follow_the_tier() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(
            &sim,
            "[policy.tools.hostile_write]\naction = \"allow\"\n\
             [policy.tools.hostile_rollback]\naction = \"allow\"\n",
            hostile(),
        )
        .await;
        let tools: Vec<Value> = p
            .server
            .client
            .list_all_tools()
            .await
            .expect("tools/list")
            .into_iter()
            .map(|t| serde_json::to_value(t).unwrap())
            .collect();
        let hints = |name: &str| {
            let t = tools
                .iter()
                .find(|t| t["name"] == name)
                .unwrap_or_else(|| panic!("{name} listed"));
            (
                t["annotations"]["readOnlyHint"].clone(),
                t["annotations"]["destructiveHint"].clone(),
            )
        };
        // A read-only tool says only that (its other hints mean nothing);
        // a claim the tier corrects is said outright.
        assert_eq!(hints("hostile_egress"), (json!(true), Value::Null));
        assert_eq!(hints("hostile_write"), (json!(false), json!(false)));
        assert_eq!(hints("hostile_rollback"), (json!(false), json!(true)));
    })
    .await;
}
