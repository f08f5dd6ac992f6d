//! `pve_list_networks` through the real binary against the simulator,
//! whose nodes read their own `/etc/network/interfaces`: `pve2` has a
//! bridge written to `interfaces.new` but not applied, which is listed
//! and marked pending; `pve1` has nothing pending.

use serde_json::{Value, json};

use crate::common::*;

fn iface<'a>(out: &'a Value, name: &str) -> &'a Value {
    out["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["iface"] == name)
        .unwrap_or_else(|| panic!("no {name} in {out}"))
}

#[tokio::test]
async fn interfaces_are_listed_and_what_is_not_applied_is_pending() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let pve1 = server
            .ok("pve_list_networks", json!({"node": "pve1"}))
            .await;
        assert_eq!(pve1["pending"], false, "{pve1}");
        assert_eq!(pve1["changes"], Value::Null, "{pve1}");
        let vmbr0 = iface(&pve1, "vmbr0");
        assert_eq!(vmbr0["type"], "bridge", "{vmbr0}");
        assert_eq!(vmbr0["cidr"], "192.0.2.11/24", "{vmbr0}");
        assert_eq!(vmbr0["gateway"], "192.0.2.1", "{vmbr0}");
        assert_eq!(vmbr0["ports"], json!(["eno1"]), "{vmbr0}");
        assert_eq!(vmbr0["active"], true, "{vmbr0}");
        assert_eq!(iface(&pve1, "vmbr1")["vlan_aware"], true, "{pve1}");
        assert!(
            pve1["interfaces"]
                .as_array()
                .unwrap()
                .iter()
                .all(|i| i["pending"] == false),
            "{pve1}"
        );

        let pve2 = server
            .ok("pve_list_networks", json!({"node": "pve2"}))
            .await;
        assert_eq!(pve2["pending"], true, "{pve2}");
        assert!(
            pve2["changes"].as_str().unwrap().contains("+iface vmbr2"),
            "{pve2}"
        );
        let vmbr2 = iface(&pve2, "vmbr2");
        assert_eq!(vmbr2["pending"], true, "{vmbr2}");
        assert_eq!(vmbr2["active"], false, "{vmbr2}");
        assert_eq!(iface(&pve2, "vmbr0")["pending"], false, "{pve2}");

        let bridges = server
            .ok(
                "pve_list_networks",
                json!({"node": "pve1", "type": "bridge"}),
            )
            .await;
        let names: Vec<&str> = bridges["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["iface"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["vmbr0", "vmbr1"], "{bridges}");
        let message = server
            .err("pve_list_networks", json!({"node": "pve1", "type": "wifi"}))
            .await;
        assert!(message.contains("type: "), "{message}");
        assert_no_schema_violations(&sim);
    })
    .await;
}
