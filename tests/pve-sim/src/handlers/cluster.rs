//! `/version`, `/cluster/resources`, `/cluster/status`.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::{Ctx, frac, pbool};
use crate::Shapes;
use crate::errors::{HandlerResult, Reply};
use crate::shapes;
use crate::state::{Cluster, Guest, GuestKind, Node, RunState, Storage};
use crate::util::lock;

/// `GET /api2/json/`: the top-level directories.
pub(crate) fn root_index(_ctx: &Ctx<'_>) -> HandlerResult {
    let dirs = ["version", "cluster", "nodes", "storage", "access", "pools"];
    Ok(Reply::Data(Value::Array(
        dirs.iter().map(|d| json!({ "subdir": d })).collect(),
    )))
}

pub(crate) fn version(ctx: &Ctx<'_>) -> HandlerResult {
    let r = ctx.cluster().local_release();
    Ok(Reply::Data(json!({
        "version": r.version,
        "release": r.release,
        "repoid": r.repoid,
    })))
}

/// A guest's `/cluster/resources` entry. Without RRD data (node offline) PVE
/// knows only the config-derived keys, and the status is `unknown`.
pub(crate) fn guest_resource(g: &Guest, node_online: bool) -> Value {
    let mut m = Map::new();
    m.insert(
        "id".into(),
        format!("{}/{}", g.kind.as_str(), g.vmid).into(),
    );
    m.insert("vmid".into(), g.vmid.into());
    m.insert("node".into(), g.node.clone().into());
    m.insert("type".into(), g.kind.as_str().into());
    if node_online {
        let running = g.is_running();
        let s = &g.stats;
        let status = match g.run {
            RunState::Stopped => "stopped",
            RunState::Running => "running",
            RunState::Paused => "paused",
        };
        m.insert("status".into(), status.into());
        m.insert("name".into(), g.display_name().into());
        m.insert("template".into(), pbool(g.template));
        m.insert("uptime".into(), s.uptime.into());
        let maxcpu = match g.kind {
            GuestKind::Qemu => g.cpus(),
            GuestKind::Lxc => g.cores,
        };
        m.insert("maxcpu".into(), maxcpu.into());
        m.insert("cpu".into(), frac(s.cpu));
        m.insert("maxmem".into(), g.maxmem().into());
        m.insert("mem".into(), s.mem.into());
        m.insert("maxdisk".into(), g.maxdisk.into());
        let disk = if g.kind == GuestKind::Lxc && running {
            g.disk
        } else {
            0
        };
        m.insert("disk".into(), disk.into());
        m.insert("netin".into(), s.netin.into());
        m.insert("netout".into(), s.netout.into());
        m.insert("diskread".into(), s.diskread.into());
        m.insert("diskwrite".into(), s.diskwrite.into());
        if g.kind == GuestKind::Qemu {
            m.insert("memhost".into(), memhost(g).into());
        }
    } else {
        m.insert("status".into(), "unknown".into());
    }
    if let Some(p) = &g.pool {
        m.insert("pool".into(), p.clone().into());
    }
    if let Some(l) = &g.lock {
        m.insert("lock".into(), l.clone().into());
    }
    if let Some(t) = &g.tags {
        m.insert("tags".into(), t.clone().into());
    }
    if let Some(ha) = &g.ha {
        m.insert("hastate".into(), ha.state.clone().into());
    }
    Value::Object(m)
}

/// Host view of a running VM's memory: guest usage plus QEMU overhead.
pub(crate) fn memhost(g: &Guest) -> u64 {
    if g.is_running() {
        g.stats.mem + g.stats.mem / 50 + 180 * 1024 * 1024
    } else {
        0
    }
}

