//! The read catalog: rrddata, config, snapshots, storage, tasks, agent,
//! HA, permissions, ticket renewal and the secondary cluster.

use super::*;

async fn schema_sim() -> Simulator {
    Simulator::start(SimConfig {
        schema_path: schema_path(),
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

fn no_violations(sim: &Simulator) {
    assert_eq!(sim.schema_violations(), Vec::<String>::new());
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|s| s.to_string()).collect()
}

fn err_field(r: &Resp, field: &str) -> String {
    r.json()["errors"][field].as_str().unwrap_or("").to_string()
}

#[tokio::test]
async fn rrddata_points_keys_and_permissions() {
    let sim = schema_sim().await;
    let d = get(
        &sim,
        "/api2/json/nodes/pve1/rrddata?timeframe=hour&cf=AVERAGE",
        ADMIN,
    )
    .await
    .data();
    let pts = d.as_array().unwrap();
    assert_eq!(pts.len(), 60);
    let times: Vec<u64> = pts.iter().map(|p| p["time"].as_u64().unwrap()).collect();
    assert!(times.iter().all(|t| t % 60 == 0));
    assert!(times.windows(2).all(|w| w[1] - w[0] == 60));
    assert_eq!(
        keys(&pts[0]),
        set(&[
            "time",
            "cpu",
            "maxcpu",
            "iowait",
            "loadavg",
            "memtotal",
            "memused",
            "swaptotal",
            "swapused",
            "roottotal",
            "rootused",
            "netin",
            "netout"
        ])
    );
    assert_eq!(pts[0]["maxcpu"], 32);
    let d = get(&sim, "/api2/json/nodes/pve1/rrddata?timeframe=day", ADMIN)
        .await
        .data();
    let pts = d.as_array().unwrap();
    assert_eq!(pts.len(), 70);
    assert_eq!(
        pts[1]["time"].as_u64().unwrap() - pts[0]["time"].as_u64().unwrap(),
        1800
    );

    // Running VM: all data sources; stopped VM: only the static ones.
    let d = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/100/rrddata?timeframe=week&cf=MAX",
        ADMIN,
    )
    .await
    .data();
    let p = &d[0];
    for k in [
        "cpu",
        "mem",
        "netin",
        "netout",
        "diskread",
        "diskwrite",
        "maxmem",
    ] {
        assert!(p.get(k).is_some(), "{k} in {p}");
    }
    assert_eq!(p["maxcpu"], 2);
    let d = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/104/rrddata?timeframe=hour",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(
        keys(&d[0]),
        set(&["time", "maxcpu", "maxmem", "maxdisk", "disk"])
    );
    let d = get(
        &sim,
        "/api2/json/nodes/pve1/lxc/106/rrddata?timeframe=month",
        ADMIN,
    )
    .await
    .data();
    assert!(d[0]["disk"].as_u64().unwrap() > 0 && d[0].get("memhost").is_none());
    no_violations(&sim);

    // Permissions come first; parameters are validated.
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/rrddata?timeframe=hour",
        AUDITOR,
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission check failed (/nodes/pve1, Sys.Audit)")
    );
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/104/rrddata?timeframe=hour",
        AUDITOR,
    )
    .await;
    assert_eq!(r.status, 403);
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/100/rrddata?timeframe=hour",
        AUDITOR,
    )
    .await;
    assert_eq!(r.data().as_array().unwrap().len(), 60);
    let r = get(&sim, "/api2/json/nodes/pve1/qemu/100/rrddata", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        err_field(&r, "timeframe"),
        "property is missing and it is not optional"
    );
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/100/rrddata?timeframe=decade",
        ADMIN,
    )
    .await;
    assert_eq!(r.status, 400);
    // rrddata is not proxied (PVE reads the local RRD cache), so the
    // offline node answers, with every data source undefined.
    let d = get(&sim, "/api2/json/nodes/pve3/rrddata?timeframe=hour", ADMIN)
        .await
        .data();
    assert_eq!(keys(&d[0]), set(&["time"]));
    let d = get(
        &sim,
        "/api2/json/nodes/pve3/qemu/105/rrddata?timeframe=year",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(keys(&d[69]), set(&["time"]));
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/999/rrddata?timeframe=hour",
        ADMIN,
    )
    .await;
    assert_eq!(r.status, 500);
    assert!(r.reason.unwrap().starts_with("RRD error: opening"));
}

