//! `pve-mcp serve`: stdio, or Streamable HTTP with `--http`,
//! `MCP_TRANSPORT=streamable-http` or an `[http] listen` key.

use std::process::ExitCode;

use super::exit::{config_failure, failure};
use super::global::Global;
use crate::config::Config;
use crate::server::serving::Serving;
use crate::transport;

/// Runs the server until its client (stdio) or a signal (HTTP) ends it.
pub async fn run(global: &Global, http: Option<&str>) -> ExitCode {
    // A wrong MCP_TRANSPORT is the problem to report, whatever else is
    // missing.
    if let Err(e) = crate::config::http::transport_from_env(&|k| std::env::var(k).ok()) {
        return config_failure(&e);
    }
    let config = match global.load_config() {
        Ok(config) => config,
        Err(e) => return config_failure(&e),
    };
    let over_http = http.is_some() || config.http.requested;
    if let Err(e) = start_metrics(&config, over_http).await {
        return failure(&e);
    }
    if over_http {
        return serve_http(global, config, http).await;
    }
    let serving = match Serving::start(&global.server_startup(), &config).await {
        Ok(serving) => serving,
        Err(e) => return failure(&e),
    };
    // Kept until the client goes: dropping it stops the endpoint.
    let _admin = match transport::http::admin::start_for(&serving).await {
        Ok(admin) => admin,
        Err(e) => return config_failure(&e),
    };
    tracing::info!("serving MCP on stdio");
    match transport::stdio::serve(serving.server().clone()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failure(&e),
    }
}

/// `pve-mcp serve` over Streamable HTTP. The address is checked (and a
/// non-loopback one without a token refused) before anything listens; the
/// component compiles while `/healthz` already answers.
async fn serve_http(global: &Global, config: Config, flag: Option<&str>) -> ExitCode {
    let addr = match transport::http::resolve_listen(&config.http, flag) {
        Ok(addr) => addr,
        Err(e) => return config_failure(&e),
    };
    if config.http.session_idle < config.sandbox.timeout + config.sandbox.max_wait {
        // rmcp's idle timer only restarts on session traffic, and a call
        // without progress notifications sends none until it ends.
        tracing::warn!(
            session_idle_secs = config.http.session_idle.as_secs(),
            call_timeout_secs = config.sandbox.timeout.as_secs(),
            max_wait_secs = config.sandbox.max_wait.as_secs(),
            "http.session_idle_secs is shorter than sandbox.timeout_secs plus sandbox.max_wait_secs: a call that waits for a Proxmox task can outlive its session"
        );
    }
    let global = global.clone();
    let settings = config.http.clone();
    let app = async move { Serving::start(&global.server_startup(), &config).await };
    let announce =
        |bound: &transport::http::serve::Bound| eprintln!("pve-mcp: MCP endpoint {}", bound.url);
    match transport::http::serve::run(&settings, addr, app, announce).await {
        Ok(()) => ExitCode::SUCCESS,
        // A bad policy, audit or approvals setting exits 2, as over stdio.
        Err(e) => failure(&e),
    }
}

/// Turns metrics on when `[metrics]` says so for this transport (over HTTP
/// unless `enabled = false`; over stdio only with `listen`), and starts
/// their own loopback listener when `listen` is set. Before the component
/// loads, so its compile-cache lookup is counted.
async fn start_metrics(config: &Config, over_http: bool) -> anyhow::Result<()> {
    if !config.metrics.on(over_http) {
        return Ok(());
    }
    crate::metrics::enable();
    if let Some(addr) = config.metrics.listen {
        let (bound, _task) = transport::http::serve::metrics_listener(addr).await?;
        eprintln!("pve-mcp: metrics http://{bound}/metrics");
    }
    Ok(())
}
