//! `pve_delete_pool`: a resource pool removed, in the API form the cluster
//! answered its read in: `DELETE /pools?poolid=` (PVE 8.1 and later) or
//! `DELETE /pools/{poolid}` (PVE 8.0).
//!
//! Refused without writing: a pool that does not exist, and one that still
//! has members (Proxmox deletes only empty pools), naming them.

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::error::ToolError;
use crate::node_action::{self, NodeActionOutput};
use crate::path::ApiPath;
use crate::pools::{self, Form, PoolId};
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    plan:
    /// The pool to delete.
    pub struct Input {
        /// Pool id (pve_list_pools)
        poolid: PoolId,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_delete_pool",
    title: "Delete a resource pool",
    description: "Delete an empty resource pool; refused while it has members.",
    annotations: Annotations::write(true, false),
    routes: &[
        Route::new("DELETE", "/pools", &[Param::arg("poolid")]).once(),
        Route::new("DELETE", "/pools/{poolid}", &[]).once(),
    ],
    privileges: [
        "/pool/{poolid}": "Pool.Audit",
        "/pool/{poolid}": "Pool.Allocate",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    let execution = input.execution();
    let id = input.poolid.as_str();
    let Some(pool) = pools::read(pve, &input.poolid)? else {
        return Err(ToolError::field(
            "poolid",
            format!("there is no pool {id}; pve_list_pools lists them"),
        ));
    };
    if !pool.members.is_empty() {
        let labels: Vec<String> = pool.members.iter().map(pools::member_label).collect();
        return Err(ToolError::Precondition(format!(
            "pool {id} still has {}: {}. Nothing was sent. Proxmox deletes only empty pools: \
             remove them first (pve_update_pool with delete).",
            crate::format::count(labels.len(), "member", "members"),
            labels.join(", ")
        )));
    }
    let request = match pool.form {
        Form::Query => WriteRequest::new(Method::Delete, ApiPath::new("pools")).text("poolid", Some(id)),
        Form::Path => WriteRequest::new(Method::Delete, ApiPath::new("pools").seg(id)),
    };
    let prepared = Prepared::Act {
        request,
        effect: format!("the empty pool {id} is deleted"),
    };
    let found = format!("pool {id} exists and is empty (read through {})", pool.form.describe());
    node_action::run(pve, "cluster", found, prepared, execution)
}
