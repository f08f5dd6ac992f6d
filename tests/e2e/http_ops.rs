//! Streamable HTTP in operation: cancellation and progress, limits, idle
//! expiry, TLS, health endpoints and the graceful shutdown.

use std::process::Stdio;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::*;
use crate::http::*;

fn delay(path: &str, secs: u64) -> pve_sim::Fault {
    pve_sim::Fault {
        path_prefix: path.into(),
        status: 0,
        reason: String::new(),
        times: Some(1),
        delay: Some(Duration::from_secs(secs)),
        ..Default::default()
    }
}

/// Whether `/healthz` answers 200 on a fresh connection.
async fn healthy(server: &HttpServer) -> bool {
    http_client()
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .is_ok_and(|r| r.status() == 200)
}

#[tokio::test]
async fn cancelling_over_http_drops_the_upstream_request() {
    within(async {
        let sim = simulator().await;
        sim.add_fault(delay("/cluster/resources", 3));
        let server = HttpServer::start(&sim, Opts::default()).await;
        let session = server.session().await;
        // Keep the call's response stream open: a disconnect is not a
        // cancellation, the notification is.
        let call = server
            .post_in(&session, &call_request(7, "pve_list_vms", json!({})))
            .send()
            .await
            .unwrap();
        assert_eq!(call.status(), 200);
        wait_for_request(&sim).await;
        let r = server
            .post_in(
                &session,
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 7, "reason": "user gave up"}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        // The session keeps answering.
        let r = server
            .post_in(
                &session,
                &json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(messages(r).await[0]["result"], json!({}));
        // Past the injected delay: the simulator saw the host leave first.
        // A dropped request shows only as one that never completes, so
        // outwaiting the 3 s delay is the observation itself.
        tokio::time::sleep(Duration::from_millis(3500)).await;
        let requests = sim.requests();
        assert_eq!(requests.len(), 1, "{requests:?}");
        assert!(
            !requests[0].completed,
            "the upstream request ran to completion: {requests:?}"
        );
        server.expect_log("call cancelled by the client").await;
        drop(call);
        let r = server
            .post_in(&session, &call_request(9, "pve_list_vms", json!({})))
            .send()
            .await
            .unwrap();
        let reply = messages(r).await;
        assert_eq!(
            reply.last().unwrap()["result"]["structuredContent"]["total"],
            13,
            "{reply:?}"
        );
    })
    .await;
}

/// The progress notifications among these messages, checked for order.
fn progress_of(messages: &[Value], token: &Value) -> Vec<Value> {
    let progress: Vec<Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"].clone())
        .collect();
    assert!(progress.len() >= 3, "start, running, done: {messages:#?}");
    let values: Vec<f64> = progress
        .iter()
        .map(|p| {
            assert_eq!(&p["progressToken"], token, "{p}");
            p["progress"].as_f64().unwrap()
        })
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress must increase: {values:?}"
    );
    let first = progress[0]["message"].as_str().unwrap();
    assert!(first.contains("started"), "{first}");
    let last = progress.last().unwrap();
    assert_eq!(last["total"], last["progress"], "{last}");
    assert!(
        progress.iter().any(|p| p["message"]
            .as_str()
            .unwrap()
            .contains("waiting for Proxmox")),
        "{progress:#?}"
    );
    progress
}

#[tokio::test]
async fn progress_is_reported_over_http_when_asked() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(&sim, Opts::default()).await;
        let session = server.session().await;
        sim.add_fault(delay("/cluster/resources", 2));
        let mut call = call_request(2, "pve_list_vms", json!({}));
        call["params"]["_meta"] = json!({"progressToken": "p-42"});
        let r = server.post_in(&session, &call).send().await.unwrap();
        let reply = messages(r).await;
        progress_of(&reply, &json!("p-42"));
        let response = reply.last().unwrap();
        assert_eq!(response["id"], 2, "the response comes last: {reply:#?}");
        assert_eq!(response["result"]["isError"], false);
        // Without a token, no progress.
        let r = server
            .post_in(&session, &call_request(3, "pve_get_version", json!({})))
            .send()
            .await
            .unwrap();
        let reply = messages(r).await;
        assert!(
            reply
                .iter()
                .all(|m| m["method"] != "notifications/progress"),
            "{reply:#?}"
        );
    })
    .await;
}

