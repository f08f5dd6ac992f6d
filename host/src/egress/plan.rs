//! The writes an approved call may send: what the gate admitted of its dry
//! run's plan, held request by request. A person approves the host's
//! record of those requests (method, path, every parameter), not the
//! component's words about them, and the approved call sends exactly
//! those, in that order, or is refused.

use std::fmt;
use std::sync::Mutex;

use http::Method;
use serde_json::Value;

use super::record::bounded;
use super::sent::Sent;
use crate::endpoint::API_PREFIX;
use crate::route::params::wire_each;

/// One write of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedWrite {
    /// POST, PUT or DELETE.
    pub method: Method,
    /// The path after `/api2/json`, as sent.
    pub path: String,
    /// The parameters, in the order planned.
    pub params: Sent,
}

impl PlannedWrite {
    /// A request of a dry run's answer (`{"method", "path", "params"}`,
    /// the path with or without `/api2/json`); `None` when it is not one.
    pub fn from_answer(request: &Value) -> Option<PlannedWrite> {
        let method = match request.get("method")?.as_str()? {
            "POST" => Method::POST,
            "PUT" => Method::PUT,
            "DELETE" => Method::DELETE,
            _ => return None,
        };
        let path = request.get("path")?.as_str()?;
        let path = path
            .strip_prefix(&API_PREFIX[..API_PREFIX.len() - 1])
            .unwrap_or(path);
        let params = match request.get("params") {
            None | Some(Value::Null) => Vec::new(),
            // A list is a parameter sent once per element, in order (the
            // guest's plans never hold a list as one value).
            Some(Value::Object(map)) => map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let values = wire_each(v)?;
                    Some(values.into_iter().map(|v| (k.clone(), v)))
                })
                .collect::<Option<Vec<_>>>()?
                .into_iter()
                .flatten()
                .collect(),
            Some(_) => return None,
        };
        Some(PlannedWrite {
            method,
            path: path.to_string(),
            params,
        })
    }

    /// The URI the gate judges it by, on `base` (`https://host:port`).
    pub fn uri(&self, base: &str) -> Option<http::Uri> {
        format!("{base}/api2/json{}", self.path).parse().ok()
    }

    fn same_as(&self, method: &Method, api_path: &str, sent: &Sent) -> Result<(), String> {
        if *method != self.method || api_path != self.path {
            return Err(format!(
                "{method} {} was sent where the plan has {} {}",
                bounded(api_path),
                self.method,
                bounded(&self.path)
            ));
        }
        // Names in any order, but a name sent more than once (an argv)
        // keeps the order of its values: the sort is stable.
        let mut planned = self.params.clone();
        let mut sent = sent.clone();
        planned.sort_by(|a, b| a.0.cmp(&b.0));
        sent.sort_by(|a, b| a.0.cmp(&b.0));
        if planned != sent {
            let names = |p: &Sent| {
                p.iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(format!(
                "{method} {} carries other parameters than the plan ({}; planned: {})",
                bounded(&self.path),
                bounded(&names(&sent)),
                bounded(&names(&planned))
            ));
        }
        Ok(())
    }
}

impl fmt::Display for PlannedWrite {
    /// `POST /api2/json/nodes/pve1/qemu {"vmid":"560","name":"scratch"}`,
    /// the parameters as the audit records them: an argv as its list,
    /// secrets masked, a long value (a file's content) cut with its size
    /// and SHA-256, so a person reads what is sent without a wall of it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} /api2/json{}", self.method, self.path)?;
        if !self.params.is_empty() {
            write!(
                f,
                " {}",
                super::sent::recorded(&self.path, &self.params)["values"]
            )?;
        }
        Ok(())
    }
}

/// The plan an approved call is held to, and how far it has got.
#[derive(Debug)]
pub struct ApprovedPlan {
    writes: Vec<PlannedWrite>,
    sent: Mutex<usize>,
}

