//! A node's system services (pve-manager's `PVE::API2::Services`): `GET
//! /nodes/{node}/services`, `GET .../services/{service}` (the command
//! index) and `GET .../services/{service}/state`, from what `systemctl
//! show` reports: `state` is the unit's SubState, `active-state` its
//! ActiveState, `unit-state` its UnitFileState (`not-found` when the unit
//! is not installed).
//!
//! Seed: every service runs, but `chrony` failed on `pve2` (see its
//! journal), `systemd-timesyncd` is not installed (chrony is), `postfix` is
//! the oneshot that only manages its instances (`exited`), and a
//! standalone node's corosync never started (no `corosync.conf`).

use serde_json::{Value, json};

use super::Ctx;
use crate::errors::{HandlerResult, Reply};
use crate::state::Cluster;

/// `$service_name_list`, with each unit's Description.
pub(crate) const SERVICES: &[(&str, &str)] = &[
    ("chrony", "chrony, an NTP client/server"),
    ("corosync", "Corosync Cluster Engine"),
    ("cron", "Regular background program processing daemon"),
    ("ksmtuned", "Kernel Samepage Merging (KSM) Tuning Daemon"),
    ("lxcfs", "FUSE filesystem for LXC"),
    ("postfix", "Postfix Mail Transport Agent"),
    ("proxmox-firewall", "Proxmox nftables firewall"),
    ("pve-cluster", "The Proxmox VE cluster filesystem"),
    ("pve-firewall", "Proxmox VE firewall"),
    ("pve-ha-crm", "PVE Cluster HA Resource Manager Daemon"),
    ("pve-ha-lrm", "PVE Local HA Resource Manager Daemon"),
    ("pve-lxc-syscalld", "Proxmox VE LXC Syscall Daemon"),
    ("pvedaemon", "PVE API Daemon"),
    ("pvefw-logger", "Proxmox VE firewall logger"),
    ("pveproxy", "PVE API Proxy Server"),
    ("pvescheduler", "Proxmox VE scheduler"),
    ("pvestatd", "PVE Status Daemon"),
    ("qmeventd", "PVE Qemu Event Daemon"),
    ("spiceproxy", "PVE SPICE Proxy Server"),
    ("sshd", "OpenBSD Secure Shell server"),
    ("syslog", "System Logging Service"),
    ("systemd-journald", "Journal Service"),
    ("systemd-timesyncd", "Network Time Synchronization"),
];

/// The service ids, for the `service` parameter's enum.
pub(crate) fn ids() -> Vec<&'static str> {
    SERVICES.iter().map(|(id, _)| *id).collect()
}

/// `(desc, state, active-state, unit-state)` of a service on a node.
fn unit(c: &Cluster, node: &str, id: &str, desc: &'static str) -> [String; 4] {
    let not_found = |id: &str| {
        [
            format!("{id}.service"),
            "dead".into(),
            "inactive".into(),
            "not-found".into(),
        ]
    };
    let s = |desc: &str, state: &str, active: &str, unit: &str| {
        [desc.into(), state.into(), active.into(), unit.into()]
    };
    match id {
        "systemd-timesyncd" => not_found(id),
        // The nftables firewall came with PVE 8.2.
        "proxmox-firewall" if !c.release_of(node).at_least(8, 2) => not_found(id),
        "chrony" if node == "pve2" => s(desc, "failed", "failed", "enabled"),
        "corosync" if !c.clustered => s(desc, "dead", "inactive", "enabled"),
        "postfix" => s(desc, "exited", "active", "enabled"),
        "systemd-journald" => s(desc, "running", "active", "static"),
        _ => s(desc, "running", "active", "enabled"),
    }
}

fn entry(c: &Cluster, node: &str, id: &str, desc: &'static str) -> Value {
    let [desc, state, active, unit_state] = unit(c, node, id, desc);
    json!({
        "service": id,
        "name": id,
        "desc": desc,
        "state": state,
        "active-state": active,
        "unit-state": unit_state,
    })
}

/// `GET /nodes/{node}/services`, sorted by id.
pub(crate) fn index(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let list = SERVICES
        .iter()
        .map(|(id, desc)| entry(&c, ctx.node, id, desc))
        .collect();
    Ok(Reply::Data(Value::Array(list)))
}

/// `GET /nodes/{node}/services/{service}`: the commands (not proxied).
pub(crate) fn commands(_ctx: &Ctx<'_>) -> HandlerResult {
    let subdirs = ["state", "start", "stop", "restart", "reload"];
    Ok(Reply::Data(
        subdirs.iter().map(|s| json!({"subdir": s})).collect(),
    ))
}

/// `GET /nodes/{node}/services/{service}/state`.
pub(crate) fn state(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let id = ctx.params.path("service");
    let desc = SERVICES
        .iter()
        .find(|(s, _)| *s == id)
        .map_or("", |(_, d)| *d);
    Ok(Reply::Data(entry(&c, ctx.node, id, desc)))
}
