//! HA resources, groups and rules over real HTTPS: writes, the simulated
//! HA manager moving services, and the PVE 8 and PVE 9 forms.

use serde_json::{Value, json};

use super::calls::*;
use super::*;
use crate::testing::wait_until;

/// The `service:<sid>` row of `/cluster/ha/status/current`.
async fn service(sim: &Simulator, sid: &str) -> Value {
    let all = data(sim, "/cluster/ha/status/current").await;
    all.as_array()
        .unwrap()
        .iter()
        .find(|e| e["sid"] == sid)
        .cloned()
        .unwrap_or(Value::Null)
}

/// Waits until the service's verbose state is `state`; returns the row.
async fn service_reaches(sim: &Simulator, sid: &str, state: &str) -> Value {
    wait_until(
        format!("{sid} to be {state}"),
        Duration::from_secs(20),
        async || {
            let row = service(sim, sid).await;
            (row["state"] == state).then_some(row)
        },
    )
    .await
}

/// The tasks of one type for a vmid on a node, as `root@pam` ran them.
async fn lrm_tasks(sim: &Simulator, node: &str, ty: &str, vmid: u32) -> Vec<Value> {
    let l = data(
        sim,
        &format!("/nodes/{node}/tasks?typefilter={ty}&vmid={vmid}&source=all"),
    )
    .await;
    l.as_array()
        .unwrap()
        .iter()
        .filter(|t| t["user"] == "root@pam")
        .cloned()
        .collect()
}

fn digest(v: &Value) -> String {
    let d = v["digest"].as_str().expect("a digest").to_string();
    assert!(
        d.len() == 40 && d.bytes().all(|b| b.is_ascii_hexdigit()),
        "{d}"
    );
    d
}

