//! `pve_get_cloudinit`: a VM's cloud-init settings from
//! `GET /nodes/{node}/qemu/{vmid}/cloudinit`, each with the value its
//! drive was generated from and the change waiting for the next
//! generation, and the drive from its config.
//!
//! The generated user, network and meta data (`cloudinit/dump`) is a read
//! the host guards (the `guest-secrets` class: user data carries password
//! hashes and whatever `cicustom` names), so it is not read here.

use serde::Serialize;

use crate::api::Pve;
use crate::cloudinit;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::resolve::{Resolved, guest_input};
use crate::tool::{Answer, Tool, read_tool};

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_cloudinit",
    title: "Get a VM's cloud-init settings",
    description: "A VM's cloud-init settings (user, SSH keys, IP configs, DNS) with changes not \
        yet on its drive, and the drive. Change them with pve_set_cloudinit.",
    reads: [
        "/nodes/{node}/qemu/{vmid}/cloudinit",
        "/nodes/{node}/qemu/{vmid}/config",
        "/cluster/resources?type=vm",
    ],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
    ],
    run: run,
};

guest_input! {
    /// The VM to ask about.
    pub struct Input {}
}

/// A VM's cloud-init settings.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CloudInit {
    /// VM id
    pub vmid: u32,
    /// Node the VM is on
    pub node: String,
    /// The cloud-init drive's key (e.g. ide2); null when the VM has none
    pub drive: Option<String>,
    /// The drive's volume; null when the VM has none
    pub drive_volume: Option<String>,
    /// The settings, as Proxmox lists them (sshkeys decoded, cipassword masked)
    pub settings: Vec<Setting>,
    /// true: some change is not on the drive yet (pve_regenerate_cloudinit, or the next start);
    /// an edited ipconfigN is never listed
    pub pending: bool,
    /// Which of node and vm_type pve-mcp looked up because the call omitted them.
    pub resolved: Resolved,
}

/// One setting.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Setting {
    /// Config key, e.g. ciuser, ipconfig0
    pub key: String,
    /// The value the drive was generated from; null if none
    pub value: Option<String>,
    /// The value waiting for the next generation; null if none
    pub pending: Option<String>,
    /// true: the key is removed at the next generation
    pub delete: bool,
}

fn shown(key: &str, value: Option<String>) -> Option<String> {
    match key {
        "sshkeys" => value.map(|v| cloudinit::decode_keys(&v)),
        // Proxmox masks it already; nothing else ever passes.
        "cipassword" => value.map(|_| crate::format::MASK.to_owned()),
        _ => value,
    }
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<CloudInit>, ToolError> {
    let target = input.wanted().resolve(pve)?;
    cloudinit::refuse_container(&target)?;
    let base = crate::action::guest_path(&target);
    let config = fetch::object(pve, &base.clone().lit("config"))?;
    let drive = cloudinit::drive(&config);
    let settings: Vec<Setting> = fetch::list(pve, &base.lit("cloudinit"))?
        .iter()
        .filter_map(|item| {
            let key = pj::text(item.get("key"))?;
            Some(Setting {
                value: shown(&key, pj::text(item.get("value"))),
                pending: shown(&key, pj::text(item.get("pending"))),
                delete: pj::flag(item.get("delete")),
                key,
            })
        })
        .collect();
    let changes: Vec<&str> = settings
        .iter()
        .filter(|s| cloudinit::is_pending(s.value.as_deref(), s.pending.as_deref(), s.delete))
        .map(|s| s.key.as_str())
        .collect();
    let label = target.label();
    let summary = match (&drive, changes.is_empty()) {
        (None, _) => format!(
            "{label} has no cloud-init drive: its settings reach no guest until one is added \
             (e.g. pve_set_vm_config {{\"ide2\": \"local-lvm:cloudinit\"}})."
        ),
        (Some((key, _)), true) => format!(
            "{label}: {} cloud-init settings, none listed as pending for its drive ({key}); \
             Proxmox never lists an edited ipconfigN.",
            settings.len()
        ),
        (Some((key, _)), false) => format!(
            "{label}: {} cloud-init settings; {} changed since its drive ({key}) was generated: \
             pve_regenerate_cloudinit (or the next start) applies them.",
            settings.len(),
            changes.join(", ")
        ),
    };
    Ok(Answer {
        summary,
        structured: CloudInit {
            vmid: target.vmid,
            node: target.node.clone(),
            pending: !changes.is_empty(),
            drive: drive.as_ref().map(|(k, _)| k.clone()),
            drive_volume: drive.map(|(_, v)| v),
            settings,
            resolved: target.resolved(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    #[test]
    fn settings_show_what_is_pending_with_keys_decoded() {
        let mut pve = FakePve::default()
            .with(
                "/nodes/pve1/qemu/900/config",
                json!({"ide2": "local-lvm:vm-900-cloudinit,media=cdrom", "ciuser": "ubuntu"}),
            )
            .with(
                "/nodes/pve1/qemu/900/cloudinit",
                json!([
                    {"key": "ciuser", "value": "ubuntu"},
                    {"key": "sshkeys", "value": "ssh-ed25519%20AAAA%20a%40b", "pending": "ssh-ed25519%20BBBB%20a%40b"},
                    {"key": "cipassword", "value": "**********"},
                    {"key": "ipconfig0", "value": "ip=dhcp", "delete": 1}
                ]),
            );
        let out = TOOL
            .call(&mut pve, r#"{"vmid": 900, "node": "pve1", "vm_type": "qemu"}"#)
            .unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["drive"], "ide2");
        assert_eq!(s["drive_volume"], "local-lvm:vm-900-cloudinit");
        assert_eq!(s["pending"], true);
        assert_eq!(s["settings"][1]["value"], "ssh-ed25519 AAAA a@b");
        assert_eq!(s["settings"][1]["pending"], "ssh-ed25519 BBBB a@b");
        assert_eq!(s["settings"][3]["delete"], true);
        assert!(out.summary.contains("sshkeys, ipconfig0 changed"), "{}", out.summary);
    }

    #[test]
    fn a_container_is_refused_before_any_request() {
        let mut pve = FakePve::default();
        let e = TOOL
            .call(&mut pve, r#"{"vmid": 200, "node": "pve1", "vm_type": "lxc"}"#)
            .unwrap_err();
        assert!(e.message().starts_with("vmid: CT 200 is a container"), "{e}");
        assert!(pve.requests.is_empty());
    }
}
