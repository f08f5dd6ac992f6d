//! Shared harness: a simulator with schema validation on, and the real
//! `pve-mcp` binary spawned over stdio with an rmcp client. Every result
//! and all stderr is scanned for the test's secrets ([`crate::secret_scan`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pve_sim::{ClusterFlavor, Scenario, SimConfig, Simulator};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;

pub use crate::secret_scan::Secrets;
pub use pve_sim::testing::{Lazy, installed, wait_for_request, wait_until};
pub use pve_sim::tokens::{
    ADMIN_TOKEN_ID, ADMIN_TOKEN_SECRET, AUDITOR_TOKEN_ID, AUDITOR_TOKEN_SECRET, LAB_TOKEN_ID,
    LAB_TOKEN_SECRET,
};

/// The real binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_pve-mcp");

/// The hostile component, built by the host's build script.
pub const HOSTILE_WASM: &str = env!("PVE_MCP_HOSTILE_WASM_PATH");

/// Every tool of the embedded component, as `pve-mcp tools --json`
/// describes it (the MCP definition plus `tier`, `waits`, `routes` and
/// `privileges`), read once: the suite takes its tool list from the
/// component's own registry, not from a list of its own.
pub fn described_tools() -> &'static [Value] {
    static TOOLS: std::sync::OnceLock<Vec<Value>> = std::sync::OnceLock::new();
    TOOLS.get_or_init(|| {
        serde_json::from_slice(&tools_output("--json"))
            .expect("pve-mcp tools --json prints a JSON list")
    })
}

/// What `pve-mcp tools FORMAT` prints of the embedded component, in a clean
/// environment with the shared compile cache.
pub fn tools_output(format: &str) -> Vec<u8> {
    tools_output_with(&[format])
}

/// What `pve-mcp tools ARGS...` prints, as [`tools_output`].
pub fn tools_output_with(args: &[&str]) -> Vec<u8> {
    let format = args.join(" ");
    let out = std::process::Command::new(BIN)
        .arg("tools")
        .args(args)
        .env_clear()
        .env("PVE_MCP_CACHE_DIR", cache_dir())
        .output()
        .expect("running pve-mcp tools");
    assert!(out.status.success(), "pve-mcp tools {format}: {out:?}");
    out.stdout
}

/// The names of the read tools, or (`false`) of the tools that write;
/// with `default_only`, only those of the toolsets offered by default.
fn names_where(tier_is_read: bool, default_only: bool) -> Vec<&'static str> {
    described_tools()
        .iter()
        .filter(|t| (t["tier"] == "read") == tier_is_read)
        .filter(|t| !default_only || t["default"] == true)
        .map(|t| t["name"].as_str().expect("every tool has a name"))
        .collect()
}

/// The read tools of the default toolsets, in the component's order: what
/// `tools/list` reports under the default read-only policy.
pub fn catalog() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| names_where(true, true))
}

/// Every read tool, opt-in toolsets' too (`--toolsets all`).
pub fn read_tools() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| names_where(true, false))
}

/// The tools that write (tier `write` or `destructive`): hidden from
/// `tools/list` under the default read-only policy, listed by
/// `pve-mcp tools`.
pub fn write_tools() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| names_where(false, false))
}

/// Every test gets this long before it is failed, so a hang is a failure
/// with a message rather than a stuck CI run.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The official PVE API schema, used to validate every request the guest
/// makes. It is AGPL test data from shared/, never compiled in.
pub fn schema_path() -> PathBuf {
    let path = pve_sim::testing::schema_file();
    assert!(
        path.is_file(),
        "the PVE API schema is missing at {}; the e2e tests validate every request against it",
        path.display()
    );
    path
}

/// A standard simulated cluster with request validation on.
pub async fn simulator() -> Simulator {
    Simulator::start(SimConfig {
        schema_path: Some(schema_path()),
        ..SimConfig::default()
    })
    .await
    .expect("starting the simulator")
}

