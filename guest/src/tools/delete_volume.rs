//! `pve_delete_volume`: `DELETE /nodes/{node}/storage/{storage}/content/
//! {volid}`, a volume removed from a storage for good: an ISO, a
//! template, a backup, or a disk image no guest uses.
//!
//! Reads the storage's content first. Refused without writing: a volume
//! that is not there, a protected one (Proxmox would refuse it after), and
//! a disk image its guest's config still names (Proxmox would delete it
//! and leave the guest with a disk that is gone), naming the guest and
//! the key.

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::arg::volume::VolumeId;
use crate::arg::{NodeName, StorageId};
use crate::error::{ToolError, quoted};
use crate::fetch;
use crate::json as pj;
use crate::node_action::{self, NodeActionOutput};
use crate::path::ApiPath;
use crate::resources;
use crate::route::Route;
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::volume::ContentEntry;
use crate::write::{Method, WriteRequest};

action_input! {
    new:
    /// The volume to delete.
    pub struct Input {
        /// Node to ask (any, if shared)
        node: NodeName,
        /// Storage the volume is on
        storage: StorageId,
        /// Volume id on it, e.g. local:iso/x.iso (pve_list_storage_content)
        volid: VolumeId,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_delete_volume",
    title: "Delete a volume",
    description: "Delete an ISO, template, backup or unused disk image from a storage, for good. \
        Refused if protected or a guest's config still uses it.",
    annotations: Annotations::write(true, false),
    routes: &[Route::new("DELETE", "/nodes/{node}/storage/{storage}/content/{volid}", &[]).once()],
    privileges: [
        "/storage/{storage}": "Datastore.Audit" | "Datastore.AllocateSpace",
        // Backups also go with AllocateSpace when the token may back up
        // their guest (VM.Backup); everything else needs Allocate.
        "/storage/{storage}": "Datastore.Allocate" | "Datastore.AllocateSpace",
    ],
    run: run,
};

/// The content type a volume's name says, where it says one: the list is
/// then asked for that type only.
fn content_of(volume: &VolumeId) -> Option<&'static str> {
    let name = volume.as_str().split_once(':')?.1;
    let dir = name.split_once('/')?.0;
    ["iso", "vztmpl", "backup", "snippets", "import"]
        .into_iter()
        .find(|c| *c == dir)
}

