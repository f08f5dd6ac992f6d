//! The Proxmox firewall at its three scopes: the cluster
//! (`/cluster/firewall`), a node (`/nodes/{node}/firewall`) and a guest
//! (`/nodes/{node}/{qemu|lxc}/{vmid}/firewall`). What the firewall tools
//! share: where a call's `scope` points ([`Place`]), a ruleset and its
//! digest ([`Ruleset`]), and the rule arguments ([`args`]). Whether a
//! change cuts the management network off is [`lockout`]'s.
//!
//! Proxmox guards a ruleset's writes with the digest of the rules a client
//! read: `PUT` and `DELETE` of `rules/{pos}` refuse a stale one. A `POST`
//! ignores it (pve-firewall's `create_rule` puts the new rule at position 0,
//! ignores `pos` and leaves the rule disabled unless `enable` is given), so
//! the tools compare the digest the agent saw themselves before sending.

pub mod args;
pub mod guard;
pub mod lockout;

use serde_json::{Map, Value};

use crate::action;
use crate::api::Pve;
use crate::arg::{NodeName, Vmid, choice};
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;
use crate::resolve::{Target, Wanted};
use crate::route::{Kind, Otherwise, Param};

choice! {
    /// Which firewall a call is about.
    pub enum Scope {
        /// The cluster's: its rules apply to every node.
        Cluster = "cluster",
        /// One node's own (the host's management interface included).
        Node = "node",
        /// One guest's.
        Guest = "guest",
    }
}

/// Where a call's scope arguments point, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The scope.
    pub scope: Scope,
    /// The node of a node's or a guest's firewall.
    pub node: Option<String>,
    /// The guest of a guest's firewall.
    pub guest: Option<Target>,
}

impl Place {
    /// Checks `scope` against `node` and `vmid` (each scope takes what it
    /// names and nothing else) and resolves a guest's node and type.
    pub fn resolve(
        pve: &mut dyn Pve,
        scope: Scope,
        node: Option<&NodeName>,
        vmid: Option<Vmid>,
    ) -> Result<Place, ToolError> {
        let node = node.map(|n| n.as_str().to_owned());
        match (scope, &node, vmid) {
            (Scope::Cluster, Some(_), _) => Err(ToolError::field(
                "node",
                "leave it out with scope \"cluster\", or use scope \"node\" for a node's own rules",
            )),
            (Scope::Cluster | Scope::Node, _, Some(_)) => Err(ToolError::field(
                "vmid",
                "a guest's firewall is scope \"guest\"; leave vmid out for the cluster or a node",
            )),
            (Scope::Node, None, _) => Err(ToolError::field(
                "node",
                "required with scope \"node\": the node whose firewall it is (pve_list_nodes)",
            )),
            (Scope::Guest, _, None) => Err(ToolError::field(
                "vmid",
                "required with scope \"guest\": the VM or container whose firewall it is",
            )),
            (Scope::Cluster, None, None) => Ok(Place {
                scope,
                node: None,
                guest: None,
            }),
            (Scope::Node, Some(_), None) => Ok(Place {
                scope,
                node,
                guest: None,
            }),
            (Scope::Guest, _, Some(vmid)) => {
                let wanted = Wanted {
                    vmid: vmid.0,
                    node,
                    vm_type: None,
                };
                let target = wanted.resolve(pve)?;
                Ok(Place {
                    scope,
                    node: Some(target.node.clone()),
                    guest: Some(target),
                })
            }
        }
    }

    /// The firewall's own path: `/cluster/firewall`, ...
    pub fn base(&self) -> ApiPath {
        match (&self.guest, &self.node) {
            (Some(target), _) => action::guest_path(target).lit("firewall"),
            (None, Some(node)) => ApiPath::new("nodes").seg(node).lit("firewall"),
            (None, None) => ApiPath::new("cluster").lit("firewall"),
        }
    }

    /// The ruleset's path.
    pub fn rules(&self) -> ApiPath {
        self.base().lit("rules")
    }

    /// "the cluster", "node pve1", "VM 100 on pve1".
    pub fn label(&self) -> String {
        match (&self.guest, &self.node) {
            (Some(target), _) => format!("{} on {}", target.label(), target.node),
            (None, Some(node)) => format!("node {node}"),
            (None, None) => "the cluster".to_owned(),
        }
    }

    /// What a write's answer names as its node: the node, or "cluster".
    pub fn node_or_cluster(&self) -> String {
        self.node.clone().unwrap_or_else(|| "cluster".to_owned())
    }
}

/// A ruleset as Proxmox listed it, in position order, with its digest.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ruleset {
    /// The rules; each one's index is its `pos`.
    pub rules: Vec<Map<String, Value>>,
    /// The digest Proxmox gave (on every rule); none for an empty ruleset.
    pub digest: Option<String>,
}

impl Ruleset {
    /// `GET path` (a `rules` list), ordered by `pos`.
    pub fn read(pve: &mut dyn Pve, path: &ApiPath) -> Result<Ruleset, ToolError> {
        let mut rules: Vec<Map<String, Value>> = fetch::list(pve, path)?
            .into_iter()
            .filter_map(|r| match r {
                Value::Object(o) => Some(o),
                _ => None,
            })
            .collect();
        rules.sort_by_key(|r| pj::uint(r.get("pos")).unwrap_or(u64::MAX));
        let digest = rules.iter().find_map(|r| pj::text(r.get("digest")));
        Ok(Ruleset { rules, digest })
    }

