//! `pve_resize_disk`: `PUT /nodes/{node}/{qemu|lxc}/{vmid}/resize`, for
//! qemu disks and lxc mount points.
//!
//! Proxmox only grows disks, and reads a size without a unit as bytes (so
//! `10` is a shrink to 10 bytes). The tool asks for a unit, reads the
//! config first, and refuses a shrink or an unknown disk before any
//! request; it sends the config's `digest`, so a disk changed by someone
//! else in the meantime is refused by Proxmox instead of resized blindly.

use serde_json::Value;

use crate::route::{DIGEST, Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::action::{self, ActionOutput, Prepared, action_input};
use crate::api::Pve;
use crate::arg::disk::Disk;
use crate::arg::{self, VmType, deserialize_from_json, fixed_schema};
use crate::error::{ToolError, quoted};
use crate::fetch;
use crate::format;
use crate::json as pj;
use crate::write::{Method, WriteRequest};

/// JSON Schema pattern of a size: a number with a unit, `+` to grow by it.
pub const SIZE_PATTERN: &str = r"^\+?[0-9]+(\.[0-9]+)?[KMGT]$";

/// A new size: absolute (`50G`) or a growth (`+10G`), binary units.
#[derive(Debug, Clone, PartialEq)]
pub struct Size {
    /// As the caller wrote it, which is what Proxmox gets.
    pub text: String,
    /// `+`: grow by `bytes`.
    pub grow: bool,
    /// The amount in bytes.
    pub bytes: u64,
}

impl Size {
    fn from_json(v: &Value) -> Result<Self, String> {
        let rule = "a number with a unit K, M, G or T (binary), e.g. \"+10G\" to grow by 10 GiB \
                    or \"50G\" for 50 GiB in all; a size without a unit would be bytes";
        let s = arg::string(v, 32).map_err(|e| format!("{e}; it must be {rule}"))?;
        let (grow, rest) = match s.strip_prefix('+') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        let parsed = rest.char_indices().last().and_then(|(i, unit)| {
            let number = &rest[..i];
            let well_formed = match number.split_once('.') {
                Some((whole, fraction)) => digits(whole) && digits(fraction),
                None => digits(number),
            };
            well_formed.then(|| number.parse::<f64>().ok().map(|n| (n, unit)))?
        });
        let Some((number, unit)) = parsed else {
            return Err(format!("{} is not {rule}", quoted(s, 32)));
        };
        let shift = match unit {
            'K' => 10,
            'M' => 20,
            'G' => 30,
            'T' => 40,
            _ => return Err(format!("{} is not {rule}", quoted(s, 32))),
        };
        let bytes = number * f64::from(1u32 << 10).powi(shift / 10);
        if !(1.0..=1e18).contains(&bytes) {
            return Err(format!("{} is out of range; {rule}", quoted(s, 32)));
        }
        Ok(Size {
            text: s.to_owned(),
            grow,
            bytes: bytes as u64,
        })
    }
}
deserialize_from_json!(Size);
fixed_schema!(
    Size,
    serde_json::json!({"type": "string", "pattern": SIZE_PATTERN})
);

/// The `size=` of a drive's property string, in bytes.
fn drive_size(value: &str) -> Option<u64> {
    let size = value
        .split(',')
        .find_map(|part| part.trim().strip_prefix("size="))?;
    let with_unit = if size.ends_with(|c: char| c.is_ascii_digit()) {
        // Proxmox writes bare bytes without a unit.
        return size.parse().ok();
    } else {
        size
    };
    Size::from_json(&Value::String(with_unit.to_owned()))
        .ok()
        .map(|s| s.bytes)
}

action_input! {
    /// The disk to grow.
    pub struct Input {
        /// Disk key, e.g. scsi0 or rootfs (pve_get_vm_config)
        pub disk: Disk,
        /// "+10G" grows by, "50G" sets; K/M/G/T; never shrinks
        pub size: Size,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_resize_disk",
    title: "Grow a disk",
    description: "Grow a guest's disk; never shrinks. A CT's ext4 grows too, a VM's filesystems \
        not (do that inside). Returns the task.",
    annotations: Annotations::write(true, false),
    routes: &[Route::new(
        "PUT",
        "/nodes/{node}/{vm_type}/{vmid}/resize",
        &[Param::arg("disk"), Param::arg("size"), DIGEST],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.Config.Disk",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    action::on_guest(pve, input.wanted(), execution, |pve, target, state| {
        let label = target.label();
        let disk = input.disk.0.as_str();
        input.disk.fits(target)?;
        state.refuse_if_locked(target)?;
        let config = fetch::object(pve, &action::guest_path(target).lit("config"))?;
        let value = input.disk.in_config(target, &config)?;
        if value.contains("media=cdrom") || value.starts_with("none") {
            return Err(ToolError::Precondition(format!(
                "{disk} of {label} is a CD-ROM drive, which cannot be resized. Nothing was sent."
            )));
        }
        let current = drive_size(&value);
        let new = match (input.size.grow, current) {
            (true, Some(c)) => Some(c.saturating_add(input.size.bytes)),
            (true, None) => None,
            (false, _) => Some(input.size.bytes),
        };
        if let (false, Some(c)) = (input.size.grow, current) {
            let asked = input.size.bytes;
            if asked == c {
                return Ok(Prepared::NothingToDo {
                    why: format!("{disk} of {label} is already {}", format::bytes(c)),
                });
            }
            if asked < c {
                return Err(ToolError::Precondition(format!(
                    "{disk} of {label} is {} and disks cannot shrink; {} would shrink it. \
                     Nothing was sent. Pass a larger size, or \"+10G\" to grow by 10 GiB.",
                    format::bytes(c),
                    input.size.text
                )));
            }
        }
        let request = WriteRequest::new(Method::Put, action::guest_path(target).lit("resize"))
            .text("disk", Some(disk))
            .text("size", Some(&input.size.text))
            .text("digest", pj::text(config.get("digest")).as_deref());
        let from_to = match (current, new) {
            (Some(c), Some(n)) => format!(" from {} to {}", format::bytes(c), format::bytes(n)),
            _ => String::new(),
        };
        let inside = match target.vm_type {
            VmType::Qemu => "; partitions and filesystems inside the VM are not grown",
            VmType::Lxc => "",
        };
        Ok(Prepared::Act {
            request,
            effect: format!("{disk} of {label} grows{from_to}{inside}; this cannot be undone"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:resize:100:mcp@pve!ops:";

    fn fake() -> FakePve {
        FakePve::default()
            .with(
                "/nodes/pve1/qemu/100/status/current",
                json!({"status": "running"}),
            )
            .with(
                "/nodes/pve1/qemu/100/config",
                json!({
                    "scsi0": "local-lvm:vm-100-disk-0,iothread=1,size=32G",
                    "ide2": "local:iso/debian.iso,media=cdrom",
                    "digest": "abc123",
                }),
            )
    }

    fn args(disk: &str, size: &str) -> String {
        json!({"vmid": 100, "node": "pve1", "vm_type": "qemu", "disk": disk, "size": size})
            .to_string()
    }


    #[test]
    fn sizes_need_a_unit() {
        assert_eq!(Size::from_json(&json!("+10G")).unwrap().bytes, 10 << 30);
        assert_eq!(Size::from_json(&json!("1.5T")).unwrap().bytes, 3 << 39);
        for bad in ["10", "+", "G", "-10G", "10g", "+1e3G", "10GB", ""] {
            assert!(Size::from_json(&json!(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_growth_sends_the_size_and_the_digest() {
        let mut pve = fake().answering("PUT /nodes/pve1/qemu/100/resize", json!(UPID));
        let out = TOOL.call(&mut pve, &args("scsi0", "+10G")).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(
            pve.writes,
            ["PUT /nodes/pve1/qemu/100/resize disk=scsi0&size=%2B10G&digest=abc123"]
        );
        assert!(
            out.structured["effect"]
                .as_str()
                .unwrap()
                .contains("from 32 GiB to 42 GiB")
        );
    }

    #[test]
    fn shrinks_unknown_disks_and_cdroms_are_refused_before_writing() {
        for (disk, size, expected) in [
            ("scsi0", "16G", "disks cannot shrink"),
            (
                "scsi1",
                "+1G",
                "has no disk scsi1; its disks are \"ide2\", \"scsi0\"",
            ),
            ("ide2", "+1G", "CD-ROM"),
            ("rootfs", "+1G", "disk: rootfs is a container volume"),
        ] {
            let mut pve = fake();
            let e = TOOL.call(&mut pve, &args(disk, size)).unwrap_err();
            assert!(e.message().contains(expected), "{expected}: {e}");
            assert!(pve.writes.is_empty());
        }
        let mut pve = fake();
        let out = TOOL.call(&mut pve, &args("scsi0", "32G")).unwrap();
        assert_eq!(out.structured["sent"], false);
    }
}
