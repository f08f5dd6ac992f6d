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
        let (sim, server) = started(Opts::default()).await;
        let (result, out) = server.ok_result("pve_list_clusters", json!({})).await;
        assert_fields(
            "clusters",
            &out,
            json!({"clusters": [{"name": "default", "base_url": sim.base_url(), "default": true}],
                   "default": "default", "count": 1, "cluster": "default"}),
        );
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
        assert_fields(
            "clusters",
            &out,
            json!({"clusters": [
                       {"name": "main", "base_url": main.base_url(), "default": true},
                       {"name": "lab", "base_url": lab.base_url(), "default": false}
                   ],
                   "default": "main", "count": 2, "cluster": "main"}),
        );
        let s = out.to_string();
        assert!(
            !s.contains(ADMIN_TOKEN_SECRET) && !s.contains(LAB_TOKEN_SECRET),
            "{s}"
        );
        assert!(main.requests().is_empty() && lab.requests().is_empty());

        // The names it lists are what the cluster argument takes.
        let cases = [
            (
                json!({"cluster": "lab"}),
                json!({"standalone": true, "cluster": "lab"}),
            ),
            (
                json!({}),
                json!({"cluster_name": "demo-cluster", "cluster": "main"}),
            ),
        ];
        for (args, fields) in cases {
            let status = server.ok("pve_get_cluster_status", args.clone()).await;
            assert_fields(&args.to_string(), &status, fields);
        }
        assert_no_schema_violations(&main);
        assert_no_schema_violations(&lab);
    })
    .await;
}

// ----------------------------------------------------------------- version

#[tokio::test]
async fn get_version_reports_the_seeded_release_for_any_token() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, v) = server.ok_result("pve_get_version", json!({})).await;
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
        assert_fields(
            "the auditor's",
            &v,
            json!({"version": "9.1.5", "cluster": "default"}),
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

// ---------------------------------------------------------- cluster status

#[tokio::test]
async fn cluster_status_reports_quorum_and_the_offline_node() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, s) = server.ok_result("pve_get_cluster_status", json!({})).await;
        assert_fields(
            "status",
            &s,
            json!({"standalone": false, "cluster_name": "demo-cluster", "quorate": true,
                   "config_version": 3, "node_count": 3, "nodes_online": ["pve1", "pve2"],
                   "nodes_offline": ["pve3"], "cluster": "default",
                   "nodes": [
                {"name": "pve1", "nodeid": 1, "ip": "192.0.2.11", "local": true, "online": true, "level": "c"},
                {"name": "pve2", "nodeid": 2, "ip": "192.0.2.12", "local": false, "online": true, "level": "c"},
                {"name": "pve3", "nodeid": 3, "ip": "192.0.2.13", "local": false, "online": false, "level": null}
            ]}),
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
        assert_fields(
            "status",
            &s,
            json!({"standalone": true, "cluster_name": null, "quorate": true,
                   "config_version": null, "node_count": 1, "nodes_online": ["lab1"],
                   "nodes_offline": [], "cluster": "default"}),
        );
        assert_fields(
            "nodes[0]",
            &s["nodes"][0],
            json!({"name": "lab1", "nodeid": 0, "local": true}),
        );
        assert_no_schema_violations(&lab);
    })
    .await;
}

