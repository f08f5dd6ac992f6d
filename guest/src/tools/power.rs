//! The power tools: `pve_start_vm`, `pve_shutdown_vm`, `pve_stop_vm`,
//! `pve_reboot_vm`, `pve_suspend_vm`, `pve_resume_vm`, each a
//! `POST /nodes/{node}/{qemu|lxc}/{vmid}/status/<action>` that starts a
//! task.
//!
//! Each reads `status/current` first and answers without writing when the
//! action cannot work (a lock, a guest that is not running) or has nothing
//! to do (starting a running guest). Parameters are the endpoint's own,
//! with Proxmox's spelling (`forceStop`); root-only ones (`skiplock`,
//! `keepActive`) are not offered, since a token can never use them.

use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::action::{self, ActionOutput, GuestState, Prepared, action_input};
use crate::api::Pve;
use crate::arg::{Int, VmType};
use crate::error::ToolError;
use crate::resolve::Target;
use crate::write::{Method, WriteRequest};

/// The six actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Start,
    Shutdown,
    Stop,
    Reboot,
    Suspend,
    Resume,
}

impl Action {
    /// The endpoint's last segment.
    fn segment(self) -> &'static str {
        match self {
            Action::Start => "start",
            Action::Shutdown => "shutdown",
            Action::Stop => "stop",
            Action::Reboot => "reboot",
            Action::Suspend => "suspend",
            Action::Resume => "resume",
        }
    }
}

/// Shutdown's own parameters.
#[derive(Debug, Clone, Copy, Default)]
struct ShutdownParams {
    timeout: Option<u64>,
    force_stop: Option<bool>,
}

action_input! {
    /// The guest to act on.
    pub struct Input {
    }
}

action_input! {
    /// The guest to shut down, and how.
    pub struct ShutdownInput {
        /// Seconds to wait for the shutdown
        pub timeout: Option<Int<0, 86400>>,
        /// true: stop hard after timeout
        pub force_stop: Option<bool>,
    }
}

/// `pve_start_vm`.
pub static START: Tool = write_tool! {
    name: "pve_start_vm",
    title: "Start a VM or container",
    description: "Start a stopped guest, or resume one hibernated to disk. Returns the start task; \
        sends nothing if it already runs.",
    annotations: Annotations::write(false, true),
    routes: &[Route::new("POST", "/nodes/{node}/{vm_type}/{vmid}/status/start", &[])],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.PowerMgmt",
    ],
    run: start,
};

/// `pve_shutdown_vm`.
pub static SHUTDOWN: Tool = write_tool! {
    name: "pve_shutdown_vm",
    title: "Shut down a VM or container",
    description: "Shut a running guest down cleanly; with force_stop, stop it hard after timeout. \
        Returns the shutdown task.",
    annotations: Annotations::write(false, true),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/{vm_type}/{vmid}/status/shutdown",
        &[Param::arg("timeout"), Param::from("forceStop", "force_stop")],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.PowerMgmt",
    ],
    run: shutdown,
};

/// `pve_stop_vm`.
pub static STOP: Tool = write_tool! {
    name: "pve_stop_vm",
    title: "Stop a VM or container at once",
    description: "Power a guest off at once; unsaved data may be lost. Prefer pve_shutdown_vm; use \
        this when the guest does not respond.",
    annotations: Annotations::write(false, true),
    routes: &[Route::new("POST", "/nodes/{node}/{vm_type}/{vmid}/status/stop", &[])],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.PowerMgmt",
    ],
    run: stop,
};

/// `pve_reboot_vm`.
pub static REBOOT: Tool = write_tool! {
    name: "pve_reboot_vm",
    title: "Reboot a VM or container",
    description: "Reboot a running guest cleanly; a VM applies pending config changes. Returns the \
        reboot task.",
    annotations: Annotations::write(false, false),
    routes: &[Route::new("POST", "/nodes/{node}/{vm_type}/{vmid}/status/reboot", &[])],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.PowerMgmt",
    ],
    run: reboot,
};

/// `pve_suspend_vm`.
pub static SUSPEND: Tool = write_tool! {
    name: "pve_suspend_vm",
    title: "Suspend (pause) a VM or container",
    description: "Pause a running VM's CPUs (pve_resume_vm continues it); a container is \
        checkpointed and stopped. Returns the task.",
    annotations: Annotations::write(false, true),
    routes: &[Route::new("POST", "/nodes/{node}/{vm_type}/{vmid}/status/suspend", &[])],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.PowerMgmt",
    ],
    run: suspend,
};

