//! Issue 25's node health and replication tools through the real binary
//! against the simulator: services, pending updates, disks with SMART,
//! Ceph on a cluster that has it and one that has not, replication jobs
//! with the failing one named, and a job run now with exactly its POST.

use serde_json::{Value, json};

use crate::actions::{allow, writes};
use crate::common::*;
use crate::policy_harness::*;

/// A server offering the opt-in `nodes` and `replication` toolsets.
fn opts() -> Opts {
    Opts::default()
        .arg("--toolsets")
        .arg("default,nodes,replication")
}

fn named<'a>(out: &'a Value, list: &str, field: &str, value: &str) -> &'a Value {
    out[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e[field] == value)
        .unwrap_or_else(|| panic!("no {value} in {out}"))
}

#[tokio::test]
async fn services_updates_disks_and_ceph_say_what_is_wrong() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, opts()).await;

        let pve2 = server
            .ok("pve_list_services", json!({"node": "pve2"}))
            .await;
        assert_eq!(pve2["not_running"], json!(["chrony"]), "{pve2}");
        assert_eq!(
            named(&pve2, "services", "service", "pveproxy")["active_state"],
            "active"
        );
        let pve1 = server
            .ok("pve_list_services", json!({"node": "pve1"}))
            .await;
        assert_eq!(pve1["not_running"], json!([]), "{pve1}");

        let updates = server.ok("pve_list_updates", json!({"node": "pve1"})).await;
        assert_eq!(updates["total"], 6, "{updates}");
        let manager = named(&updates, "updates", "package", "pve-manager");
        assert_eq!(manager["old_version"], "9.1.5", "{manager}");
        assert_eq!(manager["version"], "9.1.6", "{manager}");
        let none = server.ok("pve_list_updates", json!({"node": "pve2"})).await;
        assert_eq!(none["total"], 0, "{none}");

        let disks = server
            .ok(
                "pve_list_disks",
                json!({"node": "pve2", "smart": "/dev/sdb"}),
            )
            .await;
        let sdb = named(&disks, "disks", "devpath", "/dev/sdb");
        assert!(
            sdb["health"].as_str().unwrap().starts_with("FAILED"),
            "{sdb}"
        );
        assert_eq!(
            named(&disks, "disks", "devpath", "/dev/sda")["wearout"],
            4,
            "{disks}"
        );
        assert!(
            disks["smart"]["attributes"].as_array().unwrap().len() > 3,
            "{disks}"
        );
        let (result, _) = server
            .ok_result("pve_list_disks", json!({"node": "pve2"}))
            .await;
        let summary = text(&result);
        assert!(
            summary.contains("SMART health FAILED: /dev/sdb"),
            "{summary}"
        );
        assert!(summary.contains("/dev/sda (4% left)"), "{summary}");
        let bad = server
            .err(
                "pve_list_disks",
                json!({"node": "pve2", "smart": "/dev/../etc"}),
            )
            .await;
        assert!(bad.contains("smart: "), "{bad}");

        let ceph = server.ok("pve_get_ceph_status", json!({})).await;
        assert_eq!(ceph["ceph"], true, "{ceph}");
        assert_eq!(ceph["health"], "HEALTH_WARN", "{ceph}");
        assert_eq!(
            (ceph["osds"].clone(), ceph["osds_up"].clone()),
            (json!(6), json!(4))
        );
        let checks: Vec<&str> = ceph["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert!(
            checks.contains(&"OSD_DOWN") && checks.contains(&"PG_DEGRADED"),
            "{ceph}"
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_cluster_without_ceph_says_so() {
    within(async {
        let sim = lab_simulator().await;
        let mut lab = opts();
        lab.token_id = LAB_TOKEN_ID.into();
        lab.token_secret = LAB_TOKEN_SECRET.into();
        let server = Server::start(&sim, lab).await;
        let ceph = server.ok("pve_get_ceph_status", json!({})).await;
        assert_eq!(ceph["ceph"], false, "{ceph}");
        assert_eq!(ceph["checks"], json!([]), "{ceph}");
    })
    .await;
}

#[tokio::test]
async fn replication_jobs_are_listed_and_one_runs_now() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(&sim, &allow(&["pve_run_replication"]), opts()).await;
        let jobs = p.server.ok("pve_list_replication", json!({})).await;
        assert_eq!(jobs["failing"], json!(["106-0"]), "{jobs}");
        assert_eq!(jobs["unreachable_nodes"], json!(["pve3"]), "{jobs}");
        let job = named(&jobs, "jobs", "id", "101-0");
        assert_eq!(job["source"], "pve1", "{job}");
        assert_eq!(job["target"], "pve2", "{job}");
        assert!(job["last_sync"].is_string(), "{job}");
        let failing = named(&jobs, "jobs", "id", "106-0");
        assert_eq!(failing["fail_count"], 3, "{failing}");
        assert!(
            failing["error"].as_str().unwrap().contains("exit code 255"),
            "{failing}"
        );
        let one = p
            .server
            .ok("pve_list_replication", json!({"vmid": 107}))
            .await;
        assert_eq!(one["jobs"].as_array().unwrap().len(), 1, "{one}");
        assert_eq!(one["jobs"][0]["source"], "pve2", "{one}");

        let t = "pve_run_replication";
        let dry = p
            .server
            .ok(t, json!({"job": "101-0", "dry_run": true}))
            .await;
        assert!(sim.writes().is_empty());
        let done = p.server.ok(t, json!({"job": "101-0"})).await;
        assert_eq!(done["requests"], dry["requests"], "{done}");
        assert_eq!(done["node"], "pve1", "{done}");
        assert_eq!(
            writes(&sim),
            ["POST /nodes/pve1/replication/101-0/schedule_now"]
        );
        sim.clear_requests();
        for (args, says) in [
            (json!({"job": "101-9"}), "job: no replication job 101-9"),
            (json!({"job": "101"}), "job: "),
        ] {
            let message = p.server.err(t, args.clone()).await;
            assert!(message.contains(says), "{args}: {message}");
        }
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_nodes_log_is_read_newest_last_only_under_its_own_rule() {
    within(async {
        let sim = simulator().await;
        // A guarded read (`node-logs`): refused and hidden by default.
        let server = Server::start(&sim, opts()).await;
        let text = server
            .err("pve_get_node_log", json!({"node": "pve2"}))
            .await;
        assert!(
            text.contains("pve_get_node_log may write (tier destructive)"),
            "{text}"
        );

        let p = with_policy_opts(&sim, &allow(&["pve_get_node_log"]), opts()).await;
        let chrony = p
            .server
            .ok(
                "pve_get_node_log",
                json!({"node": "pve2", "service": "chrony", "lines": 3}),
            )
            .await;
        let lines = chrony["lines"].as_array().unwrap();
        assert_eq!(lines.len(), 3, "{chrony}");
        assert!(chrony["total"].as_u64().unwrap() >= 3, "{chrony}");
        assert_eq!(
            chrony["omitted"].as_u64().unwrap(),
            chrony["total"].as_u64().unwrap() - 3
        );
        assert!(
            lines.iter().all(|l| l.as_str().unwrap().contains(" pve2 ")),
            "{chrony}"
        );
        assert!(chrony.to_string().contains("chrony"), "{chrony}");
        // Newest last: the times never go back.
        let times: Vec<&str> = lines.iter().map(|l| &l.as_str().unwrap()[..15]).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");

        // The count first, then the last lines: two bounded GETs.
        let gets: Vec<String> = sim
            .requests()
            .iter()
            .filter(|r| r.api_path().starts_with("/nodes/pve2/syslog"))
            .map(|r| {
                let params: Vec<String> =
                    r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                params.join("&")
            })
            .collect();
        let total = chrony["total"].as_u64().unwrap();
        assert_eq!(
            gets,
            [
                "limit=1&service=chrony".to_string(),
                format!("limit=3&service=chrony&start={}", total - 3)
            ]
        );

        // A window with nothing in it, and a window the wrong way round.
        let none = p
            .server
            .ok(
                "pve_get_node_log",
                json!({"node": "pve1", "since": "2001-01-01", "until": "2001-01-02"}),
            )
            .await;
        assert_eq!(
            (
                none["total"].as_u64(),
                none["lines"].as_array().map(Vec::len)
            ),
            (Some(0), Some(0))
        );
        let text = p
            .server
            .err(
                "pve_get_node_log",
                json!({"node": "pve1", "since": "2026-01-02", "until": "2026-01-01"}),
            )
            .await;
        assert!(text.contains("until: is before since"), "{text}");
        assert_no_schema_violations(&sim);
    })
    .await;
}
