//! The gate holds each operations write (issue 25) to what its call names,
//! whatever the component sends: the hostile component declares exactly
//! the routes and parameters of `pve_add_firewall_rule`,
//! `pve_delete_firewall_rule`, `pve_ha_migrate`, `pve_remove_ha_resource`,
//! `pve_update_pool` and `pve_run_replication`, the conditional routes
//! (one per firewall `scope`, one per HA `mode`) included, tries to widen
//! them, and only its control reaches the simulator, whose log holds each
//! write's parameters as PVE reads them.
//!
//! The simulator's answer to a control is mostly not asserted: what
//! matters here is that the control reached it, exactly, and nothing else
//! did.

use serde_json::{Value, json};

use crate::actions::{allow, writes};
use crate::common::*;
use crate::guest_agent_gate::{outcomes, refusal_rules};

/// A digest that is not the rules' (a SHA-1's length).
const OTHER_DIGEST: &str = "0000000000000000000000000000000000000000";

/// `tool` enabled by a rule of its own, everything else by default.
fn policy(tool: &str) -> String {
    format!("[policy]\ndefault = \"allow\"\n{}", allow(&[tool]))
}

/// Runs `tool` with `args` on the hostile component under its own rule,
/// against `sim`, and returns its report, the writes the simulator saw and
/// the rules of the gate's refusals, in attempt order.
async fn run_on(
    sim: &pve_sim::Simulator,
    tool: &str,
    args: Value,
) -> (Value, Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::hostile(sim, dir.path(), &policy(tool)).await;
    sim.clear_requests();
    let report = server.ok(tool, args).await;
    let seen = writes(sim);
    assert_no_schema_violations(sim);
    server.stop().await;
    (report, seen, refusal_rules(dir.path()))
}

/// [`run_on`] a simulator of its own.
async fn run(tool: &str, args: Value) -> (Value, Vec<String>, Vec<String>) {
    run_on(&simulator().await, tool, args).await
}

/// The rules at `path` (e.g. `/cluster/firewall/rules`), read as the
/// simulator's administrator, each without the list's `digest`, and that
/// digest.
async fn firewall_rules(sim: &pve_sim::Simulator, path: &str) -> (Vec<Value>, String) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = reqwest::Certificate::from_pem(sim.ca_pem().as_bytes()).unwrap();
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_certs_only([ca])
        .build()
        .unwrap();
    let response = client
        .get(format!("{}/api2/json{path}", sim.base_url()))
        .header(
            "Authorization",
            format!("PVEAPIToken={ADMIN_TOKEN_ID}={ADMIN_TOKEN_SECRET}"),
        )
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{path}: {response:?}");
    let body: Value = response.json().await.unwrap();
    let mut rules = body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: {body}"))
        .clone();
    let mut digest = String::new();
    for rule in &mut rules {
        let fields = rule.as_object_mut().unwrap();
        if let Some(Value::String(d)) = fields.remove("digest") {
            digest = d;
        }
        // Its position: the rules below a deleted one move up.
        fields.remove("pos");
    }
    (rules, digest)
}

/// `(what, false)` for each widening attempt, `("control", true)`.
fn refused_but_control(attempts: &[&str]) -> Vec<(String, bool)> {
    attempts
        .iter()
        .map(|a| ((*a).to_owned(), *a == "control"))
        .collect()
}

/// The rule a guest-scope call adds goes to the call's guest only: not to
/// the cluster's or a node's rules (routes that apply to other scopes,
/// one of them with a `{node}` the call leaves to the tool), not to another
/// guest's, with nothing undeclared or disabled, and once.
#[tokio::test]
async fn a_guest_scope_rule_goes_to_the_calls_guest_and_nowhere_else() {
    within(async {
        let (report, seen, rules) = run(
            "hostile_firewall",
            json!({"scope": "guest", "vmid": 100, "type": "in", "action": "ACCEPT",
                   "proto": "tcp", "dport": "22", "path_node": "pve1", "other_vmid": 101}),
        )
        .await;
        assert_eq!(
            outcomes(&report),
            refused_but_control(&[
                "the cluster's rules",
                "a node's rules",
                "another guest's rules",
                "an undeclared pos",
                "the rule disabled",
                "control",
                "a second rule",
            ]),
            "{report}"
        );
        assert_eq!(
            seen,
            ["POST /nodes/pve1/qemu/100/firewall/rules action=ACCEPT&dport=22&enable=1&proto=tcp&type=in"]
        );
        assert_eq!(
            rules,
            [
                "egress.route",
                "egress.route",
                "egress.route",
                "egress.params",
                "egress.params",
                "egress.once",
            ]
        );
    })
    .await;
}

