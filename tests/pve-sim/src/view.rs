//! Read-only views of the simulated state for tests
//! ([`crate::Simulator::guest`], [`crate::Simulator::task`]).

use serde_json::Value;

use crate::state::{Guest, RunState, Task};

/// A guest as it is now.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestState {
    /// The vmid.
    pub vmid: u32,
    /// `qemu` or `lxc`.
    pub vm_type: &'static str,
    /// The node its config lives on.
    pub node: String,
    /// `running`, `paused` (qemu) or `stopped`.
    pub status: &'static str,
    /// Config `name` (qemu) or `hostname` (lxc), if set.
    pub name: Option<String>,
    /// Config lock (`backup`, `snapshot`, `migrate`, `create`, ...).
    pub lock: Option<String>,
    /// Whether it is a template.
    pub template: bool,
    /// Snapshot names, oldest first.
    pub snapshots: Vec<String>,
    /// The snapshot the current state derives from (`parent`).
    pub parent: Option<String>,
    /// The config as `GET .../config` returns it, `digest` included.
    pub config: Value,
    /// The config digest.
    pub digest: String,
    /// Boot disk (qemu) or rootfs (lxc) size in bytes.
    pub maxdisk: u64,
    /// HA state (`started`, `stopped`) when HA manages it.
    pub ha_state: Option<String>,
    /// Pool membership.
    pub pool: Option<String>,
}

/// A task as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskState {
    /// The UPID.
    pub upid: String,
    /// The node that runs it.
    pub node: String,
    /// Task type, e.g. `qmstart`.
    pub task_type: String,
    /// Task id (usually the vmid).
    pub id: String,
    /// Owner as in the UPID (`root@pam!mcp`).
    pub user: String,
    /// `None` while running; else `OK`, `WARNINGS: n` or the error.
    pub exitstatus: Option<String>,
    /// The log lines, the final `TASK ...` line included once it ended.
    pub log: Vec<String>,
}

impl TaskState {
    /// Whether the task still runs.
    pub fn running(&self) -> bool {
        self.exitstatus.is_none()
    }
}

pub(crate) fn guest_state(g: &Guest) -> GuestState {
    let mut config = crate::handlers::render_config(g);
    crate::handlers::mask_secrets(&mut config);
    let digest = crate::handlers::config_digest(g);
    config.insert("digest".into(), digest.clone().into());
    let mut snaps: Vec<_> = g.snapshots.iter().collect();
    snaps.sort_by_key(|s| s.snaptime);
    GuestState {
        vmid: g.vmid,
        vm_type: g.kind.as_str(),
        node: g.node.clone(),
        status: match g.run {
            RunState::Running => "running",
            RunState::Paused => "paused",
            RunState::Stopped => "stopped",
        },
        name: g.name.clone(),
        lock: g.lock.clone(),
        template: g.template,
        snapshots: snaps.into_iter().map(|s| s.name.clone()).collect(),
        parent: g.current_parent.clone(),
        config: Value::Object(config),
        digest,
        maxdisk: g.maxdisk,
        ha_state: g.ha.as_ref().map(|h| h.state.clone()),
        pool: g.pool.clone(),
    }
}

pub(crate) fn task_state(t: &Task) -> TaskState {
    TaskState {
        upid: t.upid.clone(),
        node: t.node.clone(),
        task_type: t.ty.clone(),
        id: t.id.clone(),
        user: t.user.clone(),
        exitstatus: t.status.clone(),
        log: crate::handlers::log_lines(t),
    }
}
