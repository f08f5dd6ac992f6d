//! Interop with the official MCP Python SDK over stdio and Streamable HTTP.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{BIN, cache_dir, installed};

/// Whether the Python SDK is installed (see [`installed`]).
pub fn has_python_sdk() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    installed(found, "the Python `mcp` package", "`pip install mcp`")
}

/// Runs tests/interop/SCRIPT with the pve-mcp binary as its argument.
fn run_script(script: &str) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/interop")
        .join(script);
    Command::new("python3")
        .arg(script)
        .arg(BIN)
        .env("PVE_MCP_CACHE_DIR", cache_dir())
        .output()
        .expect("running python3")
}

/// Runs tests/interop/python_sdk_http_client.py: `pve-mcp demo --http`
/// with a bearer token, the SDK's Streamable HTTP client in legacy and
/// auto mode, and a clean SIGTERM.
#[test]
fn official_python_sdk_over_streamable_http_with_a_bearer_token() {
    if !has_python_sdk() {
        return;
    }
    let out = run_script("python_sdk_http_client.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python http interop failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("[legacy]") && stdout.contains("[auto]") && stdout.contains("exit 0"),
        "{stdout}"
    );
    assert!(
        !stderr.contains("Session termination failed"),
        "the SDK could not end its session: {stderr}"
    );
}

/// Runs tests/interop/python_sdk_client.py over stdio.
#[test]
fn official_python_sdk_lists_and_calls_both_tools() {
    if !has_python_sdk() {
        return;
    }
    let out = run_script("python_sdk_client.py");
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

/// Runs tests/interop/python_sdk_writes.py: every write tool through the
/// Python SDK against `pve-mcp demo --writes`, over stdio and Streamable
/// HTTP, destructive ones approved through the SDK's form callback, and
/// progress while waiting.
#[test]
fn official_python_sdk_calls_every_write_tool_over_stdio_and_http() {
    if !has_python_sdk() {
        return;
    }
    let out = run_script("python_sdk_writes.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python write interop failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("writes [stdio]") && stdout.contains("writes [http]"),
        "{stdout}"
    );
}
