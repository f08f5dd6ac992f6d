//! The firewall tools through the real binary against the simulator's
//! firewall (cluster, node pve1 and VM 100 seeded): rules read with their
//! positions and digest, added, moved and deleted with exactly the
//! requests their dry runs plan; a stale digest refused; the lockout guard
//! refusing what would cut the management network off the API or SSH, and
//! letting it through with `allow_lockout`; and the tier of a call
//! following its scope.

use serde_json::{Value, json};

use crate::actions::{allow, writes};
use crate::common::*;
use crate::policy_harness::*;

const TOOLS: &[&str] = &[
    "pve_add_firewall_rule",
    "pve_update_firewall_rule",
    "pve_delete_firewall_rule",
    "pve_set_firewall_options",
];

fn opts() -> Opts {
    Opts::default().arg("--toolsets").arg("default,firewall")
}

/// The rules of one firewall: (digest, rules).
async fn rules(server: &Server, scope: Value) -> (String, Vec<Value>) {
    let out = server.ok("pve_get_firewall", scope).await;
    let digest = out["digest"].as_str().unwrap_or_default().to_owned();
    (digest, out["items"].as_array().unwrap().clone())
}

#[tokio::test]
async fn a_guests_rules_are_read_added_moved_and_deleted_by_position_and_digest() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(&sim, &allow(TOOLS), opts()).await;
        let vm = json!({"scope": "guest", "vmid": 100});
        let (d0, seen) = rules(&p.server, vm.clone()).await;
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(seen[0]["pos"], 0);
        assert_eq!(seen[0]["type"], "group");
        assert_eq!(seen[0]["action"], "webserver");
        assert_eq!(seen[1]["dport"], "22");
        assert!(seen.iter().all(|r| r.get("digest").is_none()), "{seen:?}");

        // The other parts of a firewall.
        for (what, want) in [
            ("options", "policy_in"),
            ("aliases", "db-primary"),
            ("ipsets", "ipfilter-net0"),
            ("refs", "management"),
        ] {
            let mut args = vm.clone();
            args["what"] = what.into();
            let out = p.server.ok("pve_get_firewall", args).await;
            assert!(out["items"].to_string().contains(want), "{what}: {out}");
        }
        let groups = p
            .server
            .ok("pve_get_firewall", json!({"scope": "cluster", "what": "groups"}))
            .await;
        assert_eq!(groups["items"][0]["group"], "webserver", "{groups}");
        assert_eq!(groups["items"][0]["rules"][1]["dport"], "443", "{groups}");
        let sets = p
            .server
            .ok("pve_get_firewall", json!({"scope": "cluster", "what": "ipsets"}))
            .await;
        assert!(sets["items"][0]["members"].to_string().contains("10.0.0.0/24"), "{sets}");

        // Added at position 0, enabled, with the digest read.
        let add = json!({
            "scope": "guest", "vmid": 100, "type": "in", "action": "ACCEPT",
            "proto": "tcp", "dport": "443", "comment": "https", "digest": d0,
        });
        let mut dry = add.clone();
        dry["dry_run"] = true.into();
        let planned = p.server.ok("pve_add_firewall_rule", dry).await;
        assert!(sim.writes().is_empty());
        let added = p.server.ok("pve_add_firewall_rule", add).await;
        assert_eq!(added["requests"], planned["requests"], "{added}");
        assert_eq!(
            writes(&sim),
            [format!(
                "POST /nodes/pve1/qemu/100/firewall/rules action=ACCEPT&comment=https&\
                 digest={d0}&dport=443&enable=1&proto=tcp&type=in"
            )]
        );
        let (d1, now) = rules(&p.server, vm.clone()).await;
        assert_ne!(d1, d0);
        assert_eq!((now.len(), &now[0]["dport"], &now[0]["enable"]), (4, &json!("443"), &json!(1)));

        // Moved below the others, then deleted, each with the digest seen.
        sim.clear_requests();
        p.server
            .ok(
                "pve_update_firewall_rule",
                json!({"scope": "guest", "vmid": 100, "pos": 0, "moveto": 4, "digest": d1}),
            )
            .await;
        let (d2, now) = rules(&p.server, vm.clone()).await;
        assert_eq!(now[3]["dport"], "443", "{now:?}");
        p.server
            .ok(
                "pve_update_firewall_rule",
                json!({"scope": "guest", "vmid": 100, "pos": 3, "enable": false, "digest": d2}),
            )
            .await;
        let (d3, now) = rules(&p.server, vm.clone()).await;
        assert_eq!(now[3]["enable"], 0, "{now:?}");
        p.server
            .ok(
                "pve_delete_firewall_rule",
                json!({"scope": "guest", "vmid": 100, "pos": 3, "digest": d3}),
            )
            .await;
        assert_eq!(
            writes(&sim),
            [
                format!("PUT /nodes/pve1/qemu/100/firewall/rules/0 digest={d1}&moveto=4"),
                format!("PUT /nodes/pve1/qemu/100/firewall/rules/3 digest={d2}&enable=0"),
                format!("DELETE /nodes/pve1/qemu/100/firewall/rules/3 digest={d3}"),
            ]
        );
        let (d4, now) = rules(&p.server, vm.clone()).await;
        assert_eq!(now.len(), 3);

        // Refused, nothing sent: a stale digest, no rule at pos, a group
        // that does not exist, a verdict for a group rule, a scope without
        // what it names, moveto with changes.
        sim.clear_requests();
        for (tool, args, says) in [
            (
                "pve_delete_firewall_rule",
                json!({"scope": "guest", "vmid": 100, "pos": 0, "digest": d1}),
                "changed since you read them",
            ),
            (
                "pve_update_firewall_rule",
                json!({"scope": "guest", "vmid": 100, "pos": 9, "digest": d4, "enable": true}),
                "pos: VM 100 on pve1 has 3 rules",
            ),
            (
                "pve_add_firewall_rule",
                json!({"scope": "guest", "vmid": 100, "type": "group", "action": "nosuch"}),
                "there is no security group \"nosuch\"",
            ),
            (
                "pve_add_firewall_rule",
                json!({"scope": "guest", "vmid": 100, "type": "in", "action": "webserver"}),
                "action: \"webserver\" is not ACCEPT, DROP or REJECT",
            ),
            (
                "pve_add_firewall_rule",
                json!({"scope": "guest", "type": "in", "action": "DROP"}),
                "vmid: required with scope \"guest\"",
            ),
            (
                "pve_get_firewall",
                json!({"scope": "node", "node": "pve1", "what": "aliases"}),
                "node pve1 has no aliases",
            ),
            (
                "pve_update_firewall_rule",
                json!({"scope": "guest", "vmid": 100, "pos": 0, "digest": d4, "moveto": 2, "enable": false}),
                "moveto: Proxmox ignores every change sent with moveto",
            ),
        ] {
            let text = p.server.err(tool, args.clone()).await;
            assert!(text.contains(says), "{tool}({args}): {text}");
        }
        assert!(sim.writes().is_empty(), "{:?}", writes(&sim));
    })
    .await;
}

