//! The plan a person approves: the host's record of the writes a dry run
//! of the call (`dry_run: true`, held to `GET` by the egress gate) plans,
//! each checked by the gate as it will check the real request, then the
//! component's own words about them.
//!
//! The requests are the host's: method, path and every parameter, whole.
//! The approved call is held to exactly those ([`ApprovedPlan`]), so what
//! a person reads is what can be sent. The component's words (its expected
//! effect, what its reads found) are untrusted: flattened to one line and
//! labelled as the component's. Nothing is cut here: a person sees all of
//! what they approve, and the approval record bounds it, saying what it
//! folded ([`super::redact::record_plan`]).
//!
//! [`ApprovedPlan`]: crate::egress::plan::ApprovedPlan

use serde_json::Value;

use crate::egress::plan::PlannedWrite;
use crate::egress::{Access, Binding, Gate};
use crate::tools::CallOutcome;

/// The plan a person approves and the approved call is held to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPlan {
    /// What the person reads: the writes, whole, then the component's words.
    pub text: String,
    /// The writes, in order.
    pub writes: Vec<PlannedWrite>,
}

/// The plan of a dry run's `outcome`: its planned writes, each admitted by
/// the `gate` for the call's `binding` as the real request would be. The
/// error names a planned write the gate refuses, and why.
pub fn host_plan(
    outcome: &CallOutcome,
    gate: &Gate,
    binding: &Binding,
) -> Result<HostPlan, String> {
    let CallOutcome::Output {
        structured,
        is_error: false,
        ..
    } = outcome
    else {
        // A failed dry run plans nothing: approved, the call may send no
        // write at all.
        return Ok(HostPlan {
            text: describe(outcome),
            writes: Vec::new(),
        });
    };
    let writes: Vec<PlannedWrite> = planned(structured)
        .iter()
        .filter_map(PlannedWrite::from_answer)
        .collect();
    for write in &writes {
        admitted(write, gate, binding).map_err(|why| format!("{write}: {why}"))?;
    }
    let requests: Vec<String> = writes.iter().map(ToString::to_string).collect();
    let words = one_line(&component_words(structured));
    let text = match (requests.is_empty(), words.is_empty()) {
        (true, true) => "nothing to send".to_string(),
        (true, false) => format!("nothing to send; the component says: {words}"),
        (false, true) => requests.join("; "),
        (false, false) => format!("{}; the component says: {words}", requests.join("; ")),
    };
    Ok(HostPlan { text, writes })
}

/// Whether the gate admits `write` for the call bound to `binding`: its
/// method and path, then its parameters, as it judges the real request.
fn admitted(write: &PlannedWrite, gate: &Gate, binding: &Binding) -> Result<(), String> {
    let cluster = binding
        .cluster
        .ok_or("the call reaches no configured cluster")?;
    let base = gate.endpoint(cluster).endpoint.base_url();
    let uri = write.uri(&base).ok_or("its path is not a URI path")?;
    gate.check(
        &write.method,
        &uri,
        Access::Write,
        binding.cluster,
        &binding.writes,
    )
    .map_err(|d| d.to_string())?;
    // A plan's writes are known before the call runs: none can carry an
    // answer it has not had yet.
    gate.check_params(
        &write.method,
        &uri,
        &write.params,
        &binding.writes,
        &crate::route::params::nothing_answered,
    )
    .map(|_| ())
    .map_err(|d| d.to_string())
}

/// The requests a dry run's answer plans: a write tool's `requests`, or
/// the one request of a tool whose answer is that request.
fn planned(structured: &Value) -> Vec<Value> {
    match structured.get("requests").and_then(Value::as_array) {
        Some(all) => all.clone(),
        None if structured.get("method").is_some_and(Value::is_string) => {
            vec![structured.clone()]
        }
        None => Vec::new(),
    }
}

/// The component's words about its plan: the effect it expects and what
/// its reads found.
fn component_words(structured: &Value) -> String {
    let field = |k: &str| structured.get(k).and_then(Value::as_str).unwrap_or("");
    match (field("effect"), field("found")) {
        ("", "") => String::new(),
        (effect, "") => effect.to_string(),
        ("", found) => format!("found: {found}"),
        (effect, found) => format!("{effect} (found: {found})"),
    }
}

