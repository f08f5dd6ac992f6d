//! The command line: what each command does, written for people.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::app::{App, ComponentSource};
use crate::component::CacheDir;
use crate::config::{Config, ConfigError, SandboxLimits};
use crate::mcp::to_call_result;
use crate::serving::Serving;
use crate::tools::{CallOutcome, ToolInfo};

/// A sandboxed MCP server for Proxmox VE.
///
/// Every tool runs inside a WebAssembly component that can reach nothing but
/// your Proxmox API, only with the methods pve-mcp allows, and never sees
/// the API token.
#[derive(Debug, Parser)]
#[command(
    name = "pve-mcp",
    version,
    propagate_version = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Clone, Args)]
pub struct Global {
    /// TOML configuration file; environment variables override its keys.
    #[arg(long, global = true, env = "PVE_MCP_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Policy file ([policy] section: which tools run, with what limits);
    /// overrides the configuration file's [policy].
    #[arg(long, global = true, env = "PVE_MCP_POLICY", value_name = "FILE")]
    pub policy: Option<PathBuf>,

    /// Run this component instead of the embedded one (it must implement
    /// the pve-mcp:guest/pve-tools world in wit/).
    #[arg(long, global = true, value_name = "PATH")]
    pub component: Option<PathBuf>,

    /// Compile the component at every start instead of caching it.
    #[arg(long, global = true)]
    pub no_cache: bool,

    /// More logging on stderr (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio for a client that spawns pve-mcp, or over
    /// Streamable HTTP for many clients (--http, or MCP_TRANSPORT).
    ///
    /// Needs PVE_BASE_URL and an API token (PVE_API_TOKEN_ID,
    /// PVE_API_TOKEN_SECRET), from the environment or --config.
    Serve {
        /// Serve Streamable HTTP on ADDR[:PORT] (e.g. 127.0.0.1:8000);
        /// a non-loopback address needs a bearer token (MCP_AUTH_TOKEN).
        #[arg(long, value_name = "ADDR[:PORT]")]
        http: Option<String>,
    },
    /// Try pve-mcp on an embedded, simulated Proxmox cluster.
    ///
    /// In a terminal it shows the tools, runs two sample calls and prints a
    /// client configuration. Spawned by an MCP client, it serves MCP over
    /// stdio on the simulated cluster; with --http it serves Streamable HTTP.
    Demo {
        /// Serve the demo over Streamable HTTP on ADDR[:PORT], e.g.
        /// 127.0.0.1:8080.
        #[arg(long, value_name = "ADDR[:PORT]")]
        http: Option<String>,
    },
    /// List the tools.
    Tools {
        /// Print the MCP tool definitions as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool call through the same sandbox and gates, and print the
    /// result.
    Call {
        /// The tool, e.g. pve_list_vms.
        tool: String,
        /// Arguments as a JSON object, e.g. '{"vmid": 100}'.
        #[arg(long, default_value = "{}", value_name = "JSON")]
        args: String,
        /// Call the embedded simulated cluster instead of a real one.
        #[arg(long)]
        demo: bool,
    },
    /// Work with the policy (which tools run, and how often).
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// List, approve or deny calls waiting for a person's approval.
    ///
    /// Talks to the admin endpoint of a running `pve-mcp serve`, found and
    /// authenticated through the [approvals] settings and
    /// PVE_MCP_ADMIN_TOKEN.
    #[command(subcommand)]
    Approvals(crate::approval::cli::ApprovalsCommand),
    /// Work with the audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
}

/// `pve-mcp policy ...`.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Check a policy and print the effective decision for every tool.
    ///
    /// Without FILE, checks the policy `serve` would use (--policy, or the
    /// [policy] of --config). Exit code 2 names the key and line at fault.
    Check {
        /// A policy file (a [policy] section and its [policy.tools.NAME]).
        file: Option<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// `pve-mcp audit` commands.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check the hash chain of audit files and report the first record that
    /// was edited, dropped, reordered or cut off (exit code 1), or the
    /// record count and the last record's hash.
    Verify {
        /// The files (any order, e.g. audit.jsonl*), or their directory.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// A record hash saved earlier (e.g. the last hash a verification
        /// printed); the log must still contain it. This detects a dropped
        /// tail.
        #[arg(long, value_name = "SHA256")]
        anchor: Option<String>,
        /// Accept a log that does not start at the first record, when older
        /// files were removed on purpose.
        #[arg(long)]
        partial: bool,
    },
}

impl Global {
    /// The component to run.
    pub fn component(&self) -> ComponentSource {
        match &self.component {
            Some(path) => ComponentSource::File(path.clone()),
            None => ComponentSource::Embedded,
        }
    }

    /// Where compiled components are cached.
    pub fn cache(&self) -> CacheDir {
        if self.no_cache {
            CacheDir::Disabled
        } else {
            CacheDir::Default
        }
    }

    /// Where the policy is looked for: --policy, then --config.
    pub fn policy_origin(&self) -> crate::policy::reload::Origin {
        crate::policy::reload::Origin {
            flag: self.policy.clone(),
            config: self.config.clone(),
        }
    }