/// Fails the test if the guest sent anything the real API would reject.
pub fn assert_no_schema_violations(sim: &Simulator) {
    let violations = sim.schema_violations();
    assert!(
        violations.is_empty(),
        "requests the real PVE API would reject: {violations:#?}"
    );
}

/// How the server under test is configured.
#[derive(Clone)]
pub struct Opts {
    /// Describe the default cluster through the environment (the
    /// reference server's way); off when a config file lists the clusters.
    pub env_cluster: bool,
    pub token_id: String,
    pub token_secret: String,
    pub tls: Tls,
    pub env: Vec<(String, String)>,
    pub args: Vec<String>,
}

/// Which TLS trust the server is given.
#[derive(Clone)]
pub enum Tls {
    CaFile,
    Fingerprint(String),
    Nothing,
    Insecure,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            env_cluster: true,
            token_id: ADMIN_TOKEN_ID.into(),
            token_secret: ADMIN_TOKEN_SECRET.into(),
            tls: Tls::CaFile,
            env: Vec::new(),
            args: Vec::new(),
        }
    }
}

impl Opts {
    pub fn auditor() -> Self {
        Opts {
            token_id: AUDITOR_TOKEN_ID.into(),
            token_secret: AUDITOR_TOKEN_SECRET.into(),
            ..Opts::default()
        }
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.into());
        self
    }
}

/// A temp dir per server, plus the shared compiled-component cache, so
/// each spawn does not recompile the component. The first use fills it
/// with both components, compiled with Cranelift (`pve-mcp tools` does not
/// start on Winch), so servers started at once by parallel tests neither
/// each compile nor run Winch's code: only `compile_cache` tests that.
pub fn cache_dir() -> PathBuf {
    static FILLED: std::sync::Once = std::sync::Once::new();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pve-mcp-cache");
    FILLED.call_once(|| {
        fill_cache(&dir, None);
        fill_cache(&dir, Some(HOSTILE_WASM));
    });
    dir
}

/// Runs `pve-mcp tools` (with `component`, else the embedded one) in a
/// clean environment with `cache` as its compile cache, which it fills:
/// one-shot commands compile with Cranelift and store the artifact before
/// they exit.
pub fn fill_cache(cache: &Path, component: Option<&str>) {
    let mut cmd = std::process::Command::new(BIN);
    if let Some(path) = component {
        cmd.args(["--component", path]);
    }
    let out = cmd
        .arg("tools")
        .env_clear()
        .env("PVE_MCP_CACHE_DIR", cache)
        .output()
        .expect("running pve-mcp tools");
    assert!(out.status.success(), "filling the compile cache: {out:?}");
}

/// The command for `pve-mcp <args>` with a clean environment pointed at
/// the simulator.
pub fn command(sim: &Simulator, opts: &Opts, dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("PVE_MCP_CACHE_DIR", cache_dir());
    if opts.env_cluster {
        cmd.env("PVE_BASE_URL", sim.base_url());
        if !opts.token_id.is_empty() {
            cmd.env("PVE_API_TOKEN_ID", &opts.token_id)
                .env("PVE_API_TOKEN_SECRET", &opts.token_secret);
        }
    }
    match &opts.tls {
        Tls::CaFile => {
            let ca = dir.join("pve-root-ca.pem");
            std::fs::write(&ca, sim.ca_pem()).expect("writing the CA file");
            cmd.env("PVE_CA_FILE", ca);
        }
        Tls::Fingerprint(fp) => {
            cmd.env("PVE_TLS_FINGERPRINT", fp);
        }
        Tls::Nothing => {}
        Tls::Insecure => {
            cmd.env("PVE_VERIFY_SSL", "false");
        }
    }
    for (k, v) in &opts.env {
        cmd.env(k, v);
    }
    cmd.args(&opts.args).args(args);
    cmd
}

/// Hex SHA-256 of `bytes`, as `pve-mcp --version` and the audit log print
/// a component's.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The WIT package of the contract in `wit/`, e.g. `pve-mcp:guest@0.2.0`.
pub fn wit_package() -> String {
    let wit = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../wit/pve-tools.wit"))
        .expect("wit/pve-tools.wit");
    wit.lines()
        .find_map(|l| l.strip_prefix("package "))
        .expect("a package line")
        .trim_end_matches(';')
        .to_owned()
}

