//! `pve_list_resources`: everything in the cluster (guests, nodes,
//! storage, pools, SDN) from one `GET /cluster/resources[?type=]`, as
//! compact records per kind.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{NodeName, Text, choice};
use crate::error::ToolError;
use crate::fetch;
use crate::format;
use crate::json::{self as pj, Tidy, ratio, split_list};
use crate::paging::{self, Counts, Limit, Offset, Page, PageInfo};
use crate::path::ApiPath;

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
        /// SDN zones, vnets and fabrics: PVE 9's `network` entries and
        /// older releases' `sdn` ones.
        Sdn = "sdn",
    }
}

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_resources",
    title: "List cluster resources",
    description: "Everything the cluster reports: guests, nodes, storage per node, pools and SDN, \
        with counts per type. For guests alone use pve_list_vms.",
    reads: ["/cluster/resources"],
    privileges: [
        "/vms": "VM.Audit",
        "/nodes/{node}": "Sys.Audit",
        "/storage": "Datastore.Audit" | "Datastore.AllocateSpace",
    ],
    run: run,
};

/// Which resources to list.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Only this kind (vm: VMs and CTs)
    resource_type: Option<ResourceType>,
    /// Only on this node
    node: Option<NodeName>,
    /// Only this status, e.g. online
    status: Option<Text<32>>,
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    #[serde(default)]
    offset: Offset,
}

/// Matching resources, one page of them.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ResourceList {
    /// Matching resources: pools, guests by vmid, nodes, storage, sdn and network, others; one
    /// page of them
    pub resources: Vec<Resource>,
    /// Number of matching resources per Proxmox type (qemu, lxc, node, storage, pool, sdn,
    /// network, ...), over all pages
    pub count_by_type: Counts,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// One resource, with the fields of its kind.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Resource {
    /// A VM (qemu) or container (lxc).
    Guest(Record<GuestFields>),
    /// A node.
    Node(Record<NodeFields>),
    /// A storage as seen from one node.
    Storage(Record<StorageFields>),
    /// A resource pool.
    Pool(Record<PoolFields>),
    /// An SDN zone as seen from one node (type sdn, before PVE 9).
    Sdn(Record<SdnFields>),
    /// An SDN zone, vnet or fabric as seen from one node (type network, PVE 9).
    Network(Record<NetworkFields>),
    /// Any other resource type a newer Proxmox reports.
    Other(Record<Placed>),
}

/// What every resource has, and the fields of its kind.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Record<T> {
    /// Proxmox resource id, e.g. qemu/100, node/pve1, storage/pve1/local
    pub id: String,
    /// Proxmox type: qemu, lxc, node, storage, pool, sdn, network, ...
    #[serde(rename = "type")]
    pub resource_type: String,
    /// The kind's own fields.
    #[serde(flatten)]
    pub fields: T,
}

/// Where a resource is and how it is.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Placed {
    /// Node; null if none
    pub node: Option<String>,
    /// Status; null if not reported
    pub status: Option<String>,
}

/// A guest's fields.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct GuestFields {
    /// VM/CT id
    pub vmid: u64,
    /// Guest name; null if none
    pub name: Option<String>,
    /// Node and status.
    #[serde(flatten)]
    pub placed: Placed,
    /// true for a template
    pub template: bool,
    /// CPU use as a fraction of maxcpu; null if unknown
    pub cpu: Option<Tidy>,
    /// CPUs allotted; null if unknown
    pub maxcpu: Option<Tidy>,
    /// Memory used, bytes; null if unknown
    pub mem: Option<u64>,
    /// Memory allotted, bytes; null if unknown
    pub maxmem: Option<u64>,
    /// Root disk size, bytes; null if unknown
    pub maxdisk: Option<u64>,
    /// Seconds since start; null if unknown
    pub uptime: Option<u64>,
    /// Pool; null if none
    pub pool: Option<String>,
    /// Tags
    pub tags: Vec<String>,
    /// Config lock; null if none
    pub lock: Option<String>,
    /// HA state; null if not HA-managed
    pub hastate: Option<String>,
}

/// A node's fields.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct NodeFields {
    /// Node and status.
    #[serde(flatten)]
    pub placed: Placed,
    /// CPU use fraction; null if unknown
    pub cpu: Option<Tidy>,
    /// CPUs; null if unknown
    pub maxcpu: Option<Tidy>,
    /// Memory used, bytes; null if unknown
    pub mem: Option<u64>,
    /// Memory size, bytes; null if unknown
    pub maxmem: Option<u64>,
    /// Root disk used, bytes; null if unknown
    pub disk: Option<u64>,
    /// Root disk size, bytes; null if unknown
    pub maxdisk: Option<u64>,
    /// Seconds since boot; null if unknown
    pub uptime: Option<u64>,
}

