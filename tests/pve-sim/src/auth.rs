//! Authentication as PVE's `auth_handler` does it: ticket from the
//! `PVEAuthCookie` cookie, else from `Authorization`, else an API token from
//! `Authorization`; CSRF token for non-GET ticket requests.
//!
//! Tickets are `PVE:<user>:<8HEX>::<sig>` like PVE's, but the signature is
//! an HMAC-SHA256 with a per-run secret instead of an RSA signature.

use std::time::Duration;

use crate::AuthSeen;
use crate::errors::ApiError;
use crate::perms::{Acl, Identity};
use crate::state::Cluster;
use crate::util::{base64, hmac_sha256, now_f64, now_secs, pct_decode};

const COOKIE_NAME: &str = "PVEAuthCookie";
const TOKEN_NAME: &str = "PVEAPIToken";
/// PVE >= 9.1.5 answers every credential failure with this, not the cause.
pub(crate) const AUTH_FAILED: &str = "Authentication failed!";

/// What the request offered.
pub(crate) struct Credentials<'a> {
    pub method: &'a str,
    pub rel_path: &'a str,
    pub cookie: Option<&'a str>,
    pub authorization: Option<&'a str>,
    pub csrf: Option<&'a str>,
}

pub(crate) struct AuthOutcome {
    pub seen: AuthSeen,
    /// `Ok(None)` for the few calls that need no authentication.
    pub result: Result<Option<Identity>, ApiError>,
    /// An API token was sent (PVE then refuses `allowtoken => 0` methods,
    /// even on calls that need no authentication).
    pub api_token: bool,
}

/// Secret and lifetime used to sign and check tickets.
#[derive(Clone, Copy)]
pub(crate) struct TicketKey<'a> {
    pub secret: &'a [u8],
    pub lifetime: Duration,
}

/// `(?:^|\s)NAME(?:=| )([^;]*)`, then URI-unescaped; empty counts as absent.
pub(crate) fn extract_auth_value(header: &str, name: &str) -> Option<String> {
    let mut from = 0;
    while let Some(pos) = header[from..].find(name) {
        let i = from + pos;
        let starts_ok = i == 0 || header[..i].ends_with(char::is_whitespace);
        let after = &header[i + name.len()..];
        if starts_ok && (after.starts_with('=') || after.starts_with(' ')) {
            let v = &after[1..];
            let v = &v[..v.find(';').unwrap_or(v.len())];
            let v = pct_decode(v);
            return (!v.is_empty()).then_some(v);
        }
        from = i + name.len();
    }
    None
}

/// Calls PVE lets through without credentials.
fn needs_auth(method: &str, rel_path: &str) -> bool {
    !matches!(
        (method, rel_path),
        ("GET", "/access/domains")
            | ("GET" | "POST", "/access/ticket")
            | ("POST", "/access/vncticket")
            | ("POST", "/access/openid/login")
            | ("POST", "/access/openid/auth-url")
    )
}

pub(crate) fn authenticate(
    c: &Credentials<'_>,
    cluster: &Cluster,
    key: TicketKey<'_>,
) -> AuthOutcome {
    let ticket = c
        .cookie
        .and_then(|h| extract_auth_value(h, COOKIE_NAME))
        .or_else(|| {
            c.authorization
                .and_then(|h| extract_auth_value(h, COOKIE_NAME))
        });
    let api_token = match &ticket {
        Some(_) => None,
        None => c
            .authorization
            .and_then(|h| extract_auth_value(h, TOKEN_NAME)),
    };

    let mut seen = match (&ticket, &api_token) {
        (Some(t), _) => match parse_ticket(t) {
            Some((user, _, _)) => AuthSeen::Ticket {
                user: user.to_string(),
            },
            None => AuthSeen::Other,
        },
        (None, Some(tok)) => AuthSeen::Token {
            token_id: tok
                .rsplit_once('=')
                .map_or(tok.as_str(), |(id, _)| id)
                .to_string(),
            secret_ok: false,
        },
        (None, None) if c.authorization.is_some() => AuthSeen::Other,
        (None, None) => AuthSeen::None,
    };

    let has_token = api_token.is_some();
    if !needs_auth(c.method, c.rel_path) {
        return AuthOutcome {
            seen,
            result: Ok(None),
            api_token: has_token,
        };
    }

    let result = if let Some(tok) = api_token {
        match verify_token(&tok, cluster) {
            Some(ident) => {
                if let AuthSeen::Token { secret_ok, .. } = &mut seen {
                    *secret_ok = true;
                }
                Ok(Some(ident))
            }
            None => Err(ApiError::unauthorized(AUTH_FAILED)),
        }
    } else if let Some(t) = ticket {
        match verify_ticket(&t, key).and_then(|user| user_identity(&user, cluster)) {
            None => Err(ApiError::unauthorized(AUTH_FAILED)),
            Some(ident) => {
                if c.method != "GET"
                    && !c
                        .csrf
                        .is_some_and(|tok| verify_csrf(tok, &ident.userid, key))
                {
                    Err(ApiError::unauthorized(
                        "Permission denied - invalid csrf token",
                    ))
                } else {
                    Ok(Some(ident))
                }
            }
        }
    } else {
        Err(ApiError::unauthorized("No ticket"))
    };
    AuthOutcome {
        seen,
        result,
        api_token: has_token,
    }
}

