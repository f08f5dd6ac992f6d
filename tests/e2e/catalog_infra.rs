//! The infrastructure read tools end to end: `pve_list_clusters`,
//! `pve_get_version`, `pve_get_cluster_status`, `pve_list_nodes`,
//! `pve_get_node_metrics` and `pve_list_resources`, against the seeded
//! cluster (and the large and standalone ones where it matters).

use serde_json::{Value, json};

use crate::common::*;

fn lab_opts() -> Opts {
    Opts {
        token_id: LAB_TOKEN_ID.into(),
        token_secret: LAB_TOKEN_SECRET.into(),
        ..Opts::default()
    }
}

// ---------------------------------------------------------------- clusters

#[tokio::test]
async fn list_clusters_shows_the_env_cluster_without_any_request() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server.call("pve_list_clusters", json!({})).await;
        assert_eq!(result.is_error, Some(false), "{}", text(&result));
        let out = result.structured_content.clone().unwrap();
        assert_eq!(
            out["clusters"],
            json!([{"name": "default", "base_url": sim.base_url(), "default": true}])
        );
        assert_eq!(out["default"], "default");
        assert_eq!(out["count"], 1);
        assert_eq!(out["cluster"], "default");
        assert!(
            !out.to_string().contains(ADMIN_TOKEN_SECRET)
                && !text(&result).contains(ADMIN_TOKEN_SECRET),
            "credentials must never be shown: {out}"
        );
        assert!(
            text(&result).contains("1 cluster configured"),
            "{}",
            text(&result)
        );
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());

        // It takes no arguments of its own.
        let message = server.err("pve_list_clusters", json!({"foo": 1})).await;
        assert!(
            message.starts_with("Invalid arguments: ") && message.contains("foo"),
            "{message}"
        );
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_clusters_with_two_clusters_and_the_cluster_argument() {
    within(async {
        let main = simulator().await;
        let lab = lab_simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = two_clusters(&main, &lab, &dir);
        let opts = Opts {
            env_cluster: false,
            tls: Tls::Nothing,
            ..Opts::default()
        }
        .arg("--config")
        .arg(&config);
        let server = Server::start(&main, opts).await;

        let out = server.ok("pve_list_clusters", json!({})).await;
        assert_eq!(
            out["clusters"],
            json!([
                {"name": "main", "base_url": main.base_url(), "default": true},
                {"name": "lab", "base_url": lab.base_url(), "default": false}
            ])
        );
        assert_eq!(out["default"], "main");
        assert_eq!(out["count"], 2);
        assert_eq!(out["cluster"], "main");
        let s = out.to_string();
        assert!(
            !s.contains(ADMIN_TOKEN_SECRET) && !s.contains(LAB_TOKEN_SECRET),
            "{s}"
        );
        assert!(main.requests().is_empty() && lab.requests().is_empty());

        // The names it lists are what the cluster argument takes.
        let status = server
            .ok("pve_get_cluster_status", json!({"cluster": "lab"}))
            .await;
        assert_eq!(status["standalone"], true);
        assert_eq!(status["cluster"], "lab");
        let status = server.ok("pve_get_cluster_status", json!({})).await;
        assert_eq!(status["cluster_name"], "demo-cluster");
        assert_eq!(status["cluster"], "main");
        assert_no_schema_violations(&main);
        assert_no_schema_violations(&lab);
    })
    .await;
}

// ----------------------------------------------------------------- version

#[tokio::test]
async fn get_version_reports_the_seeded_release_for_any_token() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server.call("pve_get_version", json!({})).await;
        assert_eq!(result.is_error, Some(false), "{}", text(&result));
        let v = result.structured_content.clone().unwrap();
        assert_eq!(
            v,
            json!({
                "version": "9.1.5",
                "release": "9.1",
                "repoid": "8f3a5c1e7b2d9046",
                "console": null,
                "cluster": "default"
            })
        );
        assert!(
            text(&result).contains("Proxmox VE 9.1.5 (release 9.1)"),
            "{}",
            text(&result)
        );
        assert_eq!(paths(&sim), ["/api2/json/version?"]);

        // No arguments of its own; nothing is sent for a bad one.
        sim.clear_requests();
        assert_all_invalid(
            &sim,
            &server,
            &[("pve_get_version", json!({"node": "pve1"}), "node")],
        )
        .await;

        // Any valid token may ask, even one without Sys.Audit.
        let auditor = Server::start(&sim, Opts::auditor()).await;
        let v = auditor.ok("pve_get_version", json!({})).await;
        assert_eq!(v["version"], "9.1.5");
        assert_eq!(v["cluster"], "default");
        assert_no_schema_violations(&sim);
    })
    .await;
}

