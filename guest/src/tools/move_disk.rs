//! `pve_move_disk`: `POST /nodes/{node}/qemu/{vmid}/move_disk` for a VM's
//! disk, `POST /nodes/{node}/lxc/{vmid}/move_volume` for a container's
//! volume: the disk copied to another storage, the source kept as an
//! unused disk or, with `delete`, removed.
//!
//! Refused without writing, as Proxmox would refuse it after starting a
//! task: an unknown disk, a CD-ROM, the storage the disk is already on, a
//! storage that does not take the guest's disks on its node, a locked
//! guest, a running container's volume, and `delete` with snapshots
//! (which still need the source). With `delete` the host ranks
//! the call destructive (the route's `delete` is its table's).

use crate::action::{self, ActionOutput, Prepared, action_input};
use crate::api::Pve;
use crate::arg::disk::Disk;
use crate::arg::{Flag, StorageId, VmType};
use crate::error::{ToolError, quoted};
use crate::fetch;
use crate::json as pj;
use crate::route::{DIGEST, Param, Route};
use crate::storages;
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    /// The disk and where it goes.
    pub struct Input {
        /// Disk key, e.g. scsi0 or rootfs (pve_get_vm_config)
        pub disk: Disk,
        /// Target storage
        pub storage: StorageId,
        /// Remove the source after the copy (default: keep it as unusedN)
        pub delete: Option<Flag>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_move_disk",
    title: "Move a disk to another storage",
    description: "Copy a VM disk or container volume to another storage; the source stays as an \
        unused disk unless delete is true. Returns the move task.",
    annotations: Annotations::write(false, false),
    routes: &[
        Route::new(
            "POST",
            "/nodes/{node}/qemu/{vmid}/move_disk",
            &[Param::arg("disk"), Param::arg("storage"), Param::arg("delete"), DIGEST],
        ),
        Route::new(
            "POST",
            "/nodes/{node}/lxc/{vmid}/move_volume",
            &[
                Param::from("volume", "disk"),
                Param::arg("storage"),
                Param::arg("delete"),
                DIGEST,
            ],
        ),
    ],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.Config.Disk",
        "/storage/{storage}": "Datastore.AllocateSpace",
    ],
    run: run,
};

