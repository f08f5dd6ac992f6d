//! The policy layer: every tool call is decided before the guest runs.
//!
//! A [`Decision`] allows a call (saying whether it may write, which the
//! egress gate enforces), denies it with a reason, refuses it for a rate
//! limit (saying when to retry), or asks for a person's approval. Every
//! decision names the rule that made it (`policy.tools.pve_list_vms`,
//! `policy.tools."*"`, `policy.default`, or a condition or limit of a
//! rule), which the audit log records.
//!
//! Evaluation, for tool T with rule R (`[policy.tools.T]`) and wildcard W
//! (`[policy.tools."*"]`):
//! 1. hidden (R's `hide`, else W's) → denied;
//! 2. the action: R's, else W's, else the default mode; `deny` → denied;
//! 3. a tool whose route is its call's own request (`pve_api_request`) is
//!    judged by that request: a sensitive class R does not name → denied;
//!    a GET runs read-only; a write needs R to let the tool write;
//! 4. every condition of R and of W must hold;
//! 5. a tool that runs a guest command or names a guest file ([`inside`])
//!    must keep to R's `commands` and `paths` (and never start a shell R
//!    does not name): else denied, before anything runs;
//! 6. every rate limit of R and of W must have budget (reserved atomically,
//!    all or none);
//! 7. `require_approval` → a person decides; otherwise allowed.

use std::sync::Arc;

use arc_swap::ArcSwap;

pub mod commands;
pub mod conditions;
mod decision;
mod effective;
pub mod inside;
pub mod paths;
pub mod rate_limit;
pub mod reload;
mod request;
pub mod rules;
mod shown;
pub mod unbounded;

pub use decision::{Decision, Grant, Permit};
pub use effective::Effective;
pub use rules::{
    Action, Approver, DEFAULT_RULE, DefaultMode, Policy, PolicySource, Rule, STATE_FAILURE_RULE,
    StateFailure, StateSpec,
};

use crate::caller::Caller;
use crate::state::{CounterStore, MemoryStore, RedisStore, Reserve, Window};
use crate::tier::Tier;
use crate::tools::{JsonObject, ToolInfo};

/// The policy in force (swapped whole on reload) and the counters.
pub struct Engine {
    policy: ArcSwap<Policy>,
    store: Arc<dyn CounterStore>,
    instance: String,
    reloads: tokio::sync::watch::Sender<u64>,
}

impl Engine {
    /// An engine for this policy, with its state store (Redis is connected
    /// lazily, so an unreachable Redis does not stop the server).
    pub fn new(policy: Policy) -> Result<Engine, crate::error::ConfigError> {
        let store: Arc<dyn CounterStore> = match &policy.state {
            StateSpec::Memory => Arc::new(MemoryStore::new()),
            StateSpec::Redis(url) => {
                Arc::new(RedisStore::new(url).map_err(|e| crate::error::ConfigError {
                    key: format!("policy.state (in {})", policy.origin),
                    problem: e.to_string(),
                    fix: "use redis://HOST:PORT[/DB]".into(),
                })?)
            }
        };
        Ok(Engine::with_store(policy, store))
    }