#[tokio::test]
async fn resources_are_added_changed_and_removed() {
    let sim = sim().await;
    let r = data(&sim, "/cluster/ha/resources/vm:100").await;
    let d0 = digest(&r);
    assert_eq!(
        r,
        json!({"sid": "vm:100", "type": "vm", "state": "started", "group": "prod-ha",
               "max_restart": 1, "max_relocate": 1, "failback": 1,
               "comment": "customer-facing web tier", "digest": d0})
    );
    // A bare vmid names the guest's service.
    assert_eq!(
        data(&sim, "/cluster/ha/resources/106").await["sid"],
        "ct:106"
    );
    let list = data(&sim, "/cluster/ha/resources").await;
    assert!(list.as_array().unwrap().iter().all(|e| e["digest"] == d0));

    // Add the stopped CT 108 without a state: the HA manager starts it.
    sim.set_task_duration_for("vzstart", Duration::from_secs(2));
    let r = post(
        &sim,
        "/cluster/ha/resources",
        "sid=108&comment=CI%20runner&max_restart=2",
    )
    .await;
    assert_eq!(r.data(), Value::Null);
    let cfg = data(&sim, "/cluster/ha/resources/ct:108").await;
    let d1 = digest(&cfg);
    assert_ne!(d0, d1);
    assert_eq!(
        cfg,
        json!({"sid": "ct:108", "type": "ct", "comment": "CI runner", "max_restart": 2,
               "digest": d1})
    );
    let row = service(&sim, "ct:108").await;
    assert_eq!(
        (&row["crm_state"], &row["state"], &row["request_state"]),
        (&json!("started"), &json!("starting"), &json!("started"))
    );
    assert_eq!(
        (&row["max_restart"], &row["max_relocate"], &row["comment"]),
        (&json!(2), &json!(1), &json!("CI runner"))
    );
    let row = service_reaches(&sim, "ct:108", "started").await;
    assert_eq!(row["status"], "ct:108 (pve1, started)");
    assert_eq!(status(&sim, 108), "running");
    assert_eq!(lrm_tasks(&sim, "pve1", "vzstart", 108).await.len(), 1);
    assert_eq!(sim.guest(108).unwrap().ha_state.as_deref(), Some("started"));

    // A stale digest is refused; the current one works.
    let r = put(
        &sim,
        "/cluster/ha/resources/ct:108",
        &format!("state=stopped&digest={d0}"),
    )
    .await;
    assert_eq!(
        (r.status, message(&r)),
        (
            500,
            "update resources config failed: detected modified configuration - file \
             changed by other user? Try again.\n"
                .to_string()
        )
    );
    sim.set_task_duration_for("vzshutdown", Duration::from_secs(2));
    let r = put(
        &sim,
        "/cluster/ha/resources/ct:108",
        &format!("state=stopped&digest={d1}&delete=comment,max_restart"),
    )
    .await;
    assert_eq!(r.data(), Value::Null);
    assert_eq!(service(&sim, "ct:108").await["crm_state"], "request_stop");
    service_reaches(&sim, "ct:108", "stopped").await;
    assert_eq!(status(&sim, 108), "stopped");
    assert_eq!(lrm_tasks(&sim, "pve1", "vzshutdown", 108).await.len(), 1);
    let cfg = data(&sim, "/cluster/ha/resources/ct:108").await;
    assert_eq!(cfg["state"], "stopped");
    assert!(cfg.get("comment").is_none() && cfg.get("max_restart").is_none());
    // `disabled` and `ignored`.
    assert_eq!(
        put(&sim, "/cluster/ha/resources/108", "state=disabled")
            .await
            .status,
        200
    );
    assert_eq!(service(&sim, "ct:108").await["state"], "disabled");
    assert_eq!(
        put(
            &sim,
            "/cluster/ha/resources/108",
            "state=ignored&failback=0"
        )
        .await
        .status,
        200
    );
    let row = service(&sim, "ct:108").await;
    assert_eq!(
        (&row["state"], row.get("crm_state"), &row["request_state"]),
        (&json!("ignored"), None, &json!("ignored"))
    );
    assert_eq!(
        data(&sim, "/cluster/ha/resources/ct:108").await["failback"],
        0
    );

    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "POST",
            "/cluster/ha/resources",
            "sid=vm:100",
            "create resource failed: resource ID 'vm:100' already defined\n",
        ),
        (
            "POST",
            "/cluster/ha/resources",
            "sid=999",
            "unable to detect SID from VMID - VM/CT 999 does not exist\n",
        ),
        (
            "POST",
            "/cluster/ha/resources",
            "sid=vm:999",
            "resource 'vm:999' does not exist in cluster\n",
        ),
        (
            "POST",
            "/cluster/ha/resources",
            "sid=vm:106",
            "resource 'vm:106' - guest with ID 106 is not a VM\n",
        ),
        (
            "POST",
            "/cluster/ha/resources",
            "sid=ct:101",
            "resource 'ct:101' - guest with ID 101 is not a container\n",
        ),
        (
            "POST",
            "/cluster/ha/resources",
            "sid=vm:101&type=ct",
            "types does not match\n",
        ),
        (
            "POST",
            "/cluster/ha/resources",
            "sid=foo:101",
            "unknown section type 'foo'\n",
        ),
        (
            "PUT",
            "/cluster/ha/resources/vm:101",
            "state=started",
            "update resources config failed: no such resource 'vm:101'\n",
        ),
        (
            "PUT",
            "/cluster/ha/resources/vm:100",
            "group=nope",
            "HA group 'nope' does not exist\n",
        ),
        (
            "PUT",
            "/cluster/ha/resources/vm:100",
            "delete=sid",
            "update resources config failed: no such option 'sid'\n",
        ),
        (
            "DELETE",
            "/cluster/ha/resources/vm:101",
            "",
            "cannot delete service 'vm:101', not HA managed!\n",
        ),
        (
            "GET",
            "/cluster/ha/resources/vm:101",
            "",
            "no such resource 'vm:101'\n",
        ),
    ];
    for (method, path, form, want) in cases {
        let r = match *method {
            "POST" => post(&sim, path, form).await,
            "PUT" => put(&sim, path, form).await,
            "DELETE" => delete(&sim, path).await,
            _ => get(&sim, &format!("/api2/json{path}"), ADMIN).await,
        };
        assert_eq!(
            (r.status, message(&r)),
            (500, want.to_string()),
            "{method} {path} {form}"
        );
    }

    // Removed: the guest stays as it is.
    assert_eq!(
        delete(&sim, "/cluster/ha/resources/ct:108").await.data(),
        Value::Null
    );
    assert_eq!(service(&sim, "ct:108").await, Value::Null);
    assert_eq!(sim.guest(108).unwrap().ha_state, None);
    let sids: Vec<Value> = data(&sim, "/cluster/ha/resources")
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["sid"].clone())
        .collect();
    assert_eq!(sids, [json!("vm:100"), json!("vm:103"), json!("ct:106")]);
    no_violations(&sim);
}

