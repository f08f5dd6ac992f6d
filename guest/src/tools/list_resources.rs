//! `pve_list_resources`: everything in the cluster (guests, nodes,
//! storage, pools, SDN) from one `GET /cluster/resources[?type=]`, as
//! compact records per kind.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Answer, Output, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{NodeName, Text, choice};
use crate::error::ToolError;
use crate::fetch;
use crate::format;
use crate::json as pj;
use crate::paging::{self, Limit, Offset, Page};
use crate::path::ApiPath;
#[cfg(test)]
use crate::schema;

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 200;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 2000;
choice! {
    /// The `type` filter Proxmox accepts.
    pub enum ResourceType {
        /// VMs and containers.
        Vm = "vm",
        /// Storages.
        Storage = "storage",
        /// Nodes.
        Node = "node",
        /// SDN zones.
        Sdn = "sdn",
    }
}

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_resources",
    title: "List cluster resources",
    description: "List everything the cluster reports in one call: guests (VMs and \
        containers), nodes, storage (one entry per storage and node), pools and SDN zones, \
        each as a compact record with id, type and its key fields, plus counts per type. Use \
        it for an inventory or to see storage fill levels across nodes; resource_type (vm, \
        storage, node, sdn) narrows it, node and status filter further. For guests alone \
        pve_list_vms has richer filters. Paged with limit (default 200, max 2000) and offset.",
    run: run,
    legacy_output_schema: output_schema,
};

/// Which resources to list.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Only this kind: vm (VMs and containers), storage, node or sdn. Omit for all, including
    /// pools.
    resource_type: Option<ResourceType>,
    /// Only resources on this node, e.g. "pve1" (case-insensitive).
    node: Option<NodeName>,
    /// Only resources with this status, e.g. running, stopped, online, offline, available
    /// (case-insensitive).
    status: Option<Text<32>>,
    /// Most resources to return (default 200, max 2000); total still counts all matches.
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    /// Skip this many resources first (default 0); pass the previous answer's next_offset to
    /// page on.
    #[serde(default)]
    offset: Offset,
}

#[cfg(test)]
fn rec(kind: &str, description: &str, fields: &[(&str, Value)]) -> Value {
    let mut props = vec![
        ("kind", json!({"const": kind, "description": "Record kind"})),
        (
            "id",
            schema::string("Proxmox resource id, e.g. qemu/100, node/pve1, storage/pve1/local"),
        ),
        (
            "type",
            schema::string("Proxmox type: qemu, lxc, node, storage, pool, sdn, ..."),
        ),
    ];
    props.extend_from_slice(fields);
    schema::object(description, &props)
}

