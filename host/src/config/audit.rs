//! The `[audit]` section of the configuration and its environment
//! overrides.

use std::path::PathBuf;

use super::layered::{Layers, Sourced};
use super::section::section;
use crate::error::ConfigError;

/// Where the records go when the file is `-`.
pub const STDERR_PATH: &str = "-";

/// Rotation size when `max_size_mib` is not set.
pub const DEFAULT_MAX_SIZE_MIB: f64 = 64.0;

/// What to do with a call whose audit record cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// The call is refused (or its result withheld) with a tool error: no
    /// call goes unrecorded. The default.
    Refuse,
    /// The call goes ahead; the failure is logged as an error.
    Continue,
}

section! {
    /// The `[audit]` section as written in the file.
    #[derive(Clone)]
    file FileAudit;
    /// The audit log's settings; `None` path and no stderr means it is off.
    #[derive(Debug, Clone, PartialEq)]
    settings AuditSettings in "audit";

    /// The JSONL file; `None` for no file (off, or stderr only).
    path: Option<PathBuf> = custom(read_path, None) from path: Option<String>;
    /// Also write every record to stderr.
    stderr: bool = custom(read_stderr, false) from stderr: Option<bool>;
    /// Record the (redacted) argument values, not only their hash.
    include_arguments: bool = flag(default false, env "PVE_MCP_AUDIT_INCLUDE_ARGUMENTS")
        from include_arguments;
    /// Rotate the file before it grows past this; 0 never rotates.
    max_size_bytes: u64 = custom(read_max_size, mib_bytes(DEFAULT_MAX_SIZE_MIB))
        from max_size_mib: Option<f64>;
    /// What a write failure does to the call.
    on_failure: OnFailure = custom(read_on_failure, OnFailure::Refuse)
        from on_failure: Option<String>;
    /// Keep the text of what guarded reads answered (a command's output, a
    /// guest file's first 4 KiB), not only its size and SHA-256.
    record_output: bool = flag(default false, env "PVE_MCP_AUDIT_RECORD_OUTPUT")
        from record_output;
    /// `fsync` after every record, so a power loss loses nothing either.
    fsync: bool = flag(default false, env "PVE_MCP_AUDIT_FSYNC") from fsync;
}

impl AuditSettings {
    /// Whether anything is recorded at all.
    pub fn enabled(&self) -> bool {
        self.path.is_some() || self.stderr
    }
}

fn path_text(file: &FileAudit, layers: &Layers<'_>) -> Option<Sourced<String>> {
    layers.text("PVE_MCP_AUDIT_PATH", "path", file.path.as_ref())
}

/// The file, unless the path is [`STDERR_PATH`].
fn read_path(file: &FileAudit, layers: &Layers<'_>) -> Result<Option<PathBuf>, ConfigError> {
    let Some(path) = path_text(file, layers) else {
        return Ok(None);
    };
    if path.value.trim().is_empty() {
        return Err(ConfigError::new(
            path.key,
            "the path is empty",
            "set a file such as /var/log/pve-mcp/audit.jsonl, or \"-\" for stderr only",
        ));
    }
    Ok((path.value != STDERR_PATH).then(|| PathBuf::from(path.value)))
}

/// `stderr`, or a path of [`STDERR_PATH`], which turns it on whatever
/// `stderr` says.
fn read_stderr(file: &FileAudit, layers: &Layers<'_>) -> Result<bool, ConfigError> {
    let stderr = layers
        .boolean("PVE_MCP_AUDIT_STDERR", "stderr", file.stderr)?
        .is_some_and(|s| s.value);
    Ok(stderr || path_text(file, layers).is_some_and(|p| p.value == STDERR_PATH))
}

fn mib_bytes(mib: f64) -> u64 {
    (mib * 1024.0 * 1024.0) as u64
}

