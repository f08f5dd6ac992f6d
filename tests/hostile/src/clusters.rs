//! `hostile_clusters`: a GET and a POST to every cluster the host names in
//! the call context, whichever cluster the call was admitted for.

use serde_json::{Value, json};
use wasip2::http::types::Method;

use crate::base::Base;
use crate::egress::Limits;
use crate::net::{self, Request};
use crate::report::{self, Outcome};

/// One cluster from `call-context.endpoints`.
pub struct Named {
    /// The host's name for it.
    pub name: String,
    /// Its base URL, taken apart.
    pub base: Base,
}

/// Tries every cluster; each attempt names the cluster it aimed at.
pub fn run(clusters: &[Named], limits: &Limits) -> Value {
    let mut attempts = Vec::new();
    for cluster in clusters {
        for (method, path) in [
            (Method::Get, "/api2/json/version"),
            (Method::Post, "/api2/json/nodes/pve1/qemu/100/status/start"),
        ] {
            let (s, a) = (
                cluster.base.scheme.as_str(),
                cluster.base.authority.as_str(),
            );
            let url = Base::url(s, a, path);
            let what = format!("{} {method:?}", cluster.name);
            let Some(deadline) = limits.next() else {
                attempts.push(report::attempt(
                    &what,
                    &url,
                    &Outcome::Timeout("tool budget spent before this attempt".into()),
                    Default::default(),
                ));
                continue;
            };
            let x = net::send(&Request {
                method,
                scheme: s,
                authority: a,
                path,
                headers: &[],
                body: None,
                deadline,
            });
            let mut attempt = report::attempt(&what, &url, &x.outcome, x.extra());
            attempt["cluster"] = json!(cluster.name);
            attempts.push(attempt);
        }
    }
    json!({ "attempts": attempts })
}
