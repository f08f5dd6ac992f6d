//! `pve_list_snapshots`: a guest's snapshots from
//! `/nodes/{node}/{qemu|lxc}/{vmid}/snapshot`, turned from Proxmox's hash
//! order (with the pseudo-snapshot `current` last) into a plain tree.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::VmType;
use crate::error::ToolError;
use crate::json as pj;
use crate::paging::{self, Limit, Offset, Page, PageInfo};
use crate::path::ApiPath;
use crate::resolve::{Resolved, Target, guest_input};

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 500;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_snapshots",
    title: "List snapshots",
    description: "A guest's snapshots as a tree, with times and RAM state, and the one its current \
        state is based on. Use it before a rollback.",
    reads: ["/nodes/{node}/{vm_type}/{vmid}/snapshot", "/cluster/resources?type=vm"],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
    ],
    run: run,
};

guest_input! {
    /// The guest, and the page of its snapshots.
    pub struct Input {
        #[serde(default)]
        limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
        #[serde(default)]
        offset: Offset,
    }
}

/// A guest's snapshot tree, one page of its snapshots.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SnapshotList {
    /// VM/CT id
    pub vmid: u32,
    /// Node the guest is on
    pub node: String,
    /// "qemu" or "lxc"
    pub vm_type: VmType,
    /// Snapshots by creation time, oldest first ('current' is not one)
    pub snapshots: Vec<Snapshot>,
    /// Snapshot names from the oldest ancestor to the one the current state sits on; empty if
    /// none
    pub current_path: Vec<String>,
    /// The snapshot the current state is based on; null if none
    pub current_parent: Option<String>,
    /// Whether the guest runs now, as the snapshot list reports; null if not given
    pub running: Option<bool>,
    /// Which of node and vm_type pve-mcp looked up because the call omitted them.
    pub resolved: Resolved,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// One snapshot.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Snapshot {
    /// Snapshot name
    pub name: String,
    /// Description; null if empty
    pub description: Option<String>,
    /// Creation time, Unix epoch seconds; null if unknown
    pub snaptime: Option<u64>,
    /// Creation time, ISO-8601 UTC; null if unknown
    pub snaptime_iso: Option<String>,
    /// true if it includes RAM (VM state); null for containers
    pub vmstate: Option<bool>,
    /// Parent snapshot; null for a root
    pub parent: Option<String>,
    /// 0 for a root, parent's depth + 1 otherwise
    pub depth: usize,
    /// Names of snapshots taken from this one
    pub children: Vec<String>,
    /// Set while a snapshot operation is in progress or failed (prepare, delete); null normally
    pub snapstate: Option<String>,
    /// true if the current state descends from it
    pub on_current_path: bool,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<SnapshotList>, ToolError> {
    let page = Page::new(input.limit, input.offset);
    let target = input.wanted().resolve(pve)?;
    let path = ApiPath::new("nodes")
        .seg(&target.node)
        .lit(target.vm_type.as_str())
        .id(target.vmid)
        .lit("snapshot");
    let data = pve.get(&path)?;
    Ok(shape(&target, &data, page))
}

struct Snap {
    name: String,
    description: Option<String>,
    snaptime: Option<u64>,
    vmstate: bool,
    parent: Option<String>,
    snapstate: Option<String>,
}