#[tokio::test]
async fn migrate_and_relocate_move_guests_over_time() {
    let sim = sim().await;
    // Long enough to see each step, even on a loaded machine.
    for ty in ["qmigrate", "vzshutdown", "vzmigrate"] {
        sim.set_task_duration_for(ty, Duration::from_secs(2));
    }
    let r = post(&sim, "/cluster/ha/resources/vm:100/migrate", "node=pve2").await;
    assert_eq!(r.data(), json!({"sid": "vm:100", "requested-node": "pve2"}));
    // The HA manager moves it: `migrate` on the old node for a while.
    let row = service(&sim, "vm:100").await;
    assert_eq!(
        (
            &row["state"],
            &row["crm_state"],
            &row["node"],
            &row["status"]
        ),
        (
            &json!("migrate"),
            &json!("migrate"),
            &json!("pve1"),
            &json!("vm:100 (pve1, migrate)")
        )
    );
    assert_eq!(sim.guest(100).unwrap().lock.as_deref(), Some("migrate"));
    let row = service_reaches(&sim, "vm:100", "started").await;
    assert_eq!(row["node"], "pve2");
    let g = sim.guest(100).unwrap();
    assert_eq!(
        (g.node.as_str(), g.status, g.lock),
        ("pve2", "running", None)
    );
    let t = lrm_tasks(&sim, "pve1", "qmigrate", 100).await;
    assert_eq!((t.len(), &t[0]["status"]), (1, &json!("OK")));
    let log = get(
        &sim,
        &format!(
            "/api2/json/nodes/pve1/tasks/{}/log",
            t[0]["upid"].as_str().unwrap()
        ),
        ADMIN,
    )
    .await
    .data();
    assert!(
        log[0]["t"]
            .as_str()
            .unwrap()
            .ends_with("starting migration of VM 100 to node 'pve2' (192.0.2.12)"),
        "{log}"
    );
    // prod-ha holds pve1 and pve2 at the same priority: it stays there.
    assert_eq!(sim.guest(100).unwrap().node, "pve2");

    // A relocation stops, moves and starts it again; so does a CT's
    // migration.
    let r = post(&sim, "/cluster/ha/resources/106/relocate", "node=pve2").await;
    assert_eq!(r.data(), json!({"sid": "ct:106", "requested-node": "pve2"}));
    assert_eq!(service(&sim, "ct:106").await["state"], "relocate");
    let row = service_reaches(&sim, "ct:106", "started").await;
    assert_eq!(row["node"], "pve2");
    assert_eq!(status(&sim, 106), "running");
    for (node, ty) in [
        ("pve1", "vzshutdown"),
        ("pve1", "vzmigrate"),
        ("pve2", "vzstart"),
    ] {
        assert_eq!(lrm_tasks(&sim, node, ty, 106).await.len(), 1, "{ty}");
    }

    // The CRM ignores commands to a node that is not online (unknown or
    // offline) or that the service is on; PVE's API accepts them.
    let before = sim.requests().len();
    for node in ["pve9", "pve3", "pve2"] {
        let r = post(
            &sim,
            "/cluster/ha/resources/vm:100/migrate",
            &format!("node={node}"),
        )
        .await;
        assert_eq!(r.data()["requested-node"], node);
        let row = service(&sim, "vm:100").await;
        assert_eq!(
            (&row["state"], &row["node"]),
            (&json!("started"), &json!("pve2"))
        );
    }
    assert!(sim.requests().len() > before);
    assert!(sim.running_tasks().is_empty());

    // VM 103 is locked by its backup: the migration fails, it stays.
    let r = post(&sim, "/cluster/ha/resources/vm:103/migrate", "node=pve1").await;
    assert_eq!(r.status, 200);
    wait_until(
        "the failed migration",
        Duration::from_secs(20),
        async || {
            let t = lrm_tasks(&sim, "pve2", "qmigrate", 103).await;
            t.first()
                .filter(|t| t["status"] == "VM is locked (backup)")
                .cloned()
        },
    )
    .await;
    let row = service_reaches(&sim, "vm:103", "started").await;
    assert_eq!(row["node"], "pve2");

    // Only HA-managed services; node names as the schema wants them.
    let r = post(&sim, "/cluster/ha/resources/vm:101/migrate", "node=pve2").await;
    assert_eq!(
        (r.status, message(&r)),
        (500, "resource 'vm:101' is not HA managed\n".to_string())
    );
    let r = post(&sim, "/cluster/ha/resources/vm:100/relocate", "node=pve_2").await;
    assert_eq!(
        r.json()["errors"]["node"],
        "invalid format - value does not look like a valid node name\n"
    );
    let r = post(&sim, "/cluster/ha/resources/vm:100/migrate", "").await;
    assert_eq!(
        r.json()["errors"]["node"],
        "property is missing and it is not optional"
    );

    // The guest's own migrate endpoint queues the same command.
    let t = run(
        &sim,
        post(&sim, "/nodes/pve2/qemu/100/migrate", "target=pve1&online=1").await,
    )
    .await;
    assert_eq!(t.task_type, "hamigrate");
    assert_eq!(service(&sim, "vm:100").await["state"], "migrate");
    service_reaches(&sim, "vm:100", "started").await;
    assert_eq!(sim.guest(100).unwrap().node, "pve1");
    only_violations(
        &sim,
        &[
            "POST /cluster/ha/resources/vm:100/relocate: node:",
            "POST /cluster/ha/resources/vm:100/migrate: node:",
        ],
    );
}

