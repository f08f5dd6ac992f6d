//! `pve_backup_vm` (`POST /nodes/{node}/vzdump` for one guest) and
//! `pve_restore_vm` (`POST /nodes/{node}/qemu` with `archive`, or
//! `POST /nodes/{node}/lxc` with `ostemplate` and `restore=1`).
//!
//! A backup never prunes older backups unless asked: vzdump's `remove`
//! defaults to 1, so the tool sends `remove=0` unless `prune: true`. It is
//! sent to the guest's own node, since vzdump silently does nothing ("OK")
//! for a guest on another node; that answer is an error here.
//!
//! A restore goes to a free vmid unless `force` is given, which overwrites
//! the existing guest (its disks are destroyed first): then the guest must
//! be stopped. The guest type comes from the archive's name.

use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::action::{self, ActionOutput, GuestState, Prepared, action_input};
use crate::api::Pve;
use crate::arg::{self, NodeName, StorageId, Text, VmType, Vmid, choice};
use crate::error::{ToolError, quoted};
use crate::fetch;
use crate::storages;
use crate::json as pj;
use crate::path::ApiPath;
use crate::resolve::{Target, Wanted};
use crate::write::{Method, WriteRequest};

choice! {
    /// How vzdump treats a running guest.
    pub enum Mode {
        /// Live, from a snapshot (no downtime).
        Snapshot = "snapshot",
        /// Suspend the guest while copying.
        Suspend = "suspend",
        /// Stop the guest while copying (downtime).
        Stop = "stop",
    }
}

choice! {
    /// vzdump's compression.
    pub enum Compress {
        /// zstd (fast, small).
        Zstd = "zstd",
        /// gzip.
        Gzip = "gzip",
        /// lzo.
        Lzo = "lzo",
        /// None.
        None = "0",
    }
}

action_input! {
    /// The guest to back up, and where.
    pub struct BackupInput {
        /// Backup storage, e.g. "local" (pve_list_storage)
        pub storage: StorageId,
        /// snapshot (default, live), suspend or stop (downtime)
        pub mode: Option<Mode>,
        /// zstd (default), gzip, lzo or "0" (none)
        pub compress: Option<Compress>,
        /// Note stored with the backup; {{guestname}}, {{vmid}} are filled in
        pub notes: Option<Text<1024>>,
        /// true: pruning never removes this backup
        pub protected: Option<bool>,
        /// true: prune older backups by the storage's retention (deletes)
        pub prune: Option<bool>,
    }
}

action_input! {
    new:
    /// The archive to restore, and where.
    pub struct RestoreInput {
        /// Backup volume id (pve_list_backups)
        pub archive: Text<255>,
        /// Id of the restored guest; free unless force
        pub vmid: Vmid,
        /// Node to restore on
        pub node: NodeName,
        /// Storage for the disks (default: as in the backup)
        pub storage: Option<StorageId>,
        /// true: overwrite the guest with this vmid, destroying its disks (destructive)
        pub force: Option<bool>,
        /// true: new random MAC addresses
        pub unique: Option<bool>,
    }
}

/// `pve_backup_vm`.
pub static BACKUP: Tool = write_tool! {
    name: "pve_backup_vm",
    title: "Back up a VM or container",
    description: "Back up a guest with vzdump to a backup storage; older backups are pruned only \
        with prune. Returns the backup task.",
    annotations: Annotations::write(false, false),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/vzdump",
        &[
            Param::arg("vmid"),
            Param::arg("storage"),
            Param::arg("mode").or_one_of(&["snapshot"]),
            Param::arg("compress").or_one_of(&["zstd"]),
            Param::from("notes-template", "notes"),
            Param::arg("protected"),
            // Proxmox prunes unless told not to: `remove=0` unless asked.
            Param::from("remove", "prune").or_one_of(&["0"]),
        ],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.Backup",
        "/storage/{storage}": "Datastore.AllocateSpace",
    ],
    run: backup,
};

/// `pve_restore_vm`.
pub static RESTORE: Tool = write_tool! {
    name: "pve_restore_vm",
    title: "Restore a backup",
    description: "Restore a backup archive (pve_list_backups) to a free vmid, or with force over a \
        stopped guest, destroying its disks. Returns the restore task.",
    annotations: Annotations::write(true, false),
    routes: &[
        Route::new(
            "POST",
            "/nodes/{node}/qemu",
            &[
                Param::arg("vmid"),
                Param::arg("archive"),
                Param::arg("storage"),
                Param::arg("force"),
                Param::arg("unique"),
            ],
        ),
        Route::new(
            "POST",
            "/nodes/{node}/lxc",
            &[
                Param::arg("vmid"),
                Param::from("ostemplate", "archive"),
                Param::fixed("restore", &["1"]),
                Param::arg("storage"),
                Param::arg("force"),
                Param::arg("unique"),
            ],
        ),
    ],
    privileges: [
        "/vms/{vmid}": "VM.Allocate" | "VM.Backup",
        "/storage/{storage}": "Datastore.AllocateSpace",
    ],
    run: restore,
};

