//! `pve_create_pool`: `POST /pools`, a new, empty resource pool.
//!
//! Refused without writing: a pool that exists, and on PVE 9 an id that
//! does not start with a letter (which PVE 9 refuses for new pools).

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::arg::Text;
use crate::error::ToolError;
use crate::node_action::{self, NodeActionOutput};
use crate::path::ApiPath;
use crate::pools::{self, PoolId};
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    plan:
    /// The pool to create.
    pub struct Input {
        /// New pool id, e.g. web
        poolid: PoolId,
        /// Comment to store with it
        comment: Option<Text<512>>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_create_pool",
    title: "Create a resource pool",
    description: "Create an empty resource pool; add guests and storages with pve_update_pool.",
    annotations: Annotations::write(false, false),
    routes: &[Route::new(
        "POST",
        "/pools",
        &[Param::arg("poolid"), Param::arg("comment")],
    )],
    privileges: [
        "/pool/{poolid}": "Pool.Allocate",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    let execution = input.execution();
    let id = input.poolid.as_str();
    if pools::read(pve, &input.poolid)?.is_some() {
        return Err(ToolError::Precondition(format!(
            "pool {id} exists already. Nothing was sent. pve_list_pools shows its members."
        )));
    }
    let major = crate::release::major(pve)?;
    if major.is_some_and(|m| m >= 9) && !id.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(ToolError::field(
            "poolid",
            format!("{id} does not start with a letter, which PVE 9 requires of a new pool"),
        ));
    }
    let request = WriteRequest::new(Method::Post, ApiPath::new("pools"))
        .text("poolid", Some(id))
        .text("comment", input.comment.as_ref().map(Text::as_str));
    let prepared = Prepared::Act {
        request,
        effect: format!("pool {id} is created, empty"),
    };
    node_action::run(pve, "cluster", format!("no pool {id} exists"), prepared, execution)
}