// ---------------------------------------------------------- cluster status

#[tokio::test]
async fn cluster_status_reports_quorum_and_the_offline_node() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server.call("pve_get_cluster_status", json!({})).await;
        assert_eq!(result.is_error, Some(false), "{}", text(&result));
        let s = result.structured_content.clone().unwrap();
        assert_eq!(s["standalone"], false);
        assert_eq!(s["cluster_name"], "demo-cluster");
        assert_eq!(s["quorate"], true);
        assert_eq!(s["config_version"], 3);
        assert_eq!(s["node_count"], 3);
        assert_eq!(s["nodes_online"], json!(["pve1", "pve2"]));
        assert_eq!(s["nodes_offline"], json!(["pve3"]));
        assert_eq!(s["cluster"], "default");
        assert_eq!(
            s["nodes"],
            json!([
                {"name": "pve1", "nodeid": 1, "ip": "192.0.2.11", "local": true, "online": true, "level": "c"},
                {"name": "pve2", "nodeid": 2, "ip": "192.0.2.12", "local": false, "online": true, "level": "c"},
                {"name": "pve3", "nodeid": 3, "ip": "192.0.2.13", "local": false, "online": false, "level": null}
            ])
        );
        assert!(
            text(&result)
                .contains("Cluster demo-cluster: quorate, 2 of 3 nodes online (offline: pve3)."),
            "{}",
            text(&result)
        );
        assert_eq!(paths(&sim), ["/api2/json/cluster/status?"]);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn cluster_status_of_a_standalone_node() {
    within(async {
        let lab = lab_simulator().await;
        let server = Server::start(&lab, lab_opts()).await;
        let s = server.ok("pve_get_cluster_status", json!({})).await;
        assert_eq!(s["standalone"], true);
        assert_eq!(s["cluster_name"], Value::Null);
        assert_eq!(s["quorate"], true);
        assert_eq!(s["config_version"], Value::Null);
        assert_eq!(s["node_count"], 1);
        assert_eq!(s["nodes_online"], json!(["lab1"]));
        assert_eq!(s["nodes_offline"], json!([]));
        assert_eq!(s["nodes"][0]["name"], "lab1");
        assert_eq!(s["nodes"][0]["nodeid"], 0);
        assert_eq!(s["nodes"][0]["local"], true);
        assert_eq!(s["cluster"], "default");
        assert_no_schema_violations(&lab);
    })
    .await;
}

#[tokio::test]
async fn cluster_status_needs_sys_audit_and_refuses_bad_input() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::auditor()).await;
        assert_all_invalid(
            &sim,
            &server,
            &[
                (
                    "pve_get_cluster_status",
                    json!({"verbose": true}),
                    "verbose",
                ),
                ("pve_get_cluster_status", json!({"cluster": 5}), "cluster"),
            ],
        )
        .await;
        let message = server.err("pve_get_cluster_status", json!({})).await;
        assert!(message.contains("403"), "{message}");
        assert!(
            message.contains("Sys.Audit") && message.contains("on / "),
            "the privilege and path are named: {message}"
        );
        assert!(message.contains("pveum acl modify /"), "{message}");
        assert_eq!(paths(&sim), ["/api2/json/cluster/status?"]);
        assert_eq!(sim.requests()[0].status, 403);
        assert_no_schema_violations(&sim);
    })
    .await;
}

// ------------------------------------------------------------------- nodes

