//! `pve_list_networks`: a node's interfaces and bridges from
//! `GET /nodes/{node}/network`, as its network configuration defines them.
//!
//! When someone changed the configuration without applying it, Proxmox
//! lists `/etc/network/interfaces.new` and puts the difference to the
//! running file beside the data, in the envelope's `changes` (a unified
//! diff). Each interface a hunk of it touches is marked `pending`, so an
//! agent does not take a bridge that exists only on paper for a live one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Pve;
use crate::arg::{NodeName, choice};
use crate::error::ToolError;
use crate::json as pj;
use crate::paging::{self, Limit, Offset, Page, PageInfo};
use crate::path::ApiPath;
use crate::tool::{Answer, Tool, read_tool};

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 500;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_networks",
    title: "List a node's networks",
    description: "A node's interfaces and bridges with addresses, ports and state; changes not \
        yet applied are marked pending.",
    reads: ["/nodes/{node}/network"],
    privileges: [],
    run: run,
};

choice! {
    /// A kind of interface, as Proxmox's `type` filter names it.
    pub enum Kind {
        /// Linux bridges.
        Bridge = "bridge",
        /// Bonds.
        Bond = "bond",
        /// Physical NICs.
        Eth = "eth",
        /// VLAN interfaces.
        Vlan = "vlan",
        /// Linux and Open vSwitch bridges.
        AnyBridge = "any_bridge",
    }
}

/// Which node, and which interfaces.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Node to ask
    node: NodeName,
    /// Only this kind
    #[serde(rename = "type")]
    kind: Option<Kind>,
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    #[serde(default)]
    offset: Offset,
}

/// A node's interfaces.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct NetworkList {
    /// Node asked
    pub node: String,
    /// Interfaces by name, as the configuration defines them
    pub interfaces: Vec<Interface>,
    /// true: the configuration has changes not applied yet
    pub pending: bool,
    /// The pending changes as Proxmox gives them (a unified diff); null if none
    pub changes: Option<String>,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// One interface.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Interface {
    /// Name, e.g. vmbr0
    pub iface: String,
    /// bridge, bond, eth, vlan, OVSBridge, ...
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// IPv4 method: static, manual, dhcp
    pub method: Option<String>,
    /// IPv4 address with prefix; null if none
    pub cidr: Option<String>,
    /// IPv4 gateway; null if none
    pub gateway: Option<String>,
    /// IPv6 address with prefix; null if none
    pub cidr6: Option<String>,
    /// A bridge's ports, a bond's slaves; empty if none
    pub ports: Vec<String>,
    /// A bridge that passes VLAN tags
    pub vlan_aware: bool,
    /// Up now
    pub active: bool,
    /// Brought up at boot
    pub autostart: bool,
    /// true: a change to it is not applied yet
    pub pending: bool,
    /// Its comment; null if none
    pub comments: Option<String>,
}

/// The interfaces whose stanzas a unified diff's changed lines fall in.
/// A hunk names a stanza by its `iface` line; a change before any such
/// line in its hunk belongs to a stanza the hunk does not name, so it is
/// only counted in [`NetworkList::pending`].
pub fn changed_interfaces(diff: &str) -> Vec<String> {
    let mut changed: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for line in diff.lines() {
        if line.starts_with("@@") {
            current = None;
            continue;
        }
        if line.starts_with("---") || line.starts_with("+++") {
            continue;
        }
        let (mark, text) = line.split_at(line.len().min(1));
        let mut words = text.split_whitespace();
        if let (Some("iface" | "auto"), Some(name)) = (words.next(), words.next()) {
            current = Some(name.to_owned());
        }
        if matches!(mark, "+" | "-")
            && let Some(name) = &current
            && !changed.contains(name)
        {
            changed.push(name.clone());
        }
    }
    changed
}

