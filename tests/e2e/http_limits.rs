//! Limits that keep one client (with or without a token) from taking the
//! Streamable HTTP server from everyone else: connections held without a
//! token, connections that never finish a request header, sessions per
//! token, and calls per token without a session (MCP 2026-07-28).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::common::*;
use crate::http::*;

/// `n` connections from `source` to the server, each having sent one byte
/// of a request and nothing more: the connection-exhaustion attack.
async fn hold_connections(server: &HttpServer, source: &str, n: usize) -> Vec<TcpStream> {
    let target: SocketAddr = server
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("the server's address");
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        let socket = TcpSocket::new_v4().unwrap();
        socket
            .bind(format!("{source}:0").parse().unwrap())
            .unwrap_or_else(|e| panic!("binding {source}: {e}"));
        let mut stream = socket.connect(target).await.expect("connecting");
        stream.write_all(b"G").await.unwrap();
        held.push(stream);
    }
    held
}

/// How many of these connections the server has closed (a read sees the
/// end or a reset at once; an open one times out).
async fn closed(streams: &mut [TcpStream]) -> usize {
    let mut closed = 0;
    for stream in streams {
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_millis(25), stream.read(&mut buf)).await;
        if let Ok(Ok(0) | Err(_)) = read {
            closed += 1;
        }
    }
    closed
}

/// `/healthz` over a new connection (a new client, so no pooled one).
async fn healthz(server: &HttpServer) -> Result<u16, String> {
    http_client()
        .get(format!("{}/healthz", server.base))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .map_err(|e| format!("{e:?}"))
}

/// A client of its own (so no connection pooled by another), with `token`.
struct Fresh<'a> {
    server: &'a HttpServer,
    http: reqwest::Client,
    token: &'a str,
}

impl Fresh<'_> {
    fn post(&self, message: &Value) -> reqwest::RequestBuilder {
        self.http
            .post(&self.server.url)
            .bearer_auth(self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(message.to_string())
    }

    /// `initialize`: the response.
    async fn initialize(&self) -> reqwest::Response {
        self.post(&initialize_request(1))
            .send()
            .await
            .expect("initialize")
    }

    /// A session opened and initialized; its id.
    async fn session(&self) -> String {
        let r = self.initialize().await;
        assert_eq!(r.status(), 200, "{}", self.server.log());
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        messages(r).await;
        let r = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .header("mcp-session-id", &id)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        id
    }

    /// A session and a tool call in it, which must succeed.
    async fn call(&self) {
        let session = self.session().await;
        let r = self
            .post(&call_request(2, "pve_get_version", json!({})))
            .header("mcp-session-id", &session)
            .send()
            .await
            .expect("the tool call");
        assert_eq!(r.status(), 200, "{}", self.server.log());
        let reply = messages(r).await;
        assert_eq!(
            reply.last().unwrap()["result"]["isError"],
            false,
            "{reply:#?}"
        );
    }
}

fn fresh<'a>(server: &'a HttpServer, token: &'a str) -> Fresh<'a> {
    Fresh {
        server,
        http: http_client(),
        token,
    }
}

#[tokio::test]
async fn connections_held_from_one_address_do_not_lock_out_others() {
    within(async {
        let sim = simulator().await;
        // Without the per-address limit, 2 sessions allow 4 * 2 + 64 = 72
        // connections in all, and 100 held ones would take every one.
        let server = HttpServer::start(
            &sim,
            Opts::default()
                .env("MCP_MAX_SESSIONS", "2")
                .env("MCP_MAX_ANONYMOUS_CONNECTIONS_PER_PEER", "8")
                // Long enough that the held connections outlive the test.
                .env("MCP_HEADER_TIMEOUT_SECS", "60"),
        )
        .await;
        let mut held = hold_connections(&server, "127.0.0.1", 100).await;
        // While they are held, a health check and an authenticated client
        // from the same address are served: their connections are the
        // newest, and the address's oldest unauthenticated ones make room.
        assert_eq!(healthz(&server).await, Ok(200), "{}", server.log());
        fresh(&server, TOKEN).call().await;
        // The address keeps at most 8 unauthenticated connections: the
        // rest were closed as newer ones arrived, at once (well within the
        // 60 s header timeout).
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut shut = closed(&mut held).await;
        while shut < 92 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            shut = closed(&mut held).await;
        }
        assert!(
            shut >= 92,
            "only {shut} of 100 unauthenticated connections from one address were closed; the limit is 8"
        );
        server.expect_log("connection limits reached").await;
    })
    .await;
}