#[tokio::test]
async fn guest_config_shapes_and_typing() {
    let sim = schema_sim().await;
    let d = get(&sim, "/api2/json/nodes/pve1/qemu/100/config", ADMIN)
        .await
        .data();
    assert!(d.get("vmid").is_none());
    assert_eq!(d["name"], "web-frontend-01");
    assert_eq!(d["memory"], "4096");
    assert_eq!(d["agent"], "1");
    assert_eq!(d["cores"], 2);
    assert_eq!(d["sockets"], 1);
    assert_eq!(d["balloon"], 2048);
    assert_eq!(d["numa"], 0);
    assert_eq!(d["tags"], "prod;web");
    assert_eq!(d["parent"], "kernel_617");
    assert!(d["net0"].as_str().unwrap().starts_with("virtio=BC:24:11:"));
    assert!(d["scsi0"].as_str().unwrap().contains("size=32G"));
    for k in ["boot", "smbios1", "vmgenid", "meta", "ostype"] {
        assert!(d[k].is_string(), "{k}");
    }
    let digest = d["digest"].as_str().unwrap();
    assert_eq!(digest.len(), 40);
    assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()));

    let d = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/101/config?current=1",
        ADMIN,
    )
    .await
    .data();
    assert!(d.get("agent").is_none() && d["virtio0"].is_string() && d["net1"].is_string());
    assert_eq!(d["description"], "Primary PostgreSQL 16\nOwner: dba team\n");
    let d = get(&sim, "/api2/json/nodes/pve1/qemu/900/config", ADMIN)
        .await
        .data();
    assert_eq!(d["template"], 1);
    assert_eq!(d["cipassword"], "**********");
    assert_eq!(d["ciuser"], "ubuntu");
    assert!(
        d["sshkeys"]
            .as_str()
            .unwrap()
            .starts_with("ssh-ed25519%20AAAA")
    );
    let d = get(&sim, "/api2/json/nodes/pve2/qemu/103/config", ADMIN)
        .await
        .data();
    assert_eq!(d["lock"], "backup");
    let d = get(&sim, "/api2/json/nodes/pve2/qemu/110/config", ADMIN)
        .await
        .data();
    assert!(d.get("name").is_none());

    let d = get(&sim, "/api2/json/nodes/pve1/lxc/106/config", ADMIN)
        .await
        .data();
    assert_eq!(d["memory"], 512);
    assert_eq!(d["swap"], 512);
    assert_eq!(d["unprivileged"], 1);
    assert_eq!(d["hostname"], "dns-resolver-01");
    assert_eq!(d["arch"], "amd64");
    assert!(
        d["rootfs"]
            .as_str()
            .unwrap()
            .starts_with("local-lvm:vm-106-disk-0")
    );
    assert!(d.get("vmid").is_none() && d["digest"].is_string());
    let d = get(&sim, "/api2/json/nodes/pve1/lxc/200/config", ADMIN)
        .await
        .data();
    assert_eq!(d["template"], 1);

    // Snapshot configs.
    let d = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/100/config?snapshot=kernel_617",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(d["parent"], "post_upgrade");
    assert!(d["snaptime"].as_u64().is_some() && d["vmstate"].is_string());
    no_violations(&sim);
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/100/config?snapshot=nope",
        ADMIN,
    )
    .await;
    assert_eq!(r.status, 500);
    assert_eq!(r.reason.as_deref(), Some("snapshot 'nope' does not exist"));

    // Errors: permission first, then proxying, then the config lookup.
    let r = get(&sim, "/api2/json/nodes/pve2/qemu/102/config", AUDITOR).await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission check failed (/vms/102, VM.Audit)")
    );
    let r = get(&sim, "/api2/json/nodes/pve3/qemu/105/config", ADMIN).await;
    assert_eq!(r.status, 595);
    let r = get(&sim, "/api2/json/nodes/pve1/qemu/999/config", ADMIN).await;
    assert_eq!(
        r.reason.as_deref(),
        Some("Configuration file 'nodes/pve1/qemu-server/999.conf' does not exist")
    );
    let r = get(&sim, "/api2/json/nodes/pve1/lxc/100/config", ADMIN).await;
    assert_eq!(r.status, 500);
}