/// A running `pve-mcp serve` with an MCP client attached.
pub struct Server {
    pub client: RunningService<RoleClient, ()>,
    /// The server process, e.g. to send it SIGHUP.
    pub pid: Option<u32>,
    stderr: Arc<Mutex<String>>,
    /// The task copying the child's stderr into `stderr`; it ends at EOF.
    reader: Option<tokio::task::JoinHandle<()>>,
    /// Scans stderr and the audit log for the test's secrets, at
    /// [`Server::stop`] and when dropped.
    scan: crate::secret_scan::ScanOnDrop,
    _dir: tempfile::TempDir,
}

/// How long `stop()` waits for the server's stderr to reach EOF.
const STDERR_DRAIN: Duration = Duration::from_secs(30);

impl Server {
    /// Spawns `pve-mcp -vv serve` against the simulator.
    pub async fn start(sim: &Simulator, opts: Opts) -> Server {
        let secrets = Secrets::of(&opts);
        let dir = tempfile::tempdir().expect("temp dir");
        let cmd = command(sim, &opts, dir.path(), &["-vv", "serve"]);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning pve-mcp serve");
        let pid = transport.id();
        let log = Arc::new(Mutex::new(String::new()));
        let reader = stderr.map(|mut stderr| {
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    log.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            })
        });
        let client = ().serve(transport).await.unwrap_or_else(|e| {
            panic!(
                "MCP handshake with pve-mcp failed: {e}\nstderr:\n{}",
                log.lock().unwrap()
            )
        });
        Server {
            client,
            pid,
            scan: crate::secret_scan::ScanOnDrop {
                secrets,
                stderr: log.clone(),
            },
            stderr: log,
            reader,
            _dir: dir,
        }
    }

    /// Spawns the server with `config` (TOML text) written to
    /// `dir/pve-mcp.toml`, plus `opts`; the audit log, when the config
    /// names one, is the test's to read.
    pub async fn with_config(sim: &Simulator, dir: &Path, config: &str, opts: Opts) -> Server {
        let path = dir.join("pve-mcp.toml");
        std::fs::write(&path, config).expect("writing the config");
        Server::start(
            sim,
            opts.arg("--config").arg(path.to_str().expect("UTF-8 path")),
        )
        .await
    }

    /// The hostile component under `policy` (a `[policy]` section and
    /// rules), with the audit log, arguments included, at
    /// `dir/audit.jsonl`.
    pub async fn hostile(sim: &Simulator, dir: &Path, policy: &str) -> Server {
        let audit = dir.join("audit.jsonl");
        let config = format!(
            "{policy}\n[audit]\npath = \"{}\"\ninclude_arguments = true\n",
            audit.display()
        );
        let opts = Opts::default().arg("--component").arg(HOSTILE_WASM);
        Server::with_config(sim, dir, &config, opts).await
    }

    /// Calls a tool; protocol errors are returned, not panicked on.
    pub async fn try_call(&self, tool: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        let args = args.as_object().cloned().unwrap_or_default();
        let result = self
            .client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
            .await;
        let what = format!("the result of {tool}");
        match &result {
            Ok(r) => self
                .scan
                .secrets
                .check(&what, &serde_json::to_string(r).unwrap()),
            Err(e) => self.scan.secrets.check(&what, &e.to_string()),
        }
        result
    }

    /// The names `tools/list` offers.
    pub async fn tool_names(&self) -> Vec<String> {
        self.client
            .list_all_tools()
            .await
            .expect("tools/list")
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// Calls a tool that must produce a result (successful or `isError`).
    pub async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        self.try_call(tool, args.clone()).await.unwrap_or_else(|e| {
            panic!(
                "{tool}({args}) failed at the protocol level: {e}\nstderr:\n{}",
                self.stderr()
            )
        })
    }

    /// Calls a tool that must succeed and returns its structured content.
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        self.ok_result(tool, args).await.1
    }

    /// Calls a tool that must succeed; returns the whole result (for its
    /// text) and its structured content.
    pub async fn ok_result(&self, tool: &str, args: Value) -> (CallToolResult, Value) {
        let result = self.call(tool, args.clone()).await;
        assert_eq!(
            result.is_error,
            Some(false),
            "{tool}({args}) failed: {}\nstderr:\n{}",
            text(&result),
            self.stderr()
        );
        let structured = result
            .structured_content
            .clone()
            .unwrap_or_else(|| panic!("{tool}({args}) has no structuredContent"));
        (result, structured)
    }

    /// Calls a tool that must fail with `isError: true`; returns its text.
    pub async fn err(&self, tool: &str, args: Value) -> String {
        let result = self.call(tool, args.clone()).await;
        assert_eq!(
            result.is_error,
            Some(true),
            "{tool}({args}) should fail but returned {result:?}"
        );
        text(&result)
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Closes stdin, waits for the server to exit and for its stderr to
    /// be read to the end; returns all of it.
    pub async fn stop(self) -> String {
        let log = self.stderr.clone();
        let _ = self.client.cancel().await;
        if let Some(reader) = self.reader {
            tokio::time::timeout(STDERR_DRAIN, reader)
                .await
                .expect("the server's stderr did not reach EOF after it stopped")
                .expect("the stderr reader panicked");
        }
        let log = log.lock().unwrap().clone();
        self.scan.secrets.check_server(&log);
        log
    }
}