/// A cluster-scope call (no `node`, no `vmid`) posts the cluster's rules
/// only: the node and guest routes, whose placeholders it leaves open,
/// do not apply to it.
#[tokio::test]
async fn a_cluster_scope_rule_cannot_post_a_nodes_or_a_guests_rules() {
    within(async {
        let (report, seen, rules) = run(
            "hostile_firewall",
            json!({"scope": "cluster", "type": "in", "action": "DROP", "proto": "tcp",
                   "dport": "8006", "comment": "hostile", "path_node": "pve1",
                   "other_vmid": 100}),
        )
        .await;
        assert_eq!(
            outcomes(&report),
            refused_but_control(&[
                "a node's rules",
                "another guest's rules",
                "an undeclared pos",
                "the rule disabled",
                "control",
                "a second rule",
            ]),
            "{report}"
        );
        assert_eq!(
            seen,
            ["POST /cluster/firewall/rules action=DROP&comment=hostile&dport=8006&enable=1&proto=tcp&type=in"]
        );
        assert_eq!(
            rules,
            [
                "egress.route",
                "egress.route",
                "egress.params",
                "egress.params",
                "egress.once",
            ]
        );
    })
    .await;
}

/// A node-scope call posts its own node's rules only: not the cluster's,
/// not another node's, not those of a guest on its node.
#[tokio::test]
async fn a_node_scope_rule_cannot_post_the_clusters_another_nodes_or_a_guests_rules() {
    within(async {
        let (report, seen, rules) = run(
            "hostile_firewall",
            json!({"scope": "node", "node": "pve1", "type": "in", "action": "ACCEPT",
                   "proto": "tcp", "dport": "3128", "path_node": "pve1",
                   "other_node": "pve2", "other_vmid": 100}),
        )
        .await;
        assert_eq!(
            outcomes(&report),
            refused_but_control(&[
                "the cluster's rules",
                "another node's rules",
                "another guest's rules",
                "an undeclared pos",
                "the rule disabled",
                "control",
                "a second rule",
            ]),
            "{report}"
        );
        assert_eq!(
            seen,
            ["POST /nodes/pve1/firewall/rules action=ACCEPT&dport=3128&enable=1&proto=tcp&type=in"]
        );
        assert_eq!(
            rules,
            [
                "egress.route",
                "egress.route",
                "egress.route",
                "egress.params",
                "egress.params",
                "egress.once",
            ]
        );
    })
    .await;
}

/// A rule's deletion removes the call's position of the call's ruleset,
/// with the call's digest, once: not the position at another scope, not
/// another position or another guest's rule, not with another digest.
#[tokio::test]
async fn a_rule_delete_removes_its_own_position_with_its_own_digest_once() {
    within(async {
        let sim = simulator().await;
        let guest = "/nodes/pve1/qemu/100/firewall/rules";
        let cluster = "/cluster/firewall/rules";
        let (before, digest) = firewall_rules(&sim, guest).await;
        assert!(before.len() >= 2, "{before:?}");
        let (cluster_before, _) = firewall_rules(&sim, cluster).await;
        let (report, seen, rules) = run_on(
            &sim,
            "hostile_firewall_delete",
            json!({"scope": "guest", "vmid": 100, "pos": 0, "digest": digest,
                   "path_node": "pve1", "other_pos": 1, "other_vmid": 101,
                   "other_digest": OTHER_DIGEST}),
        )
        .await;
        assert_eq!(
            outcomes(&report),
            refused_but_control(&[
                "the same position at another scope",
                "another rule",
                "another guest's rule",
                "another digest",
                "control",
                "a second delete",
            ]),
            "{report}"
        );
        assert_eq!(seen, [format!("DELETE {guest}/0 digest={digest}")]);
        assert_eq!(
            rules,
            [
                "egress.route",
                "egress.route",
                "egress.route",
                "egress.params",
                "egress.once",
            ]
        );
        // The control went through: the first rule is gone, the others
        // moved up; the cluster's rules are as they were.
        assert_eq!(firewall_rules(&sim, guest).await.0, before[1..]);
        assert_eq!(firewall_rules(&sim, cluster).await.0, cluster_before);
    })
    .await;
}

