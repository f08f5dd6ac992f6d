//! `pve_set_ha_resource`: a guest put under the HA manager (`POST
//! /cluster/ha/resources`), or its HA settings changed (`PUT
//! /cluster/ha/resources/{sid}` with the digest read).
//!
//! Refused without writing: a guest that does not exist or is of the
//! other type (`vm:` for a VM, `ct:` for a container), an HA group that
//! does not exist, `group` once PVE 9 turned the groups into rules,
//! and a change with nothing in it; settings equal to what is configured
//! are nothing to do.

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::arg::{Int, Text, choice};
use crate::error::ToolError;
use crate::fetch;
use crate::ha::{self, Sid};
use crate::json as pj;
use crate::node_action::{self, NodeActionOutput};
use crate::path::ApiPath;
use crate::resources;
use crate::route::{DIGEST, Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

choice! {
    /// The state the HA manager keeps a resource in.
    pub enum HaState {
        /// Running (the HA manager starts it).
        Started = "started",
        /// Stopped (the HA manager stops it).
        Stopped = "stopped",
        /// Not managed until set otherwise; left as it is.
        Ignored = "ignored",
        /// Stopped, and not recovered.
        Disabled = "disabled",
    }
}

action_input! {
    plan:
    /// The resource and its settings.
    pub struct Input {
        /// vm:<vmid> or ct:<vmid>
        sid: Sid,
        /// started, stopped, ignored or disabled
        state: Option<HaState>,
        /// HA group (PVE 8)
        group: Option<Text<64>>,
        /// Restarts on its node before moving it
        max_restart: Option<Int<0, 10>>,
        /// Moves to other nodes before giving up
        max_relocate: Option<Int<0, 10>>,
        /// Comment stored with it
        comment: Option<Text<4096>>,
    }
}

const SETTINGS: [Param; 5] = [
    Param::arg("state"),
    Param::arg("group"),
    Param::arg("max_restart"),
    Param::arg("max_relocate"),
    Param::arg("comment"),
];

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_set_ha_resource",
    title: "Add or change an HA resource",
    description: "Put a guest under HA (sid vm:N or ct:N) or change its HA state, group, \
        restart and relocate limits or comment.",
    annotations: Annotations::write(false, true),
    routes: &[
        Route::new(
            "POST",
            "/cluster/ha/resources",
            &[
                Param::arg("sid"),
                SETTINGS[0],
                SETTINGS[1],
                SETTINGS[2],
                SETTINGS[3],
                SETTINGS[4],
            ],
        )
        .once(),
        Route::new(
            "PUT",
            "/cluster/ha/resources/{sid}",
            &[SETTINGS[0], SETTINGS[1], SETTINGS[2], SETTINGS[3], SETTINGS[4], DIGEST],
        )
        .once(),
    ],
    privileges: [
        "/": "Sys.Audit",
        "/": "Sys.Console",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    let execution = input.execution();
    let sid = &input.sid;
    let guests = resources::fetch_guests(pve)?;
    let Some(guest) = guests.iter().find(|g| g.vmid == sid.vmid()) else {
        return Err(ToolError::field(
            "sid",
            format!("no guest has vmid {}; pve_list_vms lists them", sid.vmid()),
        ));
    };
    if guest.vm_type.as_str() != sid.guest_type() {
        let right = if guest.vm_type.as_str() == "lxc" { "ct" } else { "vm" };
        return Err(ToolError::field(
            "sid",
            format!(
                "{} {} is a {}: its HA id is {right}:{}",
                guest.vm_type.label(),
                sid.vmid(),
                if right == "ct" { "container" } else { "VM" },
                sid.vmid()
            ),
        ));
    }
    if let Some(group) = &input.group {
        // PVE 9 keeps groups until every node runs it, then turns them
        // into rules and refuses the group endpoints: ask, not the version.
        let path = ApiPath::new("cluster").lit("ha").lit("groups");
        let groups = match fetch::list(pve, &path) {
            Ok(groups) => groups,
            Err(e) if e.message().contains("migrated to rules") => {
                return Err(ToolError::field(
                    "group",
                    "this cluster's HA groups were migrated to HA rules (PVE 9): a resource \
                     names no group there; its node affinity rules say where it runs",
                ));
            }
            Err(e) => return Err(e),
        };
        let names: Vec<String> = groups.iter().filter_map(|g| pj::text(g.get("group"))).collect();
        if !names.iter().any(|n| n == group.as_str()) {
            return Err(ToolError::field(
                "group",
                format!(
                    "there is no HA group {}; the groups are {}",
                    crate::error::quoted(group.as_str(), 64),
                    crate::error::listed(&names)
                ),
            ));
        }
    }
    let settings = |r: WriteRequest| {
        r.text("state", input.state.map(HaState::as_str))
            .text("group", input.group.as_ref().map(Text::as_str))
            .int("max_restart", input.max_restart.map(|v| v.0 as i64))
            .int("max_relocate", input.max_relocate.map(|v| v.0 as i64))
            .text("comment", input.comment.as_ref().map(Text::as_str))
    };
    let resources = ApiPath::new("cluster").lit("ha").lit("resources");
    let (prepared, found) = match ha::find(pve, sid)? {
        None => {
            let request = settings(
                WriteRequest::new(Method::Post, resources).text("sid", Some(sid.as_str())),
            );
            let effect = format!(
                "{} {} is managed by HA{}",
                guest.vm_type.label(),
                sid.vmid(),
                input
                    .state
                    .map(|s| format!(", requested state {}", s.as_str()))
                    .unwrap_or_default()
            );
            (
                Prepared::Act { request, effect },
                format!("{} is not an HA resource", sid.as_str()),
            )
        }
        Some(current) => {
            let change = settings(WriteRequest::new(Method::Put, ApiPath::new("x"))).planned();
            if change.params.is_empty() {
                return Err(ToolError::InvalidArguments(
                    "name a setting to change (state, group, max_restart, max_relocate or \
                     comment): there is nothing to change"
                        .into(),
                ));
            }
            let differs: Vec<String> = change
                .params
                .iter()
                .filter(|(k, v)| pj::text(current.get(k.as_str())) != pj::text(Some(v)))
                .map(|(k, v)| {
                    let old = pj::text(current.get(k.as_str())).unwrap_or_else(|| "unset".into());
                    format!("{k} {old} -> {}", pj::text(Some(v)).unwrap_or_default())
                })
                .collect();
            let found = format!(
                "{} is an HA resource in state {}",
                sid.as_str(),
                pj::text(current.get("state")).unwrap_or_else(|| "unknown".into())
            );
            if differs.is_empty() {
                let why = format!("{} already has these settings", sid.as_str());
                (Prepared::NothingToDo { why }, found)
            } else {
                let digest = fetch::object(pve, &resources.clone().seg(sid.as_str()))?;
                let request = settings(WriteRequest::new(
                    Method::Put,
                    resources.seg(sid.as_str()),
                ))
                .text("digest", pj::text(digest.get("digest")).as_deref());
                let effect = format!("{}: {}", sid.as_str(), differs.join(", "));
                (Prepared::Act { request, effect }, found)
            }
        }
    };
    node_action::run(pve, "cluster", found, prepared, execution)
}
