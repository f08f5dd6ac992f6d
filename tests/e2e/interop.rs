//! Interop with the official MCP Python SDK over stdio.

use std::path::Path;
use std::process::Command;

/// Runs tests/interop/python_sdk_client.py. Without the `mcp` package it
/// is skipped with a notice locally, and fails under CI, where `.ci/run`
/// installs it.
#[test]
fn official_python_sdk_lists_and_calls_both_tools() {
    let has_sdk = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_sdk {
        assert!(
            std::env::var_os("CI").is_none(),
            "the Python `mcp` package is missing under CI; .ci/run installs it"
        );
        eprintln!("skipped: `pip install mcp` to run the Python SDK interop test");
        return;
    }
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/python_sdk_client.py");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pve-mcp-cache");
    let out = Command::new("python3")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_pve-mcp"))
        .env("PVE_MCP_CACHE_DIR", cache)
        .output()
        .expect("running python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python interop failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("[legacy]") && stdout.contains("[auto]"),
        "{stdout}"
    );
}
