//! Storage replication over real HTTPS: configuration, per-node state,
//! logs and `schedule_now`.

use serde_json::{Value, json};

use super::calls::*;
use super::*;
use crate::testing::wait_until;

fn ids(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn jobs_and_their_state() {
    let sim = sim().await;
    let jobs = data(&sim, "/cluster/replication").await;
    assert_eq!(ids(&jobs), ["101-0", "106-0", "107-0"]);
    assert_eq!(
        jobs[0],
        json!({"type": "local", "id": "101-0", "guest": 101, "jobnum": 0, "target": "pve2",
               "schedule": "*/15", "rate": 50, "comment": "database replica for failover",
               "source": "pve1"})
    );
    // The default schedule is not written.
    assert!(jobs[1].get("schedule").is_none());
    let one = data(&sim, "/cluster/replication/107-0").await;
    assert_eq!(one["target"], "pve1");
    assert_eq!(one["digest"].as_str().unwrap().len(), 40);

    // pve1 runs 101-0 and the failing 106-0; pve2 runs 107-0.
    let now = crate::util::now_secs();
    let pve1 = data(&sim, "/nodes/pve1/replication").await;
    assert_eq!(ids(&pve1), ["101-0", "106-0"]);
    let ok = &pve1[0];
    assert_eq!(
        (&ok["fail_count"], &ok["vmtype"]),
        (&json!(0), &json!("qemu"))
    );
    let last_sync = ok["last_sync"].as_u64().unwrap();
    assert!(now - last_sync < 16 * 60, "synced on schedule: {ok}");
    assert_eq!(last_sync % 900, 3);
    // The next sync is the schedule's next point after the last try (a run
    // may be going on this very second).
    let last_try = ok["last_try"].as_u64().unwrap();
    assert_eq!(ok["next_sync"].as_u64().unwrap(), last_try - 3 + 900);
    assert!(ok.get("error").is_none());
    let bad = &pve1[1];
    assert_eq!(bad["fail_count"], 3);
    // The target is offline: job_status schedules no retry.
    assert_eq!(bad["next_sync"], 0);
    assert_eq!(bad["vmtype"], "lxc");
    let error = bad["error"].as_str().unwrap();
    assert!(
        error.starts_with(
            "command '/usr/bin/ssh -e none -o 'BatchMode=yes' -o 'HostKeyAlias=pve3' "
        ) && error.ends_with("' failed: exit code 255"),
        "{error}"
    );
    assert!(
        error.contains("pvesr prepare-local-job 106-0 --scan local-lvm local-lvm:vm-106-disk-0")
    );
    assert!(bad["last_try"].as_u64() > bad["last_sync"].as_u64());
    let pve2 = data(&sim, "/nodes/pve2/replication?guest=107").await;
    assert_eq!(ids(&pve2), ["107-0"]);
    assert_eq!(
        data(&sim, "/nodes/pve2/replication?guest=101").await,
        json!([])
    );

    // One job's status; only where it runs.
    let st = data(&sim, "/nodes/pve1/replication/106-0/status").await;
    assert_eq!(st["error"], bad["error"]);
    let r = get(
        &sim,
        "/api2/json/nodes/pve2/replication/106-0/status",
        ADMIN,
    )
    .await;
    assert_eq!(
        (r.status, message(&r)),
        (500, "no such replication job '106-0'\n".into())
    );
    assert_eq!(
        data(&sim, "/nodes/pve3/replication/106-0").await,
        json!([{"name": "schedule_now"}, {"name": "log"}, {"name": "status"}])
    );

    // Logs: the last run; elsewhere the file does not exist.
    let r = get(&sim, "/api2/json/nodes/pve1/replication/106-0/log", ADMIN).await;
    let body = r.json();
    assert_eq!(body["total"], 5);
    let last = body["data"][4]["t"].as_str().unwrap();
    assert!(last.starts_with("2026-11-28 15:19:09 106-0: end replication job with error: command"));
    assert_eq!(
        body["data"][1]["t"],
        "2026-11-28 15:17:02 106-0: guest => CT 106, running => 1"
    );
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/replication/101-0/log?limit=0",
        ADMIN,
    )
    .await;
    let log: Vec<String> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["t"].as_str().unwrap().to_string())
        .collect();
    assert!(log[0].ends_with("101-0: start replication job"));
    assert!(log[2].ends_with("volumes => local-lvm:vm-101-disk-0,local-lvm:vm-101-disk-1"));
    assert!(
        log.iter()
            .any(|l| l.ends_with("using secure transmission, rate limit: 50 MByte/s"))
    );
    assert!(log.last().unwrap().ends_with("101-0: end replication job"));
    let r = get(&sim, "/api2/json/nodes/pve2/replication/101-0/log", ADMIN).await;
    assert_eq!(
        r.json(),
        json!({"data": [{"n": 1, "t": "unable to open file - No such file or directory"}],
               "total": 1})
    );

    // Permissions: the auditor sees guest 101 only.
    let r = as_auditor(&sim, "GET", "/cluster/replication", "").await;
    assert_eq!(ids(&r.data()), ["101-0"]);
    let r = as_auditor(&sim, "GET", "/nodes/pve1/replication", "").await;
    assert_eq!(ids(&r.data()), ["101-0"]);
    let r = as_auditor(&sim, "GET", "/cluster/replication/106-0", "").await;
    assert_eq!(
        message(&r),
        "Permission check failed (/vms/106, VM.Audit)\n"
    );
    let r = as_auditor(&sim, "GET", "/nodes/pve1/replication/106-0/log", "").await;
    assert_eq!(
        (r.status, message(&r)),
        (403, "Permission check failed\n".into())
    );

    // Ids: unknown, reserved, malformed.
    let r = get(&sim, "/api2/json/cluster/replication/555-0", ADMIN).await;
    assert_eq!(message(&r), "no such replication job '555-0'\n");
    let r = get(&sim, "/api2/json/cluster/replication/42-0", ADMIN).await;
    assert_eq!(
        r.json()["errors"]["id"],
        "invalid format - invalid replication job id '42-0' (guest IDs < 100 are reserved)\n"
    );
    let r = get(&sim, "/api2/json/nodes/pve1/replication/abc/status", ADMIN).await;
    assert_eq!(
        r.json()["errors"]["id"],
        "invalid format - invalid replication job id 'abc'\n"
    );
    assert_eq!(
        get(&sim, "/api2/json/nodes/pve3/replication", ADMIN)
            .await
            .status,
        595
    );
    only_violations(
        &sim,
        &[
            "GET /cluster/replication/42-0: id:",
            "GET /nodes/pve1/replication/abc/status: id:",
        ],
    );
}

