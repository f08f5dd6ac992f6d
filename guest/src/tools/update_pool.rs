//! `pve_update_pool`: guests or storages added to a pool, or removed from
//! it, or its comment changed, with `PUT /pools` and `poolid` (PVE 8.1
//! and later). PVE 8.0 knows only `PUT /pools/{poolid}`, a path the host
//! cannot tell from a guest's `resize` or `unlink` by its shape (a pool may
//! be named so), which would rank every call destructive: on 8.0 the tool
//! refuses and names the raw request instead.
//!
//! Refused without writing: an unknown pool, adding a guest that is in
//! another pool unless `allow_move` (Proxmox refuses it too), adding a
//! member the pool has, removing one it has not.

use serde_json::Value;

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::arg::{Flag, Text, deserialize_from_json, fixed_schema, is_storage_id, string};
use crate::error::{ToolError, quoted};
use crate::json as pj;
use crate::node_action::{self, NodeActionOutput};
use crate::path::ApiPath;
use crate::pools::{self, Form, PoolId};
use crate::resources;
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

/// A comma-separated list, as Proxmox takes `vms` and `storage`, each item
/// checked by `valid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdList(pub String);

impl IdList {
    fn items(&self) -> Vec<&str> {
        self.0.split(',').collect()
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let s = string(v, 4096)?;
        let ok = s.split(',').all(|i| {
            !i.is_empty()
                && (i.bytes().all(|b| b.is_ascii_digit()) && i.len() <= 9 && !i.starts_with('0')
                    || is_storage_id(i))
        });
        if !ok {
            return Err(format!(
                "{} is not a comma-separated list of ids, e.g. \"100,101\" or \"local,nfs\"",
                quoted(s, 64)
            ));
        }
        Ok(IdList(s.to_owned()))
    }
}
deserialize_from_json!(IdList);
fixed_schema!(IdList, serde_json::json!({"type": "string"}));

action_input! {
    plan:
    /// The pool and the change.
    pub struct Input {
        /// Pool id (pve_list_pools)
        poolid: PoolId,
        /// Guest ids, comma-separated, e.g. "100,101"
        vms: Option<IdList>,
        /// Storage ids, comma-separated
        storage: Option<IdList>,
        /// true: remove the listed members instead of adding them
        remove: Option<Flag>,
        /// Take guests out of their current pool
        allow_move: Option<Flag>,
        /// New comment to store with it
        comment: Option<Text<512>>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_update_pool",
    title: "Change a resource pool",
    description: "Add guests or storages to a pool, remove them (remove: true), or change its \
        comment.",
    annotations: Annotations::write(false, false),
    routes: &[
        Route::new(
            "PUT",
            "/pools",
            &[
                Param::arg("poolid"),
                Param::arg("vms"),
                Param::arg("storage"),
                Param::from("delete", "remove"),
                Param::from("allow-move", "allow_move"),
                Param::arg("comment"),
            ],
        ),
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
    if input.vms.is_none() && input.storage.is_none() && input.comment.is_none() {
        return Err(ToolError::InvalidArguments(
            "name vms, storage or comment: there is nothing to change".into(),
        ));
    }
    let remove = input.remove.is_some_and(|f| f.0);
    let Some(pool) = pools::read(pve, &input.poolid)? else {
        return Err(ToolError::field(
            "poolid",
            format!("there is no pool {id}; pve_list_pools lists them"),
        ));
    };
    if pool.form == Form::Path {
        return Err(ToolError::Precondition(format!(
            "this cluster answers pools only in PVE 8.0's form (/pools/{{poolid}}), which this \
             tool does not send. Nothing was sent. Use pve_api_request PUT /pools/{id} with the \
             same parameters, or upgrade to PVE 8.1 or later."
        )));
    }
    let has_vm = |vmid: &str| {
        pool.members
            .iter()
            .any(|m| pj::text(m.get("vmid")).as_deref() == Some(vmid))
    };
    let has_storage = |s: &str| {
        pool.members
            .iter()
            .any(|m| pj::text(m.get("storage")).as_deref() == Some(s))
    };
    let mut changes = Vec::new();
    if let Some(vms) = &input.vms {
        let guests = resources::fetch_guests(pve)?;
        for vmid in vms.items() {
            let guest = guests.iter().find(|g| g.vmid.to_string() == vmid);
            match (remove, has_vm(vmid), guest) {
                (true, false, _) => {
                    return Err(ToolError::Precondition(format!(
                        "{vmid} is not a member of pool {id}. Nothing was sent."
                    )));
                }
                (false, true, _) => {
                    return Err(ToolError::Precondition(format!(
                        "{vmid} is a member of pool {id} already. Nothing was sent."
                    )));
                }
                (false, false, None) => {
                    return Err(ToolError::field(
                        "vms",
                        format!("no guest has vmid {vmid}; pve_list_vms lists them"),
                    ));
                }
                (false, false, Some(g)) => {
                    if let Some(other) = g.pool.as_deref().filter(|p| *p != id)
                        && !input.allow_move.is_some_and(|f| f.0)
                    {
                        return Err(ToolError::Precondition(format!(
                            "{} {vmid} is in pool {other}. Nothing was sent. Pass allow_move: \
                             true to move it to {id}.",
                            g.vm_type.label()
                        )));
                    }
                }
                (true, true, _) => {}
            }
        }
        changes.push(format!(
            "{} {}",
            if remove { "remove guests" } else { "add guests" },
            vms.0
        ));
    }
    if let Some(storage) = &input.storage {
        for s in storage.items() {
            if remove != has_storage(s) {
                let why = if remove { "is not a member of" } else { "is a member of" };
                return Err(ToolError::Precondition(format!(
                    "storage {s} {why} pool {id}. Nothing was sent."
                )));
            }
        }
        changes.push(format!(
            "{} {}",
            if remove { "remove storages" } else { "add storages" },
            storage.0
        ));
    }
    if let Some(c) = &input.comment {
        changes.push(format!("comment: {}", quoted(c.as_str(), 80)));
    }
    let request = WriteRequest::new(Method::Put, ApiPath::new("pools"))
        .text("poolid", Some(id))
        .text("vms", input.vms.as_ref().map(|v| v.0.as_str()))
        .text("storage", input.storage.as_ref().map(|v| v.0.as_str()))
        .flag("delete", input.remove.map(|f| f.0))
        .flag("allow-move", input.allow_move.map(|f| f.0))
        .text("comment", input.comment.as_ref().map(Text::as_str));
    let prepared = Prepared::Act {
        request,
        effect: format!("pool {id}: {}", changes.join("; ")),
    };
    let found = format!(
        "pool {id} has {} (read through {})",
        crate::format::count(pool.members.len(), "member", "members"),
        pool.form.describe()
    );
    node_action::run(pve, "cluster", found, prepared, execution)
}
