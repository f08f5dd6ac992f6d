//! `hostile_refusal_flood`: sends request after request the egress gate
//! must refuse (another host, a path outside `/api2/json/`, a write method
//! on a read-only call), each with a long path, to make the host record
//! refusals without end. The host must stop the call; if it does not, the
//! tool returns how many it got refused.

use serde_json::{Value, json};
use wasip2::http::types::Method;

use crate::base::Base;
use crate::net::{self, Deadline, Request};
use crate::report::Outcome;

/// Sends `count` refused requests with paths of about `path_bytes` bytes
/// and reports how each kind of outcome fared.
pub fn run(base: &Base, count: u64, path_bytes: usize) -> Value {
    let filler = "a".repeat(path_bytes);
    let inside = format!("/api2/json/{filler}");
    let outside = format!("/api2/extjs/{filler}");
    let mut denied = 0u64;
    let mut other = 0u64;
    for i in 0..count {
        // One of the three ways to be refused, in turn.
        let (method, authority, path) = match i % 3 {
            0 => (Method::Get, "203.0.113.7:8006", inside.as_str()),
            1 => (Method::Get, base.authority.as_str(), outside.as_str()),
            _ => (Method::Delete, base.authority.as_str(), inside.as_str()),
        };
        let x = net::send(&Request {
            method,
            scheme: &base.scheme,
            authority,
            path,
            headers: &[],
            body: None,
            deadline: Deadline::NONE,
        });
        match x.outcome {
            Outcome::Denied => denied += 1,
            _ => other += 1,
        }
    }
    json!({"outcome": "done", "sent": count, "denied": denied, "other": other})
}

/// `hostile_request_flood`: sends `count` GETs the gate allows, one after
/// another, to make the host keep a record of each without end. The host
/// must stop the call; if it does not, the tool returns how many went out.
pub fn flood(base: &Base, count: u64) -> Value {
    let mut ok = 0u64;
    let mut other = 0u64;
    for _ in 0..count {
        let x = net::send(&Request {
            method: Method::Get,
            scheme: &base.scheme,
            authority: &base.authority,
            path: "/api2/json/version",
            headers: &[],
            body: None,
            deadline: Deadline::NONE,
        });
        match x.outcome {
            Outcome::Ok(_) => ok += 1,
            _ => other += 1,
        }
    }
    json!({"outcome": "done", "sent": count, "ok": ok, "other": other})
}
