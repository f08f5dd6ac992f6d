//! The per-guest detail read tools end to end: `pve_list_snapshots`,
//! `pve_get_vm_metrics` and `pve_get_vm_ips`, against the seeded cluster.

use serde_json::{Value, json};

use crate::common::*;

fn names(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} array in {list}"))
        .iter()
        .map(|s| s["name"].as_str().expect("name").to_owned())
        .collect()
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("array: {v}"))
        .iter()
        .map(|s| s.as_str().expect("string"))
        .collect()
}

/// T0 of the seed, 2026-11-28T00:00:00Z.
const T0: u64 = 1_795_824_000;
const DAY: u64 = 86_400;

// -------------------------------------------------------------- snapshots

#[tokio::test]
async fn snapshots_of_100_form_a_tree_with_the_current_path() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, s) = server
            .ok_result("pve_list_snapshots", json!({"vmid": 100}))
            .await;
        assert_fields(
            "snapshots of 100",
            &s,
            json!({"cluster": "default", "vmid": 100, "node": "pve1", "vm_type": "qemu",
                   "running": true, "current_parent": "kernel_617", "total": 4,
                   "next_offset": null}),
        );
        assert_fields(
            "resolved",
            &s["resolved"],
            json!({"node": true, "vm_type": true}),
        );
        assert_eq!(
            names(&s, "snapshots"),
            ["pre_upgrade", "test_branch", "post_upgrade", "kernel_617"],
            "oldest first, 'current' left out"
        );
        assert_eq!(
            strings(&s["current_path"]),
            ["pre_upgrade", "post_upgrade", "kernel_617"]
        );

        // The tree, oldest first.
        let snapshots = [
            json!({"parent": null, "depth": 0, "children": ["test_branch", "post_upgrade"],
                   "description": "before dist-upgrade\nticket OPS-1234",
                   "snaptime": T0 - 30 * DAY, "snaptime_iso": "2026-10-29T00:00:00Z",
                   "vmstate": false, "on_current_path": true, "snapstate": null}),
            json!({"parent": "pre_upgrade", "depth": 1, "children": [], "vmstate": true,
                   "on_current_path": false, "snaptime": T0 - 25 * DAY}),
            json!({"parent": "pre_upgrade", "depth": 1, "children": ["kernel_617"],
                   "vmstate": false, "on_current_path": true,
                   "description": "after apt full-upgrade"}),
            json!({"parent": "post_upgrade", "depth": 2, "children": [], "vmstate": true,
                   "on_current_path": true, "snaptime": T0 - 5 * DAY}),
        ];
        for (i, fields) in snapshots.into_iter().enumerate() {
            assert_fields(&format!("snapshots[{i}]"), &s["snapshots"][i], fields);
        }

        let said = summary(&result);
        assert!(
            said.contains("4 snapshots") && said.contains("based on kernel_617"),
            "{said}"
        );
        assert_eq!(
            paths(&sim),
            [
                "/api2/json/cluster/resources?type=vm",
                "/api2/json/nodes/pve1/qemu/100/snapshot?"
            ]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn snapshots_of_a_container_a_plain_guest_and_paging() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let ct = server
            .ok(
                "pve_list_snapshots",
                json!({"vmid": 106, "node": "pve1", "vm_type": "lxc"}),
            )
            .await;
        assert_fields(
            "snapshots of 106",
            &ct,
            json!({"cluster": "default", "vm_type": "lxc",
                   "current_parent": "before_bind_update"}),
        );
        assert_fields(
            "resolved",
            &ct["resolved"],
            json!({"node": false, "vm_type": false}),
        );
        assert_eq!(names(&ct, "snapshots"), ["before_bind_update"]);
        // No RAM state for CTs.
        assert_fields(
            "snapshots[0]",
            &ct["snapshots"][0],
            json!({"vmstate": null, "description": "bind9 9.18 -> 9.20", "depth": 0}),
        );
        assert_eq!(strings(&ct["current_path"]), ["before_bind_update"]);
        assert_eq!(
            paths(&sim),
            ["/api2/json/nodes/pve1/lxc/106/snapshot?"],
            "node and vm_type given: one request"
        );

        let none = server
            .call("pve_list_snapshots", json!({"vmid": 101}))
            .await;
        let n = none.structured_content.clone().unwrap();
        assert_fields(
            "snapshots of 101",
            &n,
            json!({"snapshots": [], "current_path": [], "current_parent": null, "total": 0}),
        );
        assert!(summary(&none).contains("0 snapshots"), "{}", summary(&none));

        let stopped = server.ok("pve_list_snapshots", json!({"vmid": 104})).await;
        assert_eq!(stopped["running"], false);

        let page = server
            .ok(
                "pve_list_snapshots",
                json!({"vmid": 100, "node": "pve1", "vm_type": "qemu", "limit": 2, "offset": 1}),
            )
            .await;
        assert_eq!(names(&page, "snapshots"), ["test_branch", "post_upgrade"]);
        assert_page(&page, 4, 2, 1, Some(3));
        assert_eq!(
            strings(&page["current_path"]),
            ["pre_upgrade", "post_upgrade", "kernel_617"],
            "the path does not depend on the page"
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn snapshots_errors_are_explained() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_list_snapshots";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({}), "vmid"),
                (t, json!({"vmid": 99}), "vmid"),
                (t, json!({"vmid": "100"}), "vmid"),
                (t, json!({"vmid": 100, "vm_type": "vm"}), "vm_type"),
                (t, json!({"vmid": 100, "node": "pve 1"}), "node"),
                (t, json!({"vmid": 100, "limit": 0}), "limit"),
                (t, json!({"vmid": 100, "limit": 501}), "limit"),
                (t, json!({"vmid": 100, "offset": -1}), "offset"),
                (t, json!({"vmid": 100, "snapshot": "x"}), "snapshot"),
            ],
        )
        .await;

        assert_refusals(
            &server,
            t,
            &[
                (
                    json!({"vmid": 555, "node": "pve1", "vm_type": "qemu"}),
                    &["does not exist", "pve_list_vms"],
                ),
                (json!({"vmid": 555}), &["555", "not found"]),
                (json!({"vmid": 105}), &["595", "unreachable"]),
            ],
        )
        .await;
        server.ok(t, json!({"vmid": 100})).await;
        assert_no_schema_violations(&sim);

        let (sim, server) = started(Opts::auditor()).await;
        assert_refusals(
            &server,
            t,
            &[(
                json!({"vmid": 102, "node": "pve2", "vm_type": "qemu"}),
                &["403", "VM.Audit", "/vms/102", "pveum"],
            )],
        )
        .await;
        let visible = server.ok(t, json!({"vmid": 100})).await;
        assert_eq!(visible["total"], 4);
        assert_no_schema_violations(&sim);
    })
    .await;
}

