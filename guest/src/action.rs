//! What every write tool shares: its common arguments (`dry_run`, `wait`,
//! `wait_timeout`, `confirm`), the guest's state read before writing, the
//! plan, and running it.
//!
//! A write tool reads first, then decides ([`Prepared`]): the action cannot
//! work (a [`ToolError::Precondition`] naming the state and the next
//! step), it has nothing to do, or here is the one request to send. A dry
//! run stops there and returns the plan; otherwise the request is sent and,
//! when it started a task, the call may wait for it. Either way the answer
//! has the same shape ([`ActionOutput`]), so an agent reads a plan and a
//! result alike.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::api::Pve;
use crate::arg::VmType;
use crate::error::{ToolError, listed, quoted};
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;
use crate::resolve::{Resolved, Target};
use crate::task::{self, Outcome, Upid};
use crate::task_wait::{self, Progress, TaskEnd};
use crate::tool::Answer;
use crate::write::{PlannedRequest, WriteRequest};

/// Declares the input struct of a write tool, with the fields every write
/// tool takes appended (`dry_run`, `wait`, `wait_timeout`, `confirm`) and an
/// `execution` method that reads them.
///
/// The plain form is about one existing guest: `vmid`, `node` and
/// `vm_type` come first (as `resolve::guest_input!`). The `new:` form
/// declares every field itself, for tools that make a guest or name it
/// differently (`source_vmid`). The `plan:` form does too, for a write
/// Proxmox makes at once without a task (a firewall rule, an HA
/// resource): no `wait` or `wait_timeout`, which would only cost bytes.
macro_rules! action_input {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$fmeta:meta])* $fvis:vis $field:ident: $ty:ty,)*
        }
    ) => {
        $crate::resolve::guest_input! {
            $(#[$meta])*
            pub struct $name {
                $($(#[$fmeta])* $fvis $field: $ty,)*
                /// Plan only, send nothing
                #[serde(default)]
                pub dry_run: $crate::arg::Flag,
                /// Wait for the task
                #[serde(default)]
                pub wait: $crate::arg::Flag,
                /// Seconds to wait (default 120)
                pub wait_timeout: Option<$crate::arg::Int<1, 86400>>,
                /// Accepted for compatibility with proxmox-mcp and ignored: it grants
                /// nothing (the server's policy decides). Not advertised: see
                /// [`UNADVERTISED`](crate::action::UNADVERTISED).
                #[serde(default)]
                pub confirm: $crate::arg::Flag,
            }
        }
        $crate::action::action_input!(@execution $name);
    };
    (
        new:
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
            $($(#[$fmeta])* $fvis $field: $ty,)*
            /// Plan only, send nothing
            #[serde(default)]
            pub dry_run: $crate::arg::Flag,
            /// Wait for the task
            #[serde(default)]
            pub wait: $crate::arg::Flag,
            /// Seconds to wait (default 120)
            pub wait_timeout: Option<$crate::arg::Int<1, 86400>>,
            /// Accepted for compatibility with proxmox-mcp and ignored: it grants
            /// nothing (the server's policy decides). Not advertised: see
            /// [`UNADVERTISED`](crate::action::UNADVERTISED).
            #[serde(default)]
            pub confirm: $crate::arg::Flag,
        }
        $crate::action::action_input!(@execution $name);
    };
    (
        plan:
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
            $($(#[$fmeta])* $fvis $field: $ty,)*
            /// Plan only, send nothing
            #[serde(default)]
            pub dry_run: $crate::arg::Flag,
            /// Accepted for compatibility with proxmox-mcp and ignored: it grants
            /// nothing (the server's policy decides). Not advertised: see
            /// [`UNADVERTISED`](crate::action::UNADVERTISED).
            #[serde(default)]
            pub confirm: $crate::arg::Flag,
        }

        impl $name {
            /// How the call wants the action run: Proxmox starts no task
            /// for it, so there is nothing to wait for.
            pub fn execution(&self) -> $crate::action::Execution {
                $crate::action::Execution {
                    dry_run: self.dry_run.0,
                    wait: false,
                    wait_timeout: None,
                }
            }
        }
    };
    (@execution $name:ident) => {
        impl $name {
            /// How the call wants the action run.
            pub fn execution(&self) -> $crate::action::Execution {
                $crate::action::Execution {
                    dry_run: self.dry_run.0,
                    wait: self.wait.0,
                    wait_timeout: self.wait_timeout.map(|t| t.0),
                }
            }
        }
    };
}
pub(crate) use action_input;

/// Arguments a tool accepts but its listed input schema leaves out:
/// `confirm`, which proxmox-mcp's clients send and which grants nothing,
/// so advertising it would cost every conversation bytes and suggest to a
/// model that it matters.
pub const UNADVERTISED: &[&str] = &["confirm"];

/// How the call wants the action run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Execution {
    /// Plan only; send nothing.
    pub dry_run: bool,
    /// Wait for the task to end.
    pub wait: bool,
    /// How long to wait, in seconds; `None` = [`task_wait::DEFAULT_WAIT`].
    pub wait_timeout: Option<u64>,
}

/// What a tool decided after reading.
#[derive(Debug, Clone, PartialEq)]
pub enum Prepared {
    /// Send this request.
    Act {
        /// The one write.
        request: WriteRequest,
        /// What it does, for a person reading the plan.
        effect: String,
    },
    /// The guest is already as asked: nothing to send.
    NothingToDo {
        /// Why, e.g. "VM 100 is already running".
        why: String,
    },
}

/// What a guest's `status/current` says, as the preconditions need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestState {
    /// `running` or `stopped` (Proxmox's `status`).
    pub running: bool,
    /// A QEMU VM whose vCPUs are paused (`qmpstatus: paused`).
    pub paused: bool,
    /// The lock held, e.g. `backup`.
    pub lock: Option<String>,
    /// Managed by the HA manager.
    pub ha_managed: bool,
}

impl GuestState {
    /// Reads `GET .../status/current`.
    pub fn read(pve: &mut dyn Pve, target: &Target) -> Result<GuestState, ToolError> {
        let path = guest_path(target).lit("status").lit("current");
        let d = fetch::object(pve, &path)?;
        let status = pj::text(d.get("status"));
        let qmp = pj::text(d.get("qmpstatus"));
        Ok(GuestState {
            running: status.as_deref() == Some("running"),
            paused: target.vm_type == VmType::Qemu && qmp.as_deref() == Some("paused"),
            lock: pj::text(d.get("lock"))
                .filter(|l| !l.is_empty())
                .map(|l| lock_name(&l)),
            ha_managed: d
                .get("ha")
                .and_then(Value::as_object)
                .is_some_and(|h| pj::flag(h.get("managed"))),
        })
    }

    /// "VM 100 on pve1 is running (paused); locked (backup); HA-managed".
    pub fn describe(&self, target: &Target) -> String {
        let mut s = format!(
            "{} on {} is {}",
            target.label(),
            target.node,
            if self.paused {
                "paused"
            } else if self.running {
                "running"
            } else {
                "stopped"
            }
        );
        match &self.lock {
            Some(lock) => s.push_str(&format!("; locked ({lock})")),
            None => s.push_str("; not locked"),
        }
        if self.ha_managed {
            s.push_str("; managed by HA");
        }
        s
    }

    /// Refuses when a lock is held, naming it and what to do.
    pub fn refuse_if_locked(&self, target: &Target) -> Result<(), ToolError> {
        match &self.lock {
            Some(lock) => Err(locked(target, lock)),
            None => Ok(()),
        }
    }
}

/// A lock as Proxmox names it (`backup`, `snapshot-delete`), or, for
/// anything else the answer holds, the text quoted and cut short: it goes
/// into messages for the agent, which must stay small whatever Proxmox
/// (or something posing as it) sends.
fn lock_name(lock: &str) -> String {
    let plain = lock.len() <= 32 && lock.bytes().all(|b| b.is_ascii_lowercase() || b == b'-');
    if plain {
        lock.to_owned()
    } else {
        quoted(lock, 32)
    }
}

/// The precondition error for a held lock.
pub fn locked(target: &Target, lock: &str) -> ToolError {
    let why = match lock {
        "backup" => "a backup is running",
        "migrate" => "it is being migrated",
        "clone" => "it is being cloned",
        "create" => "it is being created or restored",
        "snapshot" => "a snapshot is being taken",
        "snapshot-delete" => "a snapshot is being deleted",
        "rollback" => "it is being rolled back to a snapshot",
        "suspended" => "it is hibernated to disk; pve_start_vm resumes it",
        "suspending" => "it is being hibernated",
        "disk" | "fstrim" | "mounted" => "a disk operation is running",
        "destroyed" => "it is being deleted",
        _ => "another operation holds it",
    };
    ToolError::Precondition(format!(
        "{} is locked ({lock}): {why}. Nothing was sent. Wait until the task holding the lock \
         ends (pve_list_tasks shows it), then retry.",
        target.label()
    ))
}

/// Refuses a node that is not an online node of the cluster; `field` is
/// the argument that named it.
pub fn check_node_online(pve: &mut dyn Pve, field: &str, node: &str) -> Result<(), ToolError> {
    let nodes = fetch::list(pve, &ApiPath::new("nodes"))?;
    let names: Vec<String> = nodes
        .iter()
        .filter_map(|n| pj::text(n.get("node")))
        .collect();
    let Some(found) = nodes
        .iter()
        .find(|n| pj::text(n.get("node")).as_deref() == Some(node))
    else {
        return Err(ToolError::field(
            field,
            format!(
                "{} is not a node of this cluster; the nodes are {}",
                quoted(node, 64),
                listed(&names)
            ),
        ));
    };
    if pj::text(found.get("status")).as_deref() != Some("online") {
        return Err(ToolError::Precondition(format!(
            "node {node} is not online. Nothing was sent. Choose an online node (pve_list_nodes)."
        )));
    }
    Ok(())
}

/// Refuses a vmid some guest already has: creating, cloning or restoring
/// onto it would fail (or, for a forced restore, destroy that guest).
pub fn refuse_if_taken(pve: &mut dyn Pve, field: &str, vmid: u32) -> Result<(), ToolError> {
    let guests = crate::resources::fetch_guests(pve)?;
    match guests.iter().find(|g| g.vmid == u64::from(vmid)) {
        Some(g) => Err(ToolError::Precondition(format!(
            "{field} {vmid} is taken: {} {vmid}{} is {} on node {}. Nothing was sent. Choose a \
             free id (pve_get_next_vmid finds one).",
            g.vm_type.label(),
            g.name
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default(),
            g.status,
            g.node,
        ))),
        None => Ok(()),
    }
}

/// `/nodes/{node}/{qemu|lxc}/{vmid}`.
pub fn guest_path(target: &Target) -> ApiPath {
    ApiPath::new("nodes")
        .seg(&target.node)
        .seg(target.vm_type.as_str())
        .id(target.vmid)
}

/// The names of a guest's snapshots, `current` (the live state) left out.
pub fn snapshot_names(pve: &mut dyn Pve, target: &Target) -> Result<Vec<String>, ToolError> {
    Ok(fetch::list(pve, &guest_path(target).lit("snapshot"))?
        .iter()
        .filter_map(|s| pj::text(s.get("name")))
        .filter(|n| n != "current")
        .collect())
}

/// A write tool's answer: the plan, and what happened when it was sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ActionOutput {
    /// The guest acted on
    pub vmid: u32,
    /// Node that holds it
    pub node: String,
    /// qemu or lxc
    pub vm_type: VmType,
    /// Which of node and vm_type pve-mcp looked up because the call omitted them
    pub resolved: Resolved,
    /// true: a dry run; nothing was sent and requests is the plan
    pub dry_run: bool,
    /// Whether the write was sent to Proxmox
    pub sent: bool,
    /// What pve-mcp read before writing, e.g. "VM 100 on pve1 is stopped; not locked"
    pub found: String,
    /// The writes sent, or on a dry run those that would be sent; empty when there was
    /// nothing to do
    pub requests: Vec<PlannedRequest>,
    /// What the action does (or would do, or why there was nothing to do)
    pub effect: String,
    /// The task Proxmox started; null when none was started
    pub task: Option<TaskReport>,
}

/// A task an action started.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct TaskReport {
    /// The task id; pass it to pve_wait_task or pve_get_task_status
    pub upid: String,
    /// Node the task runs on
    pub node: String,
    /// Task type, e.g. qmstart, vzsnapshot, hastart
    #[serde(rename = "type")]
    pub task_type: String,
    /// true: the HA manager took the request. The task ends once it is queued; the guest
    /// changes when the HA manager acts (check with pve_get_vm_status)
    pub ha: bool,
    /// How the task ended; null when the call did not wait
    pub end: Option<TaskEnd>,
    /// Why following the task failed after it was started (the task itself may well
    /// go on); null otherwise. Follow it with pve_wait_task, do not send the action again
    pub wait_error: Option<String>,
}

