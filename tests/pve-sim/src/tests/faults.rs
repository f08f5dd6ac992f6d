//! Each fault kind puts on the wire what its documentation says.

use super::*;

/// A raw exchange: head, then the body as far as it goes.
struct Raw {
    status: u16,
    content_type: Option<String>,
    content_length: Option<u64>,
    body: Vec<u8>,
    /// The error that ended the body early, if one did.
    body_error: Option<String>,
}

async fn raw_get(sim: &Simulator, path: &str, auth: (&str, &str)) -> Raw {
    let tls = tls_stream(sim, "localhost").await;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("http handshake");
    tokio::spawn(conn);
    let req = Request::get(path)
        .header("host", "localhost")
        .header(auth.0, auth.1)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = sender.send_request(req).await.expect("response head");
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let content_type = header("content-type");
    let content_length = header("content-length").map(|v| v.parse().unwrap());
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut out = Vec::new();
    let mut body_error = None;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(f) => out.extend_from_slice(f.data_ref().map_or(&[][..], |d| &d[..])),
            Err(e) => {
                body_error = Some(format!("{e:?}"));
                break;
            }
        }
    }
    Raw {
        status,
        content_type,
        content_length,
        body: out,
        body_error,
    }
}

const VERSION: &str = "/api2/json/version";

fn on_version(kind: FaultKind) -> Fault {
    Fault {
        path_prefix: "/version".into(),
        kind,
        times: Some(1),
        ..Fault::default()
    }
}

fn is_json(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok()
}

#[tokio::test]
async fn body_faults_break_the_answer_as_documented() {
    let sim = start().await;
    let token = ("authorization", ADMIN);
    let normal = raw_get(&sim, VERSION, token).await;
    assert!(is_json(&normal.body) && normal.body_error.is_none());

    sim.add_fault(on_version(FaultKind::MalformedJson));
    let r = raw_get(&sim, VERSION, token).await;
    assert_eq!((r.status, r.body.len()), (200, normal.body.len() + 1));
    assert!(!is_json(&r.body), "{:?}", String::from_utf8_lossy(&r.body));

    sim.add_fault(on_version(FaultKind::TruncatedJson));
    let r = raw_get(&sim, VERSION, token).await;
    assert_eq!(r.content_length, Some(normal.body.len() as u64 / 2));
    assert_eq!(r.body, normal.body[..normal.body.len() / 2]);
    assert!(r.body_error.is_none() && !is_json(&r.body));

    sim.add_fault(on_version(FaultKind::WrongContentType));
    let r = raw_get(&sim, VERSION, token).await;
    assert_eq!(r.status, 200);
    assert!(r.content_type.unwrap().starts_with("text/html"));
    assert!(r.body.starts_with(b"<!DOCTYPE html>"));

    let bytes = 3 << 20;
    sim.add_fault(on_version(FaultKind::HugeBody { bytes }));
    let r = raw_get(&sim, VERSION, token).await;
    assert_eq!(
        (r.content_length, r.body.len() as u64),
        (Some(bytes), bytes)
    );
    assert!(is_json(&r.body));

    sim.add_fault(on_version(FaultKind::ResetMidBody));
    sim.clear_requests();
    let r = raw_get(&sim, VERSION, token).await;
    assert_eq!(r.content_length, Some(normal.body.len() as u64));
    assert_eq!(r.body, normal.body[..normal.body.len() / 2]);
    assert!(r.body_error.is_some(), "the body ended without an error");
    assert!(!sim.requests()[0].completed);

    // Every fault above had one hit: the next answer is whole again.
    let r = raw_get(&sim, VERSION, token).await;
    assert_eq!(r.body, normal.body);
    sim.shutdown().await;
}

