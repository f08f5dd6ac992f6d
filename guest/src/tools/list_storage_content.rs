//! `pve_list_storage_content`: the volumes on one storage, from
//! `GET /nodes/{node}/storage/{storage}/content[?content=][&vmid=]`: ISOs,
//! container templates, disk images, backups, snippets and imports, in
//! Proxmox's order (by volume id), bounded and paged.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::Pve;
use crate::arg::{NodeName, StorageId, Vmid, choice};
use crate::error::ToolError;
use crate::fetch;
use crate::format;
use crate::paging::{self, Limit, Offset, Page, PageInfo};
use crate::path::ApiPath;
use crate::volume::ContentEntry;
use crate::tool::{Answer, Tool, read_tool};

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 50;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 500;
/// The longest note kept, in characters: its first line, cut.
const NOTE_MAX: usize = 200;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_storage_content",
    title: "List volumes on a storage",
    description: "Volumes on one storage (ISOs, templates, disk images, backups, snippets) with \
        volid, size and owner. Use it to find an ISO or template volid.",
    reads: ["/nodes/{node}/storage/{storage}/content"],
    privileges: [
        "/storage/{storage}": "Datastore.Audit" | "Datastore.AllocateSpace",
    ],
    run: run,
};

choice! {
    /// A kind of volume, as Proxmox names a storage's content types.
    pub enum Content {
        /// Installation ISO images.
        Iso = "iso",
        /// Container templates.
        Vztmpl = "vztmpl",
        /// VM disk images.
        Images = "images",
        /// Container root and mount point volumes.
        Rootdir = "rootdir",
        /// Backup archives.
        Backup = "backup",
        /// Snippets (hook scripts, cloud-init files).
        Snippets = "snippets",
        /// Disk images and OVAs to import.
        Import = "import",
    }
}

/// Where to list volumes, and which.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Node to ask (any, if shared)
    node: NodeName,
    /// Storage id (pve_list_storage)
    storage: StorageId,
    /// Only this kind of volume
    content: Option<Content>,
    /// Only this guest's volumes
    vmid: Option<Vmid>,
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    #[serde(default)]
    offset: Offset,
}

/// One page of the volumes on one storage.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct VolumeList {
    /// Node asked
    pub node: String,
    /// Storage listed
    pub storage: String,
    /// The content filter; null if none
    pub content: Option<Content>,
    /// The vmid filter; null if none
    pub vmid: Option<u32>,
    /// Volumes in volid order, one page of them
    pub volumes: Vec<Volume>,
    /// Sum of sizes of all matching volumes, bytes
    pub total_size: u64,
    /// total_size in binary units
    pub total_size_human: String,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// One volume.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Volume {
    /// Volume id, e.g. local:iso/debian-12.iso
    pub volid: String,
    /// Content type (iso, vztmpl, images, rootdir, backup, snippets, import); null if not reported
    pub content: Option<String>,
    /// Format (iso, tgz, raw, qcow2, subvol, vma.zst, ...); null if unknown
    pub format: Option<String>,
    /// Size, bytes; null if unknown
    pub size: Option<u64>,
    /// Size in binary units; null if unknown
    pub size_human: Option<String>,
    /// Owning guest; null if none
    pub vmid: Option<u64>,
    /// Creation time, ISO-8601 UTC; null if unknown
    pub created: Option<String>,
    /// Notes (first line); null if none
    pub notes: Option<String>,
    /// true if protected from removal
    pub protected: bool,
    /// Last verification result (PBS backups); null if never verified
    pub verification: Option<String>,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<VolumeList>, ToolError> {
    let node = input.node.as_str();
    let storage = input.storage.as_str();
    let vmid = input.vmid.map(|v| v.0);
    let mut path = ApiPath::new("nodes")
        .seg(node)
        .lit("storage")
        .seg(storage)
        .lit("content");
    if let Some(c) = input.content {
        path = path.query("content", c.as_str());
    }
    if let Some(v) = vmid {
        path = path.query("vmid", &v.to_string());
    }
    let entries = fetch::list(pve, &path)?;
    let page = Page::new(input.limit, input.offset);
    Ok(shape(&entries, node, storage, input.content, vmid, page))
}

fn record(e: &Map<String, Value>) -> Option<Volume> {
    let entry = ContentEntry::read(e)?;
    Some(Volume {
        size_human: entry.size_human(),
        created: entry.created(),
        notes: entry
            .notes
            .map(|n| n.chars().take(NOTE_MAX).collect::<String>()),
        volid: entry.volid,
        content: entry.content,
        format: entry.format,
        size: entry.size,
        vmid: entry.vmid,
        protected: entry.protected,
        verification: entry.verification,
    })
}

