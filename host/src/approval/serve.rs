//! Starting the approval flow with `pve-mcp serve`: the store the policy's
//! `state` names, and the admin endpoint when an admin token is set.

use std::sync::Arc;

use super::Approvals;
use super::admin::{self, AdminServer};
use super::redis_store::{DEFAULT_PREFIX, RedisStore};
use super::settings::ApprovalSettings;
use super::store::{ApprovalStore, MemoryStore, StoreLimits};
use crate::app::App;
use crate::config::{Config, ConfigError};
use crate::policy::{Action, StateSpec};
use crate::secret::Redactor;

/// The approval flow of a running server; the admin endpoint stops when
/// this is dropped.
pub struct Running {
    /// What the MCP server asks.
    pub approvals: Arc<Approvals>,
    /// The admin endpoint, when an admin token is configured.
    pub admin: Option<AdminServer>,
}

/// The tools the policy now says need approval.
pub fn tools_needing_approval(app: &App) -> Vec<String> {
    let policy = app.policy().policy();
    app.tools()
        .iter()
        .filter(|t| {
            let effective = policy.effective(t);
            !effective.hidden && effective.action == Action::RequireApproval
        })
        .map(|t| t.name.clone())
        .collect()
}

/// Sets up approvals for `app`. Fails when the policy requires approval
/// and no admin token is set (nobody could approve a pending call), or
/// when the admin endpoint cannot be bound.
pub async fn start(config: &Config, app: &App) -> Result<Running, ConfigError> {
    let settings: &ApprovalSettings = &config.approvals;
    let needing = tools_needing_approval(app);
    let limits = StoreLimits::with_ttl(settings.ttl);
    let policy = app.policy().policy();
    let store: Arc<dyn ApprovalStore> = match &policy.state {
        StateSpec::Memory => Arc::new(MemoryStore::new(limits)),
        // The policy's own check of the URL already passed; the connection
        // is lazy, so an unreachable Redis refuses calls rather than the
        // start.
        StateSpec::Redis(url) => {
            let connection = crate::state::redis_connection(url).map_err(|e| ConfigError {
                key: format!("policy.state (in {})", policy.origin),
                problem: e.to_string(),
                fix: "use \"memory\" or a reachable redis://HOST:PORT[/DB]".into(),
            })?;
            Arc::new(RedisStore::new(connection, DEFAULT_PREFIX, limits))
        }
    };
    let mut secrets: Vec<_> = config
        .clusters
        .iter()
        .flat_map(|c| c.auth.secrets())
        .collect();
    secrets.extend(settings.admin_token.iter().map(|t| t.secret.clone()));
    let mut approvals = Approvals::new(store.clone(), settings.ttl, Redactor::new(secrets));
    if !settings.elicitation {
        approvals = approvals.without_elicitation();
    }
    let Some(token) = &settings.admin_token else {
        if !needing.is_empty() {
            return Err(super::settings::missing_token(&format!(
                "the policy requires a person's approval for {}, and pending-then-retry needs the approvals admin endpoint, which needs a token",
                needing.join(", ")
            )));
        }
        return Ok(Running {
            approvals: Arc::new(approvals.without_admin()),
            admin: None,
        });
    };
    let server = admin::start(&settings.admin, &token.secret, store).await?;
    tracing::info!(
        admin = %server.address(),
        ttl_secs = settings.ttl.as_secs(),
        tools = ?needing,
        "approvals ready"
    );
    Ok(Running {
        approvals: Arc::new(approvals),
        admin: Some(server),
    })
}
