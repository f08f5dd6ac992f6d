//! Endpoint shapes, typing quirks, error bodies and schema validation.

use super::*;

#[test]
fn seed_covers_interesting_states() {
    let c = seed::build(&Scenario::Standard);
    let g = |id: u32| &c.guests[&id];
    assert_eq!(c.name, "demo-cluster");
    let names: Vec<_> = c
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.online))
        .collect();
    assert_eq!(names, [("pve1", true), ("pve2", true), ("pve3", false)]);
    assert!((10..=16).contains(&c.guests.len()));
    assert_eq!(g(102).run, RunState::Paused);
    assert!(g(900).template && g(900).kind == GuestKind::Qemu && !g(900).is_running());
    assert!(g(200).template && g(200).kind == GuestKind::Lxc);
    assert_eq!(g(103).lock.as_deref(), Some("backup"));
    assert_eq!(g(100).tags.as_deref(), Some("prod;web"));
    assert!(g(100).ha.is_some() && g(101).ha.is_none());
    assert!(g(100).agent && !g(101).agent);
    assert!(
        c.guests
            .values()
            .any(|g| g.node == "pve3" && g.kind == GuestKind::Qemu)
    );
    assert!(
        c.guests
            .values()
            .any(|g| g.node == "pve3" && g.kind == GuestKind::Lxc)
    );
    assert!(
        c.guests
            .values()
            .any(|g| g.name.as_deref().is_some_and(|n| n.contains('-')))
    );
    assert!(c.guests.values().all(|g| g.vmid >= 100));
    for id in AUDITOR_VISIBLE_VMIDS {
        assert!(c.guests.contains_key(id), "auditor vmid {id} exists");
    }

    let large = seed::build(&Scenario::Large { guests: 5000 });
    assert_eq!(large.guests.len(), 5000);
    let again = seed::build(&Scenario::Large { guests: 5000 });
    assert_eq!(
        format!("{:?}", large.guests.get(&3000)),
        format!("{:?}", again.guests.get(&3000)),
        "deterministic"
    );
}

