//! `hostile_slow_upstream`: one legitimate-looking request (a GET unless
//! told otherwise) with no deadline of its own, so the host's timeout and
//! cancellation are what end it.

use serde_json::{Value, json};
use wasip2::clocks::monotonic_clock;
use wasip2::http::types::Method;

use crate::base::Base;
use crate::net::{self, Deadline, Request};
use crate::report;

/// Sends `method` to base + `path` and reports status, body length and
/// elapsed time.
pub fn run(base: &Base, path: &str, method: Method) -> Value {
    let url = Base::url(&base.scheme, &base.authority, path);
    let start = monotonic_clock::now();
    let x = net::send(&Request {
        method,
        scheme: &base.scheme,
        authority: &base.authority,
        path,
        headers: &[],
        body: None,
        deadline: Deadline::NONE,
    });
    let elapsed_ms = (monotonic_clock::now() - start) / 1_000_000;
    let mut extra = x.extra();
    extra.insert("elapsed_ms".into(), json!(elapsed_ms));
    report::attempt("slow upstream", &url, &x.outcome, extra)
}
