//! [`Shapes::Real`]: each shape real clusters send, on the wire, and the
//! default mode left as it was.

use serde_json::json;

use super::*;

async fn real_sim() -> Simulator {
    Simulator::start(SimConfig {
        schema_path: schema_path(),
        shapes: Shapes::Real,
        ..SimConfig::default()
    })
    .await
    .expect("start")
}

async fn data(sim: &Simulator, path: &str) -> Value {
    get(sim, &format!("/api2/json{path}"), ADMIN).await.data()
}

#[tokio::test]
async fn agent_error_passes_through_as_200() {
    let sim = real_sim().await;
    let d = data(&sim, "/nodes/pve2/qemu/111/agent/network-get-interfaces").await;
    assert_eq!(
        d,
        json!({"result": {"error": {"class": "Unsupported",
            "desc": "this feature or command is not currently supported"}}})
    );
    // The other guests' agents answer as in the default mode.
    let d = data(&sim, "/nodes/pve1/qemu/100/agent/network-get-interfaces").await;
    assert_eq!(d["result"][1]["name"], "eth0");
    assert!(sim.schema_violations().is_empty());
}

#[tokio::test]
async fn network_resources_and_legacy_sdn_filter() {
    let sim = real_sim().await;
    let all = data(&sim, "/cluster/resources").await;
    let networks: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "network")
        .collect();
    // Two networks on each of the two online nodes, after the storage.
    assert_eq!(networks.len(), 4);
    assert_eq!(
        *networks[0],
        json!({"id": "network/pve1/zone/lab-network", "type": "network",
               "network-type": "zone", "network": "lab-network", "zone-type": "simple",
               "node": "pve1", "status": "available"})
    );
    assert_eq!(networks[1]["network-type"], "fabric");
    assert_eq!(networks[1]["protocol"], "openfabric");
    assert_eq!(all.as_array().unwrap().last(), Some(networks[3]));
    assert!(all.as_array().unwrap().iter().all(|e| e["type"] != "sdn"));
    // ?type=sdn selects only legacy entries: none.
    assert_eq!(data(&sim, "/cluster/resources?type=sdn").await, json!([]));
    // The auditor may not audit SDN.
    let r = get(&sim, "/api2/json/cluster/resources", AUDITOR)
        .await
        .data();
    assert!(r.as_array().unwrap().iter().all(|e| e["type"] != "network"));
    assert!(sim.schema_violations().is_empty());
}

#[tokio::test]
async fn ha_fencing_row_and_json_booleans() {
    let sim = real_sim().await;
    let d = data(&sim, "/cluster/ha/status/current").await;
    let l = d.as_array().unwrap();
    assert_eq!(l[0]["quorate"], true);
    let fencing = l.iter().find(|e| e["type"] == "fencing").unwrap();
    assert_eq!(
        *fencing,
        json!({"id": "fencing", "type": "fencing", "armed-state": "armed",
               "status": "armed (CRM watchdog active)"})
    );
    let svc = |sid: &str| l.iter().find(|e| e["sid"] == sid).unwrap().clone();
    assert_eq!(svc("vm:100")["failback"], true);
    assert_eq!(svc("vm:100")["auto-rebalance"], false);
    assert_eq!(svc("ct:106")["failback"], false);
    assert_eq!(svc("vm:103")["auto-rebalance"], true);
    // The default mode keeps Perl's 0/1 and has neither the row nor
    // auto-rebalance.
    let sim = start().await;
    let d = data(&sim, "/cluster/ha/status/current").await;
    let l = d.as_array().unwrap();
    assert_eq!(l[0]["quorate"], 1);
    assert!(l.iter().all(|e| e["type"] != "fencing"));
    let s100 = l.iter().find(|e| e["sid"] == "vm:100").unwrap();
    assert_eq!(s100["failback"], 1);
    assert!(s100.get("auto-rebalance").is_none());
}

#[tokio::test]
async fn old_lxc_list_typing_and_raw_lxc_key() {
    let sim = real_sim().await;
    let d = data(&sim, "/nodes/pve1/lxc").await;
    let ct = |id: &str| {
        d.as_array()
            .unwrap()
            .iter()
            .find(|e| e["vmid"] == id)
            .unwrap_or_else(|| panic!("CT {id} with a string vmid in {d}"))
            .clone()
    };
    assert_eq!(ct("106")["template"], "");
    assert_eq!(ct("200")["template"], 1);
    let cfg = data(&sim, "/nodes/pve2/lxc/107/config").await;
    assert_eq!(
        cfg["lxc"],
        json!([
            ["lxc.apparmor.profile", "unconfined"],
            ["lxc.cgroup2.devices.allow", "a"]
        ])
    );
    // Status and the cluster view keep integer vmids.
    let st = data(&sim, "/nodes/pve1/lxc/106/status/current").await;
    assert_eq!(st["vmid"], 106);
    assert!(sim.schema_violations().is_empty());
}

#[tokio::test]
async fn pbs_backups_version_and_boot_info() {
    let sim = real_sim().await;
    let d = data(&sim, "/nodes/pve1/storage/pbs-main/content?content=backup").await;
    let l = d.as_array().unwrap();
    assert_eq!(l.len(), 3);
    let vm = l
        .iter()
        .find(|e| e["volid"] == "pbs-main:backup/vm/100/2026-11-28T01:00:12Z")
        .unwrap_or_else(|| panic!("{d}"));
    assert_eq!(vm["format"], "pbs-vm");
    assert_eq!(vm["subtype"], "qemu");
    assert_eq!(vm["verification"]["state"], "ok");
    let ct = l.iter().find(|e| e["format"] == "pbs-ct").unwrap();
    assert_eq!(ct["verification"]["state"], "failed");
    assert!(ct["encrypted"].as_str().unwrap().contains(':'));
    let v = data(&sim, "/version").await;
    assert_eq!(v["release"], "9.2");
    let st = data(&sim, "/nodes/pve1/status").await;
    assert_eq!(st["boot-info"], json!({"mode": "efi", "secureboot": 0}));
    assert!(
        st["pveversion"]
            .as_str()
            .unwrap()
            .starts_with("pve-manager/9.2.3/")
    );
    assert!(sim.schema_violations().is_empty());
}
