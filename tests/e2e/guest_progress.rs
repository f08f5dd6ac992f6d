//! Progress a component reports and calls that wait (the WIT `progress`
//! import, `waits` and `wait-limit-secs`), with the hostile component: the
//! reports reach a real rmcp client over stdio and Streamable HTTP, in
//! order, always increasing, capped and redacted; a waiting call outlives
//! the plain deadline up to the wait limit and no further; and calls that
//! wait do not keep reads from answering.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest,
    ProgressNotificationParam, ProgressToken, ServerResult,
};
use rmcp::service::{
    MaybeSendFuture, NotificationContext, PeerRequestOptions, RequestHandle, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::common::*;
use crate::http::{HttpServer, TOKEN};

/// The host's caps (host/src/sandbox/progress.rs): a burst of 10, then 10
/// a second; messages cut to 512 bytes.
const BURST: usize = 10;
const PER_SECOND: f64 = 10.0;
const MAX_MESSAGE_BYTES: usize = 512;

/// Every progress notification a client received, by token, in order.
#[derive(Clone, Default)]
struct Notes(Arc<Mutex<HashMap<ProgressToken, Vec<ProgressNotificationParam>>>>);

impl ClientHandler for Notes {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.0
            .lock()
            .unwrap()
            .entry(params.progress_token.clone())
            .or_default()
            .push(params);
        std::future::ready(())
    }
}

impl Notes {
    fn of(&self, token: &ProgressToken) -> Vec<ProgressNotificationParam> {
        self.0
            .lock()
            .unwrap()
            .get(token)
            .cloned()
            .unwrap_or_default()
    }
}

/// The notifications that came from the guest: the host's own start with
/// `TOOL: `.
fn guest_notes(notes: &[ProgressNotificationParam], tool: &str) -> Vec<ProgressNotificationParam> {
    let own = format!("{tool}: ");
    notes
        .iter()
        .filter(|n| !n.message.as_deref().unwrap_or("").starts_with(&own))
        .cloned()
        .collect()
}

fn message(n: &ProgressNotificationParam) -> &str {
    n.message.as_deref().unwrap_or("")
}

/// Every value larger than the one before, the first one the host's
/// start (0), the last its end (its own total).
fn assert_in_order(notes: &[ProgressNotificationParam], tool: &str) {
    let values: Vec<f64> = notes.iter().map(|n| n.progress).collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress must increase: {notes:#?}"
    );
    assert!(notes.len() >= 2, "{notes:#?}");
    assert_eq!(message(&notes[0]), format!("{tool}: started"));
    assert_eq!(notes[0].progress, 0.0);
    let last = notes.last().unwrap();
    assert!(
        message(last).starts_with(&format!("{tool}: done")),
        "{last:?}"
    );
    assert_eq!(last.total, Some(last.progress), "{last:?}");
}

/// A config file for the hostile component: `text` is its `[sandbox]`.
fn hostile_config(dir: &Path, sandbox: &str) -> String {
    let path = dir.join("pve-mcp.toml");
    std::fs::write(&path, format!("[sandbox]\n{sandbox}\n")).unwrap();
    path.to_str().unwrap().to_string()
}

fn hostile_opts(config: &str) -> Opts {
    Opts::default()
        .arg("--component")
        .arg(HOSTILE_WASM)
        .arg("--config")
        .arg(config)
}

/// `pve-mcp serve` over stdio with the hostile component, and a client
/// that keeps the progress it is sent.
async fn stdio_client(
    sim: &pve_sim::Simulator,
    dir: &Path,
    sandbox: &str,
) -> (RunningService<RoleClient, Notes>, Notes) {
    let opts = hostile_opts(&hostile_config(dir, sandbox));
    let cmd = command(sim, &opts, dir, &["serve"]);
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning pve-mcp serve");
    let notes = Notes::default();
    let client = notes.clone().serve(transport).await.expect("handshake");
    (client, notes)
}

/// An rmcp session on `server` that keeps the progress it is sent.
async fn http_session(server: &HttpServer) -> (RunningService<RoleClient, Notes>, Notes) {
    let config =
        StreamableHttpClientTransportConfig::with_uri(server.url.clone()).auth_header(TOKEN);
    let transport = StreamableHttpClientTransport::with_client(server.http.clone(), config);
    let notes = Notes::default();
    let client = notes
        .clone()
        .serve(transport)
        .await
        .unwrap_or_else(|e| panic!("rmcp client could not connect: {e}\n{}", server.log()));
    (client, notes)
}