#[tokio::test]
async fn list_nodes_with_usage_status_and_fingerprint() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server.call("pve_list_nodes", json!({})).await;
        assert_eq!(result.is_error, Some(false), "{}", text(&result));
        let out = result.structured_content.clone().unwrap();
        let names: Vec<_> = out["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["node"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["pve1", "pve2", "pve3"]);
        assert_eq!(out["count_by_status"], json!({"online": 2, "offline": 1}));
        assert_eq!(out["total"], 3);
        assert_eq!(out["returned"], 3);
        assert_eq!(out["omitted"], 0);
        assert_eq!(out["offset"], 0);
        assert_eq!(out["limit"], 100);
        assert_eq!(out["next_offset"], Value::Null);
        assert_eq!(out["cluster"], "default");

        let pve1 = &out["nodes"][0];
        assert_eq!(pve1["status"], "online");
        assert_approx(&pve1["cpu"], 0.0734);
        assert_eq!(pve1["maxcpu"], 32);
        assert_eq!(pve1["mem"], 48_318_382_080u64);
        assert_eq!(pve1["maxmem"], 134_924_009_472u64);
        assert_eq!(pve1["disk"], 14_298_456_064u64);
        assert_eq!(pve1["maxdisk"], 100_861_726_720u64);
        assert_eq!(pve1["uptime"], 3_456_789);
        assert_eq!(pve1["level"], "c");
        let pve2 = &out["nodes"][1];
        assert_eq!(pve2["status"], "online");
        assert_approx(&pve2["cpu"], 0.1275);
        assert_eq!(pve2["maxcpu"], 16);
        assert_eq!(pve2["uptime"], 1_209_633);
        // The offline node keeps only its stale max* figures.
        let pve3 = &out["nodes"][2];
        assert_eq!(pve3["status"], "offline");
        assert_eq!(pve3["cpu"], Value::Null);
        assert_eq!(pve3["mem"], Value::Null);
        assert_eq!(pve3["uptime"], Value::Null);
        assert_eq!(pve3["level"], Value::Null);
        assert_eq!(pve3["maxcpu"], 12);
        assert_eq!(pve3["maxmem"], 33_520_029_696u64);
        for n in out["nodes"].as_array().unwrap() {
            assert_eq!(n["ssl_fingerprint"], sim.leaf_fingerprint(), "{n}");
        }
        assert!(
            text(&result).contains("3 nodes (1 offline, 2 online)"),
            "{}",
            text(&result)
        );
        assert_eq!(paths(&sim), ["/api2/json/nodes?"]);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_nodes_pages_and_refuses_bad_paging() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        assert_all_invalid(
            &sim,
            &server,
            &[
                ("pve_list_nodes", json!({"limit": 0}), "limit"),
                ("pve_list_nodes", json!({"limit": 1001}), "limit"),
                ("pve_list_nodes", json!({"limit": "2"}), "limit"),
                ("pve_list_nodes", json!({"offset": -1}), "offset"),
                ("pve_list_nodes", json!({"status": "online"}), "status"),
            ],
        )
        .await;

        let page = server
            .ok("pve_list_nodes", json!({"limit": 1, "offset": 1}))
            .await;
        assert_eq!(page["nodes"].as_array().unwrap().len(), 1);
        assert_eq!(page["nodes"][0]["node"], "pve2");
        assert_eq!(page["total"], 3);
        assert_eq!(page["returned"], 1);
        assert_eq!(page["omitted"], 2);
        assert_eq!(page["next_offset"], 2);
        // Counts cover every node, not just the page.
        assert_eq!(page["count_by_status"], json!({"online": 2, "offline": 1}));
        let last = server
            .ok("pve_list_nodes", json!({"limit": 2, "offset": 2}))
            .await;
        assert_eq!(last["nodes"][0]["node"], "pve3");
        assert_eq!(last["returned"], 1);
        assert_eq!(last["next_offset"], Value::Null);
        let past = server.ok("pve_list_nodes", json!({"offset": 10})).await;
        assert_eq!(past["returned"], 0);
        assert_eq!(past["total"], 3);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_nodes_for_the_auditor_hides_figures_instead_of_failing() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::auditor()).await;
        let out = server.ok("pve_list_nodes", json!({})).await;
        assert_eq!(out["total"], 3);
        assert_eq!(out["count_by_status"], json!({"online": 2, "offline": 1}));
        for n in out["nodes"].as_array().unwrap() {
            for key in [
                "cpu", "mem", "maxmem", "disk", "maxdisk", "uptime", "maxcpu",
            ] {
                assert_eq!(n[key], Value::Null, "{key} without Sys.Audit: {n}");
            }
        }
        assert_eq!(out["nodes"][0]["level"], "c");
        assert_eq!(out["nodes"][2]["status"], "offline");
        assert_eq!(out["cluster"], "default");
        assert_eq!(sim.requests()[0].status, 200);
        assert_no_schema_violations(&sim);
    })
    .await;
}

