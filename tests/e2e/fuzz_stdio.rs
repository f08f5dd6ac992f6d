//! Fuzz target: MCP JSON-RPC framing over stdio. Lines of hostile
//! JSON-RPC (garbage, truncated, deeply nested, huge numbers, valid
//! methods with hostile params, mutated valid requests) go into one
//! long-lived `pve-mcp serve`, in batches. Everything it writes must be a
//! JSON-RPC 2.0 message, and after each batch a ping and a real tool call
//! still get their answers.
//!
//! `PVE_MCP_FUZZ_CASES=1000000 cargo test --release -p pve-mcp --test e2e fuzz_stdio`

use std::process::Stdio;
use std::time::Duration;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::common::*;
use crate::fuzz_gen;

/// Lines written before each check.
pub const BATCH: usize = 500;

/// How long a batch and its checks may take (a generous bound against a
/// hang, not a speed target).
pub const BATCH_LIMIT: Duration = Duration::from_secs(120);

/// The hostile inputs, `count` of them in batches of [`BATCH`].
pub fn batches(count: usize) -> impl Iterator<Item = Vec<Vec<u8>>> {
    let mut runner = TestRunner::new(fuzz_gen::config(0));
    let strategy = fuzz_gen::jsonrpc_line();
    let mut left = count;
    std::iter::from_fn(move || {
        let n = left.min(BATCH);
        left -= n;
        (n > 0).then(|| {
            (0..n)
                .map(|_| strategy.new_tree(&mut runner).unwrap().current())
                .collect()
        })
    })
}

/// Keeps the last batch for the failure message, in a file.
pub fn keep_batch(name: &str, batch: &[Vec<u8>]) -> std::path::PathBuf {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let mut text = batch.join(&b'\n');
    text.push(b'\n');
    std::fs::write(&path, text).unwrap();
    path
}

/// Writes one line.
async fn send(stdin: &mut tokio::process::ChildStdin, line: &[u8]) {
    stdin.write_all(line).await.unwrap();
    stdin.write_all(b"\n").await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn fuzz_stdio_framing() {
    let sim = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let stderr = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
    let mut cmd = command(&sim, &Opts::default(), dir.path(), &["serve"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Read stdout while writing, so a full pipe cannot stall the server.
    let (tx, mut replies) = mpsc::unbounded_channel::<String>();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "1"}}})
        .to_string()
        .as_bytes(),
    )
    .await;
    send(
        &mut stdin,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;

    let total = fuzz_gen::cases(1_000) as usize;
    let mut sent = 0;
    for (n, batch) in batches(total).enumerate() {
        for line in &batch {
            send(&mut stdin, line).await;
        }
        sent += batch.len();
        // The checks: a ping and a real call, answered after the batch.
        let ping = format!("fuzz-ping-{n}");
        let call = format!("fuzz-call-{n}");
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": ping, "method": "ping"})
                .to_string()
                .as_bytes(),
        )
        .await;
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": call, "method": "tools/call",
            "params": {"name": "pve_get_vm_status", "arguments": {"vmid": 100}}})
            .to_string()
            .as_bytes(),
        )
        .await;
        stdin.flush().await.unwrap();
        let answered = tokio::time::timeout(BATCH_LIMIT, async {
            let (mut pinged, mut called) = (false, false);
            while !(pinged && called) {
                let Some(line) = replies.recv().await else {
                    return Err("stdout closed".to_string());
                };
                let message: Value = serde_json::from_str(&line)
                    .map_err(|e| format!("stdout carried a non-JSON line ({e}): {line}"))?;
                if message["jsonrpc"] != "2.0" {
                    return Err(format!("not JSON-RPC 2.0: {line}"));
                }
                if message["id"] == ping.as_str() {
                    pinged = message["result"] == json!({});
                    if !pinged {
                        return Err(format!("ping: {line}"));
                    }
                } else if message["id"] == call.as_str() {
                    called = message["result"]["structuredContent"]["vmid"] == 100;
                    if !called {
                        return Err(format!("call: {line}"));
                    }
                }
            }
            Ok(())
        })
        .await;
        if let Err(e) = answered.unwrap_or_else(|_| Err("no answer in time".into())) {
            let kept = keep_batch("fuzz_stdio_batch.jsonl", &batch);
            let log = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default();
            let tail = &log[log.floor_char_boundary(log.len().saturating_sub(4000))..];
            panic!(
                "after {sent} inputs (batch in {}): {e}\nstderr tail:\n{tail}",
                kept.display()
            );
        }
    }
    assert_eq!(sent, total);
    assert!(child.try_wait().unwrap().is_none(), "pve-mcp exited");
    eprintln!("fuzz_stdio_framing: {sent} inputs");
}