#[tokio::test]
async fn snapshots_hash_order_current_last() {
    let sim = schema_sim().await;
    let d = get(&sim, "/api2/json/nodes/pve1/qemu/100/snapshot", ADMIN)
        .await
        .data();
    let l = d.as_array().unwrap();
    assert_eq!(l.len(), 5);
    let cur = l.last().unwrap();
    assert_eq!(cur["name"], "current");
    assert_eq!(cur["running"], 1);
    assert_eq!(cur["description"], "You are here!");
    assert_eq!(cur["parent"], "kernel_617");
    assert!(cur.get("snaptime").is_none() && cur["digest"].is_string());
    let by = |n: &str| l.iter().find(|s| s["name"] == n).unwrap().clone();
    assert_eq!(by("kernel_617")["parent"], "post_upgrade");
    assert_eq!(by("post_upgrade")["parent"], "pre_upgrade");
    assert_eq!(by("test_branch")["parent"], "pre_upgrade");
    assert!(by("pre_upgrade").get("parent").is_none());
    assert_eq!(by("kernel_617")["vmstate"], 1);
    assert_eq!(by("pre_upgrade")["vmstate"], 0);

    let d = get(&sim, "/api2/json/nodes/pve1/lxc/106/snapshot", ADMIN)
        .await
        .data();
    let l = d.as_array().unwrap();
    assert_eq!(l.len(), 2);
    assert!(l[0].get("vmstate").is_none());
    assert_eq!(l[1]["parent"], "before_bind_update");
    let d = get(&sim, "/api2/json/nodes/pve1/qemu/104/snapshot", ADMIN)
        .await
        .data();
    assert_eq!(d.as_array().unwrap().len(), 1);
    assert_eq!(d[0]["running"], 0);
    assert!(d[0].get("parent").is_none());
    no_violations(&sim);
    let r = get(&sim, "/api2/json/nodes/pve1/qemu/104/snapshot", AUDITOR).await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn storage_listings_and_content() {
    let sim = schema_sim().await;
    let d = get(&sim, "/api2/json/storage", ADMIN).await.data();
    let ids: Vec<&str> = d
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["storage"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["local", "local-lvm", "nfs-backup", "nfs-images"]);
    let nfs = &d[2];
    assert_eq!(nfs["type"], "nfs");
    assert_eq!(nfs["shared"], 1);
    assert_eq!(nfs["export"], "/export/pve-backup");
    assert!(nfs["digest"].is_string());
    assert!(d[0].get("shared").is_none());
    let d = get(&sim, "/api2/json/storage?type=lvmthin", ADMIN)
        .await
        .data();
    assert_eq!(d.as_array().unwrap().len(), 1);
    let d = get(&sim, "/api2/json/storage", AUDITOR).await.data();
    assert_eq!(d, serde_json::json!([]));

    let d = get(&sim, "/api2/json/nodes/pve1/storage", ADMIN)
        .await
        .data();
    let l = d.as_array().unwrap();
    assert_eq!(l.len(), 4);
    assert_eq!(
        keys(&l[0]),
        set(&[
            "storage",
            "type",
            "content",
            "active",
            "enabled",
            "shared",
            "total",
            "used",
            "avail",
            "used_fraction"
        ])
    );
    assert_eq!(l[0]["active"], 1);
    assert!(l[0]["used_fraction"].as_f64().unwrap() > 0.0);
    let d = get(
        &sim,
        "/api2/json/nodes/pve2/storage?content=backup&enabled=1",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(d.as_array().unwrap().len(), 2);
    let d = get(
        &sim,
        "/api2/json/nodes/pve1/storage?storage=local-lvm",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(d[0]["storage"], "local-lvm");
    let r = get(&sim, "/api2/json/nodes/pve3/storage", ADMIN).await;
    assert_eq!(r.status, 595);

    let d = get(
        &sim,
        "/api2/json/nodes/pve1/storage/nfs-backup/content?content=backup",
        ADMIN,
    )
    .await
    .data();
    let l = d.as_array().unwrap();
    assert_eq!(l.len(), 9);
    assert_eq!(
        l[0]["volid"],
        "nfs-backup:backup/vzdump-lxc-106-2026_11_27-01_18_18.tar.zst"
    );
    let b100: Vec<_> = l.iter().filter(|v| v["vmid"] == 100).collect();
    assert_eq!(b100.len(), 3);
    assert!(
        b100.iter()
            .all(|v| v["subtype"] == "qemu" && v["format"] == "vma.zst")
    );
    assert!(
        l.iter()
            .any(|v| v["protected"] == 1 && v["notes"].is_string())
    );
    let d = get(
        &sim,
        "/api2/json/nodes/pve1/storage/nfs-backup/content?vmid=101",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(d.as_array().unwrap().len(), 2);
    let d = get(&sim, "/api2/json/nodes/pve1/storage/local/content", ADMIN)
        .await
        .data();
    let contents: BTreeSet<&str> = d
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["backup", "iso", "vztmpl"].into_iter().collect());
    no_violations(&sim);
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/storage/nfs-backup/content",
        AUDITOR,
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.reason.as_deref(),
        Some(
            "Permission check failed (/storage/nfs-backup, Datastore.Audit|Datastore.AllocateSpace)"
        )
    );
    let r = get(&sim, "/api2/json/nodes/pve1/storage/nope/content", ADMIN).await;
    assert_eq!(r.status, 500);
}

#[tokio::test]
async fn node_and_cluster_tasks() {
    let sim = schema_sim().await;
    let r = get(&sim, "/api2/json/nodes/pve1/tasks", ADMIN).await;
    let j = r.json();
    let l = j["data"].as_array().unwrap();
    assert_eq!(j["total"], l.len());
    assert_eq!(l.len(), 7);
    let starts: Vec<u64> = l.iter().map(|t| t["starttime"].as_u64().unwrap()).collect();
    assert!(starts.windows(2).all(|w| w[0] >= w[1]), "newest first");
    assert!(l.iter().any(|t| t["upid"] == LONG_LOG_UPID));
    let tok = l
        .iter()
        .find(|t| t["type"] == "qmstart" && t["id"] == "100")
        .unwrap();
    assert_eq!(tok["user"], "root@pam");
    assert_eq!(tok["tokenid"], "mcp");
    assert_eq!(tok["status"], "OK");
    assert!(
        tok["upid"]
            .as_str()
            .unwrap()
            .ends_with(":qmstart:100:root@pam!mcp:")
    );
    assert!(tok["endtime"].as_u64().is_some() && tok["pstart"].as_u64().is_some());
    let failed = l.iter().find(|t| t["id"] == "104").unwrap();
    assert_eq!(failed["status"], "start failed: QEMU exited with code 1");
    assert!(l.iter().any(|t| t["status"] == "WARNINGS: 2"));

    let j = get(&sim, "/api2/json/nodes/pve1/tasks?start=2&limit=3", ADMIN)
        .await
        .json();
    assert_eq!(j["total"], 7);
    assert_eq!(j["data"].as_array().unwrap().len(), 3);
    let j = get(&sim, "/api2/json/nodes/pve1/tasks?errors=1", ADMIN)
        .await
        .json();
    assert_eq!(j["total"], 2);
    let j = get(
        &sim,
        "/api2/json/nodes/pve1/tasks?typefilter=qmstart&vmid=100&userfilter=mcp",
        ADMIN,
    )
    .await
    .json();
    assert_eq!(j["total"], 1);
    let j = get(
        &sim,
        "/api2/json/nodes/pve1/tasks?statusfilter=warning,error",
        ADMIN,
    )
    .await
    .json();
    assert_eq!(j["total"], 2);
    // The running backup only shows with source=active|all.
    let j = get(&sim, "/api2/json/nodes/pve2/tasks", ADMIN).await.json();
    assert!(
        j["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] != "RUNNING")
    );
    let j = get(&sim, "/api2/json/nodes/pve2/tasks?source=active", ADMIN)
        .await
        .json();
    assert_eq!(j["total"], 1);
    assert_eq!(j["data"][0]["status"], "RUNNING");
    assert_eq!(j["data"][0]["id"], "103");
    let running_upid = j["data"][0]["upid"].as_str().unwrap().to_string();
    let j = get(&sim, "/api2/json/nodes/pve2/tasks?source=all", ADMIN)
        .await
        .json();
    assert_eq!(j["total"], 4);
    let r = get(&sim, "/api2/json/nodes/pve3/tasks", ADMIN).await;
    assert_eq!(r.status, 595);
    // The auditor owns no task and lacks Sys.Audit: empty, no total.
    let j = get(&sim, "/api2/json/nodes/pve1/tasks", AUDITOR)
        .await
        .json();
    assert_eq!(j, serde_json::json!({"data": []}));

    let d = get(&sim, "/api2/json/cluster/tasks", ADMIN).await.data();
    let l = d.as_array().unwrap();
    assert_eq!(l.len(), 12);
    assert!(l.iter().any(|t| t["node"] == "pve3"));
    let run = l
        .iter()
        .find(|t| t["upid"] == running_upid.as_str())
        .unwrap();
    assert!(run.get("status").is_none() && run.get("endtime").is_none());
    assert!(l.iter().all(|t| t.get("pstart").is_none()));
    no_violations(&sim);
    let d = get(&sim, "/api2/json/cluster/tasks", AUDITOR).await.data();
    assert_eq!(d, serde_json::json!([]));
    // The schema declares no parameters: PVE rejects limit & co.
    let r = get(&sim, "/api2/json/cluster/tasks?limit=10", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.reason.as_deref(), Some("Parameter verification failed."));
    assert_eq!(
        err_field(&r, "limit"),
        "property is not defined in schema and the schema does not allow additional properties"
    );
}

#[tokio::test]
async fn task_status_and_log() {
    let sim = schema_sim().await;
    let enc = |u: &str| {
        u.replace(':', "%3A")
            .replace('@', "%40")
            .replace('!', "%21")
    };
    let path = format!("/api2/json/nodes/pve1/tasks/{}/status", enc(LONG_LOG_UPID));
    let d = get(&sim, &path, ADMIN).await.data();
    assert_eq!(d["status"], "stopped");
    assert_eq!(d["exitstatus"], "OK");
    assert_eq!(d["type"], "vzdump");
    assert_eq!(d["id"], "");
    assert_eq!(d["pid"], 0x000A_3F1C);
    assert!(d.get("endtime").is_none());

    let path = format!("/api2/json/nodes/pve1/tasks/{}/log", enc(LONG_LOG_UPID));
    let j = get(&sim, &path, ADMIN).await.json();
    assert_eq!(j["total"], 413);
    let l = j["data"].as_array().unwrap();
    assert_eq!(l.len(), 50);
    assert_eq!(l[0]["n"], 1);
    assert!(
        l[0]["t"]
            .as_str()
            .unwrap()
            .starts_with("INFO: starting new backup job")
    );
    let j = get(&sim, &format!("{path}?start=400&limit=50"), ADMIN)
        .await
        .json();
    let l = j["data"].as_array().unwrap();
    assert_eq!(l.len(), 13);
    assert_eq!(l[0]["n"], 401);
    assert_eq!(l.last().unwrap()["t"], "TASK OK");
    let j = get(&sim, &format!("{path}?start=0&limit=0"), ADMIN)
        .await
        .json();
    assert_eq!(j["data"].as_array().unwrap().len(), 413);

    // Error / warnings / running tasks.
    let tasks = get(&sim, "/api2/json/nodes/pve2/tasks?source=all", ADMIN)
        .await
        .data();
    let upid = |pred: &dyn Fn(&Value) -> bool| {
        tasks.as_array().unwrap().iter().find(|t| pred(t)).unwrap()["upid"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let failed = upid(&|t| t["type"] == "qmshutdown");
    let d = get(
        &sim,
        &format!("/api2/json/nodes/pve2/tasks/{}/status", enc(&failed)),
        ADMIN,
    )
    .await
    .data();
    assert_eq!(
        d["exitstatus"],
        "VM 103 qmp command 'guest-ping' failed - got timeout"
    );
    let l = get(
        &sim,
        &format!("/api2/json/nodes/pve2/tasks/{}/log", enc(&failed)),
        ADMIN,
    )
    .await
    .data();
    assert_eq!(
        l.as_array().unwrap().last().unwrap()["t"],
        "TASK ERROR: VM 103 qmp command 'guest-ping' failed - got timeout"
    );
    let warn = upid(&|t| t["status"] == "WARNINGS: 2");
    let l = get(
        &sim,
        &format!("/api2/json/nodes/pve2/tasks/{}/log", enc(&warn)),
        ADMIN,
    )
    .await
    .data();
    assert_eq!(
        l.as_array().unwrap().last().unwrap()["t"],
        "TASK WARNINGS: 2"
    );
    let running = upid(&|t| t["status"] == "RUNNING");
    let d = get(
        &sim,
        &format!("/api2/json/nodes/pve2/tasks/{}/status", enc(&running)),
        ADMIN,
    )
    .await
    .data();
    assert_eq!(d["status"], "running");
    assert!(d.get("exitstatus").is_none());
    no_violations(&sim);

    let r = get(&sim, "/api2/json/nodes/pve1/tasks/garbage/status", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(err_field(&r, "upid"), "unable to parse worker upid");
    let unknown = "UPID:pve1:00001234:00005678:6B0A0000:qmstart:100:root@pam:";
    let r = get(
        &sim,
        &format!("/api2/json/nodes/pve1/tasks/{}/log", enc(unknown)),
        ADMIN,
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(err_field(&r, "upid"), "no such task");
    // Wrong node: PVE finds no log file there.
    let r = get(
        &sim,
        &format!("/api2/json/nodes/pve2/tasks/{}/status", enc(LONG_LOG_UPID)),
        ADMIN,
    )
    .await;
    assert_eq!(err_field(&r, "upid"), "no such task");
    let r = get(
        &sim,
        &format!("/api2/json/nodes/pve1/tasks/{}/status", enc(LONG_LOG_UPID)),
        AUDITOR,
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission check failed (/nodes/pve1, Sys.Audit)")
    );
}

#[tokio::test]
async fn agent_and_container_interfaces() {
    let sim = schema_sim().await;
    let p = |id: u32, node: &str| {
        format!("/api2/json/nodes/{node}/qemu/{id}/agent/network-get-interfaces")
    };
    let d = get(&sim, &p(100, "pve1"), ADMIN).await.data();
    let ifs = d["result"].as_array().unwrap();
    assert_eq!(ifs[0]["name"], "lo");
    assert_eq!(ifs[0]["ip-addresses"][0]["ip-address"], "127.0.0.1");
    assert_eq!(ifs[0]["ip-addresses"][0]["prefix"], 8);
    assert_eq!(ifs[1]["name"], "eth0");
    assert_eq!(ifs[1]["ip-addresses"][0]["ip-address"], "10.0.0.100");
    assert_eq!(ifs[1]["ip-addresses"][0]["ip-address-type"], "ipv4");
    assert!(
        ifs[1]["hardware-address"]
            .as_str()
            .unwrap()
            .starts_with("bc:24:11:")
    );
    no_violations(&sim);
    for (id, node, msg) in [
        (101, "pve1", "No QEMU guest agent configured"),
        (104, "pve1", "No QEMU guest agent configured"),
        (110, "pve2", "VM 110 is not running"),
        (900, "pve1", "VM 900 is not running"),
        (103, "pve2", "QEMU guest agent is not running"),
        (102, "pve2", "QEMU guest agent is not running"),
    ] {
        let r = get(&sim, &p(id, node), ADMIN).await;
        assert_eq!(r.status, 500, "{id}");
        assert_eq!(r.reason.as_deref(), Some(msg), "{id}");
        assert_eq!(r.json()["message"], format!("{msg}\n"));
    }
    let r = get(&sim, &p(100, "pve1"), AUDITOR).await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission check failed (/vms/100, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)")
    );
    let r = get(&sim, &p(105, "pve3"), ADMIN).await;
    assert_eq!(r.status, 595);

    let d = get(&sim, "/api2/json/nodes/pve1/lxc/106/interfaces", ADMIN)
        .await
        .data();
    let l = d.as_array().unwrap();
    assert_eq!(l.len(), 2);
    let eth0 = l.iter().find(|i| i["name"] == "eth0").unwrap();
    assert_eq!(eth0["inet"], "10.0.0.106/24");
    assert!(eth0["inet6"].as_str().unwrap().starts_with("fe80::"));
    assert_eq!(eth0["hwaddr"], eth0["hardware-address"]);
    assert_eq!(eth0["ip-addresses"][0]["ip-address"], "10.0.0.106");
    let r = get(&sim, "/api2/json/nodes/pve1/lxc/108/interfaces", ADMIN).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.reason.as_deref(), Some("CT 108 not running"));
    no_violations(&sim);
}

#[tokio::test]
async fn ha_status_and_resources() {
    let sim = schema_sim().await;
    let d = get(&sim, "/api2/json/cluster/ha/status/current", ADMIN)
        .await
        .data();
    let l = d.as_array().unwrap();
    assert_eq!(l[0]["id"], "quorum");
    assert_eq!(l[0]["quorate"], 1);
    assert_eq!(l[0]["status"], "OK");
    let ids: Vec<&str> = l.iter().map(|e| e["id"].as_str().unwrap()).collect();
    for id in [
        "master",
        "lrm:pve1",
        "lrm:pve2",
        "lrm:pve3",
        "service:vm:100",
        "service:vm:103",
        "service:ct:106",
    ] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    let s100 = l.iter().find(|e| e["id"] == "service:vm:100").unwrap();
    assert_eq!(s100["sid"], "vm:100");
    assert_eq!(s100["state"], "started");
    assert_eq!(s100["crm_state"], "started");
    assert_eq!(s100["request_state"], "started");
    assert_eq!(s100["group"], "prod-ha");
    assert_eq!(s100["max_restart"], 1);
    let lrm3 = l.iter().find(|e| e["id"] == "lrm:pve3").unwrap();
    assert!(lrm3["status"].as_str().unwrap().contains("dead"));
    let d = get(&sim, "/api2/json/cluster/ha/resources", ADMIN)
        .await
        .data();
    let sids: Vec<&str> = d
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["sid"].as_str().unwrap())
        .collect();
    assert_eq!(sids, ["vm:100", "vm:103", "ct:106"]);
    assert_eq!(d[2]["type"], "ct");
    assert!(d[2].get("group").is_none() && d[0]["digest"].is_string());
    let d = get(&sim, "/api2/json/cluster/ha/resources?type=vm", ADMIN)
        .await
        .data();
    assert_eq!(d.as_array().unwrap().len(), 2);
    no_violations(&sim);
    let r = get(&sim, "/api2/json/cluster/ha/status/current", AUDITOR).await;
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission check failed (/, Sys.Audit)")
    );
    let r = get(&sim, "/api2/json/cluster/ha/resources", AUDITOR).await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn access_permissions_reflect_acls() {
    let sim = schema_sim().await;
    let d = get(&sim, "/api2/json/access/permissions", ADMIN)
        .await
        .data();
    assert_eq!(d["/"]["Sys.Audit"], 1);
    assert_eq!(d["/vms"]["VM.GuestAgent.Audit"], 1);
    let d = get(&sim, "/api2/json/access/permissions", AUDITOR)
        .await
        .data();
    assert_eq!(keys(&d), set(&["/vms/100", "/vms/101", "/vms/200"]));
    assert_eq!(d["/vms/100"], serde_json::json!({"VM.Audit": 1}));
    let d = get(
        &sim,
        "/api2/json/access/permissions?path=%2Fvms%2F100",
        AUDITOR,
    )
    .await
    .data();
    assert_eq!(d, serde_json::json!({"/vms/100": {"VM.Audit": 1}}));
    let d = get(&sim, "/api2/json/access/permissions?path=%2F", AUDITOR)
        .await
        .data();
    assert_eq!(d, serde_json::json!({"/": {}}));
    let d = get(
        &sim,
        "/api2/json/access/permissions?userid=auditor%40pve%21mcp",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(keys(&d).len(), 3);
    no_violations(&sim);
    let r = get(
        &sim,
        "/api2/json/access/permissions?userid=root%40pam",
        AUDITOR,
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission check failed (/access, Sys.Audit)")
    );
}

async fn login(sim: &Simulator, user: &str, password: &str) -> Resp {
    let form = format!(
        "username={}&password={}",
        user.replace('@', "%40"),
        password
            .replace('%', "%25")
            .replace(':', "%3A")
            .replace('@', "%40")
            .replace('+', "%2B")
            .replace('/', "%2F")
            .replace('=', "%3D")
    );
    send(
        sim,
        "POST",
        "/api2/json/access/ticket",
        &[],
        Some(("application/x-www-form-urlencoded", form.as_bytes())),
    )
    .await
}

fn cookie(ticket: &str) -> String {
    format!(
        "PVEAuthCookie={}",
        ticket
            .replace('%', "%25")
            .replace(':', "%3A")
            .replace('@', "%40")
            .replace('+', "%2B")
            .replace('/', "%2F")
            .replace('=', "%3D")
    )
}

#[tokio::test]
async fn ticket_renewal_expiry_and_login_count() {
    let sim = Simulator::start(SimConfig {
        ticket_lifetime: Duration::from_secs(2),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    assert_eq!(sim.login_count(), 0);
    let t1 = login(&sim, TICKET_USER, TICKET_PASSWORD).await.data()["ticket"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(sim.login_count(), 1);
    // Renewal: the old ticket as password.
    let t2 = login(&sim, TICKET_USER, &t1).await.data()["ticket"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(sim.login_count(), 2);
    let r = send(
        &sim,
        "GET",
        "/api2/json/version",
        &[("cookie", &cookie(&t2))],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(login(&sim, TICKET_USER, "wrong").await.status, 401);
    assert_eq!(sim.login_count(), 2);
    // Letting the 2 s ticket expire is what is tested: no event to await.
    tokio::time::sleep(Duration::from_millis(3_200)).await;
    let r = send(
        &sim,
        "GET",
        "/api2/json/version",
        &[("cookie", &cookie(&t2))],
        None,
    )
    .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.reason.as_deref(), Some("Authentication failed!"));
    // An expired ticket cannot be renewed.
    assert_eq!(login(&sim, TICKET_USER, &t2).await.status, 401);
    assert_eq!(sim.login_count(), 2);
}

#[tokio::test]
async fn secondary_cluster_is_isolated() {
    let lab = Simulator::start(SimConfig {
        cluster: ClusterFlavor::Secondary,
        schema_path: schema_path(),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let primary = start().await;
    let lab_auth = format!("PVEAPIToken={LAB_TOKEN_ID}={LAB_TOKEN_SECRET}");
    assert_eq!(get(&lab, "/api2/json/version", ADMIN).await.status, 401);
    assert_eq!(get(&lab, "/api2/json/version", AUDITOR).await.status, 401);
    assert_eq!(
        get(&primary, "/api2/json/version", &lab_auth).await.status,
        401
    );

    let d = get(&lab, "/api2/json/cluster/status", &lab_auth)
        .await
        .data();
    assert_eq!(
        d,
        serde_json::json!([{"type": "node", "id": "node/lab1", "name": "lab1", "nodeid": 0,
            "ip": "198.51.100.21", "local": 1, "online": 1, "level": ""}])
    );
    let d = get(&lab, "/api2/json/nodes", &lab_auth).await.data();
    assert_eq!(d.as_array().unwrap().len(), 1);
    assert_eq!(d[0]["node"], "lab1");
    let d = get(&lab, "/api2/json/cluster/resources?type=vm", &lab_auth)
        .await
        .data();
    let vmids: Vec<u64> = d
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["vmid"].as_u64().unwrap())
        .collect();
    assert_eq!(vmids, [300, 301, 302, 303]);
    let d = get(
        &lab,
        "/api2/json/nodes/lab1/qemu/300/agent/network-get-interfaces",
        &lab_auth,
    )
    .await
    .data();
    assert_eq!(d["result"][1]["ip-addresses"][0]["ip-address"], "10.0.1.50");
    let j = get(&lab, "/api2/json/nodes/lab1/tasks", &lab_auth)
        .await
        .json();
    assert_eq!(j["total"], 2);
    let d = get(&lab, "/api2/json/cluster/ha/status/current", &lab_auth)
        .await
        .data();
    assert_eq!(d.as_array().unwrap().len(), 1);
    assert_eq!(
        get(&lab, "/api2/json/nodes/pve1/status", &lab_auth)
            .await
            .status,
        500
    );
    no_violations(&lab);

    // Tickets and passwords do not cross over either.
    assert_eq!(login(&lab, TICKET_USER, TICKET_PASSWORD).await.status, 401);
    let d = login(&lab, TICKET_USER, LAB_TICKET_PASSWORD).await.data();
    assert!(d.get("clustername").is_none());
    let t = d["ticket"].as_str().unwrap().to_string();
    let r = send(
        &primary,
        "GET",
        "/api2/json/version",
        &[("cookie", &cookie(&t))],
        None,
    )
    .await;
    assert_eq!(r.status, 401);
    let r = send(
        &lab,
        "GET",
        "/api2/json/version",
        &[("cookie", &cookie(&t))],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn large_scenario_tasks_and_backups() {
    let sim = Simulator::start(SimConfig {
        scenario: Scenario::Large { guests: 5000 },
        schema_path: schema_path(),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let j = get(&sim, "/api2/json/nodes/pve1/tasks?limit=25", ADMIN)
        .await
        .json();
    assert_eq!(j["data"].as_array().unwrap().len(), 25);
    assert!(j["total"].as_u64().unwrap() > 2_500);
    let d = get(&sim, "/api2/json/cluster/tasks", ADMIN).await.data();
    assert!(d.as_array().unwrap().len() > 5_000);
    let d = get(
        &sim,
        "/api2/json/nodes/pve2/storage/nfs-backup/content?content=backup",
        ADMIN,
    )
    .await
    .data();
    assert!(d.as_array().unwrap().len() > 4_000);
    let d = get(
        &sim,
        "/api2/json/nodes/pve2/storage/nfs-backup/content?vmid=1234",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(d.as_array().unwrap().len(), 1);
    no_violations(&sim);
}

#[tokio::test]
async fn node_status_fields() {
    let sim = schema_sim().await;
    let d = get(&sim, "/api2/json/nodes/pve1/status", ADMIN)
        .await
        .data();
    for k in [
        "kversion",
        "pveversion",
        "cpuinfo",
        "loadavg",
        "memory",
        "swap",
        "rootfs",
        "boot-info",
        "current-kernel",
        "uptime",
        "cpu",
        "wait",
        "ksm",
    ] {
        assert!(d.get(k).is_some(), "{k}");
    }
    assert!(d["loadavg"][0].is_string());
    assert!(d["cpuinfo"]["mhz"].is_string());
    no_violations(&sim);
}
