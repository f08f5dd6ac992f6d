//! The one mapping from errors to exit codes: 2 for a mistake to fix
//! before trying again (a setting, an argument), 1 for a failure while
//! running.

use std::process::ExitCode;

use crate::error::ConfigError;

/// Prints a configuration error the way every command does: exit code 2.
pub fn config_failure(error: &ConfigError) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::from(2)
}

/// Prints a failure with its causes: exit code 2 when a setting is at
/// fault (a [`ConfigError`] anywhere in the chain), 1 otherwise.
pub fn failure(error: &anyhow::Error) -> ExitCode {
    if let Some(config) = error.downcast_ref::<ConfigError>() {
        return config_failure(config);
    }
    eprintln!("error: {error:#}");
    ExitCode::from(1)
}

/// Prints a mistake in the command's own arguments: exit code 2.
pub fn usage_failure(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}
