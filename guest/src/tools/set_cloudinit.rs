//! `pve_set_cloudinit`: a VM's cloud-init settings changed with
//! `PUT /nodes/{node}/qemu/{vmid}/config`, sent with the digest of the
//! config it read, so a change made meanwhile is refused by Proxmox.
//!
//! `sshkeys` goes encoded as Proxmox stores it ([`cloudinit::encode_keys`]);
//! `cipassword` is never taken (a password in a tool call stays in
//! transcripts): the call is refused naming `sshkeys` as the way. Refused
//! without writing: a container, a VM without a cloud-init drive (no
//! setting would reach it) and a locked VM. Settings already as asked are
//! left out; when none is left, nothing is sent.

use crate::action::{self, ActionOutput, Prepared, action_input};
use crate::api::Pve;
use crate::arg::{Flag, Text};
use crate::cloudinit::{self, CiType, IpConfig, SshKeys};
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::route::{DIGEST, Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    /// The VM and its new settings.
    pub struct Input {
        /// User the keys are for
        pub ciuser: Option<Text<64>>,
        /// SSH public keys, one per line
        pub sshkeys: Option<SshKeys>,
        /// NIC 0: ip=dhcp or ip=CIDR,gw=IP
        pub ipconfig0: Option<IpConfig>,
        /// NIC 1, the same way
        pub ipconfig1: Option<IpConfig>,
        /// DNS server IPs
        pub nameserver: Option<Text<256>>,
        /// DNS search domains
        pub searchdomain: Option<Text<256>>,
        /// Drive format
        pub citype: Option<CiType>,
        /// Upgrade packages at first boot
        pub ciupgrade: Option<Flag>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_set_cloudinit",
    title: "Set a VM's cloud-init",
    description: "Set a VM's cloud-init user, SSH keys, IPs or DNS. The guest gets them at its \
        next start, or after pve_regenerate_cloudinit.",
    annotations: Annotations::write(false, true),
    routes: &[Route::new(
        "PUT",
        "/nodes/{node}/qemu/{vmid}/config",
        &[
            Param::arg("ciuser"),
            Param::arg("sshkeys"),
            Param::arg("ipconfig0"),
            Param::arg("ipconfig1"),
            Param::arg("nameserver"),
            Param::arg("searchdomain"),
            Param::arg("citype"),
            Param::arg("ciupgrade"),
            DIGEST,
        ],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.Config.Cloudinit",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    let target_input = input.wanted();
    let text = |t: &Option<Text<64>>| t.as_ref().map(|t| t.as_str().to_owned());
    let wide = |t: &Option<Text<256>>| t.as_ref().map(|t| t.as_str().to_owned());
    // (key, the value to send, as shown in the plan)
    let asked: Vec<(&str, Option<String>, Option<String>)> = vec![
        ("ciuser", text(&input.ciuser), text(&input.ciuser)),
        (
            "sshkeys",
            input.sshkeys.as_ref().map(|k| cloudinit::encode_keys(&k.0)),
            input
                .sshkeys
                .as_ref()
                .map(|k| crate::format::count(k.count(), "key", "keys")),
        ),
        ("ipconfig0", input.ipconfig0.as_ref().map(|c| c.0.clone()), None),
        ("ipconfig1", input.ipconfig1.as_ref().map(|c| c.0.clone()), None),
        ("nameserver", wide(&input.nameserver), None),
        ("searchdomain", wide(&input.searchdomain), None),
        ("citype", input.citype.map(|c| c.as_str().to_owned()), None),
        ("ciupgrade", input.ciupgrade.map(|f| u8::from(f.0).to_string()), None),
    ];
    if asked.iter().all(|(_, v, _)| v.is_none()) {
        return Err(ToolError::InvalidArguments(
            "name at least one setting: ciuser, sshkeys, ipconfig0, ipconfig1, nameserver, \
             searchdomain, citype or ciupgrade"
                .into(),
        ));
    }
    action::on_guest(pve, target_input, execution, |pve, target, state| {
        cloudinit::refuse_container(target)?;
        state.refuse_if_locked(target)?;
        let path = action::guest_path(target).lit("config");
        let config = fetch::object(pve, &path)?;
        let (drive, _) = cloudinit::require_drive(target, &config)?;
        let mut request = WriteRequest::new(Method::Put, path);
        let mut changes = Vec::new();
        for (key, value, shown) in asked {
            let Some(value) = value else { continue };
            let old = pj::text(config.get(key));
            if old.as_deref() == Some(value.as_str()) {
                continue;
            }
            let old = match key {
                "sshkeys" => old.map(|o| {
                    let n = cloudinit::count_keys(&cloudinit::decode_keys(&o));
                    crate::format::count(n, "key", "keys")
                }),
                _ => old,
            };
            let new = shown.unwrap_or_else(|| value.clone());
            changes.push(format!("{key}: {} -> {new}", old.as_deref().unwrap_or("(unset)")));
            request = request.text(key, Some(&value));
        }
        let label = target.label();
        if changes.is_empty() {
            return Ok(Prepared::NothingToDo {
                why: format!("{label} already has every cloud-init setting asked for"),
            });
        }
        request = request.text("digest", pj::text(config.get("digest")).as_deref());
        Ok(Prepared::Act {
            request,
            effect: format!(
                "{label}'s cloud-init: {}; its drive ({drive}) gets them when regenerated \
                 (pve_regenerate_cloudinit) or at the next start",
                changes.join(", ")
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

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB me@host";

    fn fake(config: Value) -> FakePve {
        FakePve::default()
            .with("/nodes/pve1/qemu/900/status/current", json!({"status": "stopped"}))
            .with("/nodes/pve1/qemu/900/config", config)
            .answering("PUT /nodes/pve1/qemu/900/config", Value::Null)
    }

    fn args(extra: Value) -> String {
        let mut a = json!({"vmid": 900, "node": "pve1", "vm_type": "qemu"});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a.to_string()
    }

    fn with_drive() -> Value {
        json!({"ide2": "local-lvm:vm-900-cloudinit,media=cdrom", "ciuser": "ubuntu", "digest": "d9"})
    }

    #[test]
    fn keys_go_encoded_with_the_digest_and_unchanged_settings_stay_out() {
        let mut pve = fake(with_drive());
        let out = TOOL
            .call(
                &mut pve,
                &args(json!({"ciuser": "ubuntu", "sshkeys": KEY, "ipconfig0": "ip=dhcp"})),
            )
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(
            pve.writes,
            ["PUT /nodes/pve1/qemu/900/config sshkeys=ssh-ed25519%2520AAAAC3NzaC1lZDI1NTE5AAAAIB%2520me%2540host&ipconfig0=ip%3Ddhcp&digest=d9"]
        );
        let effect = out.structured["effect"].as_str().unwrap();
        assert!(effect.contains("sshkeys: (unset) -> 1 key"), "{effect}");
        assert!(!effect.contains("ciuser"), "{effect}");
    }

    #[test]
    fn what_cannot_work_is_refused_before_any_write() {
        let mut pve = fake(json!({"ciuser": "x"}));
        let e = TOOL.call(&mut pve, &args(json!({"ciuser": "admin"}))).unwrap_err();
        assert!(e.message().contains("has no cloud-init drive"), "{e}");
        assert!(pve.writes.is_empty());
        let mut pve = FakePve::default();
        let e = TOOL.call(&mut pve, &args(json!({}))).unwrap_err();
        assert!(e.message().contains("name at least one setting"), "{e}");
        let e = TOOL
            .call(&mut pve, &args(json!({"cipassword": "hunter2"})))
            .unwrap_err();
        assert!(e.message().starts_with("cipassword: not taken"), "{e}");
        assert!(e.message().contains("sshkeys"), "{e}");
        assert!(!e.message().contains("hunter2"), "{e}");
        assert!(pve.requests.is_empty());
    }

    #[test]
    fn settings_already_set_send_nothing() {
        let mut pve = fake(with_drive());
        let out = TOOL.call(&mut pve, &args(json!({"ciuser": "ubuntu"}))).unwrap();
        assert_eq!(out.structured["sent"], false);
        assert!(pve.writes.is_empty());
    }
}
