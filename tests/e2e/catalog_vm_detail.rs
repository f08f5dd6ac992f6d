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
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server
            .call("pve_list_snapshots", json!({"vmid": 100}))
            .await;
        assert_eq!(result.is_error, Some(false), "{}", summary(&result));
        let s = result.structured_content.clone().unwrap();
        assert_eq!(s["cluster"], "default");
        assert_eq!(s["vmid"], 100);
        assert_eq!(s["node"], "pve1");
        assert_eq!(s["vm_type"], "qemu");
        assert_eq!(s["resolved"]["node"], true);
        assert_eq!(s["resolved"]["vm_type"], true);
        assert_eq!(s["running"], true);
        assert_eq!(
            names(&s, "snapshots"),
            ["pre_upgrade", "test_branch", "post_upgrade", "kernel_617"],
            "oldest first, 'current' left out"
        );
        assert_eq!(
            strings(&s["current_path"]),
            ["pre_upgrade", "post_upgrade", "kernel_617"]
        );
        assert_eq!(s["current_parent"], "kernel_617");
        assert_eq!(s["total"], 4);
        assert_eq!(s["next_offset"], Value::Null);

        let snaps = s["snapshots"].as_array().unwrap();
        let pre = &snaps[0];
        assert_eq!(pre["parent"], Value::Null);
        assert_eq!(pre["depth"], 0);
        assert_eq!(strings(&pre["children"]), ["test_branch", "post_upgrade"]);
        assert_eq!(pre["description"], "before dist-upgrade\nticket OPS-1234");
        assert_eq!(pre["snaptime"], T0 - 30 * DAY);
        assert_eq!(pre["snaptime_iso"], "2026-10-29T00:00:00Z");
        assert_eq!(pre["vmstate"], false);
        assert_eq!(pre["on_current_path"], true);
        assert_eq!(pre["snapstate"], Value::Null);

        let branch = &snaps[1];
        assert_eq!(branch["parent"], "pre_upgrade");
        assert_eq!(branch["depth"], 1);
        assert_eq!(branch["children"], json!([]));
        assert_eq!(branch["vmstate"], true);
        assert_eq!(branch["on_current_path"], false);
        assert_eq!(branch["snaptime"], T0 - 25 * DAY);

        let post = &snaps[2];
        assert_eq!(post["parent"], "pre_upgrade");
        assert_eq!(post["depth"], 1);
        assert_eq!(strings(&post["children"]), ["kernel_617"]);
        assert_eq!(post["vmstate"], false);
        assert_eq!(post["on_current_path"], true);
        assert_eq!(post["description"], "after apt full-upgrade");

        let kernel = &snaps[3];
        assert_eq!(kernel["parent"], "post_upgrade");
        assert_eq!(kernel["depth"], 2);
        assert_eq!(kernel["children"], json!([]));
        assert_eq!(kernel["vmstate"], true);
        assert_eq!(kernel["on_current_path"], true);
        assert_eq!(kernel["snaptime"], T0 - 5 * DAY);

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
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let ct = server
            .ok(
                "pve_list_snapshots",
                json!({"vmid": 106, "node": "pve1", "vm_type": "lxc"}),
            )
            .await;
        assert_eq!(ct["cluster"], "default");
        assert_eq!(ct["vm_type"], "lxc");
        assert_eq!(ct["resolved"]["node"], false);
        assert_eq!(ct["resolved"]["vm_type"], false);
        assert_eq!(names(&ct, "snapshots"), ["before_bind_update"]);
        assert_eq!(ct["snapshots"][0]["vmstate"], Value::Null, "no RAM for CTs");
        assert_eq!(ct["snapshots"][0]["description"], "bind9 9.18 -> 9.20");
        assert_eq!(ct["snapshots"][0]["depth"], 0);
        assert_eq!(ct["current_parent"], "before_bind_update");
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
        assert_eq!(n["snapshots"], json!([]));
        assert_eq!(n["current_path"], json!([]));
        assert_eq!(n["current_parent"], Value::Null);
        assert_eq!(n["total"], 0);
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
        assert_eq!(page["total"], 4);
        assert_eq!(page["returned"], 2);
        assert_eq!(page["omitted"], 2);
        assert_eq!(page["next_offset"], 3);
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
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
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

        let missing = server
            .err(t, json!({"vmid": 555, "node": "pve1", "vm_type": "qemu"}))
            .await;
        assert!(
            missing.contains("does not exist") && missing.contains("pve_list_vms"),
            "{missing}"
        );
        let not_found = server.err(t, json!({"vmid": 555})).await;
        assert!(
            not_found.contains("555") && not_found.contains("not found"),
            "{not_found}"
        );
        let offline = server.err(t, json!({"vmid": 105})).await;
        assert!(
            offline.contains("595") && offline.contains("unreachable"),
            "{offline}"
        );
        server.ok(t, json!({"vmid": 100})).await;
        assert_no_schema_violations(&sim);

        let sim = simulator().await;
        let server = Server::start(&sim, Opts::auditor()).await;
        let denied = server
            .err(t, json!({"vmid": 102, "node": "pve2", "vm_type": "qemu"}))
            .await;
        assert!(
            denied.contains("403") && denied.contains("VM.Audit") && denied.contains("/vms/102"),
            "{denied}"
        );
        assert!(denied.contains("pveum"), "{denied}");
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
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server
            .call(
                "pve_get_vm_metrics",
                json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"}),
            )
            .await;
        assert_eq!(result.is_error, Some(false), "{}", summary(&result));
        let m = result.structured_content.clone().unwrap();
        assert_eq!(m["cluster"], "default");
        assert_eq!(m["vmid"], 100);
        assert_eq!(m["node"], "pve1");
        assert_eq!(m["vm_type"], "qemu");
        assert_eq!(m["timeframe"], "hour");
        assert_eq!(m["cf"], "AVERAGE");
        assert_eq!(m["points"], 60);
        let (first, last) = (
            m["first_time"].as_u64().unwrap(),
            m["last_time"].as_u64().unwrap(),
        );
        assert_eq!(last - first, 59 * 60, "one point a minute");
        assert!(m["first_time_iso"].as_str().unwrap().ends_with(":00Z"));
        assert_eq!(m["raw_points"], Value::Null);
        assert_eq!(m["raw_downsampled"], Value::Null);
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
        let cpu = series(&m, "cpu");
        assert_eq!(cpu["unit"], "percent");
        assert_eq!(cpu["points"], 60);
        assert!(cpu["max"].as_f64().unwrap() <= 100.0);
        assert!(cpu["avg"].as_f64().unwrap() > 0.0);
        let frac = series(&m, "mem_fraction");
        assert_eq!(frac["unit"], "fraction");
        assert!(frac["max"].as_f64().unwrap() <= 1.0);
        assert_eq!(series(&m, "mem")["unit"], "bytes");
        assert_eq!(series(&m, "netin")["unit"], "bytes/s");
        assert_eq!(series(&m, "maxcpu")["unit"], "cpus");
        assert_eq!(series(&m, "memhost")["unit"], "bytes");
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
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
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
        assert_eq!(peak["cf"], "MAX");
        assert_eq!(peak["vm_type"], "lxc");
        assert_eq!(peak["points"], 60);
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
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server
            .call("pve_get_vm_metrics", json!({"vmid": 104}))
            .await;
        assert_eq!(result.is_error, Some(false), "{}", summary(&result));
        let m = result.structured_content.clone().unwrap();
        assert_eq!(m["cluster"], "default");
        assert_eq!(m["points"], 60);
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
        let offline = server
            .call(
                "pve_get_vm_metrics",
                json!({"vmid": 105, "node": "pve3", "vm_type": "qemu"}),
            )
            .await;
        assert_eq!(offline.is_error, Some(false), "{}", summary(&offline));
        let o = offline.structured_content.clone().unwrap();
        assert_eq!(o["points"], 60);
        assert_eq!(o["series"], json!([]));
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn metrics_errors_are_explained() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
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
        let missing = server.err(t, json!({"vmid": 555})).await;
        assert!(
            missing.contains("555") && missing.contains("not found"),
            "{missing}"
        );
        server.ok(t, json!({"vmid": 100})).await;
        assert_no_schema_violations(&sim);

        let sim = simulator().await;
        let server = Server::start(&sim, Opts::auditor()).await;
        let denied = server
            .err(t, json!({"vmid": 102, "node": "pve2", "vm_type": "qemu"}))
            .await;
        assert!(
            denied.contains("403") && denied.contains("VM.Audit") && denied.contains("/vms/102"),
            "{denied}"
        );
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
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let result = server.call("pve_get_vm_ips", json!({"vmid": 100})).await;
        assert_eq!(result.is_error, Some(false), "{}", summary(&result));
        let ips = result.structured_content.clone().unwrap();
        assert_eq!(ips["cluster"], "default");
        assert_eq!(ips["vmid"], 100);
        assert_eq!(ips["node"], "pve1");
        assert_eq!(ips["vm_type"], "qemu");
        assert_eq!(ips["source"], "guest-agent");
        assert_eq!(names(&ips, "interfaces"), ["lo", "eth0"]);
        let lo = &ips["interfaces"][0];
        assert_eq!(lo["ipv4"], json!(["127.0.0.1/8"]));
        assert_eq!(lo["ipv6"], json!(["::1/128"]));
        assert_eq!(lo["mac"], "00:00:00:00:00:00");
        let eth0 = &ips["interfaces"][1];
        assert_eq!(eth0["ipv4"], json!(["10.0.0.100/24"]));
        let v6 = strings(&eth0["ipv6"]);
        assert_eq!(v6.len(), 2, "{eth0}");
        assert_eq!(v6[0], "2001:db8::64/64");
        assert!(v6[1].starts_with("fe80::"), "{eth0}");
        let mac = eth0["mac"].as_str().unwrap();
        assert!(mac.starts_with("bc:24:11:") && mac.len() == 17, "{mac}");

        assert_eq!(ips["addresses"], json!(["10.0.0.100", "2001:db8::64"]));
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
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let ct = server
            .ok(
                "pve_get_vm_ips",
                json!({"vmid": 106, "node": "pve1", "vm_type": "lxc"}),
            )
            .await;
        assert_eq!(ct["cluster"], "default");
        assert_eq!(ct["source"], "container");
        assert_eq!(ct["vm_type"], "lxc");
        assert_eq!(names(&ct, "interfaces"), ["lo", "eth0"]);
        assert_eq!(ct["addresses"], json!(["10.0.0.106"]));
        let excluded = ct["excluded"].as_array().unwrap();
        assert!(excluded.contains(&json!({"address": "127.0.0.1", "reason": "loopback"})));
        assert!(excluded.contains(&json!({"address": "::1", "reason": "loopback"})));
        assert_eq!(paths(&sim), ["/api2/json/nodes/pve1/lxc/106/interfaces?"]);

        let other = server.ok("pve_get_vm_ips", json!({"vmid": 107})).await;
        assert_eq!(other["node"], "pve2");
        assert_eq!(other["addresses"], json!(["10.0.0.107"]));
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
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
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
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
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

        for vmid in [101, 104] {
            let m = server.err(t, json!({"vmid": vmid})).await;
            assert!(
                m.contains("no QEMU guest agent configured")
                    && m.contains(&format!("qm set {vmid} --agent enabled=1"))
                    && m.contains("qemu-guest-agent")
                    && m.contains("No QEMU guest agent configured"),
                "{vmid}: {m}"
            );
        }
        for vmid in [102, 103] {
            let m = server.err(t, json!({"vmid": vmid})).await;
            assert!(
                m.contains("guest agent in")
                    && m.contains("is not running")
                    && m.contains("systemctl enable --now qemu-guest-agent")
                    && m.contains("QEMU guest agent is not running"),
                "{vmid}: {m}"
            );
        }
        for vmid in [110, 900] {
            let m = server.err(t, json!({"vmid": vmid})).await;
            assert!(
                m.contains("start it first")
                    && m.contains("pve_get_vm_status")
                    && m.contains(&format!("VM {vmid} is not running")),
                "{vmid}: {m}"
            );
        }
        for vmid in [108, 200] {
            let m = server.err(t, json!({"vmid": vmid})).await;
            assert!(
                m.contains("start it first") && m.contains(&format!("CT {vmid} not running")),
                "{vmid}: {m}"
            );
        }
        let missing = server
            .err(t, json!({"vmid": 555, "node": "pve1", "vm_type": "qemu"}))
            .await;
        assert!(missing.contains("does not exist"), "{missing}");
        let offline = server.err(t, json!({"vmid": 105})).await;
        assert!(
            offline.contains("595") && offline.contains("unreachable"),
            "{offline}"
        );
        server.ok(t, json!({"vmid": 100})).await;
        assert_no_schema_violations(&sim);

        // The auditor has VM.Audit only: the agent needs more.
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::auditor()).await;
        let denied = server.err(t, json!({"vmid": 100})).await;
        assert!(
            denied.contains("403")
                && denied.contains("VM.GuestAgent.Audit")
                && denied.contains("/vms/100"),
            "{denied}"
        );
        let ct = server.err(t, json!({"vmid": 200})).await;
        assert!(
            ct.contains("CT 200 not running"),
            "VM.Audit suffices for CTs: {ct}"
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}
