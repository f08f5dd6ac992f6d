//! The routing table of the HA endpoints beyond the two reads in
//! `read_routes` (`/cluster/ha/status/current`, `/cluster/ha/resources`),
//! with the permissions and parameters of the official schema (PVE 9.1):
//! reads need `Sys.Audit` on `/`, writes `Sys.Console` on `/`. A PVE 8 node
//! takes its own parameters (no `failback`, no `purge`) and has no
//! `/cluster/ha/rules` at all (501 before any check).

use super::{ha, ha_write};
use crate::perms::Perm;
use crate::router::Route;
use crate::schema::{MethodSchema, Prop};

const AUDIT: Perm = Perm::check("/", &["Sys.Audit"]);
const CONSOLE: Perm = Perm::check("/", &["Sys.Console"]);

type Props = Vec<(&'static str, Prop)>;

fn sid() -> Prop {
    Prop::string().format("pve-ha-resource-or-vm-id")
}

fn b() -> Prop {
    Prop::boolean().optional()
}

fn comment() -> Prop {
    Prop::string().max_len(4096).optional()
}

fn configid() -> Prop {
    Prop::string().format("pve-configid")
}

fn delete_digest() -> Props {
    vec![
        (
            "delete",
            Prop::string()
                .format("pve-configid-list")
                .max_len(4096)
                .optional(),
        ),
        ("digest", Prop::string().max_len(64).optional()),
    ]
}

/// `PVE::HA::Resources->createSchema` / `updateSchema`; `failback` since
/// PVE 9.
fn resource_props(update: bool, pve9: bool) -> Props {
    let mut v = vec![
        ("sid", sid()),
        ("comment", comment()),
        ("group", configid().optional()),
        ("max_relocate", Prop::integer().min(0).optional()),
        ("max_restart", Prop::integer().min(0).optional()),
        (
            "state",
            Prop::string()
                .one_of(&["started", "stopped", "enabled", "disabled", "ignored"])
                .optional(),
        ),
    ];
    if pve9 {
        v.push(("failback", b()));
    }
    if update {
        v.extend(delete_digest());
    } else {
        v.push(("type", Prop::string().one_of(&["ct", "vm"]).optional()));
    }
    v
}

fn group_props(update: bool) -> Props {
    let mut v = vec![
        ("group", configid()),
        ("comment", comment()),
        ("nofailback", b()),
        ("restricted", b()),
    ];
    let nodes = Prop::string().format("pve-ha-node-list");
    if update {
        v.push(("nodes", nodes.optional()));
        v.extend(delete_digest());
    } else {
        v.push(("nodes", nodes));
        v.push(("type", Prop::string().one_of(&["group"]).optional()));
    }
    v
}

fn rule_type() -> Prop {
    Prop::string().one_of(&["node-affinity", "resource-affinity"])
}

fn rule_props(update: bool) -> Props {
    let resources = Prop::string().format("pve-ha-resource-id-list");
    let mut v = vec![
        ("rule", configid()),
        ("type", rule_type()),
        (
            "affinity",
            Prop::string().one_of(&["positive", "negative"]).optional(),
        ),
        ("comment", comment()),
        ("disable", b()),
        (
            "nodes",
            Prop::string().format("pve-ha-node-list").optional(),
        ),
        ("strict", b()),
    ];
    if update {
        v.push(("resources", resources.optional()));
        v.extend(delete_digest());
    } else {
        v.push(("resources", resources));
    }
    v
}

/// A route PVE 8 does not have: no permission or parameter check there, so
/// that its handler answers 501 first.
fn pve9_only(mut r: Route) -> Route {
    r.pve8 = Some((Perm::All, Some(MethodSchema::lenient(vec![]))));
    r
}

pub(crate) fn routes() -> Vec<Route> {
    let motion = || vec![("sid", sid()), ("node", Prop::node())];
    vec![
        // Resources.
        Route::get("/cluster/ha/resources/{sid}", ha::resource)
            .perm(AUDIT)
            .params(vec![("sid", sid())]),
        Route::post("/cluster/ha/resources", ha_write::resource_create)
            .perm(CONSOLE)
            .params(resource_props(false, true))
            .pve8(CONSOLE, Some(resource_props(false, false))),
        Route::put("/cluster/ha/resources/{sid}", ha_write::resource_update)
            .perm(CONSOLE)
            .params(resource_props(true, true))
            .pve8(CONSOLE, Some(resource_props(true, false))),
        Route::delete("/cluster/ha/resources/{sid}", ha_write::resource_delete)
            .perm(CONSOLE)
            .params(vec![("sid", sid()), ("purge", b())])
            .pve8(CONSOLE, Some(vec![("sid", sid())])),
        Route::post(
            "/cluster/ha/resources/{sid}/migrate",
            ha_write::resource_migrate,
        )
        .perm(CONSOLE)
        .params(motion()),
        Route::post(
            "/cluster/ha/resources/{sid}/relocate",
            ha_write::resource_relocate,
        )
        .perm(CONSOLE)
        .params(motion()),
        // Groups (deprecated in PVE 9).
        Route::get("/cluster/ha/groups", ha::groups).perm(AUDIT),
        Route::post("/cluster/ha/groups", ha_write::group_create)
            .perm(CONSOLE)
            .params(group_props(false)),
        Route::get("/cluster/ha/groups/{group}", ha::group)
            .perm(AUDIT)
            .params(vec![("group", configid())]),
        Route::put("/cluster/ha/groups/{group}", ha_write::group_update)
            .perm(CONSOLE)
            .params(group_props(true)),
        Route::delete("/cluster/ha/groups/{group}", ha_write::group_delete)
            .perm(CONSOLE)
            .params(vec![("group", configid())]),
        // Rules (PVE 9).
        pve9_only(
            Route::get("/cluster/ha/rules", ha::rules)
                .perm(AUDIT)
                .params(vec![
                    ("type", rule_type().optional()),
                    ("resource", Prop::string().optional()),
                ]),
        ),
        pve9_only(
            Route::post("/cluster/ha/rules", ha_write::rule_create)
                .perm(CONSOLE)
                .params(rule_props(false)),
        ),
        pve9_only(
            Route::get("/cluster/ha/rules/{rule}", ha::rule)
                .perm(AUDIT)
                .params(vec![("rule", configid())]),
        ),
        pve9_only(
            Route::put("/cluster/ha/rules/{rule}", ha_write::rule_update)
                .perm(CONSOLE)
                .params(rule_props(true)),
        ),
        pve9_only(
            Route::delete("/cluster/ha/rules/{rule}", ha_write::rule_delete)
                .perm(CONSOLE)
                .params(vec![("rule", configid())]),
        ),
    ]
}
