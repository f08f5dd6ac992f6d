//! The policy's rules through the real binary: allow, deny with its reason,
//! hide, each condition operator, an absent argument, the `"*"` rule and
//! the default modes. A refusal is an `isError` result naming the rule, and
//! the guest never runs (the simulator sees nothing).

use serde_json::json;

use crate::common::*;
use crate::policy_harness::*;

#[tokio::test]
async fn deny_shows_its_reason_and_allow_runs() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(
            &sim,
            r#"
[policy]
default = "deny"
[policy.tools.pve_list_backups]
action = "deny"
reason = "backups are out of scope for this agent"
[policy.tools.pve_list_vms]
action = "allow"
[policy.tools.pve_get_version]
"#,
        )
        .await;
        let text = refused(
            &p.server,
            "pve_list_backups",
            json!({"node": "pve1", "storage": "local"}),
            "policy.tools.pve_list_backups",
        )
        .await;
        assert_eq!(
            text,
            "Denied by policy (policy.tools.pve_list_backups): backups are out of scope for this agent"
        );
        assert!(sim.requests().is_empty(), "{:?}", paths(&sim));
        // Listed tools run under default = "deny"; unlisted ones do not.
        p.server.ok("pve_list_vms", json!({})).await;
        p.server.ok("pve_get_version", json!({})).await;
        let before = sim.requests().len();
        let text = refused(&p.server, "pve_list_nodes", json!({}), "policy.default").await;
        assert!(text.contains("default = \"deny\"") && text.contains("not listed"), "{text}");
        assert_eq!(sim.requests().len(), before);
        assert!(
            p.server.stderr().contains("rule=policy.tools.pve_list_backups"),
            "refusals are logged with their rule"
        );
    })
    .await;
}

#[tokio::test]
async fn hidden_tools_are_not_listed_and_refused_when_called() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, "[policy.tools.pve_list_nodes]\nhide = true\n").await;
        let listed = p.server.tool_names().await;
        assert!(
            !listed.contains(&"pve_list_nodes".to_string()),
            "{listed:?}"
        );
        assert_eq!(listed.len(), catalog().len() - 1, "{listed:?}");
        let text = refused(
            &p.server,
            "pve_list_nodes",
            json!({}),
            "policy.tools.pve_list_nodes",
        )
        .await;
        assert!(text.contains("not available"), "{text}");
        assert!(sim.requests().is_empty());
        p.server.ok("pve_get_version", json!({})).await;
    })
    .await;
}

const CONDITIONS: &str = r#"
[policy.tools.pve_get_vm_status]
conditions = [{ arg = "vmid", op = "in", value = [100, 101] }]
[policy.tools.pve_get_vm_config]
conditions = [{ arg = "vmid", op = "not_in", value = [100] }]
[policy.tools.pve_get_node_metrics]
conditions = [{ arg = "node", op = "eq", value = "pve1" }]
[policy.tools.pve_list_vms]
conditions = [
  { arg = "limit", op = "lt", value = 50 },
  { arg = "name", op = "regex", value = "web-.*" },
]
[policy.tools.pve_list_tasks]
conditions = [{ arg = "limit", op = "gt", value = 5 }]
"#;

#[tokio::test]
async fn each_condition_operator_passes_and_fails() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, CONDITIONS).await;
        let s = &p.server;
        // Passing: the guest runs.
        s.ok("pve_get_vm_status", json!({"vmid": 101})).await;
        s.ok("pve_get_vm_config", json!({"vmid": 101})).await;
        s.ok("pve_get_node_metrics", json!({"node": "pve1"})).await;
        s.ok("pve_list_vms", json!({"limit": 10, "name": "web-1"}))
            .await;
        s.ok("pve_list_tasks", json!({"limit": 10})).await;
        // Failing: refused before the guest runs, naming the condition.
        sim.clear_requests();
        let cases = [
            (
                "pve_get_vm_status",
                json!({"vmid": 102}),
                "policy.tools.pve_get_vm_status.conditions[0]",
                "vmid in [100,101]",
            ),
            (
                "pve_get_vm_config",
                json!({"vmid": 100}),
                "policy.tools.pve_get_vm_config.conditions[0]",
                "vmid not_in [100]",
            ),
            (
                "pve_get_node_metrics",
                json!({"node": "pve2"}),
                "policy.tools.pve_get_node_metrics.conditions[0]",
                "node eq \"pve1\"",
            ),
            (
                "pve_list_vms",
                json!({"limit": 50, "name": "web-1"}),
                "policy.tools.pve_list_vms.conditions[0]",
                "limit lt 50",
            ),
            (
                "pve_list_vms",
                json!({"limit": 10, "name": "db-1"}),
                "policy.tools.pve_list_vms.conditions[1]",
                "name regex \"web-.*\"",
            ),
            // The pattern must match the whole value.
            (
                "pve_list_vms",
                json!({"limit": 10, "name": "xweb-1"}),
                "policy.tools.pve_list_vms.conditions[1]",
                "name regex",
            ),
            (
                "pve_list_tasks",
                json!({"limit": 5}),
                "policy.tools.pve_list_tasks.conditions[0]",
                "limit gt 5",
            ),
        ];
        for (tool, args, rule, condition) in cases {
            let text = refused(s, tool, args.clone(), rule).await;
            assert!(text.starts_with("Denied by policy ("), "{text}");
            assert!(text.contains("does not satisfy"), "{tool}({args}): {text}");
            assert!(text.contains(condition), "{tool}({args}): {text}");
        }
        assert!(sim.requests().is_empty(), "{:?}", paths(&sim));
    })
    .await;
}

