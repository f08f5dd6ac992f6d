//! A URL a node fetches (`download-url`): `http` or `https`, with a host,
//! and without credentials, which would stay in the task list and the
//! audit log for everyone who may read them.

use serde_json::Value;

use super::{deserialize_from_json, fixed_schema, string};
use crate::error::quoted;

/// Longest URL taken.
const MAX: usize = 2048;

/// An `http(s)://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl(pub String);

impl HttpUrl {
    /// The URL as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last path segment, e.g. `debian-12.iso`; `None` when the path
    /// ends in `/` or has none.
    pub fn file_name(&self) -> Option<&str> {
        let rest = self.0.split_once("://")?.1;
        let path = rest.split(['?', '#']).next()?;
        let (_, file) = path.rsplit_once('/')?;
        (!file.is_empty()).then_some(file)
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let rule = "an http:// or https:// URL, e.g. \
                    \"https://cdimage.debian.org/debian-cd/current/amd64/iso-cd/debian-12.iso\"";
        let s = string(v, MAX).map_err(|e| format!("{e}; it must be {rule}"))?;
        let Some((scheme, rest)) = s.split_once("://") else {
            return Err(format!("{} is not {rule}", quoted(s, 80)));
        };
        if !matches!(scheme, "http" | "https") {
            return Err(format!(
                "the scheme {scheme} is not taken; it must be {rule}"
            ));
        }
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "{} holds a space or control character; encode it as %20",
                quoted(s, 80)
            ));
        }
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.contains('@') {
            return Err(
                "holds credentials (user@ or user:password@), which would stay in the task list \
                 and logs; use a URL that needs none"
                    .into(),
            );
        }
        if authority.is_empty() {
            return Err(format!(
                "{} names no host; it must be {rule}",
                quoted(s, 80)
            ));
        }
        Ok(HttpUrl(s.to_owned()))
    }
}
deserialize_from_json!(HttpUrl);
fixed_schema!(HttpUrl, serde_json::json!({"type": "string"}));

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_plain_http_urls_are_taken() {
        let u = HttpUrl::from_json(&json!("https://example.org/x/debian-12.iso?x=1")).unwrap();
        assert_eq!(u.file_name(), Some("debian-12.iso"));
        assert_eq!(
            HttpUrl::from_json(&json!("http://example.org/"))
                .unwrap()
                .file_name(),
            None
        );
        for (bad, says) in [
            ("ftp://example.org/x.iso", "scheme ftp"),
            ("https://user:pw@example.org/x.iso", "credentials"),
            ("https:///x.iso", "no host"),
            ("https://example.org/a b.iso", "space"),
            ("example.org/x.iso", "is not an http"),
        ] {
            let e = HttpUrl::from_json(&json!(bad)).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains("pw@"), "{e}");
        }
    }
}
