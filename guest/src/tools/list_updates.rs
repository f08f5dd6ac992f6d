//! `pve_list_updates`: the package updates a node's last `apt update`
//! found (`GET /nodes/{node}/apt/update`), with the installed and the new
//! version, bounded and paged. Refreshing the index is a write in the
//! `apt` sensitive class and stays out.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Pve;
use crate::arg::NodeName;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::paging::{self, Limit, Offset, Page, PageInfo};
use crate::path::ApiPath;
use crate::tool::{Answer, Tool, read_tool};

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 1000;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_updates",
    title: "List a node's pending updates",
    description: "Package updates a node's last apt update found, with installed and new \
        version. Does not refresh the package index.",
    reads: ["/nodes/{node}/apt/update"],
    privileges: [
        // Proxmox asks Sys.Modify even to list them.
        "/nodes/{node}": "Sys.Modify",
    ],
    run: run,
};

/// Which node.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Node to ask
    node: NodeName,
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    #[serde(default)]
    offset: Offset,
}

/// A node's pending updates.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct UpdateList {
    /// Node asked
    pub node: String,
    /// Updates by package name
    pub updates: Vec<Update>,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// One package update.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Update {
    /// Package name
    pub package: String,
    /// One-line description
    pub title: Option<String>,
    /// Installed version; null when new
    pub old_version: Option<String>,
    /// Version the update brings
    pub version: Option<String>,
    /// Repository origin, e.g. Proxmox or Debian
    pub origin: Option<String>,
    /// Debian priority
    pub priority: Option<String>,
}

fn record(e: &Value) -> Option<Update> {
    Some(Update {
        package: pj::text(e.get("Package"))?,
        title: pj::text(e.get("Title")),
        old_version: pj::text(e.get("OldVersion")),
        version: pj::text(e.get("Version")),
        origin: pj::text(e.get("Origin")),
        priority: pj::text(e.get("Priority")),
    })
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<UpdateList>, ToolError> {
    let node = input.node.as_str();
    let entries = fetch::list(pve, &ApiPath::new("nodes").seg(node).lit("apt").lit("update"))?;
    let mut updates: Vec<Update> = entries.iter().filter_map(record).collect();
    updates.sort_by(|a, b| a.package.cmp(&b.package));
    let proxmox = updates
        .iter()
        .filter(|u| u.origin.as_deref() == Some("Proxmox"))
        .count();
    let (updates, page) = paging::paginate(updates, Page::new(input.limit, input.offset));
    let summary = if page.total == 0 {
        format!("No pending updates on {node} as of its last apt update.")
    } else {
        format!(
            "{} pending on {node} ({proxmox} from Proxmox's repositories), as of its last apt \
             update; {}.",
            crate::format::count(page.total, "update", "updates"),
            page.describe()
        )
    };
    Ok(Answer {
        summary,
        structured: UpdateList {
            node: node.to_owned(),
            updates,
            page,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    #[test]
    fn updates_are_listed_by_package_with_both_versions() {
        let mut pve = FakePve::default().with(
            "/nodes/pve1/apt/update",
            json!([
                {"Package": "pve-manager", "Title": "Proxmox VE manager", "OldVersion": "9.0.10",
                 "Version": "9.0.11", "Origin": "Proxmox", "Priority": "optional"},
                {"Package": "libc6", "OldVersion": "2.41-12", "Version": "2.41-12+deb13u1",
                 "Origin": "Debian"},
                {"Title": "no package name"},
            ]),
        );
        let out = TOOL.call(&mut pve, r#"{"node": "pve1"}"#).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["total"], 2);
        assert_eq!(out.structured["updates"][0]["package"], "libc6");
        assert_eq!(out.structured["updates"][1]["old_version"], "9.0.10");
        assert!(out.summary.contains("1 from Proxmox"), "{}", out.summary);
    }
}