#[tokio::test]
async fn cluster_resources_shape_and_order() {
    let sim = start().await;
    let data = get(&sim, "/api2/json/cluster/resources", ADMIN)
        .await
        .data();
    let items = data.as_array().unwrap();
    let types: Vec<&str> = items.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let rank = |t: &str| match t {
        "pool" => 0,
        "qemu" | "lxc" => 1,
        "node" => 2,
        "storage" => 3,
        _ => 4,
    };
    assert!(
        types.windows(2).all(|w| rank(w[0]) <= rank(w[1])),
        "{types:?}"
    );
    assert_eq!(types[0], "pool");
    let vmids: Vec<String> = items
        .iter()
        .filter_map(|e| e["vmid"].as_u64())
        .map(|v| v.to_string())
        .collect();
    let mut sorted = vmids.clone();
    sorted.sort();
    assert_eq!(vmids, sorted);

    let by_id = |id: &str| items.iter().find(|e| e["id"] == id).unwrap().clone();
    let paused = by_id("qemu/102");
    assert_eq!(paused["status"], "paused");
    assert!(paused["vmid"].is_u64() && paused["cpu"].is_number());
    let web = by_id("qemu/100");
    assert_eq!(web["tags"], "prod;web");
    assert_eq!(web["hastate"], "started");
    assert_eq!(web["template"], 0);
    assert_eq!(web["pool"], "production");
    assert!(web["cpu"].is_f64() && web["maxmem"].is_u64());
    assert_eq!(by_id("qemu/103")["lock"], "backup");
    assert_eq!(by_id("qemu/900")["template"], 1);
    let offline = by_id("qemu/105");
    assert_eq!(offline["status"], "unknown");
    assert!(offline.get("name").is_none() && offline.get("template").is_none());
    assert_eq!(by_id("lxc/109")["status"], "unknown");
    assert!(by_id("qemu/104").get("lock").is_none());
    assert_eq!(by_id("qemu/104")["cpu"], 0);
    assert_eq!(by_id("node/pve3")["status"], "offline");
    assert_eq!(by_id("node/pve1")["cgroup-mode"], 2);
    assert_eq!(by_id("storage/pve3/local")["status"], "unknown");
    assert_eq!(by_id("storage/pve1/nfs-backup")["shared"], 1);

    let vms = get(&sim, "/api2/json/cluster/resources?type=vm", ADMIN)
        .await
        .data();
    assert!(
        vms.as_array()
            .unwrap()
            .iter()
            .all(|e| e["type"] == "qemu" || e["type"] == "lxc")
    );
    let st = get(&sim, "/api2/json/cluster/resources?type=storage", ADMIN)
        .await
        .data();
    assert_eq!(st.as_array().unwrap().len(), 12, "4 storages x 3 nodes");

    let r = get(&sim, "/api2/json/cluster/resources?type=bogus", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.reason.as_deref(), Some("Parameter verification failed."));
    assert_eq!(
        r.json(),
        serde_json::json!({
            "data": null,
            "message": "Parameter verification failed.\n",
            "errors": {"type": "value 'bogus' does not have a value in the enumeration 'vm, storage, node, sdn'"}
        })
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn guest_status_typing_quirks() {
    let sim = start().await;
    let q = |id: u32, node: &'static str| {
        let sim = sim.clone();
        async move {
            get(
                &sim,
                &format!("/api2/json/nodes/{node}/qemu/{id}/status/current"),
                ADMIN,
            )
            .await
            .data()
        }
    };
    let web = q(100, "pve1").await;
    assert_eq!(web["status"], "running");
    assert_eq!(web["qmpstatus"], "running");
    assert_eq!(web["agent"], 1);
    assert_eq!(
        web["ha"],
        serde_json::json!({"managed": 1, "state": "started", "group": "prod-ha"})
    );
    assert!(web.get("template").is_none() && web.get("lock").is_none());
    assert!(web.get("type").is_none());
    assert!(web["pid"].is_u64() && web["vmid"].is_u64());
    assert!(web["cpu"].is_f64());
    for k in [
        "running-qemu",
        "running-machine",
        "nics",
        "ballooninfo",
        "proxmox-support",
        "blockstat",
    ] {
        assert!(web.get(k).is_some(), "{k}");
    }
    assert_eq!(web["proxmox-support"]["pbs-dirty-bitmap"], true);
    assert!(web["nics"].get("tap100i0").is_some());

    let db = q(101, "pve1").await;
    assert!(db.get("agent").is_none());
    assert_eq!(db["ha"], serde_json::json!({"managed": 0}));
    assert!(db.get("balloon_min").is_none());

    let paused = q(102, "pve2").await;
    assert_eq!(paused["status"], "running");
    assert_eq!(paused["qmpstatus"], "paused");
    assert_eq!(q(103, "pve2").await["lock"], "backup");

    let tmpl = q(900, "pve1").await;
    assert_eq!(tmpl["template"], 1);
    assert_eq!(tmpl["status"], "stopped");
    assert_eq!(tmpl["qmpstatus"], "stopped");
    assert!(tmpl.get("pid").is_none() && tmpl.get("running-qemu").is_none());
    assert_eq!(tmpl["cpu"], 0);
    assert_eq!(q(110, "pve2").await["name"], "VM 110");

    let ct = get(&sim, "/api2/json/nodes/pve1/lxc/200/status/current", ADMIN)
        .await
        .data();
    assert_eq!(ct["type"], "lxc");
    assert_eq!(ct["template"], 1);
    assert_eq!(ct["ha"], serde_json::json!({"managed": 0}));
    for k in ["maxswap", "swap", "cpus", "disk", "maxdisk"] {
        assert!(ct.get(k).is_some(), "{k}");
    }
    let ct = get(
        &sim,
        "/api2/json/nodes/localhost/lxc/106/status/current",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(ct["status"], "running");
    assert_eq!(ct["tags"], "infra");
    sim.shutdown().await;
}

#[tokio::test]
async fn error_shapes() {
    let sim = start().await;
    let r = get(&sim, "/api2/json/nodes/pve1/qemu/123/status/current", ADMIN).await;
    assert_eq!(r.status, 500);
    let msg = "Configuration file 'nodes/pve1/qemu-server/123.conf' does not exist";
    assert_eq!(r.reason.as_deref(), Some(msg));
    assert_eq!(
        r.json(),
        serde_json::json!({"data": null, "message": format!("{msg}\n")})
    );
    assert_eq!(r.headers.get("connection").unwrap(), "close");

    // Right VM, wrong node or wrong type: PVE looks in that node's directory.
    let r = get(&sim, "/api2/json/nodes/pve2/qemu/100/status/current", ADMIN).await;
    assert_eq!(
        r.reason.as_deref(),
        Some("Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist")
    );
    let r = get(&sim, "/api2/json/nodes/pve1/lxc/100/status/current", ADMIN).await;
    assert_eq!(
        r.reason.as_deref(),
        Some("Configuration file 'nodes/pve1/lxc/100.conf' does not exist")
    );

    let r = get(&sim, "/api2/json/nodes/pve1/bogus", ADMIN).await;
    assert_eq!(r.status, 501);
    assert_eq!(
        r.reason.as_deref(),
        Some("Method 'GET /nodes/pve1/bogus' not implemented")
    );
    assert_eq!(
        r.json()["message"],
        "Method 'GET /nodes/pve1/bogus' not implemented"
    );

    let r = get(&sim, "/api2/json/nodes/pve3/status", ADMIN).await;
    assert_eq!(r.status, 595);
    assert_eq!(r.reason.as_deref(), Some("Connection refused"));
    assert!(r.body.is_empty());
    let r = get(&sim, "/api2/json/nodes/pve3/qemu/105/status/current", ADMIN).await;
    assert_eq!(r.status, 595);

    let r = get(&sim, "/api2/json/nodes/nosuch/status", ADMIN).await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.reason.as_deref(),
        Some(
            "hostname lookup 'nosuch' failed - failed to get address info for: nosuch: \
             Name or service not known"
        )
    );

    let r = get(&sim, "/api2/json/nodes/pve1/qemu/abc/status/current", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["vmid"],
        "type check ('integer') failed - got 'abc'"
    );
    let r = get(&sim, "/api2/json/nodes/pve1/qemu/99/status/current", ADMIN).await;
    assert_eq!(
        r.json()["errors"]["vmid"],
        "invalid format - value does not look like a valid VM ID\n"
    );
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/100/status/current?vmid=101",
        ADMIN,
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["vmid"],
        "duplicate parameter (already defined in URI) with conflicting values!"
    );
    let r = get(&sim, "/api2/json/version?foo=1&_dc=123", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        keys(&r.json()["errors"]),
        BTreeSet::from(["foo".to_string()])
    );

    let r = get(&sim, "/index.html", ADMIN).await;
    assert_eq!(r.status, 501);
    assert_eq!(r.reason.as_deref(), Some("no such file '/index.html'"));
    sim.shutdown().await;

    let old = Simulator::start(SimConfig {
        message_in_body: false,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let r = get(&old, "/api2/json/nodes/pve1/qemu/123/status/current", ADMIN).await;
    assert_eq!(r.json(), serde_json::json!({"data": null}));
    let r = get(&old, "/api2/json/cluster/resources?type=x", ADMIN).await;
    assert!(
        r.json()["errors"]["type"]
            .as_str()
            .unwrap()
            .contains("enumeration")
    );
    assert!(r.json().get("message").is_none());
    old.shutdown().await;
}

#[tokio::test]
async fn nodes_version_and_cluster_status() {
    let sim = start().await;
    let v = get(&sim, "/api2/json/version", ADMIN).await;
    assert_eq!(
        v.headers.get("content-type").unwrap(),
        "application/json;charset=UTF-8"
    );
    assert_eq!(v.headers.get("server").unwrap(), "pve-api-daemon/3.0");
    assert_eq!(v.headers.get("cache-control").unwrap(), "max-age=0");
    let v = v.data();
    assert_eq!(
        keys(&v),
        BTreeSet::from(["release", "repoid", "version"].map(String::from))
    );

    let nodes = get(&sim, "/api2/json/nodes", ADMIN).await.data();
    let nodes = nodes.as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    for n in nodes {
        assert_eq!(n["ssl_fingerprint"], sim.leaf_fingerprint().as_str());
    }
    assert_eq!(nodes[0]["status"], "online");
    assert!(nodes[0]["cpu"].is_f64() && nodes[0]["maxcpu"].is_u64());
    assert_eq!(nodes[2]["status"], "offline");
    assert!(nodes[2].get("uptime").is_none());

    let st = get(&sim, "/api2/json/cluster/status", ADMIN).await.data();
    let st = st.as_array().unwrap();
    assert_eq!(
        st[0],
        serde_json::json!({"type": "cluster", "id": "cluster", "name": "demo-cluster",
            "nodes": 3, "version": 3, "quorate": 1})
    );
    assert_eq!(st[1]["local"], 1);
    assert_eq!(st[2]["local"], 0);
    assert_eq!(st[3]["online"], 0);

    let ns = get(&sim, "/api2/json/nodes/pve2/status", ADMIN)
        .await
        .data();
    assert_eq!(ns["cpuinfo"]["hvm"], "1");
    assert!(ns["loadavg"][0].is_string());
    assert!(
        ns["pveversion"]
            .as_str()
            .unwrap()
            .starts_with("pve-manager/")
    );
    assert_eq!(ns["boot-info"]["mode"], "legacy-bios");
    sim.shutdown().await;
}

#[tokio::test]
async fn schema_validation_flags_bad_requests_only() {
    let Some(path) = schema_path() else {
        return;
    };
    let sim = Simulator::start(SimConfig {
        schema_path: Some(path),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    for p in [
        "/api2/json/",
        "/api2/json/version",
        "/api2/json/cluster/resources",
        "/api2/json/cluster/resources?type=vm",
        "/api2/json/cluster/status",
        "/api2/json/nodes",
        "/api2/json/nodes/pve1/status",
        "/api2/json/nodes/pve1/qemu?full=1",
        "/api2/json/nodes/pve1/qemu/100/status/current",
        "/api2/json/nodes/pve1/lxc/106/status/current",
    ] {
        assert_eq!(get(&sim, p, ADMIN).await.status, 200, "{p}");
    }
    assert_eq!(sim.schema_violations(), Vec::<String>::new());

    let r = get(&sim, "/api2/json/cluster/resources?type=bogus", ADMIN).await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()["errors"]["type"]
            .as_str()
            .unwrap()
            .contains("enumeration")
    );
    let r = get(&sim, "/api2/json/cluster/resources?unknown=1", ADMIN).await;
    assert_eq!(r.status, 400);
    let r = get(&sim, "/api2/json/nodes/pve1/qemu?full=true", ADMIN).await;
    assert_eq!(
        r.json()["errors"]["full"],
        "type check ('boolean') failed - got 'true'"
    );
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/0100/status/current",
        ADMIN,
    )
    .await;
    assert_eq!(r.status, 400);
    get(&sim, "/api2/json/no/such/path", ADMIN).await;
    let v = sim.schema_violations();
    eprintln!("{v:#?}");
    assert_eq!(v.len(), 5, "{v:#?}");
    assert!(v[0].starts_with("GET /cluster/resources: type: value 'bogus'"));
    assert!(v[1].contains("unknown: property is not defined in schema"));
    assert!(v[4].contains("no such path"));
    sim.shutdown().await;
}
