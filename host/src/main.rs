//! The `pve-mcp` binary.

use std::process::ExitCode;

use clap::Parser;
use pve_mcp::cli::{self, AuditCommand, Cli, Command, PolicyCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Servers log each call (and HTTP request); interactive commands only
    // warnings.
    let serving = matches!(
        cli.command,
        Command::Serve { .. } | Command::Demo { http: Some(_) }
    );
    pve_mcp::logging::init(cli.global.verbose, !serving);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(async {
        match &cli.command {
            Command::Serve { http } => cli::serve(&cli.global, http.as_deref()).await,
            Command::Demo { http } => pve_mcp::demo::run(&cli.global, http.as_deref()).await,
            Command::Tools { json } => cli::tools(&cli.global, *json).await,
            Command::Call {
                tool,
                args,
                demo: true,
            } => pve_mcp::demo::call(&cli.global, tool, args).await,
            Command::Call {
                tool,
                args,
                demo: false,
            } => cli::call(&cli.global, tool, args).await,
            Command::Audit {
                command:
                    AuditCommand::Verify {
                        files,
                        anchor,
                        partial,
                    },
            } => pve_mcp::audit::verify::command(
                files,
                &pve_mcp::audit::verify::VerifyOptions {
                    partial: *partial,
                    anchor: anchor.clone(),
                },
            ),
            Command::Policy {
                command: PolicyCommand::Check { file, json },
            } => pve_mcp::policy::check::run(&cli.global, file.as_deref(), *json).await,
            Command::Approvals(command) => pve_mcp::approval::cli::run(&cli.global, command).await,
        }
    })
}