#[cfg(test)]
fn output_schema() -> Value {
    let n = schema::nullable;
    let node_f = || ("node", n("string", "Node; null if none"));
    let status_f = || ("status", n("string", "Status; null if not reported"));
    let guest = rec(
        "guest",
        "A VM (qemu) or container (lxc).",
        &[
            ("vmid", schema::typed("integer", "VM/CT id")),
            ("name", n("string", "Guest name; null if none")),
            node_f(),
            status_f(),
            ("template", schema::boolean("true for a template")),
            (
                "cpu",
                n("number", "CPU use as a fraction of maxcpu; null if unknown"),
            ),
            ("maxcpu", n("number", "CPUs allotted; null if unknown")),
            ("mem", n("integer", "Memory used, bytes; null if unknown")),
            (
                "maxmem",
                n("integer", "Memory allotted, bytes; null if unknown"),
            ),
            (
                "maxdisk",
                n("integer", "Root disk size, bytes; null if unknown"),
            ),
            (
                "uptime",
                n("integer", "Seconds since start; null if unknown"),
            ),
            ("pool", n("string", "Pool; null if none")),
            ("tags", schema::strings("Tags")),
            ("lock", n("string", "Config lock; null if none")),
            ("hastate", n("string", "HA state; null if not HA-managed")),
        ],
    );
    let node = rec(
        "node",
        "A node.",
        &[
            node_f(),
            status_f(),
            ("cpu", n("number", "CPU use fraction; null if unknown")),
            ("maxcpu", n("number", "CPUs; null if unknown")),
            ("mem", n("integer", "Memory used, bytes; null if unknown")),
            (
                "maxmem",
                n("integer", "Memory size, bytes; null if unknown"),
            ),
            (
                "disk",
                n("integer", "Root disk used, bytes; null if unknown"),
            ),
            (
                "maxdisk",
                n("integer", "Root disk size, bytes; null if unknown"),
            ),
            (
                "uptime",
                n("integer", "Seconds since boot; null if unknown"),
            ),
        ],
    );
    let storage = rec(
        "storage",
        "A storage as seen from one node.",
        &[
            ("storage", schema::string("Storage id")),
            node_f(),
            status_f(),
            (
                "plugintype",
                n(
                    "string",
                    "Storage type (dir, lvmthin, zfspool, nfs, rbd, pbs, ...); null if unknown",
                ),
            ),
            ("shared", schema::boolean("true if shared between nodes")),
            (
                "content",
                schema::strings(
                    "Content types it holds (images, rootdir, backup, iso, vztmpl, snippets)",
                ),
            ),
            ("disk", n("integer", "Used, bytes; null if unknown")),
            ("maxdisk", n("integer", "Size, bytes; null if unknown")),
            (
                "used_fraction",
                n("number", "disk / maxdisk; null if unknown"),
            ),
        ],
    );
    let pool = rec(
        "pool",
        "A resource pool.",
        &[("pool", schema::string("Pool id"))],
    );
    let sdn = rec(
        "sdn",
        "An SDN zone as seen from one node.",
        &[
            ("sdn", n("string", "SDN zone; null if not reported")),
            node_f(),
            status_f(),
        ],
    );
    let other = rec(
        "other",
        "Any other resource type a newer Proxmox reports.",
        &[node_f(), status_f()],
    );
    let mut props = vec![
        (
            "resources",
            json!({"type": "array", "items": {"oneOf": [guest, node, storage, pool, sdn, other]},
                "description": "Matching resources: pools, guests by vmid, nodes, storage, sdn, others; one page of them"}),
        ),
        (
            "count_by_type",
            json!({"type": "object", "additionalProperties": {"type": "integer", "minimum": 1},
                "description": "Number of matching resources per Proxmox type (qemu, lxc, node, storage, pool, sdn, ...), over all pages"}),
        ),
    ];
    props.extend(schema::page_info());
    schema::object("", &props)
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<Value>, ToolError> {
    let node = input.node.as_ref().map(NodeName::as_str);
    let status = input.status.as_ref().map(Text::as_str);
    let page = Page::new(input.limit, input.offset);
    let mut path = ApiPath::new("cluster").lit("resources");
    if let Some(t) = input.resource_type {
        path = path.query("type", t.as_str());
    }
    let entries = fetch::list(pve, &path)?;
    Ok(shape(&entries, node, status, page).untyped())
}

fn rank(kind: &str) -> u8 {
    match kind {
        "pool" => 0,
        "guest" => 1,
        "node" => 2,
        "storage" => 3,
        "sdn" => 4,
        _ => 5,
    }
}

/// One compact record.
pub fn record(e: &Map<String, Value>) -> Option<Value> {
    let ty = pj::text(e.get("type"))?;
    let id = pj::text(e.get("id")).unwrap_or_default();
    let t = |k: &str| pj::text(e.get(k));
    let u = |k: &str| pj::uint(e.get(k));
    Some(match ty.as_str() {
        "qemu" | "lxc" => {
            let vmid = pj::uint(e.get("vmid"))
                .or_else(|| id.rsplit_once('/').and_then(|(_, v)| v.parse().ok()))?;
            json!({"kind": "guest", "id": id, "type": ty, "vmid": vmid, "name": t("name"),
                "node": t("node"), "status": t("status"), "template": pj::flag(e.get("template")),
                "cpu": pj::fraction(e.get("cpu")).map(pj::tidy), "maxcpu": pj::num(e.get("maxcpu")).map(pj::tidy),
                "mem": u("mem"), "maxmem": u("maxmem"), "maxdisk": u("maxdisk"), "uptime": u("uptime"),
                "pool": t("pool"), "tags": pj::tags(e.get("tags")), "lock": t("lock"), "hastate": t("hastate")})
        }
        "node" => {
            json!({"kind": "node", "id": id, "type": ty, "node": t("node"), "status": t("status"),
            "cpu": pj::fraction(e.get("cpu")).map(pj::tidy), "maxcpu": pj::num(e.get("maxcpu")).map(pj::tidy),
            "mem": u("mem"), "maxmem": u("maxmem"), "disk": u("disk"), "maxdisk": u("maxdisk"),
            "uptime": u("uptime")})
        }
        "storage" => {
            let (disk, maxdisk) = (u("disk"), u("maxdisk"));
            json!({"kind": "storage", "id": id, "type": ty,
                "storage": t("storage").unwrap_or_else(|| id.rsplit('/').next().unwrap_or_default().to_owned()),
                "node": t("node"), "status": t("status"), "plugintype": t("plugintype"),
                "shared": pj::flag(e.get("shared")), "content": split_list(e.get("content")),
                "disk": disk, "maxdisk": maxdisk, "used_fraction": ratio(disk, maxdisk)})
        }
        "pool" => json!({"kind": "pool", "id": id, "type": ty,
            "pool": t("pool").unwrap_or_else(|| id.trim_start_matches("/pool/").to_owned())}),
        "sdn" => {
            json!({"kind": "sdn", "id": id, "type": ty, "sdn": t("sdn"), "node": t("node"), "status": t("status")})
        }
        _ => {
            json!({"kind": "other", "id": id, "type": ty, "node": t("node"), "status": t("status")})
        }
    })
}

/// `used / total` rounded to four decimals; `None` if unknown or total 0.
pub fn ratio(used: Option<u64>, total: Option<u64>) -> Option<f64> {
    match (used, total) {
        (Some(u), Some(t)) if t > 0 => Some(((u as f64 / t as f64) * 10_000.0).round() / 10_000.0),
        _ => None,
    }
}

/// A comma-separated Proxmox list (`"images,rootdir"`), split and sorted.
pub fn split_list(v: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = pj::text(v)
        .unwrap_or_default()
        .split([',', ';', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Filters, orders, counts and pages the records.
pub fn shape(entries: &[Value], node: Option<&str>, status: Option<&str>, page: Page) -> Output {
    let mut recs: Vec<Value> = entries
        .iter()
        .filter_map(Value::as_object)
        .filter_map(record)
        .filter(|r| {
            node.is_none_or(|n| {
                r["node"]
                    .as_str()
                    .is_some_and(|rn| rn.eq_ignore_ascii_case(n))
            })
        })
        .filter(|r| {
            status.is_none_or(|s| {
                r["status"]
                    .as_str()
                    .is_some_and(|rs| rs.eq_ignore_ascii_case(s))
            })
        })
        .collect();
    recs.sort_by(|a, b| {
        let key = |r: &Value| {
            (
                rank(r["kind"].as_str().unwrap_or("")),
                r["vmid"].as_u64().unwrap_or(0),
                r["id"].as_str().unwrap_or("").to_owned(),
            )
        };
        key(a).cmp(&key(b))
    });
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for r in &recs {
        *counts
            .entry(r["type"].as_str().unwrap_or("").to_owned())
            .or_default() += 1;
    }
    let (recs, info) = paging::paginate(recs, page);
    let mut filters = Vec::new();
    if let Some(n) = node {
        filters.push(format!("node={n}"));
    }
    if let Some(s) = status {
        filters.push(format!("status={s}"));
    }
    let matching = if filters.is_empty() {
        String::new()
    } else {
        format!(" matching {}", filters.join(", "))
    };
    let summary = if info.total == 0 {
        format!("No resources{matching} (the API token sees only what it may audit).")
    } else {
        let breakdown = counts
            .iter()
            .map(|(t, n)| format!("{n} {t}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "{}{matching} ({breakdown}); {}.",
            format::count(info.total, "resource", "resources"),
            info.describe()
        )
    };
    let mut structured = json!({"resources": recs, "count_by_type": counts});
    info.insert_into(&mut structured);
    Output {
        structured,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;

    fn all() -> Value {
        json!([
            {"id":"/pool/prod","pool":"prod","type":"pool"},
            {"netout":545248946,"type":"qemu","name":"server1","maxcpu":1,"mem":842551296,"netin":2456116121u64,
             "maxmem":1073741824,"disk":0,"node":"node2","cpu":0.0249060195469461,"maxdisk":34359738368u64,"vmid":100,
             "diskwrite":6059209728u64,"diskread":4510777856u64,"status":"running","template":0,"id":"qemu/100","uptime":874350,"pool":"prod"},
            {"id":"lxc/1000","vmid":"1000","type":"lxc","node":"node3","status":"unknown","name":"offline-ct"},
            {"id":"lxc/101","vmid":101,"type":"lxc","node":"node3","status":"stopped","name":"ct","template":0,"tags":"a;b"},
            {"maxdisk":482713534464u64,"cpu":0.0054917623564653,"node":"node3","disk":2983723008u64,"maxmem":16668827648u64,
             "mem":1681965056,"maxcpu":4,"type":"node","uptime":872961,"level":"","id":"node/node3","cgroup-mode":2,"status":"online"},
            {"shared":0,"type":"storage","status":"available","plugintype":"zfspool","id":"storage/node3/local-zfs",
             "storage":"local-zfs","node":"node3","disk":98304,"content":"rootdir,images","maxdisk":479730032640u64},
            {"id":"sdn/node3/localnetwork","sdn":"localnetwork","node":"node3","type":"sdn","status":"ok"},
            {"id":"network/node3/zone/x","type":"network","node":"node3","status":"ok"}
        ])
    }

    fn call(path: &str, data: Value, args: &str) -> Output {
        let mut pve = FakePve::default().with(path, data);
        let out = TOOL.call(&mut pve, args).unwrap();
        crate::tools::testing::assert_valid_output(&TOOL, &out);
        assert_eq!(pve.requests, [path]);
        out
    }

    #[test]
    fn every_kind_is_compact_and_ordered() {
        let out = call("/cluster/resources", all(), "{}");
        let r = out.structured["resources"].as_array().unwrap();
        let ids: Vec<&str> = r.iter().map(|x| x["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            [
                "/pool/prod",
                "qemu/100",
                "lxc/101",
                "lxc/1000",
                "node/node3",
                "storage/node3/local-zfs",
                "sdn/node3/localnetwork",
                "network/node3/zone/x"
            ]
        );
        assert_eq!(
            r[0],
            json!({"kind":"pool","id":"/pool/prod","type":"pool","pool":"prod"})
        );
        assert_eq!(r[1]["pool"], "prod");
        assert_eq!(r[1]["cpu"], 0.0249);
        assert_eq!(r[3]["vmid"], 1000);
        assert_eq!(r[3]["mem"], Value::Null);
        assert_eq!(r[2]["tags"], json!(["a", "b"]));
        assert_eq!(r[5]["content"], json!(["images", "rootdir"]));
        assert_eq!(r[5]["used_fraction"], 0.0);
        assert_eq!(r[5]["shared"], false);
        assert_eq!(r[7]["kind"], "other");
        assert_eq!(
            out.structured["count_by_type"],
            json!({"lxc":2,"network":1,"node":1,"pool":1,"qemu":1,"sdn":1,"storage":1})
        );
        assert_eq!(out.structured["total"], 8);
        assert!(
            out.summary.starts_with("8 resources (2 lxc, 1 network"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn type_query_and_filters() {
        let out = call(
            "/cluster/resources?type=vm",
            all(),
            r#"{"resource_type": "vm", "status": "RUNNING"}"#,
        );
        assert_eq!(out.structured["total"], 1);
        assert_eq!(out.structured["resources"][0]["vmid"], 100);
        let out = call(
            "/cluster/resources",
            all(),
            r#"{"node": "node3", "limit": 2, "offset": 1}"#,
        );
        assert_eq!(out.structured["total"], 6);
        assert_eq!(out.structured["returned"], 2);
        assert_eq!(out.structured["next_offset"], 3);
        assert_eq!(out.structured["resources"][0]["id"], "lxc/1000");
    }

    #[test]
    fn validation_comes_first() {
        let mut pve = FakePve::default();
        for (a, start) in [
            (
                r#"{"resource_type": "qemu"}"#,
                "resource_type: must be one of",
            ),
            (r#"{"node": "a/b"}"#, "node: "),
            (r#"{"status": ""}"#, "status: must not be empty"),
            (r#"{"limit": 2001}"#, "limit: "),
        ] {
            let e = TOOL.call(&mut pve, a).unwrap_err();
            assert!(e.message().starts_with(start), "{a}: {e}");
        }
        assert!(pve.requests.is_empty());
    }
}