#[tokio::test]
async fn cluster_status_needs_sys_audit_and_refuses_bad_input() {
    within(async {
        let (sim, server) = started(Opts::auditor()).await;
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
        // The privilege and path are named, and how to grant them.
        assert_refusals(
            &server,
            "pve_get_cluster_status",
            &[(
                json!({}),
                &["403", "Sys.Audit", "on / ", "pveum acl modify /"],
            )],
        )
        .await;
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
        let (sim, server) = started(Opts::default()).await;
        let (result, out) = server.ok_result("pve_list_nodes", json!({})).await;
        let names: Vec<_> = out["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["node"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["pve1", "pve2", "pve3"]);
        assert_fields(
            "nodes",
            &out,
            json!({"count_by_status": {"online": 2, "offline": 1}, "limit": 100,
                   "cluster": "default"}),
        );
        assert_page(&out, 3, 3, 0, None);

        // (position, CPU, other fields); the offline node keeps only its
        // stale max* figures.
        let nodes = [
            (
                0,
                Some(0.0734),
                json!({"status": "online", "maxcpu": 32, "mem": 48_318_382_080u64,
                       "maxmem": 134_924_009_472u64, "disk": 14_298_456_064u64,
                       "maxdisk": 100_861_726_720u64, "uptime": 3_456_789, "level": "c"}),
            ),
            (
                1,
                Some(0.1275),
                json!({"status": "online", "maxcpu": 16, "uptime": 1_209_633}),
            ),
            (
                2,
                None,
                json!({"status": "offline", "cpu": null, "mem": null, "uptime": null,
                       "level": null, "maxcpu": 12, "maxmem": 33_520_029_696u64}),
            ),
        ];
        for (i, cpu, fields) in nodes {
            let node = &out["nodes"][i];
            assert_fields(&format!("nodes[{i}]"), node, fields);
            if let Some(cpu) = cpu {
                assert_approx(&node["cpu"], cpu);
            }
        }
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
        let (sim, server) = started(Opts::default()).await;
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

        // (arguments, offset, returned, next_offset, the nodes on the page);
        // counts cover every node, not just the page.
        let pages = [
            (
                json!({"limit": 1, "offset": 1}),
                1,
                1,
                Some(2),
                &["pve2"][..],
            ),
            (json!({"limit": 2, "offset": 2}), 2, 1, None, &["pve3"][..]),
            (json!({"offset": 10}), 10, 0, None, &[][..]),
        ];
        for (args, offset, returned, next, nodes) in pages {
            let page = server.ok("pve_list_nodes", args.clone()).await;
            assert_page(&page, 3, returned, offset, next);
            let names: Vec<&str> = page["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["node"].as_str().unwrap())
                .collect();
            assert_eq!(names, nodes, "{args}");
            assert_eq!(
                page["count_by_status"],
                json!({"online": 2, "offline": 1}),
                "{args}"
            );
        }
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_nodes_for_the_auditor_hides_figures_instead_of_failing() {
    within(async {
        let (sim, server) = started(Opts::auditor()).await;
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
        let (sim, server) = started(Opts::default()).await;
        let (result, m) = server
            .ok_result("pve_get_node_metrics", json!({"node": "pve1"}))
            .await;
        // No timeframe, no history: rrd is null.
        assert_fields(
            "pve1",
            &m,
            json!({"node": "pve1", "uptime": 3_456_789, "loadavg": [1.52, 1.38, 1.29],
                   "cpuinfo": {"model": "AMD EPYC 7302P 16-Core Processor", "sockets": 1,
                               "cores": 16, "cpus": 32, "mhz": 2999.998},
                   "kversion": "Linux 6.17.2-1-pve #1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (2025-11-18T14:27Z)",
                   "pveversion": "pve-manager/9.1.5/8f3a5c1e7b2d9046", "boot_mode": "efi",
                   "secureboot": false, "rrd": null, "cluster": "default"}),
        );
        assert_approx(&m["cpu"], 0.0734);
        assert_approx(&m["iowait"], 0.0013);
        let figures = [
            (
                "memory",
                json!({"total": 134_924_009_472u64, "used": 48_318_382_080u64,
                       "free": 86_605_627_392u64, "available": 97_431_330_816u64}),
            ),
            (
                "swap",
                json!({"total": 8_589_930_496u64, "used": 268_435_456}),
            ),
            (
                "rootfs",
                json!({"total": 100_861_726_720u64, "used": 14_298_456_064u64,
                       "available": 86_563_270_656u64}),
            ),
        ];
        for (key, fields) in figures {
            assert_fields(key, &m[key], fields);
        }
        assert_approx(&m["memory"]["used_fraction"], 0.3581);
        assert!(
            text(&result).starts_with("Node pve1: CPU"),
            "{}",
            text(&result)
        );
        assert_eq!(paths(&sim), ["/api2/json/nodes/pve1/status?"]);

        let pve2 = server
            .ok("pve_get_node_metrics", json!({"node": "pve2"}))
            .await;
        assert_fields(
            "pve2",
            &pve2,
            json!({"boot_mode": "legacy-bios", "secureboot": null}),
        );
        assert_eq!(pve2["cpuinfo"]["cpus"], 16);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn node_metrics_summarise_an_hour_of_history() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, m) = server
            .ok_result(
                "pve_get_node_metrics",
                json!({"node": "pve1", "timeframe": "hour"}),
            )
            .await;
        let rrd = &m["rrd"];
        assert_fields(
            "rrd",
            rrd,
            json!({"timeframe": "hour", "cf": "AVERAGE", "points": 60, "raw": null,
                   "raw_omitted": 0}),
        );
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
        let (sim, server) = started(Opts::default()).await;
        let m = server
            .ok(
                "pve_get_node_metrics",
                json!({"node": "pve2", "timeframe": "day", "cf": "MAX", "raw": true}),
            )
            .await;
        let rrd = &m["rrd"];
        assert_fields(
            "rrd",
            rrd,
            json!({"timeframe": "day", "cf": "MAX", "points": 70, "raw_omitted": 0}),
        );
        let raw = rrd["raw"].as_array().expect("raw points");
        assert_eq!(raw.len(), 70);
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
            assert_fields(
                timeframe,
                &m["rrd"],
                json!({"timeframe": timeframe, "points": points}),
            );
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
        let (sim, server) = started(Opts::default()).await;
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
        let (sim, server) = started(Opts::default()).await;
        assert_refusals(
            &server,
            "pve_get_node_metrics",
            &[
                (json!({"node": "pve3"}), &["unreachable", "offline", "595"]),
                (json!({"node": "pve9"}), &["does not know that node"]),
            ],
        )
        .await;
        // Still serving afterwards.
        server
            .ok("pve_get_node_metrics", json!({"node": "pve1"}))
            .await;

        let auditor = Server::start(&sim, Opts::auditor()).await;
        sim.clear_requests();
        assert_refusals(
            &auditor,
            "pve_get_node_metrics",
            &[(
                json!({"node": "pve1", "timeframe": "hour"}),
                &["403", "Sys.Audit", "/nodes/pve1"],
            )],
        )
        .await;
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
        let (sim, server) = started(Opts::default()).await;
        let (result, out) = server.ok_result("pve_list_resources", json!({})).await;
        assert_fields(
            "resources",
            &out,
            json!({"count_by_type": {"pool": 1, "qemu": 8, "lxc": 5, "node": 3, "storage": 12, "sdn": 2},
                   "total": 31, "returned": 31, "omitted": 0, "limit": 200,
                   "next_offset": null, "cluster": "default"}),
        );
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
                "storage/pve1/nfs-images",
                "storage/pve2/local",
                "storage/pve2/local-lvm",
                "storage/pve2/nfs-backup",
                "storage/pve2/nfs-images",
                "storage/pve3/local",
                "storage/pve3/local-lvm",
                "storage/pve3/nfs-backup",
                "storage/pve3/nfs-images",
                "sdn/pve1/localnetwork",
                "sdn/pve2/localnetwork",
            ]
        );
        let r = out["resources"].as_array().unwrap();
        // Whole entries: a pool and an SDN zone.
        assert_eq!(
            r[0],
            json!({"kind": "pool", "id": "/pool/production", "type": "pool", "pool": "production"})
        );
        assert_eq!(
            r[29],
            json!({"kind": "sdn", "id": "sdn/pve1/localnetwork", "type": "sdn", "sdn": "localnetwork",
                   "zone_type": null, "node": "pve1", "status": "ok"})
        );
        // (position, fields): a guest, a guest on the offline node, a node,
        // a storage, the shared image storage and the shared storages on
        // the offline node.
        let samples = [
            (
                1,
                json!({"kind": "guest", "type": "qemu", "vmid": 100, "name": "web-frontend-01",
                       "node": "pve1", "status": "running", "pool": "production",
                       "tags": ["prod", "web"], "hastate": "started", "template": false,
                       "maxmem": 4096u64 * 1024 * 1024}),
            ),
            (6, json!({"vmid": 105, "status": "unknown", "cpu": null})),
            (
                14,
                json!({"kind": "node", "status": "online", "maxcpu": 32, "uptime": 3_456_789}),
            ),
            (
                17,
                json!({"kind": "storage", "storage": "local", "plugintype": "dir",
                       "status": "available", "shared": false,
                       "content": ["backup", "iso", "vztmpl"], "disk": 14_298_456_064u64,
                       "maxdisk": 100_861_726_720u64}),
            ),
            (
                20,
                json!({"kind": "storage", "storage": "nfs-images", "plugintype": "nfs",
                       "status": "available", "shared": true,
                       "content": ["images", "import", "rootdir"], "disk": 601_295_421_440u64,
                       "maxdisk": 3_998_614_552_576u64}),
            ),
            (
                27,
                json!({"storage": "nfs-backup", "shared": true, "status": "unknown",
                       "used_fraction": null}),
            ),
            (
                28,
                json!({"storage": "nfs-images", "shared": true, "status": "unknown",
                       "used_fraction": null}),
            ),
        ];
        for (i, fields) in samples {
            assert_fields(&format!("resources[{i}]"), &r[i], fields);
        }
        assert_approx(&r[17]["used_fraction"], 0.1418);
        assert_approx(&r[20]["used_fraction"], 0.1504);
        assert!(
            text(&result).contains("31 resources"),
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
        let (sim, server) = started(Opts::default()).await;
        let cases: Vec<(Value, Value, usize)> = vec![
            (
                json!({"resource_type": "vm"}),
                json!({"qemu": 8, "lxc": 5}),
                13,
            ),
            (json!({"resource_type": "node"}), json!({"node": 3}), 3),
            (
                json!({"resource_type": "storage"}),
                json!({"storage": 12}),
                12,
            ),
            (json!({"resource_type": "sdn"}), json!({"sdn": 2}), 2),
            (
                json!({"node": "pve3"}),
                json!({"qemu": 1, "lxc": 1, "node": 1, "storage": 4}),
                7,
            ),
            (
                json!({"node": "pve1", "resource_type": "storage"}),
                json!({"storage": 4}),
                4,
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
            (json!({"status": "available"}), json!({"storage": 8}), 8),
            (
                json!({"status": "unknown"}),
                json!({"qemu": 1, "lxc": 1, "storage": 4}),
                6,
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
        // The type filter is Proxmox's own, except sdn, which PVE 9 does
        // not apply to its `network` entries: that one, node and status
        // are applied here.
        let queries: Vec<String> = sim.requests().iter().map(|r| r.query.clone()).collect();
        assert_eq!(queries[..4], ["type=vm", "type=node", "type=storage", ""]);
        assert_eq!(queries[4], "");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_resources_pages_and_refuses_bad_input() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
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
        assert_page(&first, 31, 5, 0, Some(5));
        // Counts cover every match, not just the page.
        assert_eq!(first["count_by_type"]["storage"], 12);
        let second = server.ok(t, json!({"limit": 5, "offset": 5})).await;
        assert_page(&second, 31, 5, 5, Some(10));
        assert_eq!(ids(&second)[0], "qemu/104");
        assert!(ids(&first).iter().all(|id| !ids(&second).contains(id)));
        let last = server.ok(t, json!({"limit": 5, "offset": 28})).await;
        assert_eq!(
            ids(&last),
            [
                "storage/pve3/nfs-images",
                "sdn/pve1/localnetwork",
                "sdn/pve2/localnetwork"
            ]
        );
        assert_page(&last, 31, 3, 28, None);
        let past = server.ok(t, json!({"offset": 1000})).await;
        assert_page(&past, 31, 0, 1000, None);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_resources_for_the_auditor_is_filtered_not_refused() {
    within(async {
        let (sim, server) = started(Opts::auditor()).await;
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
        assert_fields(
            "resources[3]",
            &out["resources"][3],
            json!({"status": "online", "cpu": null, "maxmem": null}),
        );
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
        assert_eq!(total, 5000 + 1 + 3 + 12 + 2);
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
