//! The policy's per-call judgement of a call whose route is its own
//! request (`pve_api_request`): the tool's tier is destructive, so only
//! its own rule enables it, and each call is then judged by what it
//! sends.
//! - A request in a sensitive class ([`sensitive`]) is refused unless the
//!   tool's own rule names the class in `sensitive`.
//! - A `GET` is a read: it runs with read access whatever the rule says.
//! - Any other method writes, and needs the rule to let the tool write
//!   (`write = false` keeps it to reads).

use super::decision::Decision;
use super::effective::Effective;
use super::rules::{Policy, rule_name};
use crate::egress::Access;
use crate::route::{ApiRequest, Route, sensitive};
use crate::tools::{JsonObject, ToolInfo};

/// The access this call runs with, or why it may not run. `None` for a
/// tool whose routes are templates (the effective access stands).
pub fn judge(
    policy: &Policy,
    tool: &ToolInfo,
    effective: &Effective<'_>,
    arguments: &JsonObject,
) -> Option<Result<Access, Decision>> {
    if !tool.routes.iter().any(Route::is_call_request) {
        return None;
    }
    let own = rule_name(&tool.name);
    // The host normalises these arguments before the policy is asked
    // (`App::authorize`); anything else is refused, never guessed at.
    let Some(request) = ApiRequest::from_normalised(arguments) else {
        return Some(Err(Decision::Deny {
            rule: own,
            reason: format!(
                "{}: its method and path were not normalised by the host, so the call cannot be judged",
                tool.name
            ),
        }));
    };
    if let Some(class) = sensitive::class_of(&request) {
        let opened = policy
            .tools
            .get(&tool.name)
            .is_some_and(|r| r.sensitive.contains(&class.name));
        if !opened {
            return Some(Err(Decision::Deny {
                rule: format!("{own}.sensitive"),
                reason: format!(
                    "{request} is in the sensitive class \"{}\" ({}). Nothing was sent. No \
                     wildcard or default opens it; an operator who means to allow it adds \
                     sensitive = [\"{}\"] to [{own}]",
                    class.name, class.why, class.name
                ),
            }));
        }
    }
    if request.is_read() {
        return Some(Ok(Access::Read));
    }
    if effective.access == Access::Read {
        return Some(Err(Decision::Deny {
            rule: effective.rule.clone(),
            reason: format!(
                "{request} writes, and {} lets {} only read (write = false). Nothing was sent. \
                 Use GET, or an operator can drop write = false from [{own}]",
                effective.rule, tool.name
            ),
        }));
    }
    Some(Ok(Access::Write))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::effective::tests::{tools, writer};
    use serde_json::json;

    fn all() -> Vec<ToolInfo> {
        let mut all = tools();
        all.push(writer("send", ("{method}", "/{path}")));
        all
    }

    /// The access a call of `send` with `method` and `path` gets, or the
    /// refusal's rule and reason.
    fn judged(policy: &str, method: &str, path: &str) -> Result<Access, (String, String)> {
        let all = all();
        let policy = Policy::parse(policy, "p.toml", &all).unwrap_or_else(|e| panic!("{e}"));
        let tool = all.iter().find(|t| t.name == "send").unwrap();
        let mut args = json!({"method": method, "path": path})
            .as_object()
            .cloned()
            .unwrap();
        ApiRequest::normalise(&mut args).unwrap();
        let effective = policy.effective(tool);
        match judge(&policy, tool, &effective, &args) {
            Some(Ok(access)) => Ok(access),
            Some(Err(Decision::Deny { rule, reason })) => Err((rule, reason)),
            other => panic!("{other:?}"),
        }
    }

    const ALLOW: &str = "[policy.tools.send]\naction = \"allow\"\n";

    #[test]
    fn a_get_reads_and_anything_else_writes() {
        assert_eq!(judged(ALLOW, "GET", "/version"), Ok(Access::Read));
        // A path in no sensitive class (a guest itself is guest-destroy).
        let power = "/nodes/pve1/qemu/100/status/stop";
        for method in ["POST", "PUT", "DELETE"] {
            assert_eq!(judged(ALLOW, method, power), Ok(Access::Write));
        }
        let read_only = "[policy.tools.send]\naction = \"allow\"\nwrite = false\n";
        assert_eq!(judged(read_only, "GET", "/version"), Ok(Access::Read));
        let (rule, reason) = judged(read_only, "DELETE", power).unwrap_err();
        assert_eq!(rule, "policy.tools.send");
        assert!(reason.contains("write = false"), "{reason}");
    }

    #[test]
    fn a_sensitive_class_opens_only_by_name_in_the_tools_own_rule() {
        let (rule, reason) = judged(ALLOW, "POST", "/nodes/pve1/qemu/100/agent/exec").unwrap_err();
        assert_eq!(rule, "policy.tools.send.sensitive");
        assert!(
            reason.contains("\"guest-agent\"") && reason.contains("sensitive = [\"guest-agent\"]"),
            "{reason}"
        );
        let opened = "[policy.tools.send]\naction = \"allow\"\nsensitive = [\"guest-agent\"]\n";
        assert_eq!(
            judged(opened, "POST", "/nodes/pve1/qemu/100/agent/exec"),
            Ok(Access::Write)
        );
        // Another class stays shut.
        assert!(judged(opened, "GET", "/access/users").is_err());
    }

    #[test]
    fn sensitive_is_refused_where_it_could_not_mean_what_it_says() {
        for (text, says) in [
            (
                "[policy.tools.\"*\"]\naction = \"allow\"\nsensitive = [\"access\"]\n",
                "the \"*\" table never opens",
            ),
            (
                "[policy.tools.push]\naction = \"allow\"\nsensitive = [\"access\"]\n",
                "push sends only the requests it declares",
            ),
            (
                "[policy.tools.send]\nsensitive = [\"access\"]\n",
                "names no action",
            ),
            (
                "[policy.tools.send]\naction = \"allow\"\nsensitive = [\"acess\"]\n",
                "\"acess\" is not a sensitive class",
            ),
        ] {
            let e = Policy::parse(text, "p.toml", &all()).unwrap_err();
            assert!(
                e.key.contains(".sensitive (p.toml line") && e.to_string().contains(says),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn arguments_the_host_did_not_normalise_are_refused() {
        let all = all();
        let policy = Policy::parse(ALLOW, "p.toml", &all).unwrap();
        let tool = all.iter().find(|t| t.name == "send").unwrap();
        let args = json!({"method": "post", "path": "nodes/pve1"})
            .as_object()
            .cloned()
            .unwrap();
        let effective = policy.effective(tool);
        assert!(matches!(
            judge(&policy, tool, &effective, &args),
            Some(Err(Decision::Deny { .. }))
        ));
        // A tool of templates is not judged here.
        let push = all.iter().find(|t| t.name == "push").unwrap();
        assert!(judge(&policy, push, &policy.effective(push), &args).is_none());
    }
}
