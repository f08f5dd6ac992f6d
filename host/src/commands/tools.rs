//! `pve-mcp tools`: what the component offers, without any cluster.

use std::process::ExitCode;

use super::{Global, failure};
use crate::config::SandboxLimits;
use crate::sandbox::component::FirstCompile;
use crate::server::app::App;
use crate::tier::Tier;
use crate::tools::ToolInfo;

/// `pve-mcp tools`.
pub async fn run(global: &Global, json: bool, routes: bool) -> ExitCode {
    let app = match start_without_clusters(global).await {
        Ok(app) => app,
        Err(code) => return code,
    };
    if json {
        let tools: Vec<_> = app
            .tools()
            .iter()
            .map(crate::server::mcp::to_mcp_tool)
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&tools).unwrap_or_default()
        );
    } else if routes {
        print!("{}", route_table(app.tools()));
    } else {
        print!("{}", tool_table(&app));
    }
    ExitCode::SUCCESS
}

/// Each tool with the writes it may send, one route per line; a tool with
/// none sends only GETs.
pub fn route_table(tools: &[ToolInfo]) -> String {
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let mut out = format!("{:width$}  ROUTES\n", "TOOL");
    for tool in tools.iter() {
        let mut routes = tool.routes.iter().map(|r| {
            if r.is_call_request() {
                format!("{r} (the call's own request, normalised by the host; nothing else)")
            } else {
                r.to_string()
            }
        });
        let first = routes
            .next()
            .unwrap_or_else(|| "- (reads only: GET under /api2/json/)".into());
        out.push_str(&format!("{:width$}  {first}\n", tool.name));
        for route in routes {
            out.push_str(&format!("{:width$}  {route}\n", ""));
        }
    }
    out
}

/// The component alone, for commands that only need its tool list: no
/// cluster, so every request it might make is denied.
pub async fn start_without_clusters(global: &Global) -> Result<App, ExitCode> {
    App::start(
        &[],
        &SandboxLimits::default(),
        &global.component(),
        &global.cache(),
        FirstCompile::Optimised,
    )
    .await
    .map_err(|e| failure(&e))
}

/// A plain-text table of the tools, with the tier the host gives each
/// (what it may send, never only what it claims) and whether it may wait
/// for Proxmox tasks (up to `sandbox.max_wait_secs`).
pub fn tool_table(app: &App) -> String {
    let tools = app.tools();
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let mut out = format!(
        "{:width$}  {:11}  {:5}  {}\n",
        "TOOL", "TIER", "WAITS", "WHAT IT DOES"
    );
    for tool in tools.iter() {
        let tier = Tier::of(tool);
        let waits = if app.waits(&tool.name) { "yes" } else { "-" };
        out.push_str(&format!(
            "{:width$}  {:11}  {waits:5}  {}\n",
            tool.name,
            tier.as_str(),
            tool.title
        ));
    }
    out
}