/// Keeps what the filters ask for (in case a storage answers with more),
/// sorts by volid as Proxmox does, totals and pages.
pub fn shape(
    entries: &[Value],
    node: &str,
    storage: &str,
    content: Option<Content>,
    vmid: Option<u32>,
    page: Page,
) -> Answer<VolumeList> {
    let mut volumes: Vec<Volume> = entries
        .iter()
        .filter_map(Value::as_object)
        .filter_map(record)
        .filter(|v| content.is_none_or(|c| v.content.as_deref().is_none_or(|k| k == c.as_str())))
        .filter(|v| vmid.is_none_or(|id| v.vmid == Some(u64::from(id))))
        .collect();
    volumes.sort_by_key(|v| v.volid.to_ascii_lowercase());
    let total_size: u64 = volumes.iter().filter_map(|v| v.size).sum();
    let mut kinds: Vec<(String, u64)> = Vec::new();
    for v in &volumes {
        let kind = v.content.clone().unwrap_or_else(|| "other".to_owned());
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind, 1)),
        }
    }
    let (volumes, info) = paging::paginate(volumes, page);
    let what = match (content, vmid) {
        (Some(c), Some(id)) => format!(" ({} of {id})", c.as_str()),
        (Some(c), None) => format!(" ({})", c.as_str()),
        (None, Some(id)) => format!(" (of {id})"),
        (None, None) => String::new(),
    };
    let summary = if info.total == 0 {
        format!("No volumes{what} on {storage} (node {node}).")
    } else {
        let by_kind = kinds
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "{}{what} on {storage} (node {node}): {by_kind}; {} in all; {}.",
            format::count(info.total, "volume", "volumes"),
            format::bytes(total_size),
            info.describe()
        )
    };
    Answer {
        structured: VolumeList {
            node: node.to_owned(),
            storage: storage.to_owned(),
            content,
            vmid,
            volumes,
            total_size,
            total_size_human: format::bytes(total_size),
            page: info,
        },
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const PATH: &str = "/nodes/pve1/storage/local/content";

    fn volumes() -> Value {
        json!([
            {"volid": "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "content": "vztmpl",
             "format": "tzst", "size": 126_000_000, "ctime": 1_700_000_000},
            {"volid": "local:iso/debian-12.7.0-amd64-netinst.iso", "content": "iso",
             "format": "iso", "size": 661_651_456, "ctime": 1_700_000_100,
             "notes": "netinst\nsecond line"},
            {"volid": "local:backup/vzdump-qemu-100-2024_03_06-19_28_10.vma.zst",
             "content": "backup", "format": "vma.zst", "size": "2147483648", "vmid": 100,
             "protected": 1, "verification": {"state": "ok", "upid": "UPID:x"}},
            {"content": "iso", "size": 1},
        ])
    }

    #[test]
    fn volumes_are_listed_in_volid_order_with_their_owner_and_flags() {
        let mut pve = FakePve::default().with(PATH, volumes());
        let out = TOOL.call(&mut pve, r#"{"node": "pve1", "storage": "local"}"#).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        let ids: Vec<&str> = s["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["volid"].as_str().unwrap())
            .collect();
        // A volume without a volid is left out, not invented.
        assert_eq!(
            ids,
            [
                "local:backup/vzdump-qemu-100-2024_03_06-19_28_10.vma.zst",
                "local:iso/debian-12.7.0-amd64-netinst.iso",
                "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
            ]
        );
        let backup = &s["volumes"][0];
        assert_eq!(backup["vmid"], 100);
        assert_eq!(backup["size"], 2_147_483_648_u64);
        assert_eq!(backup["protected"], true);
        assert_eq!(backup["verification"], "ok");
        assert_eq!(s["volumes"][1]["notes"], "netinst");
        assert_eq!(s["volumes"][1]["created"], "2023-11-14T22:15:00Z");
        assert_eq!(s["total_size"], 2_147_483_648_u64 + 661_651_456 + 126_000_000);
        assert!(
            out.summary.starts_with("3 volumes on local (node pve1): 1 backup, 1 iso, 1 vztmpl;"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn the_filters_go_to_proxmox_and_are_kept_on_what_it_answers() {
        let path = format!("{PATH}?content=iso&vmid=100");
        let mut pve = FakePve::default().with(&path, volumes());
        let out = TOOL
            .call(
                &mut pve,
                r#"{"node": "pve1", "storage": "local", "content": "iso", "vmid": 100}"#,
            )
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["volumes"], json!([]));
        assert_eq!(out.structured["content"], "iso");
        assert_eq!(out.summary, "No volumes (iso of 100) on local (node pve1).");
    }

    #[test]
    fn an_unknown_content_type_is_refused_with_the_choices() {
        let mut pve = FakePve::default();
        let e = TOOL
            .call(&mut pve, r#"{"node": "pve1", "storage": "local", "content": "isos"}"#)
            .unwrap_err();
        let m = e.message();
        assert!(m.contains("content") && m.contains("\"iso\", \"vztmpl\""), "{m}");
    }
}
