//! `/cluster/ha/status/current` and `/cluster/ha/resources`.

use serde_json::{Value, json};

use super::{Ctx, pbool};
use crate::Shapes;
use crate::errors::{HandlerResult, Reply};
use crate::shapes;
use crate::state::{Guest, GuestKind};
use crate::util::{ctime, now_secs};

fn sid(g: &Guest) -> String {
    match g.kind {
        GuestKind::Qemu => format!("vm:{}", g.vmid),
        GuestKind::Lxc => format!("ct:{}", g.vmid),
    }
}

/// A JSON boolean in PVE 9's shape, else Perl's 0/1.
fn flag(real: bool, b: bool) -> Value {
    if real { Value::Bool(b) } else { pbool(b) }
}

pub(crate) fn status_current(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let now = now_secs();
    // PVE 9 sends these flags as JSON booleans, older releases as 0/1.
    let real = c.shapes == Shapes::Real;
    let quorate = c.nodes.iter().filter(|n| n.online).count() * 2 > c.nodes.len();
    let mut out = vec![json!({
        "id": "quorum",
        "type": "quorum",
        "node": c.local_node,
        "status": if quorate { "OK".to_string() } else { format!("No quorum on node '{}'!", c.local_node) },
        "quorate": flag(real, quorate),
    })];
    let managed: Vec<&Guest> = c.guests.values().filter(|g| g.ha.is_some()).collect();
    if !c.clustered || managed.is_empty() {
        return Ok(Reply::Data(Value::Array(out)));
    }
    let master = &c.local_node;
    out.push(json!({
        "id": "master",
        "type": "master",
        "node": master,
        "status": format!("{master} (active, {})", ctime(now - 4)),
        "timestamp": now - 4,
    }));
    if real {
        // PVE 9.2: whether the CRM's watchdog is armed; no node.
        out.push(json!({
            "id": "fencing",
            "type": "fencing",
            "armed-state": "armed",
            "status": shapes::FENCING_STATUS,
        }));
    }
    let mut nodes: Vec<_> = c.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    for n in nodes {
        let active = managed.iter().any(|g| g.node == n.name);
        let (status, ts) = if !n.online {
            let ts = now - 86_400 - 3_217;
            (
                format!("{} (old timestamp - dead?, {})", n.name, ctime(ts)),
                ts,
            )
        } else if active {
            (format!("{} (active, {})", n.name, ctime(now - 7)), now - 7)
        } else {
            (format!("{} (idle, {})", n.name, ctime(now - 7)), now - 7)
        };
        out.push(json!({
            "id": format!("lrm:{}", n.name),
            "type": "lrm",
            "node": n.name,
            "status": status,
            "timestamp": ts,
        }));
    }
    for g in managed {
        let Some(ha) = &g.ha else { continue };
        let sid = sid(g);
        let mut e = json!({
            "id": format!("service:{sid}"),
            "type": "service",
            "sid": sid,
            "node": g.node,
            "state": ha.state,
            "status": format!("{sid} ({}, {})", g.node, ha.state),
            "crm_state": ha.state,
            "request_state": ha.state,
            "max_restart": 1,
            "max_relocate": 1,
            "failback": flag(real, ha.failback),
        });
        if real {
            e["auto-rebalance"] = ha.auto_rebalance.into();
        }
        if let Some(grp) = &ha.group {
            e["group"] = grp.clone().into();
        }
        out.push(e);
    }
    Ok(Reply::Data(Value::Array(out)))
}

pub(crate) fn resources(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let ty = ctx.params.get("type");
    let out = c
        .guests
        .values()
        .filter(|g| g.ha.is_some())
        .filter(|g| {
            ty.is_none_or(|t| match g.kind {
                GuestKind::Qemu => t == "vm",
                GuestKind::Lxc => t == "ct",
            })
        })
        .filter_map(|g| {
            let ha = g.ha.as_ref()?;
            let mut e = json!({
                "sid": sid(g),
                "type": match g.kind { GuestKind::Qemu => "vm", GuestKind::Lxc => "ct" },
                "state": ha.state,
                "max_restart": 1,
                "max_relocate": 1,
                "failback": u8::from(ha.failback),
                "digest": "a3c9d0e4b1f27c58e6d93a0b4c7e1f2a8d5b6c90",
            });
            if let Some(grp) = &ha.group {
                e["group"] = grp.clone().into();
            }
            if g.vmid == 100 {
                e["comment"] = "customer-facing web tier".into();
            }
            Some(e)
        })
        .collect();
    Ok(Reply::Data(Value::Array(out)))
}