fn backup(pve: &mut dyn Pve, input: BackupInput) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    action::on_guest(pve, input.wanted(), execution, |pve, target, state| {
        state.refuse_if_locked(target)?;
        let storage = input.storage.as_str();
        storages::require(pve, "storage", &target.node, storage, "backup", "backups")?;
        let mode = input.mode.unwrap_or(Mode::Snapshot);
        let prune = input.prune == Some(true);
        let request = WriteRequest::new(
            Method::Post,
            ApiPath::new("nodes").seg(&target.node).lit("vzdump"),
        )
        .text("vmid", Some(&target.vmid.to_string()))
        .text("storage", Some(storage))
        .text("mode", Some(mode.as_str()))
        .text(
            "compress",
            Some(input.compress.unwrap_or(Compress::Zstd).as_str()),
        )
        .text("notes-template", input.notes.as_ref().map(Text::as_str))
        .flag("protected", input.protected)
        .flag("remove", Some(prune));
        let downtime = match mode {
            Mode::Snapshot => "without downtime",
            Mode::Suspend => "suspended while it is copied",
            Mode::Stop => "stopped while it is copied (downtime)",
        };
        let pruning = if prune {
            "; older backups beyond the storage's retention are deleted"
        } else {
            "; no older backup is deleted"
        };
        Ok(Prepared::Act {
            request,
            effect: format!(
                "{} is backed up to {storage}, {downtime}{pruning}",
                target.label()
            ),
        })
    })
}

/// The guest type an archive holds, from its name.
fn archive_type(archive: &str) -> Option<VmType> {
    let name = archive.split_once(':').map_or(archive, |(_, v)| v);
    if name.contains("vzdump-qemu-") || name.contains("backup/vm/") {
        Some(VmType::Qemu)
    } else if name.contains("vzdump-lxc-")
        || name.contains("vzdump-openvz-")
        || name.contains("backup/ct/")
    {
        Some(VmType::Lxc)
    } else {
        None
    }
}

