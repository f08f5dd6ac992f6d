//! A node's services, package updates and logs over real HTTPS.

use serde_json::{Value, json};

use super::calls::*;
use super::*;

fn lab_auth() -> String {
    format!("PVEAPIToken={LAB_TOKEN_ID}={LAB_TOKEN_SECRET}")
}

async fn lab() -> Simulator {
    Simulator::start(SimConfig {
        cluster: ClusterFlavor::Secondary,
        schema_path: schema_path(),
        ..SimConfig::default()
    })
    .await
    .expect("start")
}

fn by_service<'a>(list: &'a Value, id: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|s| s["service"] == id)
        .unwrap_or_else(|| panic!("no {id} in {list}"))
}

#[tokio::test]
async fn services_and_their_states() {
    let sim = sim().await;
    let list = data(&sim, "/nodes/pve1/services").await;
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["service"].as_str().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "sorted by id");
    assert_eq!(ids.len(), 23);
    assert_eq!(
        by_service(&list, "pveproxy"),
        &json!({"service": "pveproxy", "name": "pveproxy", "desc": "PVE API Proxy Server",
                "state": "running", "active-state": "active", "unit-state": "enabled"})
    );
    assert_eq!(
        by_service(&list, "systemd-timesyncd"),
        &json!({"service": "systemd-timesyncd", "name": "systemd-timesyncd",
                "desc": "systemd-timesyncd.service", "state": "dead",
                "active-state": "inactive", "unit-state": "not-found"})
    );
    assert_eq!(by_service(&list, "postfix")["state"], "exited");
    assert_eq!(by_service(&list, "chrony")["state"], "running");

    // pve2's chrony failed to start again.
    let chrony = data(&sim, "/nodes/pve2/services/chrony/state").await;
    assert_eq!(
        chrony,
        json!({"service": "chrony", "name": "chrony", "desc": "chrony, an NTP client/server",
               "state": "failed", "active-state": "failed", "unit-state": "enabled"})
    );
    let pve2 = data(&sim, "/nodes/pve2/services").await;
    let failed: Vec<&str> = pve2
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["active-state"] == "failed")
        .map(|s| s["service"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["chrony"]);
    // The command index is answered without asking the node.
    assert_eq!(
        data(&sim, "/nodes/pve3/services/pveproxy").await,
        json!([{"subdir": "state"}, {"subdir": "start"}, {"subdir": "stop"},
               {"subdir": "restart"}, {"subdir": "reload"}])
    );
    assert_eq!(
        get(&sim, "/api2/json/nodes/pve3/services", ADMIN)
            .await
            .status,
        595
    );
    // Sys.Audit on the node; the service must be one PVE knows.
    let r = as_auditor(&sim, "GET", "/nodes/pve1/services", "").await;
    assert_eq!(
        (r.status, message(&r)),
        (
            403,
            "Permission check failed (/nodes/pve1, Sys.Audit)\n".into()
        )
    );
    let r = get(&sim, "/api2/json/nodes/pve1/services/nginx/state", ADMIN).await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()["errors"]["service"].as_str().unwrap().starts_with(
            "value 'nginx' does not have a value in the enumeration 'chrony, corosync,"
        )
    );
    only_violations(&sim, &["GET /nodes/pve1/services/nginx/state: service:"]);

    // A standalone node never started corosync.
    let lab = lab().await;
    let r = get(&lab, "/api2/json/nodes/lab1/services", &lab_auth()).await;
    let corosync = by_service(&r.data(), "corosync").clone();
    assert_eq!(
        (&corosync["state"], &corosync["active-state"]),
        (&json!("dead"), &json!("inactive"))
    );
    no_violations(&lab);
}