    /// Loads the configuration from --config and the environment.
    pub fn load_config(&self) -> Result<Config, ConfigError> {
        Config::load(self.config.as_deref(), &|key| std::env::var(key).ok())
    }
}

/// Prints a configuration error the way every command does, and gives the
/// exit code for it.
pub fn config_failure(error: &ConfigError) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::from(2)
}

/// Prints any other startup failure with its causes.
pub fn failure(error: &anyhow::Error) -> ExitCode {
    eprintln!("error: {error:#}");
    ExitCode::from(1)
}

/// Loads the configuration and the policy and starts the host on them; a
/// failure has been reported and becomes the exit code.
async fn start_configured(global: &Global) -> Result<App, ExitCode> {
    let config = global.load_config().map_err(|e| config_failure(&e))?;
    crate::serving::start_app(global, &config)
        .await
        .map_err(|e| e.report())
}

/// `pve-mcp serve`: stdio, or Streamable HTTP with `--http`,
/// `MCP_TRANSPORT=streamable-http` or an `[http] listen` key.
pub async fn serve(global: &Global, http: Option<&str>) -> ExitCode {
    // A wrong MCP_TRANSPORT is the problem to report, whatever else is
    // missing.
    if let Err(e) = crate::http::config::transport_from_env(&|k| std::env::var(k).ok()) {
        return config_failure(&e);
    }
    let config = match global.load_config() {
        Ok(config) => config,
        Err(e) => return config_failure(&e),
    };
    if http.is_some() || config.http.requested {
        return crate::http::serve_command(global, config, http).await;
    }
    let serving = match Serving::start(global, &config).await {
        Ok(serving) => serving,
        Err(e) => return e.report(),
    };
    tracing::info!("serving MCP on stdio");
    match serving.server().clone().serve_stdio().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failure(&e),
    }
}

/// The component alone, for commands that only need its tool list: no
/// cluster, so every request it might make is denied.
pub async fn start_without_clusters(global: &Global) -> Result<App, ExitCode> {
    App::start(
        &[],
        &SandboxLimits::default(),
        &global.component(),
        &global.cache(),
    )
    .await
    .map_err(|e| failure(&e))
}

/// `pve-mcp tools`.
pub async fn tools(global: &Global, json: bool) -> ExitCode {
    let app = match start_without_clusters(global).await {
        Ok(app) => app,
        Err(code) => return code,
    };
    if json {
        let tools: Vec<_> = app.tools().iter().map(crate::mcp::to_mcp_tool).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&tools).unwrap_or_default()
        );
    } else {
        print!("{}", tool_table(app.tools()));
    }
    ExitCode::SUCCESS
}

/// A plain-text table of the tools.
pub fn tool_table(tools: &[ToolInfo]) -> String {
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let mut out = format!("{:width$}  {:4}  {}\n", "TOOL", "MODE", "WHAT IT DOES");
    for tool in tools {
        let mode = if tool.annotations.read_only {
            "read"
        } else {
            "WRITE"
        };
        out.push_str(&format!("{:width$}  {mode:4}  {}\n", tool.name, tool.title));
    }
    out
}

/// Parses `--args`, with an error that says how to write it.
pub fn parse_args(raw: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!(
            "--args must be a JSON object, e.g. '{{\"vmid\": 100}}'; got {raw}"
        )),
        Err(e) => Err(format!(
            "--args is not valid JSON ({e}); write it as a JSON object, e.g. '{{\"vmid\": 100}}'"
        )),
    }
}

/// `pve-mcp call` against a configured cluster.
pub async fn call(global: &Global, tool: &str, raw_args: &str) -> ExitCode {
    let args = match parse_args(raw_args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match start_configured(global).await {
        Ok(app) => print_call(&app, tool, &args).await,
        Err(code) => code,
    }
}

/// Runs a call and prints its result: the MCP `CallToolResult` as JSON on
/// stdout. Exit code 1 when the call failed.
pub async fn print_call(
    app: &App,
    tool: &str,
    args: &serde_json::Map<String, serde_json::Value>,
) -> ExitCode {
    if !app.has_tool(tool) {
        let names: Vec<&str> = app.tools().iter().map(|t| t.name.as_str()).collect();
        eprintln!(
            "error: no tool named {tool:?}; the tools are: {}",
            names.join(", ")
        );
        return ExitCode::from(2);
    }
    let report = app.call(&crate::caller::Caller::stdio(), tool, args).await;
    let failed = report.outcome.is_error();
    match to_call_result(report.outcome) {
        Some(result) => println!(
            "{}",
            serde_json::to_string_pretty(&result).unwrap_or_default()
        ),
        None => {
            eprintln!("error: the component does not know tool {tool:?}");
            return ExitCode::from(2);
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The message an outcome shows a person.
pub fn outcome_text(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::Output { summary, .. } => summary.clone(),
        CallOutcome::UnknownTool(name) => format!("unknown tool {name}"),
        CallOutcome::Failed { message, .. } => message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn args_errors_show_an_example() {
        assert!(parse_args("[1]").unwrap_err().contains("JSON object"));
        assert!(
            parse_args("{vmid: 1}")
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert_eq!(parse_args(r#"{"vmid": 100}"#).unwrap()["vmid"], 100);
    }
}
