//! `pve-mcp policy check [FILE]`: validates a policy against the
//! component's tools and prints every tool's risk tier and effective
//! decision.

use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};

use super::exit::config_failure;
use super::global::Global;
use crate::egress::Access;
use crate::policy::{Action, Policy, PolicySource, StateSpec};
use crate::tier::Tier;
use crate::tools::ToolInfo;

/// Runs the command: exit 0 when the policy is valid, 2 when it is not
/// (the error names the key and line), 1 when the component cannot load.
pub async fn run(global: &Global, file: Option<&Path>, json: bool) -> ExitCode {
    let app = match super::tools::start_without_clusters(global).await {
        Ok(app) => app,
        Err(code) => return code,
    };
    let source = match file {
        Some(path) => Ok(PolicySource::File(path.to_path_buf())),
        None => PolicySource::resolve(global.policy.as_deref(), global.config.as_deref()),
    };
    let policy = match source.and_then(|s| s.load(app.tools())) {
        Ok(policy) => policy,
        Err(e) => return config_failure(&e),
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&as_json(&policy, app.tools())).unwrap_or_default()
        );
    } else {
        print!("{}", table(&policy, app.tools()));
    }
    ExitCode::SUCCESS
}

fn verdict(hidden: bool, action: Action) -> &'static str {
    match (hidden, action) {
        (true, _) => "hidden",
        (false, Action::Allow) => "allow",
        (false, Action::Deny) => "deny",
        (false, Action::RequireApproval) => "approval",
    }
}

/// The methods the gate would let the tool send: none when it is denied;
/// beside `GET`, only those of its declared routes.
fn methods(access: Access, action: Action, tool: &ToolInfo) -> Vec<String> {
    if action == Action::Deny {
        return Vec::new();
    }
    access
        .methods()
        .iter()
        .filter(|m| **m == http::Method::GET || tool.routes.iter().any(|r| r.methods().contains(m)))
        .map(|m| m.to_string())
        .collect()
}

/// For a write tool some of whose calls are destructive (`pve_backup_vm`
/// with `prune: true`): the arguments that make them so, and the verdict
/// such a call gets.
fn when_destructive<'p>(
    policy: &'p Policy,
    tool: &ToolInfo,
) -> Option<(Vec<String>, crate::policy::Effective<'p>)> {
    if Tier::of(tool) != Tier::Write {
        return None;
    }
    let raised = crate::tier::raised_by(tool);
    (!raised.is_empty()).then(|| (raised, policy.effective_at(tool, Tier::Destructive)))
}

fn state(policy: &Policy) -> String {
    match &policy.state {
        StateSpec::Memory => "memory".into(),
        StateSpec::Redis(url) => crate::state::redis::redacted_url(url),
    }
}

/// The effective decision per tool, as a table.
pub fn table(policy: &Policy, tools: &[ToolInfo]) -> String {
    let mut out = format!(
        "policy: {} (default = \"{}\", state = {}, state_failure = \"{}\")\n",
        policy.origin,
        policy.default.as_str(),
        state(policy),
        policy.state_failure.as_str()
    );
    let rows: Vec<[String; 6]> = tools
        .iter()
        .map(|tool| {
            let e = policy.effective(tool);
            let mut details: Vec<String> = Vec::new();
            if let Some(reason) = &e.reason {
                details.push(format!("reason: {reason}"));
            }
            if e.action == Action::RequireApproval && !e.hidden {
                details.push(format!("approver {}", e.approver.as_str()));
            }
            if e.action != Action::Deny {
                details.extend(e.limits.iter().map(|l| format!("limit {}", l.describe())));
                details.extend(e.conditions.iter().map(|c| format!("if {c}")));
                if let Some(c) = e.commands {
                    details.push(format!("{} command patterns", c.patterns().len()));
                }
                if let Some(p) = e.paths {
                    details.push(format!("{} path patterns", p.patterns().len()));
                }
            }
            if let Some((raised, d)) = when_destructive(policy, tool) {
                let approver = match d.action {
                    Action::RequireApproval => format!(", approver {}", d.approver.as_str()),
                    _ => String::new(),
                };
                details.push(format!(
                    "destructive with {}: {} by {}{approver}",
                    raised.join(", "),
                    verdict(false, d.action),
                    d.rule
                ));
            }
            [
                tool.name.clone(),
                e.tier.as_str().into(),
                verdict(e.hidden, e.action).into(),
                match methods(e.access, e.action, tool) {
                    m if m.is_empty() => "-".into(),
                    m => m.join(","),
                },
                e.rule.clone(),
                details.join("; "),
            ]
        })
        .collect();
    let headers = ["TOOL", "TIER", "DECISION", "METHODS", "RULE", "DETAILS"];
    let last = headers.len() - 1;
    let widths: Vec<usize> = (0..last)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([headers[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: [&str; 6]| {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i < last {
                l.push_str(&format!("{cell:w$}  ", w = widths[i]));
            } else {
                l.push_str(cell);
            }
        }
        l.trim_end().to_string() + "\n"
    };
    out.push_str(&line(headers));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]]));
    }
    // A valid policy can still leave a guest open: said after the table,
    // where a person reading it ends.
    for warning in crate::policy::unbounded::warnings(policy, tools) {
        out.push_str(&format!("warning: {warning}\n"));
    }
    out
}

