//! The `[http]` settings: whether `pve-mcp serve` speaks Streamable HTTP,
//! where, with which tokens and limits. Every key has an `MCP_*`
//! environment variable that overrides it, like the reference server's
//! `MCP_TRANSPORT`, `MCP_HOST`, `MCP_PORT` and `MCP_PATH`.

pub mod tokens;

use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;

pub use self::tokens::{DEFAULT_TOKEN_NAME, NamedToken};
use super::allow_list::{HostEntry, OriginEntry, parse_host_entry, parse_origin_entry};
use super::layered::{Layers, Sourced};
use super::listen::{ListenAddr, ListenHost};
use super::section::section;
use crate::error::ConfigError;
use crate::tls::server::{ServerTls, TlsFiles};

/// The reference server's default port.
pub const DEFAULT_PORT: u16 = 8000;
/// The reference server's default endpoint path.
pub const DEFAULT_PATH: &str = "/mcp";

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

impl Default for Listen {
    /// The reference server's port on loopback, named as `MCP_HOST` would
    /// name it.
    fn default() -> Self {
        Listen {
            host: ListenHost::Ip(std::net::Ipv4Addr::LOCALHOST.into()),
            port: DEFAULT_PORT,
            key: "MCP_HOST".into(),
        }
    }
}

section! {
    /// The `[http]` section of the configuration file.
    file FileHttp;
    /// The Streamable HTTP settings, resolved from the file and the environment.
    #[derive(Debug, Clone)]
    settings HttpSettings in "http";

    /// `MCP_TRANSPORT=streamable-http` or an `[http] listen` key asks for
    /// HTTP; `serve --http` asks regardless.
    requested: bool = custom(read_requested, false);
    /// Where to listen.
    listen: Listen = custom(read_listen, Listen::default()) from listen: Option<String>;
    /// The MCP endpoint's path.
    path: String = custom(read_path, DEFAULT_PATH.into()) from path: Option<String>;
    /// The accepted bearer tokens; none means no authentication, which is
    /// only allowed on a loopback address.
    tokens: Vec<NamedToken> = custom(read_tokens, Vec::new())
        from #[serde(default)] tokens: IndexMap<String, self::tokens::FileToken>;
    /// Allowed `Origin` values; `None` means the loopback defaults.
    allowed_origins: Option<Vec<OriginEntry>> = custom(read_origins, None)
        from allowed_origins: Option<Vec<String>>;
    /// Allowed `Host` values; `None` means the loopback defaults.
    allowed_hosts: Option<Vec<HostEntry>> = custom(read_hosts, None)
        from allowed_hosts: Option<Vec<String>>;
    /// TLS for the endpoint itself, with its certificate already loaded.
    tls: Option<ServerTls> = custom(read_tls, None)
        from tls_cert: Option<PathBuf>, tls_key: Option<PathBuf>;
    /// Largest accepted request body.
    max_body_bytes: usize = number(1..=65536, default 4096, kib, env "MCP_MAX_BODY_KIB")
        from max_body_kib;
    /// A session with no traffic for this long is closed.
    session_idle: Duration = number(1..=7 * 86400, default 1800, secs, env "MCP_SESSION_IDLE_SECS")
        from session_idle_secs;
    /// What every session id this process issues starts with, so a load
    /// balancer in front of several replicas can send a session's requests
    /// to the replica that holds it; `None`: bare random ids.
    session_id_prefix: Option<String> = custom(read_session_id_prefix, None)
        from session_id_prefix: Option<String>;
    /// Sessions open at once; more initializations get 503.
    max_sessions: usize = number(1..=100_000, default 512, count, env "MCP_MAX_SESSIONS")
        from max_sessions;
    /// Sessions one bearer token may hold open at once; more
    /// initializations with it get 429. Without tokens there is no one to
    /// count them against, and only `max_sessions` applies.
    max_sessions_per_token: usize =
        number(1..=100_000, default 128, count, env "MCP_MAX_SESSIONS_PER_TOKEN")
        from max_sessions_per_token;
    /// Tool calls one session (or, without a session, one token's
    /// stateless requests together) may run at once; more get a tool error.
    max_calls_per_session: usize =
        number(1..=1024, default 16, count, env "MCP_MAX_CALLS_PER_SESSION")
        from max_calls_per_session;
    /// Open connections; `None` means 4 per session plus 64.
    max_connections: Option<usize> =
        number(1..=1_000_000, default none, count, env "MCP_MAX_CONNECTIONS")
        from max_connections;
    /// Connections from one address (an IPv4 address or an IPv6 /64) that
    /// have not yet sent a request that passed the token check.
    max_anonymous_connections_per_peer: usize =
        number(1..=1_000_000, default 256, count, env "MCP_MAX_ANONYMOUS_CONNECTIONS_PER_PEER")
        from max_anonymous_connections_per_peer;
    /// How long a new connection may take to send its first complete
    /// request header (TLS handshake included).
    header_timeout: Duration = number(1..=300, default 10, secs, env "MCP_HEADER_TIMEOUT_SECS")
        from header_timeout_secs;
    /// How long in-flight calls may run on after SIGTERM or SIGINT.
    shutdown_grace: Duration = number(1..=3600, default 30, secs, env "MCP_SHUTDOWN_GRACE_SECS")
        from shutdown_grace_secs;
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
    HttpSettings::load(file, file_name, env)
}