#[tokio::test]
async fn slow_loris_sends_the_head_at_once_and_trickles_the_body() {
    let sim = start().await;
    let interval = Duration::from_millis(20);
    let normal = raw_get(&sim, VERSION, ("authorization", ADMIN)).await;
    sim.add_fault(on_version(FaultKind::SlowLoris { interval }));
    let t = Instant::now();
    let r = raw_get(&sim, VERSION, ("authorization", ADMIN)).await;
    assert_eq!(r.body, normal.body);
    // One byte per interval: the lower bound is the fault's own pace.
    assert!(
        t.elapsed() >= interval * (normal.body.len() as u32 - 1),
        "{:?} for {} bytes",
        t.elapsed(),
        normal.body.len()
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn expire_tickets_refuses_tickets_only() {
    let sim = start().await;
    let login = send(
        &sim,
        "POST",
        "/api2/json/access/ticket",
        &[],
        Some((
            "application/x-www-form-urlencoded",
            format!("username={TICKET_USER}&password={TICKET_PASSWORD}").as_bytes(),
        )),
    )
    .await;
    let ticket = login.data()["ticket"].as_str().unwrap().to_string();
    let cookie = format!("PVEAuthCookie={ticket}");
    sim.add_fault(Fault {
        kind: FaultKind::ExpireTickets,
        times: Some(1),
        ..Fault::default()
    });
    // A token request neither meets the fault nor uses up its hit.
    assert_eq!(get(&sim, VERSION, ADMIN).await.status, 200);
    let r = send(&sim, "GET", VERSION, &[("cookie", &cookie)], None).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.reason.as_deref(), Some("Authentication failed!"));
    let r = send(&sim, "GET", VERSION, &[("cookie", &cookie)], None).await;
    assert_eq!(r.status, 200);
    sim.shutdown().await;
}

/// The error a client trusting only the cluster CA gets in the handshake.
async fn handshake_error(sim: &Simulator) -> rustls::Error {
    let tcp = TcpStream::connect(("127.0.0.1", sim.port())).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let err = connector(sim)
        .connect(name, tcp)
        .await
        .expect_err("the handshake must fail");
    *err.into_inner()
        .expect("a rustls error")
        .downcast::<rustls::Error>()
        .expect("a rustls error")
}

/// Whether a handshake failed for the reason a fault is for.
type IsReason = fn(&rustls::CertificateError) -> bool;

#[tokio::test]
async fn certificate_faults_fail_the_handshake_for_their_reason() {
    let sim = start().await;
    // A connection made before the fault is closed when it is added.
    let early = tls_stream(&sim, "localhost").await;
    let cases: [(FaultKind, IsReason); 3] = [
        (FaultKind::ExpiredCertificate, |e| {
            matches!(
                e,
                rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. }
            )
        }),
        (FaultKind::UntrustedCertificate, |e| {
            matches!(e, rustls::CertificateError::UnknownIssuer)
        }),
        (FaultKind::WrongNameCertificate, |e| {
            matches!(
                e,
                rustls::CertificateError::NotValidForName
                    | rustls::CertificateError::NotValidForNameContext { .. }
            )
        }),
    ];
    for (kind, expected) in cases {
        sim.add_fault(Fault {
            kind,
            times: Some(1),
            ..Fault::default()
        });
        match handshake_error(&sim).await {
            rustls::Error::InvalidCertificate(e) => assert!(expected(&e), "{kind:?}: {e:?}"),
            other => panic!("{kind:?}: {other:?}"),
        }
        // One hit each: the next handshake gets the node certificate.
        assert_eq!(get(&sim, VERSION, ADMIN).await.status, 200);
    }
    let mut early = early;
    let mut buf = [0u8; 1];
    assert!(
        matches!(early.read(&mut buf).await, Ok(0) | Err(_)),
        "the connection from before the faults is still open"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn refusing_connections_closes_the_port_until_cleared() {
    let sim = start().await;
    sim.add_fault(Fault {
        kind: FaultKind::RefuseConnections,
        ..Fault::default()
    });
    let refused = crate::testing::wait_until(
        "the simulator to stop listening",
        Duration::from_secs(10),
        async || match TcpStream::connect(("127.0.0.1", sim.port())).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Some(()),
            _ => None,
        },
    );
    refused.await;
    sim.clear_faults();
    crate::testing::wait_until(
        "the simulator to listen again",
        Duration::from_secs(10),
        async || TcpStream::connect(("127.0.0.1", sim.port())).await.ok(),
    )
    .await;
    assert_eq!(get(&sim, VERSION, ADMIN).await.status, 200);
    sim.shutdown().await;
}