/// Why a dry run made no plan, in one line.
fn describe(outcome: &CallOutcome) -> String {
    let text = match outcome {
        CallOutcome::Output { summary, .. } => format!("the dry run failed: {summary}"),
        CallOutcome::Failed { message, .. } => format!("the dry run failed: {message}"),
        CallOutcome::UnknownTool(name) => format!("the dry run failed: no tool {name}"),
    };
    one_line(&text)
}

/// Control characters become spaces. Not cut: a person sees all they
/// approve, and the approval record bounds it, saying what it folded
/// ([`super::redact::record_plan`]).
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Auth, Cluster};
    use crate::egress::GateEndpoint;
    use crate::endpoint::Endpoint;
    use crate::route::Route;
    use crate::route::params::{Otherwise, ParamRule, Params};
    use crate::secret::Secret;
    use crate::tls::client::{Fingerprint, TlsMode};
    use crate::tools::FailureKind;
    use crate::upstream::Upstream;
    use serde_json::json;

    fn gate() -> Gate {
        let cluster = Cluster {
            name: "lab".into(),
            endpoint: Endpoint::parse("https://10.0.0.1:8006", false).unwrap(),
            auth: Auth::Token {
                id: "root@pam!t".into(),
                secret: Secret::new("secret-value"),
            },
            tls: TlsMode::Fingerprint(Fingerprint::of(b"x")),
            timeout: std::time::Duration::from_secs(5),
            credential_sets: Vec::new(),
        };
        Gate::new(vec![GateEndpoint {
            cluster: "lab".into(),
            endpoint: cluster.endpoint.clone(),
            upstream: Upstream::new(&cluster).unwrap(),
        }])
    }

    fn create_binding(gate: &Gate) -> Binding {
        let params = Params::parse(
            ["vmid", "name"]
                .iter()
                .map(|n| ParamRule {
                    name: n.to_string(),
                    argument: Some(n.to_string()),
                    otherwise: Otherwise::Absent,
                })
                .collect(),
            None,
        )
        .unwrap();
        let route = Route::parse("POST", "/nodes/{node}/qemu")
            .unwrap()
            .with_params(params);
        gate.bind(
            &[route],
            json!({"vmid": 560, "name": "scratch"}).as_object().unwrap(),
        )
    }

    fn answer(structured: Value) -> CallOutcome {
        CallOutcome::Output {
            structured,
            summary: String::new(),
            is_error: false,
        }
    }

    #[test]
    fn a_plan_is_the_hosts_record_of_each_write_then_the_components_words() {
        let gate = gate();
        let binding = create_binding(&gate);
        let plan = host_plan(
            &answer(json!({
                "requests": [{"method": "POST", "path": "/api2/json/nodes/bravo/qemu",
                              "params": {"vmid": 560, "name": "scratch"}}],
                "effect": "VM 560 is created",
                "found": "vmid 560 is free\nnode bravo is online",
            })),
            &gate,
            &binding,
        )
        .unwrap();
        assert_eq!(
            plan.text,
            "POST /api2/json/nodes/bravo/qemu {\"name\":\"scratch\",\"vmid\":\"560\"}; the \
             component says: VM 560 is created (found: vmid 560 is free node bravo is online)"
        );
        assert_eq!(plan.writes.len(), 1);
    }

    #[test]
    fn a_plan_with_a_write_the_gate_refuses_is_refused() {
        let gate = gate();
        let binding = create_binding(&gate);
        let e = host_plan(
            &answer(json!({
                "requests": [{"method": "POST", "path": "/api2/json/nodes/bravo/qemu",
                              "params": {"vmid": 102, "force": 1}}],
            })),
            &gate,
            &binding,
        )
        .unwrap_err();
        assert!(e.contains("vmid"), "{e}");
        let e = host_plan(
            &answer(json!({"method": "DELETE", "path": "/nodes/bravo/qemu/102"})),
            &gate,
            &binding,
        )
        .unwrap_err();
        assert!(e.contains("DELETE /api2/json/nodes/bravo/qemu/102"), "{e}");
    }

    #[test]
    fn a_failed_dry_run_plans_nothing_and_its_text_is_one_whole_line() {
        let gate = gate();
        let outcome = CallOutcome::Failed {
            kind: FailureKind::Precondition,
            message: "x".repeat(5000),
        };
        let plan = host_plan(&outcome, &gate, &create_binding(&gate)).unwrap();
        assert!(plan.text.starts_with("the dry run failed: xxx"));
        assert_eq!(
            plan.text.chars().count(),
            "the dry run failed: ".len() + 5000
        );
        assert!(plan.writes.is_empty());
    }
}
