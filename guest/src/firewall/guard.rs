//! The lockout guard's part in a write: which nodes a change at a scope
//! reaches, what decides their management ports before and after it, and
//! the verdict ([`super::lockout::guard`]).

use serde_json::{Map, Value};

use super::lockout::{self, Scene};
use super::{Place, Scope};
use crate::api::Pve;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;

/// The nodes a change at `place` reaches: its node, or every online node
/// for the cluster's; none for a guest's.
pub fn nodes_reached(pve: &mut dyn Pve, place: &Place) -> Result<Vec<String>, ToolError> {
    match (place.scope, &place.node) {
        (Scope::Guest, _) => Ok(Vec::new()),
        (Scope::Node, Some(node)) => Ok(vec![node.clone()]),
        _ => Ok(fetch::list(pve, &ApiPath::new("nodes"))?
            .iter()
            .filter(|n| pj::text(n.get("status")).as_deref() == Some("online"))
            .filter_map(|n| pj::text(n.get("node")))
            .collect()),
    }
}

/// Reads what decides the management ports of the nodes a change at
/// `place` reaches, applies `change` to a copy, and refuses (or, allowed,
/// warns about) what it newly cuts. A guest's firewall never guards a
/// node's ports: nothing to check.
pub fn change(
    pve: &mut dyn Pve,
    place: &Place,
    allow: bool,
    change: impl FnOnce(&mut Scene),
) -> Result<Option<String>, ToolError> {
    if place.scope == Scope::Guest {
        return Ok(None);
    }
    let nodes = nodes_reached(pve, place)?;
    let before = Scene::read(pve, &nodes)?;
    let mut after = before.clone();
    change(&mut after);
    lockout::guard(&before, &after, allow)
}

/// [`change`] of the scope's own rules.
pub fn rules(
    pve: &mut dyn Pve,
    place: &Place,
    allow: bool,
    edit: impl FnOnce(&mut Vec<Map<String, Value>>),
) -> Result<Option<String>, ToolError> {
    change(pve, place, allow, |scene| {
        let rules = match &place.node {
            Some(node) => match scene.nodes.get_mut(node) {
                Some(n) => &mut n.rules,
                None => return,
            },
            None => &mut scene.cluster_rules,
        };
        edit(rules);
    })
}