/// The keys of `config` whose volume is `volid` (`scsi0`, `unused1`, ...).
fn keys_using(config: &serde_json::Map<String, serde_json::Value>, volid: &str) -> Vec<String> {
    let mut keys: Vec<String> = config
        .iter()
        .filter(|(_, v)| {
            pj::text(Some(v)).is_some_and(|t| t.split(',').next() == Some(volid))
        })
        .map(|(k, _)| k.clone())
        .collect();
    keys.sort_unstable();
    keys
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    let execution = input.execution();
    let (node, storage, volid) = (input.node.as_str(), input.storage.as_str(), input.volid.as_str());
    if input.volid.storage() != storage {
        return Err(ToolError::field(
            "volid",
            format!(
                "{} is on storage {}, not {storage}; pass storage {} or a volume of {storage}",
                quoted(volid, 80),
                quoted(input.volid.storage(), 64),
                quoted(input.volid.storage(), 64)
            ),
        ));
    }
    let storage_path = ApiPath::new("nodes").seg(node).lit("storage").seg(storage);
    let mut list = storage_path.clone().lit("content");
    if let Some(content) = content_of(&input.volid) {
        list = list.query("content", content);
    }
    let entry = fetch::list(pve, &list)?
        .iter()
        .filter_map(|e| e.as_object().and_then(ContentEntry::read))
        .find(|e| e.volid == volid)
        .ok_or_else(|| {
            ToolError::Precondition(format!(
                "storage {storage} on node {node} has no volume {}. Nothing was sent. \
                 pve_list_storage_content lists its volumes.",
                quoted(volid, 80)
            ))
        })?;
    if entry.protected {
        return Err(ToolError::Precondition(format!(
            "{} is protected, so Proxmox keeps it. Nothing was sent. Lift the protection first \
             (pve_api_request PUT {}/content/{volid} with protected=0) if it really should go.",
            quoted(volid, 80),
            storage_path.full()
        )));
    }
    let mut found = format!(
        "{volid} is on {storage}: {}{}",
        entry.content.as_deref().unwrap_or("volume"),
        entry
            .size_human()
            .map(|s| format!(", {s}"))
            .unwrap_or_default()
    );
    let is_disk = matches!(entry.content.as_deref(), Some("images" | "rootdir"));
    if let (true, Some(owner)) = (is_disk, entry.vmid) {
        let guests = resources::fetch_guests(pve)?;
        if let Some(guest) = guests.iter().find(|g| g.vmid == owner) {
            let config_path = ApiPath::new("nodes")
                .seg(&guest.node)
                .lit(guest.vm_type.as_str())
                .id(owner as u32)
                .lit("config");
            let config = fetch::object(pve, &config_path)?;
            let keys = keys_using(&config, volid);
            let label = format!("{} {owner}", guest.vm_type.label());
            if let Some(key) = keys.first() {
                let fix = if key.starts_with("unused") {
                    format!(
                        "To delete an unused disk, remove it from the config instead: \
                         pve_set_vm_config vmid {owner} with {{\"delete\": \"{key}\"}}"
                    )
                } else {
                    "Detach it from the guest first, or delete the guest (pve_delete_vm)".into()
                };
                return Err(ToolError::Precondition(format!(
                    "{} is still used by {label} as {}. Nothing was sent. {fix}.",
                    quoted(volid, 80),
                    keys.join(", ")
                )));
            }
            found.push_str(&format!("; owned by {label}, whose config does not use it"));
        }
    }
    let request = WriteRequest::new(Method::Delete, storage_path.lit("content").seg(volid));
    let prepared = Prepared::Act {
        request,
        effect: format!("{volid} is deleted from {storage}, for good"),
    };
    node_action::run(pve, node, found, prepared, execution)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::{Value, json};

    const ISO: &str = "local:iso/old.iso";
    const DISK: &str = "local-lvm:vm-100-disk-1";

    fn fake() -> FakePve {
        FakePve::default()
            .with(
                "/nodes/pve1/storage/local/content?content=iso",
                json!([{"volid": ISO, "content": "iso", "format": "iso", "size": 1024}]),
            )
            .with(
                "/nodes/pve1/storage/local/content?content=backup",
                json!([{"volid": "local:backup/vzdump-qemu-100.vma.zst", "content": "backup",
                        "vmid": 100, "protected": 1}]),
            )
            .with(
                "/nodes/pve1/storage/local-lvm/content",
                json!([{"volid": DISK, "content": "images", "vmid": 100, "size": 4096}]),
            )
            .with(
                "/cluster/resources?type=vm",
                json!([{"vmid": 100, "type": "qemu", "node": "pve1", "status": "stopped"}]),
            )
            .answering(
                "DELETE /nodes/pve1/storage/local/content/local%3Aiso%2Fold.iso",
                Value::Null,
            )
    }

    fn call(pve: &mut FakePve, storage: &str, volume: &str) -> Result<crate::tool::Output, ToolError> {
        TOOL.call(
            pve,
            &json!({"node": "pve1", "storage": storage, "volid": volume}).to_string(),
        )
    }

    #[test]
    fn an_iso_is_deleted_with_one_delete_of_its_encoded_volid() {
        let mut pve = fake();
        let out = call(&mut pve, "local", ISO).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(
            pve.writes,
            ["DELETE /nodes/pve1/storage/local/content/local%3Aiso%2Fold.iso "]
        );
        assert_eq!(out.structured["sent"], true);
    }

    #[test]
    fn what_cannot_go_is_refused_before_any_write() {
        for (storage, volume, config, says) in [
            ("local", "local:iso/none.iso", json!({}), "has no volume \"local:iso/none.iso\""),
            ("local", "local:backup/vzdump-qemu-100.vma.zst", json!({}), "is protected"),
            ("nfs", ISO, json!({}), "volid: \"local:iso/old.iso\" is on storage \"local\""),
            ("local-lvm", DISK, json!({"scsi1": format!("{DISK},size=4K")}), "still used by VM 100 as scsi1"),
            ("local-lvm", DISK, json!({"unused0": DISK}), "{\"delete\": \"unused0\"}"),
        ] {
            let mut pve = fake().with("/nodes/pve1/qemu/100/config", config);
            let e = call(&mut pve, storage, volume).unwrap_err();
            assert!(e.message().contains(says), "{volume}: {e}");
            assert!(pve.writes.is_empty());
        }
    }

    #[test]
    fn a_disk_its_guest_no_longer_names_may_go() {
        let mut pve = fake()
            .with("/nodes/pve1/qemu/100/config", json!({"scsi0": "local-lvm:vm-100-disk-0"}))
            .answering(
                "DELETE /nodes/pve1/storage/local-lvm/content/local-lvm%3Avm-100-disk-1",
                Value::Null,
            );
        let out = call(&mut pve, "local-lvm", DISK).unwrap();
        assert!(out.structured["found"].as_str().unwrap().contains("does not use it"));
        assert_eq!(pve.writes.len(), 1);
    }
}