/// Starts a call; rmcp gives every request a progress token, which the
/// handle names.
async fn start_call(
    client: &RunningService<RoleClient, Notes>,
    tool: &str,
    args: Value,
) -> RequestHandle<RoleClient> {
    let params = CallToolRequestParams::new(tool.to_string())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    client
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("sending the call")
}

async fn finish(handle: RequestHandle<RoleClient>) -> CallToolResult {
    match handle.await_response().await.expect("an answer") {
        ServerResult::CallToolResult(result) => result,
        other => panic!("not a tool result: {other:?}"),
    }
}

/// Calls `tool` and returns its result and the progress notes of the call.
async fn call_noting(
    client: &RunningService<RoleClient, Notes>,
    notes: &Notes,
    tool: &str,
    args: Value,
) -> (CallToolResult, Vec<ProgressNotificationParam>) {
    let handle = start_call(client, tool, args).await;
    let token = handle.progress_token.clone();
    let result = finish(handle).await;
    (result, notes.of(&token))
}

fn structured(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "{}", text(result));
    result
        .structured_content
        .clone()
        .expect("structuredContent")
}

/// A 5 s wait that reports each second: its reports arrive in order,
/// between the host's start and end, and replace the host's own "still
/// running" notices; one that reports nothing gets those notices.
async fn assert_wait_progress(client: &RunningService<RoleClient, Notes>, notes: &Notes) {
    let (result, all) = call_noting(client, notes, "hostile_wait", json!({"seconds": 5})).await;
    assert_eq!(structured(&result)["waited_secs"], 5);
    assert_in_order(&all, "hostile_wait");
    let guest = guest_notes(&all, "hostile_wait");
    let reported: Vec<(f64, Option<f64>, String)> = guest
        .iter()
        .map(|n| (n.progress, n.total, message(n).to_string()))
        .collect();
    let expected: Vec<(f64, Option<f64>, String)> = (1..=5)
        .map(|i| (f64::from(i), Some(5.0), format!("waited {i} of 5 s")))
        .collect();
    assert_eq!(reported, expected, "{all:#?}");
    let ticks = all
        .iter()
        .filter(|n| message(n).contains("waiting for Proxmox"))
        .count();
    assert!(
        ticks < guest.len(),
        "the guest's reports replace the host's notices: {all:#?}"
    );

    let (_, silent) = call_noting(
        client,
        notes,
        "hostile_wait",
        json!({"seconds": 3, "report": false}),
    )
    .await;
    assert_in_order(&silent, "hostile_wait");
    assert!(
        guest_notes(&silent, "hostile_wait").is_empty(),
        "{silent:#?}"
    );
    let ticks = silent
        .iter()
        .filter(|n| message(n).contains("waiting for Proxmox"))
        .count();
    assert!(
        ticks >= 2,
        "a silent guest gets the host's notices: {silent:#?}"
    );
}

#[tokio::test]
async fn guest_progress_reaches_the_client_over_stdio() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let (client, notes) = stdio_client(&sim, dir.path(), "timeout_secs = 10").await;
        assert_wait_progress(&client, &notes).await;
        let _ = client.cancel().await;
    })
    .await;
}

#[tokio::test]
async fn guest_progress_reaches_the_client_over_http() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = hostile_config(dir.path(), "timeout_secs = 10");
        let server = HttpServer::start(&sim, hostile_opts(&config)).await;
        let (client, notes) = http_session(&server).await;
        assert_wait_progress(&client, &notes).await;
        let _ = client.cancel().await;
    })
    .await;
}