// ---------------------------------------------------------------- metrics

/// Every series is internally consistent.
fn assert_series_sane(m: &Value) {
    for s in m["series"].as_array().expect("series") {
        let (min, avg, max) = (
            s["min"].as_f64().unwrap(),
            s["avg"].as_f64().unwrap(),
            s["max"].as_f64().unwrap(),
        );
        let last = s["last"].as_f64().unwrap();
        assert!(min <= avg && avg <= max, "min <= avg <= max: {s}");
        assert!(min <= last && last <= max, "last within range: {s}");
        assert!(s["points"].as_u64().unwrap() <= m["points"].as_u64().unwrap());
    }
}

fn series<'a>(m: &'a Value, name: &str) -> &'a Value {
    m["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} series in {m}"))
}

#[tokio::test]
async fn metrics_of_100_over_the_last_hour() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, m) = server
            .ok_result(
                "pve_get_vm_metrics",
                json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"}),
            )
            .await;
        assert_fields(
            "metrics of 100",
            &m,
            json!({"cluster": "default", "vmid": 100, "node": "pve1", "vm_type": "qemu",
                   "timeframe": "hour", "cf": "AVERAGE", "points": 60, "raw_points": null,
                   "raw_downsampled": null}),
        );
        let (first, last) = (
            m["first_time"].as_u64().unwrap(),
            m["last_time"].as_u64().unwrap(),
        );
        assert_eq!(last - first, 59 * 60, "one point a minute");
        assert!(m["first_time_iso"].as_str().unwrap().ends_with(":00Z"));
        assert_eq!(
            names(&m, "series"),
            [
                "cpu",
                "mem",
                "mem_fraction",
                "netin",
                "netout",
                "diskread",
                "diskwrite",
                "disk",
                "maxcpu",
                "maxmem",
                "maxdisk",
                "memhost"
            ]
        );
        assert_series_sane(&m);
        let units = [
            ("cpu", "percent"),
            ("mem_fraction", "fraction"),
            ("mem", "bytes"),
            ("netin", "bytes/s"),
            ("maxcpu", "cpus"),
            ("memhost", "bytes"),
        ];
        for (name, unit) in units {
            assert_eq!(series(&m, name)["unit"], unit, "the {name} series");
        }
        let cpu = series(&m, "cpu");
        assert_eq!(cpu["points"], 60);
        assert!(cpu["max"].as_f64().unwrap() <= 100.0);
        assert!(cpu["avg"].as_f64().unwrap() > 0.0);
        let frac = series(&m, "mem_fraction");
        assert!(frac["max"].as_f64().unwrap() <= 1.0);
        let maxmem = series(&m, "maxmem");
        assert_eq!(maxmem["min"], maxmem["max"], "maxmem is constant");
        assert_eq!(maxmem["min"], 4_294_967_296u64);
        let said = summary(&result);
        assert!(
            said.contains("60 points") && said.contains("CPU avg"),
            "{said}"
        );
        assert_eq!(
            paths(&sim),
            ["/api2/json/nodes/pve1/qemu/100/rrddata?timeframe=hour&cf=AVERAGE"]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn metrics_timeframe_cf_and_raw() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_get_vm_metrics";

        for (tf, step) in [
            ("day", 1_800u64),
            ("week", 10_800),
            ("month", 43_200),
            ("year", 604_800),
        ] {
            let m = server.ok(t, json!({"vmid": 100, "timeframe": tf})).await;
            assert_eq!(m["timeframe"], tf);
            assert_eq!(m["points"], 70, "{tf}");
            let span = m["last_time"].as_u64().unwrap() - m["first_time"].as_u64().unwrap();
            assert_eq!(span, 69 * step, "{tf}");
            assert_series_sane(&m);
        }

        sim.clear_requests();
        let peak = server
            .ok(
                t,
                json!({"vmid": 106, "node": "pve1", "vm_type": "lxc", "cf": "MAX"}),
            )
            .await;
        assert_fields(
            "peak of 106",
            &peak,
            json!({"cf": "MAX", "vm_type": "lxc", "points": 60}),
        );
        assert_series_sane(&peak);
        assert!(
            !names(&peak, "series").contains(&"memhost".to_owned()),
            "memhost is a VM source"
        );
        assert_eq!(
            paths(&sim),
            ["/api2/json/nodes/pve1/lxc/106/rrddata?timeframe=hour&cf=MAX"]
        );

        let raw = server
            .ok(
                t,
                json!({"vmid": 100, "node": "pve1", "vm_type": "qemu", "raw": true}),
            )
            .await;
        let points = raw["raw_points"].as_array().expect("raw_points");
        assert_eq!(points.len(), 60);
        assert_eq!(raw["raw_downsampled"], false);
        assert!(points.len() <= 100);
        let times: Vec<u64> = points
            .iter()
            .map(|p| p["time"].as_u64().expect("time"))
            .collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "oldest first");
        assert!(points.iter().all(|p| p["cpu"].is_number()), "{}", points[0]);

        let raw_day = server
            .ok(t, json!({"vmid": 101, "timeframe": "day", "raw": true}))
            .await;
        let day_points = raw_day["raw_points"].as_array().unwrap();
        assert_eq!(day_points.len(), 70);
        assert!(day_points.len() <= 100);
        assert_eq!(raw_day["raw_downsampled"], false);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn metrics_of_a_stopped_guest_and_an_offline_node() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, m) = server
            .ok_result("pve_get_vm_metrics", json!({"vmid": 104}))
            .await;
        assert_fields(
            "metrics of 104",
            &m,
            json!({"cluster": "default", "points": 60}),
        );
        assert_eq!(
            names(&m, "series"),
            ["disk", "maxcpu", "maxmem", "maxdisk"],
            "no cpu/mem/net series for a stopped guest"
        );
        assert_series_sane(&m);
        assert!(
            summary(&result).contains("no usage data"),
            "{}",
            summary(&result)
        );

        // PVE serves guest rrddata from the local RRD cache, so a guest on
        // the offline node answers, with every data source unknown.
        let o = server
            .ok(
                "pve_get_vm_metrics",
                json!({"vmid": 105, "node": "pve3", "vm_type": "qemu"}),
            )
            .await;
        assert_fields("metrics of 105", &o, json!({"points": 60, "series": []}));
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn metrics_errors_are_explained() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_get_vm_metrics";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({}), "vmid"),
                (t, json!({"vmid": 100, "timeframe": "minute"}), "timeframe"),
                (t, json!({"vmid": 100, "timeframe": "decade"}), "timeframe"),
                (t, json!({"vmid": 100, "timeframe": "HOUR"}), "timeframe"),
                (t, json!({"vmid": 100, "timeframe": 1}), "timeframe"),
                (t, json!({"vmid": 100, "cf": "MIN"}), "cf"),
                (t, json!({"vmid": 100, "cf": "average"}), "cf"),
                (t, json!({"vmid": 100, "raw": "yes"}), "raw"),
                (t, json!({"vmid": 100, "vm_type": "kvm"}), "vm_type"),
                (t, json!({"vmid": 100, "limit": 10}), "limit"),
            ],
        )
        .await;
        assert_refusals(&server, t, &[(json!({"vmid": 555}), &["555", "not found"])]).await;
        server.ok(t, json!({"vmid": 100})).await;
        assert_no_schema_violations(&sim);

        let (sim, server) = started(Opts::auditor()).await;
        assert_refusals(
            &server,
            t,
            &[(
                json!({"vmid": 102, "node": "pve2", "vm_type": "qemu"}),
                &["403", "VM.Audit", "/vms/102"],
            )],
        )
        .await;
        let visible = server.ok(t, json!({"vmid": 101})).await;
        assert_eq!(visible["points"], 60);
        assert_no_schema_violations(&sim);
    })
    .await;
}

