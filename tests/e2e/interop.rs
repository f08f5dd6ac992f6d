//! Interop with the official MCP Python SDK over stdio and Streamable HTTP.

use std::path::Path;
use std::process::Command;

/// Whether the Python SDK is installed; without it a test is skipped with
/// a notice locally and fails under CI, where `.ci/run` installs it.
fn has_python_sdk() -> bool {
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
    }
    has_sdk
}

/// Runs tests/interop/python_sdk_http_client.py: `pve-mcp demo --http`
/// with a bearer token, the SDK's Streamable HTTP client in legacy and
/// auto mode, and a clean SIGTERM.
#[test]
fn official_python_sdk_over_streamable_http_with_a_bearer_token() {
    if !has_python_sdk() {
        return;
    }
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/python_sdk_http_client.py");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pve-mcp-cache");
    let out = Command::new("python3")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_pve-mcp"))
        .env("PVE_MCP_CACHE_DIR", cache)
        .output()
        .expect("running python3");
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
