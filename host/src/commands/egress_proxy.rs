//! `pve-mcp egress-proxy`: the egress gate for a component hosted
//! elsewhere (see [`crate::transport::egress_proxy`]).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use super::exit::{config_failure, failure};
use super::global::Global;
use crate::error::ConfigError;
use crate::secret::Secret;
use crate::server::serving::start_app;
use crate::transport::egress_proxy::{self, ProxySettings};

/// The environment variable that holds the proxy's own token.
pub const TOKEN_ENV: &str = "PVE_MCP_EGRESS_PROXY_TOKEN";

/// Shortest proxy token accepted.
const TOKEN_MIN: usize = 16;

/// Runs the proxy until SIGTERM or SIGINT.
pub async fn run(global: &Global, listen: SocketAddr) -> ExitCode {
    let config = match global.load_config() {
        Ok(config) => config,
        Err(e) => return config_failure(&e),
    };
    let token = match token(std::env::var(TOKEN_ENV).ok()) {
        Ok(token) => token,
        Err(e) => return config_failure(&e),
    };
    let app = match start_app(&global.server_startup(), &config).await {
        Ok(app) => Arc::new(app),
        Err(e) => return failure(&e),
    };
    let settings = ProxySettings { listen, token };
    let announce = |base: &str| eprintln!("pve-mcp: egress proxy {base}");
    match egress_proxy::run(app, settings, announce).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failure(&e),
    }
}

/// The proxy's token from its variable: unset or blank means none; one
/// that is set must be long enough to guess and safe in a URL path.
fn token(value: Option<String>) -> Result<Option<Secret>, ConfigError> {
    let Some(value) = value.filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    let safe = value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if value.len() < TOKEN_MIN || !safe {
        return Err(ConfigError {
            key: TOKEN_ENV.into(),
            problem: format!(
                "the egress proxy's token must be at least {TOKEN_MIN} characters of letters, \
                 digits, '-' and '_' (it travels in the URL path)"
            ),
            fix: "generate one, e.g. with `openssl rand -hex 24`".into(),
        });
    }
    Ok(Some(Secret::new(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_long_and_path_safe_or_refused_naming_the_variable() {
        assert!(token(None).unwrap().is_none());
        assert!(token(Some("  ".into())).unwrap().is_none());
        assert!(token(Some("abcdefghijklmnop".into())).unwrap().is_some());
        for bad in [
            "short",
            "abcdefghijklmnop/x",
            "abcdefghijklmnop x",
            "abcdefghijklmnöp",
        ] {
            let e = token(Some(bad.into())).unwrap_err();
            assert_eq!(e.key, TOKEN_ENV, "{bad}");
            assert!(!e.to_string().contains(bad), "the value is not echoed: {e}");
        }
    }
}