    /// An engine with a given store.
    pub fn with_store(policy: Policy, store: Arc<dyn CounterStore>) -> Engine {
        Engine {
            policy: ArcSwap::from_pointee(policy),
            store,
            instance: format!("{}-{}", std::process::id(), crate::state::now_ms()),
            reloads: tokio::sync::watch::Sender::new(0),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> Arc<Policy> {
        self.policy.load_full()
    }

    /// Puts a new policy in force. Counters of unchanged limits carry over
    /// (they are keyed by the limit's name and rate). The state store is
    /// fixed at start: a changed `state` needs a restart.
    pub fn replace(&self, policy: Policy) {
        let old = self.policy.load();
        if old.state != policy.state {
            tracing::warn!(
                "the policy's `state` changed; the new store is used after a restart, until then counters stay in {}",
                self.store.describe()
            );
        }
        self.policy.store(Arc::new(policy));
        self.reloads.send_modify(|n| *n += 1);
    }

    /// Changes each time a new policy is put in force.
    pub fn reloads(&self) -> tokio::sync::watch::Receiver<u64> {
        self.reloads.subscribe()
    }

    /// Where the counters live, for logs.
    pub fn store(&self) -> &Arc<dyn CounterStore> {
        &self.store
    }

    /// Whether the tool appears in `tools/list`.
    pub fn visible(&self, tool: &ToolInfo) -> bool {
        self.policy.load().visible(tool)
    }

    /// Decides one call.
    pub async fn decide(
        &self,
        caller: &Caller,
        tool: &ToolInfo,
        arguments: &JsonObject,
    ) -> Decision {
        let policy = self.policy.load_full();
        let effective = policy.effective_at(tool, Tier::of_call(tool, arguments));
        if effective.action == Action::Deny {
            return Decision::Deny {
                rule: effective.rule,
                reason: effective.reason.unwrap_or_default(),
            };
        }
        let access = match request::judge(&policy, tool, &effective, arguments) {
            None => effective.access,
            Some(Ok(access)) => access,
            Some(Err(refused)) => return refused,
        };
        for condition in &effective.conditions {
            if let Err(why) = condition.check(arguments) {
                return Decision::Deny {
                    rule: condition.name.clone(),
                    reason: why,
                };
            }
        }
        // Before the rate limits: a refused command spends no budget.
        if let Some((rule, reason)) =
            inside::refusal(tool, effective.commands, effective.paths, arguments)
        {
            return Decision::Deny { rule, reason };
        }
        let permit = match self.reserve(&policy, caller, &effective.limits).await {
            Ok(permit) => permit,
            Err(refusal) => return refusal,
        };
        let grant = Grant {
            rule: effective.rule,
            access,
            approver: effective.approver,
            permit,
        };
        match effective.action {
            Action::RequireApproval => Decision::RequireApproval(grant),
            _ => Decision::Allow(grant),
        }
    }

    /// Takes one unit of every limit, or none.
    async fn reserve(
        &self,
        policy: &Policy,
        caller: &Caller,
        limits: &[&rate_limit::RateLimit],
    ) -> Result<Permit, Decision> {
        let mut permit = Permit::holding(self.store.clone(), Vec::with_capacity(limits.len()));
        for limit in limits {
            let key = limit.counter_key(caller, &self.instance);
            let window = Window {
                limit: limit.rate.calls,
                length: limit.rate.window,
            };
            match self.store.reserve(&key, window).await {
                Ok(Reserve::Granted(r)) => permit.push(r),
                Ok(Reserve::Exhausted { retry_after }) => {
                    permit.rollback().await;
                    return Err(Decision::RateLimited {
                        rule: limit.name.clone(),
                        limit: limit.describe(),
                        retry_after,
                    });
                }
                Err(e) => match policy.state_failure {
                    StateFailure::Open => {
                        tracing::warn!(limit = %limit.name, "rate-limit state unavailable ({e}); the call runs uncounted (state_failure = \"open\")");
                    }
                    StateFailure::Closed => {
                        tracing::warn!(limit = %limit.name, "rate-limit state unavailable ({e}); the call is refused (state_failure = \"closed\")");
                        permit.rollback().await;
                        return Err(Decision::Deny {
                            rule: STATE_FAILURE_RULE.into(),
                            reason: format!(
                                "the rate limit {} cannot be checked because its state store is unavailable ({e}), and the policy fails closed; retry later or tell the operator",
                                limit.name
                            ),
                        });
                    }
                },
            }
        }
        Ok(permit)
    }
}

impl Default for Engine {
    /// Read-only, counters in memory.
    fn default() -> Self {
        Engine::with_store(Policy::default(), Arc::new(MemoryStore::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::effective::tests::{policy, tool};
    use super::*;
    use crate::egress::Access;
    use serde_json::json;

    fn args(v: serde_json::Value) -> JsonObject {
        v.as_object().cloned().unwrap_or_default()
    }

    #[tokio::test]
    async fn limits_are_taken_all_or_none() {
        let engine = Engine::default();
        engine.replace(policy(
            "[policy.tools.look]\nrate_limit = \"2/day\"\n[policy.tools.\"*\"]\nrate_limit_global = \"1/day\"\n",
        ));
        let look = tool("look", true);
        let caller = Caller::stdio();
        let first = engine.decide(&caller, &look, &JsonObject::new()).await;
        assert!(matches!(first, Decision::Allow(_)), "{first:?}");
        let second = engine.decide(&caller, &look, &JsonObject::new()).await;
        assert_eq!(second.rule(), "policy.tools.\"*\".rate_limit_global");
        // The session unit the second call took was given back: without
        // the wildcard, one more call fits the tool's 2/day.
        engine.replace(policy("[policy.tools.look]\nrate_limit = \"2/day\"\n"));
        let third = engine.decide(&caller, &look, &JsonObject::new()).await;
        assert!(matches!(third, Decision::Allow(_)), "{third:?}");
        let fourth = engine.decide(&caller, &look, &JsonObject::new()).await;
        assert!(matches!(fourth, Decision::RateLimited { .. }), "{fourth:?}");
    }

    #[tokio::test]
    async fn rollback_gives_units_back_and_approval_holds_them() {
        let engine = Engine::default();
        engine.replace(policy(
            "[policy.tools.poke]\naction = \"require_approval\"\nrate_limit = \"1/day\"\n\
             conditions = [{ arg = \"vmid\", op = \"in\", value = [100] }]\n",
        ));
        let poke = tool("poke", false);
        let caller = Caller::stdio();
        let denied = engine
            .decide(&caller, &poke, &args(json!({"vmid": 101})))
            .await;
        assert_eq!(denied.rule(), "policy.tools.poke.conditions[0]");
        let Decision::RequireApproval(Grant {
            rule,
            access,
            permit,
            ..
        }) = engine
            .decide(&caller, &poke, &args(json!({"vmid": 100})))
            .await
        else {
            panic!("approval expected")
        };
        assert_eq!(
            (rule.as_str(), access),
            ("policy.tools.poke", Access::Write)
        );
        assert!(!permit.is_empty());
        let held = engine
            .decide(&caller, &poke, &args(json!({"vmid": 100})))
            .await;
        assert!(matches!(held, Decision::RateLimited { .. }), "{held:?}");
        permit.rollback().await;
        let again = engine
            .decide(&caller, &poke, &args(json!({"vmid": 100})))
            .await;
        assert!(matches!(again, Decision::RequireApproval(_)), "{again:?}");
    }

    #[tokio::test]
    async fn a_command_no_pattern_matches_is_refused_before_it_runs() {
        let exec = inside::tests::exec_tool();
        let mut tools = effective::tests::tools();
        tools.push(exec.clone());
        let text = "[policy.tools.pve_guest_exec]\naction = \"allow\"\nrate_limit = \"1/day\"\n\
                    commands = [[\"systemctl\", \"status\", \"*\"], [\"df\", \"-h\"]]\n";
        let engine = Engine::default();
        engine.replace(Policy::parse(text, "p.toml", &tools).unwrap());
        let caller = Caller::stdio();
        let call = |argv: serde_json::Value| args(json!({"vmid": 100, "command": argv}));
        let refused = engine
            .decide(
                &caller,
                &exec,
                &call(json!(["systemctl", "restart", "nginx"])),
            )
            .await;
        assert_eq!(refused.rule(), "policy.tools.pve_guest_exec.commands");
        assert_eq!(
            refused.refusal_text().unwrap(),
            "Denied by policy (policy.tools.pve_guest_exec.commands): command [\"systemctl\",\"restart\",\"nginx\"] \
             matches no pattern in [policy.tools.pve_guest_exec] commands; the closest is \
             [\"systemctl\",\"status\",\"*\"], which wants \"status\" at argument 2, not \"restart\""
        );
        let shell = engine
            .decide(&caller, &exec, &call(json!(["bash", "-c", "df -h"])))
            .await;
        assert!(matches!(shell, Decision::Deny { .. }), "{shell:?}");
        // Refusals spent no budget: the one call a day still runs.
        let allowed = engine
            .decide(&caller, &exec, &call(json!(["df", "-h"])))
            .await;
        assert!(matches!(allowed, Decision::Allow(_)), "{allowed:?}");
    }

    #[test]
    fn refusal_texts_name_the_rule() {
        let deny = Decision::Deny {
            rule: "policy.tools.x".into(),
            reason: "no".into(),
        };
        assert_eq!(
            deny.refusal_text().unwrap(),
            "Denied by policy (policy.tools.x): no"
        );
        let limited = Decision::RateLimited {
            rule: "policy.tools.x.rate_limit".into(),
            limit: "3/minute per session".into(),
            retry_after: std::time::Duration::from_millis(1500),
        };
        assert_eq!(
            limited.refusal_text().unwrap(),
            "Rate limit reached (policy.tools.x.rate_limit: 3/minute per session); retry after 2 s, when the current window ends"
        );
    }
}
