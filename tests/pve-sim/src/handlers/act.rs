//! What the write endpoints share: finding the guest, PVE's lock and
//! root-only checks, and answering with a task's UPID.

use serde_json::Value;

use super::Ctx;
use super::tasks::authid;
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::state::{Cluster, Guest, GuestKind};

/// The path's vmid (the route's spec has validated it).
pub(crate) fn vmid(ctx: &Ctx<'_>) -> u32 {
    ctx.params.path("vmid").parse().unwrap_or(0)
}

/// `guest_type`: how PVE's messages name the guest.
pub(crate) fn word(kind: GuestKind) -> &'static str {
    match kind {
        GuestKind::Qemu => "VM",
        GuestKind::Lxc => "CT",
    }
}

/// The guest in the executing node's config directory, failing like PVE's
/// `load_config`.
pub(crate) fn guest<'c>(
    c: &'c Cluster,
    ctx: &Ctx<'_>,
    kind: GuestKind,
) -> Result<&'c Guest, ApiError> {
    let vmid = ctx.params.path("vmid");
    c.guest_on(ctx.node, kind, vmid)
        .ok_or_else(|| ApiError::no_config(ctx.node, kind.config_dir(), vmid))
}

/// `check_lock`'s message when the guest's config has a lock.
pub(crate) fn lock_error(g: &Guest) -> Option<String> {
    g.lock
        .as_ref()
        .map(|l| format!("{} is locked ({l})", word(g.kind)))
}

/// What `lock_config` dies with when another task holds the config file
/// lock longer than its 10 s timeout.
pub(crate) fn flock_error(kind: GuestKind, vmid: u32) -> String {
    match kind {
        GuestKind::Qemu => {
            format!("can't lock file '/var/lock/qemu-server/lock-{vmid}.conf' - got timeout")
        }
        GuestKind::Lxc => {
            format!("can't lock file '/run/lock/lxc/pve-config-{vmid}.lock' - got timeout")
        }
    }
}

/// The config lock, else a running task's file lock, as PVE reports it.
pub(crate) fn busy(c: &Cluster, g: &Guest) -> Option<String> {
    lock_error(g).or_else(|| crate::work::flocked(c, g.vmid).then(|| flock_error(g.kind, g.vmid)))
}

/// Whether the caller is the ticket user `root@pam` (a token never is,
/// not even `root@pam!name`).
pub(crate) fn is_root(ctx: &Ctx<'_>) -> bool {
    ctx.ident
        .is_some_and(|i| i.userid == "root@pam" && i.tokenid.is_none())
}

/// Refuses root-only options for anyone but `root@pam`:
/// `400 {"<opt>": "Only root may use this option."}`.
pub(crate) fn root_only(ctx: &Ctx<'_>, keys: &[&str]) -> Result<(), ApiError> {
    if is_root(ctx) {
        return Ok(());
    }
    match keys.iter().find(|k| ctx.params.get(k).is_some()) {
        Some(k) => Err(ApiError::param(k, "Only root may use this option.")),
        None => Ok(()),
    }
}

/// A boolean parameter (already validated as `0`/`1`).
pub(crate) fn flag(ctx: &Ctx<'_>, key: &str) -> bool {
    ctx.params.get(key) == Some("1")
}

/// The caller as task owner.
pub(crate) fn user(ctx: &Ctx<'_>) -> String {
    authid(ctx)
}

/// A synchronous pre-check failure: `die "...\n"`, so 500.
pub(crate) fn die(msg: impl std::fmt::Display) -> ApiError {
    ApiError::new(500, format!("{msg}\n"))
}

/// `403` unless the caller holds `privilege` on `path`.
pub(crate) fn require(ctx: &Ctx<'_>, path: &str, privilege: &str) -> Result<(), ApiError> {
    if ctx.can(path, privilege) {
        Ok(())
    } else {
        Err(ApiError::perm(path, privilege))
    }
}

/// Answers with a task.
pub(crate) fn upid(upid: String) -> HandlerResult {
    Ok(Reply::Data(Value::String(upid)))
}

/// A guest that is not running any more (counters cleared).
pub(crate) fn stop_guest(g: &mut Guest) {
    g.run = crate::state::RunState::Stopped;
    g.stats = crate::state::RunStats::default();
}

/// A guest that has just started.
pub(crate) fn start_guest(g: &mut Guest) {
    let mem = g.maxmem() / 4;
    crate::seed::running(g, 0, 0.012, mem);
}
