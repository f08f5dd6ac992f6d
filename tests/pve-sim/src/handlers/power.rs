//! `POST .../{qemu,lxc}/{vmid}/status/{start,shutdown,stop,reboot,suspend,resume}`.
//!
//! Pre-checks PVE runs before forking answer 500; the others (qemu's
//! "already running", a held lock) end the task with the error. HA-managed
//! guests get a queued `hastart`/`hastop` task: the HA manager then runs the
//! real action as `root@pam` in a task of its own.

use super::Ctx;
use super::act::{self, die, word};
use crate::errors::HandlerResult;
use crate::state::{Cluster, GuestKind, RunState};
use crate::work::{self, Spec};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Start,
    Shutdown,
    Stop,
    Reboot,
    Suspend,
    Resume,
}

fn task_type(kind: GuestKind, a: Action, todisk: bool) -> &'static str {
    match (kind, a) {
        (GuestKind::Qemu, Action::Start) => "qmstart",
        (GuestKind::Qemu, Action::Shutdown) => "qmshutdown",
        (GuestKind::Qemu, Action::Stop) => "qmstop",
        (GuestKind::Qemu, Action::Reboot) => "qmreboot",
        (GuestKind::Qemu, Action::Suspend) if todisk => "qmsuspend",
        (GuestKind::Qemu, Action::Suspend) => "qmpause",
        (GuestKind::Qemu, Action::Resume) => "qmresume",
        (GuestKind::Lxc, Action::Start) => "vzstart",
        (GuestKind::Lxc, Action::Shutdown) => "vzshutdown",
        (GuestKind::Lxc, Action::Stop) => "vzstop",
        (GuestKind::Lxc, Action::Reboot) => "vzreboot",
        (GuestKind::Lxc, Action::Suspend) => "vzsuspend",
        (GuestKind::Lxc, Action::Resume) => "vzresume",
    }
}

/// The state change an action makes once its task ends.
fn apply(c: &mut Cluster, vmid: u32, a: Action, todisk: bool) {
    let Some(g) = c.guests.get_mut(&vmid) else {
        return;
    };
    match a {
        Action::Start => {
            if g.lock.as_deref() == Some("suspended") {
                g.lock = None;
            }
            // `vm_start` regenerates the cloud-init drive.
            if super::has_cloudinit_drive(g) {
                g.ci_changes.clear();
            }
            if !g.is_running() {
                act::start_guest(g);
            }
        }
        Action::Shutdown | Action::Stop => act::stop_guest(g),
        Action::Reboot => act::start_guest(g),
        Action::Suspend => match (g.kind, todisk) {
            (GuestKind::Qemu, false) => g.run = RunState::Paused,
            (GuestKind::Qemu, true) => {
                act::stop_guest(g);
                g.lock = Some("suspended".into());
            }
            // CRIU checkpoint: the container stops.
            (GuestKind::Lxc, _) => act::stop_guest(g),
        },
        Action::Resume => match g.kind {
            GuestKind::Qemu => g.run = RunState::Running,
            GuestKind::Lxc => act::start_guest(g),
        },
    }
}