/// A storage's fields.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct StorageFields {
    /// Storage id
    pub storage: String,
    /// Node and status.
    #[serde(flatten)]
    pub placed: Placed,
    /// Storage type (dir, lvmthin, zfspool, nfs, rbd, pbs, ...); null if unknown
    pub plugintype: Option<String>,
    /// true if shared between nodes
    pub shared: bool,
    /// Content types it holds (images, rootdir, backup, iso, vztmpl, snippets)
    pub content: Vec<String>,
    /// Used, bytes; null if unknown
    pub disk: Option<u64>,
    /// Size, bytes; null if unknown
    pub maxdisk: Option<u64>,
    /// disk / maxdisk; null if unknown
    pub used_fraction: Option<f64>,
}

/// A pool's fields.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct PoolFields {
    /// Pool id
    pub pool: String,
}

/// An SDN zone's fields (type sdn).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SdnFields {
    /// SDN zone; null if not reported
    pub sdn: Option<String>,
    /// Zone type (simple, vlan, qinq, vxlan, evpn, ...); null if not reported
    pub zone_type: Option<String>,
    /// Node and status.
    #[serde(flatten)]
    pub placed: Placed,
}

/// An SDN network entity's fields (type network, PVE 9).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct NetworkFields {
    /// Name of the zone, vnet or fabric, e.g. lab-network; null if not reported
    pub network: Option<String>,
    /// What it is: zone, fabric, vnet, ...; null if not reported
    pub network_type: Option<String>,
    /// Zone type (simple, vlan, evpn, ...) for zones; null if not reported
    pub zone_type: Option<String>,
    /// Routing protocol (openfabric, ospf, ...) for fabrics; null if not reported
    pub protocol: Option<String>,
    /// Node and status.
    #[serde(flatten)]
    pub placed: Placed,
}

impl<T> Record<T> {
    fn new(id: &str, resource_type: &str, fields: T) -> Self {
        Record {
            id: id.to_owned(),
            resource_type: resource_type.to_owned(),
            fields,
        }
    }
}

impl Resource {
    /// Where it is and how it is; a pool is nowhere.
    fn placed(&self) -> Option<&Placed> {
        match self {
            Resource::Guest(r) => Some(&r.fields.placed),
            Resource::Node(r) => Some(&r.fields.placed),
            Resource::Storage(r) => Some(&r.fields.placed),
            Resource::Sdn(r) => Some(&r.fields.placed),
            Resource::Network(r) => Some(&r.fields.placed),
            Resource::Other(r) => Some(&r.fields),
            Resource::Pool(_) => None,
        }
    }

    /// Its id and Proxmox type.
    fn id_and_type(&self) -> (&str, &str) {
        match self {
            Resource::Guest(r) => (&r.id, &r.resource_type),
            Resource::Node(r) => (&r.id, &r.resource_type),
            Resource::Storage(r) => (&r.id, &r.resource_type),
            Resource::Pool(r) => (&r.id, &r.resource_type),
            Resource::Sdn(r) => (&r.id, &r.resource_type),
            Resource::Network(r) => (&r.id, &r.resource_type),
            Resource::Other(r) => (&r.id, &r.resource_type),
        }
    }

    /// Pools first, then guests by vmid, nodes, storage, sdn/network and the rest.
    fn order(&self) -> (u8, u64, &str) {
        let (id, _) = self.id_and_type();
        match self {
            Resource::Pool(_) => (0, 0, id),
            Resource::Guest(r) => (1, r.fields.vmid, id),
            Resource::Node(_) => (2, 0, id),
            Resource::Storage(_) => (3, 0, id),
            Resource::Sdn(_) | Resource::Network(_) => (4, 0, id),
            Resource::Other(_) => (5, 0, id),
        }
    }
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ResourceList>, ToolError> {
    let filter = Filter {
        resource_type: input.resource_type,
        node: input.node.as_ref().map(NodeName::as_str),
        status: input.status.as_ref().map(Text::as_str),
    };
    let page = Page::new(input.limit, input.offset);
    let mut path = ApiPath::new("cluster").lit("resources");
    match input.resource_type {
        // PVE 9 lists SDN zones as `network` entries, which `?type=sdn`
        // does not select (it keeps only legacy `sdn` ones). Fetching all
        // and keeping both kinds here works on every release without first
        // asking for the version.
        Some(ResourceType::Sdn) | None => {}
        Some(t) => path = path.query("type", t.as_str()),
    }
    let entries = fetch::list(pve, &path)?;
    Ok(shape(&entries, filter, page))
}

/// What the caller asked to see.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    /// Only this kind; Proxmox filters all but sdn (see `run`).
    pub resource_type: Option<ResourceType>,
    /// Only resources on this node (case-insensitive).
    pub node: Option<&'a str>,
    /// Only resources with this status (case-insensitive).
    pub status: Option<&'a str>,
}