impl ApprovedPlan {
    /// A plan of these writes, none sent yet.
    pub fn new(writes: Vec<PlannedWrite>) -> ApprovedPlan {
        ApprovedPlan {
            writes,
            sent: Mutex::new(0),
        }
    }

    /// Admits a write when it is the plan's next one, and counts it.
    pub fn admit(&self, method: &Method, api_path: &str, sent: &Sent) -> Result<(), String> {
        let Ok(mut next) = self.sent.lock() else {
            return Err("the plan's record is unusable".into());
        };
        let Some(planned) = self.writes.get(*next) else {
            return Err(format!(
                "{method} {} goes beyond the {} write(s) approved",
                bounded(api_path),
                self.writes.len()
            ));
        };
        planned.same_as(method, api_path, sent)?;
        *next += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A list in a plan is a parameter sent once per element, and the
    /// approved call must send them in that order: `rm -rf /` is not
    /// `/ -rf rm`.
    #[test]
    fn a_planned_argv_is_held_in_its_order() {
        let planned = PlannedWrite::from_answer(&json!({
            "method": "POST", "path": "/nodes/pve1/qemu/100/agent/exec",
            "params": {"command": ["df", "-h"], "input-data": null}
        }))
        .unwrap();
        let argv = |a: &str, b: &str| -> Sent {
            vec![("command".into(), a.into()), ("command".into(), b.into())]
        };
        assert_eq!(planned.params, argv("df", "-h"));
        assert_eq!(
            planned.to_string(),
            r#"POST /api2/json/nodes/pve1/qemu/100/agent/exec {"command":["df","-h"]}"#
        );
        let plan = ApprovedPlan::new(vec![planned.clone()]);
        let e = plan
            .admit(
                &Method::POST,
                "/nodes/pve1/qemu/100/agent/exec",
                &argv("-h", "df"),
            )
            .unwrap_err();
        assert!(e.contains("other parameters than the plan"), "{e}");
        let plan = ApprovedPlan::new(vec![planned]);
        plan.admit(
            &Method::POST,
            "/nodes/pve1/qemu/100/agent/exec",
            &argv("df", "-h"),
        )
        .unwrap();
        // A list of lists is no plan a form can send.
        assert!(
            PlannedWrite::from_answer(&json!({
                "method": "POST", "path": "/x", "params": {"command": [["df"]]}
            }))
            .is_none()
        );
    }

    #[test]
    fn an_approved_call_sends_its_plan_and_nothing_else() {
        let planned = PlannedWrite::from_answer(&json!({
            "method": "POST", "path": "/api2/json/nodes/bravo/qemu",
            "params": {"vmid": 560, "name": "scratch"}
        }))
        .unwrap();
        assert_eq!(
            planned.to_string(),
            r#"POST /api2/json/nodes/bravo/qemu {"name":"scratch","vmid":"560"}"#
        );
        let plan = ApprovedPlan::new(vec![planned]);
        let params = |p: &[(&str, &str)]| -> Sent {
            p.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        // The F1 approval: a restore over VM 102 where a create was approved.
        let e = plan
            .admit(
                &Method::POST,
                "/nodes/bravo/qemu",
                &params(&[
                    ("vmid", "102"),
                    ("archive", "local:backup/x"),
                    ("force", "1"),
                ]),
            )
            .unwrap_err();
        assert!(e.contains("other parameters than the plan"), "{e}");
        let e = plan
            .admit(&Method::PUT, "/nodes/bravo/qemu", &Vec::new())
            .unwrap_err();
        assert!(e.contains("where the plan has POST"), "{e}");
        // In another order, the same parameters are the same request.
        plan.admit(
            &Method::POST,
            "/nodes/bravo/qemu",
            &params(&[("vmid", "560"), ("name", "scratch")]),
        )
        .unwrap();
        let e = plan
            .admit(
                &Method::POST,
                "/nodes/bravo/qemu",
                &params(&[("vmid", "560"), ("name", "scratch")]),
            )
            .unwrap_err();
        assert!(e.contains("beyond the 1 write(s) approved"), "{e}");
    }
}
