//! Starting the approval flow with `pve-mcp serve`: the store the policy's
//! `state` names, and what the admin endpoint serves when an admin token is
//! set. The endpoint itself is HTTP, so the transport layer runs it.

use std::sync::Arc;

use super::Approvals;
use super::redis_store::{DEFAULT_PREFIX, RedisApprovals};
use super::round_trip::StateSeal;
use super::store::{ApprovalStore, MemoryApprovals, StoreLimits};
use crate::config::approvals::{AdminAddress, ApprovalSettings, missing_token};
use crate::error::ConfigError;
use crate::policy::{Action, Policy, StateSpec};
use crate::secret::{Redactor, Secret};
use crate::tools::ToolInfo;

/// The approval flow of a running server.
pub struct Running {
    /// What the MCP server asks.
    pub approvals: Arc<Approvals>,
    /// What the admin endpoint serves, when an admin token is configured.
    pub admin: Option<AdminEndpoint>,
}

/// The admin endpoint as the approval flow needs it: the store a person
/// decides in, at the configured address, for holders of the admin token.
#[derive(Clone)]
pub struct AdminEndpoint {
    /// Where it listens.
    pub address: AdminAddress,
    /// The admin token.
    pub token: Secret,
    /// The approvals it lists and decides.
    pub store: Arc<dyn ApprovalStore>,
}

/// The tools the policy says need approval.
pub fn tools_needing_approval(policy: &Policy, tools: &[ToolInfo]) -> Vec<String> {
    tools
        .iter()
        .filter(|t| {
            let effective = policy.effective(t);
            !effective.hidden && effective.action == Action::RequireApproval
        })
        .map(|t| t.name.clone())
        .collect()
}

/// Sets up approvals for `tools` under `policy`; `secrets` (the clusters'
/// credentials) are redacted from what a person is shown. Fails when the
/// policy requires approval and no admin token is set (nobody could approve
/// a pending call).
pub fn start(
    settings: &ApprovalSettings,
    policy: &Policy,
    tools: &[ToolInfo],
    mut secrets: Vec<Secret>,
) -> Result<Running, ConfigError> {
    let needing = tools_needing_approval(policy, tools);
    let limits = StoreLimits {
        max_pending_per_caller: settings.max_pending_per_caller,
        ..StoreLimits::with_ttl(settings.ttl)
    };
    let store: Arc<dyn ApprovalStore> = match policy.state.redis_connection(&policy.origin)? {
        None => Arc::new(MemoryApprovals::new(limits)),
        Some(connection) => Arc::new(RedisApprovals::new(connection, DEFAULT_PREFIX, limits)),
    };
    secrets.extend(settings.admin_token.iter().map(|t| t.secret.clone()));
    let seal = state_seal(settings, policy, &needing);
    let mut approvals =
        Approvals::new(store.clone(), settings.ttl, Redactor::new(secrets)).with_state_seal(seal);
    if !settings.elicitation {
        approvals = approvals.without_elicitation();
    }
    let Some(token) = &settings.admin_token else {
        if !needing.is_empty() {
            return Err(missing_token(&format!(
                "the policy requires a person's approval for {}, and pending-then-retry needs the approvals admin endpoint, which needs a token",
                needing.join(", ")
            )));
        }
        return Ok(Running {
            approvals: Arc::new(approvals.without_admin()),
            admin: None,
        });
    };
    tracing::info!(
        admin = %settings.admin,
        ttl_secs = settings.ttl.as_secs(),
        tools = ?needing,
        "approvals ready"
    );
    Ok(Running {
        approvals: Arc::new(approvals),
        admin: Some(AdminEndpoint {
            address: settings.admin.clone(),
            token: token.secret.clone(),
            store,
        }),
    })
}

/// The key that seals 2026-07-28 approval round trips: `state_key_file`,
/// else derived from the admin token (replicas sharing the token share
/// it), else random for this process, which is worth a warning where
/// replicas share approvals or a tool needs one. Never the MCP bearer
/// token: an agent holds that.
fn state_seal(settings: &ApprovalSettings, policy: &Policy, needing: &[String]) -> StateSeal {
    if let Some(key) = &settings.state_key
        && let Some(seal) = StateSeal::from_file(&key.bytes, &key.key)
    {
        tracing::debug!(from = %key.key, "approval round trips sealed with the state key file");
        return seal;
    }
    if let Some(token) = &settings.admin_token {
        tracing::debug!("approval round trips sealed with a key derived from the admin token");
        return StateSeal::from_admin_token(token.secret.expose());
    }
    if matches!(policy.state, StateSpec::Redis(_)) || !needing.is_empty() {
        tracing::warn!(
            "approval round trips (MCP 2026-07-28) are sealed with a random key of this process: \
             a retry that reaches another replica, or this one after a restart, is refused; \
             set [approvals] state_key_file (or an admin token) on every replica to share it"
        );
    }
    StateSeal::random()
}