// -------------------------------------------------------------------- IPs

#[tokio::test]
async fn ips_of_100_from_the_guest_agent_leave_out_loopback() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, ips) = server
            .ok_result("pve_get_vm_ips", json!({"vmid": 100}))
            .await;
        assert_fields(
            "IPs of 100",
            &ips,
            json!({"cluster": "default", "vmid": 100, "node": "pve1", "vm_type": "qemu",
                   "source": "guest-agent", "addresses": ["10.0.0.100", "2001:db8::64"]}),
        );
        assert_eq!(names(&ips, "interfaces"), ["lo", "eth0"]);
        assert_fields(
            "lo",
            &ips["interfaces"][0],
            json!({"ipv4": ["127.0.0.1/8"], "ipv6": ["::1/128"], "mac": "00:00:00:00:00:00"}),
        );
        let eth0 = &ips["interfaces"][1];
        assert_eq!(eth0["ipv4"], json!(["10.0.0.100/24"]));
        let v6 = strings(&eth0["ipv6"]);
        assert_eq!(v6.len(), 2, "{eth0}");
        assert_eq!(v6[0], "2001:db8::64/64");
        assert!(v6[1].starts_with("fe80::"), "{eth0}");
        let mac = eth0["mac"].as_str().unwrap();
        assert!(mac.starts_with("bc:24:11:") && mac.len() == 17, "{mac}");

        let addresses = strings(&ips["addresses"]);
        assert!(!addresses.contains(&"127.0.0.1"));
        let excluded = ips["excluded"].as_array().unwrap();
        assert!(excluded.contains(&json!({"address": "127.0.0.1", "reason": "loopback"})));
        assert!(excluded.contains(&json!({"address": "::1", "reason": "loopback"})));
        let ll = v6[1].split('/').next().unwrap();
        assert!(excluded.contains(&json!({"address": ll, "reason": "link-local"})));
        assert_eq!(excluded.len(), 3);
        let said = summary(&result);
        assert!(
            said.contains("10.0.0.100") && !said.contains("127.0.0.1"),
            "{said}"
        );
        assert_eq!(
            paths(&sim),
            [
                "/api2/json/cluster/resources?type=vm",
                "/api2/json/nodes/pve1/qemu/100/agent/network-get-interfaces?"
            ]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn ips_of_running_containers() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let ct = server
            .ok(
                "pve_get_vm_ips",
                json!({"vmid": 106, "node": "pve1", "vm_type": "lxc"}),
            )
            .await;
        assert_fields(
            "IPs of 106",
            &ct,
            json!({"cluster": "default", "source": "container", "vm_type": "lxc",
                   "addresses": ["10.0.0.106"]}),
        );
        assert_eq!(names(&ct, "interfaces"), ["lo", "eth0"]);
        let excluded = ct["excluded"].as_array().unwrap();
        assert!(excluded.contains(&json!({"address": "127.0.0.1", "reason": "loopback"})));
        assert!(excluded.contains(&json!({"address": "::1", "reason": "loopback"})));
        assert_eq!(paths(&sim), ["/api2/json/nodes/pve1/lxc/106/interfaces?"]);

        let other = server.ok("pve_get_vm_ips", json!({"vmid": 107})).await;
        assert_fields(
            "IPs of 107",
            &other,
            json!({"node": "pve2", "addresses": ["10.0.0.107"]}),
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// Containers report each address's family as `inet`/`inet6` (the
/// simulator mirrors PVE 9's `ip-addresses`); IPv6 addresses must land in
/// `ipv6`, not `ipv4`.
#[tokio::test]
async fn ips_of_a_container_keep_ipv6_apart_from_ipv4() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let ct = server
            .ok(
                "pve_get_vm_ips",
                json!({"vmid": 106, "node": "pve1", "vm_type": "lxc"}),
            )
            .await;
        assert_no_schema_violations(&sim);
        let lo = &ct["interfaces"][0];
        assert_eq!(lo["ipv4"], json!(["127.0.0.1/8"]), "{ct}");
        assert_eq!(lo["ipv6"], json!(["::1/128"]), "{ct}");
        let eth0 = &ct["interfaces"][1];
        assert_eq!(eth0["ipv4"], json!(["10.0.0.106/24"]), "{ct}");
        let v6 = strings(&eth0["ipv6"]);
        assert!(v6.len() == 1 && v6[0].starts_with("fe80::"), "{ct}");
    })
    .await;
}

