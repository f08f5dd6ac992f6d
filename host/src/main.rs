//! The `pve-mcp` binary.

use std::process::ExitCode;

use clap::Parser;
use pve_mcp::commands::{self, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Servers log each call (and HTTP request); interactive commands only
    // warnings.
    pve_mcp::logging::init(cli.global.verbose, !commands::is_server(&cli.command));
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
    runtime.block_on(commands::run(&cli))
}