/// All text blocks of a result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The vmids in a `pve_list_vms` result, in order.
pub fn vmids(list: &Value) -> Vec<u64> {
    list["vms"]
        .as_array()
        .expect("vms array")
        .iter()
        .map(|v| v["vmid"].as_u64().expect("vmid"))
        .collect()
}

/// Runs a test body with the suite's timeout.
pub async fn within<F: std::future::Future<Output = ()>>(body: F) {
    tokio::time::timeout(TEST_TIMEOUT, body)
        .await
        .expect("the test did not finish within its time limit");
}

/// `path?query` of every request the simulator saw.
pub fn paths(sim: &Simulator) -> Vec<String> {
    sim.requests()
        .iter()
        .map(|r| format!("{}?{}", r.path, r.query))
        .collect()
}

/// A number within 1e-4 of `expected`.
pub fn assert_approx(v: &Value, expected: f64) {
    let got = v
        .as_f64()
        .unwrap_or_else(|| panic!("{v} is not a number (expected {expected})"));
    assert!((got - expected).abs() < 1e-4, "{got} != {expected}");
}

/// Each call of `tool` fails (`isError`) with a message containing every
/// one of its needles; a failure names the case by its arguments.
pub async fn assert_refusals(server: &Server, tool: &str, cases: &[(Value, &[&str])]) {
    for (args, needles) in cases {
        let message = server.err(tool, args.clone()).await;
        for needle in *needles {
            assert!(
                message.contains(needle),
                "{tool}({args}) does not say {needle:?}: {message}"
            );
        }
    }
}

/// Asserts every field of `expected` (a JSON object) in `actual`, naming
/// `what` and the field on a mismatch; a field expected `null` may also be
/// absent, as with `actual[key] == Value::Null`.
pub fn assert_fields(what: &str, actual: &Value, expected: Value) {
    let fields = expected
        .as_object()
        .unwrap_or_else(|| panic!("{what}: the expected fields are not an object"));
    for (key, want) in fields {
        assert_eq!(&actual[key.as_str()], want, "{what}.{key} in {actual}");
    }
}

/// Asserts the paging fields of a list answer.
pub fn assert_page(out: &Value, total: u64, returned: u64, offset: u64, next: Option<u64>) {
    assert_fields(
        "page",
        out,
        serde_json::json!({"total": total, "returned": returned, "omitted": total - returned,
                           "offset": offset, "next_offset": next}),
    );
}

