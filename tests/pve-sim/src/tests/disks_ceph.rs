//! Disks, SMART and Ceph status over real HTTPS.

use serde_json::{Value, json};

use super::calls::*;
use super::*;

fn devs(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|d| d["devpath"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn disks_with_health_and_wear() {
    let sim = sim().await;
    let l = data(&sim, "/nodes/pve2/disks/list").await;
    assert_eq!(
        devs(&l),
        ["/dev/nvme0n1", "/dev/sda", "/dev/sdb", "/dev/sdc"]
    );
    // The worn boot SSD.
    assert_eq!(
        l[1],
        json!({"devpath": "/dev/sda", "type": "ssd", "size": 500_107_862_016u64,
               "model": "Samsung SSD 860 EVO 500GB", "serial": "S3Z2NB0K712345X",
               "vendor": "ATA", "wwn": "0x5002538e4071a2b3", "gpt": 1, "rpm": 0,
               "health": "PASSED", "wearout": 4,
               "by_id_link": "/dev/disk/by-id/ata-Samsung_SSD_860_EVO_500GB_S3Z2NB0K712345X",
               "used": "BIOS boot", "osdid": -1, "osdid-list": null})
    );
    // The failing OSD disk.
    let sdb = &l[2];
    assert_eq!(
        (
            &sdb["health"],
            &sdb["wearout"],
            &sdb["used"],
            &sdb["osdid"],
            &sdb["type"]
        ),
        (
            &json!("FAILED!"),
            &json!("N/A"),
            &json!("LVM"),
            &json!(2),
            &json!("hdd")
        )
    );
    assert_eq!(sdb["osdid-list"], json!([2]));
    assert_eq!(l[0]["wearout"], 88);
    assert_eq!(l[0]["vendor"], "unknown");

    // Partitions, no SMART, unused disks.
    let p = data(
        &sim,
        "/nodes/pve1/disks/list?include-partitions=1&skipsmart=1",
    )
    .await;
    assert_eq!(
        devs(&p),
        [
            "/dev/nvme0n1",
            "/dev/sda",
            "/dev/sda1",
            "/dev/sda2",
            "/dev/sda3",
            "/dev/sdb",
            "/dev/sdc"
        ]
    );
    assert_eq!(
        (&p[1]["used"], &p[1]["health"]),
        (&json!("partitions"), &json!("UNKNOWN"))
    );
    assert_eq!(p[1]["wearout"], "N/A");
    assert_eq!(
        p[3],
        json!({"devpath": "/dev/sda2", "parent": "/dev/sda", "mounted": 1, "gpt": 1,
               "type": "partition", "size": 1_073_741_824u64, "used": "EFI",
               "osdid": -1, "osdid-list": null})
    );
    assert_eq!(
        data(&sim, "/nodes/pve1/disks/list?type=unused").await,
        json!([])
    );
    let j = data(&sim, "/nodes/pve1/disks/list?type=journal_disks").await;
    assert_eq!(devs(&j), ["/dev/nvme0n1"]);

    // The auditor holds no Sys.Audit: PVE's `or` check fails without details.
    let r = as_auditor(&sim, "GET", "/nodes/pve1/disks/list", "").await;
    assert_eq!(
        (r.status, message(&r)),
        (403, "Permission check failed\n".into())
    );
    let r = get(&sim, "/api2/json/nodes/pve1/disks/list?type=ssd", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        get(&sim, "/api2/json/nodes/pve3/disks/list", ADMIN)
            .await
            .status,
        595
    );
    only_violations(&sim, &["GET /nodes/pve1/disks/list: type:"]);
}

#[tokio::test]
async fn smart_data() {
    let sim = sim().await;
    let s = data(&sim, "/nodes/pve2/disks/smart?disk=/dev/sdb").await;
    assert_eq!(
        (&s["health"], &s["type"]),
        (&json!("FAILED!"), &json!("ata"))
    );
    let attrs = s["attributes"].as_array().unwrap();
    let realloc = attrs
        .iter()
        .find(|a| a["name"] == "Reallocated_Sector_Ct")
        .unwrap();
    assert_eq!(
        realloc,
        &json!({"id": "  5", "name": "Reallocated_Sector_Ct", "flags": "PO--CK", "value": 1,
                "normalized": 1, "worst": 1, "threshold": 140, "fail": "FAILING_NOW",
                "raw": "2008"})
    );
    let nvme = data(&sim, "/nodes/pve1/disks/smart?disk=/dev/nvme0n1").await;
    assert_eq!(
        (&nvme["type"], &nvme["wearout"]),
        (&json!("text"), &json!(97))
    );
    assert!(
        nvme["text"]
            .as_str()
            .unwrap()
            .contains("\nPercentage Used:                    3%\n")
    );
    assert!(nvme.get("attributes").is_none());
    assert_eq!(
        data(&sim, "/nodes/pve2/disks/smart?disk=/dev/sdb&healthonly=1").await,
        json!({"health": "FAILED!"})
    );
    // A device the node does not have; a path the schema refuses.
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/disks/smart?disk=/dev/sdz",
        ADMIN,
    )
    .await;
    assert_eq!(
        (r.status, message(&r)),
        (500, "not a valid block device\n".into())
    );
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/disks/smart?disk=/etc/passwd",
        ADMIN,
    )
    .await;
    assert_eq!(
        r.json()["errors"]["disk"],
        "value does not match the regex pattern"
    );
    let r = get(&sim, "/api2/json/nodes/pve1/disks/smart", ADMIN).await;
    assert_eq!(
        r.json()["errors"]["disk"],
        "property is missing and it is not optional"
    );
    let r = as_auditor(&sim, "GET", "/nodes/pve1/disks/smart?disk=/dev/sda", "").await;
    assert_eq!(message(&r), "Permission check failed (/, Sys.Audit)\n");
    only_violations(
        &sim,
        &[
            "GET /nodes/pve1/disks/smart: disk:",
            "GET /nodes/pve1/disks/smart: disk:",
        ],
    );
}

