//! What the policy says about one call, and the rate-limit units an
//! allowed call holds.

use std::sync::Arc;
use std::time::Duration;

use super::rules::Approver;
use crate::egress::Access;
use crate::state::{CounterStore, Reservation};

/// What an allowed call runs with: the rule that allowed it, what it may
/// send, and its rate-limit units.
#[derive(Debug)]
pub struct Grant {
    /// The rule that allowed the call.
    pub rule: String,
    /// The methods the egress gate lets this call send.
    pub access: Access,
    /// Who approves it, when the policy requires approval.
    pub approver: Approver,
    /// Its rate-limit reservations: roll them back if the call does not
    /// run or fails upstream.
    pub permit: Permit,
}

/// What the policy says about one call.
#[derive(Debug)]
pub enum Decision {
    /// Run the call.
    Allow(Grant),
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
    /// A person must approve it first; once approved it runs with this
    /// grant.
    RequireApproval(Grant),
}

impl Decision {
    /// The rule that decided.
    pub fn rule(&self) -> &str {
        match self {
            Decision::Allow(Grant { rule, .. })
            | Decision::RequireApproval(Grant { rule, .. })
            | Decision::Deny { rule, .. }
            | Decision::RateLimited { rule, .. } => rule,
        }
    }

    /// A short name for logs: `allow`, `deny`, `rate-limited`, `approval`.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Allow(_) => "allow",
            Decision::Deny { .. } => "deny",
            Decision::RateLimited { .. } => "rate-limited",
            Decision::RequireApproval(_) => "require-approval",
        }
    }

    /// The text the agent sees when the call is refused; `None` for an
    /// allowed call.
    pub fn refusal_text(&self) -> Option<String> {
        match self {
            Decision::Allow(_) => None,
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
            Decision::RequireApproval(Grant { rule, .. }) => Some(format!(
                "Approval required ({rule}): a person must approve this call, and nobody can be asked here (`pve-mcp call` and the demo have no approval flow); call it through `pve-mcp serve`"
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

impl Permit {
    /// A permit holding these units of this store.
    pub(crate) fn holding(store: Arc<dyn CounterStore>, held: Vec<Reservation>) -> Permit {
        Permit {
            store: Some(store),
            held,
        }
    }

    /// Adds a unit.
    pub(crate) fn push(&mut self, reservation: Reservation) {
        self.held.push(reservation);
    }
}
