//! The HA tools through the real binary against the simulator's HA
//! manager (vm:100 and vm:103 in the restricted group prod-ha on pve1 and
//! pve2, ct:106 free, pve3 offline): a guest put under HA and its settings
//! changed with exactly the requests their dry runs plan, a resource moved
//! by the HA manager and removed, and a migrate to an offline node or one
//! its group or rule forbids refused with nothing sent.

use std::time::Duration;

use serde_json::json;

use crate::actions::{allow, writes};
use crate::common::*;
use crate::policy_harness::*;

const TOOLS: &[&str] = &[
    "pve_set_ha_resource",
    "pve_remove_ha_resource",
    "pve_ha_migrate",
];

fn opts() -> Opts {
    Opts::default().arg("--toolsets").arg("default,ha")
}

#[tokio::test]
async fn a_guest_is_put_under_ha_changed_moved_and_removed() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(&sim, &allow(TOOLS), opts()).await;
        let add = json!({"sid": "vm:101", "state": "started", "max_restart": 2});
        let mut dry = add.clone();
        dry["dry_run"] = true.into();
        let planned = p.server.ok("pve_set_ha_resource", dry).await;
        assert!(sim.writes().is_empty());
        let added = p.server.ok("pve_set_ha_resource", add.clone()).await;
        assert_eq!(added["requests"], planned["requests"], "{added}");
        // The same again: a change of what is configured, nothing to do.
        let again = p.server.ok("pve_set_ha_resource", add).await;
        assert_eq!(again["sent"], false, "{again}");
        let changed = p
            .server
            .ok(
                "pve_set_ha_resource",
                json!({"sid": "vm:101", "group": "prod-ha", "comment": "db"}),
            )
            .await;
        assert!(
            changed["effect"]
                .as_str()
                .unwrap()
                .contains("group unset -> prod-ha"),
            "{changed}"
        );
        let sent = writes(&sim);
        assert_eq!(
            sent[0],
            "POST /cluster/ha/resources max_restart=2&sid=vm:101&state=started"
        );
        assert!(
            sent[1].starts_with("PUT /cluster/ha/resources/vm:101 comment=db&digest=")
                && sent[1].ends_with("&group=prod-ha"),
            "{sent:?}"
        );
        assert_eq!(sent.len(), 2, "{sent:?}");

        // Moved by the HA manager to the other node of its group.
        sim.clear_requests();
        let moved = p
            .server
            .ok(
                "pve_ha_migrate",
                json!({"sid": "vm:100", "node": "pve2", "mode": "migrate"}),
            )
            .await;
        assert!(
            moved["found"]
                .as_str()
                .unwrap()
                .contains("vm:100 is an HA resource on pve1"),
            "{moved}"
        );
        assert_eq!(
            writes(&sim),
            ["POST /cluster/ha/resources/vm:100/migrate node=pve2"]
        );
        wait_until("vm:100 on pve2", Duration::from_secs(20), async || {
            sim.guest(100).filter(|g| g.node == "pve2").map(|_| ())
        })
        .await;
        let there = p
            .server
            .ok(
                "pve_ha_migrate",
                json!({"sid": "vm:100", "node": "pve2", "mode": "relocate"}),
            )
            .await;
        assert_eq!(there["sent"], false, "{there}");

        // Removed: the guest stays where it is, unmanaged.
        sim.clear_requests();
        p.server
            .ok("pve_remove_ha_resource", json!({"sid": "vm:101"}))
            .await;
        assert_eq!(writes(&sim), ["DELETE /cluster/ha/resources/vm:101"]);
        let listed = p.server.ok("pve_list_ha", json!({})).await;
        assert!(!listed.to_string().contains("vm:101"), "{listed}");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn what_the_ha_manager_would_ignore_or_refuse_is_refused_first() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(&sim, &allow(TOOLS), opts()).await;
        for (tool, args, says) in [
            (
                "pve_ha_migrate",
                json!({"sid": "vm:100", "node": "pve3", "mode": "migrate"}),
                "node pve3 is not online",
            ),
            (
                "pve_ha_migrate",
                json!({"sid": "vm:100", "node": "pve9", "mode": "relocate"}),
                "node: \"pve9\" is not a node of this cluster",
            ),
            (
                "pve_ha_migrate",
                json!({"sid": "vm:101", "node": "pve2", "mode": "migrate"}),
                "vm:101 is not an HA resource",
            ),
            (
                "pve_set_ha_resource",
                json!({"sid": "ct:101", "state": "started"}),
                "its HA id is vm:101",
            ),
            (
                "pve_set_ha_resource",
                json!({"sid": "vm:999", "state": "started"}),
                "no guest has vmid 999",
            ),
            (
                "pve_set_ha_resource",
                json!({"sid": "vm:101", "group": "nosuch"}),
                "there is no HA group \"nosuch\"",
            ),
            (
                "pve_set_ha_resource",
                json!({"sid": "vm:100"}),
                "nothing to change",
            ),
            (
                "pve_set_ha_resource",
                json!({"sid": "101", "state": "started"}),
                "write vm:<vmid> for a VM",
            ),
            (
                "pve_remove_ha_resource",
                json!({"sid": "vm:104"}),
                "vm:104 is not an HA resource",
            ),
        ] {
            let text = p.server.err(tool, args.clone()).await;
            assert!(text.contains(says), "{tool}({args}): {text}");
        }
        assert!(sim.writes().is_empty(), "{:?}", writes(&sim));

        // PVE 9 once its groups are rules: a strict node-affinity rule
        // that names only pve1 keeps vm:100 off pve2.
        assert!(sim.migrate_ha_groups());
        sim_api(
            &sim,
            reqwest::Method::PUT,
            "/cluster/ha/rules/ha-group-prod-ha",
            &[("type", "node-affinity"), ("nodes", "pve1")],
        )
        .await;
        sim.clear_requests();
        let text = p
            .server
            .err(
                "pve_ha_migrate",
                json!({"sid": "vm:100", "node": "pve2", "mode": "migrate"}),
            )
            .await;
        assert!(
            text.contains(
                "vm:100 may run only on pve1 (strict node-affinity rule ha-group-prod-ha)"
            ),
            "{text}"
        );
        let text = p
            .server
            .err(
                "pve_set_ha_resource",
                json!({"sid": "vm:101", "group": "prod-ha"}),
            )
            .await;
        assert!(text.contains("migrated to HA rules"), "{text}");
        assert!(sim.writes().is_empty(), "{:?}", writes(&sim));
    })
    .await;
}

