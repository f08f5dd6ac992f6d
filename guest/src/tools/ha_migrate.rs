//! `pve_ha_migrate`: the HA manager asked to move a resource to another
//! node, live (`migrate`) or by stopping and starting it (`relocate`):
//! `POST /cluster/ha/resources/{sid}/migrate` or `/relocate`. The HA
//! manager acts on its next round; the answer says so.
//!
//! Refused without writing: a sid that is not an HA resource, a node that
//! is not online, and a node outside where the resource may run (its
//! restricted group on PVE 8, its strict node-affinity rules on PVE 9).
//! Moving it to the node it is on is nothing to do.

use crate::action::{self, Prepared, action_input};
use crate::api::Pve;
use crate::arg::{NodeName, choice};
use crate::error::ToolError;
use crate::ha::{self, Sid};
use crate::node_action::{self, NodeActionOutput};
use crate::path::ApiPath;
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

choice! {
    /// How the HA manager moves it.
    pub enum Mode {
        /// Live, where the guest allows it.
        Migrate = "migrate",
        /// Stopped, moved, started again.
        Relocate = "relocate",
    }
}

action_input! {
    plan:
    /// The resource, where, and how.
    pub struct Input {
        /// vm:<vmid> or ct:<vmid>
        sid: Sid,
        /// Target node, online
        node: NodeName,
        /// migrate (live) or relocate (stop, move, start)
        mode: Mode,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_ha_migrate",
    title: "Move an HA resource",
    description: "Ask the HA manager to migrate (live) or relocate (stop, move, start) an HA \
        resource to an online node it may run on.",
    annotations: Annotations::write(false, false),
    routes: &[
        Route::new("POST", "/cluster/ha/resources/{sid}/migrate", &[Param::arg("node")])
            .once()
            .when("mode", "migrate"),
        Route::new("POST", "/cluster/ha/resources/{sid}/relocate", &[Param::arg("node")])
            .once()
            .when("mode", "relocate"),
    ],
    privileges: [
        "/": "Sys.Audit",
        "/": "Sys.Console",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    let execution = input.execution();
    let sid = input.sid.as_str();
    let target = input.node.as_str();
    let Some(resource) = ha::find(pve, &input.sid)? else {
        return Err(ToolError::field(
            "sid",
            format!("{sid} is not an HA resource; pve_list_ha lists them"),
        ));
    };
    action::check_node_online(pve, "node", target)?;
    let major = crate::release::major(pve)?;
    if let Some((nodes, why)) = ha::allowed_nodes(pve, &resource, major)?
        && !nodes.iter().any(|n| n == target)
    {
        return Err(ToolError::Precondition(format!(
            "{sid} may run only on {} ({why}); {target} is not one of them. Nothing was sent. \
             Choose one of those nodes.",
            nodes.join(", ")
        )));
    }
    let now = ha::current_node(pve, &input.sid)?;
    let found = format!(
        "{sid} is an HA resource on {}",
        now.as_deref().unwrap_or("an unknown node")
    );
    let prepared = if now.as_deref() == Some(target) {
        Prepared::NothingToDo {
            why: format!("{sid} is on {target} already"),
        }
    } else {
        let request = WriteRequest::new(
            Method::Post,
            ApiPath::new("cluster")
                .lit("ha")
                .lit("resources")
                .seg(sid)
                .lit(input.mode.as_str()),
        )
        .text("node", Some(target));
        Prepared::Act {
            request,
            effect: format!(
                "the HA manager {}s {sid} to {target} on its next round",
                input.mode.as_str()
            ),
        }
    };
    let mut answer = node_action::run(pve, "cluster", found, prepared, execution)?;
    if answer.structured.sent {
        answer.summary.push_str(
            " The HA manager moves it when it next acts; pve_list_ha shows its state.",
        );
    }
    Ok(answer)
}