#[tokio::test]
async fn progress_is_reported_over_stdio_too() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let mut child = command(&sim, &Opts::default(), dir.path(), &["serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut send = async |m: Value| {
            stdin.write_all(format!("{m}\n").as_bytes()).await.unwrap();
            stdin.flush().await.unwrap();
        };
        send(initialize_request(1)).await;
        let init = stdout.next_line().await.unwrap().unwrap();
        assert!(init.contains("\"id\":1"), "{init}");
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        sim.add_fault(delay("/cluster/resources", 2));
        let mut call = call_request(2, "pve_list_vms", json!({}));
        call["params"]["_meta"] = json!({"progressToken": 5});
        send(call).await;
        let mut received = Vec::new();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), stdout.next_line())
                .await
                .expect("an answer")
                .unwrap()
                .expect("stdout open");
            let message: Value = serde_json::from_str(&line).unwrap();
            let done = message["id"] == 2;
            received.push(message);
            if done {
                break;
            }
        }
        progress_of(&received, &json!(5));
        assert_eq!(received.last().unwrap()["result"]["isError"], false);
    })
    .await;
}

#[tokio::test]
async fn session_and_call_limits_answer_cleanly() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(
            &sim,
            Opts::default()
                .env("MCP_MAX_SESSIONS", "2")
                .env("MCP_MAX_CALLS_PER_SESSION", "1"),
        )
        .await;
        let first = server.session().await;
        let _second = server.session().await;
        let third = server.post(&initialize_request(1)).send().await.unwrap();
        assert_eq!(third.status(), 503);
        assert!(third.headers().contains_key("retry-after"));
        let message = {
            let body: Value = third.json().await.unwrap();
            body["error"]["message"].as_str().unwrap().to_string()
        };
        assert!(message.contains("max_sessions"), "{message}");
        // Ending a session makes room.
        let r = server
            .http
            .delete(&server.url)
            .bearer_auth(TOKEN)
            .header("mcp-session-id", &first)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
        let session = server.session().await;

        // One call at a time in this session: a second one gets a tool
        // error while the first waits on Proxmox.
        sim.add_fault(delay("/cluster/resources", 3));
        let slow = server
            .post_in(&session, &call_request(2, "pve_list_vms", json!({})))
            .send();
        let slow = tokio::spawn(slow);
        wait_for_request(&sim).await;
        let r = server
            .post_in(&session, &call_request(3, "pve_get_version", json!({})))
            .send()
            .await
            .unwrap();
        let reply = messages(r).await;
        let result = &reply.last().unwrap()["result"];
        assert_eq!(result["isError"], true, "{reply:#?}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("Too many calls") && text.contains("max_calls_per_session"),
            "{text}"
        );
        let slow = messages(slow.await.unwrap().unwrap()).await;
        assert_eq!(
            slow.last().unwrap()["result"]["isError"],
            false,
            "{slow:#?}"
        );
        // The slot is free again.
        let r = server
            .post_in(&session, &call_request(4, "pve_get_version", json!({})))
            .send()
            .await
            .unwrap();
        assert_eq!(
            messages(r).await.last().unwrap()["result"]["isError"],
            false
        );
    })
    .await;
}

#[tokio::test]
async fn idle_sessions_expire_with_404() {
    within(async {
        let sim = simulator().await;
        let server =
            HttpServer::start(&sim, Opts::default().env("MCP_SESSION_IDLE_SECS", "2")).await;
        let session = server.session().await;
        let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
        let r = server.post_in(&session, &ping).send().await.unwrap();
        assert_eq!(r.status(), 200);
        // Letting the 2 s idle limit pass is what is tested: no event to
        // await.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let r = server.post_in(&session, &ping).send().await.unwrap();
        assert_eq!(r.status(), 404, "the idle session is gone");
        // A new one works.
        let again = server.session().await;
        let r = server.post_in(&again, &ping).send().await.unwrap();
        assert_eq!(r.status(), 200);
    })
    .await;
}

