//! Taking the endpoint's base URL apart, so attempts can vary one piece of
//! it at a time.

/// The legitimate target, from `ctx.endpoints[0].base-url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    /// `https` or `http`, lower-cased.
    pub scheme: String,
    /// Host as written, brackets included for IPv6 (`[::1]`).
    pub host: String,
    /// Explicit port, or the scheme's default.
    pub port: u16,
    /// The authority exactly as the base URL has it.
    pub authority: String,
}

impl Base {
    /// Parses `scheme://authority[/...]`; anything after the authority is
    /// ignored because the contract says the base carries no API path.
    pub fn parse(url: &str) -> Result<Self, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| format!("base URL {url:?} has no scheme"))?;
        let scheme = scheme.to_ascii_lowercase();
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.is_empty() {
            return Err(format!("base URL {url:?} has no authority"));
        }
        // The port is after the last ':' unless that colon is inside an IPv6
        // literal, i.e. the authority ends with ']'.
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !authority.ends_with(']') => (
                h.to_owned(),
                p.parse()
                    .map_err(|_| format!("base URL {url:?} has a bad port"))?,
            ),
            _ => (
                authority.to_owned(),
                if scheme == "http" { 80 } else { 443 },
            ),
        };
        Ok(Self {
            scheme,
            host,
            port,
            authority: authority.to_owned(),
        })
    }

    /// A URL string for reports (not parsed by anything).
    pub fn url(scheme: &str, authority: &str, path: &str) -> String {
        format!("{scheme}://{authority}{path}")
    }

    /// Other spellings of the same loopback server, which a gate that
    /// compares authorities literally must refuse.
    pub fn loopback_aliases(&self) -> Vec<String> {
        let others: &[&str] = match self.host.as_str() {
            "127.0.0.1" => &["localhost", "[::1]", "127.1"],
            "localhost" => &["127.0.0.1", "[::1]"],
            "[::1]" => &["localhost", "127.0.0.1"],
            _ => &[],
        };
        others
            .iter()
            .map(|h| format!("{h}:{}", self.port))
            .collect()
    }
}

/// `s` percent-encoded as a path segment or a form value: every byte but
/// `A-Za-z0-9-._~` escaped (what Perl's `uri_escape` escapes, so also how
/// Proxmox stores `sshkeys`).
pub fn escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_all_but_unreserved_bytes() {
        assert_eq!(escape("local:iso/a-1.iso"), "local%3Aiso%2Fa-1.iso");
        assert_eq!(
            escape("ssh-ed25519 A+/= me@x\n"),
            "ssh-ed25519%20A%2B%2F%3D%20me%40x%0A"
        );
        assert_eq!(escape("%20"), "%2520");
    }

    #[test]
    fn parses_ipv4_with_port() {
        let b = Base::parse("https://127.0.0.1:8006").unwrap();
        assert_eq!(b.scheme, "https");
        assert_eq!(b.host, "127.0.0.1");
        assert_eq!(b.port, 8006);
        assert_eq!(b.authority, "127.0.0.1:8006");
        assert_eq!(
            b.loopback_aliases(),
            ["localhost:8006", "[::1]:8006", "127.1:8006"]
        );
    }

    #[test]
    fn parses_ipv6_and_default_port() {
        let b = Base::parse("https://[::1]/ignored").unwrap();
        assert_eq!(b.host, "[::1]");
        assert_eq!(b.port, 443);
        let b = Base::parse("HTTP://pve:81").unwrap();
        assert_eq!((b.scheme.as_str(), b.port), ("http", 81));
        assert!(Base::parse("pve:8006").is_err());
        assert!(Base::parse("https://").is_err());
    }
}
