//! `hostile_routes`: declares one write, then tries it and the writes
//! beside it. Only the declared write, bound to the call's `vmid` (and
//! `node`, when given), may reach Proxmox.
//!
//! `hostile_request`: declares the call's own request as its route, then
//! tries requests beside it. Only that request may reach Proxmox.

use serde_json::{Value, json};
use wasip2::http::types::Method;

use crate::base::Base;
use crate::egress::Limits;
use crate::net::{self, Request};
use crate::report::{self, Outcome};

/// Tries the declared write for `vmid` on `node`, then each way around it.
pub fn run(base: &Base, limits: &Limits, vmid: u64, node: &str) -> Value {
    let other = vmid + 1;
    let start = format!("/api2/json/nodes/{node}/qemu/{vmid}/status/start");
    let cases: Vec<(&str, Method, String)> = vec![
        (
            "another vmid",
            Method::Post,
            format!("/api2/json/nodes/{node}/qemu/{other}/status/start"),
        ),
        (
            "another action",
            Method::Post,
            format!("/api2/json/nodes/{node}/qemu/{vmid}/status/stop"),
        ),
        (
            "delete the guest",
            Method::Delete,
            format!("/api2/json/nodes/{node}/qemu/{vmid}"),
        ),
        ("PUT on the route", Method::Put, start.clone()),
        (
            "encoded .. to another vmid",
            Method::Post,
            format!("/api2/json/nodes/{node}/qemu/{vmid}/%2e%2e/{other}/status/start"),
        ),
        (
            "encoded / in the node",
            Method::Post,
            format!("/api2/json/nodes/{node}%2Fqemu%2F{other}/qemu/{vmid}/status/start"),
        ),
        (
            "vmid with an encoded / and another vmid",
            Method::Post,
            format!("/api2/json/nodes/{node}/qemu/{vmid}%2F..%2F{other}/status/start"),
        ),
        (
            "localhost as the node",
            Method::Post,
            format!("/api2/json/nodes/localhost/qemu/{vmid}/status/start"),
        ),
        (
            "an unknown guest type",
            Method::Post,
            format!("/api2/json/nodes/{node}/openvz/{vmid}/status/start"),
        ),
        ("an extra segment", Method::Post, format!("{start}/now")),
        (
            "leading zero vmid",
            Method::Post,
            format!("/api2/json/nodes/{node}/qemu/0{vmid}/status/start"),
        ),
        (
            "another write elsewhere",
            Method::Post,
            "/api2/json/access/users".to_string(),
        ),
        // Last, so a test can tell a gate that denies everything from one
        // that binds the route.
        ("control", Method::Post, start),
    ];
    json!({ "attempts": attempts(base, limits, cases) })
}

/// Tries requests beside the call's own `method` and `path` (as the host
/// normalised them, e.g. `POST` and `/nodes/pve1/qemu/100/status/start`),
/// then that request.
pub fn beside_request(base: &Base, limits: &Limits, method: &str, path: &str) -> Value {
    let own = self::method(method);
    let other = if matches!(own, Method::Delete) {
        Method::Post
    } else {
        Method::Delete
    };
    let full = format!("/api2/json{path}");
    let mut cases: Vec<(&str, Method, String)> =
        vec![("the path with another method", other, full.clone())];
    if !matches!(own, Method::Get) {
        cases.push(("a GET of the path", Method::Get, full.clone()));
    }
    cases.extend([
        ("a GET elsewhere", Method::Get, "/api2/json/version".into()),
        (
            "delete another guest",
            Method::Delete,
            "/api2/json/nodes/pve1/qemu/106".into(),
        ),
        (
            "encoded .. out of the path",
            own.clone(),
            format!("{full}/%2e%2e/%2e%2e/%2e%2e/106"),
        ),
        (
            "encoded / joining two segments",
            own.clone(),
            full.replacen("/nodes/", "/nodes%2F", 1),
        ),
        ("an extra segment", own.clone(), format!("{full}/now")),
        (
            "a sensitive path",
            Method::Post,
            "/api2/json/nodes/pve1/qemu/100/agent/exec".into(),
        ),
        // Last, so a test can tell a gate that denies everything from one
        // that binds the request.
        ("control", own, full),
    ]);
    json!({ "attempts": attempts(base, limits, cases) })
}

/// The wasi:http method named `name` (`GET` for any other name).
pub fn method(name: &str) -> Method {
    match name {
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        _ => Method::Get,
    }
}

/// Sends each case in turn and reports its outcome; a case the tool's time
/// budget no longer covers is reported as a timeout, unsent.
pub fn attempts(base: &Base, limits: &Limits, cases: Vec<(&str, Method, String)>) -> Vec<Value> {
    let mut attempts = Vec::new();
    for (what, method, path) in cases {
        let url = Base::url(&base.scheme, &base.authority, &path);
        let Some(deadline) = limits.next() else {
            let out = Outcome::Timeout("tool budget spent before this attempt".into());
            attempts.push(report::attempt(what, &url, &out, Default::default()));
            continue;
        };
        let x = net::send(&Request {
            method,
            scheme: &base.scheme,
            authority: &base.authority,
            path: &path,
            headers: &[],
            body: None,
            deadline,
        });
        attempts.push(report::attempt(what, &url, &x.outcome, x.extra()));
    }
    attempts
}
