//! Configuration: a TOML file, overridden key by key by the environment.
//!
//! The reference server's variables (`PVE_BASE_URL`, `PVE_API_TOKEN_ID`,
//! `PVE_API_TOKEN_SECRET`, `PVE_USERNAME`, `PVE_PASSWORD`, `PVE_VERIFY_SSL`,
//! `PVE_TIMEOUT`, `PVE_ALLOW_INSECURE_HTTP`) work unchanged and describe the
//! default cluster (`[pve]` in the file). More clusters are named sections,
//! `[clusters.NAME]` ([`clusters`]). Every problem is reported as a
//! [`ConfigError`] naming the key and the fix.
//!
//! The file is parsed once ([`file`]) and every section reads its values
//! through [`layered`], which puts the environment over the file and
//! remembers where each value came from. `[sandbox]`, `[http]`,
//! `[approvals]` and `[audit]` declare each setting once ([`section`]).
//! Values are checked once and kept typed (listen addresses, allow-list
//! entries, the endpoint's TLS), so their users never parse them again.

use std::path::Path;

use serde::Deserialize;

pub mod allow_list;
pub mod approvals;
pub mod audit;
pub mod clusters;
pub mod credentials;
pub mod file;
pub mod http;
pub mod layered;
pub mod listen;
pub mod metrics;
pub mod sandbox;
pub mod section;
pub mod telemetry;
pub mod tools;

pub use clusters::{Auth, Cluster, TICKET_LIFETIME};
pub use sandbox::{DEFAULT_MAX_REQUESTS_PER_CALL, MAX_WAIT_ENV, SandboxLimits};

use crate::error::ConfigError;

/// Everything the host needs to serve.
#[derive(Debug, Clone)]
pub struct Config {
    /// The Proxmox clusters tools may reach; the first is the default.
    pub clusters: Vec<Cluster>,
    /// Limits for every guest call.
    pub sandbox: SandboxLimits,
    /// The Streamable HTTP transport (`[http]`, `MCP_*`).
    pub http: http::HttpSettings,
    /// `[approvals]`: expiry, the admin endpoint and its token.
    pub approvals: approvals::ApprovalSettings,
    /// The audit log (`[audit]`, `PVE_MCP_AUDIT_*`).
    pub audit: audit::AuditSettings,
    /// `[tools]`: the toolsets enabled and the read-only switch.
    pub tools: tools::ToolSettings,
    /// `[telemetry]`: OTLP traces (the exporter starts before the rest,
    /// from [`Config::load_telemetry`]).
    pub telemetry: telemetry::TelemetrySettings,
    /// `[metrics]`: Prometheus metrics, and their own listener.
    pub metrics: metrics::MetricsSettings,
}

/// The file format. Unknown keys are errors, so a typo never silently
/// falls back to a default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    pve: Option<clusters::FileCluster>,
    #[serde(default)]
    clusters: indexmap::IndexMap<String, clusters::FileCluster>,
    #[serde(default)]
    sandbox: sandbox::FileSandbox,
    #[serde(default)]
    http: http::FileHttp,
    #[serde(default)]
    audit: audit::FileAudit,
    /// Read (with its spans) by [`crate::policy`].
    #[serde(default, rename = "policy")]
    _policy: Option<toml::Value>,
    #[serde(default)]
    approvals: approvals::FileApprovals,
    #[serde(default)]
    tools: tools::FileTools,
    #[serde(default)]
    telemetry: telemetry::FileTelemetry,
    #[serde(default)]
    metrics: metrics::FileMetrics,
}

