//! The node network list and interfaces over real HTTPS, pending changes
//! included.

use serde_json::json;

use super::calls::*;
use super::*;

fn names(list: &serde_json::Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e["iface"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn interfaces_as_the_node_reads_them() {
    let sim = sim().await;
    let r = get(&sim, "/api2/json/nodes/pve1/network", ADMIN).await;
    assert!(r.json().get("changes").is_none(), "nothing pending on pve1");
    let l = r.data();
    assert_eq!(names(&l), ["eno1", "eno2", "vmbr0", "vmbr1"]);
    assert_eq!(
        l[0],
        json!({"iface": "eno1", "type": "eth", "method": "manual", "method6": "manual",
               "families": ["inet"], "exists": 1, "active": 1, "priority": 3})
    );
    assert_eq!(
        l[2],
        json!({"iface": "vmbr0", "type": "bridge", "method": "static", "method6": "manual",
               "families": ["inet"], "address": "192.0.2.11", "netmask": "24",
               "cidr": "192.0.2.11/24", "gateway": "192.0.2.1", "bridge_ports": "eno1",
               "bridge_stp": "off", "bridge_fd": "0", "autostart": 1, "active": 1,
               "priority": 5, "comments": "Management and guest LAN\n"})
    );
    assert_eq!(l[3]["bridge_vlan_aware"], 1);
    assert_eq!(l[3]["bridge_vids"], "2-4094");
    assert!(l[3].get("address").is_none());

    // pve2 has a bridge written but not applied.
    let r = get(&sim, "/api2/json/nodes/pve2/network", ADMIN).await;
    let body = r.json();
    let l = &body["data"];
    assert_eq!(names(l), ["eno1", "eno2", "vmbr0", "vmbr1", "vmbr2"]);
    let vmbr2 = &l[4];
    assert_eq!(
        (&vmbr2["cidr"], &vmbr2["bridge_ports"], &vmbr2["mtu"]),
        (&json!("10.10.10.12/24"), &json!(""), &json!("9000"))
    );
    assert!(vmbr2.get("active").is_none(), "not up yet: {vmbr2}");
    let changes = body["changes"].as_str().unwrap();
    assert!(
        changes.starts_with(
            "--- /etc/network/interfaces\t2026-05-12 02:01:01.000000000 +0000\n\
             +++ /etc/network/interfaces.new\t2026-11-27 14:41:51.000000000 +0000\n@@ "
        ),
        "{changes}"
    );
    assert!(
        changes.contains("\n+auto vmbr2\n+iface vmbr2 inet static\n+\taddress 10.10.10.12/24\n")
    );

    // Type filters.
    let only = |t: &'static str| {
        let sim = &sim;
        async move { data(sim, &format!("/nodes/pve1/network?type={t}")).await }
    };
    assert_eq!(names(&only("bridge").await), ["vmbr0", "vmbr1"]);
    assert_eq!(names(&only("any_bridge").await), ["vmbr0", "vmbr1"]);
    assert_eq!(names(&only("eth").await), ["eno1", "eno2"]);
    assert_eq!(only("vlan").await, json!([]));

    // One interface: the same entry without `iface`.
    let v = data(&sim, "/nodes/pve2/network/vmbr2").await;
    assert_eq!(v["comments"], "Storage network\n");
    assert!(v.get("iface").is_none());
    let r = get(&sim, "/api2/json/nodes/pve1/network/vmbr9", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["errors"]["iface"], "interface does not exist");

    // The auditor sees no bridges (no SDN privileges) and no interface.
    let r = as_auditor(&sim, "GET", "/nodes/pve1/network", "").await;
    assert_eq!(names(&r.data()), ["eno1", "eno2"]);
    let r = as_auditor(&sim, "GET", "/nodes/pve1/network/eno1", "").await;
    assert_eq!(
        message(&r),
        "Permission check failed (/nodes/pve1, Sys.Audit)\n"
    );
    // An offline node does not answer; bad parameters are refused.
    assert_eq!(
        get(&sim, "/api2/json/nodes/pve3/network", ADMIN)
            .await
            .status,
        595
    );
    let r = get(&sim, "/api2/json/nodes/pve1/network?type=wifi", ADMIN).await;
    assert_eq!(r.status, 400);
    let r = get(&sim, "/api2/json/nodes/pve1/network/vmbr0!", ADMIN).await;
    assert_eq!(
        r.json()["errors"]["iface"],
        "invalid format - invalid network interface name 'vmbr0!'\n"
    );
    only_violations(
        &sim,
        &[
            "GET /nodes/pve1/network: type:",
            "GET /nodes/pve1/network/vmbr0!: iface:",
        ],
    );
    sim.shutdown().await;
}