#[tokio::test]
async fn health_and_readiness_endpoints() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(&sim, Opts::default()).await;
        let get = |path: &str| server.http.get(format!("{}{path}", server.base)).send();
        let r = get("/healthz").await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.unwrap().trim(), "ok");
        let r = get("/readyz").await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.unwrap().trim(), "ready");
        assert_eq!(get("/nope").await.unwrap().status(), 404);
        let r = server
            .http
            .post(format!("{}/healthz", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 405);
    })
    .await;
}

#[tokio::test]
async fn tls_endpoint_serves_mcp_with_a_test_certificate() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let cert = rcgen::generate_simple_self_signed(vec![
            "127.0.0.1".to_string(),
            "localhost".to_string(),
        ])
        .unwrap();
        let cert_path = dir.path().join("mcp.pem");
        let key_path = dir.path().join("mcp.key");
        std::fs::write(&cert_path, cert.cert.pem()).unwrap();
        std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
        let _ = rustls::crypto::ring::default_provider().install_default();
        let trusting = reqwest::Client::builder()
            .no_proxy()
            .tls_certs_only([reqwest::Certificate::from_pem(cert.cert.pem().as_bytes()).unwrap()])
            .build()
            .unwrap();
        let opts = Opts::default()
            .env("MCP_AUTH_TOKEN", TOKEN)
            .env("MCP_TLS_CERT", cert_path.to_str().unwrap())
            .env("MCP_TLS_KEY", key_path.to_str().unwrap());
        let server =
            HttpServer::spawn(&sim, opts, &["serve", "--http", "127.0.0.1:0"], trusting).await;
        assert!(
            server.url.starts_with("https://127.0.0.1:"),
            "{}",
            server.url
        );
        let client = server.client().await;
        let result = client
            .call_tool(
                CallToolRequestParams::new("pve_get_vm_status")
                    .with_arguments(json!({"vmid": 101}).as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        assert_eq!(result.structured_content.unwrap()["vmid"], 101);
        client.cancel().await.unwrap();
        // Plain HTTP to the TLS port gets nowhere, and a client that does
        // not trust the certificate fails the handshake.
        let plain = http_client()
            .get(format!(
                "{}/healthz",
                server.base.replace("https://", "http://")
            ))
            .send()
            .await;
        assert!(
            plain.is_err() || !plain.unwrap().status().is_success(),
            "plain HTTP was served on the TLS port"
        );
        let untrusting = http_client()
            .get(format!("{}/healthz", server.base))
            .send()
            .await;
        assert!(untrusting.is_err(), "an untrusted certificate was accepted");
    })
    .await;
}

#[tokio::test]
async fn sigterm_lets_the_call_in_flight_finish_and_refuses_new_connections() {
    within(async {
        let sim = simulator().await;
        let mut server =
            HttpServer::start(&sim, Opts::default().env("MCP_SHUTDOWN_GRACE_SECS", "30")).await;
        let client = server.client().await;
        sim.add_fault(delay("/cluster/resources", 3));
        let call = tokio::spawn(async move {
            client
                .call_tool(CallToolRequestParams::new("pve_list_vms"))
                .await
        });
        wait_for_request(&sim).await;
        server.signal("TERM");
        // The listener closes: new connections are refused.
        let addr = server.base.trim_start_matches("http://").to_string();
        wait_until(
            "new connections to be refused after SIGTERM",
            Duration::from_secs(10),
            async || tokio::net::TcpStream::connect(&addr).await.err(),
        )
        .await;
        // The call in flight completes with its real answer.
        let result = call.await.unwrap().expect("the call in flight was lost");
        assert_eq!(result.is_error, Some(false), "{result:?}");
        assert_eq!(result.structured_content.unwrap()["total"], 13);
        let requests = sim.requests();
        assert!(requests.iter().all(|r| r.completed), "{requests:?}");
        let status = server.wait().await;
        assert_eq!(status.code(), Some(0), "{}", server.log());
        let log = server.log();
        assert!(log.contains("SIGTERM") && log.contains("stopped"), "{log}");
    })
    .await;
}

