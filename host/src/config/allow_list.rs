//! `Host` and `Origin` allow-list entries for the Streamable HTTP endpoint,
//! parsed once when the configuration is read; the request guard matches
//! each request's headers against them.

use http::Uri;

/// One allowed `Host`: a name or address, with or without a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    /// The name or address, lower-case, without brackets.
    pub host: String,
    /// The port, when the entry names one.
    pub port: Option<u16>,
}

/// One allowed `Origin`: `null`, or scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginEntry {
    /// The literal `null` origin (sandboxed frames, files).
    Null,
    /// `scheme://host:port`; a missing port means the scheme's default.
    Tuple {
        /// `http` or `https`.
        scheme: String,
        /// Lower case, IPv6 without brackets.
        host: String,
        /// Explicit or the scheme's default.
        port: u16,
    },
}

/// A host as entries and requests are compared: lower case, IPv6 without
/// its brackets.
pub fn normalize(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

fn scheme_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// Parses an `allowed_hosts` entry: `host` (any port) or `host:port`.
pub fn parse_host_entry(text: &str) -> Result<HostEntry, String> {
    let authority = http::uri::Authority::try_from(text.trim())
        .map_err(|_| format!("{text:?} is not a host or host:port"))?;
    if authority.as_str().contains('@') || authority.host().is_empty() {
        return Err(format!("{text:?} is not a host or host:port"));
    }
    Ok(HostEntry {
        host: normalize(authority.host()),
        port: authority.port_u16(),
    })
}

/// Parses an `allowed_origins` entry: `null` or `scheme://host[:port]`.
pub fn parse_origin_entry(text: &str) -> Result<OriginEntry, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("null") {
        return Ok(OriginEntry::Null);
    }
    parse_origin(text).ok_or_else(|| format!("{text:?} is not an origin (scheme://host[:port])"))
}

/// Parses a request's `Origin` (or an entry other than `null`); `None`
/// when it is not `scheme://host[:port]` with a known scheme.
pub fn parse_origin(text: &str) -> Option<OriginEntry> {
    let uri: Uri = text.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    if authority.as_str().contains('@') || !matches!(uri.path(), "" | "/") || uri.query().is_some()
    {
        return None;
    }
    let port = authority.port_u16().or_else(|| scheme_port(&scheme))?;
    Some(OriginEntry::Tuple {
        scheme,
        host: normalize(authority.host()),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_validated() {
        assert!(parse_host_entry("a b").is_err());
        assert!(parse_host_entry("user@host").is_err());
        assert!(parse_origin_entry("example.com").is_err());
        assert!(parse_origin_entry("https://example.com/path").is_err());
        assert_eq!(
            parse_origin_entry("HTTPS://Example.com").unwrap(),
            OriginEntry::Tuple {
                scheme: "https".into(),
                host: "example.com".into(),
                port: 443
            }
        );
    }
}
