//! `pve_list_nodes`: the cluster's nodes with their load from `GET /nodes`.

use serde::Serialize;
use serde_json::Value;

use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::error::ToolError;
use crate::fetch;
use crate::format;
use crate::json::{self as pj, Tidy};
use crate::paging::{self, Counts, Page, PageArgs, PageInfo};
use crate::path::ApiPath;

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 1000;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_nodes",
    title: "List nodes",
    description: "The nodes with status, CPU, memory, disk and uptime. Use it for node names or to \
        spot offline or overloaded nodes.",
    reads: ["/nodes"],
    privileges: [
        "/nodes/{node}": "Sys.Audit",
    ],
    run: run,
};

/// One page of nodes.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct NodeList {
    /// Nodes by name, one page of them
    pub nodes: Vec<NodeEntry>,
    /// Number of nodes per status, over all nodes (not only this page)
    pub count_by_status: Counts,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// One node.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct NodeEntry {
    /// Node name
    pub node: String,
    /// online, offline or unknown
    pub status: String,
    /// CPU use as a fraction of maxcpu (0.25 = 25%); null if unknown
    pub cpu: Option<Tidy>,
    /// Number of CPUs; null if unknown
    pub maxcpu: Option<u64>,
    /// Memory in use, bytes; null if unknown
    pub mem: Option<u64>,
    /// Memory size, bytes; null if unknown
    pub maxmem: Option<u64>,
    /// Root disk used, bytes; null if unknown
    pub disk: Option<u64>,
    /// Root disk size, bytes; null if unknown
    pub maxdisk: Option<u64>,
    /// Seconds since boot; null if unknown
    pub uptime: Option<u64>,
    /// Subscription level (c, b, s, p); null if none
    pub level: Option<String>,
    /// SHA-256 fingerprint of the node certificate; null if not reported
    pub ssl_fingerprint: Option<String>,
}

fn run(
    pve: &mut dyn Pve,
    input: PageArgs<DEFAULT_LIMIT, MAX_LIMIT>,
) -> Result<Answer<NodeList>, ToolError> {
    let page = input.page();
    let entries = fetch::list(pve, &ApiPath::new("nodes"))?;
    Ok(shape(&entries, page))
}

/// Shapes a `/nodes` answer.
pub fn shape(entries: &[Value], page: Page) -> Answer<NodeList> {
    let mut nodes: Vec<NodeEntry> = entries
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|e| {
            Some(NodeEntry {
                node: pj::text(e.get("node"))?,
                status: pj::text(e.get("status")).unwrap_or_else(|| "unknown".to_owned()),
                cpu: pj::fraction(e.get("cpu")).map(Tidy),
                maxcpu: pj::uint(e.get("maxcpu")),
                mem: pj::uint(e.get("mem")),
                maxmem: pj::uint(e.get("maxmem")),
                disk: pj::uint(e.get("disk")),
                maxdisk: pj::uint(e.get("maxdisk")),
                uptime: pj::uint(e.get("uptime")),
                level: pj::text(e.get("level")),
                ssl_fingerprint: pj::text(e.get("ssl_fingerprint")),
            })
        })
        .collect();
    nodes.sort_by(|a, b| a.node.cmp(&b.node));
    let counts = Counts::of(&nodes, |n| &n.status);
    let (nodes, info) = paging::paginate(nodes, page);
    let breakdown = counts
        .0
        .iter()
        .map(|(s, n)| format!("{n} {s}"))
        .collect::<Vec<_>>()
        .join(", ");
    let summary = if info.total == 0 {
        "No nodes visible (the API token may lack Sys.Audit).".to_owned()
    } else {
        format!(
            "{} ({breakdown}); {}.",
            format::count(info.total, "node", "nodes"),
            info.describe()
        )
    };
    Answer {
        structured: NodeList {
            nodes,
            count_by_status: counts,
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

    fn fixture() -> Value {
        json!([
            {"uptime":2236708,"level":"","maxmem":33568288768u64,"disk":2310930432u64,"node":"node1","maxdisk":940743983104u64,
             "mem":11508809728u64,"ssl_fingerprint":"80:D4:F2:DF:77:99:69:F5","status":"online","type":"node",
             "cpu":0.00348605577689243,"id":"node/node1","maxcpu":12},
            {"id":"node/node3","node":"node3","type":"node","status":"offline","ssl_fingerprint":"AA:BB"},
            {"uptime":"100","level":"c","maxmem":16668827648u64,"disk":1,"node":"node2","maxdisk":2,
             "mem":1681965056,"status":"online","type":"node","cpu":0,"id":"node/node2","maxcpu":4}
        ])
    }

    fn call(args: &str) -> Output {
        let mut pve = FakePve::default().with("/nodes", fixture());
        let out = TOOL.call(&mut pve, args).unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        out
    }

    #[test]
    fn lists_sorted_with_counts() {
        let out = call("{}");
        let s = &out.structured;
        assert_eq!(s["total"], 3);
        assert_eq!(s["count_by_status"], json!({"online": 2, "offline": 1}));
        assert_eq!(
            s["nodes"][0],
            json!({"node":"node1","status":"online","cpu":0.0035,"maxcpu":12,"mem":11508809728u64,
                "maxmem":33568288768u64,"disk":2310930432u64,"maxdisk":940743983104u64,"uptime":2236708,
                "level":null,"ssl_fingerprint":"80:D4:F2:DF:77:99:69:F5"})
        );
        assert_eq!(s["nodes"][1]["node"], "node2");
        assert_eq!(s["nodes"][1]["uptime"], 100);
        assert_eq!(s["nodes"][1]["level"], "c");
        let offline = &s["nodes"][2];
        assert_eq!(offline["cpu"], Value::Null);
        assert_eq!(offline["mem"], Value::Null);
        assert_eq!(out.summary, "3 nodes (1 offline, 2 online); showing all 3.");
    }

    #[test]
    fn pages() {
        let out = call(r#"{"limit": 1, "offset": 1}"#);
        assert_eq!(out.structured["nodes"][0]["node"], "node2");
        assert_eq!(out.structured["next_offset"], 2);
        assert_eq!(out.structured["omitted"], 2);
        assert!(
            out.summary.contains("showing 2-2 of 3; pass offset 2"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn bad_paging_is_rejected_before_any_request() {
        let mut pve = FakePve::default();
        for a in [
            r#"{"limit": 0}"#,
            r#"{"limit": 1001}"#,
            r#"{"offset": -1}"#,
            r#"{"offset": "1"}"#,
        ] {
            let e = TOOL.call(&mut pve, a).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{a}: {e:?}");
        }
        assert!(pve.requests.is_empty());
    }
}
