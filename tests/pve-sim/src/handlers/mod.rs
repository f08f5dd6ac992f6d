//! API endpoints, one module per area. `routes()` is the routing table.

mod access;
mod act;
mod agent;
mod agent_exec;
mod agent_file;
mod aplinfo;
mod apt;
mod backup;
mod ceph;
mod cloudinit;
mod cluster;
mod config;
mod config_write;
mod disks;
mod download;
mod firewall;
mod firewall_routes;
mod guests;
mod ha;
mod ha_routes;
mod ha_write;
mod health_routes;
mod lifecycle;
mod logs;
mod move_disk;
mod network;
mod nodes;
mod pools;
mod power;
mod replication;
mod rrd;
mod services;
mod snapshot_write;
mod storage;
mod storage_cfg;
mod tasks;
mod template;
mod volumes;
mod write_routes;

pub(crate) use cloudinit::has_cloudinit_drive;
pub(crate) use config::{config_digest, mask_secrets, render as render_config, size_str};
pub use download::{download_bytes, download_checksum};
pub(crate) use tasks::log_lines;

use std::sync::{RwLockReadGuard, RwLockWriteGuard};

use serde_json::Value;

use crate::params::Params;
use crate::perms::{Identity, Perm};
use crate::router::Route;
use crate::schema::Prop;
use crate::server::Shared;
use crate::state::Cluster;
use crate::util::{read, write};

/// What a handler gets: shared state, the caller, its parameters and the
/// node the call executes on (after PVE's proxying; `localhost` resolved).
pub(crate) struct Ctx<'a> {
    pub shared: &'a Shared,
    pub ident: Option<&'a Identity>,
    pub params: &'a Params,
    pub node: &'a str,
}

impl Ctx<'_> {
    /// The cluster as it is now (running tasks moved on first).
    pub fn cluster(&self) -> RwLockReadGuard<'_, Cluster> {
        crate::work::advance_shared(&self.shared.cluster);
        read(&self.shared.cluster)
    }

    /// The cluster for a write, running tasks moved on first.
    pub fn cluster_mut(&self) -> RwLockWriteGuard<'_, Cluster> {
        let mut c = write(&self.shared.cluster);
        crate::work::advance(&mut c);
        c
    }

    /// Whether the caller holds `privilege` on `path` (false when
    /// unauthenticated).
    pub fn can(&self, path: &str, privilege: &str) -> bool {
        self.ident.is_some_and(|i| i.can(path, privilege))
    }
}

/// Perl serialises a zero CPU fraction as the integer `0`, others as floats.
pub(crate) fn frac(x: f64) -> Value {
    if x == 0.0 || !x.is_finite() {
        Value::from(0)
    } else {
        Value::from(x)
    }
}

/// Perl-style boolean.
pub(crate) fn pbool(b: bool) -> Value {
    Value::from(u8::from(b))
}

fn cf() -> Prop {
    Prop::string().one_of(&["AVERAGE", "MAX"]).optional()
}

fn rrd_params() -> Vec<(&'static str, Prop)> {
    vec![
        ("node", Prop::node()),
        ("vmid", Prop::vmid()),
        (
            "timeframe",
            Prop::string().one_of(&["hour", "day", "week", "month", "year"]),
        ),
        ("cf", cf()),
    ]
}

fn config_params() -> Vec<(&'static str, Prop)> {
    vec![
        ("node", Prop::node()),
        ("vmid", Prop::vmid()),
        ("current", Prop::boolean().optional()),
        (
            "snapshot",
            Prop::string().format("pve-configid").max_len(40).optional(),
        ),
    ]
}

pub(crate) fn routes() -> Vec<Route> {
    let mut all = read_routes();
    all.extend(agent::routes());
    all.extend(write_routes::routes());
    all.extend(health_routes::routes());
    all.extend(ha_routes::routes());
    all.extend(firewall_routes::routes());
    all
}

