//! `pve_delete_firewall_rule`: the rule at `pos` removed, with `DELETE
//! .../firewall/rules/{pos}` and the digest of the rules the agent read.
//!
//! Refused without writing: a stale digest, a position with no rule, and
//! at node or cluster scope a removal that would newly cut the management
//! network off the API or SSH (the ACCEPT that stood before a DROP)
//! unless `allow_lockout`.

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::arg::{Flag, Int, NodeName, Vmid};
use crate::error::ToolError;
use crate::firewall::args::Digest;
use crate::firewall::{self, Place, Ruleset, Scope};
use crate::node_action::{self, NodeActionOutput};
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    plan:
    /// The rule and the digest seen.
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
        /// Send even if it cuts the API or SSH off
        allow_lockout: Option<Flag>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_delete_firewall_rule",
    title: "Delete a firewall rule",
    description: "Delete the firewall rule at pos, given the digest you read; refused if the \
        rules changed or it cuts the API or SSH off.",
    annotations: Annotations::write(true, false),
    routes: &[
        Route::new("DELETE", "/cluster/firewall/rules/{pos}", &[Param::arg("digest")])
            .once()
            .when("scope", "cluster"),
        Route::new("DELETE", "/nodes/{node}/firewall/rules/{pos}", &[Param::arg("digest")])
            .once()
            .when("scope", "node"),
        Route::new(
            "DELETE",
            "/nodes/{node}/{vm_type}/{vmid}/firewall/rules/{pos}",
            &[Param::arg("digest")],
        )
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
    let index = usize::try_from(pos).unwrap_or(usize::MAX);
    let warning = firewall::guard::rules(
        pve,
        &place,
        input.allow_lockout.is_some_and(|f| f.0),
        |rules| {
            if index < rules.len() {
                rules.remove(index);
            }
        },
    )?;
    let request = WriteRequest::new(Method::Delete, place.rules().id(pos))
        .text("digest", Some(input.digest.as_str()));
    let mut effect = format!(
        "delete rule {pos} of {} ({}); the rules below move up one",
        place.label(),
        firewall::describe(&old)
    );
    if let Some(w) = warning {
        effect = format!("{w}. {effect}");
    }
    let found = firewall::found_rules(&place, &set);
    let prepared = Prepared::Act { request, effect };
    node_action::run(pve, &place.node_or_cluster(), found, prepared, execution)
}