impl Config {
    /// Loads the file (if any) and applies the environment over it.
    pub fn load(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let (file_config, file_name) = FileConfig::read(file)?;
        let clusters = clusters::load(
            file_config.pve.as_ref(),
            &file_config.clusters,
            &file_name,
            env,
        )?;
        let sandbox = SandboxLimits::load(&file_config.sandbox, &file_name, env)?;
        let http = http::load(&file_config.http, &file_name, env)?;
        let sets: Vec<&str> = clusters
            .iter()
            .flat_map(|c| c.credential_sets.iter().map(|(set, _)| set.as_str()))
            .collect();
        credentials::check_agents(&sets, &http.tokens, &file_name)?;
        let audit = audit::AuditSettings::load(&file_config.audit, &file_name, env)?;
        let approvals = approvals::ApprovalSettings::load(&file_config.approvals, &file_name, env)?;
        let tools = tools::ToolSettings::load(&file_config.tools, &file_name, env)?;
        let telemetry =
            telemetry::TelemetrySettings::load(&file_config.telemetry, &file_name, env)?;
        let metrics = metrics::MetricsSettings::load(&file_config.metrics, &file_name, env)?;
        Ok(Config {
            clusters,
            sandbox,
            http,
            approvals,
            audit,
            tools,
            telemetry,
            metrics,
        })
    }

