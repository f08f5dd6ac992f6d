//! `pve_convert_to_template` through the real binary against the stateful
//! simulator: a stopped VM becomes a template through its task and a
//! container at once, each with exactly its POST; a template, a running
//! guest and a container with snapshots are refused or left alone with
//! nothing sent.

use serde_json::json;

use crate::actions::{allow, writes};
use crate::common::*;
use crate::policy_harness::*;

/// A server offering `provisioning`, which only a server naming it does.
fn provisioning() -> Opts {
    Opts::default()
        .arg("--toolsets")
        .arg("default,provisioning")
}

#[tokio::test]
async fn a_stopped_guest_becomes_a_template_and_what_cannot_is_refused() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(
            &sim,
            &allow(&[
                "pve_convert_to_template",
                "pve_create_snapshot",
                "pve_delete_snapshot",
            ]),
            provisioning(),
        )
        .await;
        let t = "pve_convert_to_template";

        // A VM: its dry run plans exactly the POST the real call sends.
        let dry = p.server.ok(t, json!({"vmid": 104, "dry_run": true})).await;
        assert_eq!(dry["sent"], false, "{dry}");
        assert!(sim.writes().is_empty());
        let done = p.server.ok(t, json!({"vmid": 104, "wait": true})).await;
        assert_eq!(done["requests"], dry["requests"], "{done}");
        assert_eq!(done["task"]["type"], "qmtemplate", "{done}");
        assert_eq!(done["task"]["end"]["outcome"], "ok", "{done}");
        assert_eq!(writes(&sim), ["POST /nodes/pve1/qemu/104/template"]);
        assert!(sim.guest(104).unwrap().template);

        // Again: nothing to do, nothing sent.
        sim.clear_requests();
        let again = p.server.ok(t, json!({"vmid": 104})).await;
        assert_eq!(again["sent"], false, "{again}");
        assert!(
            again["effect"]
                .as_str()
                .unwrap()
                .contains("already a template"),
            "{again}"
        );
        // A running VM: refused before any write.
        let running = p.server.err(t, json!({"vmid": 100})).await;
        assert!(running.contains("Shut it down first"), "{running}");
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());

        // A container with a snapshot is refused naming it; without, it
        // is converted at once (Proxmox answers no task).
        p.server
            .ok(
                "pve_create_snapshot",
                json!({"vmid": 108, "snapname": "pre", "wait": true}),
            )
            .await;
        sim.clear_requests();
        let snapped = p.server.err(t, json!({"vmid": 108})).await;
        assert!(snapped.contains("1 snapshot (pre)"), "{snapped}");
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        p.server
            .ok(
                "pve_delete_snapshot",
                json!({"vmid": 108, "snapname": "pre", "wait": true}),
            )
            .await;
        sim.clear_requests();
        let ct = p.server.ok(t, json!({"vmid": 108})).await;
        assert_eq!(ct["task"], serde_json::Value::Null, "{ct}");
        assert_eq!(writes(&sim), ["POST /nodes/pve1/lxc/108/template"]);
        assert!(sim.guest(108).unwrap().template);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn converting_needs_its_own_rule_and_bad_input_sends_nothing() {
    within(async {
        let sim = simulator().await;
        // The host ranks a template POST destructive: a wildcard does not
        // run it, and under the default policy it is not even listed.
        let p = with_policy_opts(&sim, "[policy]\ndefault = \"allow\"\n", provisioning()).await;
        let refused = p
            .server
            .err("pve_convert_to_template", json!({"vmid": 104}))
            .await;
        assert!(refused.contains("policy"), "{refused}");
        let t = "pve_convert_to_template";
        let own = with_policy_opts(&sim, &allow(&[t]), provisioning()).await;
        assert_all_invalid(
            &sim,
            &own.server,
            &[
                (t, json!({}), "vmid"),
                (t, json!({"vmid": 7}), "vmid"),
                (t, json!({"vmid": 104, "vm_type": "openvz"}), "vm_type"),
                (t, json!({"vmid": 104, "disk": "scsi0"}), "disk"),
            ],
        )
        .await;
        assert!(sim.writes().is_empty());
        assert!(!sim.guest(104).unwrap().template);
    })
    .await;
}
