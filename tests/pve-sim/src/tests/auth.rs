//! Authentication, permissions and tickets.

use super::*;

#[tokio::test]
async fn auth_failures_have_empty_bodies() {
    let sim = start().await;
    let r = send(&sim, "GET", "/api2/json/version", &[], None).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.reason.as_deref(), Some("No ticket"));
    assert!(r.body.is_empty());
    assert_eq!(r.headers.get("content-length").unwrap(), "0");

    for bad in [
        "PVEAPIToken=root@pam!mcp=wrong",
        "PVEAPIToken=nobody@pve!x=5d3b1f2e-8c4a-4e6f-9b7d-0a1c2e3f4a5b",
        "PVEAPIToken=garbage",
    ] {
        let r = get(&sim, "/api2/json/version", bad).await;
        assert_eq!(r.status, 401, "{bad}");
        assert_eq!(r.reason.as_deref(), Some("Authentication failed!"));
        assert!(r.body.is_empty());
    }

    // A space instead of the first `=` and URI escaping are accepted.
    let alt = "PVEAPIToken root%40pam!mcp=5d3b1f2e-8c4a-4e6f-9b7d-0a1c2e3f4a5b";
    assert_eq!(get(&sim, "/api2/json/version", alt).await.status, 200);

    let log = sim.requests();
    assert_eq!(log[0].auth, AuthSeen::None);
    assert_eq!(
        log[1].auth,
        AuthSeen::Token {
            token_id: "root@pam!mcp".into(),
            secret_ok: false
        }
    );
    assert_eq!(
        log.last().unwrap().auth,
        AuthSeen::Token {
            token_id: "root@pam!mcp".into(),
            secret_ok: true
        }
    );
    let r = get(&sim, "/api2/json/version", "Basic cm9vdDpwdw==").await;
    assert_eq!(r.status, 401);
    assert_eq!(sim.requests().last().unwrap().auth, AuthSeen::Other);
    sim.shutdown().await;
}

#[tokio::test]
async fn auditor_is_checked_before_the_handler_and_lists_filter() {
    let sim = start().await;
    let r = get(
        &sim,
        "/api2/json/nodes/pve2/qemu/102/status/current",
        AUDITOR,
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission check failed (/vms/102, VM.Audit)")
    );
    assert_eq!(
        r.json(),
        serde_json::json!({"data": null, "message": "Permission check failed (/vms/102, VM.Audit)\n"})
    );
    // A VM that does not exist still fails the check first.
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/555/status/current",
        AUDITOR,
    )
    .await;
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission check failed (/vms/555, VM.Audit)")
    );
    let r = get(&sim, "/api2/json/cluster/status", AUDITOR).await;
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission check failed (/, Sys.Audit)")
    );
    let r = get(&sim, "/api2/json/nodes/pve1/status", AUDITOR).await;
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission check failed (/nodes/pve1, Sys.Audit)")
    );
    assert_eq!(
        get(
            &sim,
            "/api2/json/nodes/pve1/qemu/100/status/current",
            AUDITOR
        )
        .await
        .data()["vmid"],
        100
    );

    let data = get(&sim, "/api2/json/cluster/resources", AUDITOR)
        .await
        .data();
    let items = data.as_array().unwrap();
    let vmids: Vec<u64> = items.iter().filter_map(|e| e["vmid"].as_u64()).collect();
    let expect: Vec<u64> = AUDITOR_VISIBLE_VMIDS
        .iter()
        .map(|v| u64::from(*v))
        .collect();
    assert_eq!(vmids, expect);
    let nodes: Vec<&Value> = items.iter().filter(|e| e["type"] == "node").collect();
    assert_eq!(nodes.len(), 3);
    for n in nodes {
        let k = keys(n);
        assert!(
            k.is_subset(
                &["id", "node", "type", "status", "level"]
                    .map(String::from)
                    .into()
            )
        );
    }
    assert!(
        items
            .iter()
            .all(|e| e["type"] != "storage" && e["type"] != "pool")
    );

    let nodes = get(&sim, "/api2/json/nodes", AUDITOR).await.data();
    assert!(
        nodes
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n.get("maxmem").is_none()
                && n["ssl_fingerprint"] == sim.leaf_fingerprint().as_str())
    );
    let qemu = get(&sim, "/api2/json/nodes/pve1/qemu", AUDITOR)
        .await
        .data();
    let ids: BTreeSet<u64> = qemu
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["vmid"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, BTreeSet::from([100, 101]));
    sim.shutdown().await;
}

