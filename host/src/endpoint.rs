//! A Proxmox API endpoint, parsed once from its base URL, and the rules for
//! which request targets belong to it.

use http::Uri;
use http::uri::Scheme;

/// Where a Proxmox API lives: scheme, host and port, nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `https`, or `http` when explicitly allowed.
    pub https: bool,
    /// Lower-cased host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// The TCP port, defaulted from the scheme when the URL has none.
    pub port: u16,
}

/// Why a base URL is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// Not an absolute URL.
    #[error("not an absolute URL with a host")]
    NotAUrl,
    /// A scheme other than https (or http when allowed).
    #[error("only https:// URLs are supported")]
    Scheme,
    /// `http://` without the explicit opt-in.
    #[error("plain http:// would send the API token unencrypted")]
    InsecureHttp,
    /// `user:pass@` in the URL.
    #[error("credentials in the URL are not allowed")]
    Userinfo,
    /// A path other than `/` or `/api2/json`, or a query or fragment.
    #[error("the URL may not have a path (other than /api2/json), query or fragment")]
    ExtraPath,
}

/// The only API prefix a guest may reach.
pub const API_PREFIX: &str = "/api2/json/";

impl Endpoint {
    /// Parses a base URL such as `https://pve1:8006` or
    /// `https://pve1:8006/api2/json/`.
    pub fn parse(raw: &str, allow_http: bool) -> Result<Endpoint, EndpointError> {
        let raw = raw.trim();
        let uri: Uri = raw.parse().map_err(|_| EndpointError::NotAUrl)?;
        let https = match uri.scheme() {
            Some(s) if *s == Scheme::HTTPS => true,
            Some(s) if *s == Scheme::HTTP => {
                if !allow_http {
                    return Err(EndpointError::InsecureHttp);
                }
                false
            }
            Some(_) => return Err(EndpointError::Scheme),
            None => return Err(EndpointError::NotAUrl),
        };
        let authority = uri.authority().ok_or(EndpointError::NotAUrl)?;
        if authority.as_str().contains('@') {
            return Err(EndpointError::Userinfo);
        }
        if raw.contains('#') || uri.query().is_some() {
            return Err(EndpointError::ExtraPath);
        }
        let path = uri.path().trim_end_matches('/');
        if !(path.is_empty() || path == "/api2/json") {
            return Err(EndpointError::ExtraPath);
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if host.is_empty() {
            return Err(EndpointError::NotAUrl);
        }
        Ok(Endpoint {
            https,
            host: host.to_ascii_lowercase(),
            port: authority.port_u16().unwrap_or(if https { 443 } else { 80 }),
        })
    }

    /// The base URL the guest is told, e.g. `https://pve1:8006`.
    pub fn base_url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        if self.host.contains(':') {
            format!("{scheme}://[{}]:{}", self.host, self.port)
        } else {
            format!("{scheme}://{}:{}", self.host, self.port)
        }
    }

    /// Whether a request URI's scheme, host and port are exactly this
    /// endpoint's. Authorities are compared literally: `localhost` and
    /// `127.0.0.1` are different endpoints, as they are in the config.
    pub fn matches(&self, uri: &Uri) -> bool {
        let scheme_ok = match uri.scheme() {
            Some(s) => (*s == Scheme::HTTPS && self.https) || (*s == Scheme::HTTP && !self.https),
            None => false,
        };
        let Some(authority) = uri.authority() else {
            return false;
        };
        if authority.as_str().contains('@') {
            return false;
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority
            .port_u16()
            .unwrap_or(if self.https { 443 } else { 80 });
        scheme_ok && host.eq_ignore_ascii_case(&self.host) && port == self.port
    }
}

/// PVE's `pve-volume-id` as storage content lists give it: a storage id,
/// `:`, then up to five `/`-separated components, each starting with a
/// letter or digit (`local:iso/x.iso`, `pbs:backup/ct/101/2025-...Z`).
/// The one path segment that may hold a `/`; the route placeholder
/// `{volid}` has this pattern too.
pub const VOLID_PATTERN: &str = r"[a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]:[A-Za-z0-9][A-Za-z0-9_.+=:~\-]*(/[A-Za-z0-9][A-Za-z0-9_.+=:~\-]*){0,4}";

static VOLID: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    // A fixed pattern, not input: the tests compile it.
    regex::Regex::new(&format!("^(?:{VOLID_PATTERN})$")).expect("the volid pattern compiles")
});

/// Why a request path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathDenial {
    /// Not under `/api2/json/`.
    #[error("path is not under /api2/json/")]
    OutsideApi,
    /// A `.`/`..` or empty segment, raw or percent-encoded, or an encoded
    /// `/` or `\` that could change which handler a server picks.
    #[error("path has a '.', '..' or empty segment, or an encoded separator")]
    Traversal,
    /// Control characters or bytes that are not valid percent-encoding.
    #[error("path has control characters or bad percent-encoding")]
    Malformed,
}