/// `pve_resume_vm`.
pub static RESUME: Tool = write_tool! {
    name: "pve_resume_vm",
    title: "Resume a paused VM or container",
    description: "Continue a guest paused by pve_suspend_vm (one hibernated to disk: \
        pve_start_vm). Returns the resume task.",
    annotations: Annotations::write(false, true),
    routes: &[Route::new("POST", "/nodes/{node}/{vm_type}/{vmid}/status/resume", &[])],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.PowerMgmt",
    ],
    run: resume,
};

fn start(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    power(
        pve,
        &input.wanted(),
        input.execution(),
        Action::Start,
        ShutdownParams::default(),
    )
}

fn shutdown(pve: &mut dyn Pve, input: ShutdownInput) -> Result<Answer<ActionOutput>, ToolError> {
    let params = ShutdownParams {
        timeout: input.timeout.map(|t| t.0),
        force_stop: input.force_stop,
    };
    power(
        pve,
        &input.wanted(),
        input.execution(),
        Action::Shutdown,
        params,
    )
}

fn stop(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    power(
        pve,
        &input.wanted(),
        input.execution(),
        Action::Stop,
        ShutdownParams::default(),
    )
}

fn reboot(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    power(
        pve,
        &input.wanted(),
        input.execution(),
        Action::Reboot,
        ShutdownParams::default(),
    )
}

fn suspend(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    power(
        pve,
        &input.wanted(),
        input.execution(),
        Action::Suspend,
        ShutdownParams::default(),
    )
}

fn resume(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    power(
        pve,
        &input.wanted(),
        input.execution(),
        Action::Resume,
        ShutdownParams::default(),
    )
}

fn power(
    pve: &mut dyn Pve,
    wanted: &crate::resolve::Wanted,
    execution: action::Execution,
    action: Action,
    params: ShutdownParams,
) -> Result<Answer<ActionOutput>, ToolError> {
    action::on_guest(pve, wanted.clone(), execution, |_, target, state| {
        decide(target, state, action, params)
    })
}

