//! Snapshot create, delete and rollback (qemu and lxc).
//!
//! Reserved names and unknown snapshots fail before the fork (500); a held
//! lock or a name already in use fail the task, as in PVE's
//! `__snapshot_prepare`. The task holds lock `snapshot`, `snapshot-delete`
//! or `rollback`.

use super::Ctx;
use super::act::{self, die};
use crate::errors::HandlerResult;
use crate::state::{Cluster, Guest, GuestKind, Snapshot};
use crate::util::now_secs;
use crate::work::{self, Spec};

/// The volumes a snapshot of `g` covers, for the log.
fn disk_volids(g: &Guest) -> Vec<(String, String)> {
    let conf = super::config::render(g);
    crate::conf::disks(g.kind, &conf)
        .into_iter()
        .map(|(k, volid, _)| (k, volid))
        .collect()
}

fn lv_name(volid: &str) -> &str {
    volid.split_once(':').map_or(volid, |(_, n)| n)
}

fn create(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, kind)?;
    let vmid = g.vmid;
    let name = ctx.params.path("snapname").to_string();
    let reserved = name == "current"
        || (kind == GuestKind::Qemu && name.eq_ignore_ascii_case("pending"))
        || (kind == GuestKind::Lxc && name == "vzdump");
    if reserved {
        return Err(die(format!(
            "unable to use snapshot name '{name}' (reserved name)"
        )));
    }
    let ty = if kind == GuestKind::Qemu {
        "qmsnapshot"
    } else {
        "vzsnapshot"
    };
    let mut spec = Spec::new(ctx.node, ty, vmid.to_string(), &act::user(ctx));
    if let Some(err) = act::busy(&c, g) {
        return act::upid(work::spawn(&mut c, spec.fail(err)));
    }
    if g.snapshots.iter().any(|s| s.name == name) {
        let spec = spec.fail(format!("snapshot name '{name}' already used"));
        return act::upid(work::spawn(&mut c, spec));
    }
    // A stopped VM has no RAM to save.
    let vmstate = kind == GuestKind::Qemu && act::flag(ctx, "vmstate") && g.is_running();
    if vmstate {
        let ram = super::power::human(g.stats.mem.max(g.maxmem() / 4));
        spec.line(0.0, "saving VM state and RAM using storage 'local-lvm'");
        spec.line(0.3, "1.51 MiB in 0s");
        spec.line(
            0.6,
            format!("completed saving the VM state in 2s, saved {ram}"),
        );
    }
    for (key, volid) in disk_volids(g) {
        if kind == GuestKind::Qemu {
            spec.line(0.7, format!("snapshotting 'drive-{key}' ({volid})"));
        }
        spec.line(
            0.8,
            format!(
                "  Logical volume \"snap_{}_{name}\" created.",
                lv_name(&volid)
            ),
        );
    }
    let snap = Snapshot {
        name: name.clone(),
        snaptime: now_secs(),
        description: ctx.params.get("description").unwrap_or("").to_string(),
        parent: g.current_parent.clone(),
        vmstate,
    };
    let spec = spec.lock(vmid, "snapshot").effect(move |c: &mut Cluster| {
        if let Some(g) = c.guests.get_mut(&vmid) {
            g.current_parent = Some(snap.name.clone());
            g.snapshots.push(snap);
        }
    });
    act::upid(work::spawn(&mut c, spec))
}

fn delete(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, kind)?;
    let vmid = g.vmid;
    let name = ctx.params.path("snapname").to_string();
    let Some(snap) = g.snapshots.iter().find(|s| s.name == name) else {
        return Err(die(format!("snapshot '{name}' does not exist")));
    };
    let parent = snap.parent.clone();
    let ty = if kind == GuestKind::Qemu {
        "qmdelsnapshot"
    } else {
        "vzdelsnapshot"
    };
    let mut spec = Spec::new(ctx.node, ty, vmid.to_string(), &act::user(ctx));
    if let Some(err) = act::busy(&c, g) {
        return act::upid(work::spawn(&mut c, spec.fail(err)));
    }
    for (_, volid) in disk_volids(g) {
        spec.line(
            0.5,
            format!(
                "  Logical volume \"snap_{}_{name}\" successfully removed.",
                lv_name(&volid)
            ),
        );
    }
    let spec = spec
        .lock(vmid, "snapshot-delete")
        .effect(move |c: &mut Cluster| {
            let Some(g) = c.guests.get_mut(&vmid) else {
                return;
            };
            g.snapshots.retain(|s| s.name != name);
            for s in &mut g.snapshots {
                if s.parent.as_deref() == Some(name.as_str()) {
                    s.parent = parent.clone();
                }
            }
            if g.current_parent.as_deref() == Some(name.as_str()) {
                g.current_parent = parent;
            }
        });
    act::upid(work::spawn(&mut c, spec))
}

fn rollback(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, kind)?;
    let vmid = g.vmid;
    let name = ctx.params.path("snapname").to_string();
    let Some(snap) = g.snapshots.iter().find(|s| s.name == name) else {
        return Err(die(format!("snapshot '{name}' does not exist")));
    };
    let with_ram = kind == GuestKind::Qemu && snap.vmstate;
    let start = act::flag(ctx, "start") || with_ram;
    let ty = if kind == GuestKind::Qemu {
        "qmrollback"
    } else {
        "vzrollback"
    };
    let mut spec = Spec::new(ctx.node, ty, vmid.to_string(), &act::user(ctx));
    if let Some(err) = act::busy(&c, g) {
        return act::upid(work::spawn(&mut c, spec.fail(err)));
    }
    if g.is_running() {
        spec.line(0.0, format!("stopping {} {vmid}", act::word(kind)));
    }
    for (_, volid) in disk_volids(g) {
        spec.line(
            0.5,
            format!(
                "  Logical volume \"{}\" successfully removed.",
                lv_name(&volid)
            ),
        );
        spec.line(
            0.6,
            format!("  Logical volume \"{}\" created.", lv_name(&volid)),
        );
    }
    if with_ram {
        spec.line(0.8, "resuming VM from saved state");
    }
    let spec = spec.lock(vmid, "rollback").effect(move |c: &mut Cluster| {
        let Some(g) = c.guests.get_mut(&vmid) else {
            return;
        };
        g.current_parent = Some(name);
        act::stop_guest(g);
        if start {
            act::start_guest(g);
        }
    });
    act::upid(work::spawn(&mut c, spec))
}

pub(crate) fn qemu_create(ctx: &Ctx<'_>) -> HandlerResult {
    create(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_create(ctx: &Ctx<'_>) -> HandlerResult {
    create(ctx, GuestKind::Lxc)
}

pub(crate) fn qemu_delete(ctx: &Ctx<'_>) -> HandlerResult {
    delete(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_delete(ctx: &Ctx<'_>) -> HandlerResult {
    delete(ctx, GuestKind::Lxc)
}

pub(crate) fn qemu_rollback(ctx: &Ctx<'_>) -> HandlerResult {
    rollback(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_rollback(ctx: &Ctx<'_>) -> HandlerResult {
    rollback(ctx, GuestKind::Lxc)
}
