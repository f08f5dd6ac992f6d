//! `pve_list_appliances`: the appliance index a node knows
//! (`GET /nodes/{node}/aplinfo`): the container templates Proxmox and
//! TurnKey publish, which pve_download_appliance fetches onto a storage.
//! Filtered by section and words of a name, bounded and paged.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Pve;
use crate::arg::{NodeName, Text};
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::paging::{self, Limit, Offset, Page, PageInfo};
use crate::path::ApiPath;
use crate::tool::{Answer, Tool, read_tool};

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 50;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 500;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_appliances",
    title: "List appliance templates",
    description: "Container templates a node can download, with OS and version; fetch one with \
        pve_download_appliance.",
    reads: ["/nodes/{node}/aplinfo"],
    privileges: [],
    run: run,
};

/// Which appliances.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Node to ask
    node: NodeName,
    /// Only this section (system, turnkeylinux)
    section: Option<Text<64>>,
    /// Words in the name
    query: Option<Text<128>>,
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    #[serde(default)]
    offset: Offset,
}

/// One page of the index.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ApplianceList {
    /// Node asked
    pub node: String,
    /// Appliances by template name
    pub appliances: Vec<Appliance>,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// One appliance.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Appliance {
    /// Template file name: pass it to pve_download_appliance
    pub template: String,
    /// Section, e.g. system, turnkeylinux, mail
    pub section: Option<String>,
    /// Package name
    pub package: Option<String>,
    /// Version
    pub version: Option<String>,
    /// OS, e.g. debian-12
    pub os: Option<String>,
    /// One-line description
    pub headline: Option<String>,
    /// CPU architecture, e.g. amd64
    pub architecture: Option<String>,
}

fn record(e: &Value) -> Option<Appliance> {
    Some(Appliance {
        template: pj::text(e.get("template"))?,
        section: pj::text(e.get("section")),
        package: pj::text(e.get("package")),
        version: pj::text(e.get("version")),
        os: pj::text(e.get("os")),
        headline: pj::text(e.get("headline")),
        architecture: pj::text(e.get("architecture")),
    })
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ApplianceList>, ToolError> {
    let node = input.node.as_str();
    let entries = fetch::list(pve, &ApiPath::new("nodes").seg(node).lit("aplinfo"))?;
    let words: Vec<String> = input
        .query
        .as_ref()
        .map(|q| q.as_str().split_whitespace().map(str::to_lowercase).collect())
        .unwrap_or_default();
    let section = input.section.as_ref().map(Text::as_str);
    let mut appliances: Vec<Appliance> = entries
        .iter()
        .filter_map(record)
        .filter(|a| section.is_none_or(|s| a.section.as_deref() == Some(s)))
        .filter(|a| {
            let text = format!(
                "{} {}",
                a.template,
                a.headline.as_deref().unwrap_or_default()
            )
            .to_lowercase();
            words.iter().all(|w| text.contains(w))
        })
        .collect();
    appliances.sort_by(|a, b| a.template.cmp(&b.template));
    let (appliances, page) = paging::paginate(appliances, Page::new(input.limit, input.offset));
    let summary = if page.total == 0 {
        format!(
            "No appliance on {node} matches; without filters the index may be empty until the \
             node has run pveam update."
        )
    } else {
        format!(
            "{} on {node}; {}.",
            crate::format::count(page.total, "appliance", "appliances"),
            page.describe()
        )
    };
    Ok(Answer {
        summary,
        structured: ApplianceList {
            node: node.to_owned(),
            appliances,
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

    fn index() -> Value {
        json!([
            {"template": "ubuntu-24.04-standard_24.04-2_amd64.tar.zst", "section": "system",
             "os": "ubuntu-24.04", "headline": "Ubuntu 24.04 (standard)", "version": "24.04-2",
             "package": "ubuntu-24.04-standard", "architecture": "amd64"},
            {"template": "debian-12-turnkey-nextcloud_18.1-1_amd64.tar.gz",
             "section": "turnkeylinux", "headline": "TurnKey Nextcloud"},
            {"template": "debian-12-standard_12.7-1_amd64.tar.zst", "section": "system",
             "headline": "Debian 12 Bookworm (standard)"},
            {"section": "system"},
        ])
    }

    #[test]
    fn appliances_are_filtered_sorted_and_paged() {
        let mut pve = FakePve::default().with("/nodes/pve1/aplinfo", index());
        let out = TOOL
            .call(&mut pve, r#"{"node": "pve1", "section": "system"}"#)
            .unwrap();
        assert_valid_output(&TOOL, &out);
        let names: Vec<&str> = out.structured["appliances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["template"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "debian-12-standard_12.7-1_amd64.tar.zst",
                "ubuntu-24.04-standard_24.04-2_amd64.tar.zst"
            ]
        );
        let out = TOOL
            .call(&mut pve, r#"{"node": "pve1", "query": "NEXTCLOUD turnkey"}"#)
            .unwrap();
        assert_eq!(out.structured["total"], 1);
    }
}
