//! Reading the configuration file: its text once, parsed once into the
//! section structs. Every file struct denies unknown keys, so serde's own
//! message names a misspelt key and lists the ones its section takes; this
//! module adds the line, so no list of keys is kept by hand.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::ConfigError;

/// Reads a file named by `what` (`--config`, `policy file`): a missing or
/// unreadable file is an error naming both.
pub fn read_text(path: &Path, what: &str) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| {
        ConfigError::new(
            format!("{what} {}", path.display()),
            format!("cannot read the file: {e}"),
            "check the path and its permissions",
        )
    })
}

/// The 1-based line of a byte offset in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map(|before| before.matches('\n').count() + 1)
        .unwrap_or(1)
}

/// Reads `path` (given as `--config`) and deserializes all of it into `T`;
/// a syntax error or a bad key is reported with its line.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<T, ConfigError> {
    parse(&read_text(path, "--config")?, path)
}

/// Deserializes the text of the `--config` file at `path` into `T`, with
/// the same messages as [`read`]: for a caller that already holds the text
/// (the policy's reload reads it once, for its spans too).
pub fn parse<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| format!(" (line {})", line_of(text, s.start)))
            .unwrap_or_default();
        ConfigError::new(
            format!("--config {}{line}", path.display()),
            e.message().trim().to_string(),
            "fix that line: a misspelt key is reported with the keys its section takes, and every setting is listed in docs/configuration.md",
        )
    })
}
