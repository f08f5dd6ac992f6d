//! Issue 24's storage writes through the real binary against the stateful
//! simulator: `pve_delete_volume`, `pve_download_to_storage`, and the
//! appliance pair. Each sends exactly the request its dry run plans, and
//! what cannot work is refused with nothing sent.

use serde_json::json;

use crate::actions::{allow, writes};
use crate::common::*;
use crate::policy_harness::*;

const ISO: &str = "local:iso/ubuntu-24.04.3-live-server-amd64.iso";

/// The volids `pve_list_storage_content` lists on `storage` of `node`.
async fn volids(server: &Server, node: &str, storage: &str) -> Vec<String> {
    let out = server
        .ok(
            "pve_list_storage_content",
            json!({"node": node, "storage": storage, "limit": 500}),
        )
        .await;
    out["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["volid"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_volume_is_deleted_and_what_must_stay_is_refused() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, &allow(&["pve_delete_volume"])).await;
        let t = "pve_delete_volume";
        let iso = json!({"node": "pve1", "storage": "local", "volid": ISO});

        let mut dry_args = iso.clone();
        dry_args["dry_run"] = json!(true);
        let dry = p.server.ok(t, dry_args).await;
        assert_eq!(dry["sent"], false, "{dry}");
        assert!(sim.writes().is_empty());
        let mut args = iso.clone();
        args["wait"] = json!(true);
        let done = p.server.ok(t, args).await;
        assert_eq!(done["requests"], dry["requests"], "{done}");
        assert_eq!(done["task"]["type"], "imgdel", "{done}");
        assert_eq!(done["task"]["end"]["outcome"], "ok", "{done}");
        assert_eq!(
            writes(&sim),
            [format!("DELETE /nodes/pve1/storage/local/content/{ISO}")]
        );
        assert!(
            !volids(&p.server, "pve1", "local")
                .await
                .contains(&ISO.to_owned())
        );

        // What cannot go: each refused with its reason, nothing sent.
        sim.clear_requests();
        let backup = volids(&p.server, "pve1", "local")
            .await
            .into_iter()
            .find(|v| v.contains("vzdump-qemu-104"))
            .expect("the seeded protected backup of VM 104");
        for (args, says) in [
            (
                json!({"node": "pve1", "storage": "local", "volid": backup}),
                "is protected",
            ),
            (
                json!({"node": "pve1", "storage": "local-lvm", "volid": "local-lvm:vm-100-disk-0"}),
                "still used by VM 100 as scsi0",
            ),
            (
                json!({"node": "pve1", "storage": "local", "volid": ISO}),
                "has no volume",
            ),
            (
                json!({"node": "pve1", "storage": "nfs-images", "volid": ISO}),
                "volid: \"local:iso/ubuntu-24.04.3-live-server-amd64.iso\" is on storage \"local\"",
            ),
            (
                json!({"node": "pve1", "storage": "local", "volid": "local:iso/../x.iso"}),
                "volid: ",
            ),
        ] {
            let message = p.server.err(t, args.clone()).await;
            assert!(message.contains(says), "{args}: {message}");
        }
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_download_lands_on_its_storage_and_a_bad_checksum_fails_its_task() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, &allow(&["pve_download_to_storage"])).await;
        let t = "pve_download_to_storage";
        let url = "https://mirror.example.org/alpine/alpine-virt-3.20.3-x86_64.iso";
        let sum = pve_sim::download_checksum(url, "sha256").expect("sha256 is known");
        let args = json!({"node": "pve1", "storage": "local", "url": url, "content": "iso",
                          "filename": "alpine.iso", "checksum": sum,
                          "checksum_algorithm": "sha256", "wait": true});

        let mut dry_args = args.clone();
        dry_args["dry_run"] = json!(true);
        let dry = p.server.ok(t, dry_args).await;
        assert_eq!(dry["sent"], false, "{dry}");
        assert!(sim.writes().is_empty());
        let done = p.server.ok(t, args.clone()).await;
        assert_eq!(done["requests"], dry["requests"], "{done}");
        assert_eq!(done["task"]["type"], "download", "{done}");
        assert_eq!(done["task"]["end"]["outcome"], "ok", "{done}");
        assert_eq!(
            writes(&sim),
            [format!(
                "POST /nodes/pve1/storage/local/download-url checksum={sum}&checksum-algorithm=sha256&content=iso&filename=alpine.iso&url={url}"
            )]
        );
        assert!(
            volids(&p.server, "pve1", "local")
                .await
                .contains(&"local:iso/alpine.iso".to_owned())
        );

        // A checksum that does not match: the task fails, no file is kept.
        let mut wrong = args.clone();
        wrong["filename"] = json!("alpine-2.iso");
        wrong["checksum"] = json!("0".repeat(64));
        let failed = p.server.ok(t, wrong).await;
        assert_eq!(failed["task"]["end"]["outcome"], "error", "{failed}");
        let exit = failed["task"]["end"]["exitstatus"].as_str().unwrap();
        assert!(exit.contains("checksum mismatch"), "{failed}");
        assert!(
            !volids(&p.server, "pve1", "local")
                .await
                .contains(&"local:iso/alpine-2.iso".to_owned())
        );

        // What cannot work: refused, nothing sent.
        sim.clear_requests();
        for (change, says) in [
            (json!({"filename": "alpine.iso"}), "local:iso/alpine.iso is already on local"),
            (json!({"storage": "local-lvm"}), "\"local-lvm\" does not take ISO images (iso)"),
            (json!({"filename": "alpine.qcow2"}), "filename: \"alpine.qcow2\" does not end in"),
            (json!({"checksum_algorithm": null}), "checksum_algorithm: missing"),
            (json!({"url": "ftp://mirror.example.org/x.iso"}), "url: the scheme ftp"),
            (json!({"url": "https://me:secret@mirror.example.org/x.iso"}), "credentials"),
        ] {
            let mut a = args.clone();
            for (k, v) in change.as_object().unwrap() {
                if v.is_null() {
                    a.as_object_mut().unwrap().remove(k);
                } else {
                    a[k] = v.clone();
                }
            }
            let message = p.server.err(t, a).await;
            assert!(message.contains(says), "{change}: {message}");
            assert!(!message.contains("secret"), "{message}");
        }
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn appliances_are_listed_and_one_is_downloaded() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(
            &sim,
            &allow(&["pve_download_appliance"]),
            Opts::default()
                .arg("--toolsets")
                .arg("default,provisioning"),
        )
        .await;
        let listed = p
            .server
            .ok("pve_list_appliances", json!({"node": "pve1"}))
            .await;
        assert_eq!(listed["total"], 5, "{listed}");
        let names: Vec<&str> = listed["appliances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["template"].as_str().unwrap())
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        let debian13 = *names
            .iter()
            .find(|n| n.starts_with("debian-13-standard"))
            .expect("debian 13 in the index");
        let turnkey = p
            .server
            .ok(
                "pve_list_appliances",
                json!({"node": "pve1", "section": "turnkeylinux"}),
            )
            .await;
        assert_eq!(turnkey["total"], 1, "{turnkey}");

        let t = "pve_download_appliance";
        let args = json!({"node": "pve1", "storage": "local", "template": debian13, "wait": true});
        let mut dry_args = args.clone();
        dry_args["dry_run"] = json!(true);
        let dry = p.server.ok(t, dry_args).await;
        assert!(sim.writes().is_empty());
        let done = p.server.ok(t, args).await;
        assert_eq!(done["requests"], dry["requests"], "{done}");
        assert_eq!(done["task"]["end"]["outcome"], "ok", "{done}");
        assert_eq!(
            writes(&sim),
            [format!(
                "POST /nodes/pve1/aplinfo storage=local&template={debian13}"
            )]
        );
        let volid = format!("local:vztmpl/{debian13}");
        assert!(volids(&p.server, "pve1", "local").await.contains(&volid));

        sim.clear_requests();
        let debian12 = *names
            .iter()
            .find(|n| n.starts_with("debian-12-standard"))
            .unwrap();
        for (args, says) in [
            (
                json!({"node": "pve1", "storage": "local", "template": debian12}),
                "is already on local",
            ),
            (
                json!({"node": "pve1", "storage": "local", "template": "nope_1.0_amd64.tar.zst"}),
                "template: \"nope_1.0_amd64.tar.zst\" is not in node pve1's appliance index",
            ),
            (
                json!({"node": "pve1", "storage": "local-lvm", "template": debian12}),
                "does not take container templates",
            ),
        ] {
            let message = p.server.err(t, args.clone()).await;
            assert!(message.contains(says), "{args}: {message}");
        }
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        assert_no_schema_violations(&sim);
    })
    .await;
}