#[tokio::test]
async fn groups_and_rules_on_pve9() {
    let sim = sim().await;
    // PVE 9.1 with pve3 down: the groups are not migrated yet.
    let groups = data(&sim, "/cluster/ha/groups").await;
    let gd = digest(&groups[0]);
    assert_eq!(
        groups,
        json!([
            {"group": "prefer-pve2", "type": "group", "nodes": "pve2:2,pve1:1",
             "nofailback": 1, "comment": "pve2 first; stays where it was moved to",
             "digest": gd},
            {"group": "prod-ha", "type": "group", "nodes": "pve1,pve2", "restricted": 1,
             "digest": gd},
        ])
    );
    assert_eq!(data(&sim, "/cluster/ha/groups/prod-ha").await, groups[1]);
    let rules = data(&sim, "/cluster/ha/rules").await;
    let rd = digest(&rules[0]);
    assert_eq!(
        rules,
        json!([{"rule": "ha-group-prod-ha", "type": "node-affinity", "nodes": "pve1,pve2",
                "strict": 1, "resources": "vm:100,vm:103", "order": 1,
                "comment": "Generated from HA group 'prod-ha'.", "digest": rd}])
    );
    assert_eq!(
        data(&sim, "/cluster/ha/rules?resource=ct:106").await,
        json!([])
    );
    assert_eq!(
        data(&sim, "/cluster/ha/rules/ha-group-prod-ha").await,
        rules[0]
    );
    let r = post(
        &sim,
        "/cluster/ha/rules",
        "rule=apart&type=resource-affinity&affinity=negative&resources=vm:100,vm:103",
    )
    .await;
    assert_eq!(
        message(&r),
        "cannot create ha rule: ha groups have not been migrated yet\n"
    );
    // Group writes still work.
    assert_eq!(
        post(
            &sim,
            "/cluster/ha/groups",
            "group=solo&nodes=pve1&restricted=1"
        )
        .await
        .status,
        200
    );
    let r = post(&sim, "/cluster/ha/groups", "group=solo&nodes=pve2").await;
    assert_eq!(
        message(&r),
        "create ha group failed: ha group ID 'solo' already defined\n"
    );
    let r = delete(&sim, "/cluster/ha/groups/prod-ha").await;
    assert_eq!(
        message(&r),
        "delete ha group failed: ha group is used by service 'vm:100'\n"
    );
    assert_eq!(delete(&sim, "/cluster/ha/groups/solo").await.status, 200);

    // Once migrated: rules, no groups.
    assert!(sim.migrate_ha_groups());
    let r = get(&sim, "/api2/json/cluster/ha/groups", ADMIN).await;
    assert_eq!(
        message(&r),
        "cannot index groups: ha groups have been migrated to rules\n"
    );
    let r = get(&sim, "/api2/json/cluster/ha/groups/prod-ha", ADMIN).await;
    assert_eq!(
        message(&r),
        "cannot read group: ha groups have been migrated to rules\n"
    );
    let rules = data(&sim, "/cluster/ha/rules").await;
    assert_eq!(rules.as_array().unwrap().len(), 1);
    assert_eq!(rules[0]["rule"], "ha-group-prod-ha");
    assert_ne!(digest(&rules[0]), rd);
    assert!(
        data(&sim, "/cluster/ha/resources/vm:100")
            .await
            .get("group")
            .is_none()
    );
    assert!(service(&sim, "vm:100").await.get("group").is_none());
    let r = post(&sim, "/cluster/ha/resources", "sid=108&group=prod-ha").await;
    assert_eq!(
        message(&r),
        "invalid parameter 'group': ha groups have been migrated to rules\n"
    );

    // Negative affinity: VM 103 on pve2 blocks VM 100 from going there.
    let r = post(
        &sim,
        "/cluster/ha/rules",
        "rule=apart&type=resource-affinity&affinity=negative&resources=vm:100,vm:103\
         &comment=never%20together",
    )
    .await;
    assert_eq!(r.data(), Value::Null);
    let apart = data(&sim, "/cluster/ha/rules/apart").await;
    assert_eq!(
        (&apart["affinity"], &apart["resources"], &apart["order"]),
        (&json!("negative"), &json!("vm:100,vm:103"), &json!(2))
    );
    let r = post(&sim, "/cluster/ha/resources/vm:100/migrate", "node=pve2").await;
    assert_eq!(
        r.data(),
        json!({"sid": "vm:100", "requested-node": "pve2",
               "blocking-resources": [{"sid": "vm:103", "cause": "resource-affinity"}]})
    );
    assert_eq!(service(&sim, "vm:100").await["state"], "started");
    assert!(sim.running_tasks().is_empty());

    // Positive affinity: CT 106 goes along with VM 100.
    sim.set_task_duration_for("vzshutdown", Duration::from_secs(2));
    assert_eq!(delete(&sim, "/cluster/ha/rules/apart").await.status, 200);
    let r = post(
        &sim,
        "/cluster/ha/rules",
        "rule=together&type=resource-affinity&affinity=positive&resources=vm:100,ct:106",
    )
    .await;
    assert_eq!(r.status, 200);
    let r = post(&sim, "/cluster/ha/resources/vm:100/migrate", "node=pve2").await;
    assert_eq!(
        r.data(),
        json!({"sid": "vm:100", "requested-node": "pve2", "comigrated-resources": ["ct:106"]})
    );
    assert_eq!(service(&sim, "ct:106").await["state"], "migrate");
    service_reaches(&sim, "vm:100", "started").await;
    service_reaches(&sim, "ct:106", "started").await;
    assert_eq!(
        (sim.guest(100).unwrap().node, sim.guest(106).unwrap().node),
        ("pve2".to_string(), "pve2".to_string())
    );

    // Rule refusals.
    let r = post(
        &sim,
        "/cluster/ha/rules",
        "rule=pin&type=node-affinity&nodes=pve1&resources=vm:100",
    )
    .await;
    assert_eq!(
        message(&r),
        "create ha rule failed: 400 Rule 'pin' is invalid.\nresources: resource 'vm:100' \
         is already used in another node affinity rule\n"
    );
    let r = post(
        &sim,
        "/cluster/ha/rules",
        "rule=pin&type=node-affinity&nodes=pve1,pve7&resources=vm:101",
    )
    .await;
    assert_eq!(
        message(&r),
        "create ha rule failed: cannot use unmanaged resource(s) vm:101.\n"
    );
    let r = post(
        &sim,
        "/cluster/ha/rules",
        "rule=pin&type=node-affinity&nodes=pve1,pve7&resources=ct:106",
    )
    .await;
    assert_eq!(
        message(&r),
        "create ha rule failed: cannot use non-existent node(s) pve7.\n"
    );
    let r = post(
        &sim,
        "/cluster/ha/rules",
        "rule=pin&type=resource-affinity&nodes=pve1&resources=ct:106",
    )
    .await;
    assert_eq!(message(&r), "unexpected property 'nodes'\n");
    let r = put(
        &sim,
        "/cluster/ha/rules/together",
        "type=resource-affinity&digest=0000",
    )
    .await;
    assert_eq!(
        message(&r),
        "update HA rules failed: detected modified configuration - file changed by other \
         user? Try again.\n"
    );
    assert_eq!(
        put(
            &sim,
            "/cluster/ha/rules/together",
            "type=resource-affinity&disable=1"
        )
        .await
        .status,
        200
    );
    assert_eq!(data(&sim, "/cluster/ha/rules/together").await["disable"], 1);
    assert_eq!(
        put(
            &sim,
            "/cluster/ha/rules/together",
            "type=resource-affinity&delete=disable"
        )
        .await
        .status,
        200
    );
    assert!(
        data(&sim, "/cluster/ha/rules/together")
            .await
            .get("disable")
            .is_none()
    );

    // Removing a resource purges it from the rules; the rule left with one
    // resource is listed with its error, and cannot be changed so.
    assert_eq!(
        delete(&sim, "/cluster/ha/resources/ct:106").await.status,
        200
    );
    let together = data(&sim, "/cluster/ha/rules/together").await;
    assert_eq!(together["resources"], "vm:100");
    assert_eq!(
        together["errors"],
        json!({"resources": ["rule is ineffective as there are less than two resources"]})
    );
    let r = put(
        &sim,
        "/cluster/ha/rules/together",
        "type=resource-affinity&comment=x",
    )
    .await;
    assert_eq!(
        message(&r),
        "update HA rules failed: 400 Rule 'together' is invalid.\nresources: rule is \
         ineffective as there are less than two resources\n"
    );
    no_violations(&sim);
}