/// The usual flow of a write tool about one guest: find it, read its
/// state, let `decide` (which may read more) choose, and run the choice.
pub fn on_guest(
    pve: &mut dyn Pve,
    wanted: crate::resolve::Wanted,
    execution: Execution,
    decide: impl FnOnce(&mut dyn Pve, &Target, &GuestState) -> Result<Prepared, ToolError>,
) -> Result<Answer<ActionOutput>, ToolError> {
    let target = wanted.resolve(pve)?;
    let state = GuestState::read(pve, &target)?;
    let prepared = decide(pve, &target, &state)?;
    run(pve, &target, state.describe(&target), prepared, execution)
}

/// Runs a prepared action as `execution` asks.
pub fn run(
    pve: &mut dyn Pve,
    target: &Target,
    found: String,
    prepared: Prepared,
    execution: Execution,
) -> Result<Answer<ActionOutput>, ToolError> {
    let done = execute(pve, &found, prepared, execution)?;
    Ok(Answer {
        summary: done.summary,
        structured: ActionOutput {
            vmid: target.vmid,
            node: target.node.clone(),
            vm_type: target.vm_type,
            resolved: target.resolved(),
            dry_run: execution.dry_run,
            sent: done.sent,
            found,
            requests: done.requests,
            effect: done.effect,
            task: done.task,
        },
    })
}

