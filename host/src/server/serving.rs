//! What `pve-mcp serve` runs behind either transport: the app with its
//! policy and audit log, the policy's reload task, and the approval flow
//! with what its admin endpoint serves (the transport layer runs the
//! endpoint). One place, so stdio and Streamable HTTP enforce the same
//! things.

use std::sync::Arc;

use crate::approval::serve::AdminEndpoint;
use crate::config::Config;
use crate::config::http::NamedToken;
use crate::config::tools::ToolSettings;
use crate::exposure::{Exposure, Filter};
use crate::policy::reload::Origin;
use crate::sandbox::component::{CacheDir, ComponentSource, FirstCompile};
use crate::server::app::App;
use crate::server::mcp::McpServer;

/// What a start needs besides the configuration: which component, where its
/// compiled code is cached, and where the policy was found.
#[derive(Debug, Clone)]
pub struct Startup {
    /// The component to run.
    pub component: ComponentSource,
    /// The compile cache.
    pub cache: CacheDir,
    /// How to compile when the cache lacks the component.
    pub first_compile: FirstCompile,
    /// Where the policy lives, so a reload finds it the same way.
    pub policy: Origin,
}

/// Loads the component, the policy and the audit log for `config`. A bad
/// setting comes back as a [`crate::error::ConfigError`] inside the error.
pub async fn start_app(startup: &Startup, config: &Config) -> anyhow::Result<App> {
    let mut app = App::start(
        &config.clusters,
        &config.sandbox,
        &startup.component,
        &startup.cache,
        startup.first_compile,
    )
    .await?;
    let policy = startup.policy.load(app.tools())?;
    let engine = crate::policy::Engine::new(policy)?;
    app.enable_audit(&config.audit).await?;
    let exposure = exposure(&config.tools, &config.http.tokens, app.tools())?;
    let credential_sets = config.http.tokens.iter().filter_map(|t| {
        let set = t.pve_credentials.as_deref()?;
        Some((t.name.clone(), Arc::from(set)))
    });
    Ok(app
        .with_policy(Arc::new(engine))
        .with_exposure(exposure)
        .with_credential_sets(credential_sets))
}

/// The tools each caller is offered: `[tools]` for the server, each
/// token's own `toolsets` and `read_only`, their names checked against the
/// component's toolsets.
pub fn exposure(
    settings: &ToolSettings,
    named: &[NamedToken],
    tools: &[crate::tools::ToolInfo],
) -> Result<Exposure, crate::error::ConfigError> {
    use crate::config::tools::{READ_ONLY_ENV, TOOLSETS_ENV};
    let known = Exposure::known(tools);
    let key = format!("[tools] toolsets, --toolsets or {TOOLSETS_ENV}");
    let server = Filter::server(
        settings.toolsets.as_deref(),
        settings.read_only,
        &key,
        &known,
    )?;
    let mut tokens = std::collections::HashMap::new();
    for token in named {
        let key = format!("[http.tokens.{}] toolsets", token.name);
        let filter = Filter::new(token.toolsets.as_deref(), token.read_only, &key, &known)?;
        tokens.insert(token.name.clone(), filter);
    }
    if settings.read_only {
        tracing::info!("read-only: only tools that read are offered ({READ_ONLY_ENV})");
    }
    Ok(Exposure::new(server, tokens))
}

/// The names a tool label may carry: the component's tools and the
/// discover pair.
pub fn served_names(tools: &[crate::tools::ToolInfo]) -> impl Iterator<Item = &str> {
    let discover = [super::discover::SEARCH, super::discover::CALL];
    tools.iter().map(|t| t.name.as_str()).chain(discover)
}

/// Refreshes `pve_mcp_approvals_pending` (and the oldest's age) from the
/// approval store before each scrape.
fn pending_approvals(approvals: Arc<crate::approval::Approvals>) -> crate::metrics::Sampler {
    Arc::new(move || {
        let approvals = approvals.clone();
        Box::pin(async move {
            if let Some((count, oldest)) = approvals.pending().await {
                crate::metrics::approvals_pending(count, oldest);
            }
        })
    })
}

/// A server ready for a transport: the MCP handler and what the approval
/// flow's admin endpoint serves.
pub struct Serving {
    server: McpServer,
    admin: Option<AdminEndpoint>,
}

impl Serving {
    /// Starts the app, its policy reload task and the approval flow.
    pub async fn start(startup: &Startup, config: &Config) -> anyhow::Result<Serving> {
        let app = Arc::new(start_app(startup, config).await?);
        let tools = app.tools().clone();
        if let Err(e) =
            crate::policy::reload::spawn(app.policy().clone(), startup.policy.clone(), tools)
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
        let secrets = config.clusters.iter().flat_map(|c| c.secrets()).collect();
        let approvals =
            crate::approval::serve::start(&config.approvals, &policy, app.tools(), secrets)?;
        crate::metrics::declare_tools(served_names(app.tools()));
        crate::metrics::sandbox_slots(config.sandbox.max_concurrent_calls);
        crate::metrics::on_scrape(pending_approvals(approvals.approvals.clone()));
        let origin = policy.origin.to_string();
        let tasks = crate::server::tasks::Tasks::for_state(&policy.state, &origin)?;
        let server = McpServer::new(app)
            .with_approvals(approvals.approvals)
            .with_tasks(Arc::new(tasks));
        Ok(Serving {
            server,
            admin: approvals.admin,
        })
    }

    /// A server built elsewhere (the demo's), with no admin endpoint.
    pub fn from_server(server: McpServer) -> Serving {
        Serving {
            server,
            admin: None,
        }
    }

    /// The MCP handler, to hand to a transport.
    pub fn server(&self) -> &McpServer {
        &self.server
    }

    /// What the approvals admin endpoint serves, when an admin token is
    /// configured: whoever runs the server starts the endpoint with it.
    pub fn admin_endpoint(&self) -> Option<&AdminEndpoint> {
        self.admin.as_ref()
    }
}