fn restore(pve: &mut dyn Pve, input: RestoreInput) -> Result<Answer<ActionOutput>, ToolError> {
    let archive = input.archive.as_str();
    let Some((storage, _)) = archive.split_once(':') else {
        return Err(ToolError::field(
            "archive",
            format!(
                "{} is not a backup volume id (storage:backup/...); pve_list_backups lists them",
                quoted(archive, 64)
            ),
        ));
    };
    let Some(vm_type) = archive_type(archive) else {
        return Err(ToolError::field(
            "archive",
            format!(
                "{} is not a vzdump or PBS guest backup (its name says neither qemu nor lxc)",
                quoted(archive, 64)
            ),
        ));
    };
    if !arg::is_storage_id(storage) {
        return Err(ToolError::field(
            "archive",
            format!("{} does not start with a storage id", quoted(archive, 64)),
        ));
    }
    let node = input.node.as_str();
    action::check_node_online(pve, "node", node)?;
    let content = ApiPath::new("nodes")
        .seg(node)
        .lit("storage")
        .seg(storage)
        .lit("content")
        .query("content", "backup");
    let found_archive = fetch::list(pve, &content)?
        .iter()
        .any(|v| pj::text(v.get("volid")).as_deref() == Some(archive));
    if !found_archive {
        return Err(ToolError::Precondition(format!(
            "no backup {} on storage {storage} of node {node}. Nothing was sent. \
             pve_list_backups lists the archives.",
            quoted(archive, 120)
        )));
    }
    let force = input.force == Some(true);
    let vmid = input.vmid.0;
    let mut found = format!("backup {archive} exists on {node}");
    if force {
        let guests = crate::resources::fetch_guests(pve)?;
        if let Some(g) = guests.iter().find(|g| g.vmid == u64::from(vmid)) {
            let existing = Wanted::new(input.vmid, None, Some(g.vm_type)).pick(&guests)?;
            let state = GuestState::read(pve, &existing)?;
            state.refuse_if_locked(&existing)?;
            if state.running {
                return Err(ToolError::Precondition(format!(
                    "{} is running, and a restore over it needs it stopped. Nothing was sent. \
                     Shut it down first.",
                    existing.label()
                )));
            }
            if g.vm_type != vm_type {
                return Err(ToolError::Precondition(format!(
                    "{} is a {}, and the archive holds a {}. Nothing was sent. Restore to a free \
                     vmid instead.",
                    existing.label(),
                    g.vm_type.as_str(),
                    vm_type.as_str()
                )));
            }
            found.push_str(&format!(
                "; {} exists: {}",
                existing.label(),
                state.describe(&existing)
            ));
        }
    } else {
        action::refuse_if_taken(pve, "vmid", vmid).map_err(|e| match e {
            ToolError::Precondition(m) => ToolError::Precondition(format!(
                "{m} To overwrite that guest with the backup instead, pass force: true."
            )),
            other => other,
        })?;
    }
    let path = ApiPath::new("nodes").seg(node).lit(vm_type.as_str());
    let mut request = WriteRequest::new(Method::Post, path).int("vmid", Some(i64::from(vmid)));
    request = match vm_type {
        VmType::Qemu => request.text("archive", Some(archive)),
        VmType::Lxc => request
            .text("ostemplate", Some(archive))
            .flag("restore", Some(true)),
    };
    request = request
        .text("storage", input.storage.as_ref().map(StorageId::as_str))
        .flag("force", input.force)
        .flag("unique", input.unique);
    let target = Target {
        vmid,
        node: node.to_owned(),
        vm_type,
        node_resolved: false,
        vm_type_resolved: true,
    };
    let effect = if force {
        format!(
            "{} is overwritten with the backup: its current disks are destroyed first; this \
             cannot be undone",
            target.label()
        )
    } else {
        format!(
            "a new {} is restored from the backup on {node}, stopped",
            target.label()
        )
    };
    action::run(
        pve,
        &target,
        found,
        Prepared::Act { request, effect },
        input.execution(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:vzdump:104:mcp@pve!ops:";
    const ARCHIVE: &str = "local:backup/vzdump-qemu-104-2026_01_01-00_00_00.vma.zst";

    #[test]
    fn a_backup_never_prunes_unless_asked() {
        let mut pve = FakePve::default()
            .with(
                "/nodes/pve1/qemu/104/status/current",
                json!({"status": "stopped"}),
            )
            .with(
                "/nodes/pve1/storage?content=backup",
                json!([{"storage": "local", "enabled": 1}]),
            )
            .answering("POST /nodes/pve1/vzdump", json!(UPID));
        let out = BACKUP
            .call(
                &mut pve,
                r#"{"vmid": 104, "node": "pve1", "vm_type": "qemu", "storage": "local"}"#,
            )
            .unwrap();
        assert_valid_output(&BACKUP, &out);
        assert_eq!(
            pve.writes,
            ["POST /nodes/pve1/vzdump vmid=104&storage=local&mode=snapshot&compress=zstd&remove=0"]
        );
        let e = BACKUP
            .call(
                &mut pve,
                r#"{"vmid": 104, "node": "pve1", "vm_type": "qemu", "storage": "nfs"}"#,
            )
            .unwrap_err();
        assert!(
            e.message()
                .starts_with("storage: \"nfs\" does not take backups"),
            "{e}"
        );
    }

    #[test]
    fn the_archive_names_the_type_and_a_taken_vmid_needs_force() {
        assert_eq!(archive_type(ARCHIVE), Some(VmType::Qemu));
        assert_eq!(
            archive_type("pbs:backup/ct/200/2026-01-01T00:00:00Z"),
            Some(VmType::Lxc)
        );
        assert_eq!(archive_type("local:iso/x.iso"), None);
        let mut pve = FakePve::default()
            .with("/nodes", json!([{"node": "pve1", "status": "online"}]))
            .with(
                "/nodes/pve1/storage/local/content?content=backup",
                json!([{"volid": ARCHIVE}]),
            )
            .with(
                "/cluster/resources?type=vm",
                json!([{"vmid": 104, "type": "qemu", "node": "pve1", "status": "stopped"}]),
            );
        let e = RESTORE
            .call(
                &mut pve,
                &json!({"archive": ARCHIVE, "vmid": 104, "node": "pve1"}).to_string(),
            )
            .unwrap_err();
        assert!(e.message().contains("force: true"), "{e}");
        let mut pve = pve.answering("POST /nodes/pve1/qemu", json!(UPID));
        let out = RESTORE
            .call(
                &mut pve,
                &json!({"archive": ARCHIVE, "vmid": 150, "node": "pve1", "unique": true})
                    .to_string(),
            )
            .unwrap();
        assert_valid_output(&RESTORE, &out);
        assert_eq!(
            pve.writes,
            [
                "POST /nodes/pve1/qemu vmid=150&archive=local%3Abackup%2Fvzdump-qemu-104-2026_01_01-00_00_00.vma.zst&unique=1"
            ]
        );
    }
}
