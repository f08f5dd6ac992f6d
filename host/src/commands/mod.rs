//! The command line: what each command does, written for people. One file
//! per command; this file holds the definitions clap reads, the options
//! every command takes ([`Global`]), and the one mapping from errors to exit
//! codes ([`failure`]).
//!
//! Exit codes: 0 success; 1 a failure while running (Proxmox, the
//! component, a tool error); 2 a mistake to fix before trying again (a bad
//! setting, argument or file).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod approvals;
pub mod audit_verify;
pub mod call;
pub mod component;
pub mod demo;
pub mod egress_proxy;
mod exit;
mod global;
pub mod policy_check;
pub mod serve;
pub mod sizes;
pub mod tools;
pub mod traces;

pub use exit::{config_failure, failure, usage_failure};
pub use global::Global;

/// What `pve-mcp --version` prints: the binary's version, the embedded
/// component's SHA-256 and the WIT contract it implements, so an operator
/// can tie a deployment to the exact component that runs.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncomponent: sha256:",
    env!("PVE_MCP_COMPONENT_SHA256"),
    " (embedded; --component runs another)",
    "\ncontract: ",
    env!("PVE_MCP_WIT_PACKAGE"),
);

/// A sandboxed MCP server for Proxmox VE.
///
/// Every tool runs inside a WebAssembly component that can reach nothing but
/// your Proxmox API, only with the methods pve-mcp allows, and never sees
/// the API token.
#[derive(Debug, Parser)]
#[command(
    name = "pve-mcp",
    version = VERSION,
    propagate_version = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
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
        /// Let clients act on the simulated cluster: write tools run, and
        /// destructive ones ask for approval through the client's form.
        #[arg(long)]
        writes: bool,
    },
    /// List the tools.
    Tools {
        /// Print the MCP tool definitions as JSON, each with the tier the
        /// host gives it, whether it waits, its routes and the Proxmox
        /// privileges it declares.
        #[arg(long, conflicts_with_all = ["routes", "markdown"])]
        json: bool,
        /// Print each tool's size in bytes of compact JSON as `tools/list`
        /// gives it: what a client hands the model (name, title,
        /// description, inputSchema, annotations) and the whole definition
        /// (with outputSchema), then the totals and averages for every tool
        /// and for the default list (the read-tier tools of the toolsets
        /// offered by default: what the default policy lists). With --json,
        /// as JSON.
        #[arg(long, conflicts_with_all = ["routes", "markdown"])]
        sizes: bool,
        /// Print each tool's routes: the only writes the egress gate lets
        /// a call of it send, bound to the call's arguments.
        #[arg(long, conflicts_with = "markdown")]
        routes: bool,
        /// Print the tool tables the README and docs/actions.md hold
        /// between their `pve-mcp tools --markdown` markers.
        #[arg(long)]
        markdown: bool,
    },
    /// Write the tool component this binary embeds, and its WIT contract,
    /// for another host to run: DIR/pve_tools.wasm and DIR/wit/.
    Component {
        /// The directory to write to.
        #[arg(long, value_name = "DIR", default_value = "dist")]
        out: std::path::PathBuf,
    },
    /// Run the egress gate as a loopback HTTP proxy, for the tool
    /// component hosted by something else (Node.js through jco, the
    /// wasmtime CLI).
    ///
    /// Point the component's endpoint base-url at the address it prints
    /// (with /token/TOKEN when PVE_MCP_EGRESS_PROXY_TOKEN is set, and
    /// /cluster/NAME for a cluster other than the first). It adds the
    /// Proxmox credentials after its checks, so the component never holds
    /// them: GETs under /api2/json/, and writes that fit the routes of the
    /// tools the policy allows outright.
    EgressProxy {
        /// Where to listen: a loopback address.
        #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8007")]
        listen: std::net::SocketAddr,
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
    Approvals(approvals::ApprovalsCommand),
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

/// Runs the command the user asked for.
pub async fn run(cli: &Cli) -> ExitCode {
    let global = &cli.global;
    match &cli.command {
        Command::Serve { http } => serve::run(global, http.as_deref()).await,
        Command::Demo { http, writes } => demo::run(global, http.as_deref(), *writes).await,
        Command::Tools {
            json,
            sizes,
            routes,
            markdown,
        } => {
            let format = match (json, sizes, routes, markdown) {
                (true, true, _, _) => tools::Format::SizesJson,
                (_, true, _, _) => tools::Format::Sizes,
                (true, _, _, _) => tools::Format::Json,
                (_, _, true, _) => tools::Format::Routes,
                (_, _, _, true) => tools::Format::Markdown,
                _ => tools::Format::Table,
            };
            tools::run(global, format).await
        }
        Command::EgressProxy { listen } => egress_proxy::run(global, *listen).await,
        Command::Component { out } => component::run(out),
        Command::Call {
            tool,
            args,
            demo: true,
        } => demo::call(global, tool, args).await,
        Command::Call {
            tool,
            args,
            demo: false,
        } => call::run(global, tool, args).await,
        Command::Audit {
            command:
                AuditCommand::Verify {
                    files,
                    anchor,
                    partial,
                },
        } => audit_verify::run(files, anchor.clone(), *partial),
        Command::Policy {
            command: PolicyCommand::Check { file, json },
        } => policy_check::run(global, file.as_deref(), *json).await,
        Command::Approvals(command) => approvals::run(global, command).await,
    }
}

/// Whether this command serves (and so logs each call) rather than answers
/// once and exits.
pub fn is_server(command: &Command) -> bool {
    matches!(
        command,
        Command::Serve { .. } | Command::Demo { http: Some(_), .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