    /// Refuses when `seen` (the digest the agent read) is not the digest
    /// now: someone changed the rules since, so positions may have moved.
    pub fn check_seen(&self, seen: Option<&str>, place: &Place) -> Result<(), ToolError> {
        match seen {
            Some(seen) if self.digest.as_deref() != Some(seen) => {
                Err(ToolError::Precondition(format!(
                    "the rules of {} changed since you read them (digest {} now, you gave {}). \
                     Nothing was sent. Read them again with pve_get_firewall and use the new \
                     positions and digest.",
                    place.label(),
                    self.digest
                        .as_deref()
                        .unwrap_or("none: the ruleset is empty"),
                    crate::error::quoted(seen, 64)
                )))
            }
            _ => Ok(()),
        }
    }

    /// The rule at `pos`, or an error naming how many there are.
    pub fn at(&self, pos: u64, place: &Place) -> Result<&Map<String, Value>, ToolError> {
        usize::try_from(pos)
            .ok()
            .and_then(|i| self.rules.get(i))
            .ok_or_else(|| {
                ToolError::field(
                    "pos",
                    format!(
                        "{} has {} rules (positions 0 to {}); there is none at {pos}",
                        place.label(),
                        self.rules.len(),
                        self.rules.len().saturating_sub(1)
                    ),
                )
            })
    }
}

/// One rule in a line, as an agent reads it in a plan: `in DROP tcp
/// dport 8006 from +management (pos 0)`.
pub fn describe(rule: &Map<String, Value>) -> String {
    let text = |k: &str| pj::text(rule.get(k)).filter(|s| !s.is_empty());
    let mut parts: Vec<String> = Vec::new();
    parts.extend(text("type"));
    parts.extend(text("action"));
    if let Some(m) = text("macro") {
        parts.push(format!("macro {m}"));
    }
    parts.extend(text("proto"));
    for (key, word) in [
        ("dport", "dport"),
        ("sport", "sport"),
        ("source", "from"),
        ("dest", "to"),
        ("iface", "on"),
    ] {
        if let Some(v) = text(key) {
            parts.push(format!("{word} {v}"));
        }
    }
    if rule.get("enable").is_some() && !pj::flag(rule.get("enable")) {
        parts.push("(disabled)".into());
    }
    let line = parts.join(" ");
    crate::error::quoted(&line, 160)
        .trim_matches('"')
        .to_owned()
}

/// The rule parameters of a firewall rule's `POST` and `PUT`, each
/// carrying the argument of its name; `enable` is sent as `1` when the
/// call leaves it out (Proxmox would add the rule disabled).
pub const RULE_PARAMS: &[Param] = &[
    Param::arg("type"),
    Param::arg("action"),
    Param::arg("source"),
    Param::arg("dest"),
    Param::arg("proto"),
    Param::arg("dport"),
    Param::arg("sport"),
    Param::arg("iface"),
    Param::arg("macro"),
    Param::arg("comment"),
    Param::arg("log"),
    ENABLE,
    SEEN_DIGEST,
];

/// `enable`: the call's, or `1`.
pub const ENABLE: Param = Param {
    name: "enable",
    argument: Some("enable"),
    otherwise: Otherwise::OneOf(&["1"]),
};

/// `digest`: the call's when it gives one (the tool refuses a stale one
/// before sending), else the one the tool read.
pub const SEEN_DIGEST: Param = Param {
    name: "digest",
    argument: Some("digest"),
    otherwise: Otherwise::Free(Kind::Text(64)),
};

/// The names of the cluster's security groups, which a `group` rule's
/// `action` must be one of.
pub fn group_names(pve: &mut dyn Pve) -> Result<Vec<String>, ToolError> {
    let groups = fetch::list(pve, &ApiPath::new("cluster").lit("firewall").lit("groups"))?;
    Ok(groups
        .iter()
        .filter_map(|g| pj::text(g.get("group")))
        .collect())
}

/// A rule as Proxmox will hold it after `PUT rules/{pos}` with `fields`
/// (moved instead when `moveto` is given, as Proxmox does).
pub fn apply_update(
    rules: &mut Vec<Map<String, Value>>,
    pos: usize,
    fields: &Map<String, Value>,
    moveto: Option<usize>,
) {
    if pos >= rules.len() {
        return;
    }
    match moveto {
        Some(to) if to != pos => {
            let moved = rules.remove(pos);
            // Proxmox puts it before the rule that was at `to`, or last.
            let at = if to > pos { to - 1 } else { to };
            rules.insert(at.min(rules.len()), moved);
        }
        Some(_) => {}
        None => {
            for (k, v) in fields {
                rules[pos].insert(k.clone(), v.clone());
            }
        }
    }
}

/// What a rule tool read: "the cluster has 3 rules (digest ...)".
pub fn found_rules(place: &Place, set: &Ruleset) -> String {
    format!(
        "{} has {} (digest {})",
        place.label(),
        crate::format::count(set.rules.len(), "rule", "rules"),
        set.digest.as_deref().unwrap_or("none")
    )
}
