//! `hostile_methods`: anything but GET against a harmless API path.

use serde_json::{Value, json};
use wasip2::http::types::Method;

use crate::base::Base;
use crate::egress::Limits;
use crate::net::{self, Request};
use crate::report::{self, Outcome};

/// Body for the attempts that carry one: form-encoded like a real Proxmox
/// write, and larger than wasmtime's one-chunk body buffer so the host has
/// to drain (or close) it rather than just leave one chunk queued.
fn body() -> Vec<u8> {
    let mut b = b"hostile=1&padding=".to_vec();
    b.resize(256 * 1024, b'A');
    b
}

/// Runs every method attempt.
pub fn run(base: &Base, limits: &Limits) -> Value {
    let path = "/api2/json/version";
    let url = Base::url(&base.scheme, &base.authority, path);
    let payload = body();
    let cases: Vec<(&str, Method, Option<&[u8]>)> = vec![
        ("POST", Method::Post, None),
        ("PUT", Method::Put, None),
        ("DELETE", Method::Delete, None),
        ("PATCH", Method::Patch, None),
        ("HEAD", Method::Head, None),
        ("OPTIONS", Method::Options, None),
        ("TRACE", Method::Trace, None),
        ("CONNECT", Method::Connect, None),
        // A lower-case "get" is a different (extension) method to HTTP; a
        // gate comparing case-insensitively would let it through.
        ("other: get", Method::Other("get".into()), None),
        ("other: PROPFIND", Method::Other("PROPFIND".into()), None),
        ("POST with body", Method::Post, Some(&payload)),
        ("PUT with body", Method::Put, Some(&payload)),
        // A GET with a body is still a GET; the control for the body path.
        ("GET with body", Method::Get, Some(&payload)),
    ];
    let mut attempts = Vec::new();
    for (what, method, body) in cases {
        let Some(deadline) = limits.next() else {
            let out = Outcome::Timeout("tool budget spent before this attempt".into());
            attempts.push(report::attempt(what, &url, &out, Default::default()));
            continue;
        };
        let headers: &[(&str, &[u8])] = match body {
            Some(_) => &[("content-type", b"application/x-www-form-urlencoded")],
            None => &[],
        };
        let x = net::send(&Request {
            method,
            scheme: &base.scheme,
            authority: &base.authority,
            path,
            headers,
            body,
            deadline,
        });
        attempts.push(report::attempt(what, &url, &x.outcome, x.extra()));
    }
    json!({ "attempts": attempts })
}
