//! `Host` and `Origin` allow-lists: a web page must not reach a local MCP
//! server through the browser, whether by a cross-origin request (a
//! foreign `Origin`) or by DNS rebinding (a foreign name in `Host`).
//!
//! pve-mcp checks both itself rather than through rmcp's checks, so a
//! rejection can say which setting to change.

use std::net::SocketAddr;

use http::{HeaderMap, StatusCode, Uri};

use super::response::Reject;
use crate::config::allow_list::{HostEntry, OriginEntry, normalize, parse_origin};

/// The default allow-lists for a bound address: loopback names on the
/// bound port, plus the bound address itself when it is a specific one.
pub fn defaults(bound: SocketAddr, tls: bool) -> (Vec<HostEntry>, Vec<OriginEntry>) {
    let port = bound.port();
    let mut names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    let ip = bound.ip();
    if !ip.is_loopback() && !ip.is_unspecified() {
        names.push(ip.to_string());
    }
    let scheme = if tls { "https" } else { "http" };
    let hosts = names
        .iter()
        .map(|n| HostEntry {
            host: n.clone(),
            port: Some(port),
        })
        .collect();
    let origins = names
        .into_iter()
        .map(|host| OriginEntry::Tuple {
            scheme: scheme.to_string(),
            host,
            port,
        })
        .collect();
    (hosts, origins)
}

/// The two allow-lists of a running endpoint.
#[derive(Debug, Clone)]
pub struct Guard {
    hosts: Vec<HostEntry>,
    origins: Vec<OriginEntry>,
    /// The port a `Host` without one means (80, or 443 with TLS).
    implied_port: u16,
}

impl Guard {
    /// A guard for these lists (parsed when the configuration was read).
    pub fn new(hosts: Vec<HostEntry>, origins: Vec<OriginEntry>, tls: bool) -> Guard {
        Guard {
            hosts,
            origins,
            implied_port: if tls { 443 } else { 80 },
        }
    }

    /// Checks `Host` (or HTTP/2's `:authority`) and any `Origin`.
    pub fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Reject> {
        self.check_host(uri, headers)?;
        self.check_origin(headers)
    }