#[tokio::test]
async fn the_lockout_guard_refuses_what_cuts_the_api_or_ssh_off_unless_allowed() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(&sim, &allow(TOOLS), opts()).await;
        // A DROP of SSH at the top of the cluster's rules comes before the
        // ACCEPT from +management: every online node loses SSH.
        let drop_ssh = json!({
            "scope": "cluster", "type": "in", "action": "DROP", "proto": "tcp", "dport": "22",
        });
        let text = p.server.err("pve_add_firewall_rule", drop_ssh.clone()).await;
        for says in [
            "would cut the management network off SSH (tcp/22) on pve1 by rule 0 of the cluster",
            "SSH (tcp/22) on pve2",
            "allow_lockout: true",
        ] {
            assert!(text.contains(says), "{says}: {text}");
        }
        assert!(!text.contains("8006"), "{text}");
        // A node's own rules come first: its DROP of the API cuts it there.
        let text = p
            .server
            .err(
                "pve_add_firewall_rule",
                json!({"scope": "node", "node": "pve1", "type": "in", "action": "REJECT", "proto": "tcp", "dport": "8000:8100"}),
            )
            .await;
        assert!(
            text.contains("the API and web UI (tcp/8006) on pve1 by rule 0 of node pve1"),
            "{text}"
        );
        // Switching the firewall on is judged by the rules it turns on.
        assert!(sim.writes().is_empty(), "{:?}", writes(&sim));

        // A DROP from a network the management set does not overlap is
        // no cut: sent.
        let (digest, _) = rules(&p.server, json!({"scope": "cluster"})).await;
        let elsewhere = json!({
            "scope": "cluster", "type": "in", "action": "DROP", "proto": "tcp",
            "dport": "22", "source": "198.51.100.0/24",
        });
        p.server.ok("pve_add_firewall_rule", elsewhere).await;
        assert_eq!(
            writes(&sim),
            [format!(
                "POST /cluster/firewall/rules action=DROP&digest={digest}&dport=22&enable=1&\
                 proto=tcp&source=198.51.100.0/24&type=in"
            )]
        );

        // Allowed: the plan says what it cuts, first.
        let mut allowed = drop_ssh.clone();
        allowed["allow_lockout"] = true.into();
        allowed["dry_run"] = true.into();
        let plan = p.server.ok("pve_add_firewall_rule", allowed).await;
        let effect = plan["effect"].as_str().unwrap();
        assert!(
            effect.starts_with("WARNING: this cuts the management network off SSH (tcp/22) on pve1"),
            "{effect}"
        );

        // The cluster's firewall off, a DROP of the API added (no cut while
        // it is off), then switching it on is refused naming that rule.
        sim.clear_requests();
        p.server
            .ok(
                "pve_set_firewall_options",
                json!({"scope": "cluster", "enable": false}),
            )
            .await;
        p.server
            .ok(
                "pve_add_firewall_rule",
                json!({"scope": "cluster", "type": "in", "action": "DROP", "proto": "tcp", "dport": "8006"}),
            )
            .await;
        let text = p
            .server
            .err(
                "pve_set_firewall_options",
                json!({"scope": "cluster", "enable": true}),
            )
            .await;
        assert!(
            text.contains("the API and web UI (tcp/8006) on pve1 by rule 0 of the cluster (in DROP tcp dport 8006)"),
            "{text}"
        );
        let sent = writes(&sim);
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert!(sent[0].starts_with("PUT /cluster/firewall/options digest="), "{sent:?}");
        assert!(sent[0].ends_with("&enable=0"), "{sent:?}");
        // An option the scope does not have is refused naming it.
        let text = p
            .server
            .err(
                "pve_set_firewall_options",
                json!({"scope": "node", "node": "pve1", "policy_in": "DROP"}),
            )
            .await;
        assert!(text.contains("policy_in: node pve1 has no such option"), "{text}");
        let options = p
            .server
            .ok(
                "pve_set_firewall_options",
                json!({"scope": "guest", "vmid": 100, "other": {"macfilter": false}, "log_level_in": "info"}),
            )
            .await;
        assert_eq!(options["requests"][0]["params"]["macfilter"], 0, "{options}");
    })
    .await;
}

