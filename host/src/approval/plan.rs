//! The plan a person approves: what a dry run of the call (`dry_run: true`,
//! held to `GET` by the egress gate) says it would send, in one line.
//!
//! The text comes from the component, so it is treated as untrusted: it is
//! flattened to one line and cut to [`MAX_PLAN`] characters before anyone
//! sees it. The call that runs after approval is still held to its tool's
//! routes by the gate, whatever the plan said.

use serde_json::Value;

use crate::tools::CallOutcome;

/// The longest plan shown, in characters.
pub const MAX_PLAN: usize = 1000;

/// The plan as a person reads it: each request (method, path, parameters),
/// the expected effect and what the reads before it found; or why the dry
/// run could not make one.
pub fn describe(outcome: &CallOutcome) -> String {
    let text = match outcome {
        CallOutcome::Output {
            structured,
            is_error: false,
            ..
        } => from_answer(structured),
        CallOutcome::Output { summary, .. } => format!("the dry run failed: {summary}"),
        CallOutcome::Failed { message, .. } => format!("the dry run failed: {message}"),
        CallOutcome::UnknownTool(name) => format!("the dry run failed: no tool {name}"),
    };
    one_line(&text)
}

fn from_answer(structured: &Value) -> String {
    let field = |k: &str| structured.get(k).and_then(Value::as_str).unwrap_or("");
    let requests: Vec<String> = structured
        .get("requests")
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .map(|r| {
                    let method = r.get("method").and_then(Value::as_str).unwrap_or("?");
                    let path = r.get("path").and_then(Value::as_str).unwrap_or("?");
                    match r
                        .get("params")
                        .filter(|p| p.as_object().is_some_and(|o| !o.is_empty()))
                    {
                        Some(params) => format!("{method} {path} {params}"),
                        None => format!("{method} {path}"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if requests.is_empty() {
        return format!(
            "nothing to send: {} (found: {})",
            field("effect"),
            field("found")
        );
    }
    format!(
        "{}; expected: {} (found: {})",
        requests.join("; "),
        field("effect"),
        field("found")
    )
}

/// Control characters become spaces, and the text is cut to [`MAX_PLAN`].
fn one_line(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_PLAN)
        .collect();
    if text.chars().count() > MAX_PLAN {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::FailureKind;
    use serde_json::json;

    #[test]
    fn a_plan_names_each_request_its_effect_and_what_was_found() {
        let outcome = CallOutcome::Output {
            structured: json!({
                "requests": [{"method": "DELETE", "path": "/api2/json/nodes/pve1/qemu/104",
                              "params": {"purge": 1}}],
                "effect": "VM 104 is destroyed",
                "found": "VM 104 on pve1 is stopped\nnot locked",
            }),
            summary: String::new(),
            is_error: false,
        };
        assert_eq!(
            describe(&outcome),
            "DELETE /api2/json/nodes/pve1/qemu/104 {\"purge\":1}; expected: VM 104 is destroyed \
             (found: VM 104 on pve1 is stopped not locked)"
        );
    }

    #[test]
    fn a_failed_dry_run_says_so_and_long_text_is_cut() {
        let outcome = CallOutcome::Failed {
            kind: FailureKind::Precondition,
            message: "x".repeat(5000),
        };
        let plan = describe(&outcome);
        assert!(plan.starts_with("the dry run failed: xxx"));
        assert_eq!(plan.chars().count(), MAX_PLAN + 1);
    }
}