#[tokio::test]
async fn schedule_now_runs_the_job() {
    let sim = sim().await;
    sim.set_task_duration_for("pvesr", Duration::from_millis(400));
    let before = data(&sim, "/nodes/pve2/replication/107-0/status").await;
    let r = post(&sim, "/nodes/pve2/replication/107-0/schedule_now", "").await;
    assert_eq!(r.json(), json!({"data": ""}));
    // PVE zeroes last_try: the next sync is the schedule's first point.
    let st = data(&sim, "/nodes/pve2/replication/107-0/status").await;
    assert_eq!(
        (&st["last_try"], &st["next_sync"]),
        (&json!(0), &json!(1_800))
    );
    assert_eq!(st["last_sync"], before["last_sync"]);
    // The scheduler picks it up, runs it, and the job is in sync again.
    let done = wait_until("the replication run", Duration::from_secs(20), async || {
        let st = data(&sim, "/nodes/pve2/replication/107-0/status").await;
        (st["last_sync"].as_u64() > before["last_sync"].as_u64() && st.get("pid").is_none())
            .then_some(st)
    })
    .await;
    assert_eq!(done["last_try"], done["last_sync"]);
    assert_eq!(done["fail_count"], 0);
    let log = get(&sim, "/api2/json/nodes/pve2/replication/107-0/log", ADMIN).await;
    let first = log.json()["data"][1]["t"].as_str().unwrap().to_string();
    assert!(
        first.ends_with("107-0: guest => CT 107, running => 1"),
        "{first}"
    );

    // The failing job's target is away: last_try is zeroed, nothing runs.
    let r = post(&sim, "/nodes/pve1/replication/106-0/schedule_now", "").await;
    assert_eq!(r.status, 200);
    let st = data(&sim, "/nodes/pve1/replication/106-0/status").await;
    assert_eq!(
        (&st["last_try"], &st["next_sync"], &st["fail_count"]),
        (&json!(0), &json!(0), &json!(3))
    );
    // A job whose guest is on another node: that node's state has no
    // entry for it, so PVE changes nothing (and says nothing).
    let before = data(&sim, "/nodes/pve1/replication/101-0/status").await;
    let r = post(&sim, "/nodes/pve2/replication/101-0/schedule_now", "").await;
    assert_eq!(r.json(), json!({"data": ""}));
    let after = data(&sim, "/nodes/pve1/replication/101-0/status").await;
    assert_eq!(after["last_try"], before["last_try"]);

    // Refusals: VM.Replicate first, then the job must exist.
    let r = post(&sim, "/nodes/pve1/replication/555-0/schedule_now", "").await;
    assert_eq!(
        (r.status, message(&r)),
        (500, "no such replication job '555-0'\n".into())
    );
    let r = as_auditor(
        &sim,
        "POST",
        "/nodes/pve1/replication/101-0/schedule_now",
        "",
    )
    .await;
    assert_eq!(
        message(&r),
        "Permission check failed (/vms/101, VM.Replicate)\n"
    );
    let r = as_auditor(
        &sim,
        "POST",
        "/nodes/pve1/replication/555-0/schedule_now",
        "",
    )
    .await;
    assert_eq!(
        message(&r),
        "Permission check failed (/vms/555, VM.Replicate)\n"
    );
    let r = post(
        &sim,
        "/nodes/pve1/replication/101-0/schedule_now",
        "force=1",
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        post(&sim, "/nodes/pve3/replication/101-0/schedule_now", "")
            .await
            .status,
        595
    );
    only_violations(
        &sim,
        &["POST /nodes/pve1/replication/101-0/schedule_now: force:"],
    );

    // The lab is a standalone node: no jobs.
    let lab = Simulator::start(SimConfig {
        cluster: ClusterFlavor::Secondary,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let auth = format!("PVEAPIToken={LAB_TOKEN_ID}={LAB_TOKEN_SECRET}");
    let r = get(&lab, "/api2/json/cluster/replication", &auth).await;
    assert_eq!(r.data(), json!([]));
}
