//! Every error path: bad input is refused before any request, and each
//! Proxmox failure becomes a tool error that says what to do. The server
//! keeps serving after each.

use std::time::Duration;

use pve_sim::Fault;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn bad_arguments_name_the_field_and_send_nothing_upstream() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let cases = [
            ("pve_get_vm_status", json!({}), "vmid"),
            ("pve_get_vm_status", json!({"vmid": 99}), "vmid"),
            (
                "pve_get_vm_status",
                json!({"vmid": 1_000_000_000u64}),
                "vmid",
            ),
            ("pve_get_vm_status", json!({"vmid": "101"}), "vmid"),
            (
                "pve_get_vm_status",
                json!({"vmid": 100, "node": "pve 1"}),
                "node",
            ),
            (
                "pve_get_vm_status",
                json!({"vmid": 100, "node": "../etc"}),
                "node",
            ),
            (
                "pve_get_vm_status",
                json!({"vmid": 100, "vm_type": "vm"}),
                "vm_type",
            ),
            ("pve_get_vm_status", json!({"vmid": 100, "foo": 1}), "foo"),
            ("pve_list_vms", json!({"vm_type": "docker"}), "vm_type"),
            ("pve_list_vms", json!({"status": "sleeping"}), "status"),
            ("pve_list_vms", json!({"limit": 0}), "limit"),
            ("pve_list_vms", json!({"node": "-bad"}), "node"),
        ];
        assert_all_invalid(&sim, &server, &cases).await;
        // Boundaries that are valid still go through.
        server.ok("pve_get_vm_status", json!({"vmid": 100})).await;
    })
    .await;
}

#[tokio::test]
async fn rejected_token_is_explained() {
    within(async {
        let sim = simulator().await;
        let opts = Opts {
            token_secret: "00000000-0000-4000-8000-000000000000".into(),
            ..Opts::default()
        };
        let server = Server::start(&sim, opts).await;
        for _ in 0..2 {
            let message = server.err("pve_list_vms", json!({})).await;
            assert!(message.contains("401"), "{message}");
            assert!(message.to_lowercase().contains("token"), "{message}");
        }
    })
    .await;
}

#[tokio::test]
async fn missing_privilege_names_the_privilege_and_path() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::auditor()).await;
        let message = server
            .err(
                "pve_get_vm_status",
                json!({"vmid": 102, "node": "pve2", "vm_type": "qemu"}),
            )
            .await;
        assert!(
            message.contains("VM.Audit") && message.contains("/vms/102"),
            "{message}"
        );
        assert!(message.contains("pveum"), "the fix is shown: {message}");
        // Lists filter instead of failing, as PVE does.
        let list = server.ok("pve_list_vms", json!({})).await;
        assert_eq!(vmids(&list), [100, 101, 200]);
        // Resolution cannot see the guest either, and says why that may be.
        let unresolved = server.err("pve_get_vm_status", json!({"vmid": 102})).await;
        assert!(unresolved.contains("VM.Audit"), "{unresolved}");
        server.ok("pve_get_vm_status", json!({"vmid": 101})).await;
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn missing_vm_unknown_node_and_offline_node() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;

        let missing = server
            .err(
                "pve_get_vm_status",
                json!({"vmid": 555, "node": "pve1", "vm_type": "qemu"}),
            )
            .await;
        assert!(
            missing.contains("Configuration file") && missing.contains("pve_list_vms"),
            "{missing}"
        );
        let wrong_node = server
            .err(
                "pve_get_vm_status",
                json!({"vmid": 101, "node": "pve2", "vm_type": "qemu"}),
            )
            .await;
        assert!(wrong_node.contains("does not exist"), "{wrong_node}");
        let not_in_cluster = server.err("pve_get_vm_status", json!({"vmid": 555})).await;
        assert!(
            not_in_cluster.contains("555") && not_in_cluster.contains("not found"),
            "{not_in_cluster}"
        );
        let mismatch = server
            .err("pve_get_vm_status", json!({"vmid": 101, "node": "pve2"}))
            .await;
        assert!(
            mismatch.contains("pve1"),
            "the right node is suggested: {mismatch}"
        );

        let unknown_node = server
            .err(
                "pve_get_vm_status",
                json!({"vmid": 100, "node": "pve9", "vm_type": "qemu"}),
            )
            .await;
        assert!(unknown_node.contains("pve9"), "{unknown_node}");

        let offline = server.err("pve_get_vm_status", json!({"vmid": 105})).await;
        assert!(
            offline.contains("595") && offline.contains("unreachable"),
            "{offline}"
        );

        server.ok("pve_get_vm_status", json!({"vmid": 100})).await;
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn slow_proxmox_times_out_and_the_server_recovers() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default().env("PVE_TIMEOUT", "1")).await;
        sim.add_fault(Fault {
            path_prefix: "/cluster/resources".into(),
            status: 0,
            reason: String::new(),
            times: Some(1),
            delay: Some(Duration::from_secs(4)),
            ..Default::default()
        });
        let message = server.err("pve_list_vms", json!({})).await;
        assert!(message.to_lowercase().contains("time"), "{message}");
        let list = server.ok("pve_list_vms", json!({})).await;
        assert_eq!(list["total"], 13);
    })
    .await;
}

#[tokio::test]
async fn injected_proxmox_errors_keep_their_message() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        sim.add_fault(Fault {
            path_prefix: "/nodes/pve1".into(),
            status: 596,
            reason: "Broken pipe".into(),
            times: Some(1),
            delay: None,
            ..Default::default()
        });
        let message = server
            .err(
                "pve_get_vm_status",
                json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"}),
            )
            .await;
        assert!(
            message.contains("596") && message.contains("Broken pipe"),
            "{message}"
        );
        server
            .ok(
                "pve_get_vm_status",
                json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"}),
            )
            .await;
    })
    .await;
}

#[tokio::test]
async fn unknown_tool_is_a_protocol_error() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let err = server
            .try_call("pve_delete_everything", json!({}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("Unknown tool"), "{err}");
        server.ok("pve_list_vms", json!({})).await;
    })
    .await;
}
