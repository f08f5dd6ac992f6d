//! Resource pools over real HTTPS, as PVE 9, PVE 8.4 and PVE 8.0 serve
//! them.

use serde_json::{Value, json};

use super::calls::*;
use super::*;

fn member_ids(pool: &Value) -> Vec<&str> {
    pool["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect()
}

/// The guests `/cluster/resources` shows in a pool.
async fn resource_pool(sim: &Simulator, vmid: u32) -> Value {
    let all = data(sim, "/cluster/resources?type=vm").await;
    all.as_array()
        .unwrap()
        .iter()
        .find(|g| g["vmid"] == vmid)
        .map(|g| g["pool"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn pools_on_pve9() {
    let sim = sim().await;
    assert_eq!(
        data(&sim, "/pools").await,
        json!([{"poolid": "production", "comment": "Production workloads"}])
    );
    let p = data(&sim, "/pools?poolid=production").await;
    assert_eq!(p.as_array().unwrap().len(), 1);
    let p = &p[0];
    assert_eq!(
        (&p["poolid"], &p["comment"]),
        (&json!("production"), &json!("Production workloads"))
    );
    assert_eq!(
        member_ids(p),
        ["qemu/100", "qemu/101", "storage/pve1/nfs-backup"]
    );
    let vm = &p["members"][0];
    assert_eq!(
        (&vm["vmid"], &vm["node"], &vm["status"], &vm["name"]),
        (
            &json!(100),
            &json!("pve1"),
            &json!("running"),
            &json!("web-frontend-01")
        )
    );
    assert!(vm.get("pool").is_none() && vm.get("tags").is_none());
    assert_eq!(p["members"][2]["plugintype"], "nfs");
    let only = data(&sim, "/pools?poolid=production&type=storage").await;
    assert_eq!(member_ids(&only[0]), ["storage/pve1/nfs-backup"]);
    // The deprecated form answers the same object.
    let d = data(&sim, "/pools/production?type=qemu").await;
    assert_eq!(member_ids(&d), ["qemu/100", "qemu/101"]);
    assert_eq!(d["poolid"], "production");

    // Create (nested too), add, move, remove, delete.
    assert_eq!(
        post(&sim, "/pools", "poolid=staging&comment=Pre-production")
            .await
            .data(),
        Value::Null
    );
    assert_eq!(post(&sim, "/pools", "poolid=staging/web").await.status, 200);
    let r = put(&sim, "/pools", "poolid=staging&vms=104,108&storage=local").await;
    assert_eq!(r.data(), Value::Null);
    assert_eq!(resource_pool(&sim, 104).await, "staging");
    assert_eq!(sim.guest(108).unwrap().pool.as_deref(), Some("staging"));
    let r = put(&sim, "/pools", "poolid=staging&vms=101").await;
    assert_eq!(
        (r.status, message(&r)),
        (
            500,
            "update pools failed: VM 101 belongs already to pool 'production' and \
             'allow-move' is not set\n"
                .into()
        )
    );
    // Nothing of a refused update is written.
    let r = put(&sim, "/pools", "poolid=staging&vms=110,104").await;
    assert_eq!(
        message(&r),
        "update pools failed: VM 104 is already a pool member\n"
    );
    assert_eq!(resource_pool(&sim, 110).await, Value::Null);
    let r = put(&sim, "/pools", "poolid=staging&vms=101&allow-move=1").await;
    assert_eq!(r.status, 200);
    assert_eq!(resource_pool(&sim, 101).await, "staging");
    let p = data(&sim, "/pools?poolid=production").await;
    assert_eq!(member_ids(&p[0]), ["qemu/100", "storage/pve1/nfs-backup"]);
    let r = put(&sim, "/pools", "poolid=production&vms=104&delete=1").await;
    assert_eq!(
        message(&r),
        "update pools failed: VM 104 is not a pool member\n"
    );
    let r = put(&sim, "/pools", "poolid=production&storage=nfs-backup").await;
    assert_eq!(
        message(&r),
        "update pools failed: Storage 'nfs-backup' is already a pool member\n"
    );
    let r = put(&sim, "/pools/staging", "comment=QA").await;
    assert_eq!(r.status, 200);
    assert_eq!(data(&sim, "/pools/staging").await["comment"], "QA");

    // Delete: only empty pools, sub-pools first.
    let r = delete(&sim, "/pools?poolid=staging").await;
    assert_eq!(
        message(&r),
        "delete pool failed: pool 'staging' is not empty (contains pool 'staging/web')\n"
    );
    assert_eq!(delete(&sim, "/pools?poolid=staging/web").await.status, 200);
    let r = delete(&sim, "/pools/staging").await;
    assert_eq!(
        message(&r),
        "delete pool failed: pool 'staging' is not empty (contains VM 101)\n"
    );
    let r = put(&sim, "/pools", "poolid=staging&vms=101,104,108&delete=1").await;
    assert_eq!(r.status, 200);
    let r = delete(&sim, "/pools?poolid=staging").await;
    assert_eq!(
        message(&r),
        "delete pool failed: pool 'staging' is not empty (contains storage 'local')\n"
    );
    assert_eq!(
        put(&sim, "/pools", "poolid=staging&storage=local&delete=1")
            .await
            .status,
        200
    );
    assert_eq!(
        delete(&sim, "/pools?poolid=staging").await.data(),
        Value::Null
    );
    assert_eq!(
        data(&sim, "/pools").await,
        json!([{"poolid": "production", "comment": "Production workloads"}])
    );
    // A pool resource disappears with it.
    let res = data(&sim, "/cluster/resources").await;
    let pools: Vec<&Value> = res
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "pool")
        .collect();
    assert_eq!(
        pools,
        [&json!({"id": "/pool/production", "pool": "production", "type": "pool"})]
    );
    no_violations(&sim);
}

#[tokio::test]
async fn pool_refusals() {
    let sim = sim().await;
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "POST",
            "/pools",
            "poolid=production",
            "create pool failed: pool 'production' already exists\n",
        ),
        (
            "POST",
            "/pools",
            "poolid=9lives",
            "create pool failed: pool name must start with a letter\n",
        ),
        (
            "POST",
            "/pools",
            "poolid=dev/web",
            "create pool failed: parent 'dev' of pool 'dev/web' does not exist\n",
        ),
        (
            "PUT",
            "/pools",
            "poolid=nope&vms=100",
            "update pools failed: pool 'nope' does not exist\n",
        ),
        (
            "DELETE",
            "/pools?poolid=nope",
            "",
            "delete pool failed: pool 'nope' does not exist\n",
        ),
        (
            "DELETE",
            "/pools/production",
            "",
            "delete pool failed: pool 'production' is not empty (contains VM 100)\n",
        ),
        (
            "GET",
            "/pools?poolid=nope",
            "",
            "pool 'nope' does not exist\n",
        ),
        ("GET", "/pools/nope", "", "pool 'nope' does not exist\n"),
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
            "{method} {path}"
        );
    }
    // Schema: pool names, vmid lists, `type` needs `poolid`.
    let r = post(&sim, "/pools", "poolid=a%20b").await;
    assert_eq!(
        r.json()["errors"]["poolid"],
        "invalid format - pool name 'a b' contains invalid characters\n"
    );
    let r = post(&sim, "/pools", "poolid=a/b/c/d").await;
    assert_eq!(
        r.json()["errors"]["poolid"],
        "invalid format - pool name 'a/b/c/d' nested too deeply (max levels = 3)\n"
    );
    let r = put(&sim, "/pools", "poolid=production&vms=12").await;
    assert_eq!(r.status, 400);
    let r = get(&sim, "/api2/json/pools?type=qemu", ADMIN).await;
    assert_eq!(
        r.json()["errors"]["poolid"],
        "missing property - 'type' requires this property"
    );
    let r = delete(&sim, "/pools").await;
    assert_eq!(
        r.json()["errors"]["poolid"],
        "property is missing and it is not optional"
    );

    // The auditor: no Pool.Audit, so no pools listed and no /pools/{id};
    // PVE's `?poolid=` ignores its own check.
    let r = as_auditor(&sim, "GET", "/pools", "").await;
    assert_eq!(r.data(), json!([]));
    let r = as_auditor(&sim, "GET", "/pools/production", "").await;
    assert_eq!(
        message(&r),
        "Permission check failed (/pool/production, Pool.Audit)\n"
    );
    let r = as_auditor(&sim, "GET", "/pools?poolid=production", "").await;
    assert_eq!(r.data()[0]["poolid"], "production");
    let r = as_auditor(&sim, "POST", "/pools", "poolid=mine").await;
    assert_eq!(
        message(&r),
        "Permission check failed (/pool/mine, Pool.Allocate)\n"
    );
    only_violations(
        &sim,
        &[
            "POST /pools: poolid:",
            "POST /pools: poolid:",
            "PUT /pools: vms:",
            "GET /pools: poolid: missing property - 'type' requires this property",
            "DELETE /pools: poolid:",
        ],
    );
}

