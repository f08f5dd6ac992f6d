//! What `pve-mcp serve` costs on top of talking to Proxmox directly.
//!
//! Run with `cargo bench -p pve-mcp --bench stdio`. Everything runs against
//! the in-process PVE simulator on 127.0.0.1, so the numbers are about
//! pve-mcp, not about a network or a real cluster. It prints one markdown
//! table:
//!
//! - **Floor:** sequential keep-alive HTTPS GETs from Rust straight to the
//!   simulator (hyper-util + hyper-rustls, trusting the simulator's CA): the
//!   least any client can pay for the same answer.
//! - **Through pve-mcp:** sequential MCP `tools/call pve_get_vm_status` over
//!   stdio from an rmcp client to the release binary, once with node and type
//!   given (one upstream request) and once with only the vmid (node and type
//!   resolved first: two upstream requests). Each is compared with the floor
//!   for the same upstream requests; the difference is what the sandbox,
//!   the egress gate, JSON and the stdio transport add per call.
//! - **In-process:** the same calls through `App::call` inside this process
//!   (sandbox, egress gate and upstream client, but no MCP, JSON-RPC, stdio
//!   or process boundary), to tell where the overhead goes.
//! - **Start-up:** spawn to the first `tools/list` answered, cold (empty
//!   component cache, so Winch compiles the guest, and Cranelift only after
//!   the start) and warm (the compiled component is loaded from the cache):
//!   what an MCP client waits for when it launches pve-mcp.
//! - **Peak RSS** (`VmHWM`) of the server after the call loop.
//! - **Audit log:** the one-request call again through a second server with
//!   the hash-chained audit log on (`PVE_MCP_AUDIT_PATH`), to price it.
//!
//! The ways of getting the same answer take turns in blocks of 100
//! back-to-back calls, so drifting load affects them alike.
//!
//! Targets are printed next to the numbers with PASS/MISS; they are
//! informational and the benchmark always exits 0 when it could measure.
//! `PVE_MCP_BENCH_CALLS` (default 2000) sets the number of timed calls per
//! row, `PVE_MCP_BENCH_STARTS` (default 5) the start-ups per median.
//! `PVE_MCP_BENCH_CPU_ONLY=1` measures only the server's CPU time per call
//! (and its peak RSS): a quick A/B reading while changing the server.

use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod support;

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use pve_mcp::config::Config;
use pve_mcp::sandbox::component::ComponentSource;
use pve_mcp::sandbox::component::{CacheDir, FirstCompile};
use pve_mcp::server::app::App;
use pve_mcp::tools::CallOutcome;
use pve_sim::tokens::{ADMIN_TOKEN_ID, ADMIN_TOKEN_SECRET};
use pve_sim::{SimConfig, Simulator};
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

use support::{
    Latency, ServerEnv, cpu_time, env_count, latency, load_average, ms, peak_rss_mb, server_log,
};

const STATUS_PATH: &str = "/api2/json/nodes/pve1/qemu/100/status/current";
const RESOURCES_PATH: &str = "/api2/json/cluster/resources?type=vm";
const TOOL: &str = "pve_get_vm_status";

// Issue 13's targets.
const TARGET_OVERHEAD_P50: Duration = Duration::from_micros(150);
const TARGET_COLD_START: Duration = Duration::from_millis(150);
const TARGET_WARM_START: Duration = Duration::from_millis(15);
const TARGET_SERVER_CPU: Duration = Duration::from_micros(130);
/// 20 MiB.
const TARGET_PEAK_RSS_MB: f64 = 20.0 * 1.048_576;

