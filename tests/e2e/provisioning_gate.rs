//! The gate holds each provisioning write (issue 24) to what its call
//! names, whatever the component sends: the hostile component declares
//! exactly the route and parameters of `pve_delete_volume`,
//! `pve_move_disk`, `pve_set_cloudinit` and `pve_download_to_storage`,
//! tries to widen them, and only its control reaches the simulator, whose
//! log holds each write's parameters as PVE reads them.

use std::time::Duration;

use serde_json::json;

use crate::actions::{allow, writes};
use crate::common::*;
use crate::guest_agent_gate::{outcomes, refusal_rules};

/// The call's own key (the hostile tool appends another in one attempt).
const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0wmN/Cr3JXqmLW7u+g9pTh+wyqDHpSQEIQczXkVx9q ops@host";

/// `tool` enabled by a rule of its own, everything else by default.
fn policy(tool: &str) -> String {
    format!("[policy]\ndefault = \"allow\"\n{}", allow(&[tool]))
}

/// The volids on `storage` of `node`, through a server of the embedded
/// tools (the hostile one has no reads).
async fn volids(reader: &Server, node: &str, storage: &str) -> Vec<String> {
    let out = reader
        .ok(
            "pve_list_storage_content",
            json!({"node": node, "storage": storage}),
        )
        .await;
    out["volumes"]
        .as_array()
        .unwrap_or_else(|| panic!("no volumes: {out}"))
        .iter()
        .map(|v| v["volid"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Waits until no task runs, so what the control started is done.
async fn tasks_done(sim: &pve_sim::Simulator) {
    wait_until("the control's task", Duration::from_secs(30), async || {
        sim.running_tasks().is_empty().then_some(())
    })
    .await;
}

/// One delete of the call's own volume, once; not another volume, not
/// under another storage, not with `..` behind it.
#[tokio::test]
async fn a_volume_delete_removes_its_own_volume_once_and_nothing_else() {
    within(async {
        let sim = simulator().await;
        let iso = "local:iso/ubuntu-24.04.3-live-server-amd64.iso";
        let template = "local:vztmpl/debian-12-standard_12.12-1_amd64.tar.zst";
        let dir = tempfile::tempdir().unwrap();
        let server = Server::hostile(&sim, dir.path(), &policy("hostile_volume")).await;
        sim.clear_requests();
        let report = server
            .ok(
                "hostile_volume",
                json!({"node": "pve1", "storage": "local", "volid": iso,
                       "other_volid": template, "other_storage": "nfs-images"}),
            )
            .await;
        assert_eq!(
            outcomes(&report),
            [
                ("another volume".into(), false),
                ("the volume under another storage".into(), false),
                ("an encoded /../ behind the volume".into(), false),
                ("raw .. segments to another volume".into(), false),
                ("control".into(), true),
                ("a second delete".into(), false),
            ],
            "{report}"
        );
        assert_eq!(
            writes(&sim),
            [format!("DELETE /nodes/pve1/storage/local/content/{iso}")]
        );
        assert_no_schema_violations(&sim);
        server.stop().await;
        assert_eq!(
            refusal_rules(dir.path()),
            [
                "egress.route",
                "egress.route",
                // `..` behind a volume, encoded or raw: no path at all.
                "egress.path",
                "egress.path",
                "egress.once",
            ]
        );

        tasks_done(&sim).await;
        let reader = Server::start(&sim, Opts::default()).await;
        let left = volids(&reader, "pve1", "local").await;
        assert!(!left.iter().any(|v| v == iso), "{left:?}");
        assert!(left.iter().any(|v| v == template), "{left:?}");
    })
    .await;
}

/// The call's disk moves to the call's storage, and the source stays: not
/// another VM's disk, not elsewhere, not deleted, not given away.
#[tokio::test]
async fn a_disk_move_moves_its_own_disk_where_the_call_says_and_keeps_the_source() {
    within(async {
        let sim = simulator().await;
        let other_before = sim.guest(100).expect("VM 100").config;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::hostile(&sim, dir.path(), &policy("hostile_move")).await;
        sim.clear_requests();
        let report = server
            .ok(
                "hostile_move",
                json!({"node": "pve1", "vmid": 104, "disk": "scsi0", "storage": "nfs-images",
                       "other_vmid": 100, "other_storage": "local"}),
            )
            .await;
        assert_eq!(
            outcomes(&report),
            [
                ("another VM's disk".into(), false),
                ("another storage".into(), false),
                ("delete the call did not give".into(), false),
                ("an undeclared target-vmid".into(), false),
                ("control".into(), true),
            ],
            "{report}"
        );
        assert_eq!(
            writes(&sim),
            ["POST /nodes/pve1/qemu/104/move_disk disk=scsi0&storage=nfs-images"]
        );
        assert_no_schema_violations(&sim);
        server.stop().await;
        assert_eq!(
            refusal_rules(dir.path()),
            [
                "egress.route",
                "egress.params",
                "egress.params",
                "egress.params",
            ]
        );

        tasks_done(&sim).await;
        let config = sim.guest(104).expect("VM 104").config;
        let scsi0 = config["scsi0"].as_str().unwrap_or_default();
        assert!(scsi0.starts_with("nfs-images:"), "{config}");
        assert_eq!(config["unused0"], "local-lvm:vm-104-disk-0", "{config}");
        assert_eq!(sim.guest(100).expect("VM 100").config, other_before);
    })
    .await;
}

/// The call's user and keys, URL-encoded as Proxmox stores them, on the
/// call's VM: not on another, not with another key, no password, no key
/// deleted.
#[tokio::test]
async fn a_cloudinit_change_sets_exactly_the_calls_user_and_keys() {
    within(async {
        let sim = simulator().await;
        let before = sim.guest(900).expect("VM 900").config;
        let other_before = sim.guest(104).expect("VM 104").config;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::hostile(&sim, dir.path(), &policy("hostile_cloudinit")).await;
        sim.clear_requests();
        let report = server
            .ok(
                "hostile_cloudinit",
                json!({"node": "pve1", "vmid": 900, "ciuser": "ops", "sshkeys": KEY,
                       "other_vmid": 104}),
            )
            .await;
        assert_eq!(
            outcomes(&report),
            [
                ("another VM".into(), false),
                ("a key appended".into(), false),
                ("a password".into(), false),
                ("sshkeys deleted instead".into(), false),
                ("control".into(), true),
            ],
            "{report}"
        );
        // The body's own decoding done, `sshkeys` is as Proxmox stores it.
        let stored = "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIK0wmN%2FCr3JXqmLW7u%2Bg9pTh%2BwyqDHpSQEIQczXkVx9q%20ops%40host";
        assert_eq!(
            writes(&sim),
            [format!(
                "PUT /nodes/pve1/qemu/900/config ciuser=ops&sshkeys={stored}"
            )]
        );
        assert_no_schema_violations(&sim);
        server.stop().await;
        assert_eq!(
            refusal_rules(dir.path()),
            [
                "egress.route",
                "egress.params",
                "egress.params",
                "egress.params",
            ]
        );

        // Only the user and the keys changed (and so the digest): the
        // password is still the seed's, no key was deleted.
        let mut config = sim.guest(900).expect("VM 900").config;
        assert_eq!(config["ciuser"], "ops", "{config}");
        assert_eq!(config["sshkeys"], stored, "{config}");
        let mut before = before;
        for c in [&mut config, &mut before] {
            for key in ["ciuser", "sshkeys", "digest"] {
                c.as_object_mut().unwrap().remove(key);
            }
        }
        assert_eq!(config, before);
        assert_eq!(sim.guest(104).expect("VM 104").config, other_before);
    })
    .await;
}

/// The node fetches the call's URL into the call's storage under the
/// call's file name: not another URL, not another storage, not a name
/// that climbs out.
#[tokio::test]
async fn a_download_fetches_the_calls_url_into_the_calls_file() {
    within(async {
        let sim = simulator().await;
        let url = "https://cdimage.debian.org/debian-cd/13.1.0/amd64/iso-cd/debian-13.1.0-amd64-netinst.iso";
        let file = "debian-13.1.0-amd64-netinst.iso";
        let dir = tempfile::tempdir().unwrap();
        let server = Server::hostile(&sim, dir.path(), &policy("hostile_download")).await;
        sim.clear_requests();
        let report = server
            .ok(
                "hostile_download",
                json!({"node": "pve1", "storage": "local", "url": url, "content": "iso",
                       "filename": file, "other_url": "https://attacker.example/payload.iso",
                       "other_storage": "nfs-images"}),
            )
            .await;
        assert_eq!(
            outcomes(&report),
            [
                ("another URL".into(), false),
                ("another storage".into(), false),
                ("a file name out of the storage".into(), false),
                ("control".into(), true),
            ],
            "{report}"
        );
        assert_eq!(
            writes(&sim),
            [format!(
                "POST /nodes/pve1/storage/local/download-url content=iso&filename={file}&url={url}"
            )]
        );
        assert_no_schema_violations(&sim);
        server.stop().await;
        assert_eq!(
            refusal_rules(dir.path()),
            ["egress.params", "egress.route", "egress.params"]
        );

        tasks_done(&sim).await;
        let reader = Server::start(&sim, Opts::default()).await;
        let local: Vec<String> = volids(&reader, "pve1", "local")
            .await
            .into_iter()
            .filter(|v| v.starts_with("local:iso/"))
            .collect();
        assert_eq!(
            local,
            [
                format!("local:iso/{file}"),
                "local:iso/ubuntu-24.04.3-live-server-amd64.iso".into(),
            ]
        );
        let images = volids(&reader, "pve1", "nfs-images").await;
        assert!(!images.iter().any(|v| v.contains(file)), "{images:?}");
    })
    .await;
}