#[tokio::test]
async fn pools_by_release() {
    // PVE 8.4 (the lab): nested pools and `?poolid`, names may start with
    // a digit.
    let lab = Simulator::start(SimConfig {
        cluster: ClusterFlavor::Secondary,
        schema_path: schema_path(),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let auth = format!("PVEAPIToken={LAB_TOKEN_ID}={LAB_TOKEN_SECRET}");
    let call = async |sim: &Simulator, method: &str, path: &str, form: &str| {
        let body = (!form.is_empty()).then_some((FORM, form.as_bytes()));
        send(
            sim,
            method,
            &format!("/api2/json{path}"),
            &[("authorization", &auth)],
            body,
        )
        .await
    };
    let version = call(&lab, "GET", "/version", "").await.data();
    assert_eq!(
        version,
        json!({"version": "8.4.14", "release": "8.4", "repoid": "b502d23c55afcba1"})
    );
    assert_eq!(call(&lab, "GET", "/pools", "").await.data(), json!([]));
    assert_eq!(
        call(&lab, "POST", "/pools", "poolid=2026-lab").await.status,
        200
    );
    assert_eq!(
        call(&lab, "PUT", "/pools", "poolid=2026-lab&vms=300")
            .await
            .status,
        200
    );
    let p = call(&lab, "GET", "/pools?poolid=2026-lab", "").await.data();
    assert_eq!(member_ids(&p[0]), ["qemu/300"]);
    no_violations(&lab);

    // PVE 8.0: no nested pools, so no `?poolid`, `PUT` or `DELETE /pools`.
    let old = Simulator::start(SimConfig {
        pve_version: Some("8.0.9".into()),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    assert_eq!(data(&old, "/version").await["release"], "8.0");
    let r = get(&old, "/api2/json/pools?poolid=production", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["poolid"],
        "property is not defined in schema and the schema does not allow additional properties"
    );
    let r = put(&old, "/pools", "poolid=production&vms=104").await;
    assert_eq!(
        (r.status, r.reason.as_deref()),
        (501, Some("Method 'PUT /pools' not implemented"))
    );
    let r = delete(&old, "/pools?poolid=production").await;
    assert_eq!(r.status, 501);
    let r = post(&old, "/pools", "poolid=dev/web").await;
    assert_eq!(
        r.json()["errors"]["poolid"],
        "invalid format - pool name 'dev/web' contains invalid characters\n"
    );
    // The old forms work; GET /pools/{poolid} has no `poolid` key yet.
    assert_eq!(put(&old, "/pools/production", "vms=104").await.status, 200);
    let p = data(&old, "/pools/production").await;
    assert_eq!(
        member_ids(&p),
        [
            "qemu/100",
            "qemu/101",
            "qemu/104",
            "storage/pve1/nfs-backup"
        ]
    );
    assert!(p.get("poolid").is_none());
    assert_eq!(post(&old, "/pools", "poolid=9lives").await.status, 200);

    // A PVE 8 node answering for a PVE 9 cluster: its own release.
    let mixed = Simulator::start(SimConfig {
        pve8_nodes: vec!["pve1".into()],
        ..SimConfig::default()
    })
    .await
    .unwrap();
    assert_eq!(data(&mixed, "/version").await["version"], "8.4.14");
    assert_eq!(
        data(&mixed, "/nodes/pve2/status").await["pveversion"],
        "pve-manager/9.1.5/8f3a5c1e7b2d9046"
    );
    assert_eq!(post(&mixed, "/pools", "poolid=9lives").await.status, 200);
}
