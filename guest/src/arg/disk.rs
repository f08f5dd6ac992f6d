//! A guest's disk key (`scsi0`, `virtio1`, `rootfs`, `mp0`, ...), as the
//! disk tools take it: checked against the keys qemu-server and
//! pve-container know, so a typo is refused before any request.

use serde_json::{Map, Value};

use super::{VmType, deserialize_from_json, fixed_schema};
use crate::error::{ToolError, listed, quoted};
use crate::json as pj;
use crate::resolve::Target;

/// JSON Schema pattern of a disk key, qemu's or lxc's.
pub const DISK_PATTERN: &str = "^(ide[0-3]|scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|sata[0-5]|efidisk0|tpmstate0|rootfs|mp([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5]))$";

/// A disk key: `scsi0`, `virtio1`, `rootfs`, `mp0`, ...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk(pub String);

impl Disk {
    fn from_json(v: &Value) -> Result<Self, String> {
        let rule = "a disk key: scsi0..scsi30, virtio0..virtio15, sata0..sata5, ide0..ide3, \
                    efidisk0 or tpmstate0 for a VM; rootfs or mp0..mp255 for a container";
        let s = super::string(v, 16).map_err(|e| format!("{e}; it must be {rule}"))?;
        if !is_disk_key(s) {
            return Err(format!("{} is not {rule}", quoted(s, 32)));
        }
        Ok(Disk(s.to_owned()))
    }

    /// Whether it names a container's volume rather than a VM's.
    pub fn is_lxc(&self) -> bool {
        self.0 == "rootfs" || self.0.starts_with("mp")
    }

    /// Refuses a container's volume for a VM and a VM's disk for a
    /// container, before any request about it.
    pub fn fits(&self, target: &Target) -> Result<(), ToolError> {
        let (disk, label) = (&self.0, target.label());
        match (target.vm_type, self.is_lxc()) {
            (VmType::Qemu, true) => Err(ToolError::field(
                "disk",
                format!("{disk} is a container volume; {label} is a VM: use scsi0, virtio0, ..."),
            )),
            (VmType::Lxc, false) => Err(ToolError::field(
                "disk",
                format!("{disk} is a VM disk; {label} is a container: use rootfs or mp0, ..."),
            )),
            _ => Ok(()),
        }
    }

    /// Its value in the guest's `config`, or a refusal naming the disks
    /// the guest has.
    pub fn in_config(
        &self,
        target: &Target,
        config: &Map<String, Value>,
    ) -> Result<String, ToolError> {
        pj::text(config.get(&self.0)).ok_or_else(|| {
            let mut disks: Vec<&str> = config
                .keys()
                .map(String::as_str)
                .filter(|k| is_disk_key(k))
                .collect();
            disks.sort_unstable();
            ToolError::Precondition(format!(
                "{} has no disk {}; its disks are {}. Nothing was sent.",
                target.label(),
                self.0,
                listed(&disks)
            ))
        })
    }
}
deserialize_from_json!(Disk);
fixed_schema!(
    Disk,
    serde_json::json!({"type": "string", "pattern": DISK_PATTERN})
);

/// Whether `s` is a disk key of a VM or a container.
pub fn is_disk_key(s: &str) -> bool {
    let num = |prefix: &str, max: u32| {
        s.strip_prefix(prefix).is_some_and(|n| {
            !n.is_empty()
                && n.len() <= 3
                && n.bytes().all(|b| b.is_ascii_digit())
                && (n == "0" || !n.starts_with('0'))
                && n.parse::<u32>().is_ok_and(|v| v <= max)
        })
    };
    matches!(s, "efidisk0" | "tpmstate0" | "rootfs")
        || num("ide", 3)
        || num("scsi", 30)
        || num("virtio", 15)
        || num("sata", 5)
        || num("mp", 255)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_keys_follow_pve() {
        for good in ["scsi0", "scsi30", "virtio15", "rootfs", "mp255", "efidisk0"] {
            assert!(is_disk_key(good), "{good}");
        }
        for bad in ["scsi31", "scsi01", "mp256", "net0", "virtio"] {
            assert!(!is_disk_key(bad), "{bad}");
        }
    }
}
