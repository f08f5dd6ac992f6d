//! `hostile_routes`: declares one write, then tries it and the writes
//! beside it. Only the declared write, bound to the call's `vmid` (and
//! `node`, when given), may reach Proxmox.

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
    json!({ "attempts": attempts })
}