#[tokio::test]
async fn ceph_is_degraded_without_pve3() {
    let sim = sim().await;
    let s = data(&sim, "/cluster/ceph/status").await;
    assert_eq!(s["health"]["status"], "HEALTH_WARN");
    let checks = s["health"]["checks"].as_object().unwrap();
    let names: Vec<&str> = checks.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["MON_DOWN", "OSD_DOWN", "OSD_HOST_DOWN", "PG_DEGRADED"]
    );
    assert_eq!(
        checks["MON_DOWN"]["summary"]["message"],
        "1/3 mons down, quorum pve1,pve2"
    );
    assert_eq!(
        checks["OSD_DOWN"]["detail"][0]["message"],
        "osd.4 (root=default,host=pve3) is down"
    );
    assert!(
        checks["PG_DEGRADED"]["summary"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Degraded data redundancy: 37045/111135 objects degraded (33.333%)")
    );
    assert_eq!(s["quorum_names"], json!(["pve1", "pve2"]));
    let mons: Vec<&str> = s["monmap"]["mons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(mons, ["pve1", "pve2", "pve3"]);
    assert_eq!(
        (
            &s["osdmap"]["num_osds"],
            &s["osdmap"]["num_up_osds"],
            &s["osdmap"]["num_in_osds"]
        ),
        (&json!(6), &json!(4), &json!(4))
    );
    assert_eq!(
        s["pgmap"]["pgs_by_state"],
        json!([{"state_name": "active+undersized+degraded", "count": 129}])
    );
    assert_eq!(s["pgmap"]["num_pgs"], 129);
    let pg = &s["pgmap"];
    assert_eq!(
        pg["bytes_total"].as_u64().unwrap(),
        pg["bytes_used"].as_u64().unwrap() + pg["bytes_avail"].as_u64().unwrap()
    );
    assert!(s["fsid"].as_str().unwrap().len() == 36);
    // The node alias answers the same (proxied, so not from pve3).
    let n = data(&sim, "/nodes/pve2/ceph/status").await;
    assert_eq!(n["health"]["checks"], s["health"]["checks"]);
    assert_eq!(
        get(&sim, "/api2/json/nodes/pve3/ceph/status", ADMIN)
            .await
            .status,
        595
    );
    let r = as_auditor(&sim, "GET", "/cluster/ceph/status", "").await;
    assert_eq!(
        message(&r),
        "Permission check failed (/, Sys.Audit|Datastore.Audit)\n"
    );
    no_violations(&sim);

    // The lab runs no Ceph.
    let lab = Simulator::start(SimConfig {
        cluster: ClusterFlavor::Secondary,
        schema_path: schema_path(),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let auth = format!("PVEAPIToken={LAB_TOKEN_ID}={LAB_TOKEN_SECRET}");
    for path in ["/cluster/ceph/status", "/nodes/lab1/ceph/status"] {
        let r = get(&lab, &format!("/api2/json{path}"), &auth).await;
        assert_eq!(
            (r.status, message(&r)),
            (500, "binary not installed: /usr/bin/ceph-mon\n".into()),
            "{path}"
        );
    }
    no_violations(&lab);
}
