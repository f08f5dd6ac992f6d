//! `pve_dump_cloudinit`: the cloud-init data Proxmox generates for a VM
//! (`GET /nodes/{node}/qemu/{vmid}/cloudinit/dump?type=`), as the guest
//! receives it: the user, network or meta data.
//!
//! A read the host guards (the `guest-secrets` class): user data carries
//! a password hash and whatever `cicustom` names, so the tool declares the
//! GET as its route, bound to the call's `type`, and runs only under its
//! own policy rule. It is its own tool rather than an option of
//! pve_get_cloudinit, so reading a VM's settings stays a plain read. A
//! `password:` line's value is replaced by a mask before it leaves.

use serde::Serialize;

use crate::api::Pve;
use crate::arg::choice;
use crate::cloudinit;
use crate::error::ToolError;
use crate::format::MASK;
use crate::resolve::guest_input;
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};

choice! {
    /// Which generated data.
    pub enum Data {
        /// The user data: #cloud-config with user, keys, hostname.
        User = "user",
        /// The network configuration.
        Network = "network",
        /// The meta data: the instance id.
        Meta = "meta",
    }
}

guest_input! {
    /// The VM and which data.
    pub struct Input {
        /// user, network or meta
        #[serde(rename = "type")]
        pub data: Data,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_dump_cloudinit",
    title: "Show a VM's generated cloud-init data",
    description: "The user, network or meta data Proxmox generates for a VM's cloud-init drive, \
        as the guest gets it (password hashes masked).",
    annotations: Annotations::write(true, true),
    routes: &[Route::new(
        "GET",
        "/nodes/{node}/qemu/{vmid}/cloudinit/dump",
        &[Param::from("type", "type")],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
    ],
    run: run,
};

/// A VM's generated cloud-init data.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Dump {
    /// VM id
    pub vmid: u32,
    /// Node the VM is on
    pub node: String,
    /// user, network or meta
    #[serde(rename = "type")]
    pub data: Data,
    /// The data as Proxmox generates it (YAML), password hashes masked
    pub content: String,
}

/// `text` with every `password:` value masked, indentation kept.
fn masked(text: &str) -> String {
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            match trimmed.strip_prefix("password:") {
                Some(value) if !value.trim().is_empty() => {
                    let indent = &line[..line.len() - trimmed.len()];
                    format!("{indent}password: {MASK}")
                }
                _ => line.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<Dump>, ToolError> {
    let target = input.wanted().resolve(pve)?;
    cloudinit::refuse_container(&target)?;
    let kind = input.data.as_str();
    let path = crate::action::guest_path(&target)
        .lit("cloudinit")
        .lit("dump")
        .query("type", kind);
    let data = pve.get(&path)?;
    let Some(text) = data.as_str() else {
        return Err(crate::fetch::unexpected(&path, "a string", &data));
    };
    let content = masked(text);
    let summary = format!(
        "The {kind} data Proxmox generates for {}: {} lines.",
        target.label(),
        content.lines().count()
    );
    Ok(Answer {
        summary,
        structured: Dump {
            vmid: target.vmid,
            node: target.node,
            data: input.data,
            content,
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
    fn the_user_data_comes_with_its_password_masked() {
        let user = "#cloud-config\nhostname: web\nuser: ubuntu\npassword: $5$abc$def\nchpasswd:\n  expire: False\n";
        let mut pve = FakePve::default().with(
            "/nodes/pve1/qemu/900/cloudinit/dump?type=user",
            json!(user),
        );
        let out = TOOL
            .call(&mut pve, r#"{"vmid": 900, "node": "pve1", "vm_type": "qemu", "type": "user"}"#)
            .unwrap();
        assert_valid_output(&TOOL, &out);
        let content = out.structured["content"].as_str().unwrap();
        assert!(content.contains("password: **********"), "{content}");
        assert!(!content.contains("$5$"), "{content}");
        assert!(content.contains("user: ubuntu"), "{content}");
    }

    #[test]
    fn a_container_is_refused_before_any_request() {
        let mut pve = FakePve::default();
        let e = TOOL
            .call(&mut pve, r#"{"vmid": 200, "node": "pve1", "vm_type": "lxc", "type": "meta"}"#)
            .unwrap_err();
        assert!(e.message().contains("is a container"), "{e}");
        assert!(pve.requests.is_empty());
    }
}
