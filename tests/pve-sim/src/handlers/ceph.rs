//! `GET /cluster/ceph/status` and `GET /nodes/{node}/ceph/status`
//! (pve-manager's `PVE::Ceph::Tools::ceph_cluster_status`): `ceph status`
//! with the monmap and mgrmap that Octopus moved out of it re-added, and
//! `ceph health detail` as `health`.
//!
//! The primary cluster runs Ceph Squid: a monitor and a manager on every
//! node, OSDs 0-5 two per node (the disks of `disks/list`), one RBD pool
//! `vm-pool` (size 3) and `.mgr`. What is up follows the nodes: with
//! `pve3` offline its monitor is out of quorum and its OSDs are down and
//! out, so the cluster is `HEALTH_WARN` (`MON_DOWN`, `OSD_DOWN`,
//! `OSD_HOST_DOWN`, `PG_DEGRADED`: every PG active+undersized+degraded).
//! A cluster without Ceph answers `binary not installed:
//! /usr/bin/ceph-mon`.

use serde_json::{Map, Value, json};

use super::Ctx;
use super::act::die;
use crate::errors::{HandlerResult, Reply};
use crate::journal_seed::PEER_LOST;
use crate::seed::T0;
use crate::state::Cluster;
use crate::util::{civil, now_secs};

const FSID: &str = "5c0d8f3e-2b1a-4d6e-9f87-3a4b5c6d7e8f";
const OSD_BYTES: u64 = 4_000_787_030_016;
const PGS: u64 = 129;
const OBJECTS: u64 = 37_045;
const DATA_BYTES: u64 = 151_489_380_352;

fn iso(t: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!(
        "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:06}Z",
        t % 997 * 1_000
    )
}

fn addrvec(ip: &str) -> Value {
    json!({"addrvec": [
        {"type": "v2", "addr": format!("{ip}:3300"), "nonce": 0},
        {"type": "v1", "addr": format!("{ip}:6789"), "nonce": 0},
    ]})
}

/// A health check as `ceph health detail -f json` shows it.
fn check(summary: String, count: u64, detail: Vec<String>) -> Value {
    json!({
        "severity": "HEALTH_WARN",
        "summary": {"message": summary, "count": count},
        "detail": detail.into_iter().map(|m| json!({"message": m})).collect::<Vec<_>>(),
        "muted": false,
    })
}

