//! MCP over Streamable HTTP (2025-03-26 to 2025-11-25, and the stateless
//! 2026-07-28 form as far as rmcp serves it): one `pve-mcp` for many agents.
//!
//! rmcp's `StreamableHttpService` speaks the protocol (sessions, SSE,
//! `MCP-Protocol-Version`); this module puts in front of it what a network
//! service needs: connections with TLS and their limits ([`connections`]), the
//! `Host`/`Origin` allow-lists ([`guard`]) and bearer tokens with names for
//! the audit log ([`auth`]) as tower layers with the body limit and a log
//! line per request ([`layers`]), the checks rmcp does not make ([`mcp_route`]),
//! session ids a load balancer can route on ([`sessions`]),
//! the drain at shutdown ([`limits`]) and health endpoints ([`serve`]).
//! The approvals admin endpoint ([`admin`]) runs on the same code. The
//! types they all share are in [`response`]; the files use each other
//! without a cycle, [`serve`] at the top (`host/tests/layers.rs` checks).

pub mod admin;
pub mod auth;
pub mod connections;
pub mod guard;
pub mod layers;
pub mod limits;
pub mod mcp_route;
pub mod request_ids;
pub mod response;
pub mod serve;
pub mod sessions;

use crate::config::http::{self, HttpSettings};
use crate::config::listen::ListenHost;
use crate::error::ConfigError;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

/// The address to listen on: `--http ADDR[:PORT]` if given, else the
/// settings. A non-loopback address without a bearer token is refused
/// here, before anything listens.
pub fn resolve_listen(
    settings: &HttpSettings,
    flag: Option<&str>,
) -> Result<SocketAddr, ConfigError> {
    let (host, port, key) = match flag {
        Some(text) => {
            let addr = http::parse_listen(text, "--http")?;
            let port = addr.port.unwrap_or(settings.listen.port);
            (addr.host, port, "--http".to_string())
        }
        None => (
            settings.listen.host.clone(),
            settings.listen.port,
            settings.listen.key.clone(),
        ),
    };
    let addr = match &host {
        ListenHost::Ip(ip) => SocketAddr::new(*ip, port),
        ListenHost::Name(name) if name == "localhost" => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
        }
        ListenHost::Name(name) => (name.as_str(), port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .ok_or_else(|| ConfigError {
                key: key.clone(),
                problem: format!("cannot resolve {name:?} to an address"),
                fix: "use an IP address, e.g. 127.0.0.1:8000".into(),
            })?,
    };
    if !addr.ip().is_loopback() && settings.tokens.is_empty() {
        return Err(ConfigError {
            key,
            problem: format!(
                "{addr} is not a loopback address and no bearer token is configured: anyone who can \
                 reach it could use your Proxmox access"
            ),
            fix: "set MCP_AUTH_TOKEN (e.g. `export MCP_AUTH_TOKEN=$(openssl rand -hex 32)`) or \
                  [http.tokens] in the config file, or listen on 127.0.0.1"
                .into(),
        });
    }
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    #[test]
    fn non_loopback_without_token_is_refused_and_loopback_is_not() {
        let mut s = HttpSettings::default();
        assert_eq!(
            resolve_listen(&s, Some("localhost:0")).unwrap(),
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(
            resolve_listen(&s, Some("[::1]:9")).unwrap(),
            "[::1]:9".parse().unwrap()
        );
        let e = resolve_listen(&s, Some("0.0.0.0:8080")).unwrap_err();
        assert_eq!(e.key, "--http");
        assert!(e.fix.contains("MCP_AUTH_TOKEN"), "{e}");
        s.listen.host = ListenHost::Ip("192.0.2.1".parse().unwrap());
        assert_eq!(resolve_listen(&s, None).unwrap_err().key, "MCP_HOST");
        s.tokens.push(http::NamedToken {
            name: "a".into(),
            secret: Secret::new("0123456789abcdef"),
            toolsets: None,
            read_only: false,
            pve_credentials: None,
        });
        assert_eq!(
            resolve_listen(&s, Some("0.0.0.0:8080")).unwrap(),
            "0.0.0.0:8080".parse().unwrap()
        );
    }
}
