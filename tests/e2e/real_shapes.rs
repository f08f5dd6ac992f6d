//! The read tools against the shapes real clusters send (issue 14): the
//! simulator in [`pve_sim::Shapes::Real`] mode, every read tool called and
//! its shaped answer checked, then one test per answer the tools used to
//! get wrong.

use pve_sim::{LONG_LOG_UPID, Simulator};
use serde_json::{Value, json};

use crate::common::*;

/// The real-shapes simulator and a server for it.
async fn started_real() -> (Simulator, Server) {
    let sim = real_shapes_simulator().await;
    // Every toolset: the opt-in ones' read tools are tried too.
    let server = Server::start(&sim, Opts::default().arg("--toolsets").arg("all")).await;
    (sim, server)
}

/// What a call must produce.
enum Expect {
    /// A result matching its output schema, for which this holds.
    Ok(fn(&Value)),
    /// A tool error saying all of these.
    Err(&'static [&'static str]),
}

/// The record with `field == value` in the list `out[list]`.
fn find<'a>(out: &'a Value, list: &str, field: &str, value: &str) -> &'a Value {
    out[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {out}"))
        .iter()
        .find(|r| r[field] == value)
        .unwrap_or_else(|| panic!("no {list} entry with {field} {value} in {out}"))
}

/// Every read tool, each on the shape it reads.
fn table() -> Vec<(&'static str, Value, Expect)> {
    vec![
        (
            "pve_list_clusters",
            json!({}),
            Expect::Ok(|o| assert_eq!(o["count"], 1)),
        ),
        (
            "pve_get_version",
            json!({}),
            Expect::Ok(|o| {
                assert_fields("version", o, json!({"version": "9.2.3", "release": "9.2"}))
            }),
        ),
        (
            "pve_get_cluster_status",
            json!({}),
            Expect::Ok(|o| {
                assert_fields(
                    "cluster",
                    o,
                    json!({"quorate": true, "nodes_online": ["pve1", "pve2"]}),
                )
            }),
        ),
        (
            "pve_list_nodes",
            json!({}),
            Expect::Ok(|o| assert_eq!(o["total"], 3)),
        ),
        (
            "pve_get_node_metrics",
            json!({"node": "pve1"}),
            Expect::Ok(|o| {
                // boot-info {"mode":"efi","secureboot":0}
                assert_fields("pve1", o, json!({"boot_mode": "efi", "secureboot": false}));
                assert!(
                    o["pveversion"]
                        .as_str()
                        .unwrap()
                        .starts_with("pve-manager/9.2.3/")
                );
            }),
        ),
        (
            "pve_get_node_metrics",
            json!({"node": "pve2"}),
            Expect::Ok(|o| {
                // boot-info {"mode":"legacy-bios"}: secure boot not reported.
                assert_fields(
                    "pve2",
                    o,
                    json!({"boot_mode": "legacy-bios", "secureboot": null}),
                )
            }),
        ),
        (
            "pve_list_vms",
            json!({}),
            Expect::Ok(|o| {
                assert_eq!(o["total"], 14);
                let vm = find(o, "vms", "name", "legacy-agent-vm");
                assert_fields(
                    "vm 111",
                    vm,
                    json!({"vmid": 111, "node": "pve2", "status": "running"}),
                );
            }),
        ),
        (
            "pve_get_vm_status",
            json!({"vmid": 111}),
            Expect::Ok(|o| assert_fields("vm 111", o, json!({"agent": true, "status": "running"}))),
        ),
        (
            "pve_list_resources",
            json!({}),
            Expect::Ok(|o| {
                assert_eq!(o["count_by_type"]["network"], 4, "{o}");
                assert_eq!(o["count_by_type"]["sdn"], Value::Null, "{o}");
                let zone = find(o, "resources", "id", "network/pve1/zone/lab-network");
                assert_fields(
                    "zone",
                    zone,
                    json!({"kind": "network", "network": "lab-network", "network_type": "zone",
                           "zone_type": "simple", "node": "pve1", "status": "available"}),
                );
            }),
        ),
        (
            "pve_list_resources",
            json!({"resource_type": "sdn"}),
            Expect::Ok(|o| {
                assert_eq!(o["count_by_type"], json!({"network": 4}));
                let fabric = find(o, "resources", "id", "network/pve2/fabric/underlay");
                assert_fields(
                    "fabric",
                    fabric,
                    json!({"network_type": "fabric", "protocol": "openfabric"}),
                );
            }),
        ),
        (
            "pve_get_vm_config",
            json!({"vmid": 107}),
            Expect::Ok(|o| {
                assert_eq!(
                    o["config"]["lxc"],
                    json!([
                        ["lxc.apparmor.profile", "unconfined"],
                        ["lxc.cgroup2.devices.allow", "a"]
                    ])
                )
            }),
        ),
        (
            "pve_list_storage",
            json!({"node": "pve1"}),
            Expect::Ok(|o| {
                let pbs = find(o, "storages", "storage", "pbs-main");
                assert_fields("pbs-main", pbs, json!({"type": "pbs", "shared": true}));
            }),
        ),
        (
            "pve_list_backups",
            json!({"node": "pve1", "storage": "pbs-main"}),
            Expect::Ok(|o| {
                assert_eq!(o["total"], 3);
                // Newest first: the CT's encrypted snapshot that failed
                // verification, then the VM's verified one.
                assert_fields(
                    "ct backup",
                    &o["backups"][0],
                    json!({"vmid": 106, "subtype": "lxc", "format": "pbs-ct",
                           "encrypted": true, "verification": "failed"}),
                );
                assert_fields(
                    "vm backup",
                    &o["backups"][1],
                    json!({"volid": "pbs-main:backup/vm/100/2026-11-28T01:00:12Z", "vmid": 100,
                           "subtype": "qemu", "format": "pbs-vm", "encrypted": false,
                           "verification": "ok", "created": "2026-11-28T01:00:12Z"}),
                );
            }),
        ),
        (
            "pve_list_storage_content",
            json!({"node": "pve1", "storage": "pbs-main"}),
            Expect::Ok(|o| {
                // The same PBS answer as a volume list: in volid order,
                // with the owner and the verification state.
                assert_eq!(o["total"], 3);
                let vm = o["volumes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|v| v["volid"] == "pbs-main:backup/vm/100/2026-11-28T01:00:12Z")
                    .unwrap_or_else(|| panic!("no VM backup: {o}"));
                assert_fields(
                    "vm backup",
                    vm,
                    json!({"content": "backup", "vmid": 100, "format": "pbs-vm",
                           "verification": "ok", "created": "2026-11-28T01:00:12Z"}),
                );
            }),
        ),
        (
            "pve_list_snapshots",
            json!({"vmid": 100}),
            Expect::Ok(|o| assert_eq!(o["current_parent"], "kernel_617")),
        ),
        (
            "pve_list_tasks",
            json!({"node": "pve1"}),
            Expect::Ok(|o| {
                find(o, "tasks", "upid", LONG_LOG_UPID);
            }),
        ),
        (
            "pve_get_task_status",
            json!({"upid": LONG_LOG_UPID}),
            Expect::Ok(|o| assert_fields("task", o, json!({"outcome": "ok", "exitstatus": "OK"}))),
        ),
        (
            "pve_wait_task",
            json!({"upid": LONG_LOG_UPID, "timeout": 5}),
            Expect::Ok(|o| assert_fields("task", o, json!({"outcome": "ok", "status": "stopped"}))),
        ),
        (
            "pve_get_next_vmid",
            json!({}),
            Expect::Ok(|o| assert!(o["vmid"].as_u64().unwrap() >= 100, "{o}")),
        ),
        (
            "pve_get_task_log",
            json!({"upid": LONG_LOG_UPID}),
            Expect::Ok(|o| assert!(o["total_lines"].as_u64().unwrap() > 400, "{o}")),
        ),
        (
            "pve_get_vm_metrics",
            json!({"vmid": 111}),
            Expect::Ok(|o| assert!(o["points"].as_u64().unwrap() > 0, "{o}")),
        ),
        (
            "pve_get_vm_ips",
            json!({"vmid": 100}),
            Expect::Ok(|o| assert_eq!(o["addresses"][0], "10.0.0.100")),
        ),
        (
            "pve_get_vm_ips",
            json!({"vmid": 111}),
            Expect::Err(&[
                "\"Unsupported\"",
                "\"this feature or command is not currently supported\"",
            ]),
        ),
        (
            "pve_guest_agent_info",
            json!({"vmid": 100, "what": ["info", "osinfo", "hostname", "fsinfo", "users",
                "timezone", "time", "vcpus"]}),
            Expect::Ok(|o| {
                assert!(o["hostname"].is_string(), "{o}");
                assert!(o["os"]["pretty_name"].is_string(), "{o}");
                assert!(o["filesystems"][0]["mountpoint"].is_string(), "{o}");
                assert!(o["vcpus"]["online"].as_u64() > Some(0), "{o}");
                assert_eq!(o["unavailable"], json!([]), "{o}");
            }),
        ),
        (
            "pve_list_ha",
            json!({}),
            Expect::Ok(|o| {
                assert_eq!(o["fencing"]["armed_state"], "armed");
                assert_fields(
                    "vm:103",
                    find(o, "resources", "sid", "vm:103"),
                    json!({"failback": true, "auto_rebalance": true}),
                );
            }),
        ),
        (
            "pve_list_networks",
            json!({"node": "pve2"}),
            Expect::Ok(|o| {
                // PVE puts the pending diff beside data, in `changes`.
                assert_eq!(o["pending"], true, "{o}");
                let vmbr2 = find(o, "interfaces", "iface", "vmbr2");
                assert_eq!(vmbr2["pending"], true, "{o}");
                assert_eq!(
                    find(o, "interfaces", "iface", "vmbr0")["active"],
                    true,
                    "{o}"
                );
            }),
        ),
        (
            "pve_get_cloudinit",
            json!({"vmid": 900}),
            Expect::Ok(|o| {
                assert_eq!(o["drive"], "ide2", "{o}");
                assert_eq!(
                    find(o, "settings", "key", "cipassword")["value"],
                    "**********"
                );
            }),
        ),
        (
            "pve_list_appliances",
            json!({"node": "pve1", "section": "turnkeylinux"}),
            Expect::Ok(|o| {
                assert_eq!(o["total"], 1, "{o}");
                assert!(
                    o["appliances"][0]["template"]
                        .as_str()
                        .unwrap()
                        .contains("turnkey")
                );
            }),
        ),
        (
            "pve_list_services",
            json!({"node": "pve2"}),
            Expect::Ok(|o| assert_eq!(o["not_running"], json!(["chrony"]), "{o}")),
        ),
        (
            "pve_list_updates",
            json!({"node": "pve1"}),
            Expect::Ok(|o| assert_eq!(o["total"], 6, "{o}")),
        ),
        (
            "pve_list_disks",
            json!({"node": "pve1", "smart": "/dev/nvme0n1"}),
            Expect::Ok(|o| {
                // NVMe answers SMART as text, not attributes.
                assert!(o["smart"]["text"].is_string(), "{o}");
                assert_eq!(o["smart"]["attributes"], json!([]), "{o}");
            }),
        ),
        (
            "pve_get_ceph_status",
            json!({}),
            Expect::Ok(|o| assert_eq!(o["health"], "HEALTH_WARN", "{o}")),
        ),
        (
            "pve_list_replication",
            json!({}),
            Expect::Ok(|o| assert_eq!(o["failing"], json!(["106-0"]), "{o}")),
        ),
        (
            "pve_get_firewall",
            json!({"scope": "guest", "vmid": 100}),
            Expect::Ok(|o| {
                assert_eq!(o["items"][0]["action"], "webserver", "{o}");
                assert_eq!(o["digest"].as_str().map(str::len), Some(40), "{o}");
            }),
        ),
        (
            "pve_get_firewall",
            json!({"scope": "node", "node": "pve1", "what": "options"}),
            Expect::Ok(|o| assert_eq!(o["items"][0]["nosmurfs"], 1, "{o}")),
        ),
        (
            "pve_list_pools",
            json!({"poolid": "production"}),
            Expect::Ok(|o| {
                assert_eq!(o["form"], "pools?poolid=", "{o}");
                assert_eq!(o["pools"][0]["members"].as_array().unwrap().len(), 3, "{o}");
            }),
        ),
        (
            "pve_check_permissions",
            json!({"path": "/sdn/zones/lab-network"}),
            Expect::Ok(|o| assert_eq!(o["missing"], json!([]))),
        ),
    ]
}

#[tokio::test]
async fn every_read_tool_reads_the_real_shapes() {
    within(async {
        let (sim, server) = started_real().await;
        let tools = server.client.list_all_tools().await.expect("tools/list");
        let table = table();
        // Every tool in the catalog is a read tool, and every one is here.
        for tool in read_tools() {
            assert!(
                table.iter().any(|(t, _, _)| t == tool),
                "{tool} is not tried on the real shapes"
            );
        }
        for (tool, args, expect) in table {
            match expect {
                Expect::Ok(check) => {
                    let out = server.ok(tool, args.clone()).await;
                    assert_matches_output_schema(&tools, tool, &args, &out);
                    check(&out);
                }
                Expect::Err(needles) => {
                    assert_refusals(&server, tool, &[(args, needles)]).await;
                }
            }
        }
        assert_no_schema_violations(&sim);
    })
    .await;
}

// One test per answer that was wrong before issue 14.

#[tokio::test]
async fn vm_ips_reports_the_guest_agents_own_error() {
    within(async {
        let (sim, server) = started_real().await;
        // Proxmox answered 200 {"result":{"error":{...}}}; this used to be
        // "0 interfaces, no usable IP address" and no error.
        let message = server.err("pve_get_vm_ips", json!({"vmid": 111})).await;
        for needle in [
            "The QEMU guest agent in VM 111 refused network-get-interfaces",
            "class \"Unsupported\"",
            "description \"this feature or command is not currently supported\"",
            "update the qemu-guest-agent package",
            "block-rpcs",
        ] {
            assert!(message.contains(needle), "{needle:?} not in: {message}");
        }
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_resources_names_pve9_network_entries() {
    within(async {
        let (sim, server) = started_real().await;
        // These used to be kind "other" with neither name nor type.
        let out = server
            .ok("pve_list_resources", json!({"node": "pve2"}))
            .await;
        let networks: Vec<&Value> = out["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["type"] == "network")
            .collect();
        // Sorted by id, as sdn entries are.
        assert_eq!(
            networks,
            [
                &json!({"kind": "network", "id": "network/pve2/fabric/underlay", "type": "network",
                        "network": "underlay", "network_type": "fabric", "zone_type": null,
                        "protocol": "openfabric", "node": "pve2", "status": "ok"}),
                &json!({"kind": "network", "id": "network/pve2/zone/lab-network", "type": "network",
                        "network": "lab-network", "network_type": "zone", "zone_type": "simple",
                        "protocol": null, "node": "pve2", "status": "available"}),
            ]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_resources_filters_sdn_itself_and_says_none_found() {
    within(async {
        let (sim, server) = started_real().await;
        // PVE 9's ?type=sdn leaves the network entries out, so this used
        // to find nothing and blame the token.
        let out = server
            .ok("pve_list_resources", json!({"resource_type": "sdn"}))
            .await;
        assert_eq!(out["total"], 4);
        assert_eq!(out["count_by_type"], json!({"network": 4}));
        let queries: Vec<String> = sim.requests().iter().map(|r| r.query.clone()).collect();
        assert_eq!(queries, [""], "sdn is fetched unfiltered");

        let (result, out) = server
            .ok_result(
                "pve_list_resources",
                json!({"resource_type": "sdn", "status": "error"}),
            )
            .await;
        assert_eq!(out["total"], 0);
        assert_eq!(
            summary(&result),
            "None found matching resource_type=sdn, status=error."
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_ha_reports_fencing_failback_and_auto_rebalance() {
    within(async {
        let (sim, server) = started_real().await;
        let (result, out) = server.ok_result("pve_list_ha", json!({})).await;
        assert_eq!(
            out["fencing"],
            json!({"armed_state": "armed", "resource_mode": null,
                   "status": "armed (CRM watchdog active)"})
        );
        for (sid, failback, auto_rebalance) in [
            ("ct:106", false, false),
            ("vm:100", true, false),
            ("vm:103", true, true),
        ] {
            assert_fields(
                sid,
                find(&out, "resources", "sid", sid),
                json!({"failback": failback, "auto_rebalance": auto_rebalance}),
            );
        }
        // The fencing row is not mistaken for a node's LRM.
        assert_eq!(out["lrm"].as_array().unwrap().len(), 3);
        assert!(
            summary(&result).starts_with("HA quorum OK, master pve1, fencing armed; 3 resources"),
            "{}",
            summary(&result)
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn vm_config_keeps_the_raw_lxc_key_a_list() {
    within(async {
        let (sim, server) = started_real().await;
        // This used to be the JSON text "[[\"lxc.apparmor.profile\", ...]]".
        let out = server.ok("pve_get_vm_config", json!({"vmid": 107})).await;
        assert_eq!(
            out["config"]["lxc"],
            json!([
                ["lxc.apparmor.profile", "unconfined"],
                ["lxc.cgroup2.devices.allow", "a"]
            ])
        );
        assert_eq!(out["masked_keys"], json!([]));
        assert_no_schema_violations(&sim);
    })
    .await;
}
