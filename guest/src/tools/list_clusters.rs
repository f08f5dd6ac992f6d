//! `pve_list_clusters`: the Proxmox clusters this server is configured
//! for, from the call context; makes no Proxmox request.

use serde::Serialize;

use crate::tool::{Answer, NoArguments, Tool, read_tool};
use crate::api::Pve;
use crate::error::ToolError;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_clusters",
    title: "List configured Proxmox clusters",
    description: "The Proxmox clusters this server reaches and the default one; pass a name as any \
        tool's cluster argument.",
    reads: [],
    privileges: [],
    run: run,
};

/// The clusters this server may ask.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Clusters {
    /// Configured clusters, default first
    pub clusters: Vec<ClusterEntry>,
    /// Name of the default cluster; null if none is configured
    pub default: Option<String>,
    /// Number of configured clusters
    pub count: usize,
}

/// One configured cluster.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ClusterEntry {
    /// Name to pass as the cluster argument
    pub name: String,
    /// Proxmox API base URL, e.g. https://pve1.example:8006
    // Verbatim in the schema's description, which is plain text.
    #[allow(rustdoc::bare_urls)]
    pub base_url: String,
    /// true for the cluster used when cluster is omitted
    pub default: bool,
}

fn run(pve: &mut dyn Pve, _: NoArguments) -> Result<Answer<Clusters>, ToolError> {
    let endpoints = pve.endpoints();
    let clusters: Vec<ClusterEntry> = endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| ClusterEntry {
            name: e.name.clone(),
            base_url: e.base_url.clone(),
            default: i == 0,
        })
        .collect();
    let default = endpoints.first().map(|e| e.name.clone());
    let summary = match endpoints {
        [] => "No Proxmox clusters are configured for this call.".to_owned(),
        [one] => format!(
            "1 cluster configured: {} ({}), the default.",
            one.name, one.base_url
        ),
        many => format!(
            "{} clusters configured: {}; default {}.",
            many.len(),
            many.iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            many[0].name
        ),
    };
    Ok(Answer {
        structured: Clusters {
            clusters,
            default,
            count: endpoints.len(),
        },
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::cluster::Endpoint;
    use serde_json::{Value, json};

    #[test]
    fn lists_names_and_urls_without_requests() {
        let mut pve = FakePve {
            endpoints: vec![
                Endpoint {
                    name: "prod".into(),
                    base_url: "https://pve1.example:8006".into(),
                },
                Endpoint {
                    name: "lab".into(),
                    base_url: "https://lab:8006".into(),
                },
            ],
            ..FakePve::default()
        };
        let out = TOOL.call(&mut pve, "{}").unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        assert!(pve.requests.is_empty());
        assert_eq!(
            out.structured,
            json!({"clusters": [
                {"name": "prod", "base_url": "https://pve1.example:8006", "default": true},
                {"name": "lab", "base_url": "https://lab:8006", "default": false}
            ], "default": "prod", "count": 2})
        );
        assert_eq!(
            out.summary,
            "2 clusters configured: prod, lab; default prod."
        );
    }

    #[test]
    fn none_configured() {
        let out = TOOL.call(&mut FakePve::default(), "").unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["default"], Value::Null);
        assert!(out.summary.starts_with("No Proxmox clusters"));
    }
}
