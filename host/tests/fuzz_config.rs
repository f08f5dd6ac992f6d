//! Fuzz target: the configuration file (and the environment over it). A
//! valid file using every section, mutated (bit flips, truncation, line
//! swaps, inserted junk), must load or fail with a `ConfigError` naming the
//! key, the problem and the fix; so must a valid file under hostile
//! environment values. The policy in the file is read too, as `serve`
//! reads it.
//!
//! `PVE_MCP_FUZZ_CASES=1000000 cargo test --release -p pve-mcp --test fuzz_config`

#[path = "../../tests/fuzz/gen.rs"]
mod fuzz_gen;

use std::path::PathBuf;

use proptest::prelude::*;
use pve_mcp::config::approvals::ApprovalSettings;
use pve_mcp::config::audit::AuditSettings;
use pve_mcp::config::http::HttpSettings;
use pve_mcp::config::metrics::MetricsSettings;
use pve_mcp::config::tools::ToolSettings;
use pve_mcp::config::{Config, SandboxLimits};
use pve_mcp::error::ConfigError;
use pve_mcp::policy::PolicySource;

/// A valid file with every section and most keys.
const SEED: &str = r#"[pve]
base_url = "https://pve1.example.com:8006"
token_id = "mcp@pve!readonly"
token_secret = "0b7a6c52-2f5a-4d8e-9c3b-1a2b3c4d5e6f"
fingerprint = "80:D4:F2:DF:6E:7A:1B:2C:3D:4E:5F:60:71:82:93:A4:B5:C6:D7:E8:F9:0A:1B:2C:3D:4E:5F:60:71:82:69:F5"
timeout_secs = 30

[clusters.lab]
base_url = "https://10.0.9.5:8006"
username = "mcp@pve"
password = "lab-password-1"
verify_ssl = false
ticket_lifetime_secs = 3600

[sandbox]
memory_mib = 64
timeout_secs = 30
max_response_mib = 16
max_output_mib = 4
max_concurrent_calls = 8

[http]
listen = "127.0.0.1:8080"
path = "/mcp"
allowed_origins = ["https://app.example"]
allowed_hosts = ["mcp.example"]
max_body_kib = 1024
session_idle_secs = 600
max_sessions = 100
max_calls_per_session = 1000
shutdown_grace_secs = 10

[http.tokens]
alice = "3f1c9a7e5b2d4f608e1a3c5b7d9f1e2a"

[audit]
path = "/var/log/pve-mcp/audit.jsonl"
stderr = false
include_arguments = true
record_output = true
max_size_mib = 64.0
on_failure = "refuse"
fsync = true

[approvals]
ttl_secs = 600
elicitation = true
admin_listen = "127.0.0.1:9090"
admin_token = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"

[policy]
default = "read-only"
[policy.tools.pve_list_vms]
rate_limit = "30/minute"
conditions = [{ arg = "node", op = "in", value = ["pve1", "pve2"] }]
"#;

/// The variables the loader reads over the file (not those naming files:
/// a hostile path such as a FIFO would only test the file system), besides
/// those the sections declare (see [`env_names`]).
const ENV: &[&str] = &[
    "MCP_ALLOWED_HOSTS",
    "MCP_ALLOWED_ORIGINS",
    "MCP_AUTH_TOKEN",
    "MCP_HOST",
    "MCP_MAX_BODY_KIB",
    "MCP_MAX_CALLS_PER_SESSION",
    "MCP_MAX_SESSIONS",
    "MCP_PATH",
    "MCP_PORT",
    "MCP_SESSION_IDLE_SECS",
    "MCP_SHUTDOWN_GRACE_SECS",
    "MCP_TRANSPORT",
    "PVE_ALLOW_INSECURE_HTTP",
    "PVE_API_TOKEN_ID",
    "PVE_API_TOKEN_SECRET",
    "PVE_BASE_URL",
    "PVE_MCP_ADMIN_TOKEN",
    "PVE_MCP_APPROVALS_MAX_PENDING_PER_CALLER",
    "PVE_MCP_AUDIT_FSYNC",
    "PVE_MCP_AUDIT_INCLUDE_ARGUMENTS",
    "PVE_MCP_AUDIT_MAX_SIZE_MIB",
    "PVE_MCP_AUDIT_ON_FAILURE",
    "PVE_MCP_AUDIT_PATH",
    "PVE_MCP_AUDIT_STDERR",
    "PVE_PASSWORD",
    "PVE_TIMEOUT",
    "PVE_TLS_FINGERPRINT",
    "PVE_USERNAME",
    "PVE_VERIFY_SSL",
];

/// [`ENV`] and every variable a section declares, so a new setting is
/// fuzzed without being listed here.
fn env_names() -> Vec<&'static str> {
    let declared = [
        SandboxLimits::SETTINGS,
        HttpSettings::SETTINGS,
        ApprovalSettings::SETTINGS,
        AuditSettings::SETTINGS,
        ToolSettings::SETTINGS,
        MetricsSettings::SETTINGS,
    ]
    .into_iter()
    .flatten()
    .filter_map(|s| s.env);
    let mut names: Vec<&str> = ENV.iter().copied().chain(declared).collect();
    names.sort_unstable();
    names.dedup();
    names
}

thread_local! {
    /// Each test thread's directory for the file under test.
    static DIR: tempfile::TempDir = tempfile::tempdir().unwrap();
}

/// Loads `text` as `serve` does: the configuration, then its `[policy]`.
fn load(text: &[u8], env: &[(String, String)]) -> Result<(), ConfigError> {
    let path: PathBuf = DIR.with(|d| d.path().join("config.toml"));
    std::fs::write(&path, text).unwrap();
    let lookup = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    Config::load(Some(&path), &lookup)?;
    PolicySource::resolve(None, Some(&path))?;
    Ok(())
}

fn assert_clean(r: Result<(), ConfigError>) -> Result<(), TestCaseError> {
    if let Err(e) = r {
        prop_assert!(
            !e.key.is_empty() && !e.problem.is_empty() && !e.fix.is_empty(),
            "an error without key, problem or fix: {:?}",
            e
        );
    }
    Ok(())
}

#[test]
fn the_seed_is_a_valid_configuration() {
    load(SEED.as_bytes(), &[]).unwrap_or_else(|e| panic!("{e}"));
}

proptest! {
    #![proptest_config(fuzz_gen::config(500))]

    #[test]
    fn fuzz_config_files((text, _) in fuzz_gen::mutated(vec![SEED.as_bytes().to_vec()])) {
        assert_clean(load(&text, &[]))?;
    }

    #[test]
    fn fuzz_config_environment(
        env in proptest::collection::vec(
            (proptest::sample::select(env_names()).prop_map(str::to_string), fuzz_gen::hostile_string()),
            1..4,
        ),
    ) {
        assert_clean(load(SEED.as_bytes(), &env))?;
    }
}
