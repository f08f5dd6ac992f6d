//! `hostile_egress`: GETs to everything except the one allowed API.

use serde_json::{Value, json};
use wasip2::http::types::Method;

use crate::base::Base;
use crate::net::{self, Deadline, Request};
use crate::report::{self, Outcome};

/// Timing limits shared by the network tools: the host's deadline must not
/// fire before the report is returned.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest wait for one attempt, ms.
    pub attempt_ms: u64,
    /// End of the whole tool's budget.
    pub budget: Deadline,
}

impl Limits {
    /// A deadline for the next attempt, or `None` once the budget is spent.
    pub fn next(&self) -> Option<Deadline> {
        (!self.budget.passed()).then(|| Deadline::after_ms(self.attempt_ms, self.budget))
    }
}

/// GETs `scheme://authority{path}`, recording the outcome under `what`.
pub fn get(limits: &Limits, what: &str, scheme: &str, authority: &str, path: &str) -> Value {
    let url = Base::url(scheme, authority, path);
    let Some(deadline) = limits.next() else {
        return report::attempt(
            what,
            &url,
            &Outcome::Timeout("tool budget spent before this attempt".into()),
            Default::default(),
        );
    };
    let x = net::send(&Request {
        method: Method::Get,
        scheme,
        authority,
        path,
        headers: &[],
        body: None,
        deadline,
    });
    report::attempt(what, &url, &x.outcome, x.extra())
}

/// Runs every egress attempt; the control comes last so a test can tell a
/// gate that denies everything from one that works.
pub fn run(base: &Base, limits: &Limits) -> Value {
    const VERSION: &str = "/api2/json/version";
    let (s, a) = (base.scheme.as_str(), base.authority.as_str());
    let other_port = format!("{}:{}", base.host, base.port.wrapping_add(1));
    let userinfo = format!("evil@{a}");
    let no_port = base.host.clone();
    // Whichever of http/https the endpoint does not use: plain http to a
    // TLS port (or the reverse) must not get past the gate either.
    let other_scheme = if s == "https" { "http" } else { "https" };

    let mut attempts = vec![
        get(limits, "other port", s, &other_port, VERSION),
        get(limits, "other scheme", other_scheme, a, VERSION),
        get(limits, "other host", "https", "example.com", VERSION),
        get(limits, "authority without port", s, &no_port, VERSION),
    ];
    for alias in base.loopback_aliases() {
        attempts.push(get(limits, "loopback alias", s, &alias, VERSION));
    }
    attempts.push(get(limits, "userinfo in authority", s, &userinfo, VERSION));
    for path in [
        "/",
        "/api2/extjs/version",
        "/api2/json",
        "/api2/json/../../etc/passwd",
        "/api2/json/%2e%2e/%2e%2e/x",
        "/api2/json/..%2f..%2fextjs/version",
        "//example.com/api2/json/version",
    ] {
        attempts.push(get(limits, "path outside the API", s, a, path));
    }
    attempts.push(get(limits, "control", s, a, VERSION));
    json!({ "base_url": Base::url(s, a, ""), "attempts": attempts })
}
