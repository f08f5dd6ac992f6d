//! A storage volume's id as Proxmox lists it (`pve-volume-id`):
//! `<storage>:<name>`, e.g. `local:iso/debian-12.iso`,
//! `local-lvm:vm-100-disk-0` or `pbs:backup/ct/101/2025-01-01T00:00:00Z`.
//! Checked as the host's route pattern for a `{volume}` segment checks
//! it: components that start with a letter or digit, so never `.`, `..`
//! or an empty one.

use serde_json::Value;

use super::{deserialize_from_json, fixed_schema, is_storage_id, string};
use crate::error::quoted;

/// Longest volume id taken.
const MAX: usize = 255;

/// A volume id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeId(pub String);

impl VolumeId {
    /// The id as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The storage it is on: the part before the first `:`.
    pub fn storage(&self) -> &str {
        self.0.split_once(':').map_or("", |(s, _)| s)
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let rule = "a volume id as pve_list_storage_content shows it, \"<storage>:<name>\", e.g. \
                    \"local:iso/debian-12.iso\"";
        let s = string(v, MAX).map_err(|e| format!("{e}; it must be {rule}"))?;
        if !is_volume_id(s) {
            return Err(format!("{} is not {rule}", quoted(s, 64)));
        }
        Ok(VolumeId(s.to_owned()))
    }
}
deserialize_from_json!(VolumeId);
fixed_schema!(VolumeId, serde_json::json!({"type": "string"}));

/// Whether `s` is a volume id: a storage id, `:`, then one to five
/// `/`-separated components of `[A-Za-z0-9_.+=:~-]`, each starting with a
/// letter or digit.
pub fn is_volume_id(s: &str) -> bool {
    let Some((storage, name)) = s.split_once(':') else {
        return false;
    };
    let component = |c: &str| {
        c.starts_with(|ch: char| ch.is_ascii_alphanumeric())
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.+=:~-".contains(&b))
    };
    let parts: Vec<&str> = name.split('/').collect();
    s.len() <= MAX
        && is_storage_id(storage)
        && parts.len() <= 5
        && parts.iter().all(|c| component(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_ids_are_storage_colon_name_without_dot_components() {
        for good in [
            "local:iso/debian-12.iso",
            "local-lvm:vm-100-disk-0",
            "local:100/vm-100-disk-0.qcow2",
            "pbs:backup/ct/101/2025-01-01T00:00:00Z",
        ] {
            assert!(is_volume_id(good), "{good}");
        }
        for bad in [
            "iso/debian.iso",
            "local:",
            "local:iso/../x",
            "local:iso/./x",
            "local:iso//x",
            "local:iso/x y",
            "local:iso\\x",
            "1local:iso/x",
            "local:a/b/c/d/e/f",
        ] {
            assert!(!is_volume_id(bad), "{bad}");
        }
    }
}
