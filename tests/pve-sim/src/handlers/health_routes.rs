//! The routing table of the node-health, replication and pool endpoints
//! (issue 25), with their permissions and parameter specs as the official
//! schema (PVE 9.1) lists them.

use super::{apt, ceph, disks, logs, pools, replication, services};
use crate::perms::Perm;
use crate::router::Route;
use crate::schema::Prop;

const NODE_AUDIT: Perm = Perm::check("/nodes/{node}", &["Sys.Audit"]);
const SYSLOG: Perm = Perm::check("/nodes/{node}", &["Sys.Syslog"]);
const POOL_ALLOCATE: Perm = Perm::check("/pool/{poolid}", &["Pool.Allocate"]);
const CEPH_AUDIT: Perm = Perm::check_any("/", &["Sys.Audit", "Datastore.Audit"]);

fn node() -> Vec<(&'static str, Prop)> {
    vec![("node", Prop::node())]
}

fn with(extra: Vec<(&'static str, Prop)>) -> Vec<(&'static str, Prop)> {
    let mut v = node();
    v.extend(extra);
    v
}

fn service() -> Prop {
    Prop::string().one_of(&services::ids())
}

fn job_id() -> Prop {
    Prop::string()
        .format("pve-replication-job-id")
        .pattern(r"[1-9][0-9]{2,8}-\d{1,9}")
}

fn poolid() -> Prop {
    Prop::string().format("pve-poolid")
}

fn b() -> Prop {
    Prop::boolean().optional()
}

fn count() -> Prop {
    Prop::integer().min(0).optional()
}

fn log_time() -> Prop {
    Prop::string()
        .pattern(r"^\d{4}-\d{2}-\d{2}( \d{2}:\d{2}(:\d{2})?)?$")
        .optional()
}

fn pool_update() -> Vec<(&'static str, Prop)> {
    vec![
        ("poolid", poolid()),
        ("comment", Prop::string().optional()),
        ("vms", Prop::string().format("pve-vmid-list").optional()),
        (
            "storage",
            Prop::string().format("pve-storage-id-list").optional(),
        ),
        ("allow-move", b()),
        ("delete", b()),
    ]
}

pub(crate) fn routes() -> Vec<Route> {
    vec![
        // Services.
        Route::get("/nodes/{node}/services", services::index)
            .perm(NODE_AUDIT)
            .proxy("node")
            .params(node()),
        Route::get("/nodes/{node}/services/{service}", services::commands)
            .perm(NODE_AUDIT)
            .params(with(vec![("service", service())])),
        Route::get("/nodes/{node}/services/{service}/state", services::state)
            .perm(NODE_AUDIT)
            .proxy("node")
            .params(with(vec![("service", service())])),
        // Packages.
        Route::get("/nodes/{node}/apt/update", apt::updates)
            .perm(Perm::check("/nodes/{node}", &["Sys.Modify"]))
            .proxy("node")
            .params(node()),
        Route::get("/nodes/{node}/apt/versions", apt::versions)
            .perm(NODE_AUDIT)
            .proxy("node")
            .params(node()),
        // Logs.
        Route::get("/nodes/{node}/journal", logs::journal)
            .perm(SYSLOG)
            .proxy("node")
            .params(with(vec![
                ("since", count()),
                ("until", count()),
                ("lastentries", count()),
                ("startcursor", Prop::string().optional()),
                ("endcursor", Prop::string().optional()),
            ])),
        Route::get("/nodes/{node}/syslog", logs::syslog)
            .perm(SYSLOG)
            .proxy("node")
            .params(with(vec![
                ("start", count()),
                ("limit", count()),
                ("since", log_time()),
                ("until", log_time()),
                ("service", Prop::string().max_len(128).optional()),
            ])),
        // Disks (the list's `or` check is in the handler).
        Route::get("/nodes/{node}/disks/list", disks::list)
            .proxy("node")
            .params(with(vec![
                ("include-partitions", b()),
                ("skipsmart", b()),
                (
                    "type",
                    Prop::string()
                        .one_of(&["unused", "journal_disks"])
                        .optional(),
                ),
            ])),
        Route::get("/nodes/{node}/disks/smart", disks::smart)
            .perm(Perm::check("/", &["Sys.Audit"]))
            .proxy("node")
            .params(with(vec![
                ("disk", Prop::string().pattern(r"^/dev/[a-zA-Z0-9\/]+$")),
                ("healthonly", b()),
            ])),
        // Ceph.
        Route::get("/cluster/ceph/status", ceph::cluster_status).perm(CEPH_AUDIT),
        Route::get("/nodes/{node}/ceph/status", ceph::cluster_status)
            .perm(CEPH_AUDIT)
            .proxy("node")
            .params(node()),
        // Replication.
        Route::get("/cluster/replication", replication::cluster_index),
        Route::get("/cluster/replication/{id}", replication::cluster_read)
            .params(vec![("id", job_id())]),
        Route::get("/nodes/{node}/replication", replication::node_index)
            .proxy("node")
            .params(with(vec![("guest", Prop::vmid().optional())])),
        Route::get("/nodes/{node}/replication/{id}", replication::job_index)
            .params(with(vec![("id", job_id())])),
        Route::get(
            "/nodes/{node}/replication/{id}/status",
            replication::job_status,
        )
        .proxy("node")
        .params(with(vec![("id", job_id())])),
        Route::get("/nodes/{node}/replication/{id}/log", replication::job_log)
            .proxy("node")
            .params(with(vec![
                ("id", job_id()),
                ("start", count()),
                ("limit", count()),
            ])),
        Route::post(
            "/nodes/{node}/replication/{id}/schedule_now",
            replication::schedule_now,
        )
        .proxy("node")
        .params(with(vec![("id", job_id())])),
        // Pools.
        Route::get("/pools", pools::index).params(vec![
            ("poolid", poolid().optional()),
            (
                "type",
                Prop::string()
                    .one_of(&["qemu", "lxc", "storage"])
                    .requires("poolid")
                    .optional(),
            ),
        ]),
        Route::post("/pools", pools::create)
            .perm(POOL_ALLOCATE)
            .params(vec![
                ("poolid", poolid()),
                ("comment", Prop::string().optional()),
            ]),
        Route::put("/pools", pools::update)
            .perm(POOL_ALLOCATE)
            .params(pool_update()),
        Route::delete("/pools", pools::delete)
            .perm(POOL_ALLOCATE)
            .params(vec![("poolid", poolid())]),
        Route::get("/pools/{poolid}", pools::read)
            .perm(Perm::check("/pool/{poolid}", &["Pool.Audit"]))
            .params(vec![
                ("poolid", poolid()),
                (
                    "type",
                    Prop::string()
                        .one_of(&["qemu", "lxc", "storage"])
                        .optional(),
                ),
            ]),
        Route::put("/pools/{poolid}", pools::update_deprecated)
            .perm(POOL_ALLOCATE)
            .params(pool_update()),
        Route::delete("/pools/{poolid}", pools::delete_deprecated)
            .perm(POOL_ALLOCATE)
            .params(vec![("poolid", poolid())]),
    ]
}