/// A node's entry in `/nodes` and `/cluster/resources`, as PVE's
/// `extract_node_stats`: without `Sys.Audit` only id/node/type/status/level;
/// an offline node keeps only the max* values of its stale RRD data.
pub(crate) fn node_entry(n: &Node, audit: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), format!("node/{}", n.name).into());
    m.insert("node".into(), n.name.clone().into());
    m.insert("type".into(), "node".into());
    m.insert(
        "status".into(),
        if n.online { "online" } else { "offline" }.into(),
    );
    if n.online {
        m.insert("level".into(), n.level.into());
        if audit {
            m.insert("uptime".into(), n.uptime.into());
            m.insert("cpu".into(), frac(n.cpu));
            m.insert("mem".into(), n.mem.into());
            m.insert("disk".into(), n.rootfs_used.into());
        }
    }
    if audit {
        m.insert("maxcpu".into(), n.threads.into());
        m.insert("maxmem".into(), n.maxmem.into());
        m.insert("maxdisk".into(), n.rootfs_total.into());
    }
    m
}

/// A storage's entry on a node (`extract_storage_stats`), in
/// `/cluster/resources` and pool members.
pub(crate) fn storage_resource(s: &Storage, n: &Node) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), format!("storage/{}/{}", n.name, s.id).into());
    m.insert("storage".into(), s.id.clone().into());
    m.insert("node".into(), n.name.clone().into());
    m.insert("type".into(), "storage".into());
    m.insert("plugintype".into(), s.plugintype.into());
    m.insert("shared".into(), pbool(s.shared));
    m.insert("content".into(), s.content.into());
    if n.online {
        m.insert("status".into(), "available".into());
        m.insert("maxdisk".into(), s.total.into());
        let used = s.used.get(&n.name).copied().unwrap_or(0);
        m.insert("disk".into(), used.into());
    } else {
        m.insert("status".into(), "unknown".into());
    }
    m
}

/// Serialised guest entries in PVE's order (vmid compared as strings),
/// rebuilt only when the state changed. Large clusters stay cheap to list.
fn guest_entries(c: &Cluster) -> Vec<(u32, Bytes)> {
    let mut cache = lock(&c.resource_cache);
    if !cache.valid || cache.generation != c.generation {
        let mut ids: Vec<&Guest> = c.guests.values().collect();
        ids.sort_by_key(|g| g.vmid.to_string());
        cache.guests = ids
            .into_iter()
            .map(|g| {
                let online = c.node(&g.node).is_some_and(|n| n.online);
                (g.vmid, Bytes::from(guest_resource(g, online).to_string()))
            })
            .collect();
        cache.generation = c.generation;
        cache.valid = true;
    }
    cache.guests.clone()
}