#[tokio::test]
async fn package_updates_per_node() {
    let sim = sim().await;
    let updates = data(&sim, "/nodes/pve1/apt/update").await;
    let names: Vec<&str> = updates
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["Package"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "libpve-common-perl",
            "libssl3t64",
            "openssl",
            "proxmox-kernel-6.17",
            "proxmox-kernel-6.17.4-1-pve-signed",
            "pve-manager"
        ]
    );
    let manager = &updates[5];
    assert_eq!(
        manager,
        &json!({"Package": "pve-manager", "Title": "Proxmox Virtual Environment Management Tools",
                "Description": "This package contains the Proxmox Virtual Environment management tools.",
                "Origin": "Proxmox", "Section": "admin", "Arch": "all", "Priority": "optional",
                "OldVersion": "9.1.5", "Version": "9.1.6", "NotifyStatus": "9.1.6"})
    );
    // A package the upgrade pulls in has no installed version.
    assert!(updates[4].get("OldVersion").is_none());
    assert_eq!(updates[2]["Origin"], "Debian");
    assert_eq!(data(&sim, "/nodes/pve2/apt/update").await, json!([]));

    // Versions: proxmox-ve with the running kernel, pve-manager with the
    // running API, the candidate where an upgrade waits.
    let v = data(&sim, "/nodes/pve1/apt/versions").await;
    assert_eq!(v[0]["Package"], "proxmox-ve");
    assert_eq!(v[0]["RunningKernel"], "6.17.2-1-pve");
    assert_eq!(
        (&v[1]["Package"], &v[1]["ManagerVersion"], &v[1]["Version"]),
        (
            &json!("pve-manager"),
            &json!("9.1.5/8f3a5c1e7b2d9046"),
            &json!("9.1.6")
        )
    );
    assert!(
        v[2]["Package"]
            .as_str()
            .unwrap()
            .starts_with("proxmox-kernel-6.17")
    );

    // apt/update needs Sys.Modify, versions Sys.Audit.
    let r = as_auditor(&sim, "GET", "/nodes/pve1/apt/update", "").await;
    assert_eq!(
        message(&r),
        "Permission check failed (/nodes/pve1, Sys.Modify)\n"
    );
    let r = as_auditor(&sim, "GET", "/nodes/pve1/apt/versions", "").await;
    assert_eq!(r.status, 403);
    let r = get(&sim, "/api2/json/nodes/pve1/apt/update?notify=1", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["notify"],
        "property is not defined in schema and the schema does not allow additional properties"
    );
    only_violations(&sim, &["GET /nodes/pve1/apt/update: notify:"]);

    // The PVE 8 lab node.
    let lab = lab().await;
    let r = get(&lab, "/api2/json/nodes/lab1/apt/update", &lab_auth()).await;
    assert_eq!(r.data()[0]["Package"], "tzdata");
    let r = get(&lab, "/api2/json/nodes/lab1/apt/versions", &lab_auth()).await;
    let v = r.data();
    assert_eq!(v[0]["RunningKernel"], "6.8.12-16-pve");
    assert_eq!(v[1]["ManagerVersion"], "8.4.14/b502d23c55afcba1");
    no_violations(&lab);
}