    /// Only the `[http]` settings (for `pve-mcp demo --http`, which brings
    /// its own cluster).
    pub fn load_http(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<http::HttpSettings, ConfigError> {
        let (file_config, file_name) = FileConfig::read(file)?;
        http::load(&file_config.http, &file_name, env)
    }

    /// Only the `[tools]` settings (for `pve-mcp demo`, which brings its
    /// own cluster).
    pub fn load_tools(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<tools::ToolSettings, ConfigError> {
        let (file_config, file_name) = FileConfig::read(file)?;
        tools::ToolSettings::load(&file_config.tools, &file_name, env)
    }

    /// Only the `[telemetry]` settings: the exporter is set up with
    /// logging, before the rest is read.
    pub fn load_telemetry(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<telemetry::TelemetrySettings, ConfigError> {
        let (file_config, file_name) = FileConfig::read(file)?;
        telemetry::TelemetrySettings::load(&file_config.telemetry, &file_name, env)
    }

    /// The default cluster.
    pub fn default_cluster(&self) -> &Cluster {
        &self.clusters[0]
    }
}

/// Checks the text of the `--config` file at `path` exactly as start-up
/// does: every key of every section, top-level ones included, so a
/// misspelt section (`[Policy]`) is an error here too. A policy reload and
/// `policy check` call this before reading `[policy]`, so neither takes a
/// file `serve` would refuse.
pub fn check_file_text(text: &str, path: &Path) -> Result<(), ConfigError> {
    file::parse::<FileConfig>(text, path).map(|_| ())
}

impl FileConfig {
    /// The file parsed once (every section from the same parse) and how
    /// messages name it; no file is an empty one.
    fn read(path: Option<&Path>) -> Result<(FileConfig, String), ConfigError> {
        match path {
            Some(path) => Ok((file::read(path)?, path.display().to_string())),
            None => Ok((FileConfig::default(), "config file".to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::layered::test_env::env;
    use crate::tls::client::TlsMode;
    use std::io::Write;
    use std::time::Duration;

    const SECRET: &str = "0b5a5c2e-6f7d-4a1b-9c3d-2e1f0a9b8c7d";

    fn base_env() -> Vec<(&'static str, &'static str)> {
        vec![
            ("PVE_BASE_URL", "https://pve.example:8006"),
            ("PVE_API_TOKEN_ID", "root@pam!mcp"),
            ("PVE_API_TOKEN_SECRET", SECRET),
        ]
    }

    fn load_env(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::load(None, &env(pairs))
    }

    #[test]
    fn reference_server_environment_works_unchanged() {
        let mut e = base_env();
        e[0].1 = "https://pve.example:8006/api2/json";
        e.push(("PVE_VERIFY_SSL", "false"));
        e.push(("PVE_TIMEOUT", "12"));
        let c = load_env(&e).unwrap();
        let cl = c.default_cluster();
        assert_eq!(cl.endpoint.base_url(), "https://pve.example:8006");
        assert!(matches!(cl.tls, TlsMode::Insecure));
        assert_eq!(cl.timeout, Duration::from_secs(12));
        let Auth::Token { id, secret } = &cl.auth else {
            panic!("token auth expected")
        };
        assert_eq!(id, "root@pam!mcp");
        assert_eq!(secret.expose(), SECRET);
    }

    #[test]
    fn missing_base_url_names_the_key_and_the_demo() {
        let err = load_env(&[]).unwrap_err();
        assert_eq!(err.key, "PVE_BASE_URL");
        assert!(err.fix.contains("pve-mcp demo"), "{err}");
    }

    #[test]
    fn http_is_refused_unless_allowed() {
        let mut e = base_env();
        e[0].1 = "http://pve.example:8006";
        let err = load_env(&e).unwrap_err();
        assert_eq!(err.key, "PVE_BASE_URL");
        assert!(err.fix.contains("PVE_ALLOW_INSECURE_HTTP"), "{err}");
        e.push(("PVE_ALLOW_INSECURE_HTTP", "true"));
        assert_eq!(
            load_env(&e).unwrap().default_cluster().endpoint.base_url(),
            "http://pve.example:8006"
        );
    }

    #[test]
    fn base_url_with_extra_path_or_query_is_refused() {
        for bad in [
            "https://pve:8006/foo",
            "https://pve:8006/?x=1",
            "https://user:pw@pve:8006",
            "pve:8006",
            "ftp://pve",
        ] {
            let mut e = base_env();
            e[0].1 = bad;
            let err = load_env(&e).unwrap_err();
            assert_eq!(err.key, "PVE_BASE_URL", "{bad}: {err}");
        }
    }

    #[test]
    fn token_errors_name_the_key() {
        let mut e = base_env();
        e[1].1 = "root@pam";
        assert_eq!(load_env(&e).unwrap_err().key, "PVE_API_TOKEN_ID");
        let mut e = base_env();
        e.remove(2);
        let err = load_env(&e).unwrap_err();
        assert_eq!(err.key, "PVE_API_TOKEN_SECRET");
        let mut e = base_env();
        e[2].1 = "has space";
        assert_eq!(load_env(&e).unwrap_err().key, "PVE_API_TOKEN_SECRET");
        let err = load_env(&[
            ("PVE_BASE_URL", "https://pve:8006"),
            ("PVE_USERNAME", "root@pam"),
        ])
        .unwrap_err();
        assert_eq!(err.key, "PVE_PASSWORD", "{err}");
    }

    #[test]
    fn username_and_password_log_in_with_tickets() {
        let c = load_env(&[
            ("PVE_BASE_URL", "https://pve:8006"),
            ("PVE_USERNAME", "root@pam"),
            ("PVE_PASSWORD", "hunter22"),
        ])
        .unwrap();
        match &c.default_cluster().auth {
            Auth::Password {
                username,
                password,
                ticket_lifetime,
            } => {
                assert_eq!(username, "root@pam");
                assert_eq!(password.expose(), "hunter22");
                assert_eq!(*ticket_lifetime, TICKET_LIFETIME);
            }
            other => panic!("{other:?}"),
        }
        let err = load_env(&[
            ("PVE_BASE_URL", "https://pve:8006"),
            ("PVE_USERNAME", "root"),
            ("PVE_PASSWORD", "x"),
        ])
        .unwrap_err();
        assert_eq!(err.key, "PVE_USERNAME");
    }

    #[test]
    fn named_clusters_follow_the_default_in_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[clusters.zeta]\nbase_url = \"https://z:8006\"\ntoken_id = \"a@pve!t\"\ntoken_secret = \"zzzzzz-1\"\n\
             [clusters.alpha]\nbase_url = \"https://a:8006\"\nusername = \"u@pve\"\npassword = \"pw-alpha\"\nticket_lifetime_secs = 60\n",
        )
        .unwrap();
        let c = Config::load(Some(&path), &env(&base_env())).unwrap();
        let names: Vec<_> = c.clusters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["default", "zeta", "alpha"]);
        // Without the environment the first section is the default.
        let c = Config::load(Some(&path), &env(&[])).unwrap();
        assert_eq!(c.default_cluster().name, "zeta");
        assert!(
            matches!(c.clusters[1].auth, Auth::Password { ticket_lifetime, .. } if ticket_lifetime == Duration::from_secs(60))
        );
        // The environment never leaks into named clusters.
        let c = Config::load(Some(&path), &env(&[("PVE_TIMEOUT", "7")])).unwrap();
        assert_eq!(c.clusters[1].timeout, Duration::from_secs(30));
    }

    #[test]
    fn bad_cluster_sections_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[clusters.lab]\nbase_url = \"https://a:8006\"\n").unwrap();
        let err = Config::load(Some(&path), &env(&[])).unwrap_err();
        assert!(err.key.starts_with("clusters.lab.token_id"), "{err}");
        std::fs::write(
            &path,
            "[clusters.\"bad name\"]\nbase_url = \"https://a:8006\"\n",
        )
        .unwrap();
        let err = Config::load(Some(&path), &env(&[])).unwrap_err();
        assert!(err.key.contains("clusters.bad name"), "{err}");
        std::fs::write(&path, "[clusters.default]\nbase_url = \"https://a:8006\"\ntoken_id = \"a@pve!t\"\ntoken_secret = \"zzzzzz-1\"\n").unwrap();
        let err = Config::load(Some(&path), &env(&base_env())).unwrap_err();
        assert!(err.problem.contains("twice"), "{err}");
    }

    #[test]
    fn bad_boolean_and_timeout_are_named() {
        let mut e = base_env();
        e.push(("PVE_VERIFY_SSL", "maybe"));
        assert_eq!(load_env(&e).unwrap_err().key, "PVE_VERIFY_SSL");
        let mut e = base_env();
        e.push(("PVE_TIMEOUT", "-3"));
        assert_eq!(load_env(&e).unwrap_err().key, "PVE_TIMEOUT");
    }

    #[test]
    fn fingerprint_is_parsed_and_errors_are_named() {
        let fp = "80:D4:F2:DF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:77:99:69:F5";
        let mut e = base_env();
        e.push(("PVE_TLS_FINGERPRINT", fp));
        assert!(matches!(
            load_env(&e).unwrap().default_cluster().tls,
            TlsMode::Fingerprint(_)
        ));
        let mut e = base_env();
        e.push(("PVE_TLS_FINGERPRINT", "80:D4"));
        assert_eq!(load_env(&e).unwrap_err().key, "PVE_TLS_FINGERPRINT");
    }

    #[test]
    fn file_is_read_and_env_overrides_it() {
        let dir = tempfile::tempdir().unwrap();
        let secret_path = dir.path().join("secret");
        std::fs::write(&secret_path, format!("{SECRET}\n")).unwrap();
        let path = dir.path().join("c.toml");
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(
            f,
            "[pve]\nbase_url = \"https://file.example:8006\"\ntoken_id = \"mcp@pve!ro\"\ntoken_secret_file = \"{}\"\n[sandbox]\nmemory_mib = 32\ntimeout_secs = 5",
            secret_path.display()
        )
        .unwrap();
        let c = Config::load(Some(&path), &env(&[])).unwrap();
        assert_eq!(
            c.default_cluster().endpoint.base_url(),
            "https://file.example:8006"
        );
        let Auth::Token { secret, .. } = &c.default_cluster().auth else {
            panic!("token auth expected")
        };
        assert_eq!(secret.expose(), SECRET);
        assert_eq!(c.sandbox.memory_bytes, 32 << 20);
        assert_eq!(c.sandbox.timeout, Duration::from_secs(5));
        assert_eq!(
            c.sandbox.max_requests_per_call,
            DEFAULT_MAX_REQUESTS_PER_CALL
        );
        let c = Config::load(
            Some(&path),
            &env(&[("PVE_BASE_URL", "https://env.example:8006")]),
        )
        .unwrap();
        assert_eq!(
            c.default_cluster().endpoint.base_url(),
            "https://env.example:8006"
        );
    }

    #[test]
    fn max_wait_comes_from_the_file_or_the_environment_within_range() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[sandbox]\nmax_wait_secs = 90\n").unwrap();
        let e = base_env();
        assert_eq!(
            load_env(&e).unwrap().sandbox.max_wait,
            Duration::from_secs(600)
        );
        let c = Config::load(Some(&path), &env(&e)).unwrap();
        assert_eq!(c.sandbox.max_wait, Duration::from_secs(90));
        let mut over = e.clone();
        over.push((MAX_WAIT_ENV, "1200"));
        let c = Config::load(Some(&path), &env(&over)).unwrap();
        assert_eq!(c.sandbox.max_wait, Duration::from_secs(1200));
        for bad in ["0", "3601", "ten", "1.5"] {
            let mut bad_env = e.clone();
            bad_env.push((MAX_WAIT_ENV, bad));
            let err = load_env(&bad_env).unwrap_err();
            assert_eq!(err.key, MAX_WAIT_ENV, "{bad}: {err}");
            assert!(err.to_string().contains("between 1 and 3600"), "{err}");
        }
        std::fs::write(&path, "[sandbox]\nmax_wait_secs = 0\n").unwrap();
        let err = Config::load(Some(&path), &env(&e)).unwrap_err();
        assert!(err.key.starts_with("sandbox.max_wait_secs"), "{err}");
    }

    #[test]
    fn typo_in_file_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[pve]\nbase_url = \"https://x:8006\"\ntoken_secrte = \"x\"\n",
        )
        .unwrap();
        let err = Config::load(Some(&path), &env(&[])).unwrap_err();
        assert!(err.key.contains("line 3"), "{err}");
        assert!(err.problem.contains("token_secrte"), "{err}");
    }

    /// Every key the sections declare with [`section::section!`].
    fn declared() -> impl Iterator<Item = &'static section::Setting> {
        [
            SandboxLimits::SETTINGS,
            http::HttpSettings::SETTINGS,
            approvals::ApprovalSettings::SETTINGS,
            audit::AuditSettings::SETTINGS,
            tools::ToolSettings::SETTINGS,
            telemetry::TelemetrySettings::SETTINGS,
            metrics::MetricsSettings::SETTINGS,
        ]
        .into_iter()
        .flatten()
    }

    #[test]
    fn every_declared_default_lies_in_its_range() {
        for s in declared() {
            if let section::Value::Number { min, max, default } = s.value {
                assert!(min <= max, "{s:?}");
                if let Some(d) = default {
                    assert!((min..=max).contains(&d), "{}.{}: {d}", s.section, s.key);
                }
            }
        }
    }

    #[test]
    fn every_variable_and_key_is_declared_once() {
        let mut envs = std::collections::BTreeSet::new();
        let mut keys = std::collections::BTreeSet::new();
        for s in declared() {
            assert!(
                keys.insert((s.section, s.key)),
                "{}.{} twice",
                s.section,
                s.key
            );
            if let Some(env) = s.env {
                assert!(envs.insert(env), "{env} overrides two keys");
            }
        }
        assert!(keys.len() > 30, "the sections declare only {}", keys.len());
    }

    #[test]
    fn the_docs_list_every_declared_key_and_variable() {
        let doc = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/configuration.md"
        ));
        for s in declared() {
            let (key, table) = (
                format!("`{}`", s.key),
                format!("`[{}.{}]`", s.section, s.key),
            );
            assert!(
                doc.contains(&key) || doc.contains(&table),
                "docs/configuration.md does not list [{}] {}",
                s.section,
                s.key
            );
            if let Some(env) = s.env {
                assert!(
                    doc.contains(&format!("`{env}`")),
                    "docs/configuration.md does not list {env}"
                );
            }
        }
    }

    #[test]
    fn config_error_display_has_key_problem_and_fix() {
        let err = load_env(&[]).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("PVE_BASE_URL: "), "{text}");
        assert!(text.contains("\n  fix: "), "{text}");
    }
}