#[tokio::test]
async fn an_absent_argument_cannot_satisfy_a_condition() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, CONDITIONS).await;
        for (tool, args, arg) in [
            ("pve_get_node_metrics", json!({}), "node"),
            ("pve_get_node_metrics", json!({"node": null}), "node"),
            // not_in cannot be shown to hold for a value that is not there.
            ("pve_get_vm_config", json!({"node": "pve1"}), "vmid"),
            ("pve_list_vms", json!({"limit": 10}), "name"),
        ] {
            let text = p.server.err(tool, args.clone()).await;
            assert!(
                text.contains(&format!("argument `{arg}` is absent"))
                    && text.contains("conditions["),
                "{tool}({args}): {text}"
            );
        }
        assert!(sim.requests().is_empty(), "{:?}", paths(&sim));
    })
    .await;
}

/// Proxmox reads `node = "localhost"` as whichever node answers, so it
/// must not slip past `node not_in [...]`: the host refuses it under a
/// condition on `node`, and the guest refuses it everywhere else, before
/// any request.
#[tokio::test]
async fn localhost_cannot_stand_in_for_a_node() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(
            &sim,
            "[policy.tools.pve_get_node_metrics]\n\
             conditions = [{ arg = \"node\", op = \"not_in\", value = [\"pve1\"] }]\n",
        )
        .await;
        sim.clear_requests();
        for name in ["localhost", "LOCALHOST"] {
            let text = refused(
                &p.server,
                "pve_get_node_metrics",
                json!({ "node": name }),
                "policy.tools.pve_get_node_metrics.conditions[0]",
            )
            .await;
            assert!(
                text.contains("argument `node`")
                    && text.contains("name the node, e.g. from pve_list_nodes"),
                "{text}"
            );
        }
        // No condition applies to pve_list_storage: the guest refuses it.
        let text = p
            .server
            .err("pve_list_storage", json!({"node": "localhost"}))
            .await;
        assert!(
            text.contains("node") && text.contains("name the node, e.g. from pve_list_nodes"),
            "{text}"
        );
        assert!(sim.requests().is_empty(), "{:?}", paths(&sim));
        // A named node still works.
        p.server
            .ok("pve_get_node_metrics", json!({"node": "pve2"}))
            .await;
    })
    .await;
}

#[tokio::test]
async fn the_wildcard_rule_applies_to_every_tool_unless_a_tool_rule_decides() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(
            &sim,
            r#"
[policy.tools."*"]
action = "deny"
reason = "maintenance window"
[policy.tools.pve_get_version]
action = "allow"
"#,
        )
        .await;
        p.server.ok("pve_get_version", json!({})).await;
        for tool in ["pve_list_vms", "pve_list_nodes", "pve_get_cluster_status"] {
            let text = refused(&p.server, tool, json!({}), "policy.tools.\"*\"").await;
            assert!(text.ends_with("maintenance window"), "{text}");
        }

        // Conditions of "*" apply to every tool, with the tool's own.
        let p = with_policy(
            &sim,
            r#"
[policy.tools."*"]
conditions = [{ arg = "cluster", op = "eq", value = "default" }]
"#,
        )
        .await;
        p.server
            .ok("pve_get_version", json!({"cluster": "default"}))
            .await;
        // A condition on `cluster` judges the cluster the call is bound
        // to: the default when it is left out, as configured when spelt
        // in another case.
        p.server.ok("pve_get_version", json!({})).await;
        p.server
            .ok("pve_get_version", json!({"cluster": "DEFAULT"}))
            .await;
        let text = refused(
            &p.server,
            "pve_get_version",
            json!({"cluster": "prod"}),
            "policy.tools.\"*\".conditions[0]",
        )
        .await;
        assert!(text.contains("\"prod\""), "{text}");
    })
    .await;
}

#[tokio::test]
async fn default_modes_read_only_deny_and_allow() {
    within(async {
        let sim = simulator().await;
        // read-only (also what runs with no policy at all): every tool of
        // this component declares readOnlyHint, so each runs, GET only.
        let p = with_policy(&sim, "[policy]\ndefault = \"read-only\"\n").await;
        p.server.ok("pve_list_nodes", json!({})).await;
        p.server.ok("pve_get_version", json!({})).await;
        // deny: nothing unlisted runs.
        let p = with_policy(&sim, "[policy]\ndefault = \"deny\"\n").await;
        for tool in catalog() {
            refused(&p.server, tool, json!({}), "policy.default").await;
        }
        // allow: everything runs.
        let p = with_policy(&sim, "[policy]\ndefault = \"allow\"\n").await;
        p.server.ok("pve_list_nodes", json!({})).await;
        p.server.ok("pve_get_version", json!({})).await;
    })
    .await;
}

#[tokio::test]
async fn pve_mcp_call_is_decided_by_the_same_policy() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        write_policy(
            &path,
            "[policy.tools.pve_get_version]\naction = \"deny\"\nreason = \"not from the shell\"\n",
        );
        let out = command(
            &sim,
            &Opts::default(),
            dir.path(),
            &[
                "--policy",
                path.to_str().unwrap(),
                "call",
                "pve_get_version",
            ],
        )
        .output()
        .await
        .expect("running pve-mcp call");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        let result: serde_json::Value = serde_json::from_str(&stdout).expect("a CallToolResult");
        assert_eq!(result["isError"], true);
        assert_eq!(
            result["content"][0]["text"],
            "Denied by policy (policy.tools.pve_get_version): not from the shell"
        );
        assert!(sim.requests().is_empty());
    })
    .await;
}
