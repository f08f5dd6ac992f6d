//! Snapshots, migration, resize and delete against the stateful simulator:
//! each changes the simulated cluster as PVE would, sends exactly its
//! planned request with Proxmox's parameter names, and refuses what would
//! fail without sending a write.

use serde_json::json;

use crate::actions::{allow, writes};
use crate::common::*;
use crate::policy_harness::*;

#[tokio::test]
async fn snapshots_are_taken_rolled_back_and_deleted_for_vms_and_containers() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(
            &sim,
            &allow(&[
                "pve_create_snapshot",
                "pve_rollback_snapshot",
                "pve_delete_snapshot",
            ]),
        )
        .await;
        let out = p
            .server
            .ok(
                "pve_create_snapshot",
                json!({"vmid": 104, "snapname": "before-test", "description": "agent run", "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        assert!(sim.guest(104).unwrap().snapshots.contains(&"before-test".to_owned()));
        p.server
            .ok(
                "pve_rollback_snapshot",
                json!({"vmid": 104, "snapname": "before-test", "wait": true}),
            )
            .await;
        p.server
            .ok(
                "pve_delete_snapshot",
                json!({"vmid": 104, "snapname": "before-test", "wait": true}),
            )
            .await;
        assert!(!sim.guest(104).unwrap().snapshots.contains(&"before-test".to_owned()));
        // A container: no vmstate, and the lxc endpoint.
        p.server
            .ok(
                "pve_create_snapshot",
                json!({"vmid": 108, "snapname": "ct-snap", "wait": true}),
            )
            .await;
        assert!(sim.guest(108).unwrap().snapshots.contains(&"ct-snap".to_owned()));
        assert_eq!(
            writes(&sim),
            [
                "POST /nodes/pve1/qemu/104/snapshot description=agent run&snapname=before-test",
                "POST /nodes/pve1/qemu/104/snapshot/before-test/rollback",
                "DELETE /nodes/pve1/qemu/104/snapshot/before-test",
                "POST /nodes/pve1/lxc/108/snapshot snapname=ct-snap",
            ]
        );

        // Refused before writing: an existing name, a missing one, a
        // reserved one, vmstate on a container.
        let before = writes(&sim).len();
        for (tool, args, expected) in [
            (
                "pve_create_snapshot",
                json!({"vmid": 100, "snapname": "pre_upgrade"}),
                "already has a snapshot",
            ),
            (
                "pve_delete_snapshot",
                json!({"vmid": 100, "snapname": "nope"}),
                "has no snapshot \"nope\"",
            ),
            (
                "pve_create_snapshot",
                json!({"vmid": 104, "snapname": "current"}),
                "reserved",
            ),
            (
                "pve_create_snapshot",
                json!({"vmid": 108, "snapname": "ab", "vmstate": true}),
                "vmstate:",
            ),
        ] {
            let message = p.server.err(tool, args).await;
            assert!(message.contains(expected), "{expected}: {message}");
        }
        assert_eq!(writes(&sim).len(), before);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_guest_migrates_with_its_types_parameters_and_impossible_moves_are_refused() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, &allow(&["pve_migrate_vm"])).await;
        // PVE's own check inside the task: a failed task comes back with
        // its exit status and the end of its log.
        let (result, out) = p
            .server
            .ok_result(
                "pve_migrate_vm",
                json!({"vmid": 101, "target": "pve2", "online": true, "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["end"]["outcome"], "error", "{out}");
        let tail = out["task"]["end"]["log_tail"].to_string();
        assert!(tail.contains("with-local-disks"), "{tail}");
        assert!(summary(&result).contains("FAILED"), "{}", summary(&result));
        assert_eq!(sim.guest(101).unwrap().node, "pve1");
        let out = p
            .server
            .ok(
                "pve_migrate_vm",
                json!({"vmid": 101, "target": "pve2", "online": true, "with_local_disks": true, "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["type"], "qmigrate", "{out}");
        assert_eq!(out["task"]["node"], "pve1", "the task runs on the source: {out}");
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        assert_eq!(sim.guest(101).unwrap().node, "pve2");
        p.server
            .ok(
                "pve_migrate_vm",
                json!({"vmid": 107, "target": "pve1", "restart": true, "wait": true}),
            )
            .await;
        assert_eq!(sim.guest(107).unwrap().node, "pve1");
        assert_eq!(
            writes(&sim),
            [
                "POST /nodes/pve1/qemu/101/migrate online=1&target=pve2",
                "POST /nodes/pve1/qemu/101/migrate online=1&target=pve2&with-local-disks=1",
                "POST /nodes/pve2/lxc/107/migrate restart=1&target=pve1",
            ]
        );
        for (args, expected) in [
            (json!({"vmid": 101, "target": "pve2"}), "already on node pve2"),
            (json!({"vmid": 101, "target": "pve1"}), "online: true"),
            (json!({"vmid": 107, "target": "pve2"}), "restart: true"),
            (json!({"vmid": 104, "target": "pve3"}), "not online"),
            (json!({"vmid": 104, "target": "nosuch"}), "not a node of this cluster"),
        ] {
            let message = p.server.err("pve_migrate_vm", args).await;
            assert!(message.contains(expected), "{expected}: {message}");
        }
        assert_eq!(writes(&sim).len(), 3);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_disk_grows_with_the_config_digest_and_a_shrink_is_refused() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, &allow(&["pve_resize_disk"])).await;
        let guest = sim.guest(104).unwrap();
        let disk = ["scsi0", "virtio0", "sata0"]
            .into_iter()
            .find(|k| guest.config.get(k).is_some())
            .expect("a boot disk");
        let before = guest.maxdisk;
        let out = p
            .server
            .ok(
                "pve_resize_disk",
                json!({"vmid": 104, "disk": disk, "size": "+1G", "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        assert_eq!(sim.guest(104).unwrap().maxdisk, before + (1 << 30));
        let sent = sim.writes();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].params["digest"], guest.digest);
        assert_eq!(sent[0].params["size"], "+1G");

        let message = p
            .server
            .err(
                "pve_resize_disk",
                json!({"vmid": 104, "disk": disk, "size": "1G"}),
            )
            .await;
        assert!(message.contains("cannot shrink"), "{message}");
        let message = p
            .server
            .err(
                "pve_resize_disk",
                json!({"vmid": 104, "disk": disk, "size": "10"}),
            )
            .await;
        assert!(
            message.contains("size:") && message.contains("unit"),
            "{message}"
        );
        assert_eq!(sim.writes().len(), 1);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_stopped_guest_is_deleted_with_purge_in_the_query_and_a_running_one_is_not() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, &allow(&["pve_delete_vm"])).await;
        let message = p.server.err("pve_delete_vm", json!({"vmid": 101})).await;
        assert!(message.contains("is running"), "{message}");
        assert!(sim.writes().is_empty());

        let out = p
            .server
            .ok(
                "pve_delete_vm",
                json!({"vmid": 110, "purge": true, "destroy_unreferenced_disks": true, "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["type"], "qmdestroy", "{out}");
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        assert!(sim.guest(110).is_none());
        let sent = sim.writes();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].method, "DELETE");
        assert_eq!(sent[0].query, "purge=1&destroy-unreferenced-disks=1");
        assert_eq!(sent[0].status, 200);
        assert_no_schema_violations(&sim);
    })
    .await;
}