fn record(e: &Value, changed: &[String]) -> Option<Interface> {
    let iface = pj::text(e.get("iface"))?;
    let ports = pj::text(e.get("bridge_ports"))
        .or_else(|| pj::text(e.get("slaves")))
        .map(|p| {
            p.split_whitespace()
                .filter(|p| *p != "none")
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Some(Interface {
        pending: changed.contains(&iface),
        kind: pj::text(e.get("type")),
        method: pj::text(e.get("method")),
        cidr: pj::text(e.get("cidr")).or_else(|| pj::text(e.get("address"))),
        gateway: pj::text(e.get("gateway")),
        cidr6: pj::text(e.get("cidr6")).or_else(|| pj::text(e.get("address6"))),
        ports,
        vlan_aware: pj::flag(e.get("bridge_vlan_aware")),
        active: pj::flag(e.get("active")),
        autostart: pj::flag(e.get("autostart")),
        comments: pj::text(e.get("comments")).map(|c| c.trim().to_owned()),
        iface,
    })
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NetworkList>, ToolError> {
    let node = input.node.as_str();
    let mut path = ApiPath::new("nodes").seg(node).lit("network");
    if let Some(kind) = input.kind {
        path = path.query("type", kind.as_str());
    }
    let envelope = pve.get_envelope(&path)?;
    let entries = envelope.data.as_array().cloned().unwrap_or_default();
    let changes = envelope.changes.filter(|c| !c.trim().is_empty());
    let changed = changes.as_deref().map(changed_interfaces).unwrap_or_default();
    let mut interfaces: Vec<Interface> = entries.iter().filter_map(|e| record(e, &changed)).collect();
    interfaces.sort_by(|a, b| a.iface.cmp(&b.iface));
    let (interfaces, page) = paging::paginate(interfaces, Page::new(input.limit, input.offset));
    let pending = changes.is_some();
    let mut summary = format!(
        "{} on {node}; {}.",
        crate::format::count(page.total, "interface", "interfaces"),
        page.describe()
    );
    if pending {
        let named = if changed.is_empty() {
            String::new()
        } else {
            format!(" ({})", changed.join(", "))
        };
        summary.push_str(&format!(
            " The configuration has changes not applied yet{named}: what is listed is the new \
             configuration, not what runs."
        ));
    }
    Ok(Answer {
        summary,
        structured: NetworkList {
            node: node.to_owned(),
            interfaces,
            pending,
            changes,
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

    const DIFF: &str = "--- /etc/network/interfaces\t2026-05-01\n+++ /etc/network/interfaces.new\t2026-12-01\n@@ -24,3 +24,12 @@\n \tbridge-vids 2-4094\n #VLAN trunk for guests\n \n+auto vmbr2\n+iface vmbr2 inet static\n+\taddress 10.10.10.11/24\n+\n source /etc/network/interfaces.d/*\n";

    fn data() -> Value {
        json!([
            {"iface": "vmbr0", "type": "bridge", "method": "static", "cidr": "192.0.2.11/24",
             "gateway": "192.0.2.1", "bridge_ports": "eno1", "active": 1, "autostart": 1,
             "comments": "Management\n"},
            {"iface": "vmbr2", "type": "bridge", "method": "static", "cidr": "10.10.10.11/24",
             "bridge_ports": "none", "autostart": 1},
            {"iface": "eno1", "type": "eth", "method": "manual", "active": 1, "exists": 1},
        ])
    }

    #[test]
    fn interfaces_are_listed_and_pending_ones_marked() {
        let mut pve = FakePve::default().with_changes("/nodes/pve2/network", data(), DIFF);
        let out = TOOL.call(&mut pve, r#"{"node": "pve2"}"#).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["pending"], true);
        let names: Vec<&str> = s["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["iface"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["eno1", "vmbr0", "vmbr2"]);
        assert_eq!(s["interfaces"][2]["pending"], true);
        assert_eq!(s["interfaces"][2]["active"], false);
        assert_eq!(s["interfaces"][2]["ports"], json!([]));
        assert_eq!(s["interfaces"][1]["pending"], false);
        assert_eq!(s["interfaces"][1]["ports"], json!(["eno1"]));
        assert_eq!(s["interfaces"][1]["comments"], "Management");
        assert!(out.summary.contains("not applied yet (vmbr2)"), "{}", out.summary);
    }

    #[test]
    fn without_changes_nothing_is_pending_and_the_filter_is_sent() {
        let mut pve = FakePve::default().with("/nodes/pve1/network?type=bridge", json!([]));
        let out = TOOL.call(&mut pve, r#"{"node": "pve1", "type": "bridge"}"#).unwrap();
        assert_eq!(out.structured["pending"], false);
        assert_eq!(out.structured["changes"], Value::Null);
    }

    #[test]
    fn a_change_is_given_to_the_stanza_its_hunk_names() {
        let diff = "@@ -1,4 +1,4 @@\n auto vmbr0\n iface vmbr0 inet static\n-\taddress 10.0.0.1/24\n+\taddress 10.0.0.2/24\n@@ -9,2 +9,2 @@\n-\tmtu 1500\n+\tmtu 9000\n";
        assert_eq!(changed_interfaces(diff), ["vmbr0"]);
    }
}
