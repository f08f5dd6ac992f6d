//! `pve_list_storage_content` through the real binary against the
//! simulator: a storage's volumes as Proxmox lists them, the filters sent
//! in the query, paging, and bad input refused before any request.

use serde_json::{Value, json};

use crate::common::*;

/// The volids of a page.
fn volids(out: &Value) -> Vec<&str> {
    out["volumes"]
        .as_array()
        .unwrap_or_else(|| panic!("no volumes: {out}"))
        .iter()
        .map(|v| v["volid"].as_str().unwrap())
        .collect()
}

/// The content reads the simulator saw, as `path?query`.
fn content_reads(sim: &pve_sim::Simulator) -> Vec<String> {
    sim.requests()
        .iter()
        .filter(|r| r.api_path().ends_with("/content"))
        .map(|r| format!("{}?{}", r.api_path(), r.query))
        .collect()
}

#[tokio::test]
async fn a_storages_volumes_are_listed_filtered_and_paged() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        sim.clear_requests();
        let all = server
            .ok(
                "pve_list_storage_content",
                json!({"node": "pve1", "storage": "local"}),
            )
            .await;
        let ids = volids(&all);
        assert_eq!(ids.len(), 4, "{all}");
        assert!(
            ids.is_sorted_by_key(|id| id.to_ascii_lowercase()),
            "{ids:?}"
        );
        let iso = all["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["content"] == "iso")
            .expect("an ISO on local");
        assert_fields(
            "the ISO",
            iso,
            json!({"volid": "local:iso/ubuntu-24.04.3-live-server-amd64.iso", "format": "iso",
                   "size": 3_213_064_192_u64, "vmid": null, "protected": false}),
        );
        let backup = all["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["content"] == "backup")
            .expect("a backup on local");
        assert!(backup["vmid"].is_u64(), "{backup}");
        assert_page(&all, 4, 4, 0, None);

        // The filters are Proxmox's, sent in the query.
        let isos = server
            .ok(
                "pve_list_storage_content",
                json!({"node": "pve1", "storage": "local", "content": "iso"}),
            )
            .await;
        assert_eq!(
            volids(&isos),
            ["local:iso/ubuntu-24.04.3-live-server-amd64.iso"]
        );
        let of_104 = server
            .ok(
                "pve_list_storage_content",
                json!({"node": "pve1", "storage": "local", "vmid": 104}),
            )
            .await;
        assert_eq!(of_104["volumes"].as_array().unwrap().len(), 1, "{of_104}");
        assert_eq!(of_104["volumes"][0]["vmid"], 104);
        assert_eq!(
            content_reads(&sim),
            [
                "/nodes/pve1/storage/local/content?",
                "/nodes/pve1/storage/local/content?content=iso",
                "/nodes/pve1/storage/local/content?vmid=104",
            ]
        );

        // Pages: two at a time.
        let first = server
            .ok(
                "pve_list_storage_content",
                json!({"node": "pve1", "storage": "local", "limit": 2}),
            )
            .await;
        assert_page(&first, 4, 2, 0, Some(2));
        let second = server
            .ok(
                "pve_list_storage_content",
                json!({"node": "pve1", "storage": "local", "limit": 2, "offset": 2}),
            )
            .await;
        assert_page(&second, 4, 2, 2, None);
        let mut paged = volids(&first);
        paged.extend(volids(&second));
        assert_eq!(paged, ids);

        // Guest disks on the thin pool carry their owner.
        let disks = server
            .ok(
                "pve_list_storage_content",
                json!({"node": "pve1", "storage": "local-lvm", "content": "images"}),
            )
            .await;
        let disks = disks["volumes"].as_array().unwrap();
        assert!(!disks.is_empty());
        assert!(
            disks
                .iter()
                .all(|d| d["vmid"].is_u64() && d["content"] == "images")
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn bad_input_is_refused_before_any_request_and_a_missing_storage_is_named() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_list_storage_content";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({"storage": "local"}), "node"),
                (t, json!({"node": "pve1"}), "storage"),
                (
                    t,
                    json!({"node": "pve1", "storage": "local", "content": "isos"}),
                    "content",
                ),
                (
                    t,
                    json!({"node": "pve1", "storage": "local", "vmid": 7}),
                    "vmid",
                ),
                (
                    t,
                    json!({"node": "pve1", "storage": "local", "limit": 0}),
                    "limit",
                ),
                (t, json!({"node": "pve1", "storage": "../x"}), "storage"),
            ],
        )
        .await;
        let message = server
            .err(t, json!({"node": "pve1", "storage": "no-such-store"}))
            .await;
        assert!(message.contains("no-such-store"), "{message}");
    })
    .await;
}
