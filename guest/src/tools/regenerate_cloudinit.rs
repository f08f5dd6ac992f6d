//! `pve_regenerate_cloudinit`: `PUT /nodes/{node}/qemu/{vmid}/cloudinit`,
//! a VM's cloud-init drive generated again from its config, so changed
//! settings reach the guest without waiting for its next start.
//!
//! Reads the settings first, to say what changes. Refused without
//! writing: a container, a VM without a cloud-init drive (Proxmox would
//! answer success and do nothing) and a locked VM.

use crate::action::{self, ActionOutput, Prepared, action_input};
use crate::api::Pve;
use crate::cloudinit;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::route::Route;
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    /// The VM whose drive to regenerate.
    pub struct Input {}
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_regenerate_cloudinit",
    title: "Regenerate a VM's cloud-init drive",
    description: "Write a VM's pending cloud-init settings to its drive now; the guest reads them \
        at its next boot.",
    annotations: Annotations::write(false, true),
    routes: &[Route::new("PUT", "/nodes/{node}/qemu/{vmid}/cloudinit", &[])],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.Config.Cloudinit",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    action::on_guest(pve, input.wanted(), execution, |pve, target, state| {
        cloudinit::refuse_container(target)?;
        state.refuse_if_locked(target)?;
        let base = action::guest_path(target);
        let config = fetch::object(pve, &base.clone().lit("config"))?;
        let (drive, volume) = cloudinit::require_drive(target, &config)?;
        let pending: Vec<String> = fetch::list(pve, &base.clone().lit("cloudinit"))?
            .iter()
            .filter(|item| {
                cloudinit::is_pending(
                    pj::text(item.get("value")).as_deref(),
                    pj::text(item.get("pending")).as_deref(),
                    pj::flag(item.get("delete")),
                )
            })
            .filter_map(|item| pj::text(item.get("key")))
            .collect();
        let label = target.label();
        // Proxmox does not list a changed ipconfigN as pending, so an
        // empty list does not prove the drive current: it is regenerated
        // either way.
        let with = if pending.is_empty() {
            "the config as it is (no change listed as pending; an edited ipconfigN never is)"
                .to_owned()
        } else {
            pending.join(", ")
        };
        Ok(Prepared::Act {
            request: WriteRequest::new(Method::Put, base.lit("cloudinit")),
            effect: format!(
                "{label}'s cloud-init drive {drive} ({volume}) is generated again with {with}; \
                 the guest reads it at its next boot"
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

    fn fake(settings: Value) -> FakePve {
        FakePve::default()
            .with("/nodes/pve1/qemu/900/status/current", json!({"status": "running"}))
            .with(
                "/nodes/pve1/qemu/900/config",
                json!({"ide2": "local-lvm:vm-900-cloudinit,media=cdrom"}),
            )
            .with("/nodes/pve1/qemu/900/cloudinit", settings)
            .answering("PUT /nodes/pve1/qemu/900/cloudinit", Value::Null)
    }

    const ARGS: &str = r#"{"vmid": 900, "node": "pve1", "vm_type": "qemu"}"#;

    #[test]
    fn pending_settings_are_written_with_one_put() {
        let mut pve = fake(json!([{"key": "ciuser", "value": "a", "pending": "b"}]));
        let out = TOOL.call(&mut pve, ARGS).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(pve.writes, ["PUT /nodes/pve1/qemu/900/cloudinit "]);
        assert!(out.structured["effect"].as_str().unwrap().contains("with ciuser"));
    }

    #[test]
    fn with_nothing_listed_pending_the_drive_is_still_regenerated() {
        let mut pve = fake(json!([{"key": "ciuser", "value": "a"}]));
        let out = TOOL.call(&mut pve, ARGS).unwrap();
        assert_eq!(pve.writes.len(), 1);
        assert!(out.structured["effect"].as_str().unwrap().contains("never is"));
    }
}
