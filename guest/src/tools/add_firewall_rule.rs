//! `pve_add_firewall_rule`: one rule added at the top (position 0) of the
//! cluster's, a node's or a guest's ruleset, with `POST .../firewall/rules`.
//! Proxmox adds every new rule at position 0 and ignores `pos`; the tool
//! says so, and `pve_update_firewall_rule` with `moveto` moves it.
//!
//! Refused without writing: a digest the rules no longer have, a verdict
//! that is not ACCEPT/DROP/REJECT for an in/out rule, a security group
//! that does not exist, and at node or cluster scope a rule that would
//! newly cut the management network off the API or SSH
//! ([`crate::firewall::lockout`]) unless `allow_lockout`. At node and
//! cluster scope the host ranks the call destructive.

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::arg::{Flag, NodeName, Text, Vmid};
use crate::error::ToolError;
use crate::firewall::args::{self, Address, Digest, Iface, LogLevel, Macro, Ports, Protocol, RuleAction, RuleType};
use crate::firewall::{self, Place, RULE_PARAMS, Ruleset, Scope};
use crate::node_action::{self, NodeActionOutput};
use crate::route::Route;
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    plan:
    /// Where, and the rule.
    pub struct Input {
        /// cluster, node or guest
        scope: Scope,
        /// Node, for scope node
        node: Option<NodeName>,
        /// Guest id, for scope guest
        vmid: Option<Vmid>,
        /// in, out or group
        #[serde(rename = "type")]
        kind: RuleType,
        /// ACCEPT, DROP, REJECT, or the group's name
        action: RuleAction,
        /// e.g. 10.0.0.0/24 or +management
        source: Option<Address>,
        /// Destination address
        dest: Option<Address>,
        /// Protocol, e.g. tcp
        proto: Option<Protocol>,
        /// Ports, e.g. 22 or 8000:8100
        dport: Option<Ports>,
        /// Source ports
        sport: Option<Ports>,
        /// Interface, e.g. net0
        iface: Option<Iface>,
        /// Macro, e.g. SSH or Ping
        r#macro: Option<Macro>,
        /// Comment stored with it
        comment: Option<Text<512>>,
        /// Default true
        enable: Option<Flag>,
        /// Log level of matches
        log: Option<LogLevel>,
        /// Digest pve_get_firewall gave; refused if the rules changed
        digest: Option<Digest>,
        /// Send even if it cuts the API or SSH off
        allow_lockout: Option<Flag>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_add_firewall_rule",
    title: "Add a firewall rule",
    description: "Add a rule at position 0 of the cluster's, a node's or a guest's firewall; \
        refused if it cuts the API or SSH off unless allow_lockout.",
    annotations: Annotations::write(false, false),
    routes: &[
        Route::new("POST", "/cluster/firewall/rules", RULE_PARAMS)
            .once()
            .when("scope", "cluster"),
        Route::new("POST", "/nodes/{node}/firewall/rules", RULE_PARAMS)
            .once()
            .when("scope", "node"),
        Route::new("POST", "/nodes/{node}/{vm_type}/{vmid}/firewall/rules", RULE_PARAMS)
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
    args::check_action(input.kind, &input.action, || firewall::group_names(pve))?;
    let set = Ruleset::read(pve, &place.rules())?;
    set.check_seen(input.digest.as_ref().map(Digest::as_str), &place)?;
    let enable = input.enable.is_none_or(|f| f.0);
    let request = WriteRequest::new(Method::Post, place.rules())
        .text("type", Some(input.kind.as_str()))
        .text("action", Some(input.action.as_str()))
        .text("source", input.source.as_ref().map(Address::as_str))
        .text("dest", input.dest.as_ref().map(Address::as_str))
        .text("proto", input.proto.as_ref().map(Protocol::as_str))
        .text("dport", input.dport.as_ref().map(Ports::as_str))
        .text("sport", input.sport.as_ref().map(Ports::as_str))
        .text("iface", input.iface.as_ref().map(Iface::as_str))
        .text("macro", input.r#macro.as_ref().map(Macro::as_str))
        .text("comment", input.comment.as_ref().map(Text::as_str))
        .text("log", input.log.map(LogLevel::as_str))
        .flag("enable", Some(enable))
        .text("digest", set.digest.as_deref());
    let rule = request.planned().params;
    let warning = firewall::guard::rules(
        pve,
        &place,
        input.allow_lockout.is_some_and(|f| f.0),
        |rules| rules.insert(0, rule.clone()),
    )?;
    let mut effect = format!(
        "add at position 0 of {}: {} (the rules below move down one)",
        place.label(),
        firewall::describe(&rule)
    );
    if let Some(w) = warning {
        effect = format!("{w}. {effect}");
    }
    let found = firewall::found_rules(&place, &set);
    let prepared = Prepared::Act { request, effect };
    node_action::run(pve, &place.node_or_cluster(), found, prepared, execution)
}
