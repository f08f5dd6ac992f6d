//! The plan a person approves: what a dry run of the call (`dry_run: true`,
//! held to `GET` by the egress gate) says it would send, in one line.
//!
//! The text comes from the component, so it is treated as untrusted: it is
//! flattened to one line before anyone sees it. It is not cut: a person
//! must see all of what they approve (issue 21 F4), and the approval record
//! bounds it, saying what it folded ([`super::redact::record_plan`]). The
//! call that runs after approval is still held to its tool's routes by the
//! gate, whatever the plan said.

use serde_json::Value;

use crate::tools::CallOutcome;

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

/// The requests of a plan: a write tool's `requests`, or the one request
/// of a tool whose answer is that request (`method`, `path`, `params` at
/// the top: `pve_api_request`).
fn from_answer(structured: &Value) -> String {
    let field = |k: &str| structured.get(k).and_then(Value::as_str).unwrap_or("");
    let requests: Vec<String> = match structured.get("requests").and_then(Value::as_array) {
        Some(all) => all.iter().map(request).collect(),
        None if structured.get("method").is_some_and(Value::is_string) => {
            vec![request(structured)]
        }
        None => Vec::new(),
    };
    let found = match field("found") {
        "" => String::new(),
        found => format!(" (found: {found})"),
    };
    if requests.is_empty() {
        return format!("nothing to send: {}{found}", field("effect"));
    }
    let expected = match field("effect") {
        "" => String::new(),
        effect => format!("; expected: {effect}"),
    };
    format!("{}{expected}{found}", requests.join("; "))
}

/// `METHOD path {params}`.
fn request(r: &Value) -> String {
    let method = r.get("method").and_then(Value::as_str).unwrap_or("?");
    let path = r.get("path").and_then(Value::as_str).unwrap_or("?");
    match r
        .get("params")
        .filter(|p| p.as_object().is_some_and(|o| !o.is_empty()))
    {
        Some(params) => format!("{method} {path} {params}"),
        None => format!("{method} {path}"),
    }
}

/// Control characters become spaces; nothing is cut.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
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
    fn an_answer_that_is_its_request_is_the_plan() {
        let outcome = CallOutcome::Output {
            structured: json!({
                "method": "POST", "path": "/api2/json/nodes/pve1/qemu/100/status/start",
                "params": {}, "dry_run": true, "sent": false,
            }),
            summary: String::new(),
            is_error: false,
        };
        assert_eq!(
            describe(&outcome),
            "POST /api2/json/nodes/pve1/qemu/100/status/start"
        );
    }

    #[test]
    fn a_failed_dry_run_says_so_and_long_text_is_kept_whole() {
        let outcome = CallOutcome::Failed {
            kind: FailureKind::Precondition,
            message: "x".repeat(5000),
        };
        let plan = describe(&outcome);
        assert!(plan.starts_with("the dry run failed: xxx"));
        assert_eq!(plan.chars().count(), "the dry run failed: ".len() + 5000);
    }
}
