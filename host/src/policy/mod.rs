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
//! 3. every condition of R and of W must hold;
//! 4. every rate limit of R and of W must have budget (reserved atomically,
//!    all or none);
//! 5. `require_approval` → a person decides; otherwise allowed.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use http::Method;

pub mod check;
pub mod conditions;
pub mod rate_limit;
pub mod reload;
pub mod rules;

pub use rules::{Action, DefaultMode, Policy, PolicySource, Rule, StateFailure, StateSpec};

use crate::caller::Caller;
use crate::sandbox::CallReport;
use crate::state::{CounterStore, MemoryStore, RedisStore, Reservation, Reserve, Window};
use crate::tools::{CallOutcome, FailureKind, JsonObject, ToolInfo};

/// The rule name of the default mode.
pub const DEFAULT_RULE: &str = "policy.default";
/// The rule name of a refusal because the state store is unreachable.
pub const STATE_FAILURE_RULE: &str = "policy.state_failure";

/// Methods a call that may not write can send.
const READ_METHODS: &[Method] = &[Method::GET];
/// Methods a call that may write can send: what the Proxmox API uses.
const WRITE_METHODS: &[Method] = &[Method::GET, Method::POST, Method::PUT, Method::DELETE];

/// The methods the egress gate lets a call send.
pub fn allowed_methods(may_write: bool) -> Arc<[Method]> {
    if may_write {
        WRITE_METHODS.into()
    } else {
        READ_METHODS.into()
    }
}

/// What the policy says about one call.
#[derive(Debug)]
pub enum Decision {
    /// Run the call.
    Allow {
        /// The rule that allowed it.
        rule: String,
        /// Whether it may send non-GET requests.
        may_write: bool,
        /// Its rate-limit reservations: roll them back if it fails upstream.
        permit: Permit,
    },
    /// Refuse it.
    Deny {
        /// The rule (or condition) that denied it.
        rule: String,
        /// Why, for the agent.
        reason: String,
    },
    /// Refuse it for now: a rate limit's budget is spent.
    RateLimited {
        /// The limit, e.g. `policy.tools.pve_list_vms.rate_limit`.
        rule: String,
        /// The limit in words, e.g. `30/minute per session`.
        limit: String,
        /// When its window ends.
        retry_after: Duration,
    },
    /// A person must approve it first.
    RequireApproval {
        /// The rule that asks for approval.
        rule: String,
        /// Whether the call, once approved, may send non-GET requests.
        may_write: bool,
        /// Its rate-limit reservations: roll them back if the call does
        /// not run (pending, refused by the person) or fails upstream.
        permit: Permit,
    },
}

impl Decision {
    /// The rule that decided.
    pub fn rule(&self) -> &str {
        match self {
            Decision::Allow { rule, .. }
            | Decision::Deny { rule, .. }
            | Decision::RateLimited { rule, .. }
            | Decision::RequireApproval { rule, .. } => rule,
        }
    }

    /// A short name for logs: `allow`, `deny`, `rate-limited`, `approval`.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Allow { .. } => "allow",
            Decision::Deny { .. } => "deny",
            Decision::RateLimited { .. } => "rate-limited",
            Decision::RequireApproval { .. } => "require-approval",
        }
    }

    /// The text the agent sees when the call is refused; `None` for an
    /// allowed call.
    pub fn refusal_text(&self) -> Option<String> {
        match self {
            Decision::Allow { .. } => None,
            Decision::Deny { rule, reason } => Some(format!("Denied by policy ({rule}): {reason}")),
            Decision::RateLimited {
                rule,
                limit,
                retry_after,
            } => {
                let secs = retry_after.as_millis().div_ceil(1000).max(1);
                Some(format!(
                    "Rate limit reached ({rule}: {limit}); retry after {secs} s, when the current window ends"
                ))
            }
            Decision::RequireApproval { rule, .. } => Some(format!(
                "Approval required ({rule}): a person must approve this call, and approvals are not available in this server yet; ask the operator"
            )),
        }
    }
}