/// The preconditions, from the states PVE's own pre-checks and task
/// errors name (see the shared reference, power tools).
fn decide(
    target: &Target,
    state: &GuestState,
    action: Action,
    params: ShutdownParams,
) -> Result<Prepared, ToolError> {
    let label = target.label();
    let not_running = || {
        ToolError::Precondition(format!(
            "{label} is not running, so it cannot be {}. Nothing was sent. Start it with \
             pve_start_vm.",
            match action {
                Action::Reboot => "rebooted",
                Action::Suspend => "suspended",
                _ => "resumed",
            }
        ))
    };
    let nothing = |why: String| Ok(Prepared::NothingToDo { why });
    // Start is how a VM hibernated to disk comes back: its `suspended`
    // lock is the one start clears.
    let start_resumes_hibernation =
        action == Action::Start && state.lock.as_deref() == Some("suspended");
    if !start_resumes_hibernation {
        state.refuse_if_locked(target)?;
    }
    let effect = match action {
        Action::Start if state.paused => {
            return Err(ToolError::Precondition(format!(
                "{label} is paused, not stopped. Nothing was sent. Continue it with \
                 pve_resume_vm."
            )));
        }
        Action::Start if state.running => return nothing(format!("{label} is already running")),
        Action::Start if start_resumes_hibernation => {
            format!(
                "{label} resumes from the state it was hibernated to on {}",
                target.node
            )
        }
        Action::Start => format!("{label} starts on {}", target.node),
        Action::Shutdown | Action::Stop if !state.running => {
            return nothing(format!("{label} is already stopped"));
        }
        Action::Shutdown if state.paused && params.force_stop != Some(true) => {
            return Err(ToolError::Precondition(format!(
                "{label} is paused, and Proxmox cannot shut down a paused VM. Nothing was sent. \
                 Resume it with pve_resume_vm first, or pass force_stop: true to stop it hard."
            )));
        }
        Action::Shutdown => match params.force_stop {
            Some(true) => format!(
                "{label} shuts down cleanly; if it is still up after the timeout it is stopped \
                 hard"
            ),
            _ => format!(
                "{label} shuts down cleanly; if it is still up after the timeout the task fails \
                 and the guest keeps running"
            ),
        },
        Action::Stop => format!(
            "{label} is powered off at once, like pulling the plug; unsaved data in the guest \
             may be lost"
        ),
        Action::Reboot if !state.running => return Err(not_running()),
        Action::Reboot if state.paused => {
            return Err(ToolError::Precondition(format!(
                "{label} is paused, and Proxmox cannot reboot a paused VM. Nothing was sent. \
                 Resume it with pve_resume_vm first."
            )));
        }
        Action::Reboot => format!("{label} shuts down cleanly and starts again"),
        Action::Suspend if !state.running => return Err(not_running()),
        Action::Suspend if state.paused => return nothing(format!("{label} is already paused")),
        Action::Suspend => match target.vm_type {
            VmType::Qemu => format!("{label}'s CPUs pause; its memory stays on the host"),
            VmType::Lxc => {
                format!("{label} is checkpointed with CRIU (experimental in Proxmox) and stops")
            }
        },
        Action::Resume => match target.vm_type {
            VmType::Qemu if !state.running => return Err(not_running()),
            VmType::Qemu if !state.paused => {
                return nothing(format!("{label} is already running"));
            }
            VmType::Qemu => format!("{label}'s CPUs continue"),
            VmType::Lxc if state.running => {
                return nothing(format!("{label} is already running"));
            }
            VmType::Lxc => format!("{label} is restored from its CRIU checkpoint"),
        },
    };
    let path = action::guest_path(target)
        .lit("status")
        .lit(action.segment());
    let mut request = WriteRequest::new(Method::Post, path);
    if action == Action::Shutdown {
        request = request
            .int("timeout", params.timeout.map(|t| t as i64))
            .flag("forceStop", params.force_stop);
    }
    Ok(Prepared::Act { request, effect })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::Output;
    use crate::tool::testing::assert_valid_output;
    use serde_json::{Value, json};

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:qmstart:100:mcp@pve!ops:";

    fn fake(status: Value) -> FakePve {
        FakePve::default().with("/nodes/pve1/qemu/100/status/current", status)
    }

    fn call(tool: &Tool, pve: &mut FakePve, args: Value) -> Result<Output, ToolError> {
        tool.call(pve, &args.to_string())
    }

    const AT: fn() -> Value = || json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"});

    fn with(extra: Value) -> Value {
        let mut args = AT();
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    }

    #[test]
    fn start_sends_one_post_and_reports_the_task() {
        let mut pve = fake(json!({"status": "stopped", "qmpstatus": "stopped"}))
            .answering("POST /nodes/pve1/qemu/100/status/start", json!(UPID));
        let out = call(&START, &mut pve, AT()).unwrap();
        assert_valid_output(&START, &out);
        assert_eq!(pve.writes, vec!["POST /nodes/pve1/qemu/100/status/start "]);
        let s = &out.structured;
        assert_eq!(s["sent"], true);
        assert_eq!(s["task"]["upid"], UPID);
        assert_eq!(s["task"]["type"], "qmstart");
        assert_eq!(s["task"]["ha"], false);
        assert_eq!(s["task"]["end"], Value::Null);
        assert!(out.summary.contains("pve_wait_task"), "{}", out.summary);
    }

    #[test]
    fn a_dry_run_sends_nothing_and_returns_the_plan() {
        let mut pve = fake(json!({"status": "running", "qmpstatus": "running"}));
        let out = call(
            &SHUTDOWN,
            &mut pve,
            with(json!({"dry_run": true, "timeout": 30, "force_stop": true})),
        )
        .unwrap();
        assert_valid_output(&SHUTDOWN, &out);
        assert!(pve.writes.is_empty());
        let s = &out.structured;
        assert_eq!(s["dry_run"], true);
        assert_eq!(s["sent"], false);
        assert_eq!(
            s["requests"],
            json!([{
                "method": "POST",
                "path": "/api2/json/nodes/pve1/qemu/100/status/shutdown",
                "params": {"timeout": 30, "forceStop": 1},
            }])
        );
        assert!(s["found"].as_str().unwrap().contains("running"), "{s}");
        assert!(
            out.summary.starts_with("Dry run, nothing was sent."),
            "{}",
            out.summary
        );
    }

    #[test]
    fn nothing_to_do_sends_nothing() {
        for (tool, status) in [
            (&START, json!({"status": "running", "qmpstatus": "running"})),
            (&STOP, json!({"status": "stopped"})),
            (&SHUTDOWN, json!({"status": "stopped"})),
            (
                &SUSPEND,
                json!({"status": "running", "qmpstatus": "paused"}),
            ),
            (
                &RESUME,
                json!({"status": "running", "qmpstatus": "running"}),
            ),
        ] {
            let mut pve = fake(status);
            let out = call(tool, &mut pve, AT()).unwrap();
            assert_valid_output(tool, &out);
            assert!(pve.writes.is_empty(), "{}", tool.name);
            assert_eq!(out.structured["sent"], false);
            assert_eq!(out.structured["requests"], json!([]));
            assert!(out.summary.contains("nothing was sent"), "{}", out.summary);
        }
    }

    #[test]
    fn a_held_lock_is_named_and_nothing_is_sent() {
        for tool in [&START, &SHUTDOWN, &STOP, &REBOOT, &SUSPEND, &RESUME] {
            let mut pve = fake(json!({"status": "running", "lock": "backup"}));
            let e = call(tool, &mut pve, AT()).unwrap_err();
            assert!(
                matches!(e, ToolError::Precondition(_)),
                "{}: {e:?}",
                tool.name
            );
            assert!(e.message().contains("locked (backup)"), "{e}");
            assert!(e.message().contains("a backup is running"), "{e}");
            assert!(pve.writes.is_empty());
        }
    }

    #[test]
    fn start_clears_a_hibernation_lock_and_paused_guests_are_pointed_at_resume() {
        let mut pve = fake(json!({"status": "stopped", "lock": "suspended"}))
            .answering("POST /nodes/pve1/qemu/100/status/start", json!(UPID));
        let out = call(&START, &mut pve, AT()).unwrap();
        assert!(
            out.structured["effect"]
                .as_str()
                .unwrap()
                .contains("hibernated")
        );
        let mut pve = fake(json!({"status": "running", "qmpstatus": "paused"}));
        let e = call(&START, &mut pve, AT()).unwrap_err();
        assert!(e.message().contains("pve_resume_vm"), "{e}");
        let mut pve = fake(json!({"status": "stopped"}));
        let e = call(&REBOOT, &mut pve, AT()).unwrap_err();
        assert!(e.message().contains("not running") && e.message().contains("pve_start_vm"));
    }

    #[test]
    fn a_lxc_shutdown_uses_the_lxc_path_and_ha_tasks_say_so() {
        let upid = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:hastop:200:mcp@pve!ops:";
        let mut pve = FakePve::default()
            .with(
                "/nodes/pve1/lxc/200/status/current",
                json!({"status": "running", "ha": {"managed": 1, "state": "started"}}),
            )
            .answering("POST /nodes/pve1/lxc/200/status/shutdown", json!(upid));
        let out = call(
            &SHUTDOWN,
            &mut pve,
            json!({"vmid": 200, "node": "pve1", "vm_type": "lxc", "force_stop": false}),
        )
        .unwrap();
        assert_eq!(
            pve.writes,
            vec!["POST /nodes/pve1/lxc/200/status/shutdown forceStop=0"]
        );
        assert_eq!(out.structured["task"]["ha"], true);
        assert!(out.summary.contains("HA manager"), "{}", out.summary);
    }

    #[test]
    fn waiting_reports_how_the_task_ended() {
        let status = "/nodes/pve1/tasks/UPID%3Apve1%3A0000A1B2%3A00C3D4E5%3A67E12345%3Aqmstart%3A100%3Amcp%40pve%21ops%3A/status";
        let log = "/nodes/pve1/tasks/UPID%3Apve1%3A0000A1B2%3A00C3D4E5%3A67E12345%3Aqmstart%3A100%3Amcp%40pve%21ops%3A/log?start=0&limit=500";
        let mut pve = fake(json!({"status": "stopped"}))
            .answering("POST /nodes/pve1/qemu/100/status/start", json!(UPID))
            .with(status, json!({"status": "stopped", "exitstatus": "OK"}))
            .with(log, json!([{"n": 1, "t": "TASK OK"}]));
        let out = call(&START, &mut pve, with(json!({"wait": true}))).unwrap();
        assert_valid_output(&START, &out);
        assert_eq!(out.structured["task"]["end"]["outcome"], "ok");
        assert!(out.summary.contains("ended OK"), "{}", out.summary);
    }

    #[test]
    fn a_failure_to_follow_a_started_task_is_part_of_the_answer() {
        let status = "/nodes/pve1/tasks/UPID%3Apve1%3A0000A1B2%3A00C3D4E5%3A67E12345%3Aqmstart%3A100%3Amcp%40pve%21ops%3A/status";
        let mut pve = fake(json!({"status": "stopped"}))
            .answering("POST /nodes/pve1/qemu/100/status/start", json!(UPID))
            .failing(status, ToolError::Upstream("node unreachable (595)".into()));
        let out = call(&START, &mut pve, with(json!({"wait": true}))).unwrap();
        assert_valid_output(&START, &out);
        assert_eq!(out.structured["sent"], true);
        assert_eq!(out.structured["task"]["upid"], UPID);
        assert_eq!(
            out.structured["task"]["wait_error"],
            "node unreachable (595)"
        );
        assert!(
            out.summary.contains("Do not send the action again"),
            "{}",
            out.summary
        );
    }
}
