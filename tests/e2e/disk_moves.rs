//! `pve_move_disk` through the real binary against the stateful
//! simulator: a VM disk and a container volume move to another storage
//! with exactly the request the dry run plans, the source kept or, with
//! `delete`, removed; what cannot move is refused with nothing sent; and
//! `delete` makes the call destructive, for the policy as for the gate.

use serde_json::json;

use crate::actions::{allow, writes};
use crate::common::*;
use crate::policy_harness::*;

/// A server offering `provisioning` (opt-in) under `policy`.
async fn server(sim: &pve_sim::Simulator, policy: &str) -> PolicyServer {
    with_policy_opts(
        sim,
        policy,
        Opts::default()
            .arg("--toolsets")
            .arg("default,provisioning"),
    )
    .await
}

/// The storage a drive's config value puts it on.
fn storage_of(value: &serde_json::Value) -> &str {
    value.as_str().unwrap().split(':').next().unwrap()
}

#[tokio::test]
async fn disks_move_to_another_storage_and_what_cannot_is_refused() {
    within(async {
        let sim = simulator().await;
        let p = server(&sim, &allow(&["pve_move_disk"])).await;
        let t = "pve_move_disk";

        // A running VM's disk: the source stays as an unused disk.
        let args = json!({"vmid": 100, "disk": "scsi0", "storage": "nfs-images", "wait": true});
        let mut dry_args = args.clone();
        dry_args["dry_run"] = json!(true);
        let dry = p.server.ok(t, dry_args).await;
        assert!(sim.writes().is_empty());
        let digest = sim.guest(100).unwrap().digest;
        let done = p.server.ok(t, args).await;
        assert_eq!(done["requests"], dry["requests"], "{done}");
        assert_eq!(done["task"]["type"], "qmmove", "{done}");
        // A running VM's mirror may end with warnings; the move is done.
        assert_ne!(done["task"]["end"]["outcome"], "error", "{done}");
        assert_eq!(
            writes(&sim),
            [format!(
                "POST /nodes/pve1/qemu/100/move_disk digest={digest}&disk=scsi0&storage=nfs-images"
            )]
        );
        let config = sim.guest(100).unwrap().config;
        assert_eq!(storage_of(&config["scsi0"]), "nfs-images", "{config}");
        assert_eq!(config["unused0"], "local-lvm:vm-100-disk-0", "{config}");

        // A stopped container's root volume, its source deleted.
        sim.clear_requests();
        let ct = p
            .server
            .ok(
                t,
                json!({"vmid": 108, "disk": "rootfs", "storage": "nfs-images", "delete": true,
                       "wait": true}),
            )
            .await;
        assert_eq!(ct["task"]["end"]["outcome"], "ok", "{ct}");
        let [w] = &writes(&sim)[..] else {
            panic!("{:?}", writes(&sim))
        };
        assert!(
            w.starts_with("POST /nodes/pve1/lxc/108/move_volume delete=1&digest=")
                && w.ends_with("&storage=nfs-images&volume=rootfs"),
            "{w}"
        );
        let config = sim.guest(108).unwrap().config;
        assert_eq!(storage_of(&config["rootfs"]), "nfs-images", "{config}");
        assert!(config.get("unused0").is_none(), "{config}");

        // What cannot move: refused with the reason, nothing sent.
        sim.clear_requests();
        for (args, says) in [
            (
                json!({"vmid": 100, "disk": "scsi0", "storage": "nfs-images"}),
                "already on nfs-images",
            ),
            (
                json!({"vmid": 100, "disk": "scsi7", "storage": "local-lvm"}),
                "has no disk scsi7",
            ),
            (
                json!({"vmid": 100, "disk": "ide2", "storage": "local-lvm"}),
                "CD-ROM",
            ),
            (
                json!({"vmid": 104, "disk": "scsi0", "storage": "local"}),
                "\"local\" does not take VM disks (images)",
            ),
            (
                json!({"vmid": 106, "disk": "rootfs", "storage": "nfs-images"}),
                "only while it is stopped",
            ),
            (
                json!({"vmid": 100, "disk": "rootfs", "storage": "local-lvm"}),
                "disk: rootfs is a container volume",
            ),
            (
                json!({"vmid": 100, "disk": "scsi0", "storage": "no such"}),
                "storage: ",
            ),
        ] {
            let message = p.server.err(t, args.clone()).await;
            assert!(message.contains(says), "{args}: {message}");
        }
        // delete while a snapshot still needs the source.
        let s = with_policy(&sim, &allow(&["pve_create_snapshot"])).await;
        s.server
            .ok(
                "pve_create_snapshot",
                json!({"vmid": 104, "snapname": "keep", "wait": true}),
            )
            .await;
        sim.clear_requests();
        let message = p
            .server
            .err(
                t,
                json!({"vmid": 104, "disk": "scsi0", "storage": "nfs-images", "delete": true}),
            )
            .await;
        assert!(message.contains("has snapshots (keep)"), "{message}");
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// `delete` makes a move destructive: a wildcard `allow` runs the move
/// that keeps the source, and only the tool's own rule runs one that
/// deletes it. Refused calls send nothing.
#[tokio::test]
async fn a_move_that_deletes_its_source_needs_the_tools_own_rule() {
    within(async {
        let sim = simulator().await;
        let p = server(&sim, "[policy]\ndefault = \"allow\"\n").await;
        let refused = p
            .server
            .err(
                "pve_move_disk",
                json!({"vmid": 104, "disk": "scsi0", "storage": "nfs-images", "delete": true}),
            )
            .await;
        assert!(refused.contains("destructive"), "{refused}");
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        let kept = p
            .server
            .ok(
                "pve_move_disk",
                json!({"vmid": 104, "disk": "scsi0", "storage": "nfs-images", "wait": true}),
            )
            .await;
        assert_eq!(kept["task"]["end"]["outcome"], "ok", "{kept}");
        assert_eq!(sim.writes().len(), 1);
    })
    .await;
}
