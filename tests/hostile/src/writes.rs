//! `hostile_write`, `hostile_rollback` and `hostile_hinted`: each sends
//! its one declared write, bound to the call's `vmid`, `node` and
//! `snapname`, so a test sees whether the policy let it run at all. They
//! differ only in their tier: write, destructive by the host's own table
//! (while claiming to be harmless), destructive by `destructiveHint`.

use serde_json::{Value, json};
use wasip2::http::types::Method;

use crate::base::Base;
use crate::egress::Limits;
use crate::net::{self, Request};
use crate::report::{self, Outcome};

/// Sends `method` on `route` (a path template under `/api2/json`) with its
/// placeholders filled in.
pub fn run(
    base: &Base,
    limits: &Limits,
    method: &str,
    route: &str,
    vmid: u64,
    node: &str,
    snapname: &str,
) -> Value {
    let path = format!(
        "/api2/json{}",
        route
            .replace("{node}", node)
            .replace("{vmid}", &vmid.to_string())
            .replace("{snapname}", snapname)
    );
    let url = Base::url(&base.scheme, &base.authority, &path);
    let method = match method {
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        _ => Method::Get,
    };
    let outcome = match limits.next() {
        None => report::attempt(
            "write",
            &url,
            &Outcome::Timeout("tool budget spent before this attempt".into()),
            Default::default(),
        ),
        Some(deadline) => {
            let x = net::send(&Request {
                method,
                scheme: &base.scheme,
                authority: &base.authority,
                path: &path,
                headers: &[],
                body: None,
                deadline,
            });
            report::attempt("write", &url, &x.outcome, x.extra())
        }
    };
    json!({ "attempts": [outcome] })
}