fn read_requested(file: &FileHttp, layers: &Layers<'_>) -> Result<bool, ConfigError> {
    Ok(match transport_from_env(&|k| layers.env(k))? {
        Some(http) => http,
        None => file.listen.is_some(),
    })
}

/// `listen` gives both parts; `MCP_HOST` and `MCP_PORT` override one each,
/// as in the reference server.
fn read_listen(file: &FileHttp, layers: &Layers<'_>) -> Result<Listen, ConfigError> {
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
    let mut listen = Listen::default();
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
    Ok(listen)
}

fn read_path(file: &FileHttp, layers: &Layers<'_>) -> Result<String, ConfigError> {
    match layers.pick("MCP_PATH", "path", file.path.clone(), |p| {
        p.trim().to_string()
    }) {
        Some(p) => validate_path(&p.value, &p.key),
        None => Ok(DEFAULT_PATH.into()),
    }
}

fn read_tokens(file: &FileHttp, layers: &Layers<'_>) -> Result<Vec<NamedToken>, ConfigError> {
    tokens::load(&file.tokens, layers)
}

/// An allow-list from the file, or from a comma-separated variable.
fn list(
    layers: &Layers<'_>,
    env_key: &str,
    key: &str,
    value: &Option<Vec<String>>,
) -> Option<Sourced<Vec<String>>> {
    layers.pick(env_key, key, value.clone(), |raw| {
        raw.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    })
}

fn read_origins(
    file: &FileHttp,
    layers: &Layers<'_>,
) -> Result<Option<Vec<OriginEntry>>, ConfigError> {
    list(
        layers,
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
    .transpose()
}

fn read_hosts(file: &FileHttp, layers: &Layers<'_>) -> Result<Option<Vec<HostEntry>>, ConfigError> {
    list(layers, "MCP_ALLOWED_HOSTS", "allowed_hosts", &file.allowed_hosts)
        .map(|hosts| {
            entries(
                hosts,
                parse_host_entry,
                "list the names clients use to reach pve-mcp, as host or host:port, e.g. mcp.example.com",
            )
        })
        .transpose()
}

fn read_tls(file: &FileHttp, layers: &Layers<'_>) -> Result<Option<ServerTls>, ConfigError> {
    match (
        layers.path("MCP_TLS_CERT", "tls_cert", &file.tls_cert),
        layers.path("MCP_TLS_KEY", "tls_key", &file.tls_key),
    ) {
        // Built now, so a bad file is a start-up error naming the key.
        (Some(cert), Some(key)) => Ok(Some(ServerTls::load(&TlsFiles {
            cert: cert.value,
            key: key.value,
            cert_key: cert.key,
            key_key: key.key,
        })?)),
        (None, None) => Ok(None),
        (Some(cert), None) => Err(ConfigError::new(
            cert.key,
            "a TLS certificate without its key",
            "set MCP_TLS_KEY (or http.tls_key) to the PEM private key",
        )),
        (None, Some(key)) => Err(ConfigError::new(
            key.key,
            "a TLS key without its certificate",
            "set MCP_TLS_CERT (or http.tls_cert) to the PEM certificate chain",
        )),
    }
}

fn read_session_id_prefix(
    file: &FileHttp,
    layers: &Layers<'_>,
) -> Result<Option<String>, ConfigError> {
    layers
        .pick(
            "MCP_SESSION_ID_PREFIX",
            "session_id_prefix",
            file.session_id_prefix.clone(),
            |v| v,
        )
        .map(|p| parse_session_id_prefix(&p.value, &p.key))
        .transpose()
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
