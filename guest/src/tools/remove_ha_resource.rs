//! `pve_remove_ha_resource`: a guest taken out of the HA manager's care
//! (`DELETE /cluster/ha/resources/{sid}`); the guest itself stays as it
//! is, running or not. Refused without writing when `sid` is not an HA
//! resource.

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::error::ToolError;
use crate::ha::{self, Sid};
use crate::json as pj;
use crate::node_action::{self, NodeActionOutput};
use crate::path::ApiPath;
use crate::route::Route;
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    plan:
    /// The resource.
    pub struct Input {
        /// vm:<vmid> or ct:<vmid>
        sid: Sid,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_remove_ha_resource",
    title: "Remove an HA resource",
    description: "Take a guest out of HA (sid vm:N or ct:N); the guest keeps running or stays \
        stopped, but nothing restarts or moves it any more.",
    annotations: Annotations::write(true, false),
    routes: &[Route::new("DELETE", "/cluster/ha/resources/{sid}", &[]).once()],
    privileges: [
        "/": "Sys.Audit",
        "/": "Sys.Console",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    let execution = input.execution();
    let sid = input.sid.as_str();
    let Some(current) = ha::find(pve, &input.sid)? else {
        return Err(ToolError::field(
            "sid",
            format!("{sid} is not an HA resource; pve_list_ha lists them"),
        ));
    };
    let state = pj::text(current.get("state")).unwrap_or_else(|| "unknown".into());
    let request = WriteRequest::new(
        Method::Delete,
        ApiPath::new("cluster").lit("ha").lit("resources").seg(sid),
    );
    let prepared = Prepared::Act {
        request,
        effect: format!("{sid} is no longer managed by HA (it was in state {state})"),
    };
    let found = format!("{sid} is an HA resource in state {state}");
    node_action::run(pve, "cluster", found, prepared, execution)
}