#[tokio::test]
async fn progress_abuse_is_capped_dropped_and_redacted() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let (client, notes) = stdio_client(&sim, dir.path(), "timeout_secs = 20").await;
        let tool = "hostile_progress";

        // A flood: a burst, then 10 a second, in order.
        let started = Instant::now();
        let (result, all) = call_noting(&client, &notes, tool, json!({"mode": "flood"})).await;
        let secs = started.elapsed().as_secs_f64();
        assert_eq!(structured(&result)["reports"], 10_000);
        assert_in_order(&all, tool);
        let flood = guest_notes(&all, tool);
        let allowed = BURST + (secs * PER_SECOND).ceil() as usize;
        assert!(
            flood.len() >= BURST && flood.len() <= allowed,
            "{} of 10000 reports forwarded in {secs:.2} s, at most {allowed} allowed",
            flood.len()
        );
        assert_eq!(message(&flood[0]), "flood 1");

        // Huge messages: none over the cap, the unreadable ones dropped.
        let (_, all) = call_noting(&client, &notes, tool, json!({"mode": "huge"})).await;
        assert_in_order(&all, tool);
        for n in &all {
            assert!(
                message(n).len() <= MAX_MESSAGE_BYTES,
                "{} bytes",
                message(n).len()
            );
        }
        let huge = guest_notes(&all, tool);
        let shapes: Vec<(f64, usize)> = huge
            .iter()
            .map(|n| (n.progress, n.message.as_deref().map_or(0, str::len)))
            .collect();
        assert_eq!(
            shapes,
            [
                (1.0, 0),
                (2.0, 0),
                (3.0, MAX_MESSAGE_BYTES),
                (4.0, MAX_MESSAGE_BYTES)
            ],
            "1 MiB and 64 KiB + 1 dropped, 2000 bytes and 600 'é' cut"
        );
        assert!(message(&huge[3]).chars().all(|c| c == 'é'));

        // Going back: the client never sees a smaller value, and the
        // messages still arrive.
        let (_, all) = call_noting(&client, &notes, tool, json!({"mode": "backwards"})).await;
        assert_in_order(&all, tool);
        let back = guest_notes(&all, tool);
        let messages: Vec<&str> = back.iter().map(message).collect();
        assert_eq!(messages, ["at 50", "at 40", "at 30", "at 20", "at 70"]);
        assert_eq!(back[0].progress, 50.0);
        for n in &back[1..4] {
            assert!(n.progress > 50.0 && n.progress < 50.01, "{n:?}");
        }
        assert_eq!(back[4].progress, 70.0);
        assert!(back.iter().all(|n| n.total == Some(100.0)));

        // A secret in a message is redacted, also where it straddles the cut.
        let (_, all) = call_noting(
            &client,
            &notes,
            tool,
            json!({"mode": "secret", "secret": ADMIN_TOKEN_SECRET}),
        )
        .await;
        let secret = guest_notes(&all, tool);
        assert_eq!(secret.len(), 2, "{all:#?}");
        assert_eq!(message(&secret[0]), "the token is [REDACTED], keep it");
        assert_eq!(
            message(&secret[1]),
            format!("{}[REDACTED]", "p".repeat(500))
        );
        let text = serde_json::to_string(&all).unwrap();
        assert!(!text.contains(&ADMIN_TOKEN_SECRET[..8]), "{text}");

        // Numbers that are not numbers are dropped.
        let (_, all) = call_noting(&client, &notes, tool, json!({"mode": "nonfinite"})).await;
        assert_in_order(&all, tool);
        let finite = guest_notes(&all, tool);
        assert_eq!(finite.len(), 1, "{all:#?}");
        assert_eq!((finite[0].progress, finite[0].total), (3.0, Some(3.0)));

        // And the server serves on. A call that ends before its first
        // report (or the first still-running notice, after a second) is
        // sent no progress at all: not even "started" and "done".
        let started = Instant::now();
        let (result, quick) =
            call_noting(&client, &notes, "hostile_slow_upstream", json!({})).await;
        assert_eq!(structured(&result)["status"], 200);
        if started.elapsed() < Duration::from_secs(1) {
            assert!(quick.is_empty(), "{quick:#?}");
        }
        let _ = client.cancel().await;
    })
    .await;
}

#[tokio::test]
async fn a_waiting_call_outlives_the_deadline_up_to_the_wait_limit_and_no_further() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let (client, notes) =
            stdio_client(&sim, dir.path(), "timeout_secs = 2\nmax_wait_secs = 3").await;

        // 4 s: past the 2 s deadline, within 2 + 3 s.
        let (result, _) = call_noting(&client, &notes, "hostile_wait", json!({"seconds": 4})).await;
        let out = structured(&result);
        assert_eq!(out["waited_secs"], 4, "{out}");
        assert_eq!(
            out["wait_limit_secs"], 3,
            "the guest is told the limit: {out}"
        );

        // A tool that does not declare it waits gets no extra time.
        let (result, _) =
            call_noting(&client, &notes, "hostile_sleep", json!({"seconds": 4})).await;
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let said = text(&result);
        assert!(said.contains("its 2 s deadline"), "{said}");

        // Past 2 + 3 s the waiting call is stopped, whatever it asked.
        let started = Instant::now();
        let (result, _) =
            call_noting(&client, &notes, "hostile_wait", json!({"seconds": 60})).await;
        let took = started.elapsed();
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let said = text(&result);
        assert!(
            said.contains("its 5 s limit") && said.contains("up to 3 s of waiting"),
            "{said}"
        );
        assert!(took >= Duration::from_secs(5), "stopped early: {took:?}");
        // A bound against a hang, not a latency check.
        assert!(took < Duration::from_secs(30), "{took:?}");

        // May wait long, not compute long: a waiting tool that spins is
        // stopped after the plain deadline's worth of running.
        let (client, notes) =
            stdio_client(&sim, dir.path(), "timeout_secs = 2\nmax_wait_secs = 120").await;
        let started = Instant::now();
        let (result, _) = call_noting(&client, &notes, "hostile_wait", json!({"spin": true})).await;
        let took = started.elapsed();
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let said = text(&result);
        assert!(said.contains("computed for more than 2 s"), "{said}");
        // A bound against a hang (the wall limit is 122 s), not a latency
        // check.
        assert!(took < Duration::from_secs(60), "{took:?}");
        let _ = client.cancel().await;
    })
    .await;
}

