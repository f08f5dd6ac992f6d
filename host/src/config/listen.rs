//! Listen addresses as `--http`, `MCP_HOST`, `[http] listen` and
//! `[approvals] admin_listen` take them, parsed once into [`ListenAddr`].

use std::fmt;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// The host part of a listen address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenHost {
    /// An IP address.
    Ip(IpAddr),
    /// A host name, lower case; resolved when the listener starts.
    Name(String),
}

impl fmt::Display for ListenHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenHost::Ip(ip) => ip.fmt(f),
            ListenHost::Name(name) => f.write_str(name),
        }
    }
}

/// `ADDR[:PORT]`: an address or host name, with or without a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenAddr {
    /// The address or name.
    pub host: ListenHost,
    /// The port, when the text gives one.
    pub port: Option<u16>,
}

impl ListenAddr {
    /// Parses `127.0.0.1:8080`, `[::1]:8080`, `localhost:8080`, or an
    /// address or name alone. The error is the problem, for the caller to
    /// wrap with its key and fix.
    pub fn parse(text: &str) -> Result<ListenAddr, String> {
        let text = text.trim();
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(ListenAddr {
                host: ListenHost::Ip(addr.ip()),
                port: Some(addr.port()),
            });
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(ListenAddr {
                host: ListenHost::Ip(ip),
                port: None,
            });
        }
        if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'))
            && let Ok(ip) = inner.parse::<Ipv6Addr>()
        {
            return Ok(ListenAddr {
                host: ListenHost::Ip(IpAddr::V6(ip)),
                port: None,
            });
        }
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => {
                let port = port
                    .parse::<u16>()
                    .map_err(|_| format!("{port:?} is not a port number"))?;
                (host, Some(port))
            }
            None => (text, None),
        };
        let valid_name = !host.is_empty()
            && host.len() <= 253
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
        if !valid_name {
            return Err(format!("{text:?} is not an address or host name"));
        }
        Ok(ListenAddr {
            host: ListenHost::Name(host.to_ascii_lowercase()),
            port,
        })
    }

    /// The socket address, when the text gave an IP address and a port.
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        match (&self.host, self.port) {
            (ListenHost::Ip(ip), Some(port)) => Some(SocketAddr::new(*ip, port)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (String, Option<u16>) {
        let a = ListenAddr::parse(text).unwrap();
        (a.host.to_string(), a.port)
    }

    #[test]
    fn listen_forms() {
        assert_eq!(parse("127.0.0.1:8080"), ("127.0.0.1".into(), Some(8080)));
        assert_eq!(parse("[::1]:81"), ("::1".into(), Some(81)));
        assert_eq!(parse("[::1]"), ("::1".into(), None));
        assert_eq!(parse("LocalHost:9"), ("localhost".into(), Some(9)));
        assert_eq!(parse("10.0.0.1"), ("10.0.0.1".into(), None));
        for bad in ["", "host:port", "a b:1", "http://x:1"] {
            assert!(ListenAddr::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            ListenAddr::parse("[::1]:81").unwrap().socket_addr(),
            Some("[::1]:81".parse().unwrap())
        );
        assert_eq!(
            ListenAddr::parse("localhost:1").unwrap().socket_addr(),
            None
        );
    }
}
