//! What `pve-mcp serve` runs behind either transport: the app with its
//! policy and audit log, the policy's reload task, and the approval flow
//! with its admin endpoint. One place, so stdio and Streamable HTTP enforce the same
//! things.

use std::process::ExitCode;
use std::sync::Arc;

use crate::app::App;
use crate::cli::{self, Global};
use crate::config::{Config, ConfigError};
use crate::mcp::McpServer;
use crate::tools::ToolInfo;

/// Why serving could not start: a setting (exit 2) or anything else.
#[derive(Debug)]
pub enum StartError {
    /// A bad or missing setting, with the key and the fix.
    Config(ConfigError),
    /// The component, a cluster connection or a listener failed.
    Failed(anyhow::Error),
}

impl StartError {
    /// Prints the error the way the CLI does and gives its exit code.
    pub fn report(&self) -> ExitCode {
        match self {
            StartError::Config(e) => cli::config_failure(e),
            StartError::Failed(e) => cli::failure(e),
        }
    }
}

impl From<StartError> for anyhow::Error {
    fn from(e: StartError) -> anyhow::Error {
        match e {
            StartError::Config(e) => anyhow::Error::new(e),
            StartError::Failed(e) => e,
        }
    }
}

/// The app with the policy from `--policy`, the config or the default, and
/// the audit log when `[audit]` asks for one.
pub async fn start_app(global: &Global, config: &Config) -> Result<App, StartError> {
    let app = App::start(
        &config.clusters,
        &config.sandbox,
        &global.component(),
        &global.cache(),
    )
    .await
    .map_err(StartError::Failed)?;
    let mut app = app;
    let policy = global
        .policy_origin()
        .load(app.tools())
        .map_err(StartError::Config)?;
    let engine = crate::policy::Engine::new(policy).map_err(StartError::Config)?;
    app.enable_audit(&config.audit)
        .map_err(StartError::Config)?;
    Ok(app.with_policy(Arc::new(engine)))
}

/// A started server: the MCP handler every session clones, and what must
/// live as long as it serves.
pub struct Serving {
    server: McpServer,
    /// Dropping it stops the approvals admin endpoint.
    _approvals: Option<crate::approval::serve::Running>,
}

impl Serving {
    /// Starts everything `serve` needs: the app and its policy, the reload
    /// task (SIGHUP or a changed file), and the approval flow.
    pub async fn start(global: &Global, config: &Config) -> Result<Serving, StartError> {
        let app = Arc::new(start_app(global, config).await?);
        let tools: Arc<[ToolInfo]> = Arc::from(app.tools().to_vec());
        if let Err(e) =
            crate::policy::reload::spawn(app.policy().clone(), global.policy_origin(), tools)
        {
            tracing::warn!("policy reload on SIGHUP is unavailable: {e}");
        }
        let policy = app.policy().policy();
        tracing::info!(
            policy = %policy.origin,
            default = policy.default.as_str(),
            state = %app.policy().store().describe(),
            "policy in force"
        );
        let approvals = crate::approval::serve::start(config, &app)
            .await
            .map_err(StartError::Config)?;
        let server = McpServer::new(app).with_approvals(approvals.approvals.clone());
        Ok(Serving {
            server,
            _approvals: Some(approvals),
        })
    }

    /// A server with the default policy and no approval flow (the demo).
    pub fn without_approvals(app: App) -> Serving {
        Serving {
            server: McpServer::new(Arc::new(app)),
            _approvals: None,
        }
    }

    /// The MCP handler.
    pub fn server(&self) -> &McpServer {
        &self.server
    }
}