#[tokio::test]
async fn a_calls_scope_sets_its_tier() {
    within(async {
        let sim = simulator().await;
        // `default = "allow"` runs writes but never a destructive call: a
        // guest's rule is a write, the cluster's is destructive.
        let p = with_policy_opts(&sim, "[policy]\ndefault = \"allow\"\n", opts()).await;
        let rule = |scope: Value| {
            let mut args =
                json!({"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "8443"});
            args.as_object_mut()
                .unwrap()
                .extend(scope.as_object().unwrap().clone());
            args
        };
        p.server
            .ok(
                "pve_add_firewall_rule",
                rule(json!({"scope": "guest", "vmid": 100})),
            )
            .await;
        refused(
            &p.server,
            "pve_add_firewall_rule",
            rule(json!({"scope": "cluster"})),
            "this call of pve_add_firewall_rule is destructive (by its scope)",
        )
        .await;
        assert_eq!(writes(&sim).len(), 1, "{:?}", writes(&sim));

        // The documented policy: guests' rules only.
        let guests_only = "[policy]\ndefault = \"read-only\"\n\n\
            [policy.tools.pve_add_firewall_rule]\naction = \"allow\"\n\
            conditions = [{ arg = \"scope\", op = \"eq\", value = \"guest\" }]\n";
        let p = with_policy_opts(&sim, guests_only, opts()).await;
        p.server
            .ok(
                "pve_add_firewall_rule",
                rule(json!({"scope": "guest", "vmid": 100})),
            )
            .await;
        for scope in [
            json!({"scope": "cluster"}),
            json!({"scope": "node", "node": "pve1"}),
        ] {
            refused(
                &p.server,
                "pve_add_firewall_rule",
                rule(scope),
                "policy.tools.pve_add_firewall_rule.conditions[0]",
            )
            .await;
        }
        assert_eq!(writes(&sim).len(), 2, "{:?}", writes(&sim));
    })
    .await;
}

/// A lockout the call allows waits for an operator, and what the operator
/// reads names what it cuts.
#[tokio::test]
async fn the_approval_of_a_lockout_says_what_it_cuts() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("pve-mcp.toml");
        std::fs::write(
            &config,
            format!(
                "[policy.tools.pve_add_firewall_rule]\naction = \"require_approval\"\n\
                 approver = \"operator\"\n[approvals]\nadmin_socket = \"{}\"\n",
                dir.path().join("admin.sock").display()
            ),
        )
        .unwrap();
        let token = "e2e-admin-token-firewall-1";
        let opts = opts()
            .arg("--config")
            .arg(config.to_str().unwrap())
            .env("PVE_MCP_ADMIN_TOKEN", token);
        let server = Server::start(&sim, opts).await;
        let text = server
            .err(
                "pve_add_firewall_rule",
                json!({"scope": "cluster", "type": "in", "action": "DROP", "proto": "tcp",
                       "dport": "22", "allow_lockout": true}),
            )
            .await;
        crate::approvals::approval_id(&text);
        let out = tokio::process::Command::new(BIN)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("PVE_MCP_ADMIN_TOKEN", token)
            .arg("--config")
            .arg(&config)
            .args(["approvals", "list", "--json"])
            .output()
            .await
            .unwrap();
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(
            listed.contains("WARNING: this cuts the management network off SSH (tcp/22) on pve1"),
            "{listed}"
        );
        assert!(
            listed.contains("POST /api2/json/cluster/firewall/rules"),
            "{listed}"
        );
        assert!(sim.writes().is_empty(), "{:?}", writes(&sim));
    })
    .await;
}