    fn check_host(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Reject> {
        let raw = match headers.get(http::header::HOST) {
            Some(v) => v.to_str().ok().map(str::to_string),
            None => uri.authority().map(|a| a.to_string()),
        };
        let forbidden = |shown: &str| {
            Reject::new(
                StatusCode::FORBIDDEN,
                format!(
                    "Forbidden: Host {shown:?} is not allowed (DNS rebinding protection); \
                     the server's operator can add it to http.allowed_hosts or MCP_ALLOWED_HOSTS"
                ),
            )
        };
        let Some(raw) = raw else {
            return Err(Reject::new(
                StatusCode::BAD_REQUEST,
                "Bad Request: the Host header is missing",
            ));
        };
        let Ok(authority) = http::uri::Authority::try_from(raw.as_str()) else {
            return Err(Reject::new(
                StatusCode::BAD_REQUEST,
                "Bad Request: the Host header is malformed",
            ));
        };
        let host = normalize(authority.host());
        let port = authority.port_u16().unwrap_or(self.implied_port);
        let allowed = self
            .hosts
            .iter()
            .any(|e| e.host == host && e.port.is_none_or(|p| p == port));
        if allowed {
            Ok(())
        } else {
            Err(forbidden(&raw))
        }
    }

    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Reject> {
        let Some(value) = headers.get(http::header::ORIGIN) else {
            // Not a browser, or a same-origin GET: nothing to check.
            return Ok(());
        };
        let text = value.to_str().unwrap_or("");
        let origin = if text.trim().eq_ignore_ascii_case("null") {
            Some(OriginEntry::Null)
        } else {
            parse_origin(text)
        };
        if origin.is_some_and(|o| self.origins.contains(&o)) {
            return Ok(());
        }
        Err(Reject::new(
            StatusCode::FORBIDDEN,
            format!(
                "Forbidden: Origin {text:?} is not allowed; the server's operator can add it \
                 to http.allowed_origins or MCP_ALLOWED_ORIGINS"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::allow_list::{parse_host_entry, parse_origin_entry};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn guard(bound: &str, tls: bool) -> Guard {
        let (hosts, origins) = defaults(bound.parse().unwrap(), tls);
        Guard::new(hosts, origins, tls)
    }

    fn status(g: &Guard, pairs: &[(&str, &str)]) -> Option<StatusCode> {
        g.check(&Uri::from_static("/mcp"), &headers(pairs))
            .err()
            .map(|r| r.status)
    }

    #[test]
    fn loopback_defaults_accept_local_names_on_the_bound_port_only() {
        let g = guard("127.0.0.1:8123", false);
        for ok in [
            "127.0.0.1:8123",
            "localhost:8123",
            "LOCALHOST:8123",
            "[::1]:8123",
        ] {
            assert_eq!(status(&g, &[("host", ok)]), None, "{ok}");
        }
        for bad in [
            "evil.example.com",
            "evil.example.com:8123",
            "127.0.0.1:9999",
            "localhost",
        ] {
            assert_eq!(
                status(&g, &[("host", bad)]),
                Some(StatusCode::FORBIDDEN),
                "{bad}"
            );
        }
        assert_eq!(status(&g, &[]), Some(StatusCode::BAD_REQUEST));
    }

    #[test]
    fn foreign_origins_get_403_and_absent_origin_passes() {
        let g = guard("127.0.0.1:8123", false);
        let host = ("host", "127.0.0.1:8123");
        assert_eq!(status(&g, &[host]), None);
        assert_eq!(
            status(&g, &[host, ("origin", "http://localhost:8123")]),
            None
        );
        for bad in [
            "http://evil.example.com",
            "https://localhost:8123",
            "http://localhost:1",
            "null",
            "garbage",
        ] {
            assert_eq!(
                status(&g, &[host, ("origin", bad)]),
                Some(StatusCode::FORBIDDEN),
                "{bad}"
            );
        }
    }

    #[test]
    fn configured_entries_match_with_implied_ports() {
        let g = Guard::new(
            ["mcp.example.com", "10.0.0.5:8443"]
                .map(|h| parse_host_entry(h).unwrap())
                .into(),
            ["https://agents.example.com", "null"]
                .map(|o| parse_origin_entry(o).unwrap())
                .into(),
            true,
        );
        assert_eq!(status(&g, &[("host", "mcp.example.com")]), None);
        assert_eq!(status(&g, &[("host", "mcp.example.com:9")]), None);
        assert_eq!(status(&g, &[("host", "10.0.0.5:8443")]), None);
        assert_eq!(
            status(&g, &[("host", "10.0.0.5")]),
            Some(StatusCode::FORBIDDEN),
            "a Host without a port means 443 here"
        );
        let host = ("host", "mcp.example.com");
        assert_eq!(
            status(&g, &[host, ("origin", "https://agents.example.com:443")]),
            None
        );
        assert_eq!(status(&g, &[host, ("origin", "null")]), None);
        assert_eq!(
            status(&g, &[host, ("origin", "https://agents.example.com:8443")]),
            Some(StatusCode::FORBIDDEN)
        );
    }

    #[test]
    fn specific_bound_addresses_are_allowed_by_default() {
        let g = guard("192.0.2.7:9000", true);
        assert_eq!(status(&g, &[("host", "192.0.2.7:9000")]), None);
        assert_eq!(
            status(
                &g,
                &[
                    ("host", "192.0.2.7:9000"),
                    ("origin", "https://192.0.2.7:9000")
                ]
            ),
            None
        );
        let (hosts, _) = defaults("0.0.0.0:9000".parse().unwrap(), false);
        assert!(!hosts.iter().any(|h| h.host == "0.0.0.0"), "{hosts:?}");
    }
}
