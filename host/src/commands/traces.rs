//! The trace exporter for the commands that serve MCP (`serve`, `demo`):
//! started before logging, since its layer is part of the subscriber, and
//! before the async runtime, since its HTTP client is a blocking one.

use std::process::ExitCode;

use super::exit::failure;
use super::{Cli, Command};
use crate::config::Config;
use crate::telemetry::Telemetry;

/// The exporter `[telemetry]` and the `OTEL_*` variables ask for, or
/// `None` (off, or a command that serves no MCP). A bad setting is the
/// exit code to return.
pub fn start(cli: &Cli) -> Result<Option<Telemetry>, ExitCode> {
    if !matches!(cli.command, Command::Serve { .. } | Command::Demo { .. }) {
        return Ok(None);
    }
    let global = &cli.global;
    let settings = Config::load_telemetry(global.config.as_deref(), &|key| global.env(key))
        .map_err(|e| super::config_failure(&e))?;
    Telemetry::start(&settings).map_err(|e| failure(&e.context("starting the trace exporter")))
}
