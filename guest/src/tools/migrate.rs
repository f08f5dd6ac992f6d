//! `pve_migrate_vm`: `POST /nodes/{node}/{qemu|lxc}/{vmid}/migrate`.
//!
//! qemu and lxc spell their parameters differently (`targetstorage` vs
//! `target-storage`), and lxc has no `with-local-disks` and no working live
//! migration (its task fails with "lxc live migration is currently not
//! implemented"): a running container moves with `restart`. The tool
//! sends each endpoint what it accepts, and refuses what would fail,
//! before any write: migrating to the node the guest is on, to a node that
//! is not in the cluster or is offline, a running guest without `online`
//! (qemu) or `restart` (lxc), a held lock.

use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::action::{self, ActionOutput, Prepared, action_input};
use crate::api::Pve;
use crate::arg::{Int, NodeName, StorageId, VmType};
use crate::error::ToolError;
use crate::write::{Method, WriteRequest};

action_input! {
    /// The guest to move, and where.
    pub struct Input {
        /// Node to move it to
        pub target: NodeName,
        /// true: migrate a running VM live (required for one)
        pub online: Option<bool>,
        /// true: stop, move and restart a running CT (required for one)
        pub restart: Option<bool>,
        /// Seconds for a CT to shut down (default 180)
        pub restart_timeout: Option<Int<0, 86400>>,
        /// true: also move a VM's local disks
        pub with_local_disks: Option<bool>,
        /// Storage for the disks on the target
        pub targetstorage: Option<StorageId>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_migrate_vm",
    title: "Migrate a VM or container to another node",
    description: "Move a guest to another node; a running VM needs online (live), a running CT \
        restart (downtime). Returns the migration task.",
    annotations: Annotations::write(false, false),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/{vm_type}/{vmid}/migrate",
        &[
            Param::arg("target"),
            // A VM's options.
            Param::arg("online"),
            Param::from("with-local-disks", "with_local_disks"),
            Param::arg("targetstorage"),
            // A container's.
            Param::arg("restart"),
            Param::from("timeout", "restart_timeout"),
            Param::from("target-storage", "targetstorage"),
        ],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.Migrate",
    ],
    run: run,
};

fn lxc_only(field: &str) -> ToolError {
    ToolError::field(
        field,
        "applies to LXC containers only; leave it out for a QEMU VM",
    )
}

