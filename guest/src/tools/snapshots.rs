//! The snapshot tools: `pve_create_snapshot`, `pve_delete_snapshot`,
//! `pve_rollback_snapshot`, for qemu and lxc.
//!
//! Each reads the guest's state and its snapshot list first: creating a
//! name that exists, or deleting or rolling back to one that does not, is
//! refused without writing. `vmstate` exists only for qemu (lxc's endpoint
//! answers 400), so it is refused for a container before any request.


use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::action::{self, ActionOutput, GuestState, Prepared, action_input};
use crate::api::Pve;
use crate::arg::snapname::SnapName;
use crate::arg::{Text, VmType};
use crate::error::{ToolError, listed, quoted};
use crate::resolve::Target;
use crate::write::{Method, WriteRequest};

action_input! {
    /// The snapshot to take.
    pub struct CreateInput {
        /// Name: a letter, then letters, digits, - or _
        pub snapname: SnapName,
        /// Free-text note
        pub description: Option<Text<8192>>,
        /// true: also save a VM's RAM (slow)
        pub vmstate: Option<bool>,
    }
}

action_input! {
    /// The snapshot to delete.
    pub struct DeleteInput {
        /// Snapshot name (pve_list_snapshots)
        pub snapname: SnapName,
    }
}

action_input! {
    /// The snapshot to roll back to.
    pub struct RollbackInput {
        /// Snapshot name (pve_list_snapshots)
        pub snapname: SnapName,
        /// true: start the guest afterwards
        pub start: Option<bool>,
    }
}

/// `pve_create_snapshot`.
pub static CREATE: Tool = write_tool! {
    name: "pve_create_snapshot",
    title: "Take a snapshot",
    description: "Snapshot a guest, e.g. before an upgrade, for pve_rollback_snapshot. Returns the \
        snapshot task.",
    annotations: Annotations::write(false, false),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/{vm_type}/{vmid}/snapshot",
        &[
            Param::arg("snapname"),
            Param::arg("description"),
            Param::arg("vmstate"),
        ],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.Snapshot",
    ],
    run: create,
};

/// `pve_delete_snapshot`.
pub static DELETE: Tool = write_tool! {
    name: "pve_delete_snapshot",
    title: "Delete a snapshot",
    description: "Delete one snapshot of a guest: that restore point is gone for good. Returns the \
        task.",
    annotations: Annotations::write(true, true),
    routes: &[Route::new(
        "DELETE",
        "/nodes/{node}/{vm_type}/{vmid}/snapshot/{snapname}",
        &[],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.Snapshot",
    ],
    run: delete,
};

/// `pve_rollback_snapshot`.
pub static ROLLBACK: Tool = write_tool! {
    name: "pve_rollback_snapshot",
    title: "Roll back to a snapshot",
    description: "Return a guest to a snapshot: everything since is lost for good. Returns the \
        rollback task.",
    annotations: Annotations::write(true, false),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/{vm_type}/{vmid}/snapshot/{snapname}/rollback",
        &[Param::arg("start")],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.Snapshot" | "VM.Snapshot.Rollback",
    ],
    run: rollback,
};

/// Refuses when the guest has no snapshot `name`, listing the ones it has.
fn require_snapshot(pve: &mut dyn Pve, target: &Target, name: &str) -> Result<(), ToolError> {
    let names = action::snapshot_names(pve, target)?;
    if names.iter().any(|n| n == name) {
        return Ok(());
    }
    Err(ToolError::Precondition(format!(
        "{} has no snapshot {}; it has {}. Nothing was sent. pve_list_snapshots lists them.",
        target.label(),
        quoted(name, 64),
        listed(&names)
    )))
}

fn snapshot_path(target: &Target) -> crate::path::ApiPath {
    action::guest_path(target).lit("snapshot")
}

fn create(pve: &mut dyn Pve, input: CreateInput) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    let wanted = input.wanted();
    action::on_guest(pve, wanted, execution, |pve, target, state: &GuestState| {
        if target.vm_type == VmType::Lxc && input.vmstate.is_some() {
            return Err(ToolError::field(
                "vmstate",
                "containers have no RAM state to save; leave vmstate out for an LXC container",
            ));
        }
        state.refuse_if_locked(target)?;
        let name = input.snapname.as_str();
        if action::snapshot_names(pve, target)?.iter().any(|n| n == name) {
            return Err(ToolError::Precondition(format!(
                "{} already has a snapshot {}. Nothing was sent. Choose another name, or delete \
                 the old one with pve_delete_snapshot.",
                target.label(),
                quoted(name, 64)
            )));
        }
        let request = WriteRequest::new(Method::Post, snapshot_path(target))
            .text("snapname", Some(name))
            .text("description", input.description.as_ref().map(Text::as_str))
            .flag("vmstate", input.vmstate);
        let ram = if input.vmstate == Some(true) {
            " with its RAM"
        } else {
            ""
        };
        Ok(Prepared::Act {
            request,
            effect: format!("{} gets a snapshot {name}{ram}", target.label()),
        })
    })
}