fn lines(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn journal_with_cursors() {
    let sim = sim().await;
    let all = lines(&data(&sim, "/nodes/pve2/journal").await);
    assert!(all.len() > 300, "{}", all.len());
    let (first, last) = (&all[0], &all[all.len() - 1]);
    assert!(first.starts_with("s=") && first.contains(";i=") && first.contains(";t="));
    assert!(last.starts_with("s=") && last != first);
    assert!(all[1].starts_with("Nov 27 00:"), "{}", all[1]);
    let body = all[1..all.len() - 1].join("\n");
    for needle in [
        "pve2 chronyd[731044]: Fatal error : Invalid command at line 4 in file /etc/chrony/chrony.conf",
        "systemd[1]: Failed to start chrony.service - chrony, an NTP client/server.",
        "corosync[1489]:   [KNET  ] link: host: 3 link: 0 is down",
        "corosync[1489]:   [KNET  ] rx: host: 3 link: 0 is up",
        "[QUORUM] Members[2]: 1 2",
        "ERROR: Backup of VM 107 failed - command 'mount -o ro,noload",
        "smartd[964]: Device: /dev/sdb [SAT], FAILED SMART self-check. BACK UP DATA NOW!",
        "pveproxy[1853]: received signal HUP",
        "sshd-session[",
        "end task UPID:pve2:",
        "VM 103 qmp command 'guest-ping' failed - got timeout",
    ] {
        assert!(body.contains(needle), "no {needle:?} in pve2's journal");
    }

    // The last entries, then following from the last cursor.
    let tail = lines(&data(&sim, "/nodes/pve2/journal?lastentries=5").await);
    assert_eq!(tail.len(), 7);
    assert_eq!(tail[1..6], all[all.len() - 6..all.len() - 1]);
    assert_eq!(&tail[6], last);
    let q = form_escape(last);
    let more = lines(&data(&sim, &format!("/nodes/pve2/journal?startcursor={q}")).await);
    assert_eq!(more, [last.clone(), last.clone()]);
    // A time window (since inclusive, until exclusive).
    let since = crate::seed::T0 + 15 * 3_600 + 22 * 60;
    let until = since + 120;
    let w = lines(
        &data(
            &sim,
            &format!("/nodes/pve1/journal?since={since}&until={until}"),
        )
        .await,
    );
    assert!(w.len() > 10, "{w:?}");
    assert!(
        w[1..w.len() - 1]
            .iter()
            .all(|l| l.starts_with("Nov 28 15:22:") || l.starts_with("Nov 28 15:23:"))
    );
    assert!(w.iter().any(|l| l.contains("Sync left[1]: 3")));
    assert!(
        w.iter()
            .any(|l| l.contains("node 'pve3': state changed from 'online' => 'unknown'"))
    );
    // Options mini-journalreader refuses: it prints nothing at all.
    let r = get(
        &sim,
        &format!("/api2/json/nodes/pve1/journal?lastentries=5&since={since}"),
        ADMIN,
    )
    .await;
    assert_eq!((r.status, r.body.len()), (200, 0));
    let r = get(&sim, "/api2/json/nodes/pve1/journal?startcursor=x", ADMIN).await;
    assert_eq!((r.status, r.body.len()), (200, 0));

    // Sys.Syslog; integers.
    let r = as_auditor(&sim, "GET", "/nodes/pve1/journal", "").await;
    assert_eq!(
        message(&r),
        "Permission check failed (/nodes/pve1, Sys.Syslog)\n"
    );
    let r = get(&sim, "/api2/json/nodes/pve1/journal?since=yesterday", ADMIN).await;
    assert_eq!(
        r.json()["errors"]["since"],
        "type check ('integer') failed - got 'yesterday'"
    );
    assert_eq!(
        get(&sim, "/api2/json/nodes/pve3/journal", ADMIN)
            .await
            .status,
        595
    );
    only_violations(&sim, &["GET /nodes/pve1/journal: since:"]);
}

#[tokio::test]
async fn syslog_pages_and_filters() {
    let sim = sim().await;
    let r = get(&sim, "/api2/json/nodes/pve1/syslog", ADMIN).await;
    let body = r.json();
    let total = body["total"].as_u64().unwrap();
    let page = body["data"].as_array().unwrap();
    assert_eq!(page.len(), 50);
    assert!(total > 300, "{total}");
    assert_eq!(page[0]["n"], 1);
    assert!(page[0]["t"].as_str().unwrap().starts_with("Nov 27 00:"));

    // One unit, a window, a page.
    let r = get(
        &sim,
        &format!(
            "/api2/json/nodes/pve1/syslog?service=pvescheduler&since={}&until={}&start=1&limit=2",
            form_escape("2026-11-28 15:00"),
            form_escape("2026-11-28 16:00:00")
        ),
        ADMIN,
    )
    .await;
    let body = r.json();
    assert_eq!(body["total"], 3, "{body}");
    let page = body["data"].as_array().unwrap();
    assert_eq!(page.len(), 2);
    assert_eq!(page[0]["n"], 2);
    let t = page[0]["t"].as_str().unwrap();
    assert!(
        t.starts_with("Nov 28 15:08:09 pve1 pvescheduler[")
            && t.contains(": 106-0: got unexpected replication job error - command '/usr/bin/ssh"),
        "{t}"
    );
    // systemd's messages about a unit belong to it; sshd is the ssh unit.
    let r = get(
        &sim,
        "/api2/json/nodes/pve2/syslog?service=chrony&limit=0",
        ADMIN,
    )
    .await;
    let t: Vec<String> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["t"].as_str().unwrap().to_string())
        .collect();
    assert!(
        t.iter()
            .any(|l| l.contains("systemd[1]: chrony.service: Failed with result 'exit-code'."))
    );
    let r = get(&sim, "/api2/json/nodes/pve2/syslog?service=sshd", ADMIN).await;
    assert_eq!(r.json()["total"], 3);
    // No match: journalctl's own line.
    let r = get(&sim, "/api2/json/nodes/pve1/syslog?service=nginx", ADMIN).await;
    assert_eq!(
        r.json(),
        json!({"data": [{"n": 1, "t": "-- No entries --"}], "total": 1})
    );
    // A date that does not exist: journalctl fails.
    let r = get(&sim, "/api2/json/nodes/pve1/syslog?since=2026-02-30", ADMIN).await;
    assert_eq!(
        (r.status, message(&r)),
        (
            500,
            "command 'journalctl -o short --no-pager --since 2026-02-30' failed: exit code 1\n"
                .into()
        )
    );
    // The schema's date pattern.
    let r = get(&sim, "/api2/json/nodes/pve1/syslog?since=yesterday", ADMIN).await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()["errors"]["since"]
            .as_str()
            .unwrap()
            .starts_with("value does not match the regex pattern")
    );
    let r = as_auditor(&sim, "GET", "/nodes/pve1/syslog", "").await;
    assert_eq!(r.status, 403);
    only_violations(&sim, &["GET /nodes/pve1/syslog: since:"]);

    // The lab node (PVE 8: OpenSSH 9 logs as sshd).
    let lab = lab().await;
    let r = get(
        &lab,
        "/api2/json/nodes/lab1/syslog?service=ssh",
        &lab_auth(),
    )
    .await;
    assert!(
        r.json()["data"][0]["t"]
            .as_str()
            .unwrap()
            .contains(" lab1 sshd[")
    );
    no_violations(&lab);
}
