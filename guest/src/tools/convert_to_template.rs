//! `pve_convert_to_template`: `POST /nodes/{node}/{qemu|lxc}/{vmid}/template`,
//! a stopped guest made a template (for pve_clone_vm), for good.
//!
//! Refused without writing, as Proxmox would refuse it after: a guest that
//! is already a template, one that runs, one that is locked, and a
//! container with snapshots.

use crate::action::{self, ActionOutput, Prepared, action_input};
use crate::api::Pve;
use crate::arg::VmType;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::route::Route;
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    /// The guest to make a template.
    pub struct Input {}
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_convert_to_template",
    title: "Convert a guest to a template",
    description: "Make a stopped VM or container a template to clone from (pve_clone_vm). Cannot \
        be undone: a template no longer starts.",
    annotations: Annotations::write(true, false),
    routes: &[Route::new("POST", "/nodes/{node}/{vm_type}/{vmid}/template", &[])],
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
        let config = fetch::object(pve, &action::guest_path(target).lit("config"))?;
        if pj::flag(config.get("template")) {
            return Ok(Prepared::NothingToDo {
                why: format!("{label} is already a template"),
            });
        }
        if state.running {
            return Err(ToolError::Precondition(format!(
                "{label} is running, and a running guest cannot become a template. Nothing was \
                 sent. Shut it down first (pve_shutdown_vm), then convert it."
            )));
        }
        if target.vm_type == VmType::Lxc {
            let names = action::snapshot_names(pve, target)?;
            if !names.is_empty() {
                return Err(ToolError::Precondition(format!(
                    "{label} has {} ({}), and Proxmox cannot make a container with snapshots a \
                     template. Nothing was sent. Delete them first (pve_delete_snapshot), then \
                     convert it.",
                    crate::format::count(names.len(), "snapshot", "snapshots"),
                    names.join(", ")
                )));
            }
        }
        let name = pj::text(config.get("name").or(config.get("hostname")))
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        Ok(Prepared::Act {
            request: WriteRequest::new(Method::Post, action::guest_path(target).lit("template")),
            effect: format!(
                "{label}{name} becomes a template on {}: it can be cloned but never started \
                 again; this cannot be undone",
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

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:qmtemplate:104:mcp@pve!ops:";

    fn fake(vm_type: &str, status: Value, config: Value) -> FakePve {
        let base = format!("/nodes/pve1/{vm_type}/104");
        FakePve::default()
            .with(&format!("{base}/status/current"), status)
            .with(&format!("{base}/config"), config)
            .with(&format!("{base}/snapshot"), json!([{"name": "current"}]))
            .answering(&format!("POST {base}/template"), json!(UPID))
            .with(
                "/nodes/pve1/tasks/UPID%3Apve1%3A0000A1B2%3A00C3D4E5%3A67E12345%3Aqmtemplate%3A104%3Amcp%40pve%21ops%3A/status",
                json!({"status": "stopped", "exitstatus": "OK"}),
            )
    }

    fn args(vm_type: &str) -> String {
        json!({"vmid": 104, "node": "pve1", "vm_type": vm_type}).to_string()
    }

    #[test]
    fn a_stopped_vm_is_converted_with_one_post() {
        let mut pve = fake("qemu", json!({"status": "stopped"}), json!({"name": "dev"}));
        let out = TOOL.call(&mut pve, &args("qemu")).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(pve.writes, ["POST /nodes/pve1/qemu/104/template "]);
        assert_eq!(out.structured["task"]["upid"], UPID);
        assert!(out.structured["effect"].as_str().unwrap().contains("cannot be undone"));
    }

    #[test]
    fn a_template_is_nothing_to_do_and_a_running_guest_is_refused() {
        let mut pve = fake("qemu", json!({"status": "stopped"}), json!({"template": 1}));
        let out = TOOL.call(&mut pve, &args("qemu")).unwrap();
        assert_eq!(out.structured["sent"], false);
        assert!(out.summary.contains("already a template"), "{}", out.summary);
        let mut pve = fake("qemu", json!({"status": "running"}), json!({}));
        let e = TOOL.call(&mut pve, &args("qemu")).unwrap_err();
        assert!(e.message().contains("Shut it down first"), "{e}");
        assert!(pve.writes.is_empty());
    }

    #[test]
    fn a_container_with_snapshots_is_refused_naming_them() {
        let mut pve = fake("lxc", json!({"status": "stopped"}), json!({"hostname": "ci"}))
            .with(
                "/nodes/pve1/lxc/104/snapshot",
                json!([{"name": "before"}, {"name": "current"}]),
            );
        let e = TOOL.call(&mut pve, &args("lxc")).unwrap_err();
        assert!(e.message().contains("1 snapshot (before)"), "{e}");
        assert!(e.message().contains("Nothing was sent"), "{e}");
        assert!(pve.writes.is_empty());
    }
}
