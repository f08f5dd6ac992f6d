//! `pve_list_vms` against the seeded cluster: every filter, the counts, the
//! bound, and the one request it makes.

use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn lists_every_guest_sorted_with_counts_and_one_request() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let all = server.ok("pve_list_vms", json!({})).await;
        assert_eq!(
            vmids(&all),
            [
                100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 200, 900
            ]
        );
        assert_eq!(all["total"], 13);
        assert_eq!(all["returned"], 13);
        assert_eq!(all["omitted"], 0);
        assert_eq!(
            all["count_by_status"],
            json!({"running": 5, "stopped": 5, "paused": 1, "unknown": 2})
        );

        let by_id = |id: u64| {
            all["vms"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["vmid"] == id)
                .unwrap()
                .clone()
        };
        let web = by_id(100);
        assert_eq!(web["name"], "web-frontend-01");
        assert_eq!(web["type"], "qemu");
        assert_eq!(web["node"], "pve1");
        assert_eq!(web["tags"], json!(["prod", "web"]));
        assert_eq!(web["hastate"], "started");
        assert_eq!(web["template"], false);
        assert!(web["maxmem"].as_u64().unwrap() > 0 && web["uptime"].as_u64().unwrap() > 0);
        assert_eq!(by_id(900)["template"], true);
        assert_eq!(by_id(200)["template"], true);
        assert_eq!(by_id(103)["lock"], "backup");
        assert_eq!(by_id(102)["status"], "paused");
        // A guest on the offline node has no figures, and says so with nulls.
        let offline = by_id(105);
        assert_eq!(offline["status"], "unknown");
        assert_eq!(offline["cpu"], serde_json::Value::Null);

        let requests = sim.requests();
        assert_eq!(requests.len(), 1, "{requests:?}");
        assert_eq!(requests[0].method, "GET");
        assert_eq!(requests[0].path, "/api2/json/cluster/resources");
        assert_eq!(requests[0].query, "type=vm");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn each_filter_narrows_the_list() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let cases = [
            (
                json!({"node": "pve1"}),
                vec![100, 101, 104, 106, 108, 200, 900],
            ),
            (json!({"vm_type": "lxc"}), vec![106, 107, 108, 109, 200]),
            (json!({"vm_type": "qemu", "node": "pve3"}), vec![105]),
            (json!({"status": "paused"}), vec![102]),
            (json!({"status": "stopped"}), vec![104, 108, 110, 200, 900]),
            (json!({"status": "unknown"}), vec![105, 109]),
            (json!({"name": "WEB"}), vec![100]),
            (json!({"name": "db-"}), vec![101]),
            (json!({"tag": "prod"}), vec![100, 101, 107]),
            (json!({"tag": "Web"}), vec![100, 107]),
            (json!({"node": "pve2", "status": "running"}), vec![103, 107]),
            (json!({"tag": "nothing-has-this"}), vec![]),
        ];
        for (args, expected) in cases {
            let list = server.ok("pve_list_vms", args.clone()).await;
            assert_eq!(vmids(&list), expected, "filter {args}");
            assert_eq!(list["total"], expected.len(), "filter {args}");
            let counted: u64 = list["count_by_status"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(counted, expected.len() as u64, "filter {args}");
        }
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn limit_caps_the_list_and_says_how_many_were_left_out() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let list = server.call("pve_list_vms", json!({"limit": 3})).await;
        let structured = list.structured_content.clone().unwrap();
        assert_eq!(vmids(&structured), [100, 101, 102]);
        assert_eq!(structured["returned"], 3);
        assert_eq!(structured["omitted"], 10);
        assert_eq!(structured["total"], 13);
        assert_eq!(structured["limit"], 3);
        // Counts cover everything that matched, not just what was shown.
        assert_eq!(structured["count_by_status"]["running"], 5);
        assert!(
            text(&list).contains("showing 1-3 of 13; pass offset 3 for more"),
            "{}",
            text(&list)
        );
        assert_eq!(structured["next_offset"], 3);
        // The next page continues where the first stopped.
        let page2 = server
            .ok("pve_list_vms", json!({"limit": 3, "offset": 3}))
            .await;
        assert_eq!(vmids(&page2), [103, 104, 105]);
        assert_eq!(page2["next_offset"], 6);
        let last = server
            .ok("pve_list_vms", json!({"limit": 3, "offset": 12}))
            .await;
        assert_eq!(vmids(&last), [900]);
        assert_eq!(last["next_offset"], serde_json::Value::Null);
    })
    .await;
}

#[tokio::test]
async fn a_5000_guest_cluster_stays_bounded() {
    within(async {
        let sim = large_simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let list = server.ok("pve_list_vms", json!({})).await;
        let total = list["total"].as_u64().unwrap();
        assert!(total >= 5000, "total {total}");
        assert_eq!(list["returned"], 100, "the default limit is 100");
        assert_eq!(list["omitted"].as_u64().unwrap(), total - 100);
        let max = server.ok("pve_list_vms", json!({"limit": 1000})).await;
        assert_eq!(max["returned"], 1000);
        let size = serde_json::to_string(&list).unwrap().len();
        assert!(size < 64 * 1024, "the default answer is {size} bytes");
        let too_many = server.err("pve_list_vms", json!({"limit": 1001})).await;
        assert!(too_many.contains("limit"), "{too_many}");
        let filtered = server
            .ok(
                "pve_list_vms",
                json!({"node": "pve2", "vm_type": "lxc", "limit": 5}),
            )
            .await;
        assert!(
            filtered["vms"]
                .as_array()
                .unwrap()
                .iter()
                .all(|v| v["node"] == "pve2" && v["type"] == "lxc")
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}