/// What running a prepared action came to, whatever it acted on.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    /// Whether the write was sent.
    pub sent: bool,
    /// The write sent or planned; empty when there was nothing to do.
    pub requests: Vec<PlannedRequest>,
    /// What it does, did, or why there was nothing to do.
    pub effect: String,
    /// The task it started.
    pub task: Option<TaskReport>,
    /// The answer's summary.
    pub summary: String,
}

/// Runs `prepared` as `execution` asks (after reading `found`): nothing
/// when there is nothing to do, the plan on a dry run, else the write and
/// its task, followed when the call waits.
pub fn execute(
    pve: &mut dyn Pve,
    found: &str,
    prepared: Prepared,
    execution: Execution,
) -> Result<Executed, ToolError> {
    let (request, effect) = match prepared {
        Prepared::NothingToDo { why } => {
            return Ok(Executed {
                sent: false,
                requests: Vec::new(),
                summary: format!("{why}; nothing was sent. ({found})"),
                effect: why,
                task: None,
            });
        }
        Prepared::Act { request, effect } => (request, effect),
    };
    let planned = request.planned();
    let line = format!("{} {}", planned.method.as_str(), planned.path);
    let mut done = Executed {
        sent: false,
        requests: vec![planned],
        summary: String::new(),
        effect,
        task: None,
    };
    if execution.dry_run {
        done.summary = format!(
            "Dry run, nothing was sent. Would send {line}: {}. Found: {found}.",
            done.effect
        );
        return Ok(done);
    }
    let data = pve.send(&request)?;
    done.sent = true;
    let Some(upid) = data.as_str().and_then(|s| task::parse_upid(s).ok()) else {
        done.summary = format!(
            "Sent {line}; Proxmox made the change at once: {}.",
            done.effect
        );
        return Ok(done);
    };
    let task = follow(pve, &upid, execution);
    done.summary = task_summary(&line, &done.effect, &task);
    done.task = Some(task);
    Ok(done)
}