fn read_max_size(file: &FileAudit, layers: &Layers<'_>) -> Result<u64, ConfigError> {
    let size = layers.try_pick(
        "PVE_MCP_AUDIT_MAX_SIZE_MIB",
        "max_size_mib",
        file.max_size_mib,
        |raw, key| {
            raw.trim().parse::<f64>().map_err(|_| {
                ConfigError::new(
                    key,
                    format!("{raw:?} is not a number"),
                    "give the size in MiB, e.g. 64 (0 never rotates)",
                )
            })
        },
    )?;
    let Some(Sourced {
        value: mib, key, ..
    }) = size
    else {
        return Ok(mib_bytes(DEFAULT_MAX_SIZE_MIB));
    };
    if !(mib == 0.0 || (1.0 / 1024.0..=1024.0 * 1024.0).contains(&mib)) {
        return Err(ConfigError::new(
            key,
            format!("{mib} MiB is out of range"),
            "use 0 (never rotate) or a size between 0.001 (1 KiB) and 1048576 MiB",
        ));
    }
    Ok(mib_bytes(mib))
}

fn read_on_failure(file: &FileAudit, layers: &Layers<'_>) -> Result<OnFailure, ConfigError> {
    let Some(Sourced { value, key, .. }) = layers.text(
        "PVE_MCP_AUDIT_ON_FAILURE",
        "on_failure",
        file.on_failure.as_ref(),
    ) else {
        return Ok(OnFailure::Refuse);
    };
    match value.trim().to_ascii_lowercase().as_str() {
        "refuse" => Ok(OnFailure::Refuse),
        "continue" => Ok(OnFailure::Continue),
        _ => Err(ConfigError::new(
            key,
            format!("{value:?} is not a failure mode"),
            "use \"refuse\" (the default: a call that cannot be recorded is refused) or \"continue\"",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(file: &str, env: &[(&str, &str)]) -> Result<AuditSettings, ConfigError> {
        let file: FileAudit = toml::from_str(file).unwrap();
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AuditSettings::load(&file, "c.toml", &|k| env.get(k).cloned())
    }

    #[test]
    fn off_by_default_and_file_keys_are_read() {
        let s = load("", &[]).unwrap();
        assert!(!s.enabled());
        assert_eq!(s.on_failure, OnFailure::Refuse);
        let s = load(
            "path = \"/var/log/a.jsonl\"\nstderr = true\ninclude_arguments = true\nmax_size_mib = 0.5\non_failure = \"continue\"\nfsync = true",
            &[],
        )
        .unwrap();
        assert_eq!(s.path, Some(PathBuf::from("/var/log/a.jsonl")));
        assert!(s.stderr && s.include_arguments && s.fsync);
        assert_eq!(s.max_size_bytes, 512 * 1024);
        assert_eq!(s.on_failure, OnFailure::Continue);
        assert_eq!(
            load("max_size_mib = 2", &[]).unwrap().max_size_bytes,
            2 << 20
        );
    }

    #[test]
    fn environment_overrides_and_dash_means_stderr() {
        let s = load("path = \"/a\"", &[("PVE_MCP_AUDIT_PATH", "/b")]).unwrap();
        assert_eq!(s.path, Some(PathBuf::from("/b")));
        let s = load("path = \"/a\"", &[("PVE_MCP_AUDIT_PATH", "-")]).unwrap();
        assert_eq!(s.path, None);
        assert!(s.stderr && s.enabled());
    }

    #[test]
    fn bad_values_name_the_key_and_the_fix() {
        let e = load("on_failure = \"ignore\"", &[]).unwrap_err();
        assert_eq!(e.key, "audit.on_failure (in c.toml)");
        assert!(e.fix.contains("refuse"), "{e}");
        let e = load("", &[("PVE_MCP_AUDIT_MAX_SIZE_MIB", "lots")]).unwrap_err();
        assert_eq!(e.key, "PVE_MCP_AUDIT_MAX_SIZE_MIB");
        let e = load("max_size_mib = -1", &[]).unwrap_err();
        assert!(e.key.starts_with("audit.max_size_mib"), "{e}");
        let e = load("", &[("PVE_MCP_AUDIT_STDERR", "maybe")]).unwrap_err();
        assert_eq!(e.key, "PVE_MCP_AUDIT_STDERR");
        let e = load("path = \"\"", &[]).unwrap_err();
        assert!(e.key.starts_with("audit.path"), "{e}");
    }
}
