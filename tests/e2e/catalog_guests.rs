//! The guest and storage read tools end to end: `pve_get_vm_config`,
//! `pve_list_storage` and `pve_list_backups`, against the seeded cluster
//! (and the large one for the backup bound).

use serde_json::{Value, json};

use crate::common::*;

fn storage_ids(out: &Value) -> Vec<String> {
    out["storages"]
        .as_array()
        .expect("storages array")
        .iter()
        .map(|s| s["storage"].as_str().expect("storage").to_owned())
        .collect()
}

fn backup_vmids(out: &Value) -> Vec<u64> {
    out["backups"]
        .as_array()
        .expect("backups array")
        .iter()
        .map(|b| b["vmid"].as_u64().expect("vmid"))
        .collect()
}

fn ctimes(out: &Value) -> Vec<u64> {
    out["backups"]
        .as_array()
        .expect("backups array")
        .iter()
        .map(|b| b["ctime"].as_u64().expect("ctime"))
        .collect()
}

// --------------------------------------------------------------- vm config

#[tokio::test]
async fn vm_config_of_100_with_highlights_and_one_request() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, c) = server
            .ok_result(
                "pve_get_vm_config",
                json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"}),
            )
            .await;
        assert_fields(
            "config of 100",
            &c,
            json!({"vmid": 100, "node": "pve1", "vm_type": "qemu", "cluster": "default",
                   "masked_keys": []}),
        );
        assert_fields(
            "resolved",
            &c["resolved"],
            json!({"node": false, "vm_type": false}),
        );
        let digest = c["digest"].as_str().unwrap();
        assert!(
            digest.len() == 40 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
            "{digest}"
        );

        let config = &c["config"];
        // memory as Proxmox stores it: a string.
        assert_fields(
            "config",
            config,
            json!({"name": "web-frontend-01", "memory": "4096", "agent": "1", "balloon": 2048,
                   "boot": "order=scsi0;ide2;net0", "parent": "kernel_617"}),
        );
        assert!(config.get("digest").is_some());

        let h = &c["highlights"];
        assert_fields(
            "highlights",
            h,
            json!({"name": "web-frontend-01", "cores": 2, "sockets": 1, "memory_mib": 4096,
                   "ostype": "l26", "agent": true, "onboot": true, "template": false,
                   "lock": null, "tags": ["prod", "web"],
                   "disks": [
                {"key": "ide2", "storage": null, "volume": null, "size": null, "media": "cdrom", "mountpoint": null},
                {"key": "scsi0", "storage": "local-lvm", "volume": "local-lvm:vm-100-disk-0", "size": "32G", "media": null, "mountpoint": null}
            ]}),
        );
        let nics = h["nics"].as_array().unwrap();
        assert_eq!(nics.len(), 1);
        let net0 = &nics[0];
        assert_fields(
            "net0",
            net0,
            json!({"key": "net0", "model": "virtio", "bridge": "vmbr0", "vlan": null,
                   "firewall": true, "name": null}),
        );
        let mac = net0["mac"].as_str().unwrap();
        assert!(
            mac.starts_with("BC:24:11:") && mac.len() == 17,
            "{mac}"
        );
        assert!(
            config["net0"].as_str().unwrap().contains(mac),
            "the MAC comes from net0: {config}"
        );
        assert!(
            text(&result).contains("web-frontend-01") && text(&result).contains("pve1"),
            "{}",
            text(&result)
        );
        assert_eq!(paths(&sim), ["/api2/json/nodes/pve1/qemu/100/config?"]);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn vm_config_of_the_cloudinit_template_keeps_the_password_masked() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, c) = server
            .ok_result("pve_get_vm_config", json!({"vmid": 900}))
            .await;
        assert_fields(
            "config of 900",
            &c,
            json!({"node": "pve1", "vm_type": "qemu", "cluster": "default",
                   "masked_keys": ["cipassword"]}),
        );
        assert_fields(
            "resolved",
            &c["resolved"],
            json!({"node": true, "vm_type": true}),
        );
        assert_fields(
            "config",
            &c["config"],
            json!({"cipassword": "**********", "ciuser": "ubuntu"}),
        );
        // Public keys are shown, URL-decoded.
        let keys = c["config"]["sshkeys"].as_str().unwrap();
        assert!(
            keys.starts_with("ssh-ed25519 AAAA") && keys.contains(" ops@example.com"),
            "{keys}"
        );
        let h = &c["highlights"];
        assert_fields(
            "highlights",
            h,
            json!({"template": true, "agent": true, "name": "ubuntu-2404-cloudinit",
                   "memory_mib": 2048}),
        );
        let disks = [
            json!({"key": "ide2", "volume": "local-lvm:vm-900-cloudinit", "media": "cdrom"}),
            json!({"key": "scsi0", "volume": "local-lvm:base-900-disk-0"}),
        ];
        for (i, fields) in disks.into_iter().enumerate() {
            assert_fields(&format!("disks[{i}]"), &h["disks"][i], fields);
        }
        // Nothing but the mask stands where the password was, in any output.
        let everything = format!("{c}\n{}", text(&result));
        let values = everything.matches(r#""cipassword":"#).count();
        assert!(values >= 1, "{everything}");
        assert_eq!(
            everything.matches(r#""cipassword":"**********""#).count(),
            values,
            "every cipassword value is the mask: {everything}"
        );
        assert!(!everything.contains("demo-password"), "{everything}");
        assert!(!everything.contains(ADMIN_TOKEN_SECRET), "{everything}");
        assert_eq!(
            paths(&sim),
            [
                "/api2/json/cluster/resources?type=vm",
                "/api2/json/nodes/pve1/qemu/900/config?"
            ]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn vm_config_of_a_multi_disk_vm_and_a_container() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let db = server.ok("pve_get_vm_config", json!({"vmid": 101})).await;
        let h = &db["highlights"];
        assert_fields(
            "highlights of 101",
            h,
            json!({"cores": 4, "sockets": 2, "memory_mib": 16384, "agent": false}),
        );
        let disk_keys: Vec<_> = h["disks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["key"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(disk_keys, ["ide2", "virtio0", "virtio1"]);
        assert_eq!(h["disks"][1]["size"], "128G");
        assert_eq!(h["disks"][2]["size"], "512G");
        let nic_keys: Vec<_> = h["nics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["key"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(nic_keys, ["net0", "net1"]);
        assert_eq!(
            db["config"]["description"],
            "Primary PostgreSQL 16\nOwner: dba team\n"
        );

        let ct = server.ok("pve_get_vm_config", json!({"vmid": 106})).await;
        assert_fields("config of 106", &ct, json!({"vm_type": "lxc", "node": "pve1"}));
        let h = &ct["highlights"];
        assert_fields(
            "highlights of 106",
            h,
            json!({"name": "dns-resolver-01", "sockets": null, "cores": 1, "memory_mib": 512,
                   "agent": false, "ostype": "debian",
                   "disks": [{"key": "rootfs", "storage": "local-lvm", "volume": "local-lvm:vm-106-disk-0", "size": "8G", "media": null, "mountpoint": null}]}),
        );
        let net0 = &h["nics"][0];
        assert_fields(
            "net0 of 106",
            net0,
            json!({"model": "veth", "name": "eth0", "bridge": "vmbr0", "firewall": true}),
        );
        assert!(net0["mac"].as_str().unwrap().starts_with("BC:24:11:"));

        let locked = server.ok("pve_get_vm_config", json!({"vmid": 103})).await;
        assert_eq!(locked["highlights"]["lock"], "backup");
        let ct_template = server.ok("pve_get_vm_config", json!({"vmid": 200})).await;
        assert_eq!(ct_template["highlights"]["template"], true);
        assert_eq!(ct_template["vm_type"], "lxc");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn vm_config_bad_input_is_refused_before_any_request() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_get_vm_config";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({}), "vmid"),
                (t, json!({"vmid": 99}), "vmid"),
                (t, json!({"vmid": "100"}), "vmid"),
                (t, json!({"vmid": 1_000_000_000u64}), "vmid"),
                (t, json!({"vmid": 100, "node": "pve 1"}), "node"),
                (t, json!({"vmid": 100, "vm_type": "vm"}), "vm_type"),
                (t, json!({"vmid": 100, "snapshot": "x"}), "snapshot"),
            ],
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn vm_config_missing_offline_and_forbidden_guests() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        assert_refusals(
            &server,
            "pve_get_vm_config",
            &[
                (
                    json!({"vmid": 555, "node": "pve1", "vm_type": "qemu"}),
                    &["does not exist", "pve_list_vms"],
                ),
                (json!({"vmid": 555}), &["555", "not found"]),
                (json!({"vmid": 105}), &["unreachable", "offline"]),
            ],
        )
        .await;
        assert!(
            sim.requests()
                .iter()
                .any(|r| r.path == "/api2/json/nodes/pve3/qemu/105/config" && r.status == 595),
            "{:?}",
            sim.requests()
        );

        let auditor = Server::start(&sim, Opts::auditor()).await;
        assert_refusals(
            &auditor,
            "pve_get_vm_config",
            &[(
                json!({"vmid": 102, "node": "pve2", "vm_type": "qemu"}),
                &["403", "VM.Audit", "/vms/102"],
            )],
        )
        .await;
        let allowed = auditor.ok("pve_get_vm_config", json!({"vmid": 100})).await;
        assert_eq!(allowed["highlights"]["memory_mib"], 4096);
        assert_no_schema_violations(&sim);
    })
    .await;
}

// ----------------------------------------------------------------- storage

#[tokio::test]
async fn list_storage_on_pve1_includes_usage() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, out) = server
            .ok_result("pve_list_storage", json!({"node": "pve1"}))
            .await;
        assert_fields(
            "storage on pve1",
            &out,
            json!({"node": "pve1", "usage_included": true, "cluster": "default",
                   "total": 4, "limit": 100, "next_offset": null}),
        );
        assert_eq!(
            storage_ids(&out),
            ["local", "local-lvm", "nfs-backup", "nfs-images"]
        );
        assert_eq!(
            out["storages"][0],
            json!({
                "storage": "local", "type": "dir", "content": ["backup", "iso", "vztmpl"],
                "shared": false, "enabled": true, "active": true,
                "total": 100_861_726_720u64, "used": 14_298_456_064u64, "avail": 86_563_270_656u64,
                "used_fraction": 0.1418, "nodes": null
            })
        );
        // (position, fields, used fraction)
        let usage = [
            (
                1,
                json!({"type": "lvmthin", "content": ["images", "rootdir"],
                       "total": 1_836_996_870_144u64, "used": 412_316_860_416u64}),
                0.2245,
            ),
            (
                2,
                json!({"type": "nfs", "shared": true, "used": 2_345_052_143_616u64}),
                0.2932,
            ),
            (
                3,
                json!({"type": "nfs", "shared": true, "content": ["images", "import", "rootdir"],
                       "total": 3_998_614_552_576u64, "used": 601_295_421_440u64,
                       "avail": 3_397_319_131_136u64}),
                0.1504,
            ),
        ];
        for (i, fields, fraction) in usage {
            let storage = &out["storages"][i];
            assert_fields(&format!("storages[{i}]"), storage, fields);
            assert_approx(&storage["used_fraction"], fraction);
        }
        assert!(
            text(&result).contains("Fullest: nfs-backup"),
            "{}",
            text(&result)
        );
        assert_eq!(paths(&sim), ["/api2/json/nodes/pve1/storage?"]);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_storage_without_node_is_the_configuration_without_usage() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, out) = server.ok_result("pve_list_storage", json!({})).await;
        assert_fields(
            "storage configuration",
            &out,
            json!({"node": null, "usage_included": false, "cluster": "default"}),
        );
        assert_eq!(
            storage_ids(&out),
            ["local", "local-lvm", "nfs-backup", "nfs-images"]
        );
        for s in out["storages"].as_array().unwrap() {
            for key in ["total", "used", "avail", "used_fraction", "active"] {
                assert_eq!(s[key], Value::Null, "{key}: {s}");
            }
            assert_eq!(s["enabled"], true, "{s}");
            assert_eq!(s["nodes"], Value::Null, "{s}");
        }
        // local does not state shared.
        assert_eq!(out["storages"][0]["shared"], Value::Null, "not stated");
        assert_fields(
            "storages[2]",
            &out["storages"][2],
            json!({"shared": true, "type": "nfs"}),
        );
        assert_fields(
            "storages[3]",
            &out["storages"][3],
            json!({"shared": true, "type": "nfs", "content": ["images", "import", "rootdir"]}),
        );
        assert!(text(&result).contains("pass node"), "{}", text(&result));
        assert_eq!(paths(&sim), ["/api2/json/storage?"]);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_storage_content_filter_and_paging() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let cases = [
            (
                json!({"node": "pve1", "content": "backup"}),
                vec!["local", "nfs-backup"],
            ),
            (
                json!({"node": "pve2", "content": "images"}),
                vec!["local-lvm", "nfs-images"],
            ),
            (
                json!({"content": "rootdir"}),
                vec!["local-lvm", "nfs-images"],
            ),
            (json!({"content": "iso"}), vec!["local"]),
            (json!({"content": "vztmpl"}), vec!["local"]),
            (json!({"content": "snippets"}), vec![]),
        ];
        for (args, expected) in cases {
            let out = server.ok("pve_list_storage", args.clone()).await;
            assert_eq!(storage_ids(&out), expected, "{args}");
            assert_eq!(out["total"], expected.len(), "{args}");
        }
        let page = server
            .ok(
                "pve_list_storage",
                json!({"node": "pve2", "limit": 1, "offset": 1}),
            )
            .await;
        assert_eq!(storage_ids(&page), ["local-lvm"]);
        assert_page(&page, 4, 1, 1, Some(2));
        assert_eq!(page["storages"][0]["used"], 287_762_808_832u64);
        let past = server.ok("pve_list_storage", json!({"offset": 4})).await;
        assert_page(&past, 4, 0, 4, None);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_storage_errors_and_the_auditor_sees_an_empty_list() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_list_storage";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({"node": "pve 1"}), "node"),
                (t, json!({"node": ""}), "node"),
                (t, json!({"content": "disks"}), "content"),
                (t, json!({"content": ["backup"]}), "content"),
                (t, json!({"limit": 0}), "limit"),
                (t, json!({"limit": 1001}), "limit"),
                (t, json!({"offset": -1}), "offset"),
                (t, json!({"storage": "local"}), "storage"),
            ],
        )
        .await;
        assert_refusals(
            &server,
            t,
            &[(json!({"node": "pve3"}), &["unreachable", "offline"])],
        )
        .await;

        let auditor = Server::start(&sim, Opts::auditor()).await;
        for args in [json!({}), json!({"node": "pve1"})] {
            let result = auditor.call(t, args.clone()).await;
            assert_eq!(result.is_error, Some(false), "{args}: {}", text(&result));
            let out = result.structured_content.clone().unwrap();
            assert_eq!(out["storages"], json!([]), "{args}");
            assert_eq!(out["total"], 0, "{args}");
            assert!(
                text(&result).contains("Datastore.Audit"),
                "the empty list is explained: {}",
                text(&result)
            );
        }
        assert_no_schema_violations(&sim);
    })
    .await;
}

