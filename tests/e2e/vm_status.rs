//! `pve_get_vm_status` for each guest state, and node/type resolution.

use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn running_vm_with_node_and_type_makes_one_request() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let s = server
            .ok(
                "pve_get_vm_status",
                json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"}),
            )
            .await;
        assert_eq!(s["vmid"], 100);
        assert_eq!(s["name"], "web-frontend-01");
        assert_eq!(s["node"], "pve1");
        assert_eq!(s["vm_type"], "qemu");
        assert_eq!(s["status"], "running");
        assert_eq!(s["qmpstatus"], "running");
        assert_eq!(s["agent"], true);
        assert!(s["pid"].as_u64().is_some(), "{s}");
        assert!(s["running-qemu"].is_string(), "{s}");
        assert!(s["uptime"].as_u64().unwrap() > 0);
        assert!(s["cpus"].as_u64().unwrap() >= 1);
        assert!(s["maxmem"].as_u64().unwrap() >= s["mem"].as_u64().unwrap());
        assert_eq!(
            s["ha"],
            json!({"managed": true, "state": "started", "group": "prod-ha"})
        );
        assert_eq!(s["tags"], json!(["prod", "web"]));
        assert_eq!(s["template"], false);
        assert_eq!(s["lock"], Value::Null);
        assert_eq!(s["resolved"]["node"], false);
        assert_eq!(s["resolved"]["vm_type"], false);
        let requests = sim.requests();
        assert_eq!(requests.len(), 1, "{requests:?}");
        assert_eq!(
            requests[0].path,
            "/api2/json/nodes/pve1/qemu/100/status/current"
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn missing_node_and_type_are_resolved_and_reported() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server.call("pve_get_vm_status", json!({"vmid": 107})).await;
        let s = result.structured_content.clone().unwrap();
        assert_eq!(s["node"], "pve2");
        assert_eq!(s["vm_type"], "lxc");
        assert_eq!(
            s["resolved"],
            json!({"node": true, "vm_type": true, "source": "cluster/resources"})
        );
        assert!(text(&result).contains("looked up"), "{}", text(&result));
        let paths: Vec<_> = sim
            .requests()
            .iter()
            .map(|r| format!("{}?{}", r.path, r.query))
            .collect();
        assert_eq!(
            paths,
            [
                "/api2/json/cluster/resources?type=vm",
                "/api2/json/nodes/pve2/lxc/107/status/current?"
            ]
        );

        sim.clear_requests();
        let s = server
            .ok("pve_get_vm_status", json!({"vmid": 101, "node": "pve1"}))
            .await;
        assert_eq!(s["resolved"]["node"], false);
        assert_eq!(s["resolved"]["vm_type"], true);
        assert_eq!(s["vm_type"], "qemu");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn every_guest_state_comes_out_right() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;

        let stopped = server.ok("pve_get_vm_status", json!({"vmid": 104})).await;
        assert_eq!(stopped["status"], "stopped");
        assert_eq!(stopped["qmpstatus"], "stopped");
        assert_eq!(stopped["pid"], Value::Null);
        assert_eq!(stopped["uptime"], 0);

        let paused = server.call("pve_get_vm_status", json!({"vmid": 102})).await;
        let p = paused.structured_content.clone().unwrap();
        assert_eq!(p["status"], "running", "PVE's own status stays as PVE says");
        assert_eq!(p["qmpstatus"], "paused");
        assert!(text(&paused).contains("paused"), "{}", text(&paused));

        let template = server.ok("pve_get_vm_status", json!({"vmid": 900})).await;
        assert_eq!(template["template"], true);
        assert_eq!(template["status"], "stopped");
        let ct_template = server.ok("pve_get_vm_status", json!({"vmid": 200})).await;
        assert_eq!(ct_template["template"], true);
        assert_eq!(ct_template["vm_type"], "lxc");

        let locked = server.ok("pve_get_vm_status", json!({"vmid": 103})).await;
        assert_eq!(locked["lock"], "backup");

        let no_agent = server.ok("pve_get_vm_status", json!({"vmid": 101})).await;
        assert_eq!(no_agent["agent"], false);
        assert_eq!(no_agent["ha"]["managed"], false);

        let ct = server.ok("pve_get_vm_status", json!({"vmid": 106})).await;
        assert_eq!(ct["vm_type"], "lxc");
        assert_eq!(ct["status"], "running");
        assert_eq!(ct["qmpstatus"], Value::Null);
        assert_eq!(ct["running-qemu"], Value::Null);
        assert_eq!(ct["agent"], false);
        assert_eq!(ct["ha"]["managed"], true);
        assert_no_schema_violations(&sim);
    })
    .await;
}