impl Filter<'_> {
    fn admits(&self, r: &Resource) -> bool {
        let is = |field: Option<&String>, wanted: &str| {
            field.is_some_and(|f| f.eq_ignore_ascii_case(wanted))
        };
        let placed = r.placed();
        let kind_ok = match self.resource_type {
            Some(ResourceType::Sdn) => matches!(r, Resource::Sdn(_) | Resource::Network(_)),
            // Proxmox already filtered these.
            _ => true,
        };
        kind_ok
            && self
                .node
                .is_none_or(|n| is(placed.and_then(|p| p.node.as_ref()), n))
            && self
                .status
                .is_none_or(|s| is(placed.and_then(|p| p.status.as_ref()), s))
    }

    /// ` matching resource_type=sdn, node=pve1`, or nothing without filters.
    fn describe(&self) -> String {
        let filters: Vec<String> = [
            self.resource_type
                .map(|t| format!("resource_type={}", t.as_str())),
            self.node.map(|n| format!("node={n}")),
            self.status.map(|s| format!("status={s}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if filters.is_empty() {
            String::new()
        } else {
            format!(" matching {}", filters.join(", "))
        }
    }
}

/// One compact record.
pub fn record(e: &Map<String, Value>) -> Option<Resource> {
    let resource_type = pj::text(e.get("type"))?;
    let id = pj::text(e.get("id")).unwrap_or_default();
    let t = |k: &str| pj::text(e.get(k));
    let u = |k: &str| pj::uint(e.get(k));
    let placed = || Placed {
        node: t("node"),
        status: t("status"),
    };
    let ty = resource_type.as_str();
    Some(match resource_type.as_str() {
        "qemu" | "lxc" => {
            let vmid = pj::uint(e.get("vmid"))
                .or_else(|| id.rsplit_once('/').and_then(|(_, v)| v.parse().ok()))?;
            Resource::Guest(Record::new(
                &id,
                ty,
                GuestFields {
                    vmid,
                    name: t("name"),
                    placed: placed(),
                    template: pj::flag(e.get("template")),
                    cpu: pj::fraction(e.get("cpu")).map(Tidy),
                    maxcpu: pj::num(e.get("maxcpu")).map(Tidy),
                    mem: u("mem"),
                    maxmem: u("maxmem"),
                    maxdisk: u("maxdisk"),
                    uptime: u("uptime"),
                    pool: t("pool"),
                    tags: pj::tags(e.get("tags")),
                    lock: t("lock"),
                    hastate: t("hastate"),
                },
            ))
        }
        "node" => Resource::Node(Record::new(
            &id,
            ty,
            NodeFields {
                placed: placed(),
                cpu: pj::fraction(e.get("cpu")).map(Tidy),
                maxcpu: pj::num(e.get("maxcpu")).map(Tidy),
                mem: u("mem"),
                maxmem: u("maxmem"),
                disk: u("disk"),
                maxdisk: u("maxdisk"),
                uptime: u("uptime"),
            },
        )),
        "storage" => {
            let (disk, maxdisk) = (u("disk"), u("maxdisk"));
            Resource::Storage(Record::new(
                &id,
                ty,
                StorageFields {
                    storage: t("storage")
                        .unwrap_or_else(|| id.rsplit('/').next().unwrap_or_default().to_owned()),
                    placed: placed(),
                    plugintype: t("plugintype"),
                    shared: pj::flag(e.get("shared")),
                    content: split_list(e.get("content")),
                    disk,
                    maxdisk,
                    used_fraction: ratio(disk, maxdisk),
                },
            ))
        }
        "pool" => Resource::Pool(Record::new(
            &id,
            ty,
            PoolFields {
                pool: t("pool").unwrap_or_else(|| id.trim_start_matches("/pool/").to_owned()),
            },
        )),
        "sdn" => Resource::Sdn(Record::new(
            &id,
            ty,
            SdnFields {
                sdn: t("sdn"),
                zone_type: t("zone-type"),
                placed: placed(),
            },
        )),
        "network" => {
            // id is network/<node>/<network-type>/<name>; fall back to it
            // for fields an entry leaves out.
            let parts: Vec<&str> = id.splitn(4, '/').collect();
            let from_id = |i: usize| {
                parts
                    .get(i)
                    .filter(|p| !p.is_empty())
                    .map(|p| (*p).to_owned())
            };
            Resource::Network(Record::new(
                &id,
                ty,
                NetworkFields {
                    network: t("network").or_else(|| from_id(3)),
                    network_type: t("network-type").or_else(|| from_id(2)),
                    zone_type: t("zone-type"),
                    protocol: t("protocol"),
                    placed: Placed {
                        node: t("node").or_else(|| from_id(1)),
                        status: t("status"),
                    },
                },
            ))
        }
        _ => Resource::Other(Record::new(&id, ty, placed())),
    })
}

/// Filters, orders, counts and pages the records.
pub fn shape(entries: &[Value], filter: Filter<'_>, page: Page) -> Answer<ResourceList> {
    let mut recs: Vec<Resource> = entries
        .iter()
        .filter_map(Value::as_object)
        .filter_map(record)
        .filter(|r| filter.admits(r))
        .collect();
    recs.sort_by(|a, b| a.order().cmp(&b.order()));
    let counts = Counts::of(&recs, |r| r.id_and_type().1);
    let (recs, info) = paging::paginate(recs, page);
    let matching = filter.describe();
    let summary = if info.total == 0 {
        // An empty answer has many causes (none configured, a release that
        // names the type differently, privileges); don't guess one.
        format!("None found{matching}.")
    } else {
        let breakdown = counts
            .0
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
    Answer {
        structured: ResourceList {
            resources: recs,
            count_by_type: counts,
            page: info,
        },
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::Output;
    use serde_json::json;

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
            {"id":"network/node3/zone/x","type":"network","node":"node3","status":"ok"},
            {"id":"mystery/1","type":"mystery","status":"ok"}
        ])
    }

    fn call(path: &str, data: Value, args: &str) -> Output {
        let mut pve = FakePve::default().with(path, data);
        let out = TOOL.call(&mut pve, args).unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
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
                "network/node3/zone/x",
                "sdn/node3/localnetwork",
                "mystery/1"
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
        // Only the id says what a network entry is: read it from there.
        assert_eq!(
            r[6],
            json!({"kind":"network","id":"network/node3/zone/x","type":"network","network":"x",
                   "network_type":"zone","zone_type":null,"protocol":null,"node":"node3","status":"ok"})
        );
        assert_eq!(r[7]["kind"], "sdn");
        assert_eq!(r[7]["zone_type"], Value::Null);
        assert_eq!(
            r[8],
            json!({"kind":"other","id":"mystery/1","type":"mystery","node":null,"status":"ok"})
        );
        assert_eq!(
            out.structured["count_by_type"],
            json!({"lxc":2,"mystery":1,"network":1,"node":1,"pool":1,"qemu":1,"sdn":1,"storage":1})
        );
        assert_eq!(out.structured["total"], 9);
        assert!(
            out.summary
                .starts_with("9 resources (2 lxc, 1 mystery, 1 network"),
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

    /// PVE 9: a zone and a fabric as `network` entries, no legacy `sdn`.
    fn pve9() -> Value {
        json!([
            {"id":"node/pve1","type":"node","node":"pve1","status":"online"},
            {"id":"network/pve1/zone/lab-network","type":"network","network-type":"zone",
             "network":"lab-network","zone-type":"simple","node":"pve1","status":"available"},
            {"id":"network/pve1/fabric/underlay","type":"network","network-type":"fabric",
             "network":"underlay","protocol":"openfabric","node":"pve1","status":"ok"}
        ])
    }

    #[test]
    fn sdn_is_filtered_here_and_reads_both_forms() {
        let out = call("/cluster/resources", pve9(), r#"{"resource_type": "sdn"}"#);
        let r = &out.structured["resources"];
        assert_eq!(out.structured["total"], 2);
        assert_eq!(
            r[0],
            json!({"kind":"network","id":"network/pve1/fabric/underlay","type":"network",
                   "network":"underlay","network_type":"fabric","zone_type":null,
                   "protocol":"openfabric","node":"pve1","status":"ok"})
        );
        assert_eq!(r[1]["network"], "lab-network");
        assert_eq!(r[1]["zone_type"], "simple");
        // Older releases' sdn entries are kept too.
        let out = call("/cluster/resources", all(), r#"{"resource_type": "sdn"}"#);
        assert_eq!(
            out.structured["count_by_type"],
            json!({"network": 1, "sdn": 1})
        );
    }

    #[test]
    fn nothing_found_guesses_no_cause() {
        let out = call(
            "/cluster/resources",
            pve9(),
            r#"{"resource_type": "sdn", "status": "error"}"#,
        );
        assert_eq!(out.structured["total"], 0);
        assert_eq!(
            out.summary,
            "None found matching resource_type=sdn, status=error."
        );
        let out = call(
            "/cluster/resources?type=vm",
            json!([]),
            r#"{"resource_type": "vm"}"#,
        );
        assert_eq!(out.summary, "None found matching resource_type=vm.");
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