#[tokio::test]
async fn ips_agent_and_stopped_guest_errors_say_what_to_do() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_get_vm_ips";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({}), "vmid"),
                (t, json!({"vmid": 99}), "vmid"),
                (t, json!({"vmid": 100, "vm_type": "vm"}), "vm_type"),
                (t, json!({"vmid": 100, "node": "-x"}), "node"),
                (t, json!({"vmid": 100, "family": "ipv4"}), "family"),
            ],
        )
        .await;

        // Each guest the agent cannot answer for says what to do, and
        // quotes Proxmox.
        let no_agent = |vmid: u64| {
            vec![
                "no QEMU guest agent configured".to_owned(),
                format!("qm set {vmid} --agent enabled=1"),
                "qemu-guest-agent".to_owned(),
                "No QEMU guest agent configured".to_owned(),
            ]
        };
        let agent_down = || {
            vec![
                "guest agent in".to_owned(),
                "is not running".to_owned(),
                "systemctl enable --now qemu-guest-agent".to_owned(),
                "QEMU guest agent is not running".to_owned(),
            ]
        };
        let vm_stopped = |vmid: u64| {
            vec![
                "start it first".to_owned(),
                "pve_get_vm_status".to_owned(),
                format!("VM {vmid} is not running"),
            ]
        };
        let ct_stopped = |vmid: u64| {
            vec![
                "start it first".to_owned(),
                format!("CT {vmid} not running"),
            ]
        };
        let cases = [
            (101, no_agent(101)),
            (104, no_agent(104)),
            (102, agent_down()),
            (103, agent_down()),
            (110, vm_stopped(110)),
            (900, vm_stopped(900)),
            (108, ct_stopped(108)),
            (200, ct_stopped(200)),
        ];
        for (vmid, says) in &cases {
            let says: Vec<&str> = says.iter().map(String::as_str).collect();
            assert_refusals(&server, t, &[(json!({"vmid": vmid}), &says)]).await;
        }
        assert_refusals(
            &server,
            t,
            &[
                (
                    json!({"vmid": 555, "node": "pve1", "vm_type": "qemu"}),
                    &["does not exist"],
                ),
                (json!({"vmid": 105}), &["595", "unreachable"]),
            ],
        )
        .await;
        server.ok(t, json!({"vmid": 100})).await;
        assert_no_schema_violations(&sim);

        // The auditor has VM.Audit only: the agent needs more.
        let (sim, server) = started(Opts::auditor()).await;
        // VM.Audit suffices for CTs: 200 gets as far as its state.
        assert_refusals(
            &server,
            t,
            &[
                (
                    json!({"vmid": 100}),
                    &["403", "VM.GuestAgent.Audit", "/vms/100"],
                ),
                (json!({"vmid": 200}), &["CT 200 not running"]),
            ],
        )
        .await;
        assert_no_schema_violations(&sim);
    })
    .await;
}