fn qemu_only(field: &str, instead: &str) -> ToolError {
    ToolError::field(
        field,
        format!("applies to QEMU VMs only; leave it out for an LXC container{instead}"),
    )
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    action::on_guest(pve, input.wanted(), execution, |pve, target, state| {
        let label = target.label();
        let to = input.target.as_str();
        match target.vm_type {
            VmType::Qemu => {
                if input.restart.is_some() {
                    return Err(lxc_only("restart"));
                }
                if input.restart_timeout.is_some() {
                    return Err(lxc_only("restart_timeout"));
                }
            }
            VmType::Lxc => {
                if input.with_local_disks.is_some() {
                    return Err(qemu_only("with_local_disks", " (its volumes move with it)"));
                }
                if input.online == Some(true) {
                    return Err(qemu_only(
                        "online",
                        "; Proxmox cannot migrate a container live: pass restart: true",
                    ));
                }
            }
        }
        if to == target.node {
            return Err(ToolError::Precondition(format!(
                "{label} is already on node {to}. Nothing was sent. Name another node as target."
            )));
        }
        action::check_node_online(pve, "target", to)?;
        state.refuse_if_locked(target)?;
        if state.running {
            match target.vm_type {
                VmType::Qemu if input.online != Some(true) => {
                    return Err(ToolError::Precondition(format!(
                        "{label} is running. Nothing was sent. Pass online: true to migrate it \
                         live, or shut it down first."
                    )));
                }
                VmType::Lxc if input.restart != Some(true) => {
                    return Err(ToolError::Precondition(format!(
                        "{label} is running, and containers cannot migrate live. Nothing was \
                         sent. Pass restart: true to stop it, move it and start it on {to} \
                         (downtime), or shut it down first."
                    )));
                }
                _ => {}
            }
        }
        let storage = input.targetstorage.as_ref().map(StorageId::as_str);
        let mut request =
            WriteRequest::new(Method::Post, action::guest_path(target).lit("migrate"))
                .text("target", Some(to));
        request = match target.vm_type {
            VmType::Qemu => request
                .flag("online", input.online)
                .flag("with-local-disks", input.with_local_disks)
                .text("targetstorage", storage),
            VmType::Lxc => request
                .flag("restart", input.restart)
                .int("timeout", input.restart_timeout.map(|t| t.0 as i64))
                .text("target-storage", storage),
        };
        let how = match (state.running, target.vm_type) {
            (false, _) => "offline",
            (true, VmType::Qemu) => "live, without stopping it",
            (true, VmType::Lxc) => "by stopping it, moving it and starting it again (downtime)",
        };
        Ok(Prepared::Act {
            request,
            effect: format!("{label} moves from {} to {to} {how}", target.node),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::{Value, json};

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:qmigrate:101:mcp@pve!ops:";

    fn fake(vm_type: &str, status: &str) -> FakePve {
        FakePve::default()
            .with(
                &format!("/nodes/pve1/{vm_type}/101/status/current"),
                json!({"status": status}),
            )
            .with(
                "/nodes",
                json!([
                    {"node": "pve1", "status": "online"},
                    {"node": "pve2", "status": "online"},
                    {"node": "pve3", "status": "offline"},
                ]),
            )
    }

    fn args(vm_type: &str, extra: Value) -> String {
        let mut a = json!({"vmid": 101, "node": "pve1", "vm_type": vm_type, "target": "pve2"});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a.to_string()
    }

    #[test]
    fn each_type_gets_its_own_parameter_names() {
        let mut pve =
            fake("qemu", "running").answering("POST /nodes/pve1/qemu/101/migrate", json!(UPID));
        let out = TOOL
            .call(
                &mut pve,
                &args(
                    "qemu",
                    json!({"online": true, "with_local_disks": true, "targetstorage": "local-lvm"}),
                ),
            )
            .unwrap();
        assert_valid_output(&TOOL, &out);
        let mut pve2 =
            fake("lxc", "running").answering("POST /nodes/pve1/lxc/101/migrate", json!(UPID));
        TOOL.call(
            &mut pve2,
            &args(
                "lxc",
                json!({"restart": true, "restart_timeout": 30, "targetstorage": "local-lvm"}),
            ),
        )
        .unwrap();
        assert_eq!(
            pve.writes,
            [
                "POST /nodes/pve1/qemu/101/migrate target=pve2&online=1&with-local-disks=1&targetstorage=local-lvm"
            ]
        );
        assert_eq!(
            pve2.writes,
            [
                "POST /nodes/pve1/lxc/101/migrate target=pve2&restart=1&timeout=30&target-storage=local-lvm"
            ]
        );
    }

    #[test]
    fn what_would_fail_is_refused_before_writing() {
        for (vm_type, status, extra, expected) in [
            (
                "qemu",
                "stopped",
                json!({"target": "pve1"}),
                "already on node pve1",
            ),
            (
                "qemu",
                "stopped",
                json!({"target": "pve9"}),
                "target: \"pve9\" is not a node",
            ),
            ("qemu", "stopped", json!({"target": "pve3"}), "not online"),
            ("qemu", "running", json!({}), "online: true"),
            ("lxc", "running", json!({}), "restart: true"),
            (
                "lxc",
                "running",
                json!({"online": true}),
                "online: applies to QEMU VMs only",
            ),
            (
                "lxc",
                "stopped",
                json!({"with_local_disks": true}),
                "with_local_disks:",
            ),
            (
                "qemu",
                "stopped",
                json!({"restart": true}),
                "restart: applies to LXC",
            ),
        ] {
            let mut pve = fake(vm_type, status);
            let e = TOOL.call(&mut pve, &args(vm_type, extra)).unwrap_err();
            assert!(e.message().contains(expected), "{expected}: {e}");
            assert!(pve.writes.is_empty());
        }
    }
}
