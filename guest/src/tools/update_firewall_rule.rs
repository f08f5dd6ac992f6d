//! `pve_update_firewall_rule`: the rule at `pos` changed, or moved to
//! `moveto`, with `PUT .../firewall/rules/{pos}` and the digest of the
//! rules the agent read: Proxmox refuses the write when they changed
//! since, and so does the tool, before sending.
//!
//! Refused without writing: a stale digest, a position with no rule,
//! `moveto` together with changes (Proxmox ignores the changes then), a
//! verdict or group that does not fit the rule's type, and at node or
//! cluster scope a change that would newly cut the management network off
//! the API or SSH unless `allow_lockout`.

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::arg::{Flag, Int, NodeName, Text, Vmid};
use crate::error::ToolError;
use crate::firewall::args::{self, Address, Digest, Iface, LogLevel, Macro, Ports, Protocol, RuleAction, RuleType};
use crate::firewall::{self, Place, Ruleset, Scope};
use crate::json as pj;
use crate::node_action::{self, NodeActionOutput};
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    plan:
    /// The rule, the digest seen, and the change.
    pub struct Input {
        /// cluster, node or guest
        scope: Scope,
        /// Node, for scope node
        node: Option<NodeName>,
        /// Guest id, for scope guest
        vmid: Option<Vmid>,
        /// The rule's pos (pve_get_firewall)
        pos: Int<0, 65535>,
        /// Digest pve_get_firewall gave with it
        digest: Digest,
        /// Move it to this position instead of changing it
        moveto: Option<Int<0, 65535>>,
        /// in, out or group
        #[serde(rename = "type")]
        kind: Option<RuleType>,
        /// ACCEPT, DROP, REJECT, or the group's name
        action: Option<RuleAction>,
        /// Source address
        source: Option<Address>,
        /// Destination address
        dest: Option<Address>,
        /// Protocol, e.g. tcp
        proto: Option<Protocol>,
        /// Destination ports
        dport: Option<Ports>,
        /// Source ports
        sport: Option<Ports>,
        /// Interface, e.g. net0
        iface: Option<Iface>,
        /// Macro, e.g. SSH or Ping
        r#macro: Option<Macro>,
        /// Comment stored with it
        comment: Option<Text<512>>,
        /// Enable or disable it
        enable: Option<Flag>,
        /// Log level of matches
        log: Option<LogLevel>,
        /// Send even if it cuts the API or SSH off
        allow_lockout: Option<Flag>,
    }
}

/// `PUT rules/{pos}`: the rule's fields as the call gives them, `moveto`,
/// and the digest the call gave.
const UPDATE_PARAMS: &[Param] = &[
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
    Param::arg("enable"),
    Param::arg("moveto"),
    Param::arg("digest"),
];

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_update_firewall_rule",
    title: "Change or move a firewall rule",
    description: "Change the firewall rule at pos, or move it (moveto), given the digest you \
        read; refused if the rules changed or it cuts the API or SSH off.",
    annotations: Annotations::write(false, false),
    routes: &[
        Route::new("PUT", "/cluster/firewall/rules/{pos}", UPDATE_PARAMS)
            .once()
            .when("scope", "cluster"),
        Route::new("PUT", "/nodes/{node}/firewall/rules/{pos}", UPDATE_PARAMS)
            .once()
            .when("scope", "node"),
        Route::new("PUT", "/nodes/{node}/{vm_type}/{vmid}/firewall/rules/{pos}", UPDATE_PARAMS)
            .once()
            .when("scope", "guest"),
    ],
    privileges: [
        "/": "Sys.Modify",
        "/nodes/{node}": "Sys.Modify",
        "/vms/{vmid}": "VM.Config.Network",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    let execution = input.execution();
    let place = Place::resolve(pve, input.scope, input.node.as_ref(), input.vmid)?;
    let set = Ruleset::read(pve, &place.rules())?;
    set.check_seen(Some(input.digest.as_str()), &place)?;
    let pos = input.pos.0;
    let old = set.at(pos, &place)?.clone();
    let request = WriteRequest::new(Method::Put, place.rules().id(pos))
        .text("type", input.kind.map(RuleType::as_str))
        .text("action", input.action.as_ref().map(RuleAction::as_str))
        .text("source", input.source.as_ref().map(Address::as_str))
        .text("dest", input.dest.as_ref().map(Address::as_str))
        .text("proto", input.proto.as_ref().map(Protocol::as_str))
        .text("dport", input.dport.as_ref().map(Ports::as_str))
        .text("sport", input.sport.as_ref().map(Ports::as_str))
        .text("iface", input.iface.as_ref().map(Iface::as_str))
        .text("macro", input.r#macro.as_ref().map(Macro::as_str))
        .text("comment", input.comment.as_ref().map(Text::as_str))
        .text("log", input.log.map(LogLevel::as_str))
        .flag("enable", input.enable.map(|f| f.0));
    let mut changes = request.planned().params;
    if changes.is_empty() && input.moveto.is_none() {
        return Err(ToolError::InvalidArguments(
            "name a field to change (action, source, dport, enable, ...) or moveto: there is \
             nothing to change"
                .into(),
        ));
    }
    if !changes.is_empty() && input.moveto.is_some() {
        return Err(ToolError::field(
            "moveto",
            "Proxmox ignores every change sent with moveto: move the rule in one call and \
             change it in another",
        ));
    }
    if input.kind.is_some() || input.action.is_some() {
        let kind = input
            .kind
            .or_else(|| pj::text(old.get("type")).and_then(|t| RuleType::parse(&t)))
            .unwrap_or(RuleType::In);
        let action = match &input.action {
            Some(a) => a.clone(),
            None => RuleAction(pj::text(old.get("action")).unwrap_or_default()),
        };
        args::check_action(kind, &action, || firewall::group_names(pve))?;
    }
    let moveto = input.moveto.map(|m| m.0);
    let index = usize::try_from(pos).unwrap_or(usize::MAX);
    let to = moveto.map(|m| usize::try_from(m).unwrap_or(usize::MAX));
    let warning = firewall::guard::rules(
        pve,
        &place,
        input.allow_lockout.is_some_and(|f| f.0),
        |rules| firewall::apply_update(rules, index, &changes, to),
    )?;
    let request = request
        .int("moveto", moveto.map(|m| m as i64))
        .text("digest", Some(input.digest.as_str()));
    let what = match moveto {
        Some(m) => format!("move rule {pos} to position {m}"),
        None => {
            changes.remove("digest");
            let mut new = old.clone();
            new.extend(changes);
            format!(
                "rule {pos}: {} becomes {}",
                firewall::describe(&old),
                firewall::describe(&new)
            )
        }
    };
    let mut effect = format!("{what} in {}", place.label());
    if let Some(w) = warning {
        effect = format!("{w}. {effect}");
    }
    let found = firewall::found_rules(&place, &set);
    let prepared = Prepared::Act { request, effect };
    node_action::run(pve, &place.node_or_cluster(), found, prepared, execution)
}
