//! Guest listings and `status/current` for QEMU VMs and LXC containers.
//!
//! Field sets follow `QemuServer::vmstatus` and `PVE::LXC::vmstatus`:
//! "false" keys (`template`, `lock`, `tags`, `agent`) are absent rather than
//! 0, and running-only keys appear only for running guests.

use serde_json::{Map, Value, json};

use super::cluster::memhost;
use super::{Ctx, frac};
use crate::Shapes;
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::state::{Guest, GuestKind, RunState};

/// Looks the guest up in the executing node's config directory, failing
/// like PVE's `load_config`.
fn find<'c>(
    c: &'c crate::state::Cluster,
    ctx: &Ctx<'_>,
    kind: GuestKind,
) -> Result<&'c Guest, ApiError> {
    let vmid = ctx.params.path("vmid");
    c.guest_on(ctx.node, kind, vmid)
        .ok_or_else(|| ApiError::no_config(ctx.node, kind.config_dir(), vmid))
}

fn common(g: &Guest, m: &mut Map<String, Value>) {
    let running = g.is_running();
    let s = &g.stats;
    m.insert("vmid".into(), g.vmid.into());
    m.insert(
        "status".into(),
        if running { "running" } else { "stopped" }.into(),
    );
    m.insert("name".into(), g.display_name().into());
    m.insert("maxmem".into(), g.maxmem().into());
    m.insert("maxdisk".into(), g.maxdisk.into());
    m.insert("uptime".into(), s.uptime.into());
    m.insert("cpu".into(), frac(s.cpu));
    m.insert("mem".into(), s.mem.into());
    m.insert("netin".into(), s.netin.into());
    m.insert("netout".into(), s.netout.into());
    m.insert("diskread".into(), s.diskread.into());
    m.insert("diskwrite".into(), s.diskwrite.into());
    if running {
        m.insert("pid".into(), s.pid.into());
    }
    if g.template {
        m.insert("template".into(), 1.into());
    }
    if let Some(l) = &g.lock {
        m.insert("lock".into(), l.clone().into());
    }
    if let Some(t) = &g.tags {
        m.insert("tags".into(), t.clone().into());
    }
}

fn pressure(g: &Guest, m: &mut Map<String, Value>, with_cpu_full: bool) {
    if !g.is_running() {
        return;
    }
    let base = (g.stats.cpu * 10.0 * 100.0).round() / 100.0;
    m.insert("pressurecpusome".into(), frac(base));
    if with_cpu_full {
        m.insert("pressurecpufull".into(), frac(base / 2.0));
    }
    m.insert("pressureiosome".into(), frac(base / 4.0));
    m.insert("pressureiofull".into(), frac(base / 8.0));
    m.insert("pressurememorysome".into(), 0.into());
    m.insert("pressurememoryfull".into(), 0.into());
}

fn ha(g: &Guest) -> Value {
    match &g.ha {
        None => json!({"managed": 0}),
        Some(h) => {
            let mut v = json!({"managed": 1, "state": h.state});
            if let Some(group) = &h.group {
                v["group"] = group.clone().into();
            }
            v
        }
    }
}