fn read_routes() -> Vec<Route> {
    const VM_AUDIT: Perm = Perm::check("/vms/{vmid}", &["VM.Audit"]);
    let node_vmid = || vec![("node", Prop::node()), ("vmid", Prop::vmid())];
    vec![
        Route::get("/", cluster::root_index),
        Route::get("/version", cluster::version),
        Route::get("/cluster/resources", cluster::resources).params(vec![(
            "type",
            Prop::string()
                .one_of(&["vm", "storage", "node", "sdn"])
                .optional(),
        )]),
        Route::get("/cluster/status", cluster::status).perm(Perm::check("/", &["Sys.Audit"])),
        Route::get("/nodes", nodes::index),
        Route::get("/nodes/{node}/status", nodes::status)
            .perm(Perm::check("/nodes/{node}", &["Sys.Audit"]))
            .proxy("node")
            .params(vec![("node", Prop::node())]),
        Route::get("/nodes/{node}/qemu", guests::qemu_list)
            .proxy("node")
            .params(vec![
                ("node", Prop::node()),
                ("full", Prop::boolean().optional()),
            ]),
        Route::get("/nodes/{node}/lxc", guests::lxc_list)
            .proxy("node")
            .params(vec![("node", Prop::node())]),
        Route::get(
            "/nodes/{node}/qemu/{vmid}/status/current",
            guests::qemu_current,
        )
        .perm(VM_AUDIT)
        .proxy("node")
        .params(node_vmid()),
        Route::get(
            "/nodes/{node}/lxc/{vmid}/status/current",
            guests::lxc_current,
        )
        .perm(VM_AUDIT)
        .proxy("node")
        .params(node_vmid()),
        Route::get("/nodes/{node}/rrddata", rrd::node_rrddata)
            .perm(Perm::check("/nodes/{node}", &["Sys.Audit"]))
            .params(vec![
                ("node", Prop::node()),
                (
                    "timeframe",
                    Prop::string().one_of(&["hour", "day", "week", "month", "year", "decade"]),
                ),
                ("cf", cf()),
            ]),
        Route::get("/nodes/{node}/qemu/{vmid}/rrddata", rrd::qemu_rrddata)
            .perm(VM_AUDIT)
            .params(rrd_params()),
        Route::get("/nodes/{node}/lxc/{vmid}/rrddata", rrd::lxc_rrddata)
            .perm(VM_AUDIT)
            .params(rrd_params()),
        Route::get("/nodes/{node}/qemu/{vmid}/config", config::qemu_config_get)
            .perm(VM_AUDIT)
            .proxy("node")
            .params(config_params()),
        Route::get("/nodes/{node}/lxc/{vmid}/config", config::lxc_config_get)
            .perm(VM_AUDIT)
            .proxy("node")
            .params(config_params()),
        Route::get("/nodes/{node}/qemu/{vmid}/snapshot", config::qemu_snapshots)
            .perm(VM_AUDIT)
            .proxy("node")
            .params(node_vmid()),
        Route::get("/nodes/{node}/lxc/{vmid}/snapshot", config::lxc_snapshots)
            .perm(VM_AUDIT)
            .proxy("node")
            .params(node_vmid()),
        Route::get(
            "/nodes/{node}/lxc/{vmid}/interfaces",
            config::lxc_interfaces,
        )
        .perm(VM_AUDIT)
        .proxy("node")
        .params(node_vmid()),
        Route::get("/storage", storage::config_index).params(vec![(
            "type",
            Prop::string()
                .one_of(&[
                    "btrfs",
                    "cephfs",
                    "cifs",
                    "dir",
                    "esxi",
                    "iscsi",
                    "iscsidirect",
                    "lvm",
                    "lvmthin",
                    "nfs",
                    "pbs",
                    "rbd",
                    "zfs",
                    "zfspool",
                ])
                .optional(),
        )]),
        Route::get("/nodes/{node}/storage", storage::node_index)
            .proxy("node")
            .params(vec![
                ("node", Prop::node()),
                ("content", Prop::string().optional()),
                ("enabled", Prop::boolean().optional()),
                ("format", Prop::boolean().optional()),
                (
                    "storage",
                    Prop::string().format("pve-storage-id").optional(),
                ),
                ("target", Prop::node().optional()),
            ]),
        Route::get("/nodes/{node}/storage/{storage}/content", storage::content)
            .perm(Perm::check_any(
                "/storage/{storage}",
                &["Datastore.Audit", "Datastore.AllocateSpace"],
            ))
            .proxy("node")
            .params(vec![
                ("node", Prop::node()),
                ("storage", Prop::string().format("pve-storage-id")),
                ("content", Prop::string().optional()),
                ("vmid", Prop::vmid().optional()),
            ]),
        Route::get("/nodes/{node}/qemu/{vmid}/cloudinit", cloudinit::pending)
            .perm(VM_AUDIT)
            .proxy("node")
            .params(node_vmid()),
        Route::get("/nodes/{node}/qemu/{vmid}/cloudinit/dump", cloudinit::dump)
            .perm(VM_AUDIT)
            .proxy("node")
            .params({
                let mut v = node_vmid();
                v.push(("type", Prop::string().one_of(&["user", "network", "meta"])));
                v
            }),
        Route::get("/nodes/{node}/aplinfo", aplinfo::index)
            .proxy("node")
            .params(vec![("node", Prop::node())]),
        Route::get("/nodes/{node}/network", network::index)
            .proxy("node")
            .params(vec![
                ("node", Prop::node()),
                (
                    "type",
                    Prop::string()
                        .one_of(&[
                            "bridge",
                            "bond",
                            "eth",
                            "alias",
                            "vlan",
                            "fabric",
                            "OVSBridge",
                            "OVSBond",
                            "OVSPort",
                            "OVSIntPort",
                            "vnet",
                            "any_bridge",
                            "any_local_bridge",
                            "include_sdn",
                        ])
                        .optional(),
                ),
            ]),
        Route::get("/nodes/{node}/network/{iface}", network::iface)
            .perm(Perm::check("/nodes/{node}", &["Sys.Audit"]))
            .proxy("node")
            .params(vec![
                ("node", Prop::node()),
                (
                    "iface",
                    Prop::string().format("pve-iface").min_len(2).max_len(20),
                ),
            ]),
        Route::get("/nodes/{node}/tasks", tasks::node_tasks)
            .proxy("node")
            .params(vec![
                ("node", Prop::node()),
                ("start", Prop::integer().min(0).optional()),
                ("limit", Prop::integer().min(0).optional()),
                ("since", Prop::integer().optional()),
                ("until", Prop::integer().optional()),
                ("userfilter", Prop::string().optional()),
                ("typefilter", Prop::string().optional()),
                ("vmid", Prop::vmid().optional()),
                ("errors", Prop::boolean().optional()),
                ("statusfilter", Prop::string().optional()),
                (
                    "source",
                    Prop::string()
                        .one_of(&["archive", "active", "all"])
                        .optional(),
                ),
            ]),
        Route::get("/nodes/{node}/tasks/{upid}/status", tasks::task_status)
            .proxy("node")
            .params(vec![("node", Prop::node()), ("upid", Prop::string())]),
        Route::get("/nodes/{node}/tasks/{upid}/log", tasks::task_log)
            .proxy("node")
            .params(vec![
                ("node", Prop::node()),
                ("upid", Prop::string()),
                ("start", Prop::integer().min(0).optional()),
                ("limit", Prop::integer().min(0).optional()),
                ("download", Prop::boolean().optional()),
            ]),
        Route::get("/cluster/tasks", tasks::cluster_tasks),
        Route::get("/cluster/ha/status/current", ha::status_current)
            .perm(Perm::check("/", &["Sys.Audit"])),
        Route::get("/cluster/ha/resources", ha::resources)
            .perm(Perm::check("/", &["Sys.Audit"]))
            .params(vec![(
                "type",
                Prop::string().one_of(&["ct", "vm"]).optional(),
            )]),
        Route::get("/access/permissions", access::permissions).params(vec![
            ("path", Prop::string().optional()),
            ("userid", Prop::string().optional()),
        ]),
        Route::get("/access/ticket", access::get_ticket).perm(Perm::World),
        Route::post("/access/ticket", access::create_ticket)
            .perm(Perm::World)
            .no_token()
            .params(vec![
                ("username", Prop::string().max_len(64)),
                ("password", Prop::string()),
                ("realm", Prop::string().max_len(32).optional()),
                ("otp", Prop::string().optional()),
                ("path", Prop::string().max_len(64).optional()),
                ("privs", Prop::string().max_len(64).optional()),
                ("new-format", Prop::boolean().optional()),
                ("tfa-challenge", Prop::string().optional()),
            ]),
    ]
}
