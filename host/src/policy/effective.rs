//! A tool's verdict before its arguments and counters are looked at: what
//! `pve-mcp policy check` prints and where [`super::Engine::decide`] starts.

use super::commands::CommandPatterns;
use super::conditions::Condition;
use super::paths::PathPatterns;
use super::rate_limit::RateLimit;
use super::rules::{self, Action, Approver, DEFAULT_RULE, DefaultMode, Policy};
use crate::egress::Access;
use crate::tier::Tier;
use crate::tools::ToolInfo;

/// What the policy says about a tool before its arguments are seen: the
/// effective verdict `pve-mcp policy check` prints.
#[derive(Debug, Clone)]
pub struct Effective<'a> {
    /// The tool's risk tier, which decides which rules may enable it.
    pub tier: Tier,
    /// Hidden from `tools/list` (and denied): by a `hide` rule, or because
    /// the tool may write and no rule lets it run.
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
    /// The argv patterns of the tool's own rule (`commands`): the `"*"`
    /// table never has them.
    pub commands: Option<&'a CommandPatterns>,
    /// The path patterns of the tool's own rule (`paths`).
    pub paths: Option<&'a PathPatterns>,
}

impl Policy {
    /// The tool's verdict before arguments and counters are looked at, at
    /// its own tier (its mildest call's).
    pub fn effective(&self, tool: &ToolInfo) -> Effective<'_> {
        self.effective_at(tool, Tier::of(tool))
    }

    /// The tool's verdict for a call of `tier`: a call whose arguments make
    /// it destructive (`pve_backup_vm` with `prune: true`) is judged as a
    /// destructive tool's call, approver included.
    pub fn effective_at(&self, tool: &ToolInfo, tier: Tier) -> Effective<'_> {
        let own = self.tools.get(&tool.name);
        let any = self.tools.get("*");
        let rules = || own.into_iter().chain(any);
        let conditions = rules().flat_map(|r| r.conditions.iter()).collect();
        // A destructive tool's approval goes to an operator unless a rule
        // says otherwise: its client may be the very agent asking.
        let approver = rules()
            .find_map(|r| r.approver)
            .unwrap_or(if tier == Tier::Destructive {
                Approver::Operator
            } else {
                Approver::Client
            });
        let limits = rules().flat_map(|r| r.limits.iter()).collect();
        let commands = own.and_then(|r| r.commands.as_ref());
        let paths = own.and_then(|r| r.paths.as_ref());
        let hider = own
            .filter(|r| r.hide.is_some())
            .or(any.filter(|r| r.hide.is_some()))
            .filter(|r| r.hide == Some(true));
        if let Some(rule) = hider {
            return Effective {
                tier,
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
                commands,
                paths,
            };
        }
        let write = own.and_then(|r| r.write).or(any.and_then(|r| r.write));
        let may_write = write.unwrap_or(tier != Tier::Read);
        let own_action = own.filter(|r| r.action.is_some());
        let (action, rule, reason) = match own_action.or(any.filter(|r| r.action.is_some())) {
            // Only the tool's own table can enable a destructive tool.
            Some(rule)
                if tier == Tier::Destructive
                    && own_action.is_none()
                    && rule.action != Some(Action::Deny) =>
            {
                (
                    Action::Deny,
                    rule.name.clone(),
                    Some(destructive_needs_own_rule(
                        tool,
                        tier,
                        "the \"*\" table never enables a destructive tool",
                    )),
                )
            }
            Some(rule) => {
                let action = rule.action.unwrap_or(Action::Allow);
                let reason = (action == Action::Deny).then(|| {
                    rule.reason
                        .clone()
                        .unwrap_or_else(|| format!("the policy does not allow {}", tool.name))
                });
                (action, rule.name.clone(), reason)
            }
            None => self.default_verdict(tool, tier, own.is_some()),
        };
        Effective {
            tier,
            // Not offered what it can never run: a tool that may write is
            // listed only when a rule can let it run (its conditions are
            // judged per call, so they never hide it).
            hidden: action == Action::Deny && tier != Tier::Read,
            action,
            rule,
            reason,
            access: Access::writing_if(action != Action::Deny && may_write),
            approver,
            conditions,
            limits,
            commands,
            paths,
        }
    }

    fn default_verdict(
        &self,
        tool: &ToolInfo,
        tier: Tier,
        listed: bool,
    ) -> (Action, String, Option<String>) {
        let deny = |rule: String, reason: String| (Action::Deny, rule, Some(reason));
        let destructive = tier == Tier::Destructive;
        match self.default {
            DefaultMode::Allow if destructive => deny(
                DEFAULT_RULE.into(),
                destructive_needs_own_rule(
                    tool,
                    tier,
                    "default = \"allow\" never enables a destructive tool",
                ),
            ),
            DefaultMode::Allow => (Action::Allow, DEFAULT_RULE.into(), None),
            DefaultMode::Deny if listed && destructive => deny(
                rules::rule_name(&tool.name),
                destructive_needs_own_rule(
                    tool,
                    tier,
                    "being listed without an action does not enable a destructive tool",
                ),
            ),
            DefaultMode::Deny if listed => (Action::Allow, rules::rule_name(&tool.name), None),
            DefaultMode::Deny => deny(
                DEFAULT_RULE.into(),
                format!(
                    "the policy allows only the tools it lists (default = \"deny\") and {} is not listed",
                    tool.name
                ),
            ),
            DefaultMode::ReadOnly if tier == Tier::Read => {
                (Action::Allow, DEFAULT_RULE.into(), None)
            }
            DefaultMode::ReadOnly => deny(
                DEFAULT_RULE.into(),
                format!(
                    "the policy is read-only (default = \"read-only\") and {} may write (tier {tier}); {}",
                    tool.name,
                    rules::enabling_line(&tool.name)
                ),
            ),
        }
    }

    /// Whether the tool appears in `tools/list`.
    pub fn visible(&self, tool: &ToolInfo) -> bool {
        !self.effective(tool).hidden
    }
}