/// The effective decision per tool, as JSON.
pub fn as_json(policy: &Policy, tools: &[ToolInfo]) -> Value {
    let tools_in = tools;
    let tools: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let e = policy.effective(tool);
            json!({
                "tool": tool.name,
                "tier": e.tier.as_str(),
                "decision": verdict(e.hidden, e.action),
                "rule": e.rule,
                "reason": e.reason,
                "hidden": e.hidden,
                "may_write": e.access == Access::Write,
                "approver": (e.action == Action::RequireApproval && !e.hidden)
                    .then(|| e.approver.as_str()),
                "methods": methods(e.access, e.action, tool),
                "rate_limits": e.limits.iter().map(|l| json!({
                    "rule": l.name,
                    "limit": l.rate.to_string(),
                    "scope": l.scope.key(),
                })).collect::<Vec<_>>(),
                "commands": e.commands.map(|c| c.patterns().iter().map(|p| p.written()).collect::<Vec<_>>()),
                "paths": e.paths.map(|p| p.patterns().iter().map(|p| p.written()).collect::<Vec<_>>()),
                "conditions": e.conditions.iter().map(|c| json!({
                    "rule": c.name,
                    "condition": c.to_string(),
                })).collect::<Vec<_>>(),
                // A write tool whose arguments can make a call destructive:
                // which, and the verdict such a call gets.
                "when_destructive": when_destructive(policy, tool).map(|(raised, d)| json!({
                    "arguments": raised,
                    "decision": verdict(false, d.action),
                    "rule": d.rule,
                    "reason": d.reason,
                    "approver": (d.action == Action::RequireApproval).then(|| d.approver.as_str()),
                })),
            })
        })
        .collect();
    json!({
        "policy": policy.origin,
        "default": policy.default.as_str(),
        "state": state(policy),
        "state_failure": policy.state_failure.as_str(),
        "tools": tools,
        "warnings": crate::policy::unbounded::warnings(policy, tools_in),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::inside::tests::exec_tool;

    #[test]
    fn an_exec_tool_without_commands_is_warned_about() {
        let tools = vec![exec_tool()];
        let open = Policy::parse(
            "[policy.tools.pve_guest_exec]\naction = \"allow\"\n",
            "p.toml",
            &tools,
        )
        .unwrap();
        let text = table(&open, &tools);
        assert!(
            text.contains("\nwarning: pve_guest_exec may run any command in a guest"),
            "{text}"
        );
        assert_eq!(
            as_json(&open, &tools)["warnings"].as_array().unwrap().len(),
            1
        );
        let bounded = Policy::parse(
            "[policy.tools.pve_guest_exec]\naction = \"allow\"\ncommands = [[\"df\", \"-h\"]]\n",
            "p.toml",
            &tools,
        )
        .unwrap();
        let text = table(&bounded, &tools);
        assert!(
            !text.contains("warning:") && text.contains("1 command patterns"),
            "{text}"
        );
        assert_eq!(
            as_json(&bounded, &tools)["tools"][0]["commands"],
            serde_json::json!([["df", "-h"]])
        );
    }
}
