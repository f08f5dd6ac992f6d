//! The HA manager's resources (`/cluster/ha/resources`) and where each may
//! run: a PVE 8 group's nodes (`/cluster/ha/groups/{group}`, binding when
//! `restricted`), or the strict node-affinity rules of PVE 9
//! (`/cluster/ha/rules`) that name it.

use serde_json::{Map, Value};

use crate::api::Pve;
use crate::arg::{deserialize_from_json, fixed_schema, string};
use crate::error::{ToolError, quoted};
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;

/// An HA resource id: `vm:100` or `ct:101`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sid(pub String);

impl Sid {
    /// As given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The guest's id.
    pub fn vmid(&self) -> u64 {
        self.0
            .split_once(':')
            .and_then(|(_, id)| id.parse().ok())
            .unwrap_or_default()
    }

    /// `qemu` or `lxc`, as `/cluster/resources` types the guest.
    pub fn guest_type(&self) -> &'static str {
        if self.0.starts_with("ct:") {
            "lxc"
        } else {
            "qemu"
        }
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let s = string(v, 16)?;
        let ok = s.split_once(':').is_some_and(|(kind, id)| {
            matches!(kind, "vm" | "ct")
                && (3..=9).contains(&id.len())
                && !id.starts_with('0')
                && id.bytes().all(|b| b.is_ascii_digit())
        });
        if ok {
            Ok(Sid(s.to_owned()))
        } else {
            Err(format!(
                "{} is not an HA resource id; write vm:<vmid> for a VM or ct:<vmid> for a \
                 container, e.g. \"vm:100\"",
                quoted(s, 32)
            ))
        }
    }
}
deserialize_from_json!(Sid);
fixed_schema!(
    Sid,
    serde_json::json!({"type": "string", "pattern": "^(vm|ct):[1-9][0-9]{2,8}$"})
);

/// The HA resources as configured, by sid.
pub fn resources(pve: &mut dyn Pve) -> Result<Vec<Map<String, Value>>, ToolError> {
    Ok(
        fetch::list(pve, &ApiPath::new("cluster").lit("ha").lit("resources"))?
            .into_iter()
            .filter_map(|r| match r {
                Value::Object(o) => Some(o),
                _ => None,
            })
            .collect(),
    )
}

/// The configured resource `sid`, if there is one.
pub fn find(pve: &mut dyn Pve, sid: &Sid) -> Result<Option<Map<String, Value>>, ToolError> {
    Ok(resources(pve)?
        .into_iter()
        .find(|r| pj::text(r.get("sid")).as_deref() == Some(sid.as_str())))
}

/// The node the HA manager reports `sid` on, from
/// `/cluster/ha/status/current`.
pub fn current_node(pve: &mut dyn Pve, sid: &Sid) -> Result<Option<String>, ToolError> {
    let path = ApiPath::new("cluster")
        .lit("ha")
        .lit("status")
        .lit("current");
    Ok(fetch::list(pve, &path)?
        .iter()
        .find(|e| {
            pj::text(e.get("type")).as_deref() == Some("service")
                && pj::text(e.get("sid")).as_deref() == Some(sid.as_str())
        })
        .and_then(|e| pj::text(e.get("node"))))
}

/// Where `resource` may run, and what says so: the nodes of its
/// restricted group (PVE 8) or of the strict node-affinity rules that name
/// it (PVE 9); `None` when nothing binds it.
pub fn allowed_nodes(
    pve: &mut dyn Pve,
    resource: &Map<String, Value>,
    major: Option<u32>,
) -> Result<Option<(Vec<String>, String)>, ToolError> {
    let sid = pj::text(resource.get("sid")).unwrap_or_default();
    if major.is_some_and(|m| m >= 9) {
        let rules = fetch::list(pve, &ApiPath::new("cluster").lit("ha").lit("rules"))?;
        let mut nodes: Option<Vec<String>> = None;
        let mut names = Vec::new();
        for rule in &rules {
            let binds = pj::text(rule.get("type")).as_deref() == Some("node-affinity")
                && pj::flag(rule.get("strict"))
                && !pj::flag(rule.get("disable"))
                && pj::text(rule.get("resources"))
                    .is_some_and(|r| r.split(',').any(|s| s.trim() == sid));
            if !binds {
                continue;
            }
            let these = node_list(rule.get("nodes"));
            nodes = Some(match nodes {
                None => these,
                Some(before) => before.into_iter().filter(|n| these.contains(n)).collect(),
            });
            names.extend(pj::text(rule.get("rule")));
        }
        return Ok(nodes.map(|n| (n, format!("strict node-affinity rule {}", names.join(", ")))));
    }
    let Some(group) = pj::text(resource.get("group")) else {
        return Ok(None);
    };
    let path = ApiPath::new("cluster").lit("ha").lit("groups").seg(&group);
    let g = fetch::object(pve, &path)?;
    if !pj::flag(g.get("restricted")) {
        return Ok(None);
    }
    Ok(Some((
        node_list(g.get("nodes")),
        format!("restricted HA group {group}"),
    )))
}

/// The node names of a `nodes` value: `pve1:2,pve2` -> pve1, pve2.
fn node_list(nodes: Option<&Value>) -> Vec<String> {
    pj::text(nodes)
        .unwrap_or_default()
        .split(',')
        .filter_map(|n| n.split(':').next())
        .map(str::trim)
        // Node names only: they go into messages for the agent.
        .filter(|n| crate::arg::is_node_name(n))
        .map(str::to_owned)
        .collect()
}