fn power(ctx: &Ctx<'_>, kind: GuestKind, a: Action) -> HandlerResult {
    act::root_only(ctx, &["skiplock", "keepActive", "nocheck"])?;
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, kind)?;
    let vmid = g.vmid;
    let todisk = act::flag(ctx, "todisk");
    let force_stop = act::flag(ctx, "forceStop");
    let user = act::user(ctx);
    let running = g.is_running();
    let paused = g.run == RunState::Paused;

    if g.ha.is_some() && matches!(a, Action::Start | Action::Stop | Action::Shutdown) {
        return act::upid(ha_request(&mut c, ctx.node, kind, vmid, a, &user));
    }

    // Synchronous pre-checks (HTTP 500).
    match (kind, a) {
        (GuestKind::Qemu, Action::Shutdown | Action::Reboot) if paused && !force_stop => {
            return Err(die("VM is paused - cannot shutdown"));
        }
        (GuestKind::Qemu, Action::Reboot | Action::Suspend | Action::Resume) if !running => {
            return Err(die(format!("VM {vmid} not running")));
        }
        (GuestKind::Qemu, Action::Suspend) if todisk && g.ha.is_some() => {
            return Err(die("Cannot suspend HA managed VM to disk"));
        }
        (GuestKind::Lxc, Action::Start | Action::Resume) if running => {
            return Err(die(format!("CT {vmid} already running")));
        }
        (GuestKind::Lxc, Action::Reboot) if !running => {
            return Err(die(format!("VM {vmid} not running")));
        }
        (GuestKind::Lxc, Action::Shutdown | Action::Stop | Action::Suspend) if !running => {
            return Err(die(format!("CT {vmid} not running")));
        }
        _ => {}
    }

    let ty = task_type(kind, a, todisk);
    let mut spec = Spec::new(ctx.node, ty, vmid.to_string(), &user);
    // Resuming a hibernated VM is a start, which the lock allows.
    let lock_err = if a == Action::Start && g.lock.as_deref() == Some("suspended") {
        work::flocked(&c, vmid).then(|| act::flock_error(kind, vmid))
    } else {
        act::busy(&c, g)
    };
    if let Some(err) = lock_err {
        spec = spec.fail(err);
    } else if kind == GuestKind::Qemu && a == Action::Start && running {
        spec = spec.fail(format!("VM {vmid} already running"));
    } else {
        match (kind, a) {
            (GuestKind::Qemu, Action::Start) if super::has_cloudinit_drive(g) => {
                spec.line(0.0, "generating cloud-init ISO");
            }
            (_, Action::Shutdown) if !running => {
                // Already stopped: PVE's shutdown is then a no-op.
            }
            (GuestKind::Qemu, Action::Suspend) if todisk => {
                spec.line(0.0, "saving VM state and RAM using storage 'local-lvm'");
                spec.line(0.5, format!("{} in 1s", human(g.maxmem() / 3)));
                spec.line(
                    1.0,
                    format!(
                        "completed saving the VM state in 2s, saved {}",
                        human(g.maxmem() / 3)
                    ),
                );
            }
            (GuestKind::Lxc, Action::Suspend) => {
                spec.line(0.0, format!("dumping CT {vmid} to /var/lib/vz/dump"));
            }
            _ => {}
        }
        spec = spec
            .flock(vmid)
            .effect(move |c: &mut Cluster| apply(c, vmid, a, todisk));
    }
    act::upid(work::spawn(&mut c, spec))
}

/// The `hastart`/`hastop` request task and, once it is queued, the HA
/// manager's own task on the guest's node.
fn ha_request(
    c: &mut Cluster,
    node: &str,
    kind: GuestKind,
    vmid: u32,
    a: Action,
    user: &str,
) -> String {
    let (ty, state, verb) = match a {
        Action::Start => ("hastart", "started", "start"),
        _ => ("hastop", "stopped", "stop"),
    };
    let mut spec = Spec::new(node, ty, vmid.to_string(), user);
    spec.line(
        0.0,
        format!("Requesting HA {verb} for {} {vmid}", word(kind)),
    );
    let spec = spec.effect(move |c: &mut Cluster| {
        let Some(g) = c.guests.get_mut(&vmid) else {
            return;
        };
        if let Some(ha) = &mut g.ha {
            ha.state = state.to_string();
            ha.state_set = true;
        }
        let running = g.is_running();
        let node = g.node.clone();
        let needed = if a == Action::Start {
            !running
        } else {
            running
        };
        if !needed {
            return;
        }
        let lrm_action = if a == Action::Start {
            Action::Start
        } else {
            Action::Shutdown
        };
        let lrm = Spec::new(
            &node,
            task_type(kind, lrm_action, false),
            vmid.to_string(),
            "root@pam",
        )
        .flock(vmid)
        .effect(move |c: &mut Cluster| apply(c, vmid, lrm_action, false));
        work::spawn(c, lrm);
    });
    work::spawn(c, spec)
}

/// Bytes as PVE's logs print them (`2.12 GiB`).
pub(crate) fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[i])
    }
}

macro_rules! power_handlers {
    ($($name:ident => $kind:ident, $action:ident;)*) => {
        $(
            pub(crate) fn $name(ctx: &Ctx<'_>) -> HandlerResult {
                power(ctx, GuestKind::$kind, Action::$action)
            }
        )*
    };
}

power_handlers! {
    qemu_start => Qemu, Start;
    qemu_shutdown => Qemu, Shutdown;
    qemu_stop => Qemu, Stop;
    qemu_reboot => Qemu, Reboot;
    qemu_suspend => Qemu, Suspend;
    qemu_resume => Qemu, Resume;
    lxc_start => Lxc, Start;
    lxc_shutdown => Lxc, Shutdown;
    lxc_stop => Lxc, Stop;
    lxc_reboot => Lxc, Reboot;
    lxc_suspend => Lxc, Suspend;
    lxc_resume => Lxc, Resume;
}
