//! The `[metrics]` section: Prometheus metrics (`GET /metrics`). Over
//! Streamable HTTP they are on (`enabled`, `PVE_MCP_METRICS`), served on
//! the MCP listener behind its bearer tokens; `listen`
//! (`PVE_MCP_METRICS_LISTEN`) serves them on a listener of their own,
//! without a token, and so only on a loopback address. Over stdio metrics
//! are off unless `listen` is set. What is measured: [`crate::metrics`].

use std::net::SocketAddr;

use super::layered::Layers;
use super::listen::ListenAddr;
use super::section::section;
use crate::error::ConfigError;

/// The variable that overrides `[metrics] enabled`.
pub const ENABLED_ENV: &str = "PVE_MCP_METRICS";
/// The variable that overrides `[metrics] listen`.
pub const LISTEN_ENV: &str = "PVE_MCP_METRICS_LISTEN";

section! {
    /// `[metrics]` as written in the file.
    file FileMetrics;
    /// Where and whether metrics are served.
    #[derive(Debug, Clone, PartialEq, Eq)]
    settings MetricsSettings in "metrics";

    /// Metrics are collected and served (`false`: no `/metrics` anywhere).
    enabled: bool = flag(default true, env ENABLED_ENV) from enabled;
    /// A loopback listener of their own, without a token.
    listen: Option<SocketAddr> = custom(read_listen, None) from listen: Option<String>;
}

impl MetricsSettings {
    /// Whether metrics are on for a server over this transport: over HTTP
    /// unless turned off, over stdio only with a listener of their own.
    pub fn on(&self, http: bool) -> bool {
        self.enabled && (http || self.listen.is_some())
    }
}

/// `listen`: an IP address and port, on loopback only.
fn read_listen(file: &FileMetrics, layers: &Layers<'_>) -> Result<Option<SocketAddr>, ConfigError> {
    let (raw, key) = match layers.env_sourced(LISTEN_ENV) {
        Some(env) => (env.value, env.key),
        None => match &file.listen {
            Some(text) => (text.clone(), layers.file_key("listen")),
            None => return Ok(None),
        },
    };
    let addr = ListenAddr::parse(&raw)
        .ok()
        .and_then(|a| a.socket_addr())
        .ok_or_else(|| {
            ConfigError::new(
                &key,
                format!("{raw:?} is not an IP address and port"),
                "use a loopback address and port, e.g. 127.0.0.1:9464 or [::1]:9464",
            )
        })?;
    if !addr.ip().is_loopback() {
        return Err(ConfigError::new(
            &key,
            format!(
                "{addr} is not a loopback address; the metrics listener has no bearer token, so it \
                 must not be reachable from the network"
            ),
            "use 127.0.0.1:PORT or [::1]:PORT (a Prometheus elsewhere can scrape /metrics on the \
             MCP listener with a bearer token instead, or through an SSH tunnel or a local agent)",
        ));
    }
    Ok(Some(addr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::layered::test_env::env;

    fn file(listen: Option<&str>) -> FileMetrics {
        FileMetrics {
            enabled: None,
            listen: listen.map(str::to_string),
        }
    }

    #[test]
    fn defaults_on_over_http_and_off_over_stdio() {
        let s = MetricsSettings::load(&file(None), "f.toml", &env(&[])).unwrap();
        assert!(s.enabled);
        assert_eq!(s.listen, None);
        assert!(s.on(true));
        assert!(!s.on(false));
        let s =
            MetricsSettings::load(&file(None), "f.toml", &env(&[(ENABLED_ENV, "false")])).unwrap();
        assert!(!s.on(true));
    }

    #[test]
    fn listen_is_loopback_only_and_turns_metrics_on_over_stdio() {
        let s = MetricsSettings::load(&file(Some("127.0.0.1:9464")), "f.toml", &env(&[])).unwrap();
        assert_eq!(s.listen, Some("127.0.0.1:9464".parse().unwrap()));
        assert!(s.on(false));
        let s =
            MetricsSettings::load(&file(None), "f.toml", &env(&[(LISTEN_ENV, "[::1]:9")])).unwrap();
        assert_eq!(s.listen, Some("[::1]:9".parse().unwrap()));
        for (bad, problem) in [
            ("0.0.0.0:9464", "not a loopback address"),
            ("192.168.1.5:9464", "not a loopback address"),
            ("localhost", "not an IP address and port"),
            ("127.0.0.1", "not an IP address and port"),
        ] {
            let e = MetricsSettings::load(&file(Some(bad)), "f.toml", &env(&[])).unwrap_err();
            assert!(e.key.starts_with("metrics.listen"), "{bad}: {e}");
            assert!(e.problem.contains(problem), "{bad}: {e}");
            assert!(e.fix.contains("127.0.0.1:"), "{e}");
        }
        let e = MetricsSettings::load(&file(None), "f.toml", &env(&[(LISTEN_ENV, "0.0.0.0:1")]))
            .unwrap_err();
        assert_eq!(e.key, LISTEN_ENV);
    }
}