#[tokio::test]
async fn on_pve_8_a_restricted_groups_nodes_bound_a_migrate() {
    within(async {
        let sim = pve_sim::Simulator::start(pve_sim::SimConfig {
            pve_version: Some("8.0.9".into()),
            schema_path: Some(schema_path()),
            ..pve_sim::SimConfig::default()
        })
        .await
        .unwrap();
        sim_api(
            &sim,
            reqwest::Method::PUT,
            "/cluster/ha/groups/prod-ha",
            &[("nodes", "pve1")],
        )
        .await;
        let p = with_policy_opts(&sim, &allow(TOOLS), opts()).await;
        sim.clear_requests();
        let text = p
            .server
            .err(
                "pve_ha_migrate",
                json!({"sid": "vm:100", "node": "pve2", "mode": "migrate"}),
            )
            .await;
        assert!(
            text.contains("vm:100 may run only on pve1 (restricted HA group prod-ha)"),
            "{text}"
        );
        // A resource no group restricts goes where it is asked.
        p.server
            .ok(
                "pve_ha_migrate",
                json!({"sid": "ct:106", "node": "pve2", "mode": "relocate"}),
            )
            .await;
        assert_eq!(
            writes(&sim),
            ["POST /cluster/ha/resources/ct:106/relocate node=pve2"]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// One request to the simulator as its administrator, for what no tool
/// here does (an HA rule's nodes).
async fn sim_api(
    sim: &pve_sim::Simulator,
    method: reqwest::Method,
    path: &str,
    form: &[(&str, &str)],
) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_certs_only([reqwest::Certificate::from_pem(sim.ca_pem().as_bytes()).unwrap()])
        .build()
        .unwrap();
    let response = client
        .request(method, format!("{}/api2/json{path}", sim.base_url()))
        .header(
            "Authorization",
            format!("PVEAPIToken={ADMIN_TOKEN_ID}={ADMIN_TOKEN_SECRET}"),
        )
        .header("Content-Type", "application/x-www-form-urlencoded")
        // Plain values only: names and node lists need no escaping.
        .body(
            form.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("&"),
        )
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{path}: {response:?}");
}