/// `ceph status` (plus `mon dump`, `mgr dump` and `health detail`) as
/// the cluster is now.
fn status(c: &Cluster) -> Value {
    let now = now_secs();
    let mut nodes: Vec<_> = c.nodes.iter().collect();
    nodes.sort_by_key(|n| n.nodeid);
    let up: Vec<&str> = nodes
        .iter()
        .filter(|n| n.online)
        .map(|n| n.name.as_str())
        .collect();
    let down: Vec<(usize, &crate::state::Node)> = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.online)
        .map(|(i, n)| (i, *n))
        .collect();
    let quorum: Vec<usize> = (0..nodes.len()).filter(|i| nodes[*i].online).collect();
    let mons: Vec<Value> = nodes
        .iter()
        .enumerate()
        .map(|(rank, n)| {
            json!({
                "rank": rank,
                "name": n.name,
                "public_addrs": addrvec(&n.ip),
                "addr": format!("{}:6789/0", n.ip),
                "public_addr": format!("{}:6789/0", n.ip),
                "priority": 0,
                "weight": 0,
                "crush_location": "{}",
            })
        })
        .collect();
    let num_osds = 2 * nodes.len() as u64;
    let up_osds = 2 * up.len() as u64;
    let size = 3.min(up.len().max(1)) as u64;
    let degraded = up.len() < 3;
    let total_copies = OBJECTS * 3;
    let bytes_total = OSD_BYTES * up_osds;
    let bytes_used = DATA_BYTES * size + 3_221_225_472 * up_osds;

    let mut checks = Map::new();
    if !down.is_empty() {
        let names: Vec<String> = down
            .iter()
            .map(|(rank, n)| {
                format!(
                    "mon.{} (rank {rank}) addr [v2:{ip}:3300/0,v1:{ip}:6789/0] is down (out of quorum)",
                    n.name,
                    ip = n.ip
                )
            })
            .collect();
        checks.insert(
            "MON_DOWN".into(),
            check(
                format!(
                    "{}/{} mons down, quorum {}",
                    down.len(),
                    nodes.len(),
                    up.join(",")
                ),
                down.len() as u64,
                names,
            ),
        );
        let osds: Vec<String> = down
            .iter()
            .flat_map(|(i, n)| {
                [2 * i, 2 * i + 1]
                    .map(|o| format!("osd.{o} (root=default,host={}) is down", n.name))
            })
            .collect();
        checks.insert(
            "OSD_DOWN".into(),
            check(format!("{} osds down", osds.len()), osds.len() as u64, osds),
        );
        let hosts: Vec<String> = down
            .iter()
            .map(|(_, n)| format!("host {} (root=default) (2 osds) is down", n.name))
            .collect();
        checks.insert(
            "OSD_HOST_DOWN".into(),
            check(
                format!("{} host ({} osds) down", hosts.len(), 2 * hosts.len()),
                hosts.len() as u64,
                hosts,
            ),
        );
    }
    let mut pgs_by_state = vec![json!({"state_name": "active+clean", "count": PGS})];
    let mut pgmap = Map::new();
    if degraded {
        let lost = total_copies / 3 * (3 - size);
        checks.insert(
            "PG_DEGRADED".into(),
            check(
                format!(
                    "Degraded data redundancy: {lost}/{total_copies} objects degraded ({:.3}%), \
                     {PGS} pgs degraded, {PGS} pgs undersized",
                    lost as f64 * 100.0 / total_copies as f64
                ),
                PGS,
                (0..4)
                    .map(|i| {
                        format!(
                            "pg 2.{i:x} is stuck undersized for {}d, current state \
                             active+undersized+degraded, last acting [{},{}]",
                            now.saturating_sub(PEER_LOST) / 86_400,
                            i % 2,
                            2 + (i + 1) % 2
                        )
                    })
                    .collect(),
            ),
        );
        pgs_by_state = vec![json!({"state_name": "active+undersized+degraded", "count": PGS})];
        pgmap.insert("degraded_objects".into(), lost.into());
        pgmap.insert("degraded_total".into(), total_copies.into());
        pgmap.insert(
            "degraded_ratio".into(),
            (lost as f64 / total_copies as f64).into(),
        );
    }
    for (k, v) in [
        ("pgs_by_state", Value::from(pgs_by_state)),
        ("num_pgs", PGS.into()),
        ("num_pools", 2.into()),
        ("num_objects", OBJECTS.into()),
        ("data_bytes", DATA_BYTES.into()),
        ("bytes_used", bytes_used.into()),
        ("bytes_avail", bytes_total.saturating_sub(bytes_used).into()),
        ("bytes_total", bytes_total.into()),
        ("read_bytes_sec", 1_843_201.into()),
        ("write_bytes_sec", 6_221_824.into()),
        ("read_op_per_sec", 41.into()),
        ("write_op_per_sec", 213.into()),
    ] {
        pgmap.insert(k.into(), v);
    }
    let status = if checks.is_empty() {
        "HEALTH_OK"
    } else {
        "HEALTH_WARN"
    };
    let created = T0 - 200 * 86_400 + 4_211;
    let since = if down.is_empty() { created } else { PEER_LOST };
    let active = up.first().copied().unwrap_or("pve1");
    json!({
        "fsid": FSID,
        "health": {"status": status, "checks": checks, "mutes": []},
        "election_epoch": 48,
        "quorum": quorum,
        "quorum_names": up,
        "quorum_age": now.saturating_sub(since),
        "monmap": {
            "epoch": 3,
            "fsid": FSID,
            "modified": iso(created + 912),
            "created": iso(created),
            "min_mon_release": 19,
            "min_mon_release_name": "squid",
            "election_strategy": 1,
            "disallowed_leaders: ": "",
            "stretch_mode": false,
            "tiebreaker_mon": "",
            "removed_ranks: ": "",
            "features": {
                "persistent": ["kraken", "luminous", "mimic", "osdmap-prune", "nautilus",
                               "octopus", "pacific", "elector-pinging", "quincy", "reef",
                               "squid"],
                "optional": [],
            },
            "mons": mons,
            "quorum": quorum,
        },
        "osdmap": {
            "epoch": 412,
            "num_osds": num_osds,
            "num_up_osds": up_osds,
            "osd_up_since": since,
            "num_in_osds": up_osds,
            "osd_in_since": since + 600,
            "num_remapped_pgs": 0,
        },
        "pgmap": pgmap,
        "fsmap": {"epoch": 1, "btime": iso(created), "by_rank": [], "up:standby": 0},
        "mgrmap": {
            "epoch": 31,
            "active_gid": 14_102,
            "active_name": active,
            "available": true,
            "num_standbys": up.len().saturating_sub(1),
            "standbys": up.iter().skip(1).map(|n| json!({"name": n})).collect::<Vec<_>>(),
            "modules": ["iostat", "nfs", "restful"],
            "services": {},
        },
        "servicemap": {"epoch": 7, "modified": iso(since), "services": {}},
        "progress_events": {},
    })
}

/// `check_ceph_inited`: a cluster without Ceph has no `ceph-mon`.
fn inited(c: &Cluster) -> Result<(), crate::errors::ApiError> {
    if c.ceph {
        Ok(())
    } else {
        Err(die("binary not installed: /usr/bin/ceph-mon"))
    }
}

/// `GET /cluster/ceph/status` (answered by the node the call reaches)
/// and `GET /nodes/{node}/ceph/status` (proxied to the node): the same.
pub(crate) fn cluster_status(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    inited(&c)?;
    Ok(Reply::Data(status(&c)))
}