fn verify_token(value: &str, cluster: &Cluster) -> Option<Identity> {
    let (id, secret) = value.rsplit_once('=')?;
    let tok = cluster.tokens.iter().find(|t| t.full_id == id)?;
    if tok.secret != secret {
        return None;
    }
    let (user, name) = id.split_once('!')?;
    Some(Identity {
        userid: user.to_string(),
        tokenid: Some(name.to_string()),
        acl: tok.acl.clone(),
    })
}

pub(crate) fn user_identity(userid: &str, cluster: &Cluster) -> Option<Identity> {
    let user = cluster.users.iter().find(|u| u.userid == userid)?;
    Some(Identity {
        userid: user.userid.clone(),
        tokenid: None,
        acl: user.acl.clone(),
    })
}

/// Splits `PVE:<user>:<8HEX>::<sig>` into its parts.
fn parse_ticket(t: &str) -> Option<(&str, &str, &str)> {
    let rest = t.strip_prefix("PVE:")?;
    let (data, sig) = rest.rsplit_once("::")?;
    let (user, ts) = data.rsplit_once(':')?;
    (!user.is_empty() && ts.len() == 8 && ts.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some((user, ts, sig))
}

fn fresh(ts_hex: &str, lifetime: Duration) -> bool {
    let Ok(ts) = u64::from_str_radix(ts_hex, 16) else {
        return false;
    };
    let age = now_f64() - ts as f64;
    age >= -300.0 && age <= lifetime.as_secs_f64()
}

/// Returns the ticket's user when its signature and age are good.
pub(crate) fn verify_ticket(t: &str, key: TicketKey<'_>) -> Option<String> {
    let (user, ts, sig) = parse_ticket(t)?;
    let expect = base64(
        &hmac_sha256(key.secret, format!("PVE:{user}:{ts}").as_bytes()),
        true,
    );
    (sig == expect && fresh(ts, key.lifetime)).then(|| user.to_string())
}

pub(crate) fn issue_ticket(user: &str, secret: &[u8]) -> String {
    let data = format!("PVE:{user}:{:08X}", now_secs());
    let sig = base64(&hmac_sha256(secret, data.as_bytes()), true);
    format!("{data}::{sig}")
}

pub(crate) fn issue_csrf(user: &str, secret: &[u8]) -> String {
    let ts = format!("{:08X}", now_secs());
    let sig = base64(
        &hmac_sha256(secret, format!("{ts}:{user}").as_bytes()),
        false,
    );
    format!("{ts}:{sig}")
}

fn verify_csrf(tok: &str, user: &str, key: TicketKey<'_>) -> bool {
    let Some((ts, sig)) = tok.split_once(':') else {
        return false;
    };
    if ts.len() != 8 || !ts.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    let expect = base64(
        &hmac_sha256(key.secret, format!("{ts}:{user}").as_bytes()),
        false,
    );
    sig == expect && fresh(ts, key.lifetime)
}

/// `cap` of a ticket response: what the user may do per area, like the GUI
/// receives it.
pub(crate) fn capabilities(acl: &Acl) -> serde_json::Value {
    let all = |privs: &[&str]| -> serde_json::Value {
        privs
            .iter()
            .map(|p| (p.to_string(), serde_json::Value::from(1)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    match acl {
        Acl::Root => serde_json::json!({
            "vms": all(&["VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone", "VM.Config.CDROM",
                "VM.Config.CPU", "VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType",
                "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.Console",
                "VM.GuestAgent.Audit", "VM.GuestAgent.FileRead", "VM.GuestAgent.FileSystemMgmt",
                "VM.GuestAgent.FileWrite", "VM.GuestAgent.Unrestricted", "VM.Migrate",
                "VM.PowerMgmt", "VM.Replicate", "VM.Snapshot", "VM.Snapshot.Rollback",
                "Permissions.Modify"]),
            "nodes": all(&["Sys.AccessNetwork", "Sys.Audit", "Sys.Console", "Sys.Incoming",
                "Sys.Modify", "Sys.PowerMgmt", "Sys.Syslog", "Permissions.Modify"]),
            "storage": all(&["Datastore.Allocate", "Datastore.AllocateSpace",
                "Datastore.AllocateTemplate", "Datastore.Audit", "Permissions.Modify"]),
            "access": all(&["Group.Allocate", "Permissions.Modify", "Realm.Allocate",
                "Realm.AllocateUser", "User.Modify"]),
            "dc": all(&["SDN.Allocate", "SDN.Audit", "SDN.Use", "Sys.Audit", "Sys.Modify"]),
            "sdn": all(&["Permissions.Modify", "SDN.Allocate", "SDN.Audit", "SDN.Use"]),
            "mapping": all(&["Mapping.Audit", "Mapping.Modify", "Mapping.Use", "Permissions.Modify"]),
        }),
        Acl::Entries(entries) => {
            let vms: Vec<&str> = entries
                .iter()
                .filter(|e| e.path.starts_with("/vms"))
                .flat_map(|e| e.privs.iter().copied())
                .collect();
            serde_json::json!({
                "vms": all(&vms), "nodes": {}, "storage": {}, "access": {},
                "dc": {}, "sdn": {}, "mapping": {},
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extract_like_pve_regex() {
        assert_eq!(
            extract_auth_value("PVEAPIToken=root@pam!mcp=abc", TOKEN_NAME).as_deref(),
            Some("root@pam!mcp=abc")
        );
        assert_eq!(
            extract_auth_value("PVEAPIToken root@pam!mcp=abc", TOKEN_NAME).as_deref(),
            Some("root@pam!mcp=abc")
        );
        assert_eq!(
            extract_auth_value("a=b; PVEAuthCookie=PVE%3Aroot%40pam%3A1; c=d", COOKIE_NAME)
                .as_deref(),
            Some("PVE:root@pam:1")
        );
        assert_eq!(extract_auth_value("XPVEAPIToken=a=b", TOKEN_NAME), None);
        assert_eq!(extract_auth_value("PVEAPIToken=", TOKEN_NAME), None);
        assert_eq!(extract_auth_value("Bearer x", TOKEN_NAME), None);
    }

    #[test]
    fn ticket_round_trip_and_expiry() {
        let secret = b"0123456789abcdef";
        let key = TicketKey {
            secret,
            lifetime: Duration::from_secs(7200),
        };
        let t = issue_ticket("root@pam", secret);
        assert!(t.starts_with("PVE:root@pam:"), "{t}");
        assert_eq!(verify_ticket(&t, key).as_deref(), Some("root@pam"));
        assert_eq!(verify_ticket(&t.replace("root", "toor"), key), None);
        let old = format!("PVE:root@pam:{:08X}", now_secs() - 7300);
        let sig = base64(&hmac_sha256(secret, old.as_bytes()), true);
        assert_eq!(verify_ticket(&format!("{old}::{sig}"), key), None);
        let csrf = issue_csrf("root@pam", secret);
        assert!(verify_csrf(&csrf, "root@pam", key));
        assert!(!verify_csrf(&csrf, "other@pam", key));
    }
}
