//! `pve_get_cluster_status`: quorum and node membership from
//! `GET /cluster/status`.

use serde_json::{Map, Value};

use serde::Serialize;

use crate::tool::{Answer, NoArguments, Tool, read_tool};
use crate::api::Pve;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_cluster_status",
    title: "Get cluster status",
    description: "Cluster health: name, quorum and which nodes are online. Use it before \
        maintenance or when nodes seem unreachable.",
    reads: ["/cluster/status"],
    privileges: [
        "/": "Sys.Audit",
    ],
    run: run,
};

/// The cluster's health.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ClusterStatus {
    /// true if the node is not part of a cluster
    pub standalone: bool,
    /// The corosync cluster name; null when standalone
    pub cluster_name: Option<String>,
    /// true if the cluster has quorum (always true when standalone)
    pub quorate: bool,
    /// Corosync config version; null when standalone
    pub config_version: Option<u64>,
    /// Number of nodes, including offline ones
    pub node_count: u64,
    /// Names of online nodes, sorted
    pub nodes_online: Vec<String>,
    /// Names of offline nodes, sorted
    pub nodes_offline: Vec<String>,
    /// Every node, sorted by name
    pub nodes: Vec<Member>,
}

/// One cluster member.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Member {
    /// Node name
    pub name: String,
    /// Corosync node id (0 on a standalone node); null if not reported
    pub nodeid: Option<u64>,
    /// The node's cluster IP; null if not reported
    pub ip: Option<String>,
    /// true for the node that answered this request
    pub local: bool,
    /// true if the node is online
    pub online: bool,
    /// Subscription level (c, b, s, p); null if none
    pub level: Option<String>,
}

fn run(pve: &mut dyn Pve, _: NoArguments) -> Result<Answer<ClusterStatus>, ToolError> {
    let entries = fetch::list(pve, &ApiPath::new("cluster").lit("status"))?;
    Ok(shape(&entries))
}

/// Shapes a `/cluster/status` answer.
pub fn shape(entries: &[Value]) -> Answer<ClusterStatus> {
    let objects = entries.iter().filter_map(Value::as_object);
    let is = |e: &&Map<String, Value>, t: &str| e.get("type").and_then(Value::as_str) == Some(t);
    let cluster = objects.clone().find(|e| is(e, "cluster"));
    let mut nodes: Vec<Member> = objects
        .filter(|e| is(e, "node"))
        .map(|e| Member {
            name: pj::text(e.get("name")).unwrap_or_default(),
            nodeid: pj::uint(e.get("nodeid")),
            ip: pj::text(e.get("ip")),
            local: pj::flag(e.get("local")),
            online: pj::flag(e.get("online")),
            level: pj::text(e.get("level")),
        })
        .collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let names = |online: bool| -> Vec<String> {
        nodes
            .iter()
            .filter(|n| n.online == online)
            .map(|n| n.name.clone())
            .collect()
    };
    let (online, offline) = (names(true), names(false));
    let standalone = cluster.is_none();
    let cluster_name = cluster.and_then(|c| pj::text(c.get("name")));
    let quorate = cluster.is_none_or(|c| pj::flag(c.get("quorate")));
    let node_count = cluster
        .and_then(|c| pj::uint(c.get("nodes")))
        .unwrap_or(nodes.len() as u64)
        .max(nodes.len() as u64);
    let summary = if standalone {
        match online.first().or(offline.first()) {
            Some(n) => format!("Standalone node {n} (not clustered)."),
            None => "Standalone Proxmox VE (not clustered); no node entry reported.".to_owned(),
        }
    } else {
        let mut s = format!(
            "Cluster {}: {}, {} of {node_count} nodes online",
            cluster_name.as_deref().unwrap_or("(unnamed)"),
            if quorate { "quorate" } else { "NOT quorate" },
            online.len()
        );
        if !offline.is_empty() {
            s.push_str(&format!(" (offline: {})", offline.join(", ")));
        }
        s.push('.');
        s
    };
    Answer {
        structured: ClusterStatus {
            standalone,
            cluster_name,
            quorate,
            config_version: cluster.and_then(|c| pj::uint(c.get("version"))),
            node_count,
            nodes_online: online,
            nodes_offline: offline,
            nodes,
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

    fn call(data: Value) -> Output {
        let mut pve = FakePve::default().with("/cluster/status", data);
        let out = TOOL.call(&mut pve, "{}").unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        out
    }

    #[test]
    fn cluster_with_an_offline_node() {
        let out = call(json!([
            {"type":"cluster","version":4,"quorate":1,"name":"clustername","id":"cluster","nodes":3},
            {"name":"node2","nodeid":2,"online":0,"id":"node/node2","local":0,"ip":"192.168.1.2","type":"node","level":""},
            {"name":"node1","nodeid":1,"online":1,"id":"node/node1","local":1,"ip":"192.168.1.1","type":"node","level":"c"},
            {"name":"node3","nodeid":3,"online":1,"id":"node/node3","local":0,"ip":"192.168.1.3","type":"node","level":""}
        ]));
        let s = &out.structured;
        assert_eq!(s["standalone"], false);
        assert_eq!(s["cluster_name"], "clustername");
        assert_eq!(s["quorate"], true);
        assert_eq!(s["config_version"], 4);
        assert_eq!(s["node_count"], 3);
        assert_eq!(s["nodes_online"], json!(["node1", "node3"]));
        assert_eq!(s["nodes_offline"], json!(["node2"]));
        assert_eq!(
            s["nodes"][0],
            json!({"name":"node1","nodeid":1,"ip":"192.168.1.1","local":true,"online":true,"level":"c"})
        );
        assert_eq!(s["nodes"][1]["level"], Value::Null);
        assert_eq!(
            out.summary,
            "Cluster clustername: quorate, 2 of 3 nodes online (offline: node2)."
        );
    }

    #[test]
    fn not_quorate() {
        let out = call(json!([
            {"type":"cluster","version":"7","quorate":0,"name":"c","id":"cluster","nodes":2},
            {"name":"a","nodeid":1,"online":1,"id":"node/a","local":1,"ip":"10.0.0.1","type":"node"}
        ]));
        assert_eq!(out.structured["quorate"], false);
        assert_eq!(out.structured["config_version"], 7);
        assert!(
            out.summary.contains("NOT quorate, 1 of 2"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn standalone_node() {
        let out = call(json!([
            {"type":"node","id":"node/pve","name":"pve","nodeid":0,"local":1,"online":1,"ip":"192.168.0.5","level":""}
        ]));
        let s = &out.structured;
        assert_eq!(s["standalone"], true);
        assert_eq!(s["cluster_name"], Value::Null);
        assert_eq!(s["quorate"], true);
        assert_eq!(s["config_version"], Value::Null);
        assert_eq!(s["node_count"], 1);
        assert_eq!(s["nodes"][0]["nodeid"], 0);
        assert_eq!(out.summary, "Standalone node pve (not clustered).");
    }
}