#[tokio::test]
async fn a_flood_from_many_addresses_displaces_itself_not_authenticated_clients() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(
            &sim,
            Opts::default()
                .env("MCP_MAX_CONNECTIONS", "12")
                .env("MCP_MAX_ANONYMOUS_CONNECTIONS_PER_PEER", "100")
                .env("MCP_HEADER_TIMEOUT_SECS", "60"),
        )
        .await;
        // A client that has shown its token before the flood.
        let client = server.client().await;
        client
            .list_all_tools()
            .await
            .expect("tools/list before the flood");
        let mut held = Vec::new();
        for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
            held.extend(hold_connections(&server, source, 10).await);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let open = held.len() - closed(&mut held).await;
        assert!(open <= 12, "{open} flood connections open; the cap is 12");
        // The authenticated client keeps its connection and is served; a
        // health check on a new connection gets in too.
        let result = client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("pve_get_vm_status")
                    .with_arguments(json!({"vmid": 100}).as_object().unwrap().clone()),
            )
            .await
            .expect("a call during the flood");
        assert_eq!(result.is_error, Some(false), "{result:?}");
        assert_eq!(healthz(&server).await, Ok(200), "{}", server.log());
        fresh(&server, TOKEN).call().await;
        client.cancel().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_connection_that_never_completes_a_request_header_is_closed() {
    within(async {
        let sim = simulator().await;
        let server =
            HttpServer::start(&sim, Opts::default().env("MCP_HEADER_TIMEOUT_SECS", "1")).await;
        let target = server.base.trim_start_matches("http://").to_string();
        // Half an HTTP/1 header; the first byte of the HTTP/2 preface (the
        // server waits for the rest to tell the versions apart); the whole
        // preface, and no request after it.
        for sent in [
            &b"GET /mcp HTTP/1.1\r\nHost: x\r\n"[..],
            b"P",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        ] {
            let mut stream = TcpStream::connect(&target).await.unwrap();
            stream.write_all(sent).await.unwrap();
            let mut buf = vec![0u8; 4096];
            let ended = tokio::time::timeout(Duration::from_secs(8), async {
                loop {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => continue,
                    }
                }
            })
            .await;
            assert!(
                ended.is_ok(),
                "a connection that sent {:?} was still open after 8 s; header_timeout_secs is 1",
                String::from_utf8_lossy(sent)
            );
        }
        assert_eq!(healthz(&server).await, Ok(200));
    })
    .await;
}

/// The JSON-RPC error message of a refusal.
async fn refusal(response: reqwest::Response) -> String {
    let body: Value = response.json().await.expect("a JSON-RPC error body");
    body["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message: {body}"))
        .to_string()
}

/// The second token of [`a_token_holds_at_most_its_quota_of_sessions`].
const OTHER_TOKEN: &str = "7b3e9d1f5a2c4e6b8d0f1a3c5e7b9d2f";

#[tokio::test]
async fn a_token_holds_at_most_its_quota_of_sessions() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("pve-mcp.toml");
        std::fs::write(
            &config,
            format!("[http.tokens]\nother = \"{OTHER_TOKEN}\"\n"),
        )
        .unwrap();
        let server = HttpServer::start(
            &sim,
            Opts::default()
                .arg("--config")
                .arg(config.to_str().unwrap())
                .env("MCP_MAX_SESSIONS_PER_TOKEN", "2")
                .env("MCP_SESSION_IDLE_SECS", "3"),
        )
        .await;
        let mine = fresh(&server, TOKEN);
        let first = mine.session().await;
        let second = mine.session().await;
        let third = mine.initialize().await;
        assert_eq!(third.status(), 429, "{}", server.log());
        assert!(third.headers().contains_key("retry-after"));
        let message = refusal(third).await;
        for needle in [
            "\"default\"",
            "2 open sessions",
            "max_sessions_per_token",
            "MCP_MAX_SESSIONS_PER_TOKEN",
        ] {
            assert!(message.contains(needle), "{needle:?} not in: {message}");
        }
        // Another token is not held back by this one.
        let theirs = fresh(&server, OTHER_TOKEN).session().await;
        // Ending a session frees its place.
        let r = mine
            .http
            .delete(&server.url)
            .bearer_auth(TOKEN)
            .header("mcp-session-id", &first)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
        let replacement = mine.session().await;
        let r = mine.initialize().await;
        assert_eq!(r.status(), 429, "the quota is full again");
        let _ = (second, replacement, theirs);
        tokio::time::sleep(Duration::from_secs(5)).await;
        mine.session().await;
        mine.session().await;
    })
    .await;
}