#[tokio::test]
async fn ticket_login_cookie_and_csrf() {
    let sim = Simulator::start(SimConfig {
        ticket_lifetime: Duration::from_secs(3),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let form = format!("username={TICKET_USER}&password={TICKET_PASSWORD}");
    let r = send(
        &sim,
        "POST",
        "/api2/json/access/ticket",
        &[],
        Some(("application/x-www-form-urlencoded", form.as_bytes())),
    )
    .await;
    let d = r.data();
    assert_eq!(d["username"], "root@pam");
    assert_eq!(d["clustername"], "demo-cluster");
    assert_eq!(d["cap"]["vms"]["VM.Audit"], 1);
    let ticket = d["ticket"].as_str().unwrap().to_string();
    let csrf = d["CSRFPreventionToken"].as_str().unwrap().to_string();
    assert!(ticket.starts_with("PVE:root@pam:") && ticket.contains("::"));
    let (ts, _) = csrf.split_once(':').unwrap();
    assert_eq!(ts.len(), 8);

    let cookie = format!(
        "PVEAuthCookie={}",
        ticket.replace(':', "%3A").replace('@', "%40")
    );
    let r = send(
        &sim,
        "GET",
        "/api2/json/version",
        &[("cookie", &cookie)],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        sim.requests().last().unwrap().auth,
        AuthSeen::Ticket {
            user: "root@pam".into()
        }
    );
    // Non-GET needs the CSRF token; with it the request reaches routing.
    let r = send(
        &sim,
        "POST",
        "/api2/json/nodes/pve1/nothing",
        &[("cookie", &cookie)],
        None,
    )
    .await;
    assert_eq!(r.status, 401);
    assert_eq!(
        r.reason.as_deref(),
        Some("Permission denied - invalid csrf token")
    );
    assert!(r.body.is_empty());
    let r = send(
        &sim,
        "POST",
        "/api2/json/nodes/pve1/nothing",
        &[("cookie", &cookie), ("CSRFPreventionToken", &csrf)],
        None,
    )
    .await;
    assert_eq!(r.status, 501);

    // Renewal: the ticket works as a password (JSON body this time).
    let body = serde_json::json!({"username": "root@pam", "password": ticket}).to_string();
    let r = send(
        &sim,
        "POST",
        "/api2/json/access/ticket",
        &[],
        Some(("application/json", body.as_bytes())),
    )
    .await;
    assert_eq!(r.status, 200);

    let r = send(
        &sim,
        "POST",
        "/api2/json/access/ticket",
        &[],
        Some((
            "application/x-www-form-urlencoded",
            b"username=root@pam&password=nope",
        )),
    )
    .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.reason.as_deref(), Some("authentication failure"));
    assert_eq!(r.json()["message"], "authentication failure\n");

    let r = send(
        &sim,
        "POST",
        "/api2/json/access/ticket",
        &[("authorization", ADMIN)],
        Some(("application/x-www-form-urlencoded", form.as_bytes())),
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.reason.as_deref(),
        Some("URI '/access/ticket' not available with API token, need proper ticket.")
    );

    // Letting the 3 s ticket expire is what is tested: no event to await.
    tokio::time::sleep(Duration::from_millis(4100)).await;
    let r = send(
        &sim,
        "GET",
        "/api2/json/version",
        &[("cookie", &cookie)],
        None,
    )
    .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.reason.as_deref(), Some("Authentication failed!"));
    sim.shutdown().await;
}