#[tokio::test]
async fn demo_serves_http_in_one_command() {
    within(async {
        let sim = simulator().await;
        // The demo brings its own cluster; the simulator here is unused.
        let opts = Opts {
            env_cluster: false,
            tls: Tls::Nothing,
            ..Opts::default()
        };
        let mut server = HttpServer::spawn(
            &sim,
            opts,
            &["demo", "--http", "127.0.0.1:0"],
            http_client(),
        )
        .await;
        assert!(server.token.is_none());
        let client = server.client().await;
        let result = client
            .call_tool(
                CallToolRequestParams::new("pve_list_vms")
                    .with_arguments(json!({"vm_type": "lxc"}).as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        let listed = result.structured_content.unwrap();
        assert_eq!(listed["cluster"], "demo");
        assert!(!vmids(&listed).is_empty());
        client.cancel().await.unwrap();
        // Nothing in flight: SIGINT (Ctrl-C) stops it at once, cleanly.
        server.signal("INT");
        assert_eq!(server.wait().await.code(), Some(0), "{}", server.log());
    })
    .await;
}

#[tokio::test]
async fn connections_beyond_the_cap_displace_the_oldest_unauthenticated_ones() {
    within(async {
        let sim = simulator().await;
        // max_sessions 1: 4 connections per session plus 64 spare = 68; the
        // per-address limit is out of the way, so the total is tested.
        let server = HttpServer::start(
            &sim,
            Opts::default()
                .env("MCP_MAX_SESSIONS", "1")
                .env("MCP_MAX_ANONYMOUS_CONNECTIONS_PER_PEER", "1000"),
        )
        .await;
        let addr = server.base.trim_start_matches("http://").to_string();
        // Each connection gets its answer and stays open (kept alive, no
        // token shown): past 68, every new one is still served, and the
        // oldest are closed to make room.
        let mut held = Vec::new();
        for _ in 0..80 {
            let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
                .await
                .unwrap();
            let mut buf = [0u8; 12];
            let n = tokio::time::timeout(
                Duration::from_secs(10),
                tokio::io::AsyncReadExt::read(&mut stream, &mut buf),
            )
            .await
            .expect("an answer")
            .unwrap_or(0);
            assert_eq!(
                &buf[..n],
                &b"HTTP/1.1 200"[..],
                "a new connection was not served"
            );
            held.push(stream);
        }
        server.expect_log("connection limits reached").await;
        let mut closed = Vec::new();
        for (i, stream) in held.iter_mut().enumerate() {
            // The rest of the answer first, then the end (or a wait).
            let mut buf = [0u8; 256];
            loop {
                let read = tokio::time::timeout(
                    Duration::from_millis(50),
                    tokio::io::AsyncReadExt::read(stream, &mut buf),
                )
                .await;
                match read {
                    Ok(Ok(0) | Err(_)) => closed.push(i),
                    Ok(Ok(_)) => continue,
                    Err(_) => {}
                }
                break;
            }
        }
        assert!(
            (12..=16).contains(&closed.len()),
            "{} of 80 closed; 68 fit: {closed:?}",
            closed.len()
        );
        assert!(
            closed.iter().all(|&i| i < 16),
            "the oldest go first: {closed:?}"
        );
        assert!(healthy(&server).await);
    })
    .await;
}

#[tokio::test]
async fn silent_connections_cannot_lock_clients_out_and_are_dropped() {
    within(async {
        let sim = simulator().await;
        // max_sessions 1: 4 connections per session plus 64 spare = 68.
        let server = HttpServer::start(&sim, Opts::default().env("MCP_MAX_SESSIONS", "1")).await;
        let addr = server.base.trim_start_matches("http://").to_string();
        // Connections that never send a byte, more than the cap allows.
        let mut silent = Vec::new();
        for _ in 0..72 {
            silent.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
        }
        server.expect_log("connection limits reached").await;
        // They displace each other, not a client.
        assert!(healthy(&server).await, "{}", server.log());
        // Past the header timeout (10 s) the server closes the rest, and
        // every silent connection sees the close.
        for mut stream in silent {
            let mut buf = [0u8; 1];
            let n = tokio::time::timeout(
                Duration::from_secs(14),
                tokio::io::AsyncReadExt::read(&mut stream, &mut buf),
            )
            .await
            .expect("the silent connection is still open")
            .unwrap_or(0);
            assert_eq!(n, 0);
        }
    })
    .await;
}