/// The report of a task a write started, waited for when `execution`
/// asks. The write went out and the task started: a failure to follow it
/// is part of the answer ([`TaskReport::wait_error`]), never an error that
/// invites sending the write again.
pub fn follow(pve: &mut dyn Pve, upid: &Upid, execution: Execution) -> TaskReport {
    let mut task = TaskReport {
        upid: upid.raw.clone(),
        node: upid.node.clone(),
        task_type: upid.task_type.clone(),
        ha: upid.task_type.starts_with("ha"),
        end: None,
        wait_error: None,
    };
    if execution.wait {
        let limit = wait_limit(pve, execution.wait_timeout);
        match task_wait::wait(pve, upid, &upid.node, limit, &mut ReportToHost::default()) {
            Ok(end) => task.end = Some(end),
            Err(e) => task.wait_error = Some(e.message().to_owned()),
        }
    }
    task
}

/// How long a call may wait: its `wait_timeout` (or the default), capped
/// by what the host allows.
pub fn wait_limit(pve: &dyn Pve, asked: Option<u64>) -> Duration {
    let asked = asked.map_or(task_wait::DEFAULT_WAIT, Duration::from_secs);
    asked.min(pve.wait_limit())
}

/// The summary of a write that started `task`: what was sent, and how the
/// task ended when the call waited.
pub fn task_summary(line: &str, effect: &str, task: &TaskReport) -> String {
    let started = format!(
        "Sent {line}; Proxmox started task {} on {} ({})",
        task.task_type, task.node, task.upid
    );
    let ha = if task.ha {
        " The HA manager has queued the request: the guest changes when it acts, not when \
         this task ends; check with pve_get_vm_status."
    } else {
        ""
    };
    if let Some(error) = &task.wait_error {
        return format!(
            "{started}, but following it failed: {error} Do not send the action again; follow \
             the task with pve_wait_task.{ha}"
        );
    }
    match &task.end {
        None => format!("{started}. Follow it with pve_wait_task.{ha} Expected: {effect}."),
        Some(end) => match end.outcome {
            Outcome::Running => format!(
                "{started}. It was still running after {} s; wait longer with pve_wait_task.{ha}",
                end.waited_secs
            ),
            Outcome::Ok | Outcome::Warning => format!(
                "{started}. It ended {} after {} s: {effect}.{ha}",
                end.exitstatus.as_deref().unwrap_or("OK"),
                end.waited_secs
            ),
            Outcome::Error => format!(
                "{started}. It FAILED after {} s: {}. The end of its log is in task.end.log_tail.",
                end.waited_secs,
                end.exitstatus.as_deref().unwrap_or("unknown error")
            ),
        },
    }
}

/// Passes a waiting task's progress to the host on one scale, percent of
/// 100: the task log's latest percentage, held between lines that state
/// none, and starting at 1 (the host's own first notice of a call is 0).
#[derive(Debug, Default)]
pub struct ReportToHost {
    last: f64,
}

impl Progress for ReportToHost {
    fn report(&mut self, pve: &mut dyn Pve, percent: Option<f64>, line: &str) {
        let value = percent
            .unwrap_or(self.last)
            .clamp(1.0, 100.0)
            .max(self.last);
        self.last = value;
        pve.report_progress(value, Some(100.0), line);
    }
}