/// The storage a drive's value puts it on: `local-lvm` of
/// `local-lvm:vm-100-disk-0,size=32G`.
fn storage_of(value: &str) -> Option<&str> {
    let volume = value.split(',').next()?;
    let (storage, _) = volume.split_once(':')?;
    Some(storage)
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    action::on_guest(pve, input.wanted(), execution, |pve, target, state| {
        let label = target.label();
        let disk = input.disk.0.as_str();
        let storage = input.storage.as_str();
        input.disk.fits(target)?;
        state.refuse_if_locked(target)?;
        if target.vm_type == VmType::Lxc && state.running {
            return Err(ToolError::Precondition(format!(
                "{label} is running, and Proxmox moves a container's volumes only while it is \
                 stopped. Nothing was sent. Shut it down first (pve_shutdown_vm)."
            )));
        }
        let config = fetch::object(pve, &action::guest_path(target).lit("config"))?;
        let value = input.disk.in_config(target, &config)?;
        if value.contains("media=cdrom") && !value.contains("cloudinit") {
            return Err(ToolError::Precondition(format!(
                "{disk} of {label} is a CD-ROM drive ({}), which has nothing to move. Nothing \
                 was sent.",
                quoted(&value, 80)
            )));
        }
        let Some(from) = storage_of(&value) else {
            return Err(ToolError::Precondition(format!(
                "{disk} of {label} is not a volume on a storage ({}), so it cannot be moved. \
                 Nothing was sent.",
                quoted(&value, 80)
            )));
        };
        if from == storage {
            return Err(ToolError::field(
                "storage",
                format!("{disk} of {label} is already on {storage}; name another storage"),
            ));
        }
        let (content, what) = match target.vm_type {
            VmType::Qemu => ("images", "VM disks"),
            VmType::Lxc => ("rootdir", "container volumes"),
        };
        storages::require(pve, "storage", &target.node, storage, content, what)?;
        let delete = input.delete.map(|f| f.0);
        if delete == Some(true) {
            let names = action::snapshot_names(pve, target)?;
            if !names.is_empty() {
                return Err(ToolError::Precondition(format!(
                    "{label} has snapshots ({}), which still need the source of {disk}, so \
                     Proxmox will not delete it. Nothing was sent. Move it without delete (the \
                     source stays as an unused disk), or delete the snapshots first.",
                    names.join(", ")
                )));
            }
        }
        let (endpoint, key) = match target.vm_type {
            VmType::Qemu => ("move_disk", "disk"),
            VmType::Lxc => ("move_volume", "volume"),
        };
        let request = WriteRequest::new(Method::Post, action::guest_path(target).lit(endpoint))
            .text(key, Some(disk))
            .text("storage", Some(storage))
            .flag("delete", delete)
            .text("digest", pj::text(config.get("digest")).as_deref());
        let source = if delete == Some(true) {
            "the source is then deleted, for good"
        } else {
            "the source stays as an unused disk (pve_get_vm_config shows it)"
        };
        Ok(Prepared::Act {
            request,
            effect: format!(
                "{disk} of {label} ({}) is copied from {from} to {storage}; {source}",
                quoted(&value, 80)
            ),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::{Value, json};

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:qmmove:100:mcp@pve!ops:";

    fn fake(vm_type: &str, status: &str, config: Value) -> FakePve {
        let base = format!("/nodes/pve1/{vm_type}/100");
        let (endpoint, content) = if vm_type == "qemu" {
            ("move_disk", "images")
        } else {
            ("move_volume", "rootdir")
        };
        FakePve::default()
            .with(&format!("{base}/status/current"), json!({"status": status}))
            .with(&format!("{base}/config"), config)
            .with(
                &format!("/nodes/pve1/storage?content={content}"),
                json!([{"storage": "local-lvm", "enabled": 1}, {"storage": "ceph", "enabled": 1}]),
            )
            .with(&format!("{base}/snapshot"), json!([{"name": "current"}]))
            .answering(&format!("POST {base}/{endpoint}"), json!(UPID))
    }

    fn args(extra: Value) -> String {
        let mut a = json!({"vmid": 100, "node": "pve1", "vm_type": "qemu", "disk": "scsi0", "storage": "ceph"});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a.to_string()
    }

    fn vm_config() -> Value {
        json!({"scsi0": "local-lvm:vm-100-disk-0,size=32G", "ide2": "none,media=cdrom", "digest": "d1"})
    }

    #[test]
    fn a_vm_disk_is_moved_with_its_digest_and_delete_only_when_asked() {
        let mut pve = fake("qemu", "running", vm_config());
        let out = TOOL.call(&mut pve, &args(json!({}))).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(
            pve.writes,
            ["POST /nodes/pve1/qemu/100/move_disk disk=scsi0&storage=ceph&digest=d1"]
        );
        assert!(out.summary.contains("unused disk"), "{}", out.summary);
        let mut pve = fake("qemu", "running", vm_config());
        TOOL.call(&mut pve, &args(json!({"delete": true}))).unwrap();
        assert_eq!(
            pve.writes,
            ["POST /nodes/pve1/qemu/100/move_disk disk=scsi0&storage=ceph&delete=1&digest=d1"]
        );
    }

    #[test]
    fn a_container_volume_moves_as_volume_while_stopped_only() {
        let config = json!({"rootfs": "local-lvm:subvol-100-disk-0,size=8G", "digest": "d2"});
        let a = args(json!({"vm_type": "lxc", "disk": "rootfs"}));
        let mut pve = fake("lxc", "stopped", config.clone());
        TOOL.call(&mut pve, &a).unwrap();
        assert_eq!(
            pve.writes,
            ["POST /nodes/pve1/lxc/100/move_volume volume=rootfs&storage=ceph&digest=d2"]
        );
        let mut pve = fake("lxc", "running", config);
        let e = TOOL.call(&mut pve, &a).unwrap_err();
        assert!(e.message().contains("only while it is stopped"), "{e}");
        assert!(pve.writes.is_empty());
    }

    #[test]
    fn delete_is_refused_while_snapshots_need_the_source() {
        let mut pve = fake("qemu", "stopped", vm_config()).with(
            "/nodes/pve1/qemu/100/snapshot",
            json!([{"name": "before"}, {"name": "current"}]),
        );
        let e = TOOL.call(&mut pve, &args(json!({"delete": true}))).unwrap_err();
        assert!(e.message().contains("has snapshots (before)"), "{e}");
        assert!(pve.writes.is_empty());
    }

    #[test]
    fn what_cannot_move_is_refused_before_any_write() {
        for (extra, says) in [
            (json!({"disk": "scsi1"}), "has no disk scsi1; its disks are \"ide2\", \"scsi0\""),
            (json!({"disk": "ide2"}), "is a CD-ROM drive"),
            (json!({"storage": "local-lvm"}), "storage: scsi0 of VM 100 is already on local-lvm"),
            (json!({"storage": "nfs"}), "\"nfs\" does not take VM disks (images) on node pve1; the storages there that do are \"local-lvm\", \"ceph\""),
            (json!({"disk": "rootfs"}), "is a container volume"),
        ] {
            let mut pve = fake("qemu", "stopped", vm_config());
            let e = TOOL.call(&mut pve, &args(extra.clone())).unwrap_err();
            assert!(e.message().contains(says), "{extra}: {e}");
            assert!(pve.writes.is_empty());
        }
    }
}
