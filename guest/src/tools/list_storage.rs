//! `pve_list_storage`: storages with their usage on one node
//! (`GET /nodes/{node}/storage`) or their cluster-wide configuration
//! (`GET /storage`, no usage).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json::{ratio, split_list};
use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{NodeName, choice};
use crate::error::ToolError;
use crate::fetch;
use crate::format;
use crate::json::{self as pj, Tidy};
use crate::paging::{self, Limit, Offset, Page, PageInfo};
use crate::path::ApiPath;

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 1000;
choice! {
    /// Content types a storage can hold.
    pub enum Content {
        /// VM disk images.
        Images = "images",
        /// Container root directories.
        Rootdir = "rootdir",
        /// Backups (vzdump archives).
        Backup = "backup",
        /// ISO images.
        Iso = "iso",
        /// Container templates.
        Vztmpl = "vztmpl",
        /// Snippets (hook scripts, cloud-init files).
        Snippets = "snippets",
    }
}

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_storage",
    title: "List storage",
    description: "Storages with type and content, with node also usage. Use it to find where \
        backups, ISOs or disks go, or what fills up.",
    reads: ["/storage", "/nodes/{node}/storage"],
    privileges: [
        "/storage": "Datastore.Audit" | "Datastore.AllocateSpace",
    ],
    run: run,
};

/// Which storages to list.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// With usage, as this node sees it
    node: Option<NodeName>,
    /// Only storages holding this
    content: Option<Content>,
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    #[serde(default)]
    offset: Offset,
}

/// One page of storages.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct StorageList {
    /// The node asked about; null for the configuration view
    pub node: Option<String>,
    /// true if usage figures come from the node; false for the configuration view
    pub usage_included: bool,
    /// Matching storages by id, one page of them
    pub storages: Vec<StorageEntry>,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// One storage.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct StorageEntry {
    /// Storage id
    pub storage: String,
    /// Storage type (dir, lvmthin, zfspool, nfs, cifs, rbd, cephfs, pbs, ...); null if unknown
    #[serde(rename = "type")]
    pub storage_type: Option<String>,
    /// Content types it holds (images, rootdir, backup, iso, vztmpl, snippets, import)
    pub content: Vec<String>,
    /// true if shared between nodes; null if the configuration does not say
    pub shared: Option<bool>,
    /// false if disabled; null if unknown
    pub enabled: Option<bool>,
    /// true if usable on the node right now; null without node
    pub active: Option<bool>,
    /// Size, bytes; null without node or if unknown
    pub total: Option<u64>,
    /// Used, bytes; null without node or if unknown
    pub used: Option<u64>,
    /// Available, bytes; null without node or if unknown
    pub avail: Option<u64>,
    /// used / total (0..1); null without node or if unknown
    pub used_fraction: Option<Tidy>,
    /// Nodes the storage is restricted to (configuration view only); null if all or unknown
    pub nodes: Option<Vec<String>>,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<StorageList>, ToolError> {
    let node = input.node.as_ref().map(NodeName::as_str);
    let content = input.content.map(Content::as_str);
    let page = Page::new(input.limit, input.offset);
    let path = match node {
        Some(n) => ApiPath::new("nodes").seg(n).lit("storage"),
        None => ApiPath::new("storage"),
    };
    let entries = fetch::list(pve, &path)?;
    Ok(shape(&entries, node, content, page))
}

fn record(e: &Map<String, Value>, with_usage: bool) -> Option<StorageEntry> {
    let storage = pj::text(e.get("storage"))?;
    let (total, used) = (pj::uint(e.get("total")), pj::uint(e.get("used")));
    let enabled = if with_usage {
        e.get("enabled").map(|v| pj::flag(Some(v)))
    } else {
        Some(!pj::flag(e.get("disable")))
    };
    let nodes = (!with_usage)
        .then(|| split_list(e.get("nodes")))
        .filter(|n| !n.is_empty());
    Some(StorageEntry {
        storage,
        storage_type: pj::text(e.get("type")),
        content: split_list(e.get("content")),
        shared: if with_usage {
            Some(pj::flag(e.get("shared")))
        } else {
            e.get("shared").map(|v| pj::flag(Some(v)))
        },
        enabled,
        active: if with_usage {
            e.get("active").map(|v| pj::flag(Some(v)))
        } else {
            None
        },
        total,
        used,
        avail: pj::uint(e.get("avail")),
        used_fraction: pj::fraction(e.get("used_fraction"))
            .or(ratio(used, total))
            .map(Tidy),
        nodes,
    })
}