fn delete(pve: &mut dyn Pve, input: DeleteInput) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    action::on_guest(pve, input.wanted(), execution, |pve, target, state| {
        state.refuse_if_locked(target)?;
        let name = input.snapname.as_str();
        require_snapshot(pve, target, name)?;
        Ok(Prepared::Act {
            request: WriteRequest::new(Method::Delete, snapshot_path(target).seg(name)),
            effect: format!(
                "snapshot {name} of {} is deleted; it can no longer be rolled back to",
                target.label()
            ),
        })
    })
}

fn rollback(pve: &mut dyn Pve, input: RollbackInput) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    action::on_guest(pve, input.wanted(), execution, |pve, target, state| {
        state.refuse_if_locked(target)?;
        let name = input.snapname.as_str();
        require_snapshot(pve, target, name)?;
        let request = WriteRequest::new(
            Method::Post,
            snapshot_path(target).seg(name).lit("rollback"),
        )
        .flag("start", input.start);
        Ok(Prepared::Act {
            request,
            effect: format!(
                "{} returns to snapshot {name}; everything since it is lost",
                target.label()
            ),
        })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:qmsnapshot:100:mcp@pve!ops:";

    fn fake() -> FakePve {
        FakePve::default()
            .with(
                "/nodes/pve1/qemu/100/status/current",
                json!({"status": "running"}),
            )
            .with(
                "/nodes/pve1/qemu/100/snapshot",
                json!([{"name": "pre-up"}, {"name": "current"}]),
            )
    }

    fn at(extra: Value) -> String {
        let mut args = json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args.to_string()
    }

    #[test]
    fn create_sends_the_name_description_and_vmstate() {
        let mut pve = fake().answering("POST /nodes/pve1/qemu/100/snapshot", json!(UPID));
        let out = CREATE
            .call(
                &mut pve,
                &at(json!({"snapname": "before", "description": "x y", "vmstate": true})),
            )
            .unwrap();
        assert_valid_output(&CREATE, &out);
        assert_eq!(
            pve.writes,
            ["POST /nodes/pve1/qemu/100/snapshot snapname=before&description=x%20y&vmstate=1"]
        );
    }

    #[test]
    fn an_existing_or_missing_name_and_lxc_vmstate_are_refused_before_writing() {
        let mut pve = fake();
        let e = CREATE
            .call(&mut pve, &at(json!({"snapname": "pre-up"})))
            .unwrap_err();
        assert!(e.message().contains("already has a snapshot"), "{e}");
        let e = DELETE
            .call(&mut pve, &at(json!({"snapname": "nope"})))
            .unwrap_err();
        assert!(
            e.message()
                .contains("has no snapshot \"nope\"; it has \"pre-up\""),
            "{e}"
        );
        let e = ROLLBACK
            .call(&mut pve, &at(json!({"snapname": "nope"})))
            .unwrap_err();
        assert!(matches!(e, ToolError::Precondition(_)), "{e:?}");
        let mut pve = FakePve::default().with(
            "/nodes/pve1/lxc/200/status/current",
            json!({"status": "stopped"}),
        );
        let e = CREATE
            .call(
                &mut pve,
                r#"{"vmid": 200, "node": "pve1", "vm_type": "lxc", "snapname": "ab", "vmstate": false}"#,
            )
            .unwrap_err();
        assert!(e.message().starts_with("vmstate:"), "{e}");
        assert!(pve.writes.is_empty());
    }

    #[test]
    fn delete_puts_nothing_in_a_body_and_rollback_may_start() {
        let mut pve = fake()
            .answering("DELETE /nodes/pve1/qemu/100/snapshot/pre-up", json!(UPID))
            .answering(
                "POST /nodes/pve1/qemu/100/snapshot/pre-up/rollback",
                json!(UPID),
            );
        DELETE
            .call(&mut pve, &at(json!({"snapname": "pre-up"})))
            .unwrap();
        ROLLBACK
            .call(&mut pve, &at(json!({"snapname": "pre-up", "start": true})))
            .unwrap();
        assert_eq!(
            pve.writes,
            [
                "DELETE /nodes/pve1/qemu/100/snapshot/pre-up ",
                "POST /nodes/pve1/qemu/100/snapshot/pre-up/rollback start=1"
            ]
        );
    }
}
