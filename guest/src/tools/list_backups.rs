//! `pve_list_backups`: backup archives on one storage, from
//! `GET /nodes/{node}/storage/{storage}/content?content=backup[&vmid=]`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{NodeName, StorageId, Vmid};
use crate::error::ToolError;
use crate::fetch;
use crate::format;
use crate::json as pj;
use crate::paging::{self, Limit, Offset, Page, PageInfo};
use crate::path::ApiPath;
use crate::volume::ContentEntry;

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 50;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 500;
/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_backups",
    title: "List backups on a storage",
    description: "Backups on one storage, newest first, with volid, vmid, size and time. Use it to \
        check backups or find a volid to restore.",
    reads: ["/nodes/{node}/storage/{storage}/content?content=backup"],
    privileges: [
        "/storage/{storage}": "Datastore.Audit" | "Datastore.AllocateSpace",
    ],
    run: run,
};

/// Where to list backups, and which.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Node to ask (any, if shared)
    node: NodeName,
    /// Storage id (pve_list_storage)
    storage: StorageId,
    /// Only this guest's backups
    vmid: Option<Vmid>,
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    #[serde(default)]
    offset: Offset,
}

/// One page of backups on one storage.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct BackupList {
    /// Node asked
    pub node: String,
    /// Storage listed
    pub storage: String,
    /// The vmid filter; null if none
    pub vmid: Option<u32>,
    /// Backups, newest first, one page of them
    pub backups: Vec<Backup>,
    /// Sum of sizes of all matching backups, bytes
    pub total_size: u64,
    /// total_size in binary units
    pub total_size_human: String,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// One backup.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Backup {
    /// Volume id, e.g. local:backup/vzdump-qemu-100-2024_03_06-19_28_10.vma.zst
    pub volid: String,
    /// Guest the backup is of; null if unknown
    pub vmid: Option<u64>,
    /// qemu or lxc; null if not reported
    pub subtype: Option<String>,
    /// Archive format (vma.zst, tar.zst, pbs-vm, pbs-ct, ...); null if unknown
    pub format: Option<String>,
    /// Size, bytes; null if unknown
    pub size: Option<u64>,
    /// Size in binary units, e.g. 1.2 GiB; null if unknown
    pub size_human: Option<String>,
    /// Creation time, seconds since the epoch; null if unknown
    pub ctime: Option<u64>,
    /// Creation time, ISO-8601 UTC; null if unknown
    pub created: Option<String>,
    /// Notes (first line); null if none
    pub notes: Option<String>,
    /// true if protected from pruning and deletion
    pub protected: bool,
    /// true if the backup is encrypted
    pub encrypted: bool,
    /// Last verification result (ok, failed, ...; PBS only); null if never verified
    pub verification: Option<String>,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<BackupList>, ToolError> {
    let node = input.node.as_str();
    let storage = input.storage.as_str();
    let vmid = input.vmid.map(|v| v.0);
    let page = Page::new(input.limit, input.offset);
    let mut path = ApiPath::new("nodes")
        .seg(node)
        .lit("storage")
        .seg(storage)
        .lit("content")
        .query("content", "backup");
    if let Some(v) = vmid {
        path = path.query("vmid", &v.to_string());
    }
    let entries = fetch::list(pve, &path)?;
    Ok(shape(&entries, node, storage, vmid, page))
}

fn record(e: &Map<String, Value>) -> Option<Backup> {
    let entry = ContentEntry::read(e)?;
    Some(Backup {
        size_human: entry.size_human(),
        created: entry.created(),
        vmid: entry.vmid,
        subtype: pj::text(e.get("subtype")),
        format: entry.format,
        size: entry.size,
        ctime: entry.ctime,
        notes: entry.notes,
        protected: entry.protected,
        encrypted: pj::text(e.get("encrypted")).is_some_and(|s| s != "0"),
        verification: entry.verification,
        volid: entry.volid,
    })
}