/// Starts `count` waits of a minute, `per_session` to a session (the
/// per-session call limit is 16), and returns their clients, tokens and
/// handles.
async fn start_waits(
    server: &HttpServer,
    count: usize,
    per_session: usize,
) -> (
    Vec<(RunningService<RoleClient, Notes>, Notes)>,
    Vec<(usize, ProgressToken)>,
    Vec<tokio::task::JoinHandle<CallToolResult>>,
) {
    let mut clients = Vec::new();
    let mut tokens = Vec::new();
    let mut waits = Vec::new();
    for i in 0..count {
        if i % per_session == 0 {
            clients.push(http_session(server).await);
        }
        let session = clients.len() - 1;
        let handle = start_call(&clients[session].0, "hostile_wait", json!({"seconds": 60})).await;
        tokens.push((session, handle.progress_token.clone()));
        waits.push(tokio::spawn(finish(handle)));
    }
    (clients, tokens, waits)
}

/// How many of the waits have reported progress from inside the sandbox.
fn running(
    clients: &[(RunningService<RoleClient, Notes>, Notes)],
    tokens: &[(usize, ProgressToken)],
) -> usize {
    tokens
        .iter()
        .filter(|(session, token)| {
            !guest_notes(&clients[*session].1.of(token), "hostile_wait").is_empty()
        })
        .count()
}

/// Reads on a session of their own answer while the waits hold their slots.
async fn reads_answer(server: &HttpServer) {
    let reader = server.client().await;
    for _ in 0..5 {
        let call = reader.call_tool(
            CallToolRequestParams::new("hostile_slow_upstream")
                .with_arguments(json!({}).as_object().cloned().unwrap()),
        );
        // A bound against a hang, not a latency check.
        let result = tokio::time::timeout(Duration::from_secs(30), call)
            .await
            .expect("a read answered while calls wait")
            .expect("a result");
        assert_eq!(structured(&result)["status"], 200, "{result:?}");
    }
    let _ = reader.cancel().await;
}

#[tokio::test]
async fn reads_answer_while_twenty_calls_wait() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = hostile_config(
            dir.path(),
            "timeout_secs = 5\nmax_wait_secs = 120\nmax_waiting_per_caller = 20",
        );
        let server = HttpServer::start(&sim, hostile_opts(&config)).await;
        let (clients, tokens, waits) = start_waits(&server, 20, 10).await;
        // All 20 are inside the sandbox at once, each reporting.
        wait_until(
            Lazy(|| format!("all 20 waits to report; {} do", running(&clients, &tokens))),
            Duration::from_secs(60),
            async || (running(&clients, &tokens) == 20).then_some(()),
        )
        .await;
        reads_answer(&server).await;
        assert!(
            waits.iter().all(|w| !w.is_finished()),
            "the waits are still running"
        );
        for (client, _) in clients {
            let _ = client.cancel().await;
        }
    })
    .await;
}

/// With as many waits as `max_concurrent_calls`, reads still find a slot:
/// waiting calls may hold at most three quarters of them, and the rest
/// queue. Without that reservation the reads here would queue too.
#[tokio::test]
async fn waiting_calls_never_take_the_slots_reads_need() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = hostile_config(
            dir.path(),
            "timeout_secs = 5\nmax_wait_secs = 120\nmax_concurrent_calls = 20\nmax_waiting_per_caller = 20",
        );
        let server = HttpServer::start(&sim, hostile_opts(&config)).await;
        let (clients, tokens, waits) = start_waits(&server, 20, 10).await;
        wait_until(
            Lazy(|| format!("15 waits to report; {} do", running(&clients, &tokens))),
            Duration::from_secs(60),
            async || (running(&clients, &tokens) >= 15).then_some(()),
        )
        .await;
        reads_answer(&server).await;
        assert_eq!(
            running(&clients, &tokens),
            15,
            "20 - 20/4 waits run, the other 5 queue for a wait slot"
        );
        assert!(waits.iter().all(|w| !w.is_finished()));
        for (client, _) in clients {
            let _ = client.cancel().await;
        }
    })
    .await;
}