/// Builds the tree from a snapshot list.
pub fn shape(target: &Target, data: &Value, page: Page) -> Answer<SnapshotList> {
    let items = data.as_array().cloned().unwrap_or_default();
    let mut current: Option<&Value> = None;
    let mut snaps: BTreeMap<String, Snap> = BTreeMap::new();
    for item in &items {
        let Some(name) = pj::text(item.get("name")) else {
            continue;
        };
        if name == "current" {
            current = Some(item);
            continue;
        }
        snaps.insert(
            name.clone(),
            Snap {
                name,
                description: pj::text(item.get("description"))
                    .map(|d| d.trim_end().to_owned())
                    .filter(|d| !d.is_empty()),
                snaptime: pj::uint(item.get("snaptime")).filter(|t| *t > 0),
                vmstate: pj::flag(item.get("vmstate")),
                parent: pj::text(item.get("parent")),
                snapstate: pj::text(item.get("snapstate")),
            },
        );
    }
    // A parent that is not in the list (deleted, hidden) makes a root.
    let parent_of = |n: &str| -> Option<&str> {
        snaps
            .get(n)
            .and_then(|s| s.parent.as_deref())
            .filter(|p| snaps.contains_key(*p))
    };
    let ancestry = |start: Option<&str>| -> Vec<String> {
        let mut path = Vec::new();
        let mut seen = HashSet::new();
        let mut at = start.filter(|s| snaps.contains_key(*s));
        while let Some(n) = at {
            if !seen.insert(n.to_owned()) {
                break; // a cycle; Proxmox never writes one
            }
            path.push(n.to_owned());
            at = parent_of(n);
        }
        path.reverse();
        path
    };
    let current_parent = current.and_then(|c| pj::text(c.get("parent")));
    let current_path = ancestry(current_parent.as_deref());
    let on_path: HashSet<&str> = current_path.iter().map(String::as_str).collect();

    let mut ordered: Vec<&Snap> = snaps.values().collect();
    ordered.sort_by(|a, b| {
        a.snaptime
            .cmp(&b.snaptime)
            .then_with(|| a.name.cmp(&b.name))
    });
    let qemu = target.vm_type == VmType::Qemu;
    let all: Vec<Snapshot> = ordered
        .iter()
        .map(|s| {
            let children: Vec<String> = ordered
                .iter()
                .filter(|c| parent_of(&c.name) == Some(s.name.as_str()))
                .map(|c| c.name.clone())
                .collect();
            Snapshot {
                name: s.name.clone(),
                description: s.description.clone(),
                snaptime: s.snaptime,
                snaptime_iso: s.snaptime.map(|t| crate::format::iso_utc(t as i64)),
                vmstate: qemu.then_some(s.vmstate),
                parent: parent_of(&s.name).map(str::to_owned),
                depth: ancestry(Some(&s.name)).len().saturating_sub(1),
                children,
                snapstate: s.snapstate.clone(),
                on_current_path: on_path.contains(s.name.as_str()),
            }
        })
        .collect();
    let running = current
        .and_then(|c| c.get("running"))
        .map(|r| pj::flag(Some(r)));
    let (page_items, info) = paging::paginate(all, page);
    let current_parent = current_parent.filter(|p| snaps.contains_key(p));

    let mut summary = format!(
        "{} on {} has {}",
        target.label(),
        target.node,
        crate::format::count(info.total, "snapshot", "snapshots")
    );
    match &current_parent {
        Some(p) => summary.push_str(&format!("; the current state is based on {p}")),
        None if info.total > 0 => summary.push_str("; the current state is based on none of them"),
        None => {}
    }
    if let Some(newest) = ordered
        .iter()
        .rev()
        .find_map(|s| s.snaptime.map(|t| (s, t)))
    {
        summary.push_str(&format!(
            "; newest {} ({})",
            newest.0.name,
            crate::format::iso_utc(newest.1 as i64)
        ));
    }
    summary.push('.');
    if info.returned < info.total {
        summary.push_str(&format!(" {}.", info.describe()));
    }
    Answer {
        structured: SnapshotList {
            vmid: target.vmid,
            node: target.node.clone(),
            vm_type: target.vm_type,
            snapshots: page_items,
            current_path,
            current_parent,
            running,
            resolved: target.resolved(),
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
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    fn qemu_snaps() -> Value {
        // Hash order, `current` last, as Proxmox sends it.
        json!([
            {"name":"after-upgrade","snaptime":1709800000,"description":"","vmstate":0,"parent":"before-upgrade"},
            {"name":"base","snaptime":1709700000,"description":"fresh install\n","vmstate":0},
            {"name":"experiment","snaptime":1709900000,"description":"try","vmstate":1,"parent":"base"},
            {"name":"before-upgrade","snaptime":1709753290,"description":"pre","vmstate":"1","parent":"base"},
            {"name":"current","digest":"e2f5f35c85b2ca35e5f9ab789436b25c1d71cbad","running":1,
             "description":"You are here!","parent":"after-upgrade"}
        ])
    }

    fn call(pve: &mut FakePve, args: Value) -> Result<Output, ToolError> {
        TOOL.call(pve, &args.to_string())
    }

    #[test]
    fn tree_and_current_path() {
        let mut pve = FakePve::default().with("/nodes/pve1/qemu/101/snapshot", qemu_snaps());
        let out = call(
            &mut pve,
            json!({"vmid": 101, "node": "pve1", "vm_type": "qemu"}),
        )
        .unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        let names: Vec<&str> = s["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["base", "before-upgrade", "after-upgrade", "experiment"]
        );
        assert_eq!(
            s["current_path"],
            json!(["base", "before-upgrade", "after-upgrade"])
        );
        assert_eq!(s["current_parent"], "after-upgrade");
        assert_eq!(s["running"], true);
        let base = &s["snapshots"][0];
        assert_eq!(base["depth"], 0);
        assert_eq!(base["children"], json!(["before-upgrade", "experiment"]));
        assert_eq!(base["description"], "fresh install");
        assert_eq!(base["parent"], Value::Null);
        assert_eq!(s["snapshots"][2]["depth"], 2);
        assert_eq!(s["snapshots"][1]["vmstate"], true);
        assert_eq!(s["snapshots"][3]["on_current_path"], false);
        assert_eq!(s["snapshots"][2]["description"], Value::Null);
        assert_eq!(s["total"], 4);
        assert!(out.summary.contains("4 snapshots"), "{}", out.summary);
        assert!(
            out.summary.contains("based on after-upgrade"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn lxc_and_dangling_parent_and_no_snapshots() {
        // The pve7x capture: the parents are not in the list.
        let data = json!([{"description":"description2","name":"snapshot2","parent":"parent1","snaptime":1709753290},
            {"description":"You are here!","digest":"e2f5f35c85b2ca35e5f9ab789436b25c1d71cbad","name":"current","parent":"parent2","running":1}]);
        let mut pve = FakePve::default().with("/nodes/pve1/lxc/200/snapshot", data);
        let out = call(
            &mut pve,
            json!({"vmid": 200, "node": "pve1", "vm_type": "lxc"}),
        )
        .unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["snapshots"][0]["parent"], Value::Null);
        assert_eq!(s["snapshots"][0]["vmstate"], Value::Null);
        assert_eq!(s["current_parent"], Value::Null);
        assert_eq!(s["current_path"], json!([]));

        let mut pve = FakePve::default().with(
            "/nodes/pve1/qemu/101/snapshot",
            json!([{"name":"current","digest":"x","running":0,"description":"You are here!"}]),
        );
        let out = call(
            &mut pve,
            json!({"vmid": 101, "node": "pve1", "vm_type": "qemu", "limit": 1}),
        )
        .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["total"], 0);
        assert_eq!(out.structured["running"], false);
        assert_eq!(out.summary, "VM 101 on pve1 has 0 snapshots.");
    }

    #[test]
    fn resolves_and_pages() {
        let mut pve = FakePve::default()
            .with(
                "/cluster/resources?type=vm",
                crate::resources::fixtures::cluster_vms(),
            )
            .with("/nodes/node2/qemu/100/snapshot", qemu_snaps());
        let out = call(&mut pve, json!({"vmid": 100, "limit": 2, "offset": 1})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["snapshots"][0]["name"], "before-upgrade");
        assert_eq!(s["returned"], 2);
        assert_eq!(s["next_offset"], 3);
        assert_eq!(s["resolved"]["node"], true);
    }

    #[test]
    fn bad_arguments_make_no_request() {
        let mut pve = FakePve::default();
        for args in [
            json!({}),
            json!({"vmid": 99}),
            json!({"vmid": 101, "limit": 501}),
            json!({"vmid": 101, "vm_type": "vm"}),
        ] {
            let e = call(&mut pve, args.clone()).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{args}: {e:?}");
        }
        assert!(pve.requests.is_empty());
    }
}