#[tokio::test]
async fn pve8_has_groups_and_no_rules() {
    let old = Simulator::start(SimConfig {
        pve_version: Some("8.0.9".into()),
        schema_path: schema_path(),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let groups = data(&old, "/cluster/ha/groups").await;
    assert_eq!(groups[1]["group"], "prod-ha");
    assert_eq!(groups[1]["restricted"], 1);
    for (method, path) in [
        ("GET", "/cluster/ha/rules"),
        ("GET", "/cluster/ha/rules/ha-group-prod-ha"),
    ] {
        let r = get(&old, &format!("/api2/json{path}"), ADMIN).await;
        assert_eq!(
            (r.status, r.reason.clone()),
            (
                501,
                Some(format!("Method '{method} {path}' not implemented"))
            )
        );
    }
    // Not even the auditor gets a 403 first.
    let r = as_auditor(
        &old,
        "POST",
        "/cluster/ha/rules",
        "rule=pinned&type=node-affinity&nodes=pve1&resources=vm:100",
    )
    .await;
    assert_eq!(r.status, 501);
    // No `failback` on PVE 8, in answers or requests; no `purge`.
    let r = data(&old, "/cluster/ha/resources/vm:100").await;
    assert!(r.get("failback").is_none() && r["group"] == "prod-ha");
    assert!(service(&old, "vm:100").await.get("failback").is_none());
    let r = post(&old, "/cluster/ha/resources", "sid=108&failback=0").await;
    assert_eq!(
        r.json()["errors"]["failback"],
        "property is not defined in schema and the schema does not allow additional properties"
    );
    let r = delete(&old, "/cluster/ha/resources/vm:100?purge=1").await;
    assert_eq!(r.status, 400);
    // Migrations answer null.
    old.set_task_duration_for("qmigrate", Duration::from_secs(2));
    let r = post(&old, "/cluster/ha/resources/vm:100/migrate", "node=pve2").await;
    assert_eq!(r.data(), Value::Null);
    service_reaches(&old, "vm:100", "migrate").await;
    service_reaches(&old, "vm:100", "started").await;
    assert_eq!(old.guest(100).unwrap().node, "pve2");
    // Groups are written as in PVE 8.
    let r = post(
        &old,
        "/cluster/ha/groups",
        "group=pve1-only&nodes=pve1&restricted=1&comment=pinned",
    )
    .await;
    assert_eq!(r.status, 200);
    let g = data(&old, "/cluster/ha/groups/pve1-only").await;
    let d = digest(&g);
    let r = put(
        &old,
        "/cluster/ha/groups/pve1-only",
        &format!("nodes=pve1:2,pve2&digest={d}&delete=comment"),
    )
    .await;
    assert_eq!(r.status, 200);
    let g = data(&old, "/cluster/ha/groups/pve1-only").await;
    assert_eq!(g["nodes"], "pve1:2,pve2");
    assert!(g.get("comment").is_none());
    let r = put(
        &old,
        "/cluster/ha/groups/pve1-only",
        &format!("comment=x&digest={d}"),
    )
    .await;
    assert_eq!(
        message(&r),
        "update ha group failed: detected modified configuration - file changed by other \
         user? Try again.\n"
    );
    // A service put in a group with a preferred node goes there.
    sim_assign_group(&old).await;
    assert_eq!(
        old.schema_violations(),
        Vec::<String>::new(),
        "PVE 8's own refusals are not the schema's"
    );
}

/// CT 106 joins the group preferring pve2 and is relocated there (with
/// `failback`, PVE's default).
async fn sim_assign_group(sim: &Simulator) {
    let r = put(sim, "/cluster/ha/resources/ct:106", "group=pve1-only").await;
    assert_eq!(r.status, 200);
    // pve1:2 is preferred and CT 106 is already there.
    assert_eq!(service(sim, "ct:106").await["state"], "started");
    sim.set_task_duration_for("vzshutdown", Duration::from_secs(2));
    let r = put(sim, "/cluster/ha/groups/pve1-only", "nodes=pve2:2,pve1").await;
    assert_eq!(r.status, 200);
    assert_eq!(service(sim, "ct:106").await["state"], "relocate");
    let row = service_reaches(sim, "ct:106", "started").await;
    assert_eq!(row["node"], "pve2");
    assert_eq!(row["group"], "pve1-only");
}

#[tokio::test]
async fn ha_parameters_and_privileges() {
    let sim = sim().await;
    let r = post(&sim, "/cluster/ha/resources", "sid=abc").await;
    assert_eq!(
        r.json()["errors"]["sid"],
        "invalid format - value does not look like a valid ha resource id\n"
    );
    let r = post(&sim, "/cluster/ha/resources", "sid=108&state=running").await;
    assert_eq!(
        r.json()["errors"]["state"],
        "value 'running' does not have a value in the enumeration 'started, stopped, \
         enabled, disabled, ignored'"
    );
    let r = post(&sim, "/cluster/ha/resources", "sid=108&max_restart=-1").await;
    assert_eq!(
        r.json()["errors"]["max_restart"],
        "value must have a minimum value of 0"
    );
    let r = put(&sim, "/cluster/ha/resources/vm:100", "node=pve2").await;
    assert_eq!(r.status, 400);
    assert!(r.json()["errors"]["node"].is_string());
    let r = post(&sim, "/cluster/ha/groups", "group=g1&nodes=pve_1").await;
    assert_eq!(
        r.json()["errors"]["nodes"],
        "invalid format - value does not look like a valid ha node\n"
    );
    let r = get(&sim, "/api2/json/cluster/ha/rules?type=location", ADMIN).await;
    assert_eq!(r.status, 400);
    assert!(sim.guest(108).unwrap().ha_state.is_none());

    // Reads need Sys.Audit on /, writes Sys.Console.
    for path in [
        "/cluster/ha/resources/vm:100",
        "/cluster/ha/groups",
        "/cluster/ha/rules",
    ] {
        let r = as_auditor(&sim, "GET", path, "").await;
        assert_eq!(
            (r.status, message(&r)),
            (403, "Permission check failed (/, Sys.Audit)\n".to_string()),
            "{path}"
        );
    }
    for (method, path, form) in [
        ("POST", "/cluster/ha/resources", "sid=108"),
        ("PUT", "/cluster/ha/resources/vm:100", "state=stopped"),
        ("DELETE", "/cluster/ha/resources/vm:100", ""),
        ("POST", "/cluster/ha/resources/vm:100/migrate", "node=pve2"),
        ("POST", "/cluster/ha/resources/vm:100/relocate", "node=pve2"),
        ("POST", "/cluster/ha/groups", "group=g1&nodes=pve1"),
    ] {
        let r = as_auditor(&sim, method, path, form).await;
        assert_eq!(
            (r.status, message(&r)),
            (
                403,
                "Permission check failed (/, Sys.Console)\n".to_string()
            ),
            "{method} {path}"
        );
    }
    assert_eq!(service(&sim, "vm:100").await["state"], "started");
    only_violations(
        &sim,
        &[
            "POST /cluster/ha/resources: sid:",
            "POST /cluster/ha/resources: state:",
            "POST /cluster/ha/resources: max_restart:",
            "PUT /cluster/ha/resources/vm:100: node:",
            "POST /cluster/ha/groups: nodes:",
            "GET /cluster/ha/rules: type:",
        ],
    );
}
