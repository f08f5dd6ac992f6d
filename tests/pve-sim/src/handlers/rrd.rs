//! `rrddata` of nodes and guests, as `PVE::RRD::create_rrd_data` renders
//! it: aligned time steps, undefined data sources omitted.

use serde_json::{Map, Value};

use super::{Ctx, frac};
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::seed::mix;
use crate::state::{Guest, GuestKind, Node};
use crate::util::now_secs;

/// `(step in seconds, number of points)` per timeframe.
fn setup(timeframe: &str) -> (u64, u64) {
    match timeframe {
        "hour" => (60, 60),
        "day" => (30 * 60, 70),
        "week" => (3 * 3_600, 70),
        "month" => (12 * 3_600, 70),
        "year" => (7 * 86_400, 70),
        // decade (nodes only)
        _ => (8 * 7 * 86_400, 70),
    }
}

/// A number as Perl prints an RRD value: integral values without a
/// fraction.
fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

fn times(ctx: &Ctx<'_>) -> (Vec<u64>, bool) {
    let (step, count) = setup(ctx.params.get("timeframe").unwrap_or("hour"));
    let end = now_secs() / step * step;
    let max = ctx.params.get("cf") == Some("MAX");
    (
        (0..count).map(|i| end - (count - 1 - i) * step).collect(),
        max,
    )
}

/// Deterministic wobble in `[lo, hi)` for a point.
fn wobble(key: u64, t: u64, salt: u64, lo: f64, hi: f64) -> f64 {
    let r = (mix(key ^ t, salt) % 10_000) as f64 / 10_000.0;
    lo + (hi - lo) * r
}

fn rrd_error(name: &str) -> ApiError {
    ApiError::new(
        500,
        format!("RRD error: opening '/var/lib/rrdcached/db/{name}': No such file or directory\n"),
    )
}

fn guest_point(g: &Guest, online: bool, t: u64, max: bool) -> Value {
    let mut m = Map::new();
    m.insert("time".into(), t.into());
    if !online {
        // No updates since the node went away: every data source unknown.
        return Value::Object(m);
    }
    let key = u64::from(g.vmid);
    let peak = if max { 1.35 } else { 1.0 };
    let maxcpu = match g.kind {
        GuestKind::Qemu => g.cpus(),
        GuestKind::Lxc => g.cores,
    };
    m.insert("maxcpu".into(), maxcpu.into());
    m.insert("maxmem".into(), g.maxmem().into());
    m.insert("maxdisk".into(), g.maxdisk.into());
    let disk = if g.kind == GuestKind::Lxc { g.disk } else { 0 };
    m.insert("disk".into(), disk.into());
    if !g.is_running() {
        return Value::Object(m);
    }
    let s = &g.stats;
    let cpu = (s.cpu * wobble(key, t, 1, 0.6, 1.4) * peak).min(1.0);
    m.insert("cpu".into(), frac(cpu));
    let mem = (s.mem as f64 * wobble(key, t, 2, 0.92, 1.04) * peak).min(g.maxmem() as f64);
    m.insert("mem".into(), num(mem.round()));
    let up = s.uptime.max(1) as f64;
    let rate =
        |total: u64, salt: u64| num(total as f64 / up * wobble(key, t, salt, 0.3, 1.9) * peak);
    m.insert("netin".into(), rate(s.netin, 3));
    m.insert("netout".into(), rate(s.netout, 4));
    m.insert("diskread".into(), rate(s.diskread, 5));
    m.insert("diskwrite".into(), rate(s.diskwrite, 6));
    if g.kind == GuestKind::Qemu {
        m.insert(
            "memhost".into(),
            num((mem + mem / 50.0 + 188_743_680.0).round()),
        );
    }
    Value::Object(m)
}

fn node_point(n: &Node, t: u64, max: bool) -> Value {
    let mut m = Map::new();
    m.insert("time".into(), t.into());
    if !n.online {
        return Value::Object(m);
    }
    let key = u64::from(n.nodeid) << 32;
    let peak = if max { 1.3 } else { 1.0 };
    m.insert("maxcpu".into(), n.threads.into());
    m.insert(
        "cpu".into(),
        frac((n.cpu * wobble(key, t, 1, 0.7, 1.3) * peak).min(1.0)),
    );
    m.insert(
        "iowait".into(),
        frac(n.wait * wobble(key, t, 2, 0.5, 1.5) * peak),
    );
    let load: f64 = n.loadavg[0].parse().unwrap_or(0.0);
    m.insert(
        "loadavg".into(),
        num((load * wobble(key, t, 3, 0.8, 1.2) * peak * 100.0).round() / 100.0),
    );
    m.insert("memtotal".into(), n.maxmem.into());
    m.insert(
        "memused".into(),
        num((n.mem as f64 * wobble(key, t, 4, 0.97, 1.02)).round()),
    );
    m.insert("swaptotal".into(), n.swap_total.into());
    m.insert("swapused".into(), n.swap_used.into());
    m.insert("roottotal".into(), n.rootfs_total.into());
    m.insert("rootused".into(), n.rootfs_used.into());
    m.insert(
        "netin".into(),
        num((wobble(key, t, 5, 150_000.0, 2_400_000.0) * peak).round()),
    );
    m.insert(
        "netout".into(),
        num((wobble(key, t, 6, 90_000.0, 1_800_000.0) * peak).round()),
    );
    Value::Object(m)
}

pub(crate) fn node_rrddata(ctx: &Ctx<'_>) -> HandlerResult {
    let name = ctx.params.path("node");
    let c = ctx.cluster();
    let Some(n) = c.node(name) else {
        return Err(rrd_error(&format!("pve-node-9.0/{name}")));
    };
    let (ts, max) = times(ctx);
    Ok(Reply::Data(Value::Array(
        ts.into_iter().map(|t| node_point(n, t, max)).collect(),
    )))
}

fn guest_rrddata(ctx: &Ctx<'_>) -> HandlerResult {
    // Not proxied and keyed by vmid only, like PVE (the node in the path
    // does not matter).
    let vmid = ctx.params.path("vmid");
    let c = ctx.cluster();
    let g = vmid.parse::<u32>().ok().and_then(|id| c.guests.get(&id));
    let Some(g) = g else {
        return Err(rrd_error(&format!("pve-vm-9.0/{vmid}")));
    };
    let online = c.node(&g.node).is_some_and(|n| n.online);
    let (ts, max) = times(ctx);
    Ok(Reply::Data(Value::Array(
        ts.into_iter()
            .map(|t| guest_point(g, online, t, max))
            .collect(),
    )))
}

pub(crate) fn qemu_rrddata(ctx: &Ctx<'_>) -> HandlerResult {
    guest_rrddata(ctx)
}

pub(crate) fn lxc_rrddata(ctx: &Ctx<'_>) -> HandlerResult {
    guest_rrddata(ctx)
}