#[tokio::test]
async fn calls_without_a_session_are_limited_per_token() {
    within(async {
        let sim = simulator().await;
        let server =
            HttpServer::start(&sim, Opts::default().env("MCP_MAX_CALLS_PER_SESSION", "1")).await;
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "e2e-modern", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let stateless = |id: u64, tool: &str| {
            let mut call = call_request(id, tool, json!({}));
            call["params"]["_meta"] = meta.clone();
            server
                .post(&call)
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", tool)
                .send()
        };
        sim.add_fault(pve_sim::Fault {
            path_prefix: "/cluster/resources".into(),
            status: 0,
            reason: String::new(),
            times: Some(1),
            delay: Some(Duration::from_secs(3)),
            ..Default::default()
        });
        let slow = tokio::spawn(stateless(1, "pve_list_vms"));
        wait_for_request(&sim).await;
        // Each stateless request gets its own handler from rmcp; the limit
        // must still see the call already running for this token.
        let r = stateless(2, "pve_get_version").await.unwrap();
        assert_eq!(r.status(), 200, "{}", server.log());
        let reply = messages(r).await;
        let result = &reply.last().unwrap()["result"];
        assert_eq!(result["isError"], true, "{reply:#?}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("Too many calls")
                && text.contains("without a session")
                && text.contains("max_calls_per_session"),
            "{text}"
        );
        let slow = messages(slow.await.unwrap().unwrap()).await;
        assert_eq!(
            slow.last().unwrap()["result"]["isError"],
            false,
            "{slow:#?}"
        );
        // The slot is free again.
        let r = stateless(3, "pve_get_version").await.unwrap();
        assert_eq!(
            messages(r).await.last().unwrap()["result"]["isError"],
            false
        );
    })
    .await;
}

/// A request whose JSON-RPC id is still in flight in its session is
/// refused at once with a clear error (MCP forbids reusing an id within a
/// session; rmcp routes answers by id and used to leave the second one
/// unanswered). The first still gets its answer, and the id is free again
/// once it has.
#[tokio::test]
async fn a_request_reusing_an_id_in_flight_is_refused_not_left_hanging() {
    within(async {
        let sim = simulator().await;
        let server = HttpServer::start(&sim, Opts::default()).await;
        let session = server.session().await;
        sim.add_fault(pve_sim::Fault {
            path_prefix: "/cluster/resources".into(),
            times: Some(1),
            delay: Some(Duration::from_secs(3)),
            ..Default::default()
        });
        let first = server
            .post_in(&session, &call_request(7, "pve_list_vms", json!({})))
            .send();
        let first = tokio::spawn(first);
        wait_for_request(&sim).await;
        let again = server
            .post_in(&session, &call_request(7, "pve_get_version", json!({})))
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 400);
        let text = again.text().await.unwrap();
        assert!(
            text.contains("id 7 is already used by a request still in flight"),
            "{text}"
        );
        let first = first.await.unwrap().unwrap();
        assert_eq!(first.status(), 200);
        let answers = messages(first).await;
        assert!(
            answers
                .iter()
                .any(|m| m["id"] == 7 && m["result"].is_object()),
            "{answers:?}"
        );
        let reused = server
            .post_in(&session, &call_request(7, "pve_get_version", json!({})))
            .send()
            .await
            .unwrap();
        assert_eq!(reused.status(), 200);
    })
    .await;
}
