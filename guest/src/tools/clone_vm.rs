//! `pve_clone_vm`: `POST /nodes/{node}/{qemu|lxc}/{vmid}/clone`, for VMs
//! and containers (the reference server's is qemu only).
//!
//! The new guest's name is `name` for qemu and `hostname` for lxc. The
//! tool refuses, before writing: a `newid` some guest has, a locked
//! source, a linked clone of a guest that is not a template, a storage for
//! a linked clone, and a full clone of a running container without a
//! snapshot (each is an error PVE would give).

use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::action::{self, ActionOutput, Prepared, action_input};
use crate::api::Pve;
use crate::arg::{DnsName, NodeName, StorageId, VmType, Vmid};
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::resolve::Wanted;
use crate::arg::snapname::SnapName;
use crate::write::{Method, WriteRequest};

action_input! {
    new:
    /// What to clone, and into what.
    pub struct Input {
        /// VM/CT id to copy (often a template)
        pub source_vmid: Vmid,
        /// Id of the new guest; must be free (pve_get_next_vmid)
        pub newid: Vmid,
        /// Node of the source (looked up if omitted)
        pub node: Option<NodeName>,
        /// Looked up if omitted
        pub vm_type: Option<VmType>,
        /// Name of the new guest (a DNS name)
        pub name: Option<DnsName>,
        /// true: copy every disk (default unless a template); false: linked clone
        pub full: Option<bool>,
        /// Node for the new guest (needs shared storage)
        pub target: Option<NodeName>,
        /// Storage for a full clone's disks
        pub storage: Option<StorageId>,
        /// Clone this snapshot's state
        pub snapname: Option<SnapName>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_clone_vm",
    title: "Clone a VM or container",
    description: "Copy a guest (often a template) to a new stopped guest newid; a template gives a \
        linked clone unless full. Returns the clone task.",
    annotations: Annotations::write(false, false),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/{vm_type}/{source_vmid}/clone",
        &[
            Param::arg("newid"),
            // A VM's name, a container's hostname: the one argument.
            Param::arg("name"),
            Param::from("hostname", "name"),
            Param::arg("full"),
            Param::arg("target"),
            Param::arg("storage"),
            Param::arg("snapname"),
        ],
    )],
    privileges: [
        "/vms/{source_vmid}": "VM.Audit",
        "/vms/{source_vmid}": "VM.Clone",
        "/vms/{newid}": "VM.Allocate",
        "/storage/{storage}": "Datastore.AllocateSpace",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    let wanted = Wanted::new(input.source_vmid, input.node.as_ref(), input.vm_type);
    let execution = input.execution();
    action::on_guest(pve, wanted, execution, |pve, source, state| {
        let label = source.label();
        let newid = input.newid.0;
        if newid == source.vmid {
            return Err(ToolError::field(
                "newid",
                "is the source's own id; choose a free id (pve_get_next_vmid finds one)",
            ));
        }
        state.refuse_if_locked(source)?;
        let config = fetch::object(pve, &action::guest_path(source).lit("config"))?;
        let template = pj::flag(config.get("template"));
        let full = input.full.unwrap_or(!template);
        if !full && !template {
            return Err(ToolError::field(
                "full",
                format!(
                    "false asks for a linked clone, which only a template allows, and {label} \
                     is not one; leave full out (or true) for a full copy"
                ),
            ));
        }
        if !full && input.storage.is_some() {
            return Err(ToolError::field(
                "storage",
                "a linked clone stays on the template's storage; pass full: true to choose one",
            ));
        }
        if full && source.vm_type == VmType::Lxc && state.running && input.snapname.is_none() {
            return Err(ToolError::Precondition(format!(
                "{label} is running, and Proxmox copies a running container only from a \
                 snapshot. Nothing was sent. Pass snapname (pve_create_snapshot takes one), or \
                 shut it down first."
            )));
        }
        if let Some(t) = &input.target {
            action::check_node_online(pve, "target", t.as_str())?;
        }
        action::refuse_if_taken(pve, "newid", newid)?;
        let name_key = match source.vm_type {
            VmType::Qemu => "name",
            VmType::Lxc => "hostname",
        };
        let request = WriteRequest::new(Method::Post, action::guest_path(source).lit("clone"))
            .int("newid", Some(i64::from(newid)))
            .text(name_key, input.name.as_ref().map(DnsName::as_str))
            .flag("full", input.full)
            .text("target", input.target.as_ref().map(NodeName::as_str))
            .text("storage", input.storage.as_ref().map(StorageId::as_str))
            .text("snapname", input.snapname.as_ref().map(SnapName::as_str));
        let kind = if full { "full copy" } else { "linked clone" };
        let on = input
            .target
            .as_ref()
            .map_or(source.node.as_str(), NodeName::as_str);
        Ok(Prepared::Act {
            request,
            effect: format!(
                "a new {} {newid} is created on {on} as a {kind} of {label}, stopped; {label} is \
                 locked while it is copied",
                source.vm_type.label()
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

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:vzclone:200:mcp@pve!ops:";

    fn fake(template: bool, status: &str) -> FakePve {
        FakePve::default()
            .with(
                "/nodes/pve1/lxc/200/status/current",
                json!({"status": status}),
            )
            .with(
                "/nodes/pve1/lxc/200/config",
                json!({"template": u8::from(template), "hostname": "tpl"}),
            )
            .with(
                "/cluster/resources?type=vm",
                json!([{"vmid": 200, "type": "lxc", "node": "pve1", "status": status}]),
            )
    }

    fn args(extra: Value) -> String {
        let mut a = json!({"source_vmid": 200, "newid": 150, "node": "pve1", "vm_type": "lxc"});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a.to_string()
    }

    #[test]
    fn a_container_clone_names_the_hostname() {
        let mut pve =
            fake(true, "stopped").answering("POST /nodes/pve1/lxc/200/clone", json!(UPID));
        let out = TOOL
            .call(
                &mut pve,
                &args(json!({"name": "web-02", "full": true, "storage": "local-lvm"})),
            )
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(
            pve.writes,
            ["POST /nodes/pve1/lxc/200/clone newid=150&hostname=web-02&full=1&storage=local-lvm"]
        );
    }

    #[test]
    fn what_would_fail_is_refused_before_writing() {
        for (template, status, extra, expected) in [
            (
                true,
                "stopped",
                json!({"newid": 200}),
                "newid: is the source's own id",
            ),
            (
                false,
                "stopped",
                json!({"full": false}),
                "full: false asks for a linked clone",
            ),
            (
                true,
                "stopped",
                json!({"full": false, "storage": "x1"}),
                "storage: a linked clone",
            ),
            (
                false,
                "running",
                json!({}),
                "copies a running container only from a snapshot",
            ),
            (
                true,
                "stopped",
                json!({"name": "a_b"}),
                "not a valid DNS name",
            ),
        ] {
            let mut pve = fake(template, status);
            let e = TOOL.call(&mut pve, &args(extra)).unwrap_err();
            assert!(e.message().contains(expected), "{expected}: {e}");
            assert!(pve.writes.is_empty());
        }
        let mut pve = fake(true, "stopped").with(
            "/cluster/resources?type=vm",
            json!([
                {"vmid": 200, "type": "lxc", "node": "pve1", "status": "stopped"},
                {"vmid": 150, "type": "qemu", "node": "pve2", "status": "running", "name": "db"},
            ]),
        );
        let e = TOOL.call(&mut pve, &args(json!({}))).unwrap_err();
        assert!(
            e.message()
                .contains("newid 150 is taken: VM 150 (db) is running on node pve2"),
            "{e}"
        );
    }
}