/// The standard simulator and a server for it with these options.
pub async fn started(opts: Opts) -> (Simulator, Server) {
    let sim = simulator().await;
    let server = Server::start(&sim, opts).await;
    (sim, server)
}

/// Each bad argument is refused, names its field, and nothing is sent.
pub async fn assert_all_invalid(sim: &Simulator, server: &Server, cases: &[(&str, Value, &str)]) {
    for (tool, args, field) in cases {
        let message = server.err(tool, args.clone()).await;
        assert!(
            message.starts_with("Invalid arguments: "),
            "{tool}({args}): {message}"
        );
        assert!(
            message.contains(field),
            "{tool}({args}) does not name {field}: {message}"
        );
    }
    assert!(
        sim.requests().is_empty(),
        "validation must happen before any request: {:?}",
        sim.requests()
    );
}

/// The 5,000-guest cluster, for bounded-output tests.
pub async fn large_simulator() -> Simulator {
    Simulator::start(SimConfig {
        scenario: Scenario::Large { guests: 5000 },
        schema_path: Some(schema_path()),
        ..SimConfig::default()
    })
    .await
    .expect("starting the large simulator")
}

/// The second, standalone cluster (`lab1`, its own credentials).
pub async fn lab_simulator() -> Simulator {
    Simulator::start(SimConfig {
        cluster: ClusterFlavor::Secondary,
        schema_path: Some(schema_path()),
        ..SimConfig::default()
    })
    .await
    .expect("starting the standalone simulator")
}

/// A simulator answering in the shapes real clusters send
/// ([`pve_sim::Shapes::Real`]), with request validation on.
pub async fn real_shapes_simulator() -> Simulator {
    Simulator::start(SimConfig {
        shapes: pve_sim::Shapes::Real,
        schema_path: Some(schema_path()),
        ..SimConfig::default()
    })
    .await
    .expect("starting the real-shapes simulator")
}

/// Fails, naming the call, if `structured` does not match `tool`'s
/// listed `outputSchema`.
pub fn assert_matches_output_schema(
    tools: &[rmcp::model::Tool],
    tool: &str,
    args: &Value,
    structured: &Value,
) {
    let schema = tools
        .iter()
        .find(|t| t.name == tool)
        .unwrap_or_else(|| panic!("{tool} is not listed"))
        .output_schema
        .clone()
        .unwrap_or_else(|| panic!("{tool} has no outputSchema"));
    let validator = jsonschema::validator_for(&Value::Object(schema.as_ref().clone()))
        .unwrap_or_else(|e| panic!("{tool}'s outputSchema does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{tool}({args}) does not match its outputSchema: {errors:?}"
    );
}

/// The human summary: the first text block (the second is the JSON).
pub fn summary(result: &rmcp::model::CallToolResult) -> String {
    text(result).lines().next().unwrap_or_default().to_owned()
}

/// A config file naming two clusters, each with its own CA and token.
pub fn two_clusters(main: &Simulator, lab: &Simulator, dir: &tempfile::TempDir) -> String {
    let main_ca = dir.path().join("main-ca.pem");
    let lab_ca = dir.path().join("lab-ca.pem");
    std::fs::write(&main_ca, main.ca_pem()).unwrap();
    std::fs::write(&lab_ca, lab.ca_pem()).unwrap();
    let path = dir.path().join("pve-mcp.toml");
    std::fs::write(
        &path,
        format!(
            "[clusters.main]\nbase_url = \"{}\"\ntoken_id = \"{ADMIN_TOKEN_ID}\"\ntoken_secret = \"{ADMIN_TOKEN_SECRET}\"\nca_file = \"{}\"\n\n\
             [clusters.lab]\nbase_url = \"{}\"\ntoken_id = \"{LAB_TOKEN_ID}\"\ntoken_secret = \"{LAB_TOKEN_SECRET}\"\nca_file = \"{}\"\n",
            main.base_url(),
            main_ca.display(),
            lab.base_url(),
            lab_ca.display()
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

/// The records of the audit log at `path`, one JSON value a line.
pub fn audit_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}