// ------------------------------------------------------------ node metrics

#[tokio::test]
async fn node_metrics_current_status_of_pve1() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server
            .call("pve_get_node_metrics", json!({"node": "pve1"}))
            .await;
        assert_eq!(result.is_error, Some(false), "{}", text(&result));
        let m = result.structured_content.clone().unwrap();
        assert_eq!(m["node"], "pve1");
        assert_eq!(m["uptime"], 3_456_789);
        assert_approx(&m["cpu"], 0.0734);
        assert_approx(&m["iowait"], 0.0013);
        assert_eq!(m["loadavg"], json!([1.52, 1.38, 1.29]));
        assert_eq!(m["memory"]["total"], 134_924_009_472u64);
        assert_eq!(m["memory"]["used"], 48_318_382_080u64);
        assert_eq!(m["memory"]["free"], 86_605_627_392u64);
        assert_eq!(m["memory"]["available"], 97_431_330_816u64);
        assert_approx(&m["memory"]["used_fraction"], 0.3581);
        assert_eq!(m["swap"]["total"], 8_589_930_496u64);
        assert_eq!(m["swap"]["used"], 268_435_456);
        assert_eq!(m["rootfs"]["total"], 100_861_726_720u64);
        assert_eq!(m["rootfs"]["used"], 14_298_456_064u64);
        assert_eq!(m["rootfs"]["available"], 86_563_270_656u64);
        assert_eq!(
            m["cpuinfo"],
            json!({"model": "AMD EPYC 7302P 16-Core Processor", "sockets": 1, "cores": 16, "cpus": 32, "mhz": 2999.998})
        );
        assert_eq!(
            m["kversion"],
            "Linux 6.17.2-1-pve #1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (2025-11-18T14:27Z)"
        );
        assert_eq!(m["pveversion"], "pve-manager/9.1.5/8f3a5c1e7b2d9046");
        assert_eq!(m["boot_mode"], "efi");
        assert_eq!(m["secureboot"], false);
        assert_eq!(m["rrd"], Value::Null, "no timeframe, no history");
        assert_eq!(m["cluster"], "default");
        assert!(
            text(&result).starts_with("Node pve1: CPU"),
            "{}",
            text(&result)
        );
        assert_eq!(paths(&sim), ["/api2/json/nodes/pve1/status?"]);

        let pve2 = server
            .ok("pve_get_node_metrics", json!({"node": "pve2"}))
            .await;
        assert_eq!(pve2["boot_mode"], "legacy-bios");
        assert_eq!(pve2["secureboot"], Value::Null);
        assert_eq!(pve2["cpuinfo"]["cpus"], 16);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn node_metrics_summarise_an_hour_of_history() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server
            .call(
                "pve_get_node_metrics",
                json!({"node": "pve1", "timeframe": "hour"}),
            )
            .await;
        assert_eq!(result.is_error, Some(false), "{}", text(&result));
        let m = result.structured_content.clone().unwrap();
        let rrd = &m["rrd"];
        assert_eq!(rrd["timeframe"], "hour");
        assert_eq!(rrd["cf"], "AVERAGE");
        assert_eq!(rrd["points"], 60);
        assert_eq!(rrd["raw"], Value::Null);
        assert_eq!(rrd["raw_omitted"], 0);
        assert!(rrd["from"].as_str().unwrap().ends_with('Z'), "{rrd}");
        assert!(rrd["from"].as_str() < rrd["to"].as_str(), "{rrd}");
        let names: Vec<_> = rrd["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect();
        for expected in [
            "cpu", "iowait", "loadavg", "memused", "memtotal", "netin", "netout",
        ] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} in {names:?}"
            );
        }
        for s in rrd["series"].as_array().unwrap() {
            assert_eq!(s["points"], 60, "{s}");
            let (min, avg, max, last) = (
                s["min"].as_f64().unwrap(),
                s["avg"].as_f64().unwrap(),
                s["max"].as_f64().unwrap(),
                s["last"].as_f64().unwrap(),
            );
            assert!(min <= avg && avg <= max, "{s}");
            assert!(min <= last && last <= max, "{s}");
        }
        let cpu = rrd["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "cpu")
            .unwrap();
        assert!(cpu["max"].as_f64().unwrap() <= 1.0, "{cpu}");
        let memtotal = rrd["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "memtotal")
            .unwrap();
        assert_eq!(memtotal["min"], 134_924_009_472u64);
        assert_eq!(memtotal["max"], 134_924_009_472u64);
        assert!(
            text(&result).contains("Past hour: CPU avg"),
            "{}",
            text(&result)
        );
        assert_eq!(
            paths(&sim),
            [
                "/api2/json/nodes/pve1/status?",
                "/api2/json/nodes/pve1/rrddata?timeframe=hour"
            ]
        );
        assert_eq!(m["cluster"], "default");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn node_metrics_cf_raw_and_other_timeframes() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let m = server
            .ok(
                "pve_get_node_metrics",
                json!({"node": "pve2", "timeframe": "day", "cf": "MAX", "raw": true}),
            )
            .await;
        let rrd = &m["rrd"];
        assert_eq!(rrd["timeframe"], "day");
        assert_eq!(rrd["cf"], "MAX");
        assert_eq!(rrd["points"], 70);
        let raw = rrd["raw"].as_array().expect("raw points");
        assert_eq!(raw.len(), 70);
        assert_eq!(rrd["raw_omitted"], 0);
        let times: Vec<u64> = raw.iter().map(|p| p["time"].as_u64().unwrap()).collect();
        assert!(
            times.windows(2).all(|w| w[1] - w[0] == 1800),
            "30-minute steps, oldest first: {times:?}"
        );
        assert!(raw.iter().all(|p| p["cpu"].is_number()), "{raw:?}");
        assert!(
            sim.requests()[1].query.contains("cf=MAX"),
            "{:?}",
            sim.requests()
        );

        for (timeframe, points) in [("week", 70), ("month", 70), ("year", 70)] {
            let m = server
                .ok(
                    "pve_get_node_metrics",
                    json!({"node": "pve1", "timeframe": timeframe}),
                )
                .await;
            assert_eq!(m["rrd"]["timeframe"], timeframe);
            assert_eq!(m["rrd"]["points"], points, "{timeframe}");
        }
        // raw: false without a timeframe is the default, not an error.
        let m = server
            .ok(
                "pve_get_node_metrics",
                json!({"node": "pve1", "raw": false}),
            )
            .await;
        assert_eq!(m["rrd"], Value::Null);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn node_metrics_bad_input_is_refused_before_any_request() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let t = "pve_get_node_metrics";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({}), "node"),
                (t, json!({"node": "pve 1"}), "node"),
                (t, json!({"node": "../etc"}), "node"),
                (t, json!({"node": 1}), "node"),
                (
                    t,
                    json!({"node": "pve1", "timeframe": "minute"}),
                    "timeframe",
                ),
                (
                    t,
                    json!({"node": "pve1", "timeframe": "decade"}),
                    "timeframe",
                ),
                (
                    t,
                    json!({"node": "pve1", "timeframe": "hour", "cf": "MIN"}),
                    "cf",
                ),
                (t, json!({"node": "pve1", "cf": "MAX"}), "cf"),
                (t, json!({"node": "pve1", "raw": true}), "raw"),
                (
                    t,
                    json!({"node": "pve1", "timeframe": "hour", "raw": "yes"}),
                    "raw",
                ),
                (t, json!({"node": "pve1", "vmid": 100}), "vmid"),
            ],
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn node_metrics_offline_unknown_and_forbidden_nodes() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let offline = server
            .err("pve_get_node_metrics", json!({"node": "pve3"}))
            .await;
        assert!(offline.contains("unreachable"), "{offline}");
        assert!(offline.contains("offline"), "{offline}");
        assert!(offline.contains("595"), "{offline}");
        let unknown = server
            .err("pve_get_node_metrics", json!({"node": "pve9"}))
            .await;
        assert!(unknown.contains("does not know that node"), "{unknown}");
        // Still serving afterwards.
        server
            .ok("pve_get_node_metrics", json!({"node": "pve1"}))
            .await;

        let auditor = Server::start(&sim, Opts::auditor()).await;
        sim.clear_requests();
        let denied = auditor
            .err(
                "pve_get_node_metrics",
                json!({"node": "pve1", "timeframe": "hour"}),
            )
            .await;
        assert!(denied.contains("403"), "{denied}");
        assert!(
            denied.contains("Sys.Audit") && denied.contains("/nodes/pve1"),
            "{denied}"
        );
        // It stops at the first refusal.
        assert_eq!(paths(&sim), ["/api2/json/nodes/pve1/status?"]);
        assert_no_schema_violations(&sim);
    })
    .await;
}

