//! Throughput and latency of `pve-mcp serve --http` under concurrent
//! clients.
//!
//! Run with `cargo bench -p pve-mcp --bench http_load`. The release binary
//! serves Streamable HTTP on 127.0.0.1 with a bearer token, in front of the
//! in-process PVE simulator. For 1, 8 and 64 concurrent clients, each an
//! rmcp Streamable HTTP client with its own MCP session, every client calls
//! `pve_get_vm_status` (one upstream request) back to back. It prints one
//! markdown table: tool calls per second over the whole run, p50 and p99 of
//! the per-call latency the clients saw, and the server's peak RSS
//! (`VmHWM`) at the end.
//!
//! Client and server share the machine's cores, so the numbers are what one
//! box does with both; on two cores the 64-client row mostly shows queueing.
//! `PVE_MCP_BENCH_CALLS` (default 2000) sets the timed calls per row,
//! `PVE_MCP_BENCH_CLIENTS` (default `1,8,64`) the rows.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use pve_sim::{SimConfig, Simulator};
use rmcp::model::{CallToolRequestParams, ClientConfig, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

use support::{Latency, ServerEnv, cpu_time, env_count, latency, load_average, ms, peak_rss_mb};

const TOOL: &str = "pve_get_vm_status";
const BEARER: &str = "bench-token-0123456789abcdef0123456789abcdef";

// Issue 13's targets.
const TARGET_SERVER_CPU: Duration = Duration::from_micros(150);
/// 40 MiB.
const TARGET_PEAK_RSS_MB: f64 = 40.0 * 1.048_576;

#[tokio::main]
async fn main() -> Result<()> {
    // rmcp's HTTP client uses reqwest without a default crypto provider;
    // ring is the one the host uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let calls = env_count("PVE_MCP_BENCH_CALLS", 2000)?;
    let rows = client_counts()?;
    let sim = Simulator::start(SimConfig::default()).await?;
    let work = tempfile::tempdir()?;
    let ca_file = work.path().join("pve-root-ca.pem");
    std::fs::write(&ca_file, sim.ca_pem())?;
    let env = ServerEnv {
        base_url: sim.base_url(),
        ca_file,
        cache_dir: work.path().join("cache"),
        stderr_log: work.path().join("server.stderr"),
    };

    // The server starts with the component already compiled, as every
    // start but the first does: its peak RSS is then what serving costs.
    env.fill_cache().await?;
    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut server = env
        .command()
        .args(["--http", &format!("127.0.0.1:{port}")])
        .env("MCP_AUTH_TOKEN", BEARER)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&env.stderr_log)?)
        .kill_on_drop(true)
        .spawn()
        .context("spawning pve-mcp serve --http")?;
    let pid = server.id().context("the server has no pid")?;
    wait_until_serving(&url, &env).await?;

    // The calls per second are bounded by the client, which shares the
    // machine; the server's own CPU time per call is what it costs.
    let mut table = String::from(
        "| clients | tool calls/s | p50 | p99 | server CPU per call | server peak RSS so far |\n\
         | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    let mut worst_cpu = Duration::ZERO;
    for clients in rows {
        eprintln!("{clients} clients: {calls} calls ...");
        let cpu_before = cpu_time(pid)?;
        let (rate, lat, made) = run(&url, clients, calls).await?;
        // Over every call of the row, warm-up included, and the sessions'
        // handshakes: a small share next to thousands of calls.
        let cpu = (cpu_time(pid)? - cpu_before).div_f64(made as f64);
        worst_cpu = worst_cpu.max(cpu);
        table.push_str(&format!(
            "| {clients} | {rate:.0} | {} | {} | {} | {:.1} MB |\n",
            ms(lat.p50),
            ms(lat.p99),
            ms(cpu),
            peak_rss_mb(pid)?
        ));
    }
    let rss = peak_rss_mb(pid)?;
    let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
    table.push_str(&format!(
        "\nServer peak RSS: {rss:.1} MB (target after 64 sessions: ≤ 40 MiB, {}); \
         server CPU per call: {} at every row (target ≤ 0.15 ms); load average {}.\n",
        verdict(rss <= TARGET_PEAK_RSS_MB),
        verdict(worst_cpu <= TARGET_SERVER_CPU),
        load_average(),
    ));
    println!("{table}");
    let _ = server.kill().await;
    sim.shutdown().await;
    Ok(())
}

fn client_counts() -> Result<Vec<usize>> {
    let raw = std::env::var("PVE_MCP_BENCH_CLIENTS").unwrap_or_else(|_| "1,8,64".into());
    raw.split(',')
        .map(|n| match n.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => bail!("PVE_MCP_BENCH_CLIENTS={raw:?}: give positive whole numbers, like 1,8,64"),
        })
        .collect()
}

type Client = RunningService<RoleClient, ClientConfig>;

async fn connect(url: &str) -> Result<Client> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(BEARER),
    );
    Ok(ClientConfig::default().serve(transport).await?)
}

/// Polls until the server completes an MCP handshake, for up to a minute
/// (a cold start compiles the component).
async fn wait_until_serving(url: &str, env: &ServerEnv) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match connect(url).await {
            Ok(client) => {
                let _ = client.cancel().await;
                return Ok(());
            }
            Err(e) if Instant::now() > deadline => {
                bail!("{e}\n{}", support::server_log(&env.stderr_log))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// `clients` sessions share `calls` timed calls (after a warm-up each);
/// returns calls per second over the timed part, the latency spread, and
/// how many calls were made in all (warm-up included).
async fn run(url: &str, clients: usize, calls: usize) -> Result<(f64, Latency, usize)> {
    let mut sessions = Vec::with_capacity(clients);
    for _ in 0..clients {
        sessions.push(Arc::new(connect(url).await?));
    }
    let per_client = calls.div_ceil(clients);
    let warmup = (per_client / 10).clamp(2, 50);
    let started = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for session in &sessions {
        let session = session.clone();
        let started = started.clone();
        let args: JsonObject = json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        tasks.push(tokio::spawn(async move {
            for _ in 0..warmup {
                call(&session, &args).await?;
            }
            started.wait().await;
            let mut samples = Vec::with_capacity(per_client);
            for _ in 0..per_client {
                let t = Instant::now();
                call(&session, &args).await?;
                samples.push(t.elapsed());
            }
            anyhow::Ok(samples)
        }));
    }
    started.wait().await;
    let t0 = Instant::now();
    let mut samples = Vec::with_capacity(per_client * clients);
    for task in tasks {
        samples.extend(task.await??);
    }
    let wall = t0.elapsed();
    for session in sessions {
        if let Ok(session) = Arc::try_unwrap(session) {
            let _ = session.cancel().await;
        }
    }
    let rate = samples.len() as f64 / wall.as_secs_f64();
    Ok((rate, latency(samples), clients * (warmup + per_client)))
}

async fn call(client: &Client, args: &JsonObject) -> Result<()> {
    let params = CallToolRequestParams::new(TOOL.to_string()).with_arguments(args.clone());
    let result = client.call_tool(params).await?;
    if result.is_error == Some(true) || result.structured_content.is_none() {
        bail!("{TOOL} failed: {:?}", result.content);
    }
    Ok(())
}

/// A port on 127.0.0.1 that was free a moment ago, for a server that takes
/// its address on the command line.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}
