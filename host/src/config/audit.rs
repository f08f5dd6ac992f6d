//! The `[audit]` section of the configuration and its environment
//! overrides.

use std::path::PathBuf;

use serde::Deserialize;

use super::layered::{Layers, Sourced};
use crate::error::ConfigError;

/// Where the records go when the file is `-`.
pub const STDERR_PATH: &str = "-";

/// Rotation size when `max_size_mib` is not set.
pub const DEFAULT_MAX_SIZE_MIB: f64 = 64.0;

/// The `[audit]` section as written in the file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileAudit {
    path: Option<String>,
    stderr: Option<bool>,
    include_arguments: Option<bool>,
    max_size_mib: Option<f64>,
    on_failure: Option<String>,
    fsync: Option<bool>,
}

/// What to do with a call whose audit record cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// The call is refused (or its result withheld) with a tool error: no
    /// call goes unrecorded. The default.
    Refuse,
    /// The call goes ahead; the failure is logged as an error.
    Continue,
}

/// The audit log's settings; `None` path and no stderr means it is off.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditSettings {
    /// The JSONL file; `None` for no file (off, or stderr only).
    pub path: Option<PathBuf>,
    /// Also write every record to stderr.
    pub stderr: bool,
    /// Record the (redacted) argument values, not only their hash.
    pub include_arguments: bool,
    /// Rotate the file before it grows past this; 0 never rotates.
    pub max_size_bytes: u64,
    /// What a write failure does to the call.
    pub on_failure: OnFailure,
    /// `fsync` after every record, so a power loss loses nothing either.
    pub fsync: bool,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            path: None,
            stderr: false,
            include_arguments: false,
            max_size_bytes: (DEFAULT_MAX_SIZE_MIB * 1024.0 * 1024.0) as u64,
            on_failure: OnFailure::Refuse,
            fsync: false,
        }
    }
}

impl AuditSettings {
    /// Whether anything is recorded at all.
    pub fn enabled(&self) -> bool {
        self.path.is_some() || self.stderr
    }

    /// Reads the section, with `PVE_MCP_AUDIT_*` overriding its keys.
    pub fn load(
        file: &FileAudit,
        file_name: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<AuditSettings, ConfigError> {
        let layers = Layers::new(env, "audit", file_name);
        let mut settings = AuditSettings::default();

        let path = layers.text("PVE_MCP_AUDIT_PATH", "path", file.path.as_ref());
        let mut stderr = layers
            .boolean("PVE_MCP_AUDIT_STDERR", "stderr", file.stderr)?
            .map(|s| s.value);
        if let Some(path) = path {
            if path.value.trim().is_empty() {
                return Err(ConfigError::new(
                    path.key,
                    "the path is empty",
                    "set a file such as /var/log/pve-mcp/audit.jsonl, or \"-\" for stderr only",
                ));
            }
            if path.value == STDERR_PATH {
                stderr = Some(true);
            } else {
                settings.path = Some(PathBuf::from(path.value));
            }
        }
        settings.stderr = stderr.unwrap_or(false);
        settings.include_arguments = layers
            .boolean(
                "PVE_MCP_AUDIT_INCLUDE_ARGUMENTS",
                "include_arguments",
                file.include_arguments,
            )?
            .is_some_and(|s| s.value);
        settings.fsync = layers
            .boolean("PVE_MCP_AUDIT_FSYNC", "fsync", file.fsync)?
            .is_some_and(|s| s.value);

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
        if let Some(Sourced {
            value: mib, key, ..
        }) = size
        {
            if !(mib == 0.0 || (1.0 / 1024.0..=1024.0 * 1024.0).contains(&mib)) {
                return Err(ConfigError::new(
                    key,
                    format!("{mib} MiB is out of range"),
                    "use 0 (never rotate) or a size between 0.001 (1 KiB) and 1048576 MiB",
                ));
            }
            settings.max_size_bytes = (mib * 1024.0 * 1024.0) as u64;
        }

        if let Some(Sourced { value, key, .. }) = layers.text(
            "PVE_MCP_AUDIT_ON_FAILURE",
            "on_failure",
            file.on_failure.as_ref(),
        ) {
            settings.on_failure = match value.trim().to_ascii_lowercase().as_str() {
                "refuse" => OnFailure::Refuse,
                "continue" => OnFailure::Continue,
                _ => {
                    return Err(ConfigError::new(
                        key,
                        format!("{value:?} is not a failure mode"),
                        "use \"refuse\" (the default: a call that cannot be recorded is refused) or \"continue\"",
                    ));
                }
            };
        }
        Ok(settings)
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
