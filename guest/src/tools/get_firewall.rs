//! `pve_get_firewall`: one firewall's rules (in position order, each with
//! its `pos`), options, aliases, IP sets with their members, security
//! groups with their rules, or the names a rule may refer to, at the
//! cluster, a node or a guest. Bounded: at most [`MAX_ITEMS`] entries, and
//! as many members or rules inside each.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::Pve;
use crate::arg::{NodeName, Vmid, choice};
use crate::error::ToolError;
use crate::fetch;
use crate::firewall::{Place, Ruleset, Scope};
use crate::json as pj;
use crate::tool::{Answer, Tool, read_tool};

/// Most entries an answer carries, and most members or rules inside one.
pub const MAX_ITEMS: usize = 200;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_firewall",
    title: "Get firewall rules or settings",
    description: "A firewall's rules (with pos and digest), options, aliases, ipsets, groups or \
        refs, at cluster, node or guest scope.",
    reads: [
        "/cluster/firewall/rules",
        "/cluster/firewall/options",
        "/cluster/firewall/aliases",
        "/cluster/firewall/ipset",
        "/cluster/firewall/groups",
        "/cluster/firewall/refs",
        "/nodes/{node}/firewall/rules",
        "/nodes/{node}/firewall/options",
        "/nodes/{node}/{vm_type}/{vmid}/firewall/rules",
        "/nodes/{node}/{vm_type}/{vmid}/firewall/options",
    ],
    privileges: [
        "/": "Sys.Audit",
        "/nodes/{node}": "Sys.Audit",
        "/vms/{vmid}": "VM.Audit",
    ],
    run: run,
};

choice! {
    /// What of a firewall to read.
    pub enum What {
        /// Its rules, in position order.
        Rules = "rules",
        /// Its options.
        Options = "options",
        /// Its aliases (cluster, guest).
        Aliases = "aliases",
        /// Its IP sets with their members (cluster, guest).
        Ipsets = "ipsets",
        /// The security groups with their rules (cluster).
        Groups = "groups",
        /// The aliases and IP sets a rule may name (cluster, guest).
        Refs = "refs",
    }
}

/// Which firewall, and what of it.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// cluster, node or guest
    scope: Scope,
    /// Node, for scope node
    node: Option<NodeName>,
    /// Guest, for scope guest
    vmid: Option<Vmid>,
    /// rules (default), options, aliases, ipsets, groups or refs
    what: Option<What>,
}

/// One firewall's part.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct FirewallView {
    /// Whose firewall, e.g. "VM 100 on pve1"
    pub firewall: String,
    /// What was read
    pub what: What,
    /// Pass it to a change of these rules or options; null if none
    pub digest: Option<String>,
    /// Rules (with pos), aliases, IP sets (with members), groups (with rules), refs, or one options object
    pub items: Vec<Map<String, Value>>,
    /// Entries left out past the bound
    pub omitted: usize,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<FirewallView>, ToolError> {
    let what = input.what.unwrap_or(What::Rules);
    let place = Place::resolve(pve, input.scope, input.node.as_ref(), input.vmid)?;
    let offered = match place.scope {
        Scope::Cluster => true,
        Scope::Node => matches!(what, What::Rules | What::Options),
        Scope::Guest => what != What::Groups,
    };
    if !offered {
        return Err(ToolError::field(
            "what",
            format!(
                "{} has no {} (a node's firewall has rules and options; security groups are the \
                 cluster's)",
                place.label(),
                what.as_str()
            ),
        ));
    }
    let base = place.base();
    let (mut items, digest) = match what {
        What::Rules => {
            let set = Ruleset::read(pve, &base.lit("rules"))?;
            (set.rules.into_iter().map(without_digest).collect(), set.digest)
        }
        What::Options => {
            let mut options = fetch::object(pve, &base.lit("options"))?;
            let digest = pj::text(options.remove("digest").as_ref());
            (vec![options], digest)
        }
        What::Aliases => (objects(fetch::list(pve, &base.lit("aliases"))?), None),
        What::Refs => (objects(fetch::list(pve, &base.lit("refs"))?), None),
        What::Ipsets => {
            let mut sets = objects(fetch::list(pve, &base.clone().lit("ipset"))?);
            sets.truncate(MAX_ITEMS);
            for set in &mut sets {
                let Some(name) = pj::text(set.get("name")) else {
                    continue;
                };
                let mut members = fetch::list(pve, &base.clone().lit("ipset").seg(&name))?;
                members.truncate(MAX_ITEMS);
                set.insert("members".into(), Value::Array(members));
            }
            (sets.into_iter().map(without_digest).collect(), None)
        }
        What::Groups => {
            let mut groups = objects(fetch::list(pve, &base.clone().lit("groups"))?);
            groups.truncate(MAX_ITEMS);
            for group in &mut groups {
                let Some(name) = pj::text(group.get("group")) else {
                    continue;
                };
                let set = Ruleset::read(pve, &base.clone().lit("groups").seg(&name))?;
                let rules: Vec<Value> = set
                    .rules
                    .into_iter()
                    .take(MAX_ITEMS)
                    .map(|r| Value::Object(without_digest(r)))
                    .collect();
                group.insert("rules".into(), Value::Array(rules));
                if let Some(d) = set.digest {
                    group.insert("digest".into(), d.into());
                }
            }
            (groups, None)
        }
    };
    let omitted = items.len().saturating_sub(MAX_ITEMS);
    items.truncate(MAX_ITEMS);
    let summary = format!(
        "{} of {}: {}{}.",
        what.as_str(),
        place.label(),
        crate::format::count(items.len(), "entry", "entries"),
        if omitted > 0 {
            format!(" ({omitted} more left out)")
        } else {
            String::new()
        }
    );
    Ok(Answer {
        summary,
        structured: FirewallView {
            firewall: place.label(),
            what,
            digest,
            items,
            omitted,
        },
    })
}

fn objects(list: Vec<Value>) -> Vec<Map<String, Value>> {
    list.into_iter()
        .filter_map(|v| match v {
            Value::Object(o) => Some(o),
            _ => None,
        })
        .collect()
}

/// An entry without the ruleset's digest, which the answer carries once.
fn without_digest(mut entry: Map<String, Value>) -> Map<String, Value> {
    entry.remove("digest");
    entry
}
