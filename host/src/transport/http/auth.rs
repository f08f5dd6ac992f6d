//! Bearer tokens: who may call, and by which name the audit log knows them.
//!
//! The presented token is hashed and compared with every configured
//! token's hash in constant time, with no early exit, so neither a token's
//! content, its length nor which token matched shows in the timing.

use std::sync::Arc;

use http::{HeaderMap, StatusCode};
use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use super::response::Reject;
use crate::caller::TokenName;
use crate::config::http::NamedToken;

/// The configured tokens, as hashes.
#[derive(Clone)]
pub struct Tokens {
    entries: Arc<[(Arc<str>, [u8; 32])]>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_ref()).collect();
        f.debug_struct("Tokens").field("names", &names).finish()
    }
}

const CHALLENGE: &str = "Bearer realm=\"pve-mcp\"";
const CHALLENGE_INVALID: &str = "Bearer realm=\"pve-mcp\", error=\"invalid_token\"";

impl Tokens {
    /// The tokens to accept.
    pub fn new(tokens: &[NamedToken]) -> Tokens {
        Tokens {
            entries: tokens
                .iter()
                .map(|t| (t.name.clone(), Sha256::digest(t.secret.expose()).into()))
                .collect(),
        }
    }

    /// The name of the configured token `presented` is, if any.
    pub fn identify(&self, presented: &str) -> Option<TokenName> {
        let digest: [u8; 32] = Sha256::digest(presented).into();
        // Every entry is compared, and the first hit kept by a constant-time
        // select rather than a branch.
        let mut found = u64::MAX;
        for (i, (_, expected)) in self.entries.iter().enumerate() {
            let take = expected.ct_eq(&digest) & found.ct_eq(&u64::MAX);
            found = u64::conditional_select(&found, &(i as u64), take);
        }
        usize::try_from(found)
            .ok()
            .and_then(|i| self.entries.get(i))
            .map(|(name, _)| TokenName(name.clone()))
    }

    /// Whether authentication is on.
    pub fn enabled(&self) -> bool {
        !self.entries.is_empty()
    }

    /// The name of the token in `Authorization: Bearer ...`, or a 401 with
    /// `WWW-Authenticate: Bearer`. With no tokens configured, everyone
    /// passes unnamed.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Option<TokenName>, Reject> {
        if !self.enabled() {
            return Ok(None);
        }
        if headers.get_all(http::header::AUTHORIZATION).iter().count() > 1 {
            return Err(Reject::new(
                StatusCode::BAD_REQUEST,
                "Bad Request: more than one Authorization header",
            ));
        }
        let presented = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            });
        let Some(presented) = presented else {
            let mut reject = Reject::new(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: this MCP endpoint needs a bearer token (Authorization: Bearer TOKEN)",
            );
            reject.www_authenticate = Some(CHALLENGE);
            return Err(reject);
        };
        match self.identify(presented) {
            Some(name) => Ok(Some(name)),
            None => {
                let mut reject = Reject::new(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: the bearer token is not valid for this server",
                );
                reject.www_authenticate = Some(CHALLENGE_INVALID);
                Err(reject)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    fn tokens() -> Tokens {
        Tokens::new(&[
            NamedToken {
                name: "claude".into(),
                secret: Secret::new("aaaaaaaaaaaaaaaaaaaaaaaa"),
                toolsets: None,
                read_only: false,
                pve_credentials: None,
            },
            NamedToken {
                name: "ci".into(),
                secret: Secret::new("bbbbbbbbbbbbbbbbbbbbbbbb"),
                toolsets: None,
                read_only: false,
                pve_credentials: None,
            },
        ])
    }

    fn auth(value: Option<&str>) -> Result<Option<TokenName>, Reject> {
        let mut h = HeaderMap::new();
        if let Some(v) = value {
            h.insert(http::header::AUTHORIZATION, v.parse().unwrap());
        }
        tokens().authenticate(&h)
    }

    #[test]
    fn each_token_is_known_by_its_name() {
        assert_eq!(
            auth(Some("Bearer aaaaaaaaaaaaaaaaaaaaaaaa")).unwrap(),
            Some(TokenName("claude".into()))
        );
        assert_eq!(
            auth(Some("bearer  bbbbbbbbbbbbbbbbbbbbbbbb")).unwrap(),
            Some(TokenName("ci".into()))
        );
    }

    #[test]
    fn missing_or_wrong_tokens_get_401_with_a_challenge() {
        for value in [None, Some("Basic YWxhZGRpbjpvcGVuc2VzYW1l"), Some("Bearer")] {
            let r = auth(value).unwrap_err();
            assert_eq!(r.status, StatusCode::UNAUTHORIZED);
            assert_eq!(r.www_authenticate, Some(CHALLENGE), "{value:?}");
        }
        for value in [
            "Bearer aaaaaaaaaaaaaaaaaaaaaaa",
            "Bearer aaaaaaaaaaaaaaaaaaaaaaaab",
        ] {
            let r = auth(Some(value)).unwrap_err();
            assert_eq!(r.www_authenticate, Some(CHALLENGE_INVALID), "{value}");
            assert!(!r.message.contains("aaaa"), "{}", r.message);
        }
    }

    #[test]
    fn two_authorization_headers_are_refused() {
        let mut h = HeaderMap::new();
        h.append(
            http::header::AUTHORIZATION,
            "Bearer aaaaaaaaaaaaaaaaaaaaaaaa".parse().unwrap(),
        );
        h.append(http::header::AUTHORIZATION, "Bearer nope".parse().unwrap());
        assert_eq!(
            tokens().authenticate(&h).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn no_tokens_means_no_auth_and_debug_shows_names_only() {
        let none = Tokens::new(&[]);
        assert!(!none.enabled());
        assert_eq!(none.authenticate(&HeaderMap::new()).unwrap(), None);
        let shown = format!("{:?}", tokens());
        assert!(
            shown.contains("claude") && !shown.contains("aaaa"),
            "{shown}"
        );
    }
}