/// Why a destructive tool is refused although a rule would run the
/// others: `why` names the rule that cannot enable it.
fn destructive_needs_own_rule(tool: &ToolInfo, tier: Tier, why: &str) -> String {
    let name = &tool.name;
    // A call its arguments made destructive says which arguments did.
    let what = if tier > Tier::of(tool) {
        format!(
            "this call of {name} is destructive (by its {})",
            crate::tier::raised_by(tool).join(", ")
        )
    } else {
        format!("{name} is destructive")
    };
    format!(
        "{what}, and {why}: it needs its own rule; {}",
        rules::enabling_line(name)
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tools::Annotations;

    /// A tool that declares (or does not declare) `readOnlyHint`.
    pub(crate) fn tool(name: &str, read_only: bool) -> ToolInfo {
        ToolInfo {
            input_schema:
                serde_json::json!({"type": "object", "properties": {"vmid": {}, "node": {}}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            annotations: Annotations {
                read_only,
                destructive: !read_only,
                idempotent: read_only,
                open_world: false,
            },
            ..ToolInfo::sample(name, &[])
        }
    }

    /// A tool that declares a harmless write and no hint: tier write.
    pub(crate) fn writer(name: &str, route: (&str, &str)) -> ToolInfo {
        let mut t = tool(name, false);
        t.annotations.destructive = false;
        t.routes = vec![crate::route::Route::parse(route.0, route.1).unwrap()];
        t
    }

    /// `look` reads; `push` writes (tier write); `poke` declares
    /// `destructiveHint` and `drop` a DELETE route (both destructive).
    pub(crate) fn tools() -> Vec<ToolInfo> {
        vec![
            tool("look", true),
            tool("poke", false),
            writer("push", ("POST", "/nodes/{node}/qemu/{vmid}/status/start")),
            writer("drop", ("DELETE", "/nodes/{node}/qemu/{vmid}")),
        ]
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
        // The tier decides, not the hint: `drop` declares no
        // destructiveHint but a DELETE route; `push` a harmless write.
        let all = tools();
        let of = |name: &str| {
            let p = policy(&format!(
                "[policy.tools.{name}]\naction = \"require_approval\"\n"
            ));
            p.effective(all.iter().find(|t| t.name == name).unwrap())
                .approver
        };
        assert_eq!(of("drop"), Approver::Operator);
        assert_eq!(of("push"), Approver::Client);
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
            verdict(&p, "push"),
            (Action::Allow, "policy.default".into(), true)
        );
        assert_eq!(
            verdict(&p, "look"),
            (Action::Allow, "policy.default".into(), false)
        );
        let p = policy("[policy]\ndefault = \"deny\"\n[policy.tools.push]\n");
        assert_eq!(
            verdict(&p, "push"),
            (Action::Allow, "policy.tools.push".into(), true)
        );
        assert_eq!(
            verdict(&p, "look"),
            (Action::Deny, "policy.default".into(), false)
        );
    }

    fn effective_of(p: &Policy, name: &str) -> (Tier, Action, String, bool, String) {
        let all = tools();
        let t = all.iter().find(|t| t.name == name).unwrap();
        let e = p.effective(t);
        (
            e.tier,
            e.action,
            e.rule,
            e.hidden,
            e.reason.unwrap_or_default(),
        )
    }

    #[test]
    fn read_only_hides_and_refuses_every_tool_that_may_write() {
        let p = policy("[policy]\n");
        let (tier, action, rule, hidden, _) = effective_of(&p, "look");
        assert_eq!(
            (tier, action, rule.as_str(), hidden),
            (Tier::Read, Action::Allow, "policy.default", false)
        );
        for (name, tier) in [
            ("push", Tier::Write),
            ("poke", Tier::Destructive),
            ("drop", Tier::Destructive),
        ] {
            let (t, action, rule, hidden, reason) = effective_of(&p, name);
            assert_eq!(
                (t, action, rule.as_str(), hidden),
                (tier, Action::Deny, "policy.default", true),
                "{name}"
            );
            assert!(
                reason.ends_with(&format!(
                    "an operator can enable it with [policy.tools.{name}] action = \"allow\""
                )),
                "{reason}"
            );
            assert!(!p.visible(&tools().into_iter().find(|t| t.name == name).unwrap()));
        }
        // A named rule enables each, and lets it write its routes.
        for action in ["allow", "require_approval"] {
            for name in ["push", "poke", "drop"] {
                let p = policy(&format!("[policy.tools.{name}]\naction = \"{action}\"\n"));
                let (_, a, rule, hidden, _) = effective_of(&p, name);
                assert_eq!(
                    (a.as_str(), rule, hidden),
                    (action, format!("policy.tools.{name}"), false)
                );
                assert!(verdict(&p, name).2, "{name} may write");
            }
        }
        // write = false keeps an enabled tool to GET.
        let p = policy("[policy.tools.push]\naction = \"allow\"\nwrite = false\n");
        assert_eq!(
            verdict(&p, "push"),
            (Action::Allow, "policy.tools.push".into(), false)
        );
    }

    #[test]
    fn default_allow_and_the_wildcard_never_enable_a_destructive_tool() {
        for text in [
            "[policy]\ndefault = \"allow\"\n",
            "[policy.tools.\"*\"]\naction = \"allow\"\n",
            "[policy.tools.\"*\"]\naction = \"require_approval\"\n",
            "[policy]\ndefault = \"allow\"\n[policy.tools.\"*\"]\naction = \"allow\"\nwrite = true\n",
            // Listed, but without an action of its own.
            "[policy]\ndefault = \"deny\"\n[policy.tools.drop]\n[policy.tools.poke]\n[policy.tools.push]\n",
            "[policy]\ndefault = \"allow\"\n[policy.tools.drop]\nrate_limit = \"1/day\"\n[policy.tools.poke]\n[policy.tools.push]\n",
        ] {
            let p = policy(text);
            let (_, action, _, hidden, _) = effective_of(&p, "push");
            assert_eq!(
                (action == Action::Deny, hidden),
                (false, false),
                "push under {text}"
            );
            for name in ["poke", "drop"] {
                let (tier, action, _, hidden, reason) = effective_of(&p, name);
                assert_eq!(
                    (tier, action, hidden),
                    (Tier::Destructive, Action::Deny, true),
                    "{name} under {text}"
                );
                assert!(
                    reason.starts_with(&format!("{name} is destructive, and "))
                        && reason.contains("it needs its own rule")
                        && reason.ends_with(&format!("[policy.tools.{name}] action = \"allow\"")),
                    "{reason}"
                );
            }
        }
        // Its own action wins over the wildcard's, conditions and all:
        // they are judged per call, so they do not hide it.
        let p = policy(
            "[policy]\ndefault = \"allow\"\n[policy.tools.\"*\"]\naction = \"allow\"\n\
             [policy.tools.drop]\naction = \"allow\"\n\
             conditions = [{ arg = \"vmid\", op = \"in\", value = [100] }]\n",
        );
        let (_, action, rule, hidden, _) = effective_of(&p, "drop");
        assert_eq!(
            (action, rule.as_str(), hidden),
            (Action::Allow, "policy.tools.drop", false)
        );
        assert_eq!(effective_of(&p, "poke").1, Action::Deny);
        // A wildcard deny is a plain deny, whatever the tier.
        let p = policy("[policy.tools.\"*\"]\naction = \"deny\"\n");
        let (_, action, rule, hidden, reason) = effective_of(&p, "drop");
        assert_eq!(
            (action, rule.as_str(), hidden),
            (Action::Deny, "policy.tools.\"*\"", true)
        );
        assert_eq!(reason, "the policy does not allow drop");
        // A read tool denied stays listed (only `hide` hides it).
        assert!(!effective_of(&p, "look").3);
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