#[tokio::main]
async fn main() -> Result<()> {
    let counts = Counts::from_env()?;
    let sim = Simulator::start(SimConfig::default()).await?;
    let work = tempfile::tempdir()?;
    let ca_file = work.path().join("pve-root-ca.pem");
    std::fs::write(&ca_file, sim.ca_pem())?;
    let server_env = |cache: &str| ServerEnv {
        base_url: sim.base_url(),
        ca_file: ca_file.clone(),
        cache_dir: work.path().join(cache),
        stderr_log: work.path().join("server.stderr"),
    };

    if std::env::var_os("PVE_MCP_BENCH_CPU_ONLY").is_some() {
        let env = server_env("warm-cache");
        env.fill_cache().await?;
        let server = Server::spawn(&env).await?;
        let explicit = arguments(json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"}));
        let cpu = server_cpu_per_call(&server, &explicit, counts).await?;
        println!(
            "server CPU per call: {} over {} calls; peak RSS {:.1} MB",
            ms(cpu),
            counts.calls,
            peak_rss_mb(server.pid)?
        );
        server.stop().await;
        sim.shutdown().await;
        return Ok(());
    }
    let direct = DirectClient::new(&sim)?;
    let app = in_process_app(&server_env("in-process-cache")).await?;

    let starts = counts.starts;
    eprintln!("start-up: {starts} cold and {starts} warm ...");
    let cold = start_up_median(starts, |i| server_env(&format!("cold-cache-{i}"))).await?;
    let warm_env = server_env("warm-cache");
    warm_env.fill_cache().await?;
    let warm = start_up_median(starts, |_| server_env("warm-cache")).await?;

    let (warmup, calls) = (counts.warmup, counts.calls);
    eprintln!("calls: {warmup} + {calls} per op, in turns of {BLOCK} ...");
    let server = Server::spawn(&warm_env).await?;
    // The same server with the hash-chained audit log on: one call record
    // and one egress record per call, flushed before the result returns.
    let audit_log = work.path().join("audit.jsonl");
    let audited = Server::spawn_with(&warm_env, &[("PVE_MCP_AUDIT_PATH", &audit_log)]).await?;
    let explicit = arguments(json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"}));
    let resolved = arguments(json!({"vmid": 100}));
    let [floor_one, in_process_one, through_one, audited_one] = measure(
        counts,
        [
            op(|| direct.get_all(&[STATUS_PATH])),
            op(|| app_call(&app, &explicit)),
            op(|| server.call(TOOL, &explicit)),
            op(|| audited.call(TOOL, &explicit)),
        ],
    )
    .await?;
    audited.stop().await;
    let [floor_two, in_process_two, through_two] = measure(
        counts,
        [
            op(|| direct.get_all(&[RESOURCES_PATH, STATUS_PATH])),
            op(|| app_call(&app, &resolved)),
            op(|| server.call(TOOL, &resolved)),
        ],
    )
    .await?;
    let server_cpu = server_cpu_per_call(&server, &explicit, counts).await?;
    let peak_rss_mb = peak_rss_mb(server.pid)?;
    server.stop().await;

    let report = Report {
        counts,
        floor_one,
        floor_two,
        in_process_one,
        in_process_two,
        through_one,
        through_two,
        audited_one,
        cold,
        warm,
        peak_rss_mb,
        server_cpu,
    };
    println!("{}", report.markdown());
    sim.shutdown().await;
    Ok(())
}

/// How much to measure; overridable so a quick run is possible.
#[derive(Debug, Clone, Copy)]
struct Counts {
    warmup: usize,
    calls: usize,
    starts: usize,
}

impl Counts {
    fn from_env() -> Result<Counts> {
        let calls = env_count("PVE_MCP_BENCH_CALLS", 2000)?;
        Ok(Counts {
            warmup: (calls / 10).clamp(10, 200),
            calls,
            starts: env_count("PVE_MCP_BENCH_STARTS", 5)?,
        })
    }
}

// ---------------------------------------------------------------------------
// Statistics

/// One thing to time: each call starts one request (or call) and awaits it.
type Op<'a> = Box<dyn FnMut() -> Pin<Box<dyn Future<Output = Result<()>> + 'a>> + 'a>;

fn op<'a, F, Fut>(mut f: F) -> Op<'a>
where
    F: FnMut() -> Fut + 'a,
    Fut: Future<Output = Result<()>> + 'a,
{
    Box::new(move || Box::pin(f()))
}

/// Timed calls an op makes back to back before the next op takes over.
const BLOCK: usize = 100;
/// Untimed calls at the start of each block, to get back to steady state.
const BLOCK_WARMUP: usize = 5;

/// Runs every op `warmup` times untimed, then `calls` times timed, one call
/// at a time. The ops take turns in blocks of [`BLOCK`] back-to-back calls,
/// so that the floor and the calls it is subtracted from see the same
/// machine: on this VM the load from other processes moves the floor by up
/// to 2x between runs.
async fn measure<const N: usize>(counts: Counts, mut ops: [Op<'_>; N]) -> Result<[Latency; N]> {
    for op in &mut ops {
        for _ in 0..counts.warmup {
            op().await?;
        }
    }
    let mut samples: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(counts.calls));
    for block in (0..counts.calls).step_by(BLOCK) {
        let n = BLOCK.min(counts.calls - block);
        for (op, samples) in ops.iter_mut().zip(&mut samples) {
            for _ in 0..BLOCK_WARMUP {
                op().await?;
            }
            for _ in 0..n {
                let started = Instant::now();
                op().await?;
                samples.push(started.elapsed());
            }
        }
    }
    Ok(samples.map(latency))
}

// ---------------------------------------------------------------------------
// The floor: a plain Rust HTTPS client

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// A pooled keep-alive client to the simulator, authenticated like pve-mcp.
struct DirectClient {
    client: Client<Https, Empty<Bytes>>,
    base_url: String,
    authorization: String,
}

impl DirectClient {
    fn new(sim: &Simulator) -> Result<DirectClient> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;

        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(sim.ca_pem().as_bytes()) {
            roots.add(cert?)?;
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .wrap_connector(http);
        Ok(DirectClient {
            client: Client::builder(TokioExecutor::new()).build(connector),
            base_url: sim.base_url(),
            authorization: format!("PVEAPIToken={ADMIN_TOKEN_ID}={ADMIN_TOKEN_SECRET}"),
        })
    }

    /// GETs each path in turn and reads each body to the end.
    async fn get_all(&self, paths: &[&str]) -> Result<()> {
        for path in paths {
            let request = http::Request::get(format!("{}{path}", self.base_url))
                .header(http::header::AUTHORIZATION, &self.authorization)
                .body(Empty::new())?;
            let response = self.client.request(request).await?;
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            if !status.is_success() || body.is_empty() {
                bail!("GET {path}: {status}");
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// pve-mcp as an MCP client sees it

/// A running server and the rmcp client connected to it.
struct Server {
    client: RunningService<RoleClient, ()>,
    pid: u32,
}

impl Server {
    /// Spawns the server and completes the MCP handshake. Its stderr (one
    /// log line per call) goes to a file, shown if it fails to start.
    async fn spawn(env: &ServerEnv) -> Result<Server> {
        Server::spawn_with(env, &[]).await
    }

    /// The same with more environment variables.
    async fn spawn_with(env: &ServerEnv, vars: &[(&str, &Path)]) -> Result<Server> {
        let stderr = std::fs::File::create(&env.stderr_log)?;
        let mut command = env.command();
        for (key, value) in vars {
            command.env(key, value);
        }
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(Stdio::from(stderr))
            .spawn()
            .context("spawning pve-mcp")?;
        let pid = transport.id().context("the child has no pid")?;
        let client = ().serve(transport).await.with_context(|| server_log(&env.stderr_log))?;
        Ok(Server { client, pid })
    }

    /// One `tools/call`; a tool error is a benchmark error, so only
    /// successful calls are timed.
    async fn call(&self, tool: &str, arguments: &JsonObject) -> Result<()> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments.clone());
        let result = self.client.call_tool(params).await?;
        if result.is_error == Some(true) || result.structured_content.is_none() {
            bail!("{tool} failed: {:?}", result.content);
        }
        Ok(())
    }

    async fn stop(self) {
        let _ = self.client.cancel().await;
    }
}

/// The server's own CPU time per call (after warm-up calls): what it
/// spends, whatever the client on the same machine costs.
async fn server_cpu_per_call(
    server: &Server,
    arguments: &JsonObject,
    counts: Counts,
) -> Result<Duration> {
    for _ in 0..counts.warmup {
        server.call(TOOL, arguments).await?;
    }
    let before = cpu_time(server.pid)?;
    for _ in 0..counts.calls {
        server.call(TOOL, arguments).await?;
    }
    Ok((cpu_time(server.pid)? - before).div_f64(counts.calls as f64))
}

fn arguments(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("arguments must be an object, not {other}"),
    }
}

// ---------------------------------------------------------------------------
// The same host in this process, without MCP

/// An [`App`] configured like the spawned server, from the same variables.
async fn in_process_app(env: &ServerEnv) -> Result<App> {
    let vars = env.vars();
    let config = Config::load(None, &|key| {
        vars.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    })?;
    let cache = CacheDir::At(env.cache_dir.clone());
    App::start(
        &config.clusters,
        &config.sandbox,
        &ComponentSource::Embedded,
        &cache,
        FirstCompile::Optimised,
    )
    .await
}

async fn app_call(app: &App, arguments: &JsonObject) -> Result<()> {
    match app
        .call(&pve_mcp::caller::Caller::stdio(), TOOL, arguments)
        .await
        .outcome
    {
        CallOutcome::Output {
            is_error: false, ..
        } => Ok(()),
        other => bail!("{TOOL} failed in-process: {other:?}"),
    }
}

/// Spawn to the first `tools/list` answered.
async fn time_to_first_list(env: &ServerEnv) -> Result<Duration> {
    let started = Instant::now();
    let server = Server::spawn(env).await?;
    let tools = server.client.list_tools(None).await?;
    let elapsed = started.elapsed();
    if !tools.tools.iter().any(|t| t.name == TOOL) {
        bail!("tools/list has no {TOOL}");
    }
    server.stop().await;
    Ok(elapsed)
}

/// Median start-up over `runs` servers, run `i` using `env(i)`.
async fn start_up_median(runs: usize, env: impl Fn(usize) -> ServerEnv) -> Result<Duration> {
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs {
        samples.push(time_to_first_list(&env(i)).await?);
    }
    Ok(latency(samples).p50)
}

// ---------------------------------------------------------------------------
// The report

struct Report {
    counts: Counts,
    floor_one: Latency,
    floor_two: Latency,
    in_process_one: Latency,
    in_process_two: Latency,
    through_one: Latency,
    through_two: Latency,
    audited_one: Latency,
    cold: Duration,
    warm: Duration,
    peak_rss_mb: f64,
    /// The server's CPU time per call, 1 upstream GET.
    server_cpu: Duration,
}

impl Report {
    fn markdown(&self) -> String {
        let mut t = Table::default();
        t.latency("floor: direct GET status/current", self.floor_one);
        t.latency(
            "in-process App::call, vmid+node+type (no MCP/stdio)",
            self.in_process_one,
        );
        t.latency(
            "through pve-mcp: get_vm_status vmid+node+type (1 upstream GET)",
            self.through_one,
        );
        t.overhead(
            "**overhead**, 1 upstream GET",
            self.through_one,
            self.floor_one,
        );
        t.latency(
            "through pve-mcp with the audit log on (1 upstream GET)",
            self.audited_one,
        );
        t.row(
            "audit log cost (audit on − off)",
            signed_ms(self.audited_one.p50, self.through_one.p50),
            signed_ms(self.audited_one.p99, self.through_one.p99),
            "",
            None,
        );
        t.latency(
            "floor: direct GET cluster/resources + status/current",
            self.floor_two,
        );
        t.latency(
            "in-process App::call, vmid only (no MCP/stdio)",
            self.in_process_two,
        );
        t.latency(
            "through pve-mcp: get_vm_status vmid only (2 upstream GETs)",
            self.through_two,
        );
        t.overhead(
            "**overhead**, 2 upstream GETs",
            self.through_two,
            self.floor_two,
        );
        t.row(
            "cold start (no cached artifact: Winch), spawn → tools/list",
            ms(self.cold),
            "(median)",
            "≤ 150 ms",
            Some(self.cold <= TARGET_COLD_START),
        );
        t.row(
            "warm start (cached), spawn → tools/list",
            ms(self.warm),
            "(median)",
            "≤ 15 ms",
            Some(self.warm <= TARGET_WARM_START),
        );
        t.row(
            "server CPU per call, 1 upstream GET (user + system, all threads)",
            ms(self.server_cpu),
            "(mean)",
            "≤ 0.13 ms",
            Some(self.server_cpu <= TARGET_SERVER_CPU),
        );
        t.row(
            "peak RSS (VmHWM) after the call loop",
            format!("{:.1} MB", self.peak_rss_mb),
            "",
            "≤ 20 MiB",
            Some(self.peak_rss_mb <= TARGET_PEAK_RSS_MB),
        );
        let c = self.counts;
        let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
        let load = load_average();
        format!(
            "{}\n{} timed calls per row (in turns of {BLOCK}) after {} warm-up; \
             {} start-ups per median; {cpus} CPUs, load average {load}; \
             simulator in-process on 127.0.0.1.",
            t.0, c.calls, c.warmup, c.starts
        )
    }
}

/// A markdown table with a PASS/MISS column.
struct Table(String);

impl Default for Table {
    fn default() -> Table {
        Table("| measure | p50 | p99 | target | |\n| --- | ---: | ---: | --- | --- |\n".to_string())
    }
}

impl Table {
    fn row(
        &mut self,
        name: &str,
        p50: impl AsRef<str>,
        p99: impl AsRef<str>,
        target: &str,
        pass: Option<bool>,
    ) {
        let verdict = pass.map_or("", |ok| if ok { "PASS" } else { "MISS" });
        let (p50, p99) = (p50.as_ref(), p99.as_ref());
        self.0.push_str(&format!(
            "| {name} | {p50} | {p99} | {target} | {verdict} |\n"
        ));
    }

    fn latency(&mut self, name: &str, l: Latency) {
        self.row(name, ms(l.p50), ms(l.p99), "", None);
    }

    /// `through − floor` at p50 and p99, judged on p50.
    fn overhead(&mut self, name: &str, through: Latency, floor: Latency) {
        let ok = through.p50.saturating_sub(floor.p50) <= TARGET_OVERHEAD_P50;
        let p50 = signed_ms(through.p50, floor.p50);
        let p99 = signed_ms(through.p99, floor.p99);
        self.row(name, p50, p99, "p50 ≤ +0.15 ms", Some(ok));
    }
}

fn signed_ms(a: Duration, b: Duration) -> String {
    format!("{:+.3} ms", (a.as_secs_f64() - b.as_secs_f64()) * 1e3)
}
