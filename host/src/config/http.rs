//! The `[http]` settings: whether `pve-mcp serve` speaks Streamable HTTP,
//! where, with which tokens and limits. Every key has an `MCP_*`
//! environment variable that overrides it, like the reference server's
//! `MCP_TRANSPORT`, `MCP_HOST`, `MCP_PORT` and `MCP_PATH`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::allow_list::{HostEntry, OriginEntry, parse_host_entry, parse_origin_entry};
use super::layered::{Layers, MIN_TOKEN_LEN, Sourced, is_bearer_token, read_secret_file};
use super::listen::{ListenAddr, ListenHost};
use crate::error::ConfigError;
use crate::secret::Secret;
use crate::tls::server::{ServerTls, TlsFiles};

/// The reference server's default port.
pub const DEFAULT_PORT: u16 = 8000;
/// The reference server's default endpoint path.
pub const DEFAULT_PATH: &str = "/mcp";
/// The name of the token given by `MCP_AUTH_TOKEN`.
pub const DEFAULT_TOKEN_NAME: &str = "default";

/// The `[http]` section of the configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileHttp {
    listen: Option<String>,
    path: Option<String>,
    #[serde(default)]
    tokens: indexmap::IndexMap<String, String>,
    allowed_origins: Option<Vec<String>>,
    allowed_hosts: Option<Vec<String>>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    max_body_kib: Option<u64>,
    session_idle_secs: Option<u64>,
    session_id_prefix: Option<String>,
    max_sessions: Option<u64>,
    max_sessions_per_token: Option<u64>,
    max_calls_per_session: Option<u64>,
    max_connections: Option<u64>,
    max_anonymous_connections_per_peer: Option<u64>,
    header_timeout_secs: Option<u64>,
    shutdown_grace_secs: Option<u64>,
}

/// Where to listen, before name resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    /// An IP address or a host name.
    pub host: ListenHost,
    /// The port; 0 picks a free one.
    pub port: u16,
    /// The flag, variable or key it came from, for error messages.
    pub key: String,
}

/// A bearer token and the name the audit log knows its holder by.
#[derive(Debug, Clone)]
pub struct NamedToken {
    /// The name (`default` for `MCP_AUTH_TOKEN`).
    pub name: Arc<str>,
    /// The token itself.
    pub secret: Secret,
}

/// The Streamable HTTP settings, resolved from the file and the environment.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// `MCP_TRANSPORT=streamable-http` or an `[http] listen` key asks for
    /// HTTP; `serve --http` asks regardless.
    pub requested: bool,
    /// Where to listen.
    pub listen: Listen,
    /// The MCP endpoint's path.
    pub path: String,
    /// The accepted bearer tokens; none means no authentication, which is
    /// only allowed on a loopback address.
    pub tokens: Vec<NamedToken>,
    /// Allowed `Origin` values; `None` means the loopback defaults.
    pub allowed_origins: Option<Vec<OriginEntry>>,
    /// Allowed `Host` values; `None` means the loopback defaults.
    pub allowed_hosts: Option<Vec<HostEntry>>,
    /// TLS for the endpoint itself, with its certificate already loaded.
    pub tls: Option<ServerTls>,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// A session with no traffic for this long is closed.
    pub session_idle: Duration,
    /// What every session id this process issues starts with, so a load
    /// balancer in front of several replicas can send a session's requests
    /// to the replica that holds it; `None`: bare random ids.
    pub session_id_prefix: Option<String>,
    /// Sessions open at once; more initializations get 503.
    pub max_sessions: usize,
    /// Sessions one bearer token may hold open at once; more
    /// initializations with it get 429. Without tokens there is no one to
    /// count them against, and only `max_sessions` applies.
    pub max_sessions_per_token: usize,
    /// Tool calls one session (or, without a session, one token's
    /// stateless requests together) may run at once; more get a tool error.
    pub max_calls_per_session: usize,
    /// Open connections; `None` means 4 per session plus 64.
    pub max_connections: Option<usize>,
    /// Connections from one address (an IPv4 address or an IPv6 /64) that
    /// have not yet sent a request that passed the token check.
    pub max_anonymous_connections_per_peer: usize,
    /// How long a new connection may take to send its first complete
    /// request header (TLS handshake included).
    pub header_timeout: Duration,
    /// How long in-flight calls may run on after SIGTERM or SIGINT.
    pub shutdown_grace: Duration,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            requested: false,
            listen: Listen {
                host: ListenHost::Ip(std::net::Ipv4Addr::LOCALHOST.into()),
                port: DEFAULT_PORT,
                key: "MCP_HOST".into(),
            },
            path: DEFAULT_PATH.into(),
            tokens: Vec::new(),
            allowed_origins: None,
            allowed_hosts: None,
            tls: None,
            max_body_bytes: 4 << 20,
            session_idle: Duration::from_secs(1800),
            session_id_prefix: None,
            max_sessions: 512,
            max_sessions_per_token: 128,
            max_calls_per_session: 16,
            max_connections: None,
            max_anonymous_connections_per_peer: 256,
            header_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// `MCP_TRANSPORT`: `Some(true)` for Streamable HTTP, `Some(false)` for
