//! `pve_delete_vm`: `DELETE /nodes/{node}/{qemu|lxc}/{vmid}`, with its
//! parameters in the query string (pveproxy answers a body on a DELETE
//! with 501, which is how the reference server's `purge` fails).
//!
//! Refused without writing while the guest runs, is locked, is protected,
//! or is HA-managed without `purge` (PVE's own pre-checks, answered before
//! a request instead of after).

use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::action::{self, ActionOutput, Prepared, action_input};
use crate::api::Pve;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::write::{Method, WriteRequest};

action_input! {
    /// The guest to delete.
    pub struct Input {
        /// true: also remove it from backup, replication and HA jobs
        pub purge: Option<bool>,
        /// true: also destroy disks with this vmid not in its config
        pub destroy_unreferenced_disks: Option<bool>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_delete_vm",
    title: "Delete a VM or container",
    description: "Delete a stopped guest and all its disks, for good (backups stay); an HA-managed \
        one needs purge. Returns the delete task.",
    annotations: Annotations::write(true, false),
    routes: &[Route::new(
        "DELETE",
        "/nodes/{node}/{vm_type}/{vmid}",
        &[
            Param::arg("purge"),
            Param::from("destroy-unreferenced-disks", "destroy_unreferenced_disks"),
        ],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.Allocate",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    action::on_guest(pve, input.wanted(), execution, |pve, target, state| {
        let label = target.label();
        state.refuse_if_locked(target)?;
        if state.running {
            return Err(ToolError::Precondition(format!(
                "{label} is running. Nothing was sent. Shut it down first (pve_shutdown_vm, or \
                 pve_stop_vm), then delete it."
            )));
        }
        let config = fetch::object(pve, &action::guest_path(target).lit("config"))?;
        if pj::flag(config.get("protection")) {
            return Err(ToolError::Precondition(format!(
                "{label} has protection on, which forbids deleting it. Nothing was sent. Turn \
                 it off first with pve_set_vm_config {{\"config\": {{\"protection\": false}}}} \
                 if it really is to go."
            )));
        }
        if state.ha_managed && input.purge != Some(true) {
            return Err(ToolError::Precondition(format!(
                "{label} is managed by HA. Nothing was sent. Pass purge: true to remove it from \
                 HA (and from backup and replication jobs) as it is deleted."
            )));
        }
        let request = WriteRequest::new(Method::Delete, action::guest_path(target))
            .flag("purge", input.purge)
            .flag(
                "destroy-unreferenced-disks",
                input.destroy_unreferenced_disks,
            );
        let name = pj::text(config.get("name").or(config.get("hostname")))
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        Ok(Prepared::Act {
            request,
            effect: format!(
                "{label}{name} and all its disks are destroyed on {}; this cannot be undone",
                target.node
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

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:qmdestroy:104:mcp@pve!ops:";
    const ARGS: &str = r#"{"vmid": 104, "node": "pve1", "vm_type": "qemu", "purge": true}"#;

    fn fake(status: Value, config: Value) -> FakePve {
        FakePve::default()
            .with("/nodes/pve1/qemu/104/status/current", status)
            .with("/nodes/pve1/qemu/104/config", config)
    }

    #[test]
    fn parameters_go_in_the_query_and_there_is_no_body() {
        let mut pve = fake(json!({"status": "stopped"}), json!({"name": "dev"}))
            .answering("DELETE /nodes/pve1/qemu/104?purge=1", json!(UPID));
        let out = TOOL.call(&mut pve, ARGS).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(pve.writes, ["DELETE /nodes/pve1/qemu/104?purge=1 "]);
        assert!(out.structured["effect"].as_str().unwrap().contains("(dev)"));
    }

    #[test]
    fn running_protected_and_ha_guests_are_refused_before_writing() {
        for (status, config, args, expected) in [
            (json!({"status": "running"}), json!({}), ARGS, "is running"),
            (
                json!({"status": "stopped"}),
                json!({"protection": 1}),
                ARGS,
                "protection on",
            ),
            (
                json!({"status": "stopped", "ha": {"managed": 1}}),
                json!({}),
                r#"{"vmid": 104, "node": "pve1", "vm_type": "qemu"}"#,
                "purge: true",
            ),
        ] {
            let mut pve = fake(status, config);
            let e = TOOL.call(&mut pve, args).unwrap_err();
            assert!(matches!(e, ToolError::Precondition(_)), "{e:?}");
            assert!(e.message().contains(expected), "{e}");
            assert!(pve.writes.is_empty());
        }
    }
}
