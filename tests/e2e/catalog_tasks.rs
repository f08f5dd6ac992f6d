//! The task, HA and permission read tools end to end: `pve_list_tasks`,
//! `pve_get_task_status`, `pve_get_task_log`, `pve_list_ha` and
//! `pve_check_permissions`, against the seeded cluster (and the large one
//! for bounded output).

use pve_sim::LONG_LOG_UPID;
use serde_json::{Value, json};

use crate::common::*;

/// A well-formed UPID of a task that does not exist on pve1.
const UNKNOWN_UPID: &str = "UPID:pve1:00001234:00ABCDEF:6B0A2790:qmstart:100:root@pam:";

/// `(type, id)` of each task in a `pve_list_tasks` answer.
fn kinds(out: &Value) -> Vec<(String, String)> {
    tasks(out)
        .iter()
        .map(|t| {
            (
                t["type"].as_str().unwrap_or_default().to_owned(),
                t["id"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn tasks(out: &Value) -> &Vec<Value> {
    out["tasks"].as_array().expect("tasks array")
}

fn upids(out: &Value) -> Vec<String> {
    tasks(out)
        .iter()
        .map(|t| t["upid"].as_str().expect("upid").to_owned())
        .collect()
}

/// The UPID of the one task with this type and id, found cluster-wide.
async fn find_upid(server: &Server, ty: &str, vmid: u64) -> String {
    let out = server
        .ok("pve_list_tasks", json!({"type": ty, "vmid": vmid}))
        .await;
    assert_eq!(out["total"], 1, "one {ty} {vmid}: {out}");
    out["tasks"][0]["upid"].as_str().unwrap().to_owned()
}

/// A filter case: arguments, total, the (type, id) of each task where the
/// answer is short, and what every task in it matches.
type Filter = (
    Value,
    u64,
    &'static [(&'static str, &'static str)],
    fn(&Value) -> bool,
);

// ------------------------------------------------------------------ tasks

#[tokio::test]
async fn list_tasks_cluster_wide_is_newest_first_and_classified() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, out) = server.ok_result("pve_list_tasks", json!({})).await;
        assert_fields(
            "the list",
            &out,
            json!({"cluster": "default", "source": "cluster", "limit": 50,
                   "counts": {"running": 1, "ok": 7, "warning": 2, "error": 2}}),
        );
        assert_page(&out, 12, 12, 0, None);
        let expected = [
            ("vzdump", "103"),
            ("qmstart", "107"),
            ("qmshutdown", "103"),
            ("vzsnapshot", "106"),
            ("aptupdate", ""),
            ("qmsnapshot", "100"),
            ("vncproxy", "100"),
            ("qmstart", "104"),
            ("qmstart", "100"),
            ("vzdump", ""),
            ("vzdump", ""),
            ("qmstart", "105"),
        ];
        let got = kinds(&out);
        let got: Vec<(&str, &str)> = got.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(got, expected);
        let starts: Vec<u64> = tasks(&out)
            .iter()
            .map(|t| t["starttime"].as_u64().unwrap())
            .collect();
        assert!(
            starts.windows(2).all(|w| w[0] >= w[1]),
            "newest first: {starts:?}"
        );

        // (position, fields): the running, failed, warning (an empty id is
        // null), long-log and offline-node tasks.
        let samples = [
            (
                0,
                json!({"node": "pve2", "status": "running", "exitstatus": null,
                       "endtime": null, "duration": null}),
            ),
            (
                7,
                json!({"node": "pve1", "status": "error",
                       "exitstatus": "start failed: QEMU exited with code 1",
                       "user": "root@pam", "tokenid": "mcp", "duration": 2}),
            ),
            (
                4,
                json!({"status": "warning", "exitstatus": "WARNINGS: 2", "id": null,
                       "tokenid": null, "duration": 22,
                       "starttime_iso": "2026-11-28T12:00:30Z"}),
            ),
            (
                9,
                json!({"upid": LONG_LOG_UPID, "status": "ok", "exitstatus": "OK",
                       "starttime": 1_795_827_600u64,
                       "starttime_iso": "2026-11-28T01:00:00Z", "duration": 1_243,
                       "endtime": 1_795_827_600u64 + 1_243}),
            ),
            (11, json!({"node": "pve3", "status": "ok"})),
        ];
        for (i, fields) in samples {
            assert_fields(&format!("tasks[{i}]"), &out["tasks"][i], fields);
        }
        let text = summary(&result);
        assert!(
            text.contains("1 running, 7 ok, 2 warning, 2 error"),
            "{text}"
        );

        // /cluster/tasks takes no parameters: every filter is ours.
        assert!(
            paths(&sim).iter().all(|p| p == "/api2/json/cluster/tasks?"),
            "{:?}",
            paths(&sim)
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_tasks_cluster_filters_run_client_side() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let ok = |args: Value| server.ok("pve_list_tasks", args);

        let since = |t: &Value| t["starttime"].as_u64().unwrap() >= 1_795_867_200;
        let filters: [Filter; 9] = [
            (
                json!({"vmid": 100}),
                3,
                &[
                    ("qmsnapshot", "100"),
                    ("vncproxy", "100"),
                    ("qmstart", "100"),
                ],
                |t| t["id"] == "100",
            ),
            (json!({"type": "vzdump"}), 3, &[], |t| t["type"] == "vzdump"),
            // errors: true means "did not end OK", as Proxmox's own filter.
            (json!({"errors": true}), 4, &[], |t| {
                t["status"] == "error" || t["status"] == "warning"
            }),
            (json!({"running": true}), 1, &[("vzdump", "103")], |t| {
                t["status"] == "running"
            }),
            (json!({"running": false}), 11, &[], |t| {
                t["status"] != "running"
            }),
            // T0 + 12 h, as epoch seconds and as ISO-8601.
            (json!({"since": 1_795_867_200u64}), 5, &[], since),
            (json!({"since": "2026-11-28T12:00:00Z"}), 5, &[], since),
            // Everything but pve3's old task.
            (json!({"since": "2026-11-28"}), 11, &[], |_| true),
            (
                json!({"type": "qmstart", "errors": true}),
                1,
                &[("qmstart", "104")],
                |t| t["type"] == "qmstart",
            ),
        ];
        for (args, total, expected, each) in filters {
            let out = ok(args.clone()).await;
            assert_eq!(out["total"], total, "{args}: {out}");
            if !expected.is_empty() {
                let got = kinds(&out);
                let got: Vec<(&str, &str)> =
                    got.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
                assert_eq!(got, expected, "{args}");
            }
            assert!(tasks(&out).iter().all(each), "{args}: {out}");
        }

        let errors = ok(json!({"errors": true})).await;
        let failed: Vec<_> = tasks(&errors)
            .iter()
            .filter(|t| t["status"] == "error")
            .map(|t| (t["type"].clone(), t["exitstatus"].clone()))
            .collect();
        assert_eq!(
            failed,
            [
                (
                    json!("qmshutdown"),
                    json!("VM 103 qmp command 'guest-ping' failed - got timeout")
                ),
                (
                    json!("qmstart"),
                    json!("start failed: QEMU exited with code 1")
                )
            ]
        );

        let running = ok(json!({"running": true})).await;
        assert_eq!(running["counts"]["running"], 1);

        let none = server.call("pve_list_tasks", json!({"vmid": 555})).await;
        let s = none.structured_content.clone().unwrap();
        assert_page(&s, 0, 0, 0, None);
        assert!(summary(&none).contains("Sys.Audit"), "{}", summary(&none));

        // Paging.
        let all = upids(&ok(json!({})).await);
        // (arguments, offset, returned, next_offset)
        let pages = [
            (json!({"limit": 5}), 0, 5, Some(5)),
            (json!({"limit": 5, "offset": 5}), 5, 5, Some(10)),
            (json!({"limit": 5, "offset": 10}), 10, 2, None),
        ];
        for (args, offset, returned, next) in pages {
            let page = ok(args).await;
            assert_page(&page, 12, returned, offset, next);
            let at = offset as usize;
            assert_eq!(upids(&page), all[at..at + returned as usize], "{page}");
        }

        assert!(
            paths(&sim).iter().all(|p| p == "/api2/json/cluster/tasks?"),
            "{:?}",
            paths(&sim)
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_tasks_per_node_passes_the_filters_to_proxmox() {
    within(async {
        let (sim, server) = started(Opts::default()).await;

        let pve1 = server.ok("pve_list_tasks", json!({"node": "pve1"})).await;
        assert_fields(
            "pve1",
            &pve1,
            json!({"cluster": "default", "source": "node",
                   "counts": {"running": 0, "ok": 5, "warning": 1, "error": 1}}),
        );
        assert_page(&pve1, 7, 7, 0, None);
        assert!(tasks(&pve1).iter().all(|t| t["node"] == "pve1"));
        assert_eq!(
            kinds(&pve1),
            [
                ("vzsnapshot".into(), "106".into()),
                ("aptupdate".into(), "".into()),
                ("qmsnapshot".into(), "100".into()),
                ("vncproxy".into(), "100".into()),
                ("qmstart".into(), "104".into()),
                ("qmstart".into(), "100".into()),
                ("vzdump".into(), "".into()),
            ]
        );
        assert_eq!(pve1["tasks"][4]["status"], "error");
        assert_eq!(pve1["tasks"][1]["status"], "warning");
        assert_eq!(
            paths(&sim),
            ["/api2/json/nodes/pve1/tasks?start=0&limit=50&source=all"]
        );

        sim.clear_requests();
        let filtered = server
            .ok(
                "pve_list_tasks",
                json!({"node": "pve1", "vmid": 100, "type": "qmstart", "since": 1_795_824_000u64}),
            )
            .await;
        assert_eq!(kinds(&filtered), [("qmstart".into(), "100".into())]);
        assert_eq!(filtered["tasks"][0]["tokenid"], "mcp");
        assert_eq!(
            paths(&sim),
            ["/api2/json/nodes/pve1/tasks?start=0&limit=50&since=1795824000&typefilter=qmstart&vmid=100&source=all"]
        );

        sim.clear_requests();
        let running = server
            .ok("pve_list_tasks", json!({"node": "pve2", "running": true}))
            .await;
        assert_eq!(kinds(&running), [("vzdump".into(), "103".into())]);
        assert_fields(
            "the running task",
            &running["tasks"][0],
            json!({"status": "running", "exitstatus": null}),
        );
        let finished = server
            .ok("pve_list_tasks", json!({"node": "pve2", "running": false}))
            .await;
        assert_eq!(finished["total"], 3);
        assert!(tasks(&finished).iter().all(|t| t["status"] != "running"));
        assert_eq!(
            paths(&sim),
            [
                "/api2/json/nodes/pve2/tasks?start=0&limit=50&source=active",
                "/api2/json/nodes/pve2/tasks?start=0&limit=50&source=archive"
            ]
        );

        sim.clear_requests();
        let page = server
            .ok(
                "pve_list_tasks",
                json!({"node": "pve1", "limit": 3, "offset": 3}),
            )
            .await;
        assert_page(&page, 7, 3, 3, Some(6));
        assert_eq!(upids(&page), upids(&pve1)[3..6]);
        let tail = server
            .ok(
                "pve_list_tasks",
                json!({"node": "pve1", "limit": 3, "offset": 6}),
            )
            .await;
        assert_page(&tail, 7, 1, 6, None);
        assert_eq!(tail["tasks"][0]["upid"], LONG_LOG_UPID);
        assert_eq!(
            paths(&sim),
            [
                "/api2/json/nodes/pve1/tasks?start=3&limit=3&source=all",
                "/api2/json/nodes/pve1/tasks?start=6&limit=3&source=all"
            ]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// `errors: true` means "finished and not OK" on both paths: the per-node
/// list passes Proxmox's own `errors=1` filter and asks for finished tasks
/// only, the cluster-wide list filters the same way itself.
#[tokio::test]
async fn list_tasks_errors_filter_is_the_same_per_node_and_cluster_wide() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let out = server
            .ok("pve_list_tasks", json!({"node": "pve1", "errors": true}))
            .await;
        assert_eq!(
            paths(&sim),
            ["/api2/json/nodes/pve1/tasks?start=0&limit=50&errors=1&source=archive"]
        );
        let mut per_node: Vec<String> = tasks(&out).iter().map(|t| t["upid"].to_string()).collect();
        assert!(
            tasks(&out)
                .iter()
                .all(|t| t["status"] == "error" || t["status"] == "warning"),
            "{out}"
        );
        assert_eq!(
            out["total"], 2,
            "qmstart 104 failed, aptupdate warned: {out}"
        );
        let cluster = server.ok("pve_list_tasks", json!({"errors": true})).await;
        let mut cluster_wide: Vec<String> = tasks(&cluster)
            .iter()
            .filter(|t| t["node"] == "pve1")
            .map(|t| t["upid"].to_string())
            .collect();
        per_node.sort();
        cluster_wide.sort();
        assert_eq!(per_node, cluster_wide);
        let contradictory = server
            .err("pve_list_tasks", json!({"errors": true, "running": true}))
            .await;
        assert!(contradictory.contains("errors"), "{contradictory}");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_tasks_errors_bad_input_offline_node_and_auditor() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_list_tasks";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({"limit": 0}), "limit"),
                (t, json!({"limit": 501}), "limit"),
                (t, json!({"offset": -1}), "offset"),
                (t, json!({"vmid": 99}), "vmid"),
                (t, json!({"vmid": "100"}), "vmid"),
                (t, json!({"errors": "true"}), "errors"),
                (t, json!({"running": 1}), "running"),
                (t, json!({"since": "yesterday"}), "since"),
                (t, json!({"since": -5}), "since"),
                (t, json!({"type": "a b"}), "type"),
                (t, json!({"type": ""}), "type"),
                (t, json!({"node": "pve 1"}), "node"),
                (t, json!({"node": "../etc"}), "node"),
                (t, json!({"bogus": 1}), "bogus"),
            ],
        )
        .await;

        assert_refusals(
            &server,
            t,
            &[
                (json!({"node": "pve3"}), &["595", "unreachable"]),
                (json!({"node": "pve9"}), &["pve9"]),
            ],
        )
        .await;
        server.ok(t, json!({})).await;
        assert_no_schema_violations(&sim);

        // The auditor has no Sys.Audit and started no task: it sees none,
        // and is told why.
        let (sim, server) = started(Opts::auditor()).await;
        for args in [json!({}), json!({"node": "pve1"})] {
            let result = server.call(t, args.clone()).await;
            assert_eq!(result.is_error, Some(false), "{args}: {}", summary(&result));
            let s = result.structured_content.clone().unwrap();
            assert_eq!(s["cluster"], "default");
            assert_page(&s, 0, 0, 0, None);
            let msg = summary(&result);
            assert!(
                msg.contains("Sys.Audit") && msg.contains("pve_check_permissions"),
                "{msg}"
            );
        }
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_tasks_is_bounded_on_the_large_cluster() {
    within(async {
        let sim = large_simulator().await;
        let server = Server::start(&sim, Opts::default()).await;

        let first = server.ok("pve_list_tasks", json!({})).await;
        assert_eq!(first["cluster"], "default");
        assert_page(&first, 5_012, 50, 0, Some(50));
        assert_eq!(first["limit"], 50);
        let second = server.ok("pve_list_tasks", json!({"offset": 50})).await;
        assert_page(&second, 5_012, 50, 50, Some(100));
        let a = upids(&first);
        let b = upids(&second);
        assert!(a.iter().all(|u| !b.contains(u)), "pages overlap");
        let last_a = first["tasks"][49]["starttime"].as_u64().unwrap();
        let first_b = second["tasks"][0]["starttime"].as_u64().unwrap();
        assert!(last_a >= first_b, "{last_a} < {first_b}");
        let big = server.ok("pve_list_tasks", json!({"limit": 500})).await;
        assert_page(&big, 5_012, 500, 0, Some(500));
        assert_eq!(upids(&big)[..100], [a, b].concat()[..]);

        sim.clear_requests();
        let node = server.ok("pve_list_tasks", json!({"node": "pve1"})).await;
        assert_eq!(node["source"], "node");
        assert_page(&node, 2_507, 50, 0, Some(50));
        assert!(tasks(&node).iter().all(|t| t["node"] == "pve1"));
        let node2 = server
            .ok("pve_list_tasks", json!({"node": "pve1", "offset": 50}))
            .await;
        assert_page(&node2, 2_507, 50, 50, Some(100));
        let n1 = upids(&node);
        assert!(upids(&node2).iter().all(|u| !n1.contains(u)));
        let end = server
            .ok("pve_list_tasks", json!({"node": "pve1", "offset": 2_500}))
            .await;
        assert_page(&end, 2_507, 7, 2_500, None);
        assert_eq!(
            paths(&sim),
            [
                "/api2/json/nodes/pve1/tasks?start=0&limit=50&source=all",
                "/api2/json/nodes/pve1/tasks?start=50&limit=50&source=all",
                "/api2/json/nodes/pve1/tasks?start=2500&limit=50&source=all"
            ]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

// ------------------------------------------------------------ task status

#[tokio::test]
async fn task_status_of_the_long_log_task_takes_its_node_from_the_upid() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let s = server
            .ok("pve_get_task_status", json!({"upid": LONG_LOG_UPID}))
            .await;
        assert_fields(
            "the long-log task",
            &s,
            json!({"cluster": "default", "upid": LONG_LOG_UPID, "node": "pve1",
                   "pid": 0x000A_3F1C, "pstart": 0x1449_7B40,
                   "starttime": 1_795_827_600u64, "starttime_iso": "2026-11-28T01:00:00Z",
                   "type": "vzdump", "id": null, "user": "root@pam", "tokenid": null,
                   "status": "stopped", "exitstatus": "OK", "outcome": "ok", "hint": null}),
        );
        let requests = sim.requests();
        assert_eq!(requests.len(), 1, "{requests:?}");
        assert!(
            requests[0].path.starts_with("/api2/json/nodes/pve1/tasks/")
                && requests[0].path.ends_with("/status"),
            "{}",
            requests[0].path
        );

        // Passing the node the UPID names is fine too.
        let same = server
            .ok(
                "pve_get_task_status",
                json!({"upid": LONG_LOG_UPID, "node": "pve1"}),
            )
            .await;
        assert_eq!(same["outcome"], "ok");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn task_status_of_failed_warning_and_running_tasks() {
    within(async {
        let (sim, server) = started(Opts::default()).await;

        let failed_upid = find_upid(&server, "qmstart", 104).await;
        let (result, failed) = server
            .ok_result("pve_get_task_status", json!({"upid": failed_upid}))
            .await;
        assert_fields(
            "the failed task",
            &failed,
            json!({"status": "stopped", "outcome": "error",
                   "exitstatus": "start failed: QEMU exited with code 1",
                   "id": "104", "user": "root@pam", "tokenid": "mcp"}),
        );
        assert!(
            failed["hint"]
                .as_str()
                .unwrap()
                .contains("pve_get_task_log"),
            "{failed}"
        );
        let said = summary(&result);
        assert!(
            said.contains("failed") && said.contains("QEMU exited with code 1"),
            "{said}"
        );

        let running_upid = find_upid(&server, "vzdump", 103).await;
        let running = server
            .ok("pve_get_task_status", json!({"upid": running_upid}))
            .await;
        assert_fields(
            "the running task",
            &running,
            json!({"node": "pve2", "status": "running", "outcome": "running",
                   "exitstatus": null}),
        );
        assert!(
            running["hint"].as_str().unwrap().contains("still running"),
            "{running}"
        );

        let all = server
            .ok("pve_list_tasks", json!({"type": "aptupdate"}))
            .await;
        let apt_upid = all["tasks"][0]["upid"].as_str().unwrap().to_owned();
        let apt = server
            .ok("pve_get_task_status", json!({"upid": apt_upid}))
            .await;
        assert_fields(
            "the warning task",
            &apt,
            json!({"outcome": "warning", "exitstatus": "WARNINGS: 2", "id": null}),
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn task_status_errors_are_explained() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_get_task_status";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({}), "upid"),
                (t, json!({"upid": 42}), "upid"),
                (t, json!({"upid": "not-a-upid"}), "upid"),
                (
                    t,
                    json!({"upid": LONG_LOG_UPID.trim_end_matches(':')}),
                    "upid",
                ),
                (
                    t,
                    json!({"upid": "UPID:pve1:XYZ:14497B40:6B0A2790:vzdump::root@pam:"}),
                    "upid",
                ),
                (
                    t,
                    json!({"upid": "UPID:pve1:000A3F1C:14497B40:6B0A2790:vzdump:root@pam:"}),
                    "upid",
                ),
                (
                    t,
                    json!({"upid": "UPID:../x:000A3F1C:14497B40:6B0A2790:vzdump::root@pam:"}),
                    "upid",
                ),
                (t, json!({"upid": LONG_LOG_UPID, "node": "pve2"}), "node"),
                (t, json!({"upid": LONG_LOG_UPID, "node": "pve 1"}), "node"),
                (t, json!({"upid": LONG_LOG_UPID, "extra": true}), "extra"),
            ],
        )
        .await;
        assert_refusals(
            &server,
            t,
            &[
                // A node the UPID contradicts: the UPID's node is named.
                (json!({"upid": LONG_LOG_UPID, "node": "pve2"}), &["pve1"]),
                (
                    json!({"upid": UNKNOWN_UPID}),
                    &["400", "rejected the request parameters", "no such task"],
                ),
                (
                    json!({"upid": "UPID:pve3:00001234:00ABCDEF:6B0A2790:qmstart:105:root@pam:"}),
                    &["595", "unreachable"],
                ),
            ],
        )
        .await;
        server.ok(t, json!({"upid": LONG_LOG_UPID})).await;
        assert_no_schema_violations(&sim);

        // Another user's task needs Sys.Audit on the node.
        let (sim, server) = started(Opts::auditor()).await;
        assert_refusals(
            &server,
            t,
            &[(
                json!({"upid": LONG_LOG_UPID}),
                &["Sys.Audit", "/nodes/pve1", "pveum"],
            )],
        )
        .await;
        assert_no_schema_violations(&sim);
    })
    .await;
}

// --------------------------------------------------------------- task log

#[tokio::test]
async fn task_log_tail_defaults_to_the_last_50_lines() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, log) = server
            .ok_result("pve_get_task_log", json!({"upid": LONG_LOG_UPID}))
            .await;
        assert_fields(
            "the tail",
            &log,
            json!({"cluster": "default", "upid": LONG_LOG_UPID, "node": "pve1",
                   "mode": "tail", "total_lines": 413, "first_line": 364,
                   "last_line": 413, "has_more_before": true, "has_more_after": false,
                   "task_result": "TASK OK"}),
        );
        let lines = log["lines"].as_array().unwrap();
        assert_eq!(lines.len(), 50);
        let numbers: Vec<u64> = lines.iter().map(|l| l["n"].as_u64().unwrap()).collect();
        assert_eq!(numbers, (364..=413).collect::<Vec<_>>());
        assert_eq!(lines[49]["text"], "TASK OK");
        assert_eq!(lines[48]["text"], "INFO: Backup job finished successfully");
        assert!(summary(&result).contains("TASK OK"), "{}", summary(&result));
        let p = paths(&sim);
        assert_eq!(p.len(), 2, "probe then tail: {p:?}");
        assert!(p[0].ends_with("/log?start=0&limit=50"), "{p:?}");
        assert!(p[1].ends_with("/log?start=363&limit=50"), "{p:?}");
        assert!(
            p.iter()
                .all(|x| x.starts_with("/api2/json/nodes/pve1/tasks/"))
        );

        let five = server
            .ok(
                "pve_get_task_log",
                json!({"upid": LONG_LOG_UPID, "tail": 5}),
            )
            .await;
        let n: Vec<u64> = five["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["n"].as_u64().unwrap())
            .collect();
        assert_eq!(n, [409, 410, 411, 412, 413]);
        assert_eq!(five["task_result"], "TASK OK");

        // A short log is read in one request, and its failure is the tail.
        let failed_upid = find_upid(&server, "qmstart", 104).await;
        sim.clear_requests();
        let short = server
            .ok("pve_get_task_log", json!({"upid": failed_upid}))
            .await;
        assert_eq!(short["lines"].as_array().unwrap().len(), 7);
        assert_fields(
            "the short log",
            &short,
            json!({"total_lines": 7, "first_line": 1, "has_more_before": false,
                   "has_more_after": false,
                   "task_result": "TASK ERROR: start failed: QEMU exited with code 1"}),
        );
        assert_eq!(sim.requests().len(), 1, "{:?}", paths(&sim));

        // A running task has no final line yet.
        let running_upid = find_upid(&server, "vzdump", 103).await;
        let running = server
            .call("pve_get_task_log", json!({"upid": running_upid}))
            .await;
        let r = running.structured_content.clone().unwrap();
        assert_fields(
            "the running task's log",
            &r,
            json!({"node": "pve2", "task_result": null, "has_more_after": false}),
        );
        assert!(
            summary(&running).contains("still running"),
            "{}",
            summary(&running)
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn task_log_pages_forward_with_start_and_limit() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        // (start, limit, lines returned, fields of the answer)
        let ranges = [
            (
                0,
                Some(10),
                10,
                json!({"cluster": "default", "mode": "range", "first_line": 1,
                       "last_line": 10, "total_lines": 413, "has_more_before": false,
                       "has_more_after": true, "task_result": null}),
            ),
            (
                10,
                Some(10),
                10,
                json!({"first_line": 11, "last_line": 20, "has_more_before": true}),
            ),
            // The default limit is 50.
            (100, None, 50, json!({"first_line": 101})),
            (
                410,
                Some(50),
                3,
                json!({"first_line": 411, "last_line": 413, "has_more_after": false,
                       "task_result": "TASK OK"}),
            ),
        ];
        for (start, limit, count, fields) in ranges {
            let mut args = json!({"upid": LONG_LOG_UPID, "start": start});
            if let Some(limit) = limit {
                args["limit"] = json!(limit);
            }
            let range = server.ok("pve_get_task_log", args.clone()).await;
            let lines = range["lines"].as_array().unwrap();
            assert_eq!(lines.len(), count, "{args}");
            assert_fields(&args.to_string(), &range, fields);
            if start == 0 {
                assert!(
                    lines[0]["text"]
                        .as_str()
                        .unwrap()
                        .starts_with("INFO: starting new backup job: vzdump 100 101 104 106 108"),
                    "{}",
                    lines[0]
                );
            }
        }

        assert_eq!(
            paths(&sim)
                .iter()
                .map(|p| p.rsplit_once("/log?").unwrap().1.to_owned())
                .collect::<Vec<_>>(),
            [
                "start=0&limit=10",
                "start=10&limit=10",
                "start=100&limit=50",
                "start=410&limit=50"
            ]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn task_log_errors_are_explained() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_get_task_log";
        let u = LONG_LOG_UPID;
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({}), "upid"),
                (t, json!({"upid": "UPID:pve1:"}), "upid"),
                (t, json!({"upid": u, "node": "pve2"}), "node"),
                (t, json!({"upid": u, "tail": 0}), "tail"),
                (t, json!({"upid": u, "tail": 501}), "tail"),
                (t, json!({"upid": u, "tail": 5, "start": 0}), "tail"),
                (t, json!({"upid": u, "tail": 5, "limit": 5}), "tail"),
                (t, json!({"upid": u, "limit": 5}), "limit"),
                (t, json!({"upid": u, "start": 0, "limit": 0}), "limit"),
                (t, json!({"upid": u, "start": 0, "limit": 501}), "limit"),
                (t, json!({"upid": u, "start": -1}), "start"),
            ],
        )
        .await;

        assert_refusals(
            &server,
            t,
            &[(json!({"upid": UNKNOWN_UPID}), &["400", "no such task"])],
        )
        .await;
        server.ok(t, json!({"upid": u, "tail": 1})).await;
        assert_no_schema_violations(&sim);

        let (sim, server) = started(Opts::auditor()).await;
        assert_refusals(
            &server,
            t,
            &[(json!({"upid": u}), &["Sys.Audit", "/nodes/pve1"])],
        )
        .await;
        assert_no_schema_violations(&sim);
    })
    .await;
}

// --------------------------------------------------------------------- HA

#[tokio::test]
async fn list_ha_shows_master_lrms_and_resources() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let (result, ha) = server.ok_result("pve_list_ha", json!({})).await;
        assert_fields(
            "HA",
            &ha,
            json!({"cluster": "default", "counts": [{"state": "started", "count": 3}]}),
        );
        assert_fields(
            "quorum",
            &ha["quorum"],
            json!({"ok": true, "quorate": true, "status": "OK"}),
        );
        assert_eq!(ha["master"]["node"], "pve1");
        assert!(
            ha["master"]["status"]
                .as_str()
                .unwrap()
                .starts_with("pve1 (active"),
            "{ha}"
        );
        assert!(ha["master"]["timestamp"].as_u64().is_some());

        let lrm = ha["lrm"].as_array().unwrap();
        let lrm_nodes: Vec<&str> = lrm.iter().map(|l| l["node"].as_str().unwrap()).collect();
        assert_eq!(lrm_nodes, ["pve1", "pve2", "pve3"]);
        for (i, state) in ["active", "active", "old timestamp - dead?"]
            .into_iter()
            .enumerate()
        {
            assert_eq!(lrm[i]["state"], state, "lrm[{i}]");
        }
        assert!(
            lrm[2]["status"]
                .as_str()
                .unwrap()
                .contains("old timestamp - dead?")
        );
        let dead = lrm[2]["timestamp"].as_u64().unwrap();
        let alive = lrm[0]["timestamp"].as_u64().unwrap();
        assert!(alive - dead > 86_400, "pve3's LRM is a day old");

        let sids: Vec<&str> = ha["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["sid"].as_str().unwrap())
            .collect();
        assert_eq!(sids, ["ct:106", "vm:100", "vm:103"]);
        let resources = [
            json!({"type": "ct", "vmid": 106, "node": "pve1", "group": null}),
            json!({"type": "vm", "vmid": 100, "state": "started", "crm_state": "started",
                   "node": "pve1", "group": "prod-ha", "max_restart": 1, "max_relocate": 1,
                   "comment": "customer-facing web tier"}),
            json!({"node": "pve2", "group": "prod-ha", "comment": null}),
        ];
        for (i, fields) in resources.into_iter().enumerate() {
            assert_fields(&format!("resources[{i}]"), &ha["resources"][i], fields);
        }
        assert_page(&ha, 3, 3, 0, None);
        assert_eq!(
            summary(&result),
            "HA quorum OK, master pve1; 3 resources (3 started)."
        );
        let mut p = paths(&sim);
        p.sort();
        assert_eq!(
            p,
            [
                "/api2/json/cluster/ha/resources?",
                "/api2/json/cluster/ha/status/current?"
            ]
        );

        let page = server
            .ok("pve_list_ha", json!({"limit": 1, "offset": 1}))
            .await;
        assert_page(&page, 3, 1, 1, Some(2));
        assert_eq!(page["resources"][0]["sid"], "vm:100");
        assert_eq!(page["counts"], json!([{"state": "started", "count": 3}]));
        assert_eq!(page["lrm"].as_array().unwrap().len(), 3);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn list_ha_errors_bad_paging_and_missing_sys_audit() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_list_ha";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({"limit": 0}), "limit"),
                (t, json!({"limit": 1001}), "limit"),
                (t, json!({"offset": "1"}), "offset"),
                (t, json!({"offset": -1}), "offset"),
                (t, json!({"node": "pve1"}), "node"),
            ],
        )
        .await;
        server.ok(t, json!({"limit": 1000})).await;

        let (sim, server) = started(Opts::auditor()).await;
        assert_refusals(
            &server,
            t,
            &[(
                json!({}),
                &[
                    "403",
                    "Sys.Audit",
                    "on /",
                    "pveum acl modify / ",
                    "PVEAuditor",
                ],
            )],
        )
        .await;
        assert_no_schema_violations(&sim);
    })
    .await;
}

// ------------------------------------------------------------ permissions

#[tokio::test]
async fn check_permissions_for_the_admin_token() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let all = server.ok("pve_check_permissions", json!({})).await;
        assert_fields(
            "all paths",
            &all,
            json!({"cluster": "default", "path": null, "has": null, "missing": [],
                   "grant_hint": null}),
        );
        let listed: Vec<&str> = all["paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            listed,
            [
                "/",
                "/access",
                "/access/groups",
                "/mapping",
                "/nodes",
                "/pool",
                "/sdn",
                "/storage",
                "/vms"
            ]
        );
        assert_page(&all, 9, 9, 0, None);
        let root: Vec<&str> = all["paths"][0]["privileges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        for p in [
            "Sys.Audit",
            "VM.Audit",
            "Datastore.Audit",
            "VM.GuestAgent.Audit",
        ] {
            assert!(root.contains(&p), "{p} in {root:?}");
        }
        let mut sorted = root.clone();
        sorted.sort();
        assert_eq!(root, sorted, "privileges are sorted");
        assert_eq!(paths(&sim), ["/api2/json/access/permissions?"]);

        sim.clear_requests();
        let at = server
            .ok("pve_check_permissions", json!({"path": "/vms/100"}))
            .await;
        assert_eq!(at["path"], "/vms/100");
        // Every privilege a tool declares is checked: the admin token has
        // them all but PVE 8's name for the guest agent's.
        let has = at["has"].as_object().unwrap();
        assert_eq!(has.len(), declared_privileges().len(), "{has:?}");
        for (name, granted) in has {
            assert_eq!(granted, name != "VM.Monitor", "{name}");
        }
        assert_eq!(
            at["missing"],
            json!([]),
            "VM.GuestAgent.Audit covers VM.Monitor"
        );
        assert_eq!(at["grant_hint"], Value::Null);
        assert_eq!(at["paths"][0]["path"], "/vms/100");
        assert_eq!(
            paths(&sim),
            ["/api2/json/access/permissions?path=%2Fvms%2F100"]
        );

        let page = server
            .ok("pve_check_permissions", json!({"limit": 2, "offset": 2}))
            .await;
        assert_page(&page, 9, 2, 2, Some(4));
        assert_eq!(page["paths"][0]["path"], "/access/groups");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn check_permissions_for_the_auditor_names_what_is_missing() {
    within(async {
        let (sim, server) = started(Opts::auditor()).await;
        let all = server.ok("pve_check_permissions", json!({})).await;
        assert_eq!(all["cluster"], "default");
        assert_eq!(
            all["paths"],
            json!([
                {"path": "/vms/100", "privileges": ["VM.Audit"]},
                {"path": "/vms/101", "privileges": ["VM.Audit"]},
                {"path": "/vms/200", "privileges": ["VM.Audit"]},
            ])
        );
        assert_page(&all, 3, 3, 0, None);

        let (result, at) = server
            .ok_result("pve_check_permissions", json!({"path": "/vms/100"}))
            .await;
        assert_fields(
            "/vms/100",
            &at,
            json!({"cluster": "default", "path": "/vms/100"}),
        );
        // The auditor has VM.Audit alone: every other privilege a tool
        // names first is missing, reads first as the tools declare them;
        // one only ever named as another's alternative (PVE 8's
        // VM.Monitor, VM.Config.CDROM beside VM.Config.Disk) is not, as
        // granting the first one does.
        let missing: Vec<&str> = at["missing"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let firsts = first_privileges();
        let expected: Vec<&str> = declared_privileges()
            .into_iter()
            .filter(|p| *p != "VM.Audit" && firsts.contains(p))
            .collect();
        assert!(!firsts.contains(&"VM.Monitor"), "{firsts:?}");
        assert_eq!(missing, expected);
        assert!(missing.contains(&"VM.GuestAgent.Audit"), "{missing:?}");
        assert!(missing.starts_with(&["Sys.Audit", "Datastore.Audit"]));
        assert_fields(
            "has on /vms/100",
            &at["has"],
            json!({"VM.Audit": true, "Sys.Audit": false, "Datastore.Audit": false}),
        );
        let hint = at["grant_hint"].as_str().expect("grant_hint");
        assert!(
            hint.contains("pveum acl modify /vms/100") && hint.contains("PVEAuditor"),
            "{hint}"
        );
        // The write tools' privileges come with a role of one's own.
        assert!(
            hint.contains("VM.PowerMgmt") && hint.contains("pveum role add PVEMCPTools"),
            "{hint}"
        );
        let said = summary(&result);
        assert!(
            said.contains("VM.Audit") && said.contains("lacks Sys.Audit"),
            "{said}"
        );

        let root = server
            .call("pve_check_permissions", json!({"path": "/"}))
            .await;
        let r = root.structured_content.clone().unwrap();
        assert_fields(
            "has on /",
            &r["has"],
            json!({"Sys.Audit": false, "VM.Audit": false}),
        );
        // Nothing on `/`: every privilege some tool names first is missing,
        // and none that only stands in for another.
        let all_firsts = declared_privileges()
            .into_iter()
            .filter(|p| firsts.contains(p))
            .count();
        assert_eq!(r["missing"].as_array().unwrap().len(), all_firsts);
        assert!(
            !r["missing"]
                .as_array()
                .unwrap()
                .contains(&json!("VM.Monitor"))
        );
        assert!(
            r["grant_hint"]
                .as_str()
                .unwrap()
                .contains("pveum acl modify / ")
        );
        assert!(
            summary(&root).contains("no privileges on /"),
            "{}",
            summary(&root)
        );

        let other = server
            .ok("pve_check_permissions", json!({"path": "/vms/102"}))
            .await;
        assert_eq!(other["has"]["VM.Audit"], false);
        assert!(other["grant_hint"].is_string());
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn check_permissions_rejects_bad_paths_before_any_request() {
    within(async {
        let (sim, server) = started(Opts::default()).await;
        let t = "pve_check_permissions";
        assert_all_invalid(
            &sim,
            &server,
            &[
                (t, json!({"path": "vms/100"}), "path"),
                (t, json!({"path": ""}), "path"),
                (t, json!({"path": "/vms/../access"}), "path"),
                (t, json!({"path": "/vms//100"}), "path"),
                (t, json!({"path": "/vms/100/"}), "path"),
                (t, json!({"path": "/vms/100 x"}), "path"),
                (t, json!({"path": "/vms/100?x=1"}), "path"),
                (t, json!({"path": 100}), "path"),
                (t, json!({"path": format!("/{}", "a".repeat(300))}), "path"),
                (t, json!({"limit": 0}), "limit"),
                (t, json!({"limit": 1001}), "limit"),
            ],
        )
        .await;
        let msg = server.err(t, json!({"path": "vms/100"})).await;
        assert!(msg.contains("/vms/100"), "an example is shown: {msg}");
        server.ok(t, json!({"path": "/"})).await;
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// The privileges some tool names first of its `any_of`: what it asks for
/// on PVE 9, the rest standing in for it.
fn first_privileges() -> Vec<&'static str> {
    crate::common::described_tools()
        .iter()
        .flat_map(|tool| tool["privileges"].as_array().unwrap())
        .filter_map(|privilege| privilege["any_of"][0].as_str())
        .collect()
}

/// Every privilege the tools declare, each once, in the order the tools
/// first name it (`pve-mcp tools --json`), counting a privilege that only
/// ever stands in for another (PVE 8's `VM.Monitor` for PVE 9's
/// `VM.GuestAgent.Audit`) too: what `pve_check_permissions` checks.
fn declared_privileges() -> Vec<&'static str> {
    let mut names = Vec::new();
    for tool in crate::common::described_tools() {
        for privilege in tool["privileges"].as_array().unwrap() {
            for name in privilege["any_of"].as_array().unwrap() {
                let name = name.as_str().unwrap();
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    names
}
