//! API endpoints, one module per area. `routes()` is the routing table.

mod access;
mod cluster;
mod guests;
mod nodes;

use std::sync::RwLockReadGuard;

use serde_json::Value;

use crate::params::Params;
use crate::perms::{Identity, Perm};
use crate::router::Route;
use crate::schema::Prop;
use crate::server::Shared;
use crate::state::Cluster;
use crate::util::read;

/// What a handler gets: shared state, the caller, its parameters and the
/// node the call executes on (after PVE's proxying; `localhost` resolved).
pub(crate) struct Ctx<'a> {
    pub shared: &'a Shared,
    pub ident: Option<&'a Identity>,
    pub params: &'a Params,
    pub node: &'a str,
}

impl Ctx<'_> {
    pub fn cluster(&self) -> RwLockReadGuard<'_, Cluster> {
        read(&self.shared.cluster)
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

pub(crate) fn routes() -> Vec<Route> {
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