/// `vmstatus` of one VM; `full` adds what `status/current` and `?full=1` get.
fn qemu_status(g: &Guest, full: bool) -> Map<String, Value> {
    let mut m = Map::new();
    common(g, &mut m);
    m.insert("cpus".into(), g.cpus().into());
    m.insert("disk".into(), 0.into());
    if g.balloon_mib > 0 {
        m.insert("balloon_min".into(), (g.balloon_mib * 1024 * 1024).into());
        m.insert("shares".into(), 1000.into());
    }
    if g.is_running() {
        m.insert("memhost".into(), memhost(g).into());
    }
    pressure(g, &mut m, true);
    if !full {
        return m;
    }
    let qmp = match g.run {
        RunState::Stopped => "stopped",
        RunState::Running => "running",
        RunState::Paused => "paused",
    };
    m.insert("qmpstatus".into(), qmp.into());
    if !g.is_running() {
        return m;
    }
    let s = &g.stats;
    m.insert("running-machine".into(), g.machine.into());
    m.insert("running-qemu".into(), "10.1.2".into());
    let nics: Map<String, Value> = (0..g.nics)
        .map(|i| {
            let share = u64::from(i) + 1;
            (
                format!("tap{}i{i}", g.vmid),
                json!({"netin": s.netin / share, "netout": s.netout / share}),
            )
        })
        .collect();
    m.insert("nics".into(), Value::Object(nics));
    let maxmem = g.maxmem();
    let free = maxmem.saturating_sub(s.mem);
    m.insert("balloon".into(), maxmem.into());
    m.insert("freemem".into(), free.into());
    m.insert(
        "ballooninfo".into(),
        json!({
            "actual": maxmem,
            "max_mem": maxmem,
            "total_mem": maxmem - maxmem / 40,
            "free_mem": free,
            "last_update": 1_767_225_600u64 + s.uptime % 86_400,
            "major_page_faults": 1_212,
            "minor_page_faults": 48_871_011,
            "mem_swapped_in": 0,
            "mem_swapped_out": 0,
        }),
    );
    m.insert(
        "blockstat".into(),
        json!({"scsi0": {
            "rd_bytes": s.diskread, "wr_bytes": s.diskwrite,
            "rd_operations": s.diskread / 16_384, "wr_operations": s.diskwrite / 8_192,
            "flush_operations": s.diskwrite / 1_048_576, "flush_total_time_ns": 91_838_112_331u64,
            "rd_total_time_ns": 402_117_226_581u64, "wr_total_time_ns": 1_108_664_201_992u64,
            "rd_merged": 0, "wr_merged": 0, "failed_rd_operations": 0, "failed_wr_operations": 0,
            "invalid_rd_operations": 0, "invalid_wr_operations": 0, "unmap_bytes": 0,
            "unmap_operations": 0, "idle_time_ns": 1_384_512_001u64,
            "account_failed": true, "account_invalid": true, "timed_stats": [],
        }}),
    );
    m.insert(
        "proxmox-support".into(),
        json!({
            "backup-fleecing": true, "backup-max-workers": true, "pbs-dirty-bitmap": true,
            "pbs-dirty-bitmap-migration": true, "pbs-dirty-bitmap-savevm": true,
            "pbs-library-version": "2.0.1 (UNKNOWN)", "pbs-masterkey": true,
            "query-bitmap-info": true,
        }),
    );
    m
}

fn lxc_status(g: &Guest) -> Map<String, Value> {
    let mut m = Map::new();
    common(g, &mut m);
    let running = g.is_running();
    m.insert("type".into(), "lxc".into());
    m.insert("cpus".into(), g.cores.into());
    m.insert("disk".into(), if running { g.disk } else { 0 }.into());
    m.insert("swap".into(), g.stats.swap.into());
    m.insert("maxswap".into(), (g.swap_mib * 1024 * 1024).into());
    pressure(g, &mut m, false);
    m
}

pub(crate) fn qemu_current(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let g = find(&c, ctx, GuestKind::Qemu)?;
    let mut m = qemu_status(g, true);
    m.insert("ha".into(), ha(g));
    if g.agent {
        m.insert("agent".into(), 1.into());
    }
    Ok(Reply::Data(Value::Object(m)))
}

pub(crate) fn lxc_current(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let g = find(&c, ctx, GuestKind::Lxc)?;
    let mut m = lxc_status(g);
    m.insert("ha".into(), ha(g));
    Ok(Reply::Data(Value::Object(m)))
}

/// Guests of `kind` on the executing node that the caller may audit;
/// lists filter instead of failing.
fn visible<'c>(c: &'c crate::state::Cluster, ctx: &Ctx<'_>, kind: GuestKind) -> Vec<&'c Guest> {
    c.guests
        .values()
        .filter(|g| g.node == ctx.node && g.kind == kind)
        .filter(|g| ctx.can(&format!("/vms/{}", g.vmid), "VM.Audit"))
        .collect()
}

pub(crate) fn qemu_list(ctx: &Ctx<'_>) -> HandlerResult {
    let full = ctx.params.get("full") == Some("1");
    let c = ctx.cluster();
    let list = visible(&c, ctx, GuestKind::Qemu)
        .into_iter()
        .map(|g| Value::Object(qemu_status(g, full)))
        .collect();
    Ok(Reply::Data(Value::Array(list)))
}

pub(crate) fn lxc_list(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let old_perl = c.shapes == Shapes::Real;
    let list = visible(&c, ctx, GuestKind::Lxc)
        .into_iter()
        .map(|g| {
            let mut m = lxc_status(g);
            if old_perl {
                // Before pve-container 5.0.10 the vmid was last used as a
                // string, and a non-template's flag was Perl's empty string.
                m.insert("vmid".into(), g.vmid.to_string().into());
                m.entry("template").or_insert_with(|| "".into());
            }
            Value::Object(m)
        })
        .collect();
    Ok(Reply::Data(Value::Array(list)))
}
