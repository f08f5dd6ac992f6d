//! Configuration: a TOML file, overridden key by key by the environment.
//!
//! The reference server's variables (`PVE_BASE_URL`, `PVE_API_TOKEN_ID`,
//! `PVE_API_TOKEN_SECRET`, `PVE_USERNAME`, `PVE_PASSWORD`, `PVE_VERIFY_SSL`,
//! `PVE_TIMEOUT`, `PVE_ALLOW_INSECURE_HTTP`) work unchanged and describe the
//! default cluster (`[pve]` in the file). More clusters are named sections,
//! `[clusters.NAME]`. Every problem is reported as a [`ConfigError`] naming
//! the key and the fix.
//!
//! The file is parsed once ([`file`]) and every section reads its values
//! through [`layered`], which puts the environment over the file and
//! remembers where each value came from. Values are checked once and kept
//! typed (listen addresses, allow-list entries, the endpoint's TLS), so
//! their users never parse them again.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub mod allow_list;
pub mod approvals;
pub mod audit;
pub mod file;
pub mod http;
pub mod layered;
pub mod listen;

use layered::{Env, Layers, Sourced};

use crate::endpoint::{Endpoint, EndpointError};
use crate::error::ConfigError;
use crate::secret::Secret;
use crate::tls::client::{Fingerprint, TlsMode};

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
}

/// One Proxmox VE cluster (or single node) and how to reach it.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// The name tools and logs use for it.
    pub name: String,
    /// Where its API lives.
    pub endpoint: Endpoint,
    /// How the host authenticates; the guest never sees this.
    pub auth: Auth,
    /// How the host verifies the cluster's certificate.
    pub tls: TlsMode,
    /// How long one upstream request may take.
    pub timeout: Duration,
}

/// Proxmox credentials.
#[derive(Debug, Clone)]
pub enum Auth {
    /// An API token, sent as `Authorization: PVEAPIToken=ID=SECRET`.
    Token {
        /// `user@realm!tokenname`.
        id: String,
        /// The token's UUID secret.
        secret: Secret,
    },
    /// A user and password: the host logs in (`POST /access/ticket`) and
    /// sends the ticket as a cookie, renewing it before it expires.
    Password {
        /// `user@realm`.
        username: String,
        /// The password.
        password: Secret,
        /// How long Proxmox tickets live (2 h); renewed at three quarters.
        ticket_lifetime: Duration,
    },
}

impl Auth {
    /// The secrets to scrub from any text that leaves the host.
    pub fn secrets(&self) -> Vec<Secret> {
        match self {
            Auth::Token { secret, .. } => vec![secret.clone()],
            Auth::Password { password, .. } => vec![password.clone()],
        }
    }
}

/// Proxmox tickets are valid for two hours.
pub const TICKET_LIFETIME: Duration = Duration::from_secs(2 * 3600);

/// Limits applied to every tool call's sandbox.
#[derive(Debug, Clone)]
pub struct SandboxLimits {
    /// Linear memory cap for the guest.
    pub memory_bytes: usize,
    /// Deadline for a whole call: guest CPU time and upstream waits.
    pub timeout: Duration,
    /// Cap on one upstream response body.
    pub max_response_bytes: usize,
    /// Cap on a tool's structured output.
    pub max_output_bytes: usize,
    /// Cap on what the guest may write to stderr per call.
    pub max_log_bytes: usize,
    /// Calls that may run at once; more wait for a slot.
    pub max_concurrent_calls: usize,
    /// Requests one call may send before it is stopped.
    pub max_requests_per_call: usize,
    /// The longest a call may wait for Proxmox tasks: the guest clamps a
    /// tool's `timeout` to it, and a call of a tool that waits may run
    /// this much longer than [`SandboxLimits::timeout`].
    pub max_wait: Duration,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 << 20,
            timeout: Duration::from_secs(30),
            max_response_bytes: 16 << 20,
            max_output_bytes: 4 << 20,
            max_log_bytes: 64 << 10,
            max_concurrent_calls: 32,
            max_requests_per_call: DEFAULT_MAX_REQUESTS_PER_CALL,
            max_wait: Duration::from_secs(600),
        }
    }
}

