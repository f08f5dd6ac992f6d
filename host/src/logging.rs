//! Logs go to stderr only: on stdio, stdout carries nothing but MCP.

use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::Registry;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, fmt};

/// A layer besides the log, e.g. the one that exports traces
/// (`crate::telemetry::Telemetry::layer`); it brings its own filter.
pub type ExtraLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Sets up logging. `verbosity` counts `-v` flags; `RUST_LOG` overrides.
/// Interactive commands (`quiet`) log only warnings by default, so their
/// output is not buried; a server logs each call. Without `extra` the
/// subscriber is the plain formatter with one global filter.
pub fn init(verbosity: u8, quiet: bool, extra: Option<ExtraLayer>) {
    let default = match verbosity {
        0 if quiet => "warn",
        0 => "warn,pve_mcp=info",
        1 => "info,pve_mcp=debug",
        _ => "debug,pve_mcp=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let Some(extra) = extra else {
        let _ = fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(ansi)
            .try_init();
        return;
    };
    // Each layer filters for itself, so the log's level does not decide
    // which spans are exported, nor the exporter's what is logged.
    let log = fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(extra)
        .with(log)
        .try_init();
}
