//! The soak test: `pve-mcp serve --http` under many long sessions, with a
//! policy and the audit log on.
//!
//! Run with `just soak` (or `cargo bench -p pve-mcp --bench soak`). The
//! release binary serves Streamable HTTP on 127.0.0.1 in front of the
//! in-process simulator (1,000 guests); `PVE_MCP_SOAK_SESSIONS` (default 64)
//! rmcp sessions each make `PVE_MCP_SOAK_CALLS` (default 10,000) calls of
//! `pve_get_vm_status` back to back, each about another guest. It checks:
//!
//! - no call is lost or garbled: every call is answered, with the guest it
//!   asked about (vmid, name, node and type);
//! - the server's RSS at the end is within 10% of its RSS after the first
//!   tenth of the calls (64,000 at full size);
//! - `pve-mcp audit verify` passes on the audit log, which holds exactly
//!   three records per call.
//!
//! It prints the numbers as a markdown table and exits non-zero if a check
//! fails. `PVE_MCP_SOAK_DIR` keeps the audit log and the server's stderr
//! there (default: a temporary directory, removed at the end).

// Shared with the other benches, which use other parts of it.
#[allow(dead_code)]
mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use pve_sim::{Scenario, SimConfig, Simulator};

use support::{ServerEnv, env_count};

#[path = "support/soak.rs"]
mod soak;
use soak::Plan;

const BEARER: &str = "soak-token-0123456789abcdef0123456789abcdef";

/// RSS at the end may exceed RSS at the checkpoint by this much.
const RSS_TOLERANCE: f64 = 0.10;

#[tokio::main]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let plan = {
        let sessions = env_count("PVE_MCP_SOAK_SESSIONS", 64)?;
        let calls = env_count("PVE_MCP_SOAK_CALLS", 10_000)?;
        Plan {
            sessions,
            calls,
            checkpoint: (sessions * calls / 10).max(1) as u64,
        }
    };
    let sim = Simulator::start(SimConfig {
        scenario: Scenario::Large {
            guests: soak::GUESTS,
        },
        ..SimConfig::default()
    })
    .await?;
    let temp = tempfile::tempdir()?;
    let dir = match std::env::var_os("PVE_MCP_SOAK_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => temp.path().to_path_buf(),
    };
    std::fs::create_dir_all(&dir)?;
    let audit = dir.join("soak-audit.jsonl");
    let _ = std::fs::remove_file(&audit);
    let config = dir.join("soak.toml");
    std::fs::write(&config, soak::config(&audit))?;
    let ca_file = dir.join("pve-root-ca.pem");
    std::fs::write(&ca_file, sim.ca_pem())?;
    let env = ServerEnv {
        base_url: sim.base_url(),
        ca_file,
        cache_dir: temp.path().join("cache"),
        stderr_log: dir.join("soak-server.stderr"),
    };

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.local_addr()?.port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut server = env
        .command()
        .args(["--http", &format!("127.0.0.1:{port}")])
        .env("MCP_AUTH_TOKEN", BEARER)
        .env("PVE_MCP_CONFIG", &config)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&env.stderr_log)?)
        .kill_on_drop(true)
        .spawn()
        .context("spawning pve-mcp serve --http")?;
    let pid = server.id().context("the server has no pid")?;
    let setup = wait_until_serving(&url, &env).await?;
    let guests = Arc::new(soak::guests(&setup).await?);
    let _ = setup.cancel().await;
    let rss_start = soak::rss_mb(pid)?;

    eprintln!(
        "soak: {} sessions x {} calls ({} in all), {} guests ...",
        plan.sessions,
        plan.calls,
        plan.total(),
        guests.len()
    );
    let at_checkpoint = Arc::new(Mutex::new(None));
    let hook = {
        let at_checkpoint = at_checkpoint.clone();
        let started = Instant::now();
        move || {
            let rss = soak::rss_mb(pid).ok();
            eprintln!(
                "soak: {} calls after {:.0?}, server RSS {rss:.1?} MB",
                plan.checkpoint,
                started.elapsed()
            );
            *at_checkpoint.lock().unwrap() = rss;
        }
    };
    let outcome = soak::run(&url, BEARER, plan, guests, hook).await?;
    let rss_end = soak::rss_mb(pid)?;
    let rss_checkpoint = at_checkpoint
        .lock()
        .unwrap()
        .context("the checkpoint never read the server's RSS")?;
    // The chain is verified as the server left it: stop it first, so the
    // file is complete and no longer written.
    let _ = server.kill().await;
    let expected_records = soak::expected_records(plan.total());
    let verified = soak::verify_audit(env!("CARGO_BIN_EXE_pve-mcp"), &audit);
    let audit_bytes = std::fs::metadata(&audit).map(|m| m.len()).unwrap_or(0);

    let rate = outcome.matched as f64 / outcome.wall.as_secs_f64();
    let growth = rss_end / rss_checkpoint - 1.0;
    println!(
        "| measure | value |\n| --- | ---: |\n\
         | sessions x calls | {} x {} = {} |\n\
         | calls answered with the right guest | {} |\n\
         | calls lost, failed or garbled | {} |\n\
         | wall time | {} |\n\
         | tool calls/s | {rate:.0} |\n\
         | server RSS after the handshake and one list | {rss_start:.1} MB |\n\
         | server RSS after {} calls | {rss_checkpoint:.1} MB |\n\
         | server RSS at the end | {rss_end:.1} MB ({:+.1}%) |\n\
         | audit records (expected {expected_records}) | {} |\n\
         | audit log size | {:.0} MB |",
        plan.sessions,
        plan.calls,
        plan.total(),
        outcome.matched,
        outcome.failed,
        minutes(outcome.wall),
        plan.checkpoint,
        growth * 100.0,
        match &verified {
            Ok(n) => format!("{n}, `audit verify` ok"),
            Err(e) => format!("`audit verify` failed: {e}"),
        },
        audit_bytes as f64 / 1e6
    );
    sim.shutdown().await;

    let mut problems = Vec::new();
    if outcome.matched != plan.total() || outcome.failed != 0 {
        problems.push(format!(
            "{} of {} calls were not answered with their guest; first: {:#?}",
            plan.total() - outcome.matched,
            plan.total(),
            outcome.failures
        ));
    }
    if growth > RSS_TOLERANCE {
        problems.push(format!(
            "the server's RSS grew {:.1}% after the first {} calls (limit {:.0}%)",
            growth * 100.0,
            plan.checkpoint,
            RSS_TOLERANCE * 100.0
        ));
    }
    match verified {
        Ok(n) if n == expected_records => {}
        Ok(n) => problems.push(format!(
            "the audit log holds {n} records, not the {expected_records} expected"
        )),
        Err(e) => problems.push(e.to_string()),
    }
    if !problems.is_empty() {
        bail!("the soak failed:\n- {}", problems.join("\n- "));
    }
    Ok(())
}

fn minutes(d: Duration) -> String {
    let s = d.as_secs_f64();
    format!("{:.0} min {:.0} s", (s / 60.0).floor(), s % 60.0)
}

/// Polls until the server completes an MCP handshake, for up to a minute
/// (a cold start compiles the component); returns that session.
async fn wait_until_serving(url: &str, env: &ServerEnv) -> Result<soak::Client> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match soak::connect(url, BEARER).await {
            Ok(client) => return Ok(client),
            Err(e) if Instant::now() > deadline => {
                bail!("{e}\n{}", support::server_log(&env.stderr_log))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}