/// A migrate call moves its own resource, by migration, to its own node,
/// once: not another resource, not by the relocate route (which applies
/// to `mode: relocate` only), not elsewhere, and it cannot remove the
/// resource, which no route declares.
#[tokio::test]
async fn an_ha_migration_moves_its_own_resource_by_its_own_mode_to_its_own_node() {
    within(async {
        let (report, seen, rules) = run(
            "hostile_ha",
            json!({"sid": "vm:100", "node": "pve2", "mode": "migrate",
                   "other_sid": "vm:103", "other_node": "pve3"}),
        )
        .await;
        assert_eq!(
            outcomes(&report),
            refused_but_control(&[
                "another resource",
                "the other mode",
                "another node",
                "the resource removed",
                "control",
                "a second move",
            ]),
            "{report}"
        );
        assert_eq!(
            seen,
            ["POST /cluster/ha/resources/vm:100/migrate node=pve2"]
        );
        assert_eq!(
            rules,
            [
                "egress.route",
                "egress.route",
                "egress.params",
                "egress.route",
                "egress.once",
            ]
        );
    })
    .await;
}

/// A removal takes the call's resource out of HA, once, and nothing
/// more: not another resource, not with an undeclared `purge`.
#[tokio::test]
async fn an_ha_removal_removes_its_own_resource_once() {
    within(async {
        let (report, seen, rules) = run(
            "hostile_ha_remove",
            json!({"sid": "vm:103", "other_sid": "vm:100"}),
        )
        .await;
        assert_eq!(
            outcomes(&report),
            refused_but_control(&[
                "another resource",
                "an undeclared purge",
                "control",
                "a second removal",
            ]),
            "{report}"
        );
        assert_eq!(seen, ["DELETE /cluster/ha/resources/vm:103"]);
        assert_eq!(rules, ["egress.route", "egress.params", "egress.once"]);
    })
    .await;
}

/// A pool change changes the call's pool as the call says: not another
/// pool (named in the body or the query string), not by deleting it (undeclared) or through PVE 8.0's path, not
/// removing a member the call did not name, not with a second `poolid`.
#[tokio::test]
async fn a_pool_change_changes_its_own_pool_only() {
    within(async {
        let (report, seen, rules) = run(
            "hostile_pool",
            json!({"poolid": "production", "comment": "hostile control",
                   "other_poolid": "staging", "other_vmid": 100}),
        )
        .await;
        assert_eq!(
            outcomes(&report),
            refused_but_control(&[
                "another pool",
                "another pool in the query",
                "the pool deleted",
                "the pool in the path",
                "members removed unasked",
                "poolid twice",
                "control",
            ]),
            "{report}"
        );
        assert_eq!(
            seen,
            ["PUT /pools comment=hostile control&poolid=production"]
        );
        assert_eq!(
            rules,
            [
                "egress.params",
                "egress.params",
                "egress.route",
                "egress.route",
                "egress.params",
                "egress.params",
            ]
        );
    })
    .await;
}

/// A replication run runs the call's job, once: not another job.
#[tokio::test]
async fn a_replication_run_runs_its_own_job_once() {
    within(async {
        let (report, seen, rules) = run(
            "hostile_replication",
            json!({"job": "101-0", "path_node": "pve1", "other_job": "106-0"}),
        )
        .await;
        assert_eq!(
            outcomes(&report),
            refused_but_control(&["another job", "control", "a second run"]),
            "{report}"
        );
        assert_eq!(seen, ["POST /nodes/pve1/replication/101-0/schedule_now"]);
        assert_eq!(rules, ["egress.route", "egress.once"]);
    })
    .await;
}