/// Rate-limit units held for one call. Dropping it keeps them (the call
/// counted); [`Permit::rollback`] gives them back.
pub struct Permit {
    store: Option<Arc<dyn CounterStore>>,
    held: Vec<Reservation>,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit").field("held", &self.held).finish()
    }
}

impl Permit {
    /// A permit holding nothing.
    pub fn none() -> Permit {
        Permit {
            store: None,
            held: Vec::new(),
        }
    }

    /// Whether it holds any unit.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Gives every unit back: the call did not happen, or failed upstream.
    pub async fn rollback(self) {
        let Some(store) = self.store else { return };
        for reservation in &self.held {
            if let Err(e) = store.release(reservation).await {
                tracing::warn!(
                    "could not give back a rate-limit unit ({e}); it expires with its window"
                );
            }
        }
    }
}

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
    /// Whether an allowed call may write.
    pub may_write: bool,
    /// Conditions checked on every call.
    pub conditions: Vec<&'a conditions::Condition>,
    /// Limits counted on every call.
    pub limits: Vec<&'a rate_limit::RateLimit>,
}

impl Policy {
    /// The tool's verdict before arguments and counters are looked at.
    pub fn effective(&self, tool: &ToolInfo) -> Effective<'_> {
        let own = self.tools.get(&tool.name);
        let any = self.tools.get("*");
        let rules = || own.into_iter().chain(any);
        let conditions = rules().flat_map(|r| r.conditions.iter()).collect();
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
                may_write: false,
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
            may_write: action != Action::Deny && may_write,
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

/// The policy in force (swapped whole on reload) and the counters.
pub struct Engine {
    policy: ArcSwap<Policy>,
    store: Arc<dyn CounterStore>,
    instance: String,
}

impl Engine {
    /// An engine for this policy, with its state store (Redis is connected
    /// lazily, so an unreachable Redis does not stop the server).
    pub fn new(policy: Policy) -> Result<Engine, crate::config::ConfigError> {
        let store: Arc<dyn CounterStore> = match &policy.state {
            StateSpec::Memory => Arc::new(MemoryStore::new()),
            StateSpec::Redis(url) => {
                Arc::new(
                    RedisStore::new(url).map_err(|e| crate::config::ConfigError {
                        key: format!("policy.state (in {})", policy.origin),
                        problem: e.to_string(),
                        fix: "use redis://HOST:PORT[/DB]".into(),
                    })?,
                )
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
        let effective = policy.effective(tool);
        if effective.action == Action::Deny {
            return Decision::Deny {
                rule: effective.rule,
                reason: effective.reason.unwrap_or_default(),
            };
        }
        for condition in &effective.conditions {
            if let Err(why) = condition.check(arguments) {
                return Decision::Deny {
                    rule: condition.name.clone(),
                    reason: why,
                };
            }
        }
        let permit = match self.reserve(&policy, caller, &effective.limits).await {
            Ok(permit) => permit,
            Err(refusal) => return refusal,
        };
        match effective.action {
            Action::RequireApproval => Decision::RequireApproval {
                rule: effective.rule,
                may_write: effective.may_write,
                permit,
            },
            _ => Decision::Allow {
                rule: effective.rule,
                may_write: effective.may_write,
                permit,
            },
        }
    }

    /// Takes one unit of every limit, or none.
    async fn reserve(
        &self,
        policy: &Policy,
        caller: &Caller,
        limits: &[&rate_limit::RateLimit],
    ) -> Result<Permit, Decision> {
        let mut permit = Permit {
            store: Some(self.store.clone()),
            held: Vec::with_capacity(limits.len()),
        };
        for limit in limits {
            let key = limit.counter_key(caller, &self.instance);
            let window = Window {
                limit: limit.rate.calls,
                length: limit.rate.window,
            };
            match self.store.reserve(&key, window).await {
                Ok(Reserve::Granted(r)) => permit.held.push(r),
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

impl CallReport {
    /// The report of a call the policy refused: the guest never ran.
    pub fn refused(message: String) -> CallReport {
        CallReport {
            outcome: CallOutcome::Failed {
                kind: FailureKind::Policy,
                message,
            },
            egress: Vec::new(),
        }
    }
}