// --------------------------------------------------------------- resources

fn ids(out: &Value) -> Vec<String> {
    out["resources"]
        .as_array()
        .expect("resources array")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test]
async fn list_resources_counts_every_kind_in_order() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server.call("pve_list_resources", json!({})).await;
        assert_eq!(result.is_error, Some(false), "{}", text(&result));
        let out = result.structured_content.clone().unwrap();
        assert_eq!(
            out["count_by_type"],
            json!({"pool": 1, "qemu": 8, "lxc": 5, "node": 3, "storage": 9, "sdn": 2})
        );
        assert_eq!(out["total"], 28);
        assert_eq!(out["returned"], 28);
        assert_eq!(out["omitted"], 0);
        assert_eq!(out["limit"], 200);
        assert_eq!(out["next_offset"], Value::Null);
        assert_eq!(out["cluster"], "default");
        let ids = ids(&out);
        assert_eq!(
            ids[..15],
            [
                "/pool/production",
                "qemu/100",
                "qemu/101",
                "qemu/102",
                "qemu/103",
                "qemu/104",
                "qemu/105",
                "lxc/106",
                "lxc/107",
                "lxc/108",
                "lxc/109",
                "qemu/110",
                "lxc/200",
                "qemu/900",
                "node/pve1",
            ]
        );
        assert_eq!(
            ids[15..],
            [
                "node/pve2",
                "node/pve3",
                "storage/pve1/local",
                "storage/pve1/local-lvm",
                "storage/pve1/nfs-backup",
                "storage/pve2/local",
                "storage/pve2/local-lvm",
                "storage/pve2/nfs-backup",
                "storage/pve3/local",
                "storage/pve3/local-lvm",
                "storage/pve3/nfs-backup",
                "sdn/pve1/localnetwork",
                "sdn/pve2/localnetwork",
            ]
        );
        let r = out["resources"].as_array().unwrap();
        assert_eq!(
            r[0],
            json!({"kind": "pool", "id": "/pool/production", "type": "pool", "pool": "production"})
        );
        let web = &r[1];
        assert_eq!(web["kind"], "guest");
        assert_eq!(web["type"], "qemu");
        assert_eq!(web["vmid"], 100);
        assert_eq!(web["name"], "web-frontend-01");
        assert_eq!(web["node"], "pve1");
        assert_eq!(web["status"], "running");
        assert_eq!(web["pool"], "production");
        assert_eq!(web["tags"], json!(["prod", "web"]));
        assert_eq!(web["hastate"], "started");
        assert_eq!(web["template"], false);
        assert_eq!(web["maxmem"], 4096u64 * 1024 * 1024);
        let offline_guest = &r[6];
        assert_eq!(offline_guest["vmid"], 105);
        assert_eq!(offline_guest["status"], "unknown");
        assert_eq!(offline_guest["cpu"], Value::Null);
        let node = &r[14];
        assert_eq!(node["kind"], "node");
        assert_eq!(node["status"], "online");
        assert_eq!(node["maxcpu"], 32);
        assert_eq!(node["uptime"], 3_456_789);
        let local = &r[17];
        assert_eq!(local["kind"], "storage");
        assert_eq!(local["storage"], "local");
        assert_eq!(local["plugintype"], "dir");
        assert_eq!(local["status"], "available");
        assert_eq!(local["shared"], false);
        assert_eq!(local["content"], json!(["backup", "iso", "vztmpl"]));
        assert_eq!(local["disk"], 14_298_456_064u64);
        assert_eq!(local["maxdisk"], 100_861_726_720u64);
        assert_approx(&local["used_fraction"], 0.1418);
        let nfs_on_pve3 = &r[25];
        assert_eq!(nfs_on_pve3["storage"], "nfs-backup");
        assert_eq!(nfs_on_pve3["shared"], true);
        assert_eq!(nfs_on_pve3["status"], "unknown");
        assert_eq!(nfs_on_pve3["used_fraction"], Value::Null);
        assert_eq!(
            r[26],
            json!({"kind": "sdn", "id": "sdn/pve1/localnetwork", "type": "sdn", "sdn": "localnetwork", "node": "pve1", "status": "ok"})
        );
        assert!(
            text(&result).contains("28 resources"),
            "{}",
            text(&result)
        );
        assert_eq!(paths(&sim), ["/api2/json/cluster/resources?"]);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_resources_each_filter_narrows_it() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let cases: Vec<(Value, Value, usize)> = vec![
            (
                json!({"resource_type": "vm"}),
                json!({"qemu": 8, "lxc": 5}),
                13,
            ),
            (json!({"resource_type": "node"}), json!({"node": 3}), 3),
            (
                json!({"resource_type": "storage"}),
                json!({"storage": 9}),
                9,
            ),
            (json!({"resource_type": "sdn"}), json!({"sdn": 2}), 2),
            (
                json!({"node": "pve3"}),
                json!({"qemu": 1, "lxc": 1, "node": 1, "storage": 3}),
                6,
            ),
            (
                json!({"node": "pve1", "resource_type": "storage"}),
                json!({"storage": 3}),
                3,
            ),
            (
                json!({"status": "running"}),
                json!({"qemu": 3, "lxc": 2}),
                5,
            ),
            (
                json!({"status": "RUNNING"}),
                json!({"qemu": 3, "lxc": 2}),
                5,
            ),
            (json!({"status": "offline"}), json!({"node": 1}), 1),
            (json!({"status": "online"}), json!({"node": 2}), 2),
            (json!({"status": "available"}), json!({"storage": 6}), 6),
            (
                json!({"status": "unknown"}),
                json!({"qemu": 1, "lxc": 1, "storage": 3}),
                5,
            ),
            (
                json!({"status": "stopped", "node": "pve1", "resource_type": "vm"}),
                json!({"qemu": 2, "lxc": 2}),
                4,
            ),
            (json!({"status": "no-such-status"}), json!({}), 0),
        ];
        for (args, counts, total) in cases {
            let out = server.ok("pve_list_resources", args.clone()).await;
            assert_eq!(out["count_by_type"], counts, "{args}");
            assert_eq!(out["total"], total, "{args}");
            assert_eq!(out["returned"], total, "{args}");
            for r in out["resources"].as_array().unwrap() {
                if let Some(n) = args["node"].as_str() {
                    assert_eq!(r["node"], n, "{args}: {r}");
                }
                if let Some(s) = args["status"].as_str() {
                    assert!(
                        r["status"].as_str().unwrap().eq_ignore_ascii_case(s),
                        "{args}: {r}"
                    );
                }
            }
        }
        // The type filter is Proxmox's own; node and status are applied here.
        let queries: Vec<String> = sim.requests().iter().map(|r| r.query.clone()).collect();
        assert_eq!(
            queries[..4],
            ["type=vm", "type=node", "type=storage", "type=sdn"]
        );
        assert_eq!(queries[4], "");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_resources_pages_and_refuses_bad_input() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let t = "pve_list_resources";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({"resource_type": "pool"}), "resource_type"),
                (t, json!({"resource_type": "qemu"}), "resource_type"),
                (t, json!({"node": "pve 1"}), "node"),
                (t, json!({"status": ""}), "status"),
                (t, json!({"status": "x".repeat(33)}), "status"),
                (t, json!({"status": 1}), "status"),
                (t, json!({"limit": 0}), "limit"),
                (t, json!({"limit": 2001}), "limit"),
                (t, json!({"offset": -5}), "offset"),
                (t, json!({"type": "vm"}), "type"),
            ],
        )
        .await;

        let first = server.ok(t, json!({"limit": 5})).await;
        assert_eq!(first["returned"], 5);
        assert_eq!(first["total"], 28);
        assert_eq!(first["omitted"], 23);
        assert_eq!(first["next_offset"], 5);
        // Counts cover every match, not just the page.
        assert_eq!(first["count_by_type"]["storage"], 9);
        let second = server.ok(t, json!({"limit": 5, "offset": 5})).await;
        assert_eq!(second["offset"], 5);
        assert_eq!(second["next_offset"], 10);
        assert_eq!(ids(&second)[0], "qemu/104");
        assert!(ids(&first).iter().all(|id| !ids(&second).contains(id)));
        let last = server.ok(t, json!({"limit": 5, "offset": 25})).await;
        assert_eq!(
            ids(&last),
            [
                "storage/pve3/nfs-backup",
                "sdn/pve1/localnetwork",
                "sdn/pve2/localnetwork"
            ]
        );
        assert_eq!(last["next_offset"], Value::Null);
        let past = server.ok(t, json!({"offset": 1000})).await;
        assert_eq!(past["returned"], 0);
        assert_eq!(past["total"], 28);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_resources_for_the_auditor_is_filtered_not_refused() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::auditor()).await;
        let out = server.ok("pve_list_resources", json!({})).await;
        assert_eq!(
            ids(&out),
            [
                "qemu/100",
                "qemu/101",
                "lxc/200",
                "node/pve1",
                "node/pve2",
                "node/pve3"
            ]
        );
        assert_eq!(
            out["count_by_type"],
            json!({"qemu": 2, "lxc": 1, "node": 3})
        );
        assert_eq!(out["total"], 6);
        // Nodes without Sys.Audit carry no figures.
        let node = &out["resources"][3];
        assert_eq!(node["status"], "online");
        assert_eq!(node["cpu"], Value::Null);
        assert_eq!(node["maxmem"], Value::Null);
        assert_eq!(out["cluster"], "default");
        let storage = server
            .ok("pve_list_resources", json!({"resource_type": "storage"}))
            .await;
        assert_eq!(storage["total"], 0);
        assert_eq!(storage["resources"], json!([]));
        assert!(sim.requests().iter().all(|r| r.status == 200));
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_resources_on_a_5000_guest_cluster_stays_bounded() {
    within(async {
        let sim = large_simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let first = server.ok("pve_list_resources", json!({})).await;
        let total = first["total"].as_u64().unwrap();
        assert!(total >= 5000, "total {total}");
        assert_eq!(total, 5000 + 1 + 3 + 9 + 2);
        assert_eq!(first["returned"], 200, "the default limit is 200");
        assert_eq!(first["limit"], 200);
        assert_eq!(first["omitted"].as_u64().unwrap(), total - 200);
        assert_eq!(first["next_offset"], 200);
        let guests = first["count_by_type"]["qemu"].as_u64().unwrap()
            + first["count_by_type"]["lxc"].as_u64().unwrap();
        assert_eq!(guests, 5000);
        let size = serde_json::to_string(&first).unwrap().len();
        assert!(size < 64 * 1024, "the default answer is {size} bytes");

        let second = server
            .ok("pve_list_resources", json!({"offset": 200}))
            .await;
        assert_eq!(second["returned"], 200);
        assert_eq!(second["next_offset"], 400);
        let (a, b) = (ids(&first), ids(&second));
        assert!(a.iter().all(|id| !b.contains(id)), "pages overlap");

        let max = server
            .ok(
                "pve_list_resources",
                json!({"resource_type": "vm", "limit": 2000}),
            )
            .await;
        assert_eq!(max["returned"], 2000);
        assert_eq!(max["total"], 5000);
        let filtered = server
            .ok(
                "pve_list_resources",
                json!({"node": "pve2", "status": "running", "limit": 10}),
            )
            .await;
        assert_eq!(filtered["returned"], 10);
        assert!(
            filtered["resources"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["node"] == "pve2" && r["status"] == "running"),
            "{filtered}"
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}