/// Sorts newest first, totals and pages.
pub fn shape(
    entries: &[Value],
    node: &str,
    storage: &str,
    vmid: Option<u32>,
    page: Page,
) -> Answer<BackupList> {
    let mut recs: Vec<Backup> = entries
        .iter()
        .filter_map(Value::as_object)
        // The content filter is Proxmox's; keep only backups in case a
        // storage answers with more.
        .filter(|e| {
            e.get("content")
                .and_then(Value::as_str)
                .is_none_or(|c| c == "backup")
        })
        .filter_map(record)
        .filter(|r| vmid.is_none_or(|v| r.vmid == Some(u64::from(v))))
        .collect();
    recs.sort_by(|a, b| b.ctime.cmp(&a.ctime).then_with(|| a.volid.cmp(&b.volid)));
    let total_size: u64 = recs.iter().filter_map(|r| r.size).sum();
    let newest = recs.first().map(|r| {
        format!(
            " Newest: {}{}.",
            r.volid,
            r.created
                .as_ref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        )
    });
    let (recs, info) = paging::paginate(recs, page);
    let of = vmid.map(|v| format!(" of {v}")).unwrap_or_default();
    let summary = if info.total == 0 {
        format!("No backups{of} on {storage} (node {node}).")
    } else {
        format!(
            "{}{of} on {storage} (node {node}), {} in all; {}.{}",
            format::count(info.total, "backup", "backups"),
            format::bytes(total_size),
            info.describe(),
            newest.unwrap_or_default()
        )
    };
    Answer {
        structured: BackupList {
            node: node.to_owned(),
            storage: storage.to_owned(),
            vmid,
            backups: recs,
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
    use serde_json::json;

    fn fixture() -> Value {
        json!([
            {"volid":"local:backup/vzdump-qemu-100-2024_03_06-19_28_10.vma.zst","content":"backup","format":"vma.zst",
             "size":1288490189,"ctime":1709753290,"vmid":100,"subtype":"qemu","notes":"before upgrade\nsecond line","protected":1},
            {"volid":"local:backup/vzdump-lxc-101-2026_03_24-11_00_00.tar.zst","content":"backup","format":"tar.zst",
             "size":"1024","ctime":1774350000,"vmid":"101","subtype":"lxc"},
            {"volid":"pbs:backup/vm/100/2025-01-01T00:00:00Z","content":"backup","format":"pbs-vm","size":2048,
             "ctime":1735689600,"vmid":100,"verification":{"state":"ok","upid":"UPID:x"},"encrypted":"aa:bb"}
        ])
    }

    #[test]
    fn newest_first_with_totals() {
        let path = "/nodes/pve1/storage/local/content?content=backup";
        let mut pve = FakePve::default().with(path, fixture());
        let out = TOOL
            .call(&mut pve, r#"{"node": "pve1", "storage": "local"}"#)
            .unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        let vols: Vec<&str> = s["backups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["volid"].as_str().unwrap())
            .collect();
        assert_eq!(
            vols[0],
            "local:backup/vzdump-lxc-101-2026_03_24-11_00_00.tar.zst"
        );
        assert_eq!(
            vols[2],
            "local:backup/vzdump-qemu-100-2024_03_06-19_28_10.vma.zst"
        );
        assert_eq!(s["backups"][0]["vmid"], 101);
        assert_eq!(s["backups"][0]["size"], 1024);
        assert_eq!(s["backups"][0]["created"], "2026-03-24T11:00:00Z");
        assert_eq!(s["backups"][0]["protected"], false);
        assert_eq!(s["backups"][1]["verification"], "ok");
        assert_eq!(s["backups"][1]["encrypted"], true);
        let old = &s["backups"][2];
        assert_eq!(old["notes"], "before upgrade");
        assert_eq!(old["protected"], true);
        assert_eq!(old["size_human"], "1.2 GiB");
        assert_eq!(s["total_size"], 1288490189u64 + 1024 + 2048);
        assert_eq!(s["total"], 3);
        assert!(out.summary.starts_with("3 backups on local (node pve1), 1.2 GiB in all; showing all 3. Newest: local:backup/vzdump-lxc-101"), "{}", out.summary);
    }

    #[test]
    fn vmid_filter_goes_to_proxmox_and_pages() {
        let path = "/nodes/pve1/storage/pbs/content?content=backup&vmid=100";
        let mut pve = FakePve::default().with(path, fixture());
        let out = TOOL
            .call(
                &mut pve,
                r#"{"node": "pve1", "storage": "pbs", "vmid": 100, "limit": 1}"#,
            )
            .unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        assert_eq!(pve.requests, [path]);
        assert_eq!(out.structured["total"], 2);
        assert_eq!(out.structured["returned"], 1);
        assert_eq!(out.structured["next_offset"], 1);
        assert_eq!(out.structured["vmid"], 100);
    }

    #[test]
    fn validation_comes_first() {
        let mut pve = FakePve::default();
        for (a, start) in [
            (r#"{"storage": "local"}"#, "node: missing"),
            (r#"{"node": "pve1"}"#, "storage: missing"),
            (
                r#"{"node": "pve1", "storage": "../x"}"#,
                "storage: \"../x\" is not a valid storage id",
            ),
            (
                r#"{"node": "pve1", "storage": "local", "vmid": 5}"#,
                "vmid: must be an integer between",
            ),
            (
                r#"{"node": "pve1", "storage": "local", "limit": 501}"#,
                "limit: ",
            ),
        ] {
            let e = TOOL.call(&mut pve, a).unwrap_err();
            assert!(e.message().starts_with(start), "{a}: {e}");
        }
        assert!(pve.requests.is_empty());
    }
}
