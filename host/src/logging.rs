//! Logs go to stderr only: on stdio, stdout carries nothing but MCP.

use tracing_subscriber::EnvFilter;

/// Sets up logging. `verbosity` counts `-v` flags; `RUST_LOG` overrides.
/// Interactive commands (`quiet`) log only warnings by default, so their
/// output is not buried; a server logs each call.
pub fn init(verbosity: u8, quiet: bool) {
    let default = match verbosity {
        0 if quiet => "warn",
        0 => "warn,pve_mcp=info",
        1 => "info,pve_mcp=debug",
        _ => "debug,pve_mcp=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
