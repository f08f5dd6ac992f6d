//! TLS, connections, faults, the request log and hostile input.

use super::*;

#[tokio::test]
async fn tls_fingerprint_and_keep_alive() {
    let sim = start().await;
    assert!(sim.base_url().starts_with("https://127.0.0.1:"));
    let fp = sim.leaf_fingerprint();
    let pairs: Vec<&str> = fp.split(':').collect();
    assert_eq!(pairs.len(), 32);
    assert!(pairs.iter().all(|p| {
        p.len() == 2
            && p.chars()
                .all(|c| c.is_ascii_digit() || ('A'..='F').contains(&c))
    }));

    // The served certificate is the one fingerprinted, and verifies for
    // every SAN PVE clients use.
    for host in ["localhost", "127.0.0.1", "pve1"] {
        let tls = tls_stream(&sim, host).await;
        let der = tls.get_ref().1.peer_certificates().expect("certs")[0].clone();
        assert_eq!(tls::fingerprint(&der), fp);
    }
    assert!(sim.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));

    // Two requests over one connection.
    let tls = tls_stream(&sim, "localhost").await;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    for _ in 0..2 {
        let req = Request::get("/api2/json/version")
            .header("host", "localhost")
            .header("authorization", ADMIN)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let resp = sender.send_request(req).await.expect("keep-alive");
        assert_eq!(resp.status(), 200);
        resp.into_body().collect().await.unwrap();
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn faults_latency_and_request_log() {
    let sim = start().await;
    sim.add_fault(Fault {
        path_prefix: "/nodes/pve2".into(),
        status: 500,
        reason: "simulated failure".into(),
        times: Some(1),
        delay: None,
        ..Default::default()
    });
    let p = "/api2/json/nodes/pve2/status";
    let r = get(&sim, p, ADMIN).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.reason.as_deref(), Some("simulated failure"));
    assert_eq!(r.json()["message"], "simulated failure\n");
    assert_eq!(get(&sim, p, ADMIN).await.status, 200);
    // Per-segment matching.
    sim.add_fault(Fault {
        path_prefix: "/nodes/pve".into(),
        status: 596,
        reason: "Connection timed out".into(),
        times: None,
        delay: None,
        ..Default::default()
    });
    assert_eq!(get(&sim, p, ADMIN).await.status, 200);
    sim.clear_faults();

    sim.set_latency(Duration::from_millis(150));
    let t = Instant::now();
    assert_eq!(get(&sim, "/api2/json/version", ADMIN).await.status, 200);
    assert!(t.elapsed() >= Duration::from_millis(150));
    sim.set_latency(Duration::ZERO);

    sim.clear_requests();
    get(&sim, "/api2/json/cluster/resources?type=node", ADMIN).await;
    let log = sim.requests();
    assert_eq!(log.len(), 1);
    let e = &log[0];
    assert_eq!(e.method, "GET");
    assert_eq!(e.path, "/api2/json/cluster/resources");
    assert_eq!(e.query, "type=node");
    assert_eq!(e.status, 200);
    assert!(e.completed);
    assert!(
        e.headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == ADMIN)
    );

    // A client that leaves during an injected delay is logged incomplete.
    sim.add_fault(Fault {
        path_prefix: "/version".into(),
        status: 0,
        reason: String::new(),
        times: Some(1),
        delay: Some(Duration::from_millis(600)),
        ..Default::default()
    });
    sim.clear_requests();
    {
        let mut tls = tls_stream(&sim, "localhost").await;
        let raw = format!(
            "GET /api2/json/version HTTP/1.1\r\nHost: localhost\r\nAuthorization: {ADMIN}\r\n\r\n"
        );
        tls.write_all(raw.as_bytes()).await.unwrap();
        tls.flush().await.unwrap();
        // Leave only once the delay holds the request.
        crate::testing::wait_for_request(&sim).await;
    }
    // Outwait the 600 ms delay: a request whose client left shows only as
    // one that never completes, so this sleep is the observation itself.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let last = sim.requests().last().unwrap().clone();
    assert_eq!(last.path, "/api2/json/version");
    assert!(!last.completed, "{last:?}");
    sim.shutdown().await;
}

#[tokio::test]
async fn hostile_input_gets_http_errors() {
    let sim = start().await;
    let r = get(&sim, "/api2/json/nodes/%FF%FE/status", ADMIN).await;
    assert_eq!(r.status, 500);
    let r = get(&sim, "/api2/json/nodes/pve1/qemu/%00/status/current", ADMIN).await;
    assert_eq!(r.status, 400);
    let r = get(&sim, "/api2/json/cluster/resources?type=%FF", ADMIN).await;
    assert_eq!(r.status, 400);

    let r = send(
        &sim,
        "GET",
        "/api2/json/version",
        &[("authorization", ADMIN)],
        Some(("text/plain", b"x")),
    )
    .await;
    assert_eq!(r.status, 501);
    assert_eq!(
        r.reason.as_deref(),
        Some("Unexpected content for method 'GET'")
    );
    let big = vec![b'a'; 600 * 1024];
    let r = send(
        &sim,
        "POST",
        "/api2/json/access/ticket",
        &[],
        Some(("application/x-www-form-urlencoded", &big)),
    )
    .await;
    assert_eq!(r.status, 501);
    let r = send(
        &sim,
        "POST",
        "/api2/json/access/ticket",
        &[],
        Some(("application/json", b"{not json")),
    )
    .await;
    assert_eq!(r.status, 501);
    let r = send(
        &sim,
        "PATCH",
        "/api2/json/version",
        &[("authorization", ADMIN)],
        None,
    )
    .await;
    assert_eq!(r.status, 501);

    let huge = "x".repeat(100 * 1024);
    let r = send(
        &sim,
        "GET",
        "/api2/json/version",
        &[("x-huge", &huge)],
        None,
    )
    .await;
    assert_eq!(r.status, 431);

    // Garbage instead of HTTP, and a chunked body: the server answers and
    // stays up.
    for raw in [
        &b"\x00\x01garbage\r\n\r\n"[..],
        b"POST /api2/json/access/ticket HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    ] {
        let mut tls = tls_stream(&sim, "localhost").await;
        tls.write_all(raw).await.unwrap();
        let mut buf = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut buf)).await;
        let text = String::from_utf8_lossy(&buf);
        assert!(text.starts_with("HTTP/1.1 4") || text.starts_with("HTTP/1.1 501"), "{text}");
    }
    assert_eq!(get(&sim, "/api2/json/version", ADMIN).await.status, 200);
    sim.shutdown().await;
}