// ----------------------------------------------------------------- backups

#[tokio::test]
async fn list_backups_on_nfs_newest_first_with_totals() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, out) = server
            .ok_result(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "nfs-backup"}),
            )
            .await;
        assert_fields(
            "backups",
            &out,
            json!({"node": "pve1", "storage": "nfs-backup", "vmid": null,
                   "cluster": "default", "total": 9, "returned": 9, "limit": 50,
                   "next_offset": null, "total_size": 99_095_057_778u64}),
        );
        assert!(
            out["total_size_human"].as_str().unwrap().contains("GiB"),
            "{out}"
        );
        assert_eq!(
            backup_vmids(&out),
            [106, 101, 107, 100, 106, 101, 103, 100, 100]
        );
        let times = ctimes(&out);
        assert!(
            times.windows(2).all(|w| w[0] > w[1]),
            "newest first: {times:?}"
        );
        // (position, fields); notes are only their first line.
        let samples = [
            (
                2,
                json!({"vmid": 107, "subtype": "lxc", "format": "tar.zst", "protected": true,
                       "notes": "reverse-proxy before TLS rework", "size": 901_334_002,
                       "encrypted": false, "verification": null}),
            ),
            (
                3,
                json!({"volid": "nfs-backup:backup/vzdump-qemu-100-2026_11_28-01_00_03.vma.zst",
                       "ctime": 1_795_827_603u64, "created": "2026-11-28T01:00:03Z",
                       "subtype": "qemu", "format": "vma.zst", "size": 3_912_228_127u64,
                       "notes": "web-frontend-01 nightly", "protected": false}),
            ),
        ];
        for (i, fields) in samples {
            assert_fields(&format!("backups[{i}]"), &out["backups"][i], fields);
        }
        assert!(
            text(&result).contains("9 backups") && text(&result).contains("Newest: "),
            "{}",
            text(&result)
        );
        assert_eq!(
            paths(&sim),
            ["/api2/json/nodes/pve1/storage/nfs-backup/content?content=backup"]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_backups_filtered_by_vmid_and_paged() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let web = server
            .ok(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "nfs-backup", "vmid": 100}),
            )
            .await;
        assert_fields(
            "backups of 100",
            &web,
            json!({"vmid": 100, "total": 3, "total_size": 11_719_140_981u64}),
        );
        assert_eq!(backup_vmids(&web), [100, 100, 100]);
        assert_eq!(
            ctimes(&web),
            [1_795_827_603u64, 1_795_741_204, 1_795_654_803]
        );
        assert_eq!(web["backups"][0]["notes"], "web-frontend-01 nightly");
        assert_eq!(web["backups"][1]["notes"], Value::Null);
        assert_eq!(
            sim.requests()[0].query,
            "content=backup&vmid=100",
            "the vmid filter is Proxmox's"
        );
        let none = server
            .ok(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "nfs-backup", "vmid": 104}),
            )
            .await;
        assert_fields(
            "backups of 104",
            &none,
            json!({"total": 0, "backups": [], "total_size": 0}),
        );

        let page = server
            .ok(
                "pve_list_backups",
                json!({"node": "pve2", "storage": "nfs-backup", "limit": 2, "offset": 2}),
            )
            .await;
        assert_eq!(backup_vmids(&page), [107, 100]);
        // Shared storage: the same 9 from pve2; the size is over all pages.
        assert_page(&page, 9, 2, 2, Some(4));
        assert_eq!(page["total_size"], 99_095_057_778u64, "over all pages");
        let last = server
            .ok(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "nfs-backup", "limit": 5, "offset": 5}),
            )
            .await;
        assert_eq!(backup_vmids(&last), [101, 103, 100, 100]);
        assert_eq!(last["next_offset"], Value::Null);

        // A per-node storage holds only that node's backups, not ISOs.
        let local = server
            .ok(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "local"}),
            )
            .await;
        assert_eq!(backup_vmids(&local), [108, 104]);
        assert_eq!(local["backups"][1]["protected"], true);
        let local2 = server
            .ok(
                "pve_list_backups",
                json!({"node": "pve2", "storage": "local"}),
            )
            .await;
        assert_eq!(backup_vmids(&local2), [110]);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_backups_bad_input_is_refused_before_any_request() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_list_backups";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({"storage": "nfs-backup"}), "node"),
                (t, json!({"node": "pve1"}), "storage"),
                (t, json!({"node": "pve 1", "storage": "nfs-backup"}), "node"),
                (t, json!({"node": "pve1", "storage": "1bad"}), "storage"),
                (t, json!({"node": "pve1", "storage": "a"}), "storage"),
                (t, json!({"node": "pve1", "storage": "nfs/../x"}), "storage"),
                (t, json!({"node": "pve1", "storage": 7}), "storage"),
                (
                    t,
                    json!({"node": "pve1", "storage": "nfs-backup", "vmid": 99}),
                    "vmid",
                ),
                (
                    t,
                    json!({"node": "pve1", "storage": "nfs-backup", "vmid": "100"}),
                    "vmid",
                ),
                (
                    t,
                    json!({"node": "pve1", "storage": "nfs-backup", "limit": 0}),
                    "limit",
                ),
                (
                    t,
                    json!({"node": "pve1", "storage": "nfs-backup", "limit": 501}),
                    "limit",
                ),
                (
                    t,
                    json!({"node": "pve1", "storage": "nfs-backup", "offset": -1}),
                    "offset",
                ),
                (
                    t,
                    json!({"node": "pve1", "storage": "nfs-backup", "content": "iso"}),
                    "content",
                ),
            ],
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn list_backups_forbidden_offline_and_missing_storage() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        assert_refusals(
            &server,
            "pve_list_backups",
            &[
                (
                    json!({"node": "pve3", "storage": "nfs-backup"}),
                    &["unreachable", "offline"],
                ),
                (
                    json!({"node": "pve1", "storage": "nope"}),
                    &["storage 'nope' does not exist"],
                ),
            ],
        )
        .await;
        // Still serving.
        server
            .ok(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "nfs-backup", "limit": 1}),
            )
            .await;

        let auditor = Server::start(&sim, Opts::auditor()).await;
        sim.clear_requests();
        assert_refusals(
            &auditor,
            "pve_list_backups",
            &[(
                json!({"node": "pve1", "storage": "nfs-backup", "vmid": 100}),
                &[
                    "403",
                    "Datastore.Audit",
                    "/storage/nfs-backup",
                    "pveum acl modify",
                ],
            )],
        )
        .await;
        assert_eq!(sim.requests().len(), 1);
        assert_eq!(sim.requests()[0].status, 403);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_backups_on_a_5000_guest_cluster_stays_bounded() {
    within(async {
        let sim = large_simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let first = server
            .ok(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "nfs-backup"}),
            )
            .await;
        let total = first["total"].as_u64().unwrap();
        assert_eq!(total, 9 + (5000 - 13), "one backup per generated guest");
        assert_eq!(first["returned"], 50, "the default limit is 50");
        assert_eq!(first["omitted"].as_u64().unwrap(), total - 50);
        assert_eq!(first["next_offset"], 50);
        let size = serde_json::to_string(&first).unwrap().len();
        assert!(size < 32 * 1024, "the default answer is {size} bytes");
        let times = ctimes(&first);
        assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");

        let second = server
            .ok(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "nfs-backup", "offset": 50}),
            )
            .await;
        assert_eq!(second["returned"], 50);
        assert_eq!(second["next_offset"], 100);
        let volids = |v: &Value| -> Vec<String> {
            v["backups"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["volid"].as_str().unwrap().to_owned())
                .collect()
        };
        let (a, b) = (volids(&first), volids(&second));
        assert!(a.iter().all(|v| !b.contains(v)), "pages overlap");
        assert!(
            ctimes(&first).last().unwrap() >= ctimes(&second).first().unwrap(),
            "the second page continues the order"
        );
        // total_size covers every backup, not only the page.
        let page_sum: u64 = first["backups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["size"].as_u64().unwrap())
            .sum();
        assert!(first["total_size"].as_u64().unwrap() > page_sum);

        let max = server
            .ok(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "nfs-backup", "limit": 500}),
            )
            .await;
        assert_eq!(max["returned"], 500);
        let one = server
            .ok(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "nfs-backup", "vmid": 4321}),
            )
            .await;
        assert_eq!(backup_vmids(&one), [4321]);
        assert_no_schema_violations(&sim);
    })
    .await;
}
