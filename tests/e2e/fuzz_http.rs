//! Fuzz target: MCP JSON-RPC bodies over Streamable HTTP. Hostile bodies
//! (the same generator as over stdio) are POSTed, several at a time,
//! within a session of one long-lived `pve-mcp serve --http`. Every answer
//! must be a 2xx or 4xx status (never a 5xx or a dropped connection), a 200
//! must carry JSON-RPC messages, and after each batch a ping and a real
//! tool call in the session still get their answers.
//!
//! `PVE_MCP_FUZZ_CASES=1000000 cargo test --release -p pve-mcp --test e2e fuzz_http`

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::common::*;
use crate::fuzz_gen;
use crate::fuzz_stdio::{BATCH_LIMIT, batches, keep_batch};
use crate::http::{HttpServer, call_request, messages};

/// Requests in flight at once. The generated bodies reuse JSON-RPC ids, so
/// this also drives requests whose id is still in flight in the session,
/// which the server must refuse (it once left them unanswered).
const CONCURRENCY: usize = 16;

/// POSTs one body in the session; what was wrong with the answer, if
/// anything.
async fn post(server: &HttpServer, session: &str, body: Vec<u8>) -> Result<(), String> {
    let response = server
        .post_in(session, &Value::Null)
        .body(body)
        .send()
        .await
        .map_err(|e| format!("no answer: {e}"))?;
    let status = response.status();
    if status.is_server_error() || !(status.is_success() || status.is_client_error()) {
        return Err(format!(
            "status {status}: {}",
            response.text().await.unwrap_or_default()
        ));
    }
    if status == 200 {
        let messages = messages(response).await;
        if messages.iter().any(|m| m["jsonrpc"] != "2.0") {
            return Err(format!("not JSON-RPC 2.0: {messages:?}"));
        }
    }
    Ok(())
}

/// The ping and the call that must still work after a batch.
async fn still_serves(server: &HttpServer, session: &str) -> Result<(), String> {
    let ping = json!({"jsonrpc": "2.0", "id": "fuzz-ping", "method": "ping"});
    let r = server
        .post_in(session, &ping)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let answer = messages(r).await;
    if answer.first().map(|m| &m["result"]) != Some(&json!({})) {
        return Err(format!("ping: {answer:?}"));
    }
    let call = call_request(9, "pve_get_vm_status", json!({"vmid": 100}));
    let r = server
        .post_in(session, &call)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let answer = messages(r).await;
    let vmid = answer
        .last()
        .map(|m| &m["result"]["structuredContent"]["vmid"]);
    if vmid != Some(&json!(100)) {
        return Err(format!("call: {answer:?}"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn fuzz_http_bodies() {
    let sim = simulator().await;
    let server = Arc::new(HttpServer::start(&sim, Opts::default()).await);
    let session: Arc<str> = server.session().await.into();
    let total = fuzz_gen::cases(1_000) as usize;
    let mut sent = 0;
    for batch in batches(total) {
        let run = async {
            for chunk in batch.chunks(CONCURRENCY) {
                let mut set = JoinSet::new();
                for body in chunk {
                    let (server, session, body) = (server.clone(), session.clone(), body.clone());
                    set.spawn(async move {
                        post(&server, &session, body.clone())
                            .await
                            .map_err(|e| (e, body))
                    });
                }
                while let Some(done) = set.join_next().await {
                    done.expect("a request task panicked")?;
                }
            }
            still_serves(&server, &session)
                .await
                .map_err(|e| (e, Vec::new()))
        };
        let outcome = tokio::time::timeout(BATCH_LIMIT, run)
            .await
            .unwrap_or_else(|_| Err(("no answer in time".into(), Vec::new())));
        if let Err((e, body)) = outcome {
            let kept = keep_batch("fuzz_http_batch.jsonl", &batch);
            let log = server.log();
            let tail = &log[log.floor_char_boundary(log.len().saturating_sub(4000))..];
            panic!(
                "after {sent} inputs (batch in {}): {e}\nbody: {}\nserver log tail:\n{tail}",
                kept.display(),
                String::from_utf8_lossy(&body),
            );
        }
        sent += batch.len();
    }
    assert_eq!(sent, total);
    eprintln!("fuzz_http_bodies: {sent} inputs");
}