#[tokio::test]
async fn large_scenario_lists_fast() {
    let sim = Simulator::start(SimConfig {
        scenario: Scenario::Large { guests: 5000 },
        ..SimConfig::default()
    })
    .await
    .unwrap();
    for _ in 0..2 {
        let t = Instant::now();
        let r = get(&sim, "/api2/json/cluster/resources?type=vm", ADMIN).await;
        let n = r.data().as_array().unwrap().len();
        assert_eq!(n, 5000);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }
    let t = Instant::now();
    let r = get(&sim, "/api2/json/cluster/resources", AUDITOR).await;
    assert_eq!(
        r.data()
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["vmid"].is_u64())
            .count(),
        3
    );
    assert!(t.elapsed() < Duration::from_secs(5));
    sim.shutdown().await;
}

#[tokio::test]
async fn shutdown_and_drop_stop_the_server() {
    let sim = start().await;
    let port = sim.port();
    let clone = sim.clone();
    sim.shutdown().await;
    assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err());
    drop(clone);

    let sim = start().await;
    let port = sim.port();
    drop(sim);
    crate::testing::wait_until(
        "the listener to close after the last handle was dropped",
        Duration::from_secs(10),
        async || TcpStream::connect(("127.0.0.1", port)).await.err(),
    )
    .await;
}

#[tokio::test]
async fn odd_requests_never_break_the_server() {
    let sim = start().await;
    let long_query = (0..500)
        .map(|i| format!("p{i}=v"))
        .collect::<Vec<_>>()
        .join("&");
    let paths = [
        "/api2/json".to_string(),
        "/api2/json/".to_string(),
        "/api2/json//nodes//pve1//status/".to_string(),
        "/api2/json/nodes/pve1/qemu/99999999999999999999/status/current".to_string(),
        "/api2/json/nodes/pve1/qemu/-100/status/current".to_string(),
        "/api2/json/nodes/%2e%2e/status".to_string(),
        "/api2/json/nodes/pve1%2Fqemu/status".to_string(),
        "/api2/json/nodes/%E2%9C%93/lxc/100/status/current".to_string(),
        "/api2/json/nodes/pve1/lxc/100/status/current?vmid=100&node=pve1".to_string(),
        "/api2/json/cluster/resources?type=vm&type=node".to_string(),
        format!("/api2/json/cluster/resources?{long_query}"),
        format!("/api2/json/nodes/{}/status", "a".repeat(3000)),
        "/api2/json/version?%=%&&;;=".to_string(),
        "/api2/extjs/version".to_string(),
        "/api2".to_string(),
        "/".to_string(),
    ];
    for p in &paths {
        for auth in [ADMIN, AUDITOR, "", "PVEAuthCookie=PVE:x:00000000::zz"] {
            let r = get(&sim, p, auth).await;
            assert!((200..600).contains(&r.status), "{p}: {}", r.status);
            if r.status >= 400 {
                assert!(r.reason.is_some(), "{p} {auth}: reason phrase set");
            }
        }
    }
    let r = get(&sim, "/api2/json//nodes//pve1//status/", ADMIN).await;
    assert_eq!(r.status, 200, "empty segments are skipped like PVE");
    let r = get(
        &sim,
        "/api2/json/cluster/resources?type=vm&type=node",
        ADMIN,
    )
    .await;
    assert_eq!(r.status, 400, "repeated scalar parameter");

    // Concurrent clients.
    let mut set = tokio::task::JoinSet::new();
    for i in 0..40 {
        let sim = sim.clone();
        set.spawn(async move {
            let p = if i % 2 == 0 {
                "/api2/json/cluster/resources"
            } else {
                "/api2/json/nodes/pve1/qemu/100/status/current"
            };
            get(&sim, p, ADMIN).await.status
        });
    }
    while let Some(status) = set.join_next().await {
        assert_eq!(status.unwrap(), 200);
    }
    sim.shutdown().await;
}

#[test]
fn handle_and_start_future_are_thread_safe() {
    fn send_sync<T: Send + Sync + 'static>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let fut = Simulator::start(SimConfig::default());
    send(&fut);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sim = rt.block_on(fut).unwrap();
    send_sync(&sim);
    // The handle may be dropped outside the runtime.
    drop(rt);
    drop(sim);
}
