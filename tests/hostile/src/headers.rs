//! `hostile_headers`: try to bring our own credentials, then see what the
//! legitimate response shows us.

use serde_json::{Map, Value, json};
use wasip2::http::types::{Fields, HeaderError, Method};

use crate::base::Base;
use crate::egress::Limits;
use crate::net::{self, Request};
use crate::report::{self, Outcome};

/// Headers a guest must not be able to set: the host owns authentication,
/// and `host` would let a guest pick a different virtual host.
const ATTEMPTS: &[(&str, &[u8])] = &[
    (
        "authorization",
        b"PVEAPIToken=root@pam!hostile=00000000-0000-0000-0000-000000000000",
    ),
    ("cookie", b"PVEAuthCookie=x"),
    ("csrfpreventiontoken", b"x"),
    ("Authorization", b"PVEAPIToken=mixed-case"),
    ("host", b"example.com"),
];

/// Strings whose presence in the response would mean a credential leaked.
const MARKERS: &[&str] = &["PVEAPIToken", "PVEAuthCookie", "CSRFPreventionToken"];

/// Sets `name` through one of the three ways a guest can put a header into
/// `fields`, returning the fields when the host accepted it.
fn try_set(via: &str, name: &str, value: &[u8]) -> Result<Fields, HeaderError> {
    match via {
        "append" => {
            let f = Fields::new();
            f.append(name, value).map(|()| f)
        }
        "set" => {
            let f = Fields::new();
            f.set(name, &[value.to_vec()]).map(|()| f)
        }
        _ => Fields::from_list(&[(name.to_owned(), value.to_vec())]),
    }
}

/// Runs the header attempts and the control GET.
pub fn run(base: &Base, limits: &Limits) -> Value {
    let path = "/api2/json/version";
    let url = Base::url(&base.scheme, &base.authority, path);
    let mut attempts = Vec::new();
    for (name, value) in ATTEMPTS {
        for via in ["append", "set", "from-list"] {
            let outcome = match try_set(via, name, value) {
                Ok(_) => Outcome::Accepted,
                Err(e) => net::header_outcome(&e),
            };
            let mut extra = Map::new();
            extra.insert("header".into(), json!(name));
            extra.insert("via".into(), json!(via));
            // An accepted header is already a finding; sending it shows
            // whether the gate strips it or it reaches Proxmox.
            if outcome == Outcome::Accepted {
                let sent = send(base, limits, path, &[(name, value)]);
                extra.insert("sent".into(), sent);
            }
            attempts.push(report::attempt(
                &format!("{name} via {via}"),
                &url,
                &outcome,
                extra,
            ));
        }
    }

    let control = match limits.next() {
        None => report::attempt(
            "control",
            &url,
            &Outcome::Timeout("tool budget spent before this attempt".into()),
            Map::new(),
        ),
        Some(deadline) => {
            let x = net::send(&Request {
                method: Method::Get,
                scheme: &base.scheme,
                authority: &base.authority,
                path,
                headers: &[],
                body: None,
                deadline,
            });
            let mut extra = x.extra();
            extra.insert("response_headers".into(), json!(x.headers));
            extra.insert("body_head".into(), json!(x.body_head));
            let seen: Vec<&str> = MARKERS
                .iter()
                .copied()
                .filter(|m| {
                    let m = m.to_ascii_lowercase();
                    x.body_head.to_ascii_lowercase().contains(&m)
                        || x.headers.iter().any(|(k, v)| {
                            k.to_ascii_lowercase().contains(&m)
                                || v.to_ascii_lowercase().contains(&m)
                        })
                })
                .collect();
            extra.insert("credential_markers_seen".into(), json!(seen));
            report::attempt("control", &url, &x.outcome, extra)
        }
    };
    json!({ "attempts": attempts, "control": control })
}

fn send(base: &Base, limits: &Limits, path: &str, headers: &[(&str, &[u8])]) -> Value {
    let url = Base::url(&base.scheme, &base.authority, path);
    let Some(deadline) = limits.next() else {
        let out = Outcome::Timeout("tool budget spent before this attempt".into());
        return report::attempt("send with header", &url, &out, Map::new());
    };
    let x = net::send(&Request {
        method: Method::Get,
        scheme: &base.scheme,
        authority: &base.authority,
        path,
        headers,
        body: None,
        deadline,
    });
    report::attempt("send with header", &url, &x.outcome, x.extra())
}