/// How many requests one call may send unless `[sandbox]
/// max_requests_per_call` says otherwise. The busiest read tool makes a few
/// dozen (one per node at most); waiting on a task polls about once a
/// second. The cap bounds what a call's bookkeeping can cost the host
/// whatever the guest does within its deadline: at most this many egress
/// records of under 2 KiB each, so under 2 MiB at the default.
pub const DEFAULT_MAX_REQUESTS_PER_CALL: usize = 1000;

/// The file format. Unknown keys are errors, so a typo never silently
/// falls back to a default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    pve: Option<FileCluster>,
    #[serde(default)]
    clusters: indexmap::IndexMap<String, FileCluster>,
    #[serde(default)]
    sandbox: FileSandbox,
    #[serde(default)]
    http: http::FileHttp,
    #[serde(default)]
    audit: audit::FileAudit,
    /// Read (with its spans) by [`crate::policy`].
    #[serde(default, rename = "policy")]
    _policy: Option<toml::Value>,
    #[serde(default)]
    approvals: approvals::FileApprovals,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCluster {
    base_url: Option<String>,
    token_id: Option<String>,
    token_secret: Option<String>,
    token_secret_file: Option<PathBuf>,
    username: Option<String>,
    password: Option<String>,
    password_file: Option<PathBuf>,
    ticket_lifetime_secs: Option<u64>,
    verify_ssl: Option<bool>,
    ca_file: Option<PathBuf>,
    fingerprint: Option<String>,
    timeout_secs: Option<u64>,
    allow_insecure_http: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSandbox {
    memory_mib: Option<u64>,
    timeout_secs: Option<u64>,
    max_response_mib: Option<u64>,
    max_output_mib: Option<u64>,
    max_concurrent_calls: Option<u64>,
    max_requests_per_call: Option<u64>,
    max_wait_secs: Option<u64>,
}

fn parse_seconds(raw: &str, key: &str, max: u64) -> Result<Duration, ConfigError> {
    // The reference server accepts fractional seconds ("2.5").
    let secs: f64 = raw.trim().parse().map_err(|_| {
        ConfigError::new(
            key,
            format!("{raw:?} is not a number of seconds"),
            "use a number of seconds, e.g. 30",
        )
    })?;
    if !(secs > 0.0 && secs <= max as f64) {
        return Err(ConfigError::new(
            key,
            format!("{raw} is out of range"),
            format!("use between 1 and {max} seconds"),
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn mib(
    value: Option<Sourced<u64>>,
    default: usize,
    range: (u64, u64),
) -> Result<usize, ConfigError> {
    match value {
        None => Ok(default),
        Some(v) if (range.0..=range.1).contains(&v.value) => Ok((v.value as usize) << 20),
        Some(v) => Err(ConfigError::new(
            v.key,
            format!("{} is out of range", v.value),
            format!("use between {} and {}", range.0, range.1),
        )),
    }
}

/// The variables that describe the default cluster.
const DEFAULT_CLUSTER_ENV: &[&str] = &[
    "PVE_BASE_URL",
    "PVE_API_TOKEN_ID",
    "PVE_API_TOKEN_SECRET",
    "PVE_API_TOKEN_SECRET_FILE",
    "PVE_USERNAME",
    "PVE_PASSWORD",
    "PVE_PASSWORD_FILE",
];

impl Config {
    /// Loads the file (if any) and applies the environment over it.
    pub fn load(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let (file_config, file_name) = FileConfig::read(file)?;
        let mut clusters = Vec::new();
        let layers = Layers::new(env, "pve", &file_name);
        let env_names_default = DEFAULT_CLUSTER_ENV.iter().any(|k| layers.env(k).is_some());
        let empty = FileCluster::default();
        if file_config.pve.is_some() || env_names_default || file_config.clusters.is_empty() {
            let section = file_config.pve.as_ref().unwrap_or(&empty);
            clusters.push(load_cluster(&layers, section, "default")?);
        }
        for (name, section) in &file_config.clusters {
            let key = format!("[clusters.{name}] (in {file_name})");
            if !valid_cluster_name(name) {
                return Err(ConfigError::new(
                    key,
                    format!("{name:?} is not a valid cluster name"),
                    "use letters, digits, '-' and '_' (agents pass it as the `cluster` argument)",
                ));
            }
            if clusters.iter().any(|c: &Cluster| c.name == *name) {
                return Err(ConfigError::new(
                    key,
                    format!("cluster {name:?} is defined twice"),
                    "give every cluster its own name ([pve] is named \"default\")",
                ));
            }
            let layers = Layers::file_only(format!("clusters.{name}"), &file_name);
            clusters.push(load_cluster(&layers, section, name)?);
        }
        let sandbox = load_sandbox(&file_config.sandbox, &file_name, env)?;
        let http = http::load(&file_config.http, &file_name, env)?;
        let audit = audit::AuditSettings::load(&file_config.audit, &file_name, env)?;
        let approvals = approvals::ApprovalSettings::load(&file_config.approvals, &file_name, env)?;
        Ok(Config {
            clusters,
            sandbox,
            http,
            approvals,
            audit,
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

    /// The default cluster.
    pub fn default_cluster(&self) -> &Cluster {
        &self.clusters[0]
    }
}

fn valid_cluster_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
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

fn load_cluster(src: &Layers<'_>, f: &FileCluster, name: &str) -> Result<Cluster, ConfigError> {
    let base = src.text("PVE_BASE_URL", "base_url", f.base_url.as_ref()).ok_or_else(|| {
        if src.reads_env() {
            ConfigError::new(
                "PVE_BASE_URL",
                "not set: pve-mcp needs to know where your Proxmox VE API is",
                "set PVE_BASE_URL=https://your-pve-host:8006 (or base_url in the [pve] section of --config); to try pve-mcp without Proxmox, run `pve-mcp demo`",
            )
        } else {
            ConfigError::new(src.file_key("base_url"), "not set", "add base_url = \"https://HOST:8006\" to the section")
        }
    })?;
    let allow_http = src
        .boolean(
            "PVE_ALLOW_INSECURE_HTTP",
            "allow_insecure_http",
            f.allow_insecure_http,
        )?
        .is_some_and(|s| s.value);
    let endpoint = Endpoint::parse(&base.value, allow_http)
        .map_err(|e| endpoint_error(&base.key, &base.value, e))?;
    let auth = load_auth(src, f)?;
    let tls = load_tls(src, f)?;
    let timeout = match src.text("PVE_TIMEOUT", "timeout_secs", f.timeout_secs) {
        Some(t) => parse_seconds(&t.value, &t.key, 3600)?,
        None => Duration::from_secs(30),
    };
    Ok(Cluster {
        name: name.into(),
        endpoint,
        auth,
        tls,
        timeout,
    })
}

fn endpoint_error(key: &str, value: &str, e: EndpointError) -> ConfigError {
    let fix = match e {
        EndpointError::InsecureHttp => {
            "use https:// (Proxmox serves HTTPS on port 8006); if you really need plain HTTP, also set PVE_ALLOW_INSECURE_HTTP=true"
        }
        _ => {
            "use the form https://HOST:8006 (a trailing /api2/json is fine; nothing else after the port)"
        }
    };
    ConfigError::new(key, format!("{value:?}: {e}"), fix)
}

fn load_auth(src: &Layers<'_>, f: &FileCluster) -> Result<Auth, ConfigError> {
    let id = src.text("PVE_API_TOKEN_ID", "token_id", f.token_id.as_ref());
    let user = src.text("PVE_USERNAME", "username", f.username.as_ref());
    // A token wins over a password, as in the reference server.
    if let Some(id) = id {
        validate_token_id(&id.value).map_err(|problem| {
            ConfigError::new(&id.key, problem, "use the full token id as Proxmox shows it, e.g. root@pam!mcp or monitor@pve!readonly")
        })?;
        let secret = src
            .secret(
                src.text("PVE_API_TOKEN_SECRET", "token_secret", f.token_secret.as_ref()),
                src.path("PVE_API_TOKEN_SECRET_FILE", "token_secret_file", &f.token_secret_file),
                "secret",
            )?
            .ok_or_else(|| {
                ConfigError::new(
                    if src.reads_env() { "PVE_API_TOKEN_SECRET".to_string() } else { src.file_key("token_secret") },
                    "not set: the token id is there but its secret is not",
                    "set PVE_API_TOKEN_SECRET (the UUID Proxmox showed once when the token was made), or token_secret_file",
                )
            })?;
        check_header_safe(
            &secret,
            "use the UUID exactly as Proxmox showed it, with no quotes or line breaks",
        )?;
        return Ok(Auth::Token {
            id: id.value,
            secret: Secret::new(secret.value),
        });
    }
    if let Some(user) = user {
        if !user.value.contains('@')
            || user
                .value
                .chars()
                .any(|c| c.is_whitespace() || c == ':' || c == '/')
        {
            return Err(ConfigError::new(
                &user.key,
                format!("{:?} is not a Proxmox user id", user.value),
                "use user@realm, e.g. root@pam or mcp@pve",
            ));
        }
        let password = src
            .secret(
                src.text("PVE_PASSWORD", "password", f.password.as_ref()),
                src.path("PVE_PASSWORD_FILE", "password_file", &f.password_file),
                "secret",
            )?
            .ok_or_else(|| {
                ConfigError::new(
                    if src.reads_env() { "PVE_PASSWORD".to_string() } else { src.file_key("password") },
                    "not set: the user name is there but its password is not",
                    "set PVE_PASSWORD or PVE_PASSWORD_FILE (password_file in the file); an API token is the better choice",
                )
            })?;
        if password.value.is_empty() {
            return Err(ConfigError::new(
                password.key,
                "the password is empty",
                "set the user's password",
            ));
        }
        let ticket_lifetime = match src.file("ticket_lifetime_secs", f.ticket_lifetime_secs) {
            Some(secs) => parse_seconds(&secs.value.to_string(), &secs.key, 7200)?,
            None => TICKET_LIFETIME,
        };
        return Ok(Auth::Password {
            username: user.value,
            password: Secret::new(password.value),
            ticket_lifetime,
        });
    }
    Err(ConfigError::new(
        if src.reads_env() {
            "PVE_API_TOKEN_ID".to_string()
        } else {
            src.file_key("token_id")
        },
        "no credentials: pve-mcp needs an API token (or a user and password)",
        "set PVE_API_TOKEN_ID=user@realm!tokenname and PVE_API_TOKEN_SECRET (or token_id / token_secret_file in the config); PVE_USERNAME and PVE_PASSWORD also work",
    ))
}

fn check_header_safe(secret: &Sourced<String>, fix: &str) -> Result<(), ConfigError> {
    if secret.value.is_empty()
        || secret
            .value
            .chars()
            .any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(ConfigError::new(
            &secret.key,
            "the secret is empty or contains spaces or control characters",
            fix,
        ));
    }
    Ok(())
}

/// PVE's own rule: `user@realm!token`, user without whitespace, `:` or `/`,
/// realm and token name starting with a letter.
fn validate_token_id(id: &str) -> Result<(), String> {
    let name_ok = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    };
    let Some((user_realm, token)) = id.rsplit_once('!') else {
        return Err(format!("{id:?} has no '!tokenname' part"));
    };
    let Some((user, realm)) = user_realm.rsplit_once('@') else {
        return Err(format!("{id:?} has no '@realm' part"));
    };
    if user.is_empty()
        || user
            .chars()
            .any(|c| c.is_whitespace() || c == ':' || c == '/')
    {
        return Err(format!("{id:?} has an invalid user name"));
    }
    if !name_ok(realm) {
        return Err(format!("{id:?} has an invalid realm {realm:?}"));
    }
    if !name_ok(token) {
        return Err(format!("{id:?} has an invalid token name {token:?}"));
    }
    Ok(())
}

fn load_tls(src: &Layers<'_>, f: &FileCluster) -> Result<TlsMode, ConfigError> {
    let verify = src.boolean("PVE_VERIFY_SSL", "verify_ssl", f.verify_ssl)?;
    let ca = src.path("PVE_CA_FILE", "ca_file", &f.ca_file);
    let pin = src.text("PVE_TLS_FINGERPRINT", "fingerprint", f.fingerprint.as_ref());
    if let Some(pin) = pin {
        let fp = Fingerprint::parse(&pin.value).map_err(|problem| {
            ConfigError::new(
                &pin.key,
                problem,
                "use the SHA-256 fingerprint as Proxmox shows it (Node > System > Certificates, or `pvenode cert info`): 32 hex pairs separated by ':'",
            )
        })?;
        return Ok(TlsMode::Fingerprint(fp));
    }
    if let Some(ca) = ca {
        let pem = std::fs::read(&ca.value).map_err(|e| {
            ConfigError::new(
                &ca.key,
                format!("cannot read {}: {e}", ca.value.display()),
                "copy the cluster CA from /etc/pve/pve-root-ca.pem on any node and point to it",
            )
        })?;
        crate::tls::client::parse_ca_pem(&pem).map_err(|problem| {
            ConfigError::new(
                &ca.key,
                format!("{}: {problem}", ca.value.display()),
                "use the PEM file /etc/pve/pve-root-ca.pem from a cluster node",
            )
        })?;
        return Ok(TlsMode::CaPem(pem));
    }
    if verify.as_ref().is_some_and(|v| !v.value) {
        return Ok(TlsMode::Insecure);
    }
    Ok(TlsMode::WebPki)
}

/// The variable that overrides `[sandbox] max_wait_secs`.
pub const MAX_WAIT_ENV: &str = "PVE_MCP_MAX_WAIT_SECS";

fn load_sandbox(s: &FileSandbox, file_name: &str, env: Env) -> Result<SandboxLimits, ConfigError> {
    // Only `max_wait_secs` has a variable; `file` reads the rest from the
    // file alone.
    let layers = Layers::new(env, "sandbox", file_name);
    let d = SandboxLimits::default();
    Ok(SandboxLimits {
        max_wait: layers
            .whole_number(MAX_WAIT_ENV, "max_wait_secs", s.max_wait_secs, (1, 3600))?
            .map_or(d.max_wait, Duration::from_secs),
        memory_bytes: mib(
            layers.file("memory_mib", s.memory_mib),
            d.memory_bytes,
            (8, 4096),
        )?,
        timeout: match layers.file("timeout_secs", s.timeout_secs) {
            Some(v) => parse_seconds(&v.value.to_string(), &v.key, 3600)?,
            None => d.timeout,
        },
        max_response_bytes: mib(
            layers.file("max_response_mib", s.max_response_mib),
            d.max_response_bytes,
            (1, 1024),
        )?,
        max_output_bytes: mib(
            layers.file("max_output_mib", s.max_output_mib),
            d.max_output_bytes,
            (1, 256),
        )?,
        max_log_bytes: d.max_log_bytes,
        max_concurrent_calls: match layers.file("max_concurrent_calls", s.max_concurrent_calls) {
            None => d.max_concurrent_calls,
            Some(Sourced {
                value: n @ 1..=1024,
                ..
            }) => n as usize,
            Some(n) => {
                return Err(ConfigError::new(
                    n.key,
                    format!("{} is out of range", n.value),
                    "use between 1 and 1024",
                ));
            }
        },
        max_requests_per_call: match layers.file("max_requests_per_call", s.max_requests_per_call) {
            None => d.max_requests_per_call,
            Some(Sourced {
                value: n @ 10..=100_000,
                ..
            }) => n as usize,
            Some(n) => {
                return Err(ConfigError::new(
                    n.key,
                    format!("{} is out of range", n.value),
                    "use between 10 and 100000; a task wait polls about once a second",
                ));
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::layered::test_env::env;
    use std::io::Write;

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

    #[test]
    fn config_error_display_has_key_problem_and_fix() {
        let err = load_env(&[]).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("PVE_BASE_URL: "), "{text}");
        assert!(text.contains("\n  fix: "), "{text}");
    }

    #[test]
    fn the_request_cap_is_read_and_bounded() {
        let limits = |n: u64| {
            let file = FileSandbox {
                max_requests_per_call: Some(n),
                ..FileSandbox::default()
            };
            load_sandbox(&file, "f.toml", &env(&[]))
        };
        assert_eq!(limits(40).unwrap().max_requests_per_call, 40);
        for bad in [0, 9, 100_001] {
            let e = limits(bad).unwrap_err();
            assert!(e.key.contains("sandbox.max_requests_per_call"), "{e}");
            assert!(e.to_string().contains("between 10 and 100000"), "{e}");
        }
    }
}