/// stdio, `None` when unset. The reference server's `sse` (the deprecated
/// HTTP+SSE transport) and anything else are refused with the fix.
pub fn transport_from_env(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<bool>, ConfigError> {
    let Some(raw) = env("MCP_TRANSPORT") else {
        return Ok(None);
    };
    match raw.trim().to_ascii_lowercase().as_str() {
        "" => Ok(None),
        "stdio" => Ok(Some(false)),
        "streamable-http" | "streamable_http" | "streamablehttp" | "http" => Ok(Some(true)),
        "sse" => Err(ConfigError::new(
            "MCP_TRANSPORT",
            "\"sse\" (the HTTP+SSE transport of 2024-11-05) is deprecated and not served",
            "set MCP_TRANSPORT=streamable-http (every current client speaks it) or stdio",
        )),
        other => Err(ConfigError::new(
            "MCP_TRANSPORT",
            format!("{other:?} is not a transport"),
            "set MCP_TRANSPORT to stdio (the default) or streamable-http",
        )),
    }
}

/// Parses `ADDR[:PORT]` as `--http` and `listen` take it (see
/// [`ListenAddr::parse`]); errors name `key`.
pub fn parse_listen(text: &str, key: &str) -> Result<ListenAddr, ConfigError> {
    ListenAddr::parse(text).map_err(|problem| {
        ConfigError::new(
            key,
            problem,
            "write ADDR[:PORT], e.g. 127.0.0.1:8080, [::1]:8080 or localhost:8080",
        )
    })
}

/// Reads the settings: the environment overrides the file key by key.
pub fn load(
    file: &FileHttp,
    file_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<HttpSettings, ConfigError> {
    let layers = Layers::new(env, "http", file_name);
    let d = HttpSettings::default();

    let requested = match transport_from_env(&|k| layers.env(k))? {
        Some(http) => http,
        None => file.listen.is_some(),
    };

    let port_env = match layers.env("MCP_PORT") {
        Some(raw) => Some(raw.trim().parse::<u16>().map_err(|_| {
            ConfigError::new(
                "MCP_PORT",
                format!("{raw:?} is not a port number"),
                "set MCP_PORT to a number between 1 and 65535 (0 picks a free port)",
            )
        })?),
        None => None,
    };
    let mut listen = d.listen.clone();
    if let Some(text) = layers.file("listen", file.listen.as_deref()) {
        let addr = parse_listen(text.value, &text.key)?;
        listen = Listen {
            host: addr.host,
            port: addr.port.unwrap_or(DEFAULT_PORT),
            key: text.key,
        };
    }
    if let Some(host) = layers.env("MCP_HOST") {
        let addr = parse_listen(&host, "MCP_HOST")?;
        if addr.port.is_some() {
            return Err(ConfigError::new(
                "MCP_HOST",
                "MCP_HOST has a port",
                "put the port in MCP_PORT, the address alone in MCP_HOST",
            ));
        }
        listen.host = addr.host;
        listen.key = "MCP_HOST".into();
    }
    if let Some(port) = port_env {
        listen.port = port;
    }

    let path = match layers.pick("MCP_PATH", "path", file.path.clone(), |p| {
        p.trim().to_string()
    }) {
        Some(p) => validate_path(&p.value, &p.key)?,
        None => d.path.clone(),
    };

    let tokens = load_tokens(file, &layers)?;

    let list = |env_key: &str, key: &str, value: &Option<Vec<String>>| {
        layers.pick(env_key, key, value.clone(), |raw| {
            raw.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
    };
    let allowed_origins = list(
        "MCP_ALLOWED_ORIGINS",
        "allowed_origins",
        &file.allowed_origins,
    )
    .map(|origins| {
        entries(
            origins,
            parse_origin_entry,
            "list origins as scheme://host[:port], e.g. https://agents.example.com",
        )
    })
    .transpose()?;
    let allowed_hosts = list("MCP_ALLOWED_HOSTS", "allowed_hosts", &file.allowed_hosts)
        .map(|hosts| {
            entries(
                hosts,
                parse_host_entry,
                "list the names clients use to reach pve-mcp, as host or host:port, e.g. mcp.example.com",
            )
        })
        .transpose()?;

    let tls = match (
        layers.path("MCP_TLS_CERT", "tls_cert", &file.tls_cert),
        layers.path("MCP_TLS_KEY", "tls_key", &file.tls_key),
    ) {
        // Built now, so a bad file is a start-up error naming the key.
        (Some(cert), Some(key)) => Some(ServerTls::load(&TlsFiles {
            cert: cert.value,
            key: key.value,
            cert_key: cert.key,
            key_key: key.key,
        })?),
        (None, None) => None,
        (Some(cert), None) => {
            return Err(ConfigError::new(
                cert.key,
                "a TLS certificate without its key",
                "set MCP_TLS_KEY (or http.tls_key) to the PEM private key",
            ));
        }
        (None, Some(key)) => {
            return Err(ConfigError::new(
                key.key,
                "a TLS key without its certificate",
                "set MCP_TLS_CERT (or http.tls_cert) to the PEM certificate chain",
            ));
        }
    };

    let session_id_prefix = layers
        .pick(
            "MCP_SESSION_ID_PREFIX",
            "session_id_prefix",
            file.session_id_prefix.clone(),
            |v| v,
        )
        .map(|p| parse_session_id_prefix(&p.value, &p.key))
        .transpose()?;

    let number = |env_key: &str, key: &str, value: Option<u64>, range: (u64, u64)| {
        layers.whole_number(env_key, key, value, range)
    };
    let max_body_bytes = number(
        "MCP_MAX_BODY_KIB",
        "max_body_kib",
        file.max_body_kib,
        (1, 65536),
    )?
    .map_or(d.max_body_bytes, |k| (k as usize) << 10);
    let session_idle = number(
        "MCP_SESSION_IDLE_SECS",
        "session_idle_secs",
        file.session_idle_secs,
        (1, 7 * 86400),
    )?
    .map_or(d.session_idle, Duration::from_secs);
    let max_sessions = number(
        "MCP_MAX_SESSIONS",
        "max_sessions",
        file.max_sessions,
        (1, 100_000),
    )?
    .map_or(d.max_sessions, |n| n as usize);
    let max_sessions_per_token = number(
        "MCP_MAX_SESSIONS_PER_TOKEN",
        "max_sessions_per_token",
        file.max_sessions_per_token,
        (1, 100_000),
    )?
    .map_or(d.max_sessions_per_token, |n| n as usize);
    let max_connections = number(
        "MCP_MAX_CONNECTIONS",
        "max_connections",
        file.max_connections,
        (1, 1_000_000),
    )?
    .map(|n| n as usize);
    let max_anonymous_connections_per_peer = number(
        "MCP_MAX_ANONYMOUS_CONNECTIONS_PER_PEER",
        "max_anonymous_connections_per_peer",
        file.max_anonymous_connections_per_peer,
        (1, 1_000_000),
    )?
    .map_or(d.max_anonymous_connections_per_peer, |n| n as usize);
    let header_timeout = number(
        "MCP_HEADER_TIMEOUT_SECS",
        "header_timeout_secs",
        file.header_timeout_secs,
        (1, 300),
    )?
    .map_or(d.header_timeout, Duration::from_secs);
    let max_calls_per_session = number(
        "MCP_MAX_CALLS_PER_SESSION",
        "max_calls_per_session",
        file.max_calls_per_session,
        (1, 1024),
    )?
    .map_or(d.max_calls_per_session, |n| n as usize);
    let shutdown_grace = number(
        "MCP_SHUTDOWN_GRACE_SECS",
        "shutdown_grace_secs",
        file.shutdown_grace_secs,
        (1, 3600),
    )?
    .map_or(d.shutdown_grace, Duration::from_secs);

    Ok(HttpSettings {
        requested,
        listen,
        path,
        tokens,
        allowed_origins,
        allowed_hosts,
        tls,
        max_body_bytes,
        session_idle,
        session_id_prefix,
        max_sessions,
        max_sessions_per_token,
        max_calls_per_session,
        max_connections,
        max_anonymous_connections_per_peer,
        header_timeout,
        shutdown_grace,
    })
}

/// Parses every entry of an allow-list, naming the list's key on a bad one.
fn entries<T>(
    list: Sourced<Vec<String>>,
    parse: fn(&str) -> Result<T, String>,
    fix: &str,
) -> Result<Vec<T>, ConfigError> {
    list.value
        .iter()
        .map(|entry| parse(entry).map_err(|problem| ConfigError::new(&list.key, problem, fix)))
        .collect()
}

fn validate_path(path: &str, key: &str) -> Result<String, ConfigError> {
    let ok = path.starts_with('/')
        && path.len() > 1
        && !path.ends_with('/')
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.' | '~'))
        && !matches!(path, "/healthz" | "/readyz");
    if ok {
        Ok(path.to_string())
    } else {
        Err(ConfigError::new(
            key,
            format!("{path:?} is not a usable endpoint path"),
            "use an absolute path without query, fragment or trailing slash, e.g. /mcp (not /healthz or /readyz)",
        ))
    }
}

/// The longest session-id prefix: it names a replica, nothing more.
const MAX_SESSION_ID_PREFIX: usize = 32;

/// A session-id prefix: a short name made of characters that need no
/// quoting in a header or in a load balancer's pattern.
fn parse_session_id_prefix(text: &str, key: &str) -> Result<String, ConfigError> {
    let ok = (1..=MAX_SESSION_ID_PREFIX).contains(&text.len())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if ok {
        Ok(text.to_string())
    } else {
        Err(ConfigError::new(
            key,
            format!("{text:?} is not a usable session id prefix"),
            format!(
                "use 1 to {MAX_SESSION_ID_PREFIX} letters, digits, '-' or '_', one per replica, e.g. r1- \
                 (the load balancer routes on it: see docs/deploy.md)"
            ),
        ))
    }
}

fn valid_token_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn load_tokens(file: &FileHttp, layers: &Layers<'_>) -> Result<Vec<NamedToken>, ConfigError> {
    let section = layers.file_key("tokens");
    // (name, token, where it came from), in file order.
    let mut found: Vec<(String, String, String)> = Vec::new();
    for (key, value) in &file.tokens {
        let (name, from_file) = match key.strip_suffix("_file") {
            Some(name) => (name, true),
            None => (key.as_str(), false),
        };
        let where_ = format!("{section}.{key}");
        if !valid_token_name(name) {
            return Err(ConfigError::new(
                where_,
                format!("{name:?} is not a valid token name"),
                "name tokens with letters, digits, '-', '_' and '.'; the audit log shows the name",
            ));
        }
        if found.iter().any(|(n, _, _)| n == name) {
            return Err(ConfigError::new(
                where_,
                format!("token {name:?} is given twice (inline and as a file)"),
                format!("keep one of {name} and {name}_file"),
            ));
        }
        let token = if from_file {
            read_secret_file(Path::new(value), &where_, "token")?
        } else {
            value.clone()
        };
        found.push((name.to_string(), token, where_));
    }
    let env_token = layers.secret(
        layers
            .env_sourced("MCP_AUTH_TOKEN")
            .map(|t| t.map(|t| t.trim().to_string())),
        layers
            .env_sourced("MCP_AUTH_TOKEN_FILE")
            .map(|p| p.map(|p| PathBuf::from(p.trim()))),
        "token",
    )?;
    if let Some(token) = env_token {
        found.retain(|(n, _, _)| n != DEFAULT_TOKEN_NAME);
        found.insert(0, (DEFAULT_TOKEN_NAME.to_string(), token.value, token.key));
    }
    let mut tokens: Vec<NamedToken> = Vec::with_capacity(found.len());
    for (name, token, key) in found {
        if !is_bearer_token(&token) {
            return Err(ConfigError::new(
                key,
                format!(
                    "the token for {name:?} is shorter than {MIN_TOKEN_LEN} characters or has characters a bearer token cannot carry"
                ),
                format!(
                    "use a random token of at least {MIN_TOKEN_LEN} characters, e.g. the output of `openssl rand -hex 32`"
                ),
            ));
        }
        if tokens.iter().any(|t| t.secret.expose() == token) {
            return Err(ConfigError::new(
                key,
                format!("the token for {name:?} is the same as another token"),
                "give every agent its own token, so the audit log can tell them apart",
            ));
        }
        tokens.push(NamedToken {
            name: Arc::from(name),
            secret: Secret::new(token),
        });
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::layered::test_env::env;

    const T1: &str = "0123456789abcdef0123456789abcdef";
    const T2: &str = "fedcba9876543210fedcba9876543210";

    fn file(text: &str) -> FileHttp {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn defaults_are_stdio_loopback_and_no_tokens() {
        let s = load(&FileHttp::default(), "f", &env(&[])).unwrap();
        assert!(!s.requested);
        assert_eq!(s.listen.host.to_string(), "127.0.0.1");
        assert_eq!(s.listen.port, DEFAULT_PORT);
        assert_eq!(s.path, "/mcp");
        assert!(s.tokens.is_empty());
    }

    #[test]
    fn reference_server_variables_select_and_place_http() {
        let s = load(
            &FileHttp::default(),
            "f",
            &env(&[
                ("MCP_TRANSPORT", "streamable-http"),
                ("MCP_HOST", "::1"),
                ("MCP_PORT", "9001"),
                ("MCP_PATH", "/api/mcp"),
            ]),
        )
        .unwrap();
        assert!(s.requested);
        assert_eq!(
            (s.listen.host.to_string(), s.listen.port),
            ("::1".into(), 9001)
        );
        assert_eq!(s.path, "/api/mcp");
        let e = load(&FileHttp::default(), "f", &env(&[("MCP_TRANSPORT", "sse")])).unwrap_err();
        assert_eq!(e.key, "MCP_TRANSPORT");
        assert!(e.fix.contains("streamable-http"), "{e}");
        let e = load(&FileHttp::default(), "f", &env(&[("MCP_PORT", "http")])).unwrap_err();
        assert_eq!(e.key, "MCP_PORT");
        let e = load(&FileHttp::default(), "f", &env(&[("MCP_PATH", "mcp?x")])).unwrap_err();
        assert_eq!(e.key, "MCP_PATH");
    }

    #[test]
    fn listen_errors_name_the_key() {
        let a = parse_listen("LocalHost:9", "k").unwrap();
        assert_eq!(
            (a.host, a.port),
            (ListenHost::Name("localhost".into()), Some(9))
        );
        for bad in ["", "host:port", "a b:1", "http://x:1"] {
            assert_eq!(
                parse_listen(bad, "--http").unwrap_err().key,
                "--http",
                "{bad}"
            );
        }
    }

    #[test]
    fn named_tokens_inline_and_from_files_and_the_env_default() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ci");
        std::fs::write(&path, format!("{T2}\n")).unwrap();
        let f = file(&format!(
            "listen = \"127.0.0.1:0\"\n[tokens]\nclaude = \"{T1}\"\nci_file = \"{}\"\n",
            path.display()
        ));
        let s = load(&f, "f", &env(&[])).unwrap();
        assert!(s.requested, "a listen key asks for HTTP");
        let names: Vec<_> = s.tokens.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["claude", "ci"]);
        assert_eq!(s.tokens[1].secret.expose(), T2);
        let s = load(
            &f,
            "f",
            &env(&[
                ("MCP_AUTH_TOKEN", "zzzzzzzzzzzzzzzzzzzz"),
                ("MCP_TRANSPORT", "stdio"),
            ]),
        )
        .unwrap();
        assert!(!s.requested, "MCP_TRANSPORT=stdio wins over the file");
        assert_eq!(s.tokens[0].name.as_ref(), DEFAULT_TOKEN_NAME);
        assert_eq!(s.tokens.len(), 3);
    }

    #[test]
    fn weak_duplicate_or_conflicting_tokens_are_refused_without_echoing_them() {
        let e = load(
            &FileHttp::default(),
            "f",
            &env(&[("MCP_AUTH_TOKEN", "short-secret")]),
        )
        .unwrap_err();
        assert_eq!(e.key, "MCP_AUTH_TOKEN");
        assert!(e.fix.contains("openssl rand -hex 32"), "{e}");
        assert!(!e.to_string().contains("short-secret"), "{e}");
        let e = load(
            &file(&format!("[tokens]\na = \"{T1}\"\nb = \"{T1}\"\n")),
            "f",
            &env(&[]),
        )
        .unwrap_err();
        assert!(e.problem.contains("same as another"), "{e}");
        assert!(!e.to_string().contains(T1), "{e}");
        let e = load(
            &file(&format!("[tokens]\na = \"{T1}\"\na_file = \"/x\"\n")),
            "f",
            &env(&[]),
        )
        .unwrap_err();
        assert!(e.key.contains("a_file"), "{e}");
        let e = load(
            &file(&format!("[tokens]\n\"bad name\" = \"{T1}\"\n")),
            "f",
            &env(&[]),
        )
        .unwrap_err();
        assert!(e.problem.contains("bad name"), "{e}");
    }

    #[test]
    fn limits_are_range_checked_and_named() {
        let s = load(
            &file("max_body_kib = 8\nsession_idle_secs = 2\nmax_sessions = 3\nmax_calls_per_session = 1\nshutdown_grace_secs = 5\n\
                   max_sessions_per_token = 2\nmax_connections = 100\nmax_anonymous_connections_per_peer = 7\nheader_timeout_secs = 3\n"),
            "f",
            &env(&[("MCP_MAX_SESSIONS", "4"), ("MCP_HEADER_TIMEOUT_SECS", "4")]),
        )
        .unwrap();
        assert_eq!(s.max_sessions_per_token, 2);
        assert_eq!(s.max_connections, Some(100));
        assert_eq!(s.max_anonymous_connections_per_peer, 7);
        assert_eq!(s.header_timeout, Duration::from_secs(4));
        let e = load(&file("header_timeout_secs = 0\n"), "f", &env(&[])).unwrap_err();
        assert!(e.key.starts_with("http.header_timeout_secs"), "{e}");
        let e = load(
            &FileHttp::default(),
            "f",
            &env(&[("MCP_MAX_SESSIONS_PER_TOKEN", "x")]),
        )
        .unwrap_err();
        assert_eq!(e.key, "MCP_MAX_SESSIONS_PER_TOKEN");
        assert_eq!(s.max_body_bytes, 8 << 10);
        assert_eq!(s.session_idle, Duration::from_secs(2));
        assert_eq!(s.max_sessions, 4, "the environment overrides the file");
        assert_eq!(s.max_calls_per_session, 1);
        assert_eq!(s.shutdown_grace, Duration::from_secs(5));
        let e = load(&file("max_sessions = 0\n"), "f", &env(&[])).unwrap_err();
        assert!(e.key.starts_with("http.max_sessions"), "{e}");
    }

    #[test]
    fn a_session_id_prefix_is_a_short_plain_name() {
        let s = load(&file("session_id_prefix = \"r1-\"\n"), "f", &env(&[])).unwrap();
        assert_eq!(s.session_id_prefix.as_deref(), Some("r1-"));
        let s = load(
            &file("session_id_prefix = \"r1-\"\n"),
            "f",
            &env(&[("MCP_SESSION_ID_PREFIX", "east_2-")]),
        )
        .unwrap();
        assert_eq!(
            s.session_id_prefix.as_deref(),
            Some("east_2-"),
            "the environment overrides the file"
        );
        assert_eq!(
            load(&FileHttp::default(), "f", &env(&[]))
                .unwrap()
                .session_id_prefix,
            None
        );
        for bad in ["r 1", "r1/", "r1.", "\u{e9}", &"r".repeat(33), ""] {
            let e = load(
                &file(&format!("session_id_prefix = {bad:?}\n")),
                "f",
                &env(&[]),
            )
            .unwrap_err();
            assert!(e.key.starts_with("http.session_id_prefix"), "{bad}: {e}");
            assert!(e.fix.contains("docs/deploy.md"), "{e}");
        }
        let e = load(
            &FileHttp::default(),
            "f",
            &env(&[("MCP_SESSION_ID_PREFIX", "r1:")]),
        )
        .unwrap_err();
        assert_eq!(e.key, "MCP_SESSION_ID_PREFIX");
    }

    #[test]
    fn allow_lists_are_checked() {
        let s = load(
            &file("allowed_hosts = [\"mcp.example.com\", \"10.0.0.5:8443\"]\n"),
            "f",
            &env(&[(
                "MCP_ALLOWED_ORIGINS",
                "https://a.example, http://localhost:3000",
            )]),
        )
        .unwrap();
        assert_eq!(s.allowed_hosts.unwrap().len(), 2);
        assert_eq!(s.allowed_origins.unwrap().len(), 2);
        let e = load(
            &FileHttp::default(),
            "f",
            &env(&[("MCP_ALLOWED_ORIGINS", "a.example")]),
        )
        .unwrap_err();
        assert_eq!(e.key, "MCP_ALLOWED_ORIGINS");
        let e = load(&file("allowed_hosts = [\"a b\"]\n"), "f", &env(&[])).unwrap_err();
        assert!(e.key.starts_with("http.allowed_hosts"), "{e}");
    }

    #[test]
    fn tls_needs_both_files() {
        let e = load(
            &FileHttp::default(),
            "f",
            &env(&[("MCP_TLS_CERT", "/x.pem")]),
        )
        .unwrap_err();
        assert_eq!(e.key, "MCP_TLS_CERT");
        assert!(e.fix.contains("MCP_TLS_KEY"), "{e}");
        let e = load(
            &FileHttp::default(),
            "f",
            &env(&[
                ("MCP_TLS_CERT", "/nonexistent.pem"),
                ("MCP_TLS_KEY", "/nonexistent.key"),
            ]),
        )
        .unwrap_err();
        assert_eq!(e.key, "MCP_TLS_CERT");
    }
}