/// Filters, sorts and pages the storages.
pub fn shape(
    entries: &[Value],
    node: Option<&str>,
    content: Option<&str>,
    page: Page,
) -> Answer<StorageList> {
    let with_usage = node.is_some();
    let mut recs: Vec<StorageEntry> = entries
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|e| record(e, with_usage))
        .filter(|r| content.is_none_or(|c| r.content.iter().any(|x| x == c)))
        .collect();
    recs.sort_by(|a, b| a.storage.cmp(&b.storage));
    let (recs, info) = paging::paginate(recs, page);
    let what = match content {
        Some(c) => format!(" holding {c}"),
        None => String::new(),
    };
    let mut summary = match node {
        Some(n) => {
            let fullest = recs
                .iter()
                .filter_map(|r| Some((r.used_fraction?.0, r.storage.as_str())))
                .max_by(|a, b| a.0.total_cmp(&b.0));
            let mut s = format!(
                "{}{what} on node {n}; {}.",
                format::count(info.total, "storage", "storages"),
                info.describe()
            );
            if let Some((f, id)) = fullest {
                s.push_str(&format!(" Fullest: {id} at {}.", format::percent(f)));
            }
            s
        }
        None => format!(
            "{}{what} configured; {}. Usage is not included: pass node for total/used/avail.",
            format::count(info.total, "storage", "storages"),
            info.describe()
        ),
    };
    if info.total == 0 {
        summary.push_str(" The token lists only storages it may audit (Datastore.Audit).");
    }
    Answer {
        structured: StorageList {
            node: node.map(str::to_owned),
            usage_included: with_usage,
            storages: recs,
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

    fn node_storage() -> Value {
        json!([
            {"type":"dir","used_fraction":0.85,"storage":"local","content":"iso,backup,vztmpl","used":85734563840u64,
             "active":1,"enabled":1,"shared":0,"total":100861726720u64,"avail":9956425728u64},
            {"type":"lvmthin","storage":"local-lvm","content":"rootdir,images","used":1000,"active":1,"enabled":1,
             "shared":0,"total":4000,"avail":3000},
            {"type":"nfs","storage":"nas","content":"backup","active":0,"enabled":1,"shared":1}
        ])
    }

    fn config() -> Value {
        json!([
            {"storage":"local","type":"dir","path":"/var/lib/vz","content":"iso,vztmpl,backup","digest":"x"},
            {"storage":"nas","type":"nfs","content":"backup","server":"10.0.0.5","export":"/b","disable":1,"nodes":"pve1,pve2","shared":1}
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
    fn node_view_has_usage() {
        let out = call("/nodes/pve1/storage", node_storage(), r#"{"node": "pve1"}"#);
        let s = &out.structured;
        assert_eq!(s["usage_included"], true);
        assert_eq!(
            s["storages"][0],
            json!({"storage":"local","type":"dir","content":["backup","iso","vztmpl"],"shared":false,"enabled":true,
                "active":true,"total":100861726720u64,"used":85734563840u64,"avail":9956425728u64,"used_fraction":0.85,"nodes":null})
        );
        assert_eq!(s["storages"][1]["used_fraction"], 0.25);
        assert_eq!(s["storages"][2]["total"], Value::Null);
        assert_eq!(s["storages"][2]["active"], false);
        assert_eq!(
            out.summary,
            "3 storages on node pve1; showing all 3. Fullest: local at 85%."
        );
    }

    #[test]
    fn config_view_says_no_usage_and_filters() {
        let out = call("/storage", config(), r#"{"content": "backup"}"#);
        let s = &out.structured;
        assert_eq!(s["usage_included"], false);
        assert_eq!(s["node"], Value::Null);
        assert_eq!(s["total"], 2);
        let nas = &s["storages"][1];
        assert_eq!(nas["enabled"], false);
        assert_eq!(nas["shared"], true);
        assert_eq!(nas["nodes"], json!(["pve1", "pve2"]));
        assert_eq!(nas["active"], Value::Null);
        assert_eq!(s["storages"][0]["shared"], Value::Null);
        assert!(out.summary.contains("pass node"), "{}", out.summary);
        let out = call("/storage", config(), r#"{"content": "images"}"#);
        assert_eq!(out.structured["total"], 0);
    }

    #[test]
    fn validation_comes_first() {
        let mut pve = FakePve::default();
        for a in [
            r#"{"node": "-x"}"#,
            r#"{"content": "disk"}"#,
            r#"{"limit": 0}"#,
        ] {
            let e = TOOL.call(&mut pve, a).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{a}: {e:?}");
        }
        assert!(pve.requests.is_empty());
    }
}