/// Checks a request path (without query) against the API prefix, segment by
/// segment, after percent-decoding, so that no spelling of `..` escapes it.
pub fn check_api_path(path: &str) -> Result<(), PathDenial> {
    let Some(rest) = path.strip_prefix(API_PREFIX) else {
        return Err(PathDenial::OutsideApi);
    };
    if rest.is_empty() {
        return Err(PathDenial::OutsideApi);
    }
    for segment in rest.split('/') {
        let decoded = percent_decode(segment).ok_or(PathDenial::Malformed)?;
        if decoded.iter().any(|b| b.is_ascii_control()) {
            return Err(PathDenial::Malformed);
        }
        // A storage volume's id holds `/` (`local:iso/x.iso`, sent as
        // `%2F`); its pattern admits only components that start with a
        // letter or digit, so never `.`, `..` or an empty one.
        let slash_ok = || std::str::from_utf8(&decoded).is_ok_and(|s| VOLID.is_match(s));
        if decoded.is_empty()
            || decoded == b"."
            || decoded == b".."
            || decoded.contains(&b'\\')
            || (decoded.contains(&b'/') && !slash_ok())
        {
            return Err(PathDenial::Traversal);
        }
    }
    Ok(())
}

/// `segment` with its `%XX` escapes decoded once; `None` when an escape is
/// malformed (a `%` not followed by two hex digits).
pub fn percent_decode(segment: &str) -> Option<Vec<u8>> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_reference_forms() {
        let e = Endpoint::parse("https://PVE1.example:8006/api2/json/", false).unwrap();
        assert_eq!(
            e,
            Endpoint {
                https: true,
                host: "pve1.example".into(),
                port: 8006
            }
        );
        assert_eq!(Endpoint::parse("https://pve", false).unwrap().port, 443);
        assert_eq!(
            Endpoint::parse("https://[::1]:8006", false)
                .unwrap()
                .base_url(),
            "https://[::1]:8006"
        );
    }

    #[test]
    fn matches_scheme_host_and_port_exactly() {
        let e = Endpoint::parse("https://127.0.0.1:8006", false).unwrap();
        let ok: Uri = "https://127.0.0.1:8006/api2/json/version".parse().unwrap();
        assert!(e.matches(&ok));
        for bad in [
            "http://127.0.0.1:8006/api2/json/version",
            "https://127.0.0.1:8007/api2/json/version",
            "https://localhost:8006/api2/json/version",
            "https://127.0.0.1/api2/json/version",
            "https://evil@127.0.0.1:8006/api2/json/version",
            "/api2/json/version",
        ] {
            assert!(!e.matches(&bad.parse().unwrap()), "{bad}");
        }
    }

    #[test]
    fn api_paths_only() {
        assert!(check_api_path("/api2/json/cluster/resources").is_ok());
        assert!(check_api_path("/api2/json/nodes/pve1/tasks/UPID%3Apve1%3A0000/status").is_ok());
        assert_eq!(check_api_path("/"), Err(PathDenial::OutsideApi));
        assert_eq!(check_api_path("/api2/json/"), Err(PathDenial::OutsideApi));
        assert_eq!(
            check_api_path("/api2/extjs/version"),
            Err(PathDenial::OutsideApi)
        );
        assert_eq!(
            check_api_path("/api2/json2/version"),
            Err(PathDenial::OutsideApi)
        );
        for t in [
            "/api2/json/../../etc/passwd",
            "/api2/json/%2e%2e/%2E%2E/x",
            "/api2/json/nodes//qemu",
            "/api2/json/nodes/a%2fb",
            "/api2/json/./version",
            "/api2/json/nodes/a%5cb",
            "/api2/json/nodes/pve1/storage/local/content/local%3Aiso%2F..%2Fx",
            "/api2/json/nodes/pve1/storage/local/content/local%3Aiso%2F%2Fx",
            "/api2/json/nodes/pve1/storage/local/content/iso%2Fx.iso",
        ] {
            assert_eq!(check_api_path(t), Err(PathDenial::Traversal), "{t}");
        }
        // A volume id's encoded `/` is the one that passes.
        assert!(
            check_api_path("/api2/json/nodes/pve1/storage/local/content/local%3Aiso%2Fx.iso")
                .is_ok()
        );
        assert_eq!(
            check_api_path("/api2/json/a%zz"),
            Err(PathDenial::Malformed)
        );
        assert_eq!(
            check_api_path("/api2/json/a%0a"),
            Err(PathDenial::Malformed)
        );
    }
}
