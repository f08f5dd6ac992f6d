//! Toolsets, the read-only switch, per-token toolsets and the discovery
//! pair (issue 22): the Python SDK over stdio and Streamable HTTP
//! (tests/interop/python_sdk_toolsets.py), and through the real binary
//! with rmcp's client what the audit log and the start-up check say.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::common::*;

/// tests/interop/python_sdk_toolsets.py: toolsets listed and refused by
/// name, `--read-only`, the discovery pair finding, running and refusing,
/// and two tokens with their own lists over HTTP.
#[test]
fn python_sdk_sees_toolsets_read_only_tokens_and_the_discovery_pair() {
    let found = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed(found, "the Python `mcp` package", "`pip install mcp`") {
        return;
    }
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/python_sdk_toolsets.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(BIN)
        .env("PVE_MCP_CACHE_DIR", cache_dir())
        .output()
        .expect("running python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python toolsets interop failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "[stdio]: guests,tasks",
        "--read-only",
        "discovery pair",
        "[http]: each token",
    ] {
        assert!(stdout.contains(line), "{stdout}");
    }
}

/// A toolset the component does not have stops the start with exit 2,
/// naming the known ones.
#[test]
fn an_unknown_toolset_stops_the_start_naming_the_known_ones() {
    let out = Command::new(BIN)
        .args(["--toolsets", "guests,gests", "demo"])
        .env("PVE_MCP_CACHE_DIR", cache_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"gests\" is not a toolset of this server"),
        "{stderr}"
    );
    assert!(
        stderr.contains("backups, cluster, firewall, guests, ha"),
        "{stderr}"
    );
}

/// A call through `pve_call_tool` is the named tool's call: the audit
/// records that tool and the pair it came through; the instructions name
/// the toolsets and the pair.
#[tokio::test]
async fn a_call_through_the_pair_is_recorded_as_the_named_tools() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let config = dir.path().join("pve-mcp.toml");
        std::fs::write(
            &config,
            format!(
                "[tools]\ntoolsets = [\"discover\"]\n[audit]\npath = \"{}\"\n",
                audit.display()
            ),
        )
        .unwrap();
        let server = Server::start(
            &sim,
            Opts::default()
                .arg("--config")
                .arg(config.to_str().unwrap()),
        )
        .await;
        let instructions = server
            .client
            .peer_info()
            .and_then(|i| i.instructions.clone())
            .unwrap_or_default();
        assert!(
            instructions.contains("Toolsets offered: discover, access, agent, api"),
            "{instructions}"
        );
        assert!(instructions.contains("pve_search_tools"), "{instructions}");
        assert_eq!(
            server.tool_names().await,
            ["pve_search_tools", "pve_call_tool"]
        );
        let out = server
            .ok(
                "pve_call_tool",
                json!({"name": "pve_get_vm_status", "arguments": {"vmid": 100}}),
            )
            .await;
        assert_eq!(out["vmid"], 100, "{out}");
        let records = audit_records(&audit);
        let call = records
            .iter()
            .find(|r| r["kind"] == "call")
            .unwrap_or_else(|| panic!("{records:#?}"));
        assert_eq!(call["tool"], "pve_get_vm_status", "{call}");
        assert_eq!(call["via"], "pve_call_tool", "{call}");
        assert_eq!(call["outcome"], "ok", "{call}");
    })
    .await;
}

/// docs/toolsets.md names every toolset the component declares.
#[test]
fn the_toolsets_page_names_every_toolset() {
    let page = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/toolsets.md"));
    for tool in described_tools() {
        let set = tool["toolset"].as_str().expect("each tool has a toolset");
        assert!(
            page.contains(&format!("| `{set}` |")),
            "docs/toolsets.md lacks {set}"
        );
    }
}
