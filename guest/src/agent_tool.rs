//! What the QEMU guest agent tools (toolset `agent`) share: their input
//! (`vmid`, optional `node`), the check that a VM can answer, and the
//! agent's paths. The tools: what a running VM's agent reports
//! (`pve_guest_agent_info`), a command run in it (`pve_guest_exec`), and a
//! file read from or written to it (`pve_guest_file_read`,
//! `pve_guest_file_write`).
//!
//! QEMU VMs only: a container has no agent, and `pct exec` has no API
//! endpoint. Every tool first finds the guest (refusing a container), then
//! reads `status/current` and refuses, before anything is sent, a VM that
//! is not running or has no agent configured ([`prepare`]).

use serde_json::{Map, Value};

use crate::action;
use crate::api::Pve;
use crate::arg::VmType;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;
use crate::resolve::{Target, Wanted};

/// Declares the input struct of an agent tool: `vmid` and `node` (looked
/// up when missing; there is no `vm_type`, a VM is the only kind), then
/// the tool's own fields; its `wanted` method names the guest.
macro_rules! agent_input {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$fmeta:meta])* $fvis:vis $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, serde::Deserialize)]
        #[cfg_attr(test, derive(schemars::JsonSchema))]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// VM id, e.g. 101
            pub vmid: $crate::arg::Vmid,
            /// Looked up if omitted
            pub node: Option<$crate::arg::NodeName>,
            $($(#[$fmeta])* $fvis $field: $ty,)*
        }

        impl $name {
            /// The guest the call names; its type is always looked up, so
            /// that a container is refused by name.
            pub fn wanted(&self) -> $crate::resolve::Wanted {
                $crate::resolve::Wanted::new(self.vmid, self.node.as_ref(), None)
            }
        }
    };
}
pub(crate) use agent_input;

/// A VM found running with its agent configured.
#[derive(Debug, Clone)]
pub struct Ready {
    /// Where it is.
    pub target: Target,
    /// What was read, e.g. "VM 100 on pve1 is running; agent enabled".
    pub found: String,
}

/// Finds the guest and reads its state: a container, a VM that is not
/// running (or paused) and one without the agent option are refused with
/// the fix, before anything is sent.
pub fn prepare(pve: &mut dyn Pve, wanted: Wanted) -> Result<Ready, ToolError> {
    let target = wanted.resolve(pve)?;
    let vmid = target.vmid;
    if target.vm_type == VmType::Lxc {
        return Err(ToolError::Precondition(format!(
            "VM {vmid} is a container; pct exec has no API endpoint (Proxmox runs it over SSH \
             on the node), so pve-mcp does not offer it: the guest agent tools work on QEMU \
             VMs only. Nothing was sent."
        )));
    }
    let status_path = action::guest_path(&target).lit("status").lit("current");
    let status = fetch::object(pve, &status_path)?;
    let label = target.label();
    let state = pj::text(status.get("status")).unwrap_or_else(|| "unknown".to_owned());
    if state != "running" {
        return Err(ToolError::Precondition(format!(
            "{label} is {}, so its guest agent cannot answer. Nothing was sent. Start it \
             first (pve_start_vm).",
            crate::error::quoted(&state, 32)
        )));
    }
    if pj::text(status.get("qmpstatus")).as_deref() == Some("paused") {
        return Err(ToolError::Precondition(format!(
            "{label} is paused, so its guest agent cannot answer. Nothing was sent. Resume it \
             first (pve_resume_vm)."
        )));
    }
    if !pj::flag(status.get("agent")) {
        return Err(ToolError::Precondition(format!(
            "{label} has no QEMU guest agent configured. Nothing was sent. Enable it with \
             pve_set_vm_config and {{\"agent\": \"1\"}}, then restart the VM (a full stop and \
             start) and install qemu-guest-agent in the guest."
        )));
    }
    let found = format!("{label} on {} is running; agent enabled", target.node);
    Ok(Ready { target, found })
}

/// `/nodes/{node}/qemu/{vmid}/agent/{command}`.
pub fn agent_path(target: &Target, command: &'static str) -> ApiPath {
    action::guest_path(target).lit("agent").lit(command)
}

/// `GET` an agent path, its failures explained, expecting an object.
pub fn get_object(
    pve: &mut dyn Pve,
    target: &Target,
    path: &ApiPath,
) -> Result<Map<String, Value>, ToolError> {
    match pve
        .get(path)
        .map_err(|e| crate::agent::explain(target, e))?
    {
        Value::Object(o) => Ok(o),
        other => Err(fetch::unexpected(path, "an object", &other)),
    }
}

#[cfg(test)]
pub mod testing {
    //! The fixtures the agent tools' tests share.

    use serde_json::json;

    use crate::api::fake::FakePve;

    /// `/cluster/resources` holding VM 100 on pve1 and CT 200.
    pub fn fake() -> FakePve {
        FakePve::default()
            .with(
                "/cluster/resources?type=vm",
                json!([
                    {"vmid": 100, "node": "pve1", "type": "qemu", "status": "running"},
                    {"vmid": 200, "node": "pve1", "type": "lxc", "status": "running"},
                ]),
            )
            .with(
                "/nodes/pve1/qemu/100/status/current",
                json!({"status": "running", "qmpstatus": "running", "agent": 1}),
            )
    }

    /// [`fake`] with VM 100's `status/current` replaced.
    pub fn with_status(status: serde_json::Value) -> FakePve {
        fake().with("/nodes/pve1/qemu/100/status/current", status)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use serde_json::json;

    fn wanted(vmid: u32) -> Wanted {
        Wanted {
            vmid,
            node: None,
            vm_type: None,
        }
    }

    #[test]
    fn a_running_vm_with_its_agent_is_ready() {
        let mut pve = fake();
        let ready = prepare(&mut pve, wanted(100)).unwrap();
        assert_eq!(ready.found, "VM 100 on pve1 is running; agent enabled");
        assert!(pve.writes.is_empty());
    }

    #[test]
    fn containers_stopped_vms_and_vms_without_agent_are_refused() {
        for (mut pve, vmid, needle) in [
            (
                fake(),
                200,
                "VM 200 is a container; pct exec has no API endpoint",
            ),
            (
                with_status(json!({"status": "stopped"})),
                100,
                "pve_start_vm",
            ),
            (
                with_status(json!({"status": "running", "qmpstatus": "paused", "agent": 1})),
                100,
                "pve_resume_vm",
            ),
            (
                with_status(json!({"status": "running"})),
                100,
                "pve_set_vm_config and {\"agent\": \"1\"}",
            ),
        ] {
            let e = prepare(&mut pve, wanted(vmid)).unwrap_err();
            assert!(matches!(e, ToolError::Precondition(_)), "{e:?}");
            assert!(e.message().contains(needle), "{needle}: {e}");
            assert!(e.message().contains("Nothing was sent"), "{e}");
        }
    }
}