pub(crate) fn resources(ctx: &Ctx<'_>) -> HandlerResult {
    let ty = ctx.params.get("type");
    let want = |t: &str| ty.is_none() || ty == Some(t);
    let c = ctx.cluster();
    let mut out: Vec<u8> = Vec::with_capacity(256 * (c.guests.len() + 16));
    out.push(b'[');
    let push = |out: &mut Vec<u8>, bytes: &[u8]| {
        if out.len() > 1 {
            out.push(b',');
        }
        out.extend_from_slice(bytes);
    };

    if ty.is_none() {
        let mut pools: Vec<&str> = c.pools.iter().map(|p| p.id.as_str()).collect();
        pools.sort_unstable();
        for p in pools {
            if ctx.can(&format!("/pool/{p}"), "Pool.Audit") {
                let v = json!({"id": format!("/pool/{p}"), "pool": p, "type": "pool"});
                push(&mut out, v.to_string().as_bytes());
            }
        }
    }
    if want("vm") {
        for (vmid, entry) in guest_entries(&c) {
            if ctx.can(&format!("/vms/{vmid}"), "VM.Audit") {
                push(&mut out, &entry);
            }
        }
    }
    let mut nodes: Vec<&Node> = c.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    if want("node") {
        for n in &nodes {
            let audit = ctx.can(&format!("/nodes/{}", n.name), "Sys.Audit");
            let mut m = node_entry(n, audit);
            if audit {
                m.insert("cgroup-mode".into(), 2.into());
            }
            push(&mut out, Value::Object(m).to_string().as_bytes());
        }
    }
    if want("storage") {
        let mut storages: Vec<_> = c.storages.iter().collect();
        storages.sort_by(|a, b| a.id.cmp(&b.id));
        for s in storages {
            let path = format!("/storage/{}", s.id);
            if !ctx.can(&path, "Datastore.Audit") && !ctx.can(&path, "Datastore.AllocateSpace") {
                continue;
            }
            for n in &nodes {
                if s.nodes.as_ref().is_some_and(|l| !l.contains(&n.name)) {
                    continue;
                }
                let m = storage_resource(s, n);
                push(&mut out, Value::Object(m).to_string().as_bytes());
            }
        }
    }
    // PVE 9 lists SDN zones and fabrics as `network` entries, which
    // `?type=sdn` does not select: it keeps only legacy `sdn` entries, and
    // this cluster has none.
    let real = c.shapes == Shapes::Real;
    if real && ty.is_none() {
        for n in nodes.iter().filter(|n| n.online) {
            for (kind, name, key, value, status) in shapes::NETWORKS {
                if !ctx.can(&format!("/sdn/{kind}s/{name}"), "SDN.Audit") {
                    continue;
                }
                let mut m = Map::new();
                m.insert(
                    "id".into(),
                    format!("network/{}/{kind}/{name}", n.name).into(),
                );
                m.insert("type".into(), "network".into());
                m.insert("network-type".into(), (*kind).into());
                m.insert("network".into(), (*name).into());
                m.insert((*key).into(), (*value).into());
                m.insert("node".into(), n.name.clone().into());
                m.insert("status".into(), (*status).into());
                push(&mut out, Value::Object(m).to_string().as_bytes());
            }
        }
    }
    if want("sdn") && !real {
        for n in nodes.iter().filter(|n| n.online) {
            if !ctx.can("/sdn/zones/localnetwork", "SDN.Audit") {
                continue;
            }
            let v = json!({
                "id": format!("sdn/{}/localnetwork", n.name),
                "sdn": "localnetwork",
                "node": n.name,
                "type": "sdn",
                "status": "ok",
            });
            push(&mut out, v.to_string().as_bytes());
        }
    }
    out.push(b']');
    Ok(Reply::RawData(Bytes::from(out)))
}

pub(crate) fn status(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    if !c.clustered {
        // Standalone node: PVE fakes a single entry for the local node.
        let n = c.node(&c.local_node);
        return Ok(Reply::Data(json!([{
            "type": "node",
            "id": format!("node/{}", c.local_node),
            "name": c.local_node,
            "nodeid": 0,
            "ip": n.map(|n| n.ip.clone()).unwrap_or_default(),
            "local": 1,
            "online": 1,
            "level": n.map_or("", |n| n.level),
        }])));
    }
    let mut out = vec![json!({
        "type": "cluster",
        "id": "cluster",
        "name": c.name,
        "nodes": c.nodes.len(),
        "version": c.config_version,
        "quorate": pbool(c.nodes.iter().filter(|n| n.online).count() * 2 > c.nodes.len()),
    })];
    let mut nodes: Vec<&Node> = c.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    for n in nodes {
        let mut m = Map::new();
        m.insert("type".into(), "node".into());
        m.insert("id".into(), format!("node/{}", n.name).into());
        m.insert("name".into(), n.name.clone().into());
        m.insert("nodeid".into(), n.nodeid.into());
        m.insert("local".into(), pbool(n.name == c.local_node));
        m.insert("online".into(), pbool(n.online));
        m.insert("ip".into(), n.ip.clone().into());
        if n.online {
            m.insert("level".into(), n.level.into());
        }
        out.push(Value::Object(m));
    }
    Ok(Reply::Data(Value::Array(out)))
}
