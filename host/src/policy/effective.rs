//! A tool's verdict before its arguments and counters are looked at: what
//! `pve-mcp policy check` prints and where [`super::Engine::decide`] starts.

use super::DEFAULT_RULE;
use super::conditions::Condition;
use super::rate_limit::RateLimit;
use super::rules::{self, Action, Approver, DefaultMode, Policy};
use crate::egress::Access;
use crate::tools::ToolInfo;

/// What the policy says about a tool before its arguments are seen: the
/// effective verdict `pve-mcp policy check` prints.
#[derive(Debug, Clone)]
pub struct Effective<'a> {
    /// Hidden from `tools/list` (and denied).
    pub hidden: bool,
    /// The verdict: allow, deny or require_approval.
    pub action: Action,
    /// The rule that gave the verdict.
    pub rule: String,
    /// Why it is denied.
    pub reason: Option<String>,
    /// What an allowed call may send.
    pub access: Access,
    /// Who approves when the verdict is `require_approval`.
    pub approver: Approver,
    /// Conditions checked on every call.
    pub conditions: Vec<&'a Condition>,
    /// Limits counted on every call.
    pub limits: Vec<&'a RateLimit>,
}

impl Policy {
    /// The tool's verdict before arguments and counters are looked at.
    pub fn effective(&self, tool: &ToolInfo) -> Effective<'_> {
        let own = self.tools.get(&tool.name);
        let any = self.tools.get("*");
        let rules = || own.into_iter().chain(any);
        let conditions = rules().flat_map(|r| r.conditions.iter()).collect();
        // A destructive tool's approval goes to an operator unless a rule
        // says otherwise: its client may be the very agent asking.
        let approver =
            rules()
                .find_map(|r| r.approver)
                .unwrap_or(if tool.annotations.destructive {
                    Approver::Operator
                } else {
                    Approver::Client
                });
        let limits = rules().flat_map(|r| r.limits.iter()).collect();
        let hider = own
            .filter(|r| r.hide.is_some())
            .or(any.filter(|r| r.hide.is_some()))
            .filter(|r| r.hide == Some(true));
        if let Some(rule) = hider {
            return Effective {
                hidden: true,
                action: Action::Deny,
                rule: rule.name.clone(),
                reason: Some(
                    rule.reason
                        .clone()
                        .unwrap_or_else(|| format!("{} is not available to this agent", tool.name)),
                ),
                access: Access::Read,
                approver,
                conditions,
                limits,
            };
        }
        let write = own.and_then(|r| r.write).or(any.and_then(|r| r.write));
        let may_write = write.unwrap_or(!tool.annotations.read_only);
        let decided = own
            .filter(|r| r.action.is_some())
            .or(any.filter(|r| r.action.is_some()));
        let (action, rule, reason) = match decided {
            Some(rule) => {
                let action = rule.action.unwrap_or(Action::Allow);
                let reason = (action == Action::Deny).then(|| {
                    rule.reason
                        .clone()
                        .unwrap_or_else(|| format!("the policy does not allow {}", tool.name))
                });
                (action, rule.name.clone(), reason)
            }
            None => self.default_verdict(tool, own.is_some()),
        };
        Effective {
            hidden: false,
            action,
            rule,
            reason,
            access: Access::writing_if(action != Action::Deny && may_write),
            approver,
            conditions,
            limits,
        }
    }

    fn default_verdict(&self, tool: &ToolInfo, listed: bool) -> (Action, String, Option<String>) {
        let deny = |reason: String| (Action::Deny, DEFAULT_RULE.to_string(), Some(reason));
        match self.default {
            DefaultMode::Allow => (Action::Allow, DEFAULT_RULE.into(), None),
            DefaultMode::Deny if listed => (Action::Allow, rules::rule_name(&tool.name), None),
            DefaultMode::Deny => deny(format!(
                "the policy allows only the tools it lists (default = \"deny\") and {} is not listed",
                tool.name
            )),
            DefaultMode::ReadOnly if tool.annotations.read_only => {
                (Action::Allow, DEFAULT_RULE.into(), None)
            }
            DefaultMode::ReadOnly => deny(format!(
                "the policy is read-only (default = \"read-only\") and {} may write; an operator can allow it with [policy.tools.{}] action = \"allow\"",
                tool.name, tool.name
            )),
        }
    }

    /// Whether the tool appears in `tools/list`.
    pub fn visible(&self, tool: &ToolInfo) -> bool {
        let own = self.tools.get(&tool.name).and_then(|r| r.hide);
        let any = self.tools.get("*").and_then(|r| r.hide);
        !own.or(any).unwrap_or(false)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tools::Annotations;

    /// A tool that declares (or does not declare) `readOnlyHint`.
    pub(crate) fn tool(name: &str, read_only: bool) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            title: name.into(),
            description: String::new(),
            input_schema:
                serde_json::json!({"type": "object", "properties": {"vmid": {}, "node": {}}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            output_schema: None,
            annotations: Annotations {
                read_only,
                destructive: !read_only,
                idempotent: read_only,
                open_world: false,
            },
            routes: Vec::new(),
        }
    }

    pub(crate) fn tools() -> Vec<ToolInfo> {
        vec![tool("look", true), tool("poke", false)]
    }

    pub(crate) fn policy(text: &str) -> Policy {
        Policy::parse(text, "test.toml", &tools()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn verdict(p: &Policy, name: &str) -> (Action, String, bool) {
        let all = tools();
        let t = all.iter().find(|t| t.name == name).unwrap();
        let e = p.effective(t);
        (e.action, e.rule, e.access == Access::Write)
    }

    #[test]
    fn read_only_runs_read_tools_get_only_and_denies_the_rest() {
        let p = policy("[policy]\n");
        assert_eq!(
            verdict(&p, "look"),
            (Action::Allow, "policy.default".into(), false)
        );
        assert_eq!(
            verdict(&p, "poke"),
            (Action::Deny, "policy.default".into(), false)
        );
        let reason = p.effective(&tool("poke", false)).reason.unwrap();
        assert!(
            reason.contains("may write") && reason.contains("[policy.tools.poke]"),
            "{reason}"
        );
        // Listing a write tool without an action does not let it write.
        let p = policy("[policy.tools.poke]\nrate_limit = \"1/day\"\n");
        assert_eq!(verdict(&p, "poke").0, Action::Deny);
    }

    #[test]
    fn only_an_explicit_allow_lets_a_tool_write() {
        let p = policy("[policy.tools.poke]\naction = \"allow\"\n");
        assert_eq!(
            verdict(&p, "poke"),
            (Action::Allow, "policy.tools.poke".into(), true)
        );
        let p = policy("[policy.tools.poke]\naction = \"allow\"\nwrite = false\n");
        assert!(!verdict(&p, "poke").2);
        // A tool that claims to be read-only writes only when told so.
        let p = policy("[policy.tools.look]\naction = \"allow\"\n");
        assert!(!verdict(&p, "look").2);
        let p = policy("[policy.tools.look]\naction = \"allow\"\nwrite = true\n");
        assert!(verdict(&p, "look").2);
        let p = policy("[policy.tools.poke]\naction = \"require_approval\"\n");
        assert_eq!(
            verdict(&p, "poke"),
            (Action::RequireApproval, "policy.tools.poke".into(), true)
        );
    }

    #[test]
    fn a_destructive_tool_is_approved_by_the_operator_unless_a_rule_says_otherwise() {
        let approver = |text: &str, name: &str| {
            let p = policy(text);
            p.effective(&tool(name, name == "look")).approver
        };
        // poke declares destructiveHint; look does not.
        let both = "[policy.tools.poke]\naction = \"require_approval\"\n\
                    [policy.tools.look]\naction = \"require_approval\"\n";
        assert_eq!(approver(both, "poke"), Approver::Operator);
        assert_eq!(approver(both, "look"), Approver::Client);
        // The tool's own rule wins over the wildcard's.
        let text = "[policy.tools.\"*\"]\naction = \"require_approval\"\napprover = \"operator\"\n\
                    [policy.tools.poke]\napprover = \"client\"\n";
        assert_eq!(approver(text, "poke"), Approver::Client);
        assert_eq!(approver(text, "look"), Approver::Operator);
        // An approver on a rule that allows or denies is a mistake.
        for action in ["allow", "deny"] {
            let e = Policy::parse(
                &format!("[policy.tools.poke]\naction = \"{action}\"\napprover = \"client\"\n"),
                "p.toml",
                &tools(),
            )
            .unwrap_err();
            assert!(
                e.key.contains("policy.tools.poke.approver (p.toml line 3)")
                    && e.problem.contains("only applies to require_approval"),
                "{e}"
            );
        }
        let e = Policy::parse(
            "[policy.tools.poke]\naction = \"require_approval\"\napprover = \"agent\"\n",
            "p.toml",
            &tools(),
        )
        .unwrap_err();
        assert!(
            e.problem.contains("operator") && e.problem.contains("client"),
            "{e}"
        );
    }

    #[test]
    fn default_modes_allow_and_deny() {
        let p = policy("[policy]\ndefault = \"allow\"\n");
        assert_eq!(
            verdict(&p, "poke"),
            (Action::Allow, "policy.default".into(), true)
        );
        assert_eq!(
            verdict(&p, "look"),
            (Action::Allow, "policy.default".into(), false)
        );
        let p = policy("[policy]\ndefault = \"deny\"\n[policy.tools.poke]\n");
        assert_eq!(
            verdict(&p, "poke"),
            (Action::Allow, "policy.tools.poke".into(), true)
        );
        assert_eq!(
            verdict(&p, "look"),
            (Action::Deny, "policy.default".into(), false)
        );
    }

    #[test]
    fn a_tool_rule_overrides_the_wildcard_and_both_add_limits() {
        let p = policy(
            "[policy.tools.\"*\"]\naction = \"deny\"\nrate_limit_global = \"9/day\"\nhide = false\n\
             [policy.tools.look]\naction = \"allow\"\nrate_limit = \"1/day\"\n",
        );
        assert_eq!(verdict(&p, "look").0, Action::Allow);
        assert_eq!(
            verdict(&p, "poke"),
            (Action::Deny, "policy.tools.\"*\"".into(), false)
        );
        let look = tool("look", true);
        let names: Vec<_> = p
            .effective(&look)
            .limits
            .iter()
            .map(|l| l.name.clone())
            .collect();
        assert_eq!(
            names,
            [
                "policy.tools.look.rate_limit",
                "policy.tools.\"*\".rate_limit_global"
            ]
        );
        let p = policy("[policy.tools.\"*\"]\nhide = true\n[policy.tools.look]\nhide = false\n");
        assert!(p.visible(&look));
        assert!(!p.visible(&tool("poke", false)));
        assert!(p.effective(&tool("poke", false)).hidden);
    }
}
