//! The `pve-mcp` binary.

use std::process::ExitCode;

use clap::Parser;
use pve_mcp::commands::{self, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Servers log each call (and HTTP request); interactive commands only
    // warnings.
    // The trace exporter, when configured, is a layer of the subscriber.
    let telemetry = match commands::traces::start(&cli) {
        Ok(telemetry) => telemetry,
        Err(code) => return code,
    };
    pve_mcp::logging::init(
        cli.global.verbose,
        !commands::is_server(&cli.command),
        telemetry.as_ref().map(|t| t.layer()),
    );
    if let Some(t) = &telemetry {
        tracing::info!(url = t.url(), "exporting traces (OTLP/HTTP)");
    }
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
    let code = runtime.block_on(commands::run(&cli));
    // The last batch of spans goes out before the process ends.
    drop(runtime);
    if let Some(t) = telemetry {
        t.shutdown();
    }
    code
}
