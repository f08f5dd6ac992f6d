//! The routing table of the firewall endpoints (issue 25), with their
//! permissions, proxying and parameter specs as the official schema
//! (PVE 9.1) lists them.

use super::firewall as fw;
use crate::perms::Perm;
use crate::router::{Handler, Route};
use crate::schema::Prop;

const SYS_AUDIT: Perm = Perm::check("/", &["Sys.Audit"]);
const SYS_MODIFY: Perm = Perm::check("/", &["Sys.Modify"]);
const NODE_AUDIT: Perm = Perm::check("/nodes/{node}", &["Sys.Audit"]);
const NODE_MODIFY: Perm = Perm::check("/nodes/{node}", &["Sys.Modify"]);
const VM_AUDIT: Perm = Perm::check("/vms/{vmid}", &["VM.Audit"]);
const VM_NETWORK: Perm = Perm::check("/vms/{vmid}", &["VM.Config.Network"]);

type Params = Vec<(&'static str, Prop)>;

const LOG_LEVELS: &[&str] = &[
    "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", "nolog",
];

/// `pve-security-group-name`, `ipset-name`, `pve-fw-alias`.
fn name(max: usize) -> Prop {
    Prop::string()
        .pattern(r"[A-Za-z][A-Za-z0-9\-\_]+")
        .min_len(2)
        .max_len(max)
}

fn b() -> Prop {
    Prop::boolean().optional()
}

fn log_level() -> Prop {
    Prop::string().one_of(LOG_LEVELS).optional()
}

fn digest() -> Prop {
    Prop::string().max_len(64).optional()
}

fn delete() -> Prop {
    Prop::string().format("pve-configid-list").optional()
}

fn pos() -> Prop {
    Prop::integer().min(0).optional()
}

fn cluster() -> Params {
    vec![]
}

fn group() -> Params {
    vec![("group", name(18))]
}

fn node() -> Params {
    vec![("node", Prop::node())]
}

fn guest() -> Params {
    vec![("node", Prop::node()), ("vmid", Prop::vmid())]
}

fn with(mut base: Params, extra: Params) -> Params {
    base.extend(extra);
    base
}

/// `$rule_properties` (`type` and `action` required when creating).
fn rule_props(create: bool) -> Params {
    let req = |p: Prop| if create { p } else { p.optional() };
    vec![
        ("pos", pos()),
        ("digest", digest()),
        (
            "type",
            req(Prop::string().one_of(&["in", "out", "forward", "group"])),
        ),
        (
            "action",
            req(Prop::string()
                .pattern(r"[A-Za-z][A-Za-z0-9\-\_]+")
                .min_len(2)
                .max_len(20)),
        ),
        ("macro", Prop::string().max_len(128).optional()),
        (
            "iface",
            Prop::string()
                .format("pve-iface")
                .min_len(2)
                .max_len(20)
                .optional(),
        ),
        (
            "source",
            Prop::string()
                .format("pve-fw-addr-spec")
                .max_len(512)
                .optional(),
        ),
        (
            "dest",
            Prop::string()
                .format("pve-fw-addr-spec")
                .max_len(512)
                .optional(),
        ),
        (
            "proto",
            Prop::string().format("pve-fw-protocol-spec").optional(),
        ),
        ("enable", Prop::integer().min(0).optional()),
        ("log", log_level()),
        (
            "sport",
            Prop::string().format("pve-fw-sport-spec").optional(),
        ),
        (
            "dport",
            Prop::string().format("pve-fw-dport-spec").optional(),
        ),
        ("comment", Prop::string().optional()),
        (
            "icmp-type",
            Prop::string().format("pve-fw-icmp-type-spec").optional(),
        ),
    ]
}

fn policy() -> Prop {
    Prop::string()
        .one_of(&["ACCEPT", "REJECT", "DROP"])
        .optional()
}

fn cluster_options() -> Params {
    vec![
        ("enable", Prop::integer().min(0).optional()),
        ("ebtables", b()),
        ("policy_in", policy()),
        ("policy_out", policy()),
        (
            "policy_forward",
            Prop::string().one_of(&["ACCEPT", "DROP"]).optional(),
        ),
        ("log_ratelimit", Prop::string().optional()),
        ("delete", delete()),
        ("digest", digest()),
    ]
}

fn host_options() -> Params {
    let int = || Prop::integer().optional();
    vec![
        ("enable", b()),
        ("log_level_in", log_level()),
        ("log_level_out", log_level()),
        ("log_level_forward", log_level()),
        ("tcp_flags_log_level", log_level()),
        ("smurf_log_level", log_level()),
        ("nosmurfs", b()),
        ("tcpflags", b()),
        ("nf_conntrack_max", Prop::integer().min(32768).optional()),
        (
            "nf_conntrack_tcp_timeout_established",
            Prop::integer().min(7875).optional(),
        ),
        (
            "nf_conntrack_tcp_timeout_syn_recv",
            Prop::integer().range(30, 60).optional(),
        ),
        ("ndp", b()),
        ("nf_conntrack_allow_invalid", b()),
        (
            "nf_conntrack_helpers",
            Prop::string().format("pve-fw-conntrack-helper").optional(),
        ),
        ("protection_synflood", b()),
        ("protection_synflood_rate", int()),
        ("protection_synflood_burst", int()),
        ("log_nf_conntrack", b()),
        ("nftables", b()),
        ("delete", delete()),
        ("digest", digest()),
    ]
}

fn guest_options() -> Params {
    vec![
        ("enable", b()),
        ("macfilter", b()),
        ("dhcp", b()),
        ("ndp", b()),
        ("radv", b()),
        ("ipfilter", b()),
        ("policy_in", policy()),
        ("policy_out", policy()),
        ("log_level_in", log_level()),
        ("log_level_out", log_level()),
        ("delete", delete()),
        ("digest", digest()),
    ]
}

/// The five rule methods under `base` (`.../rules` or a security group)
/// and `one` (`.../{pos}`).
#[allow(clippy::too_many_arguments)]
fn rule_routes(
    base: &'static str,
    one: &'static str,
    audit: Perm,
    modify: Perm,
    scope: fn() -> Params,
    proxied: bool,
    create: Handler,
    update: Handler,
) -> Vec<Route> {
    let proxy = |r: Route| if proxied { r.proxy("node") } else { r };
    let mut update_props = rule_props(false);
    update_props.push(("moveto", pos()));
    update_props.push(("delete", delete()));
    vec![
        proxy(Route::get(base, fw::rules).perm(audit).params(scope())),
        proxy(
            Route::post(base, create)
                .perm(modify)
                .params(with(scope(), rule_props(true))),
        ),
        proxy(
            Route::get(one, fw::rule)
                .perm(audit)
                .params(with(scope(), vec![("pos", pos())])),
        ),
        proxy(
            Route::put(one, update)
                .perm(modify)
                .params(with(scope(), update_props)),
        ),
        proxy(
            Route::delete(one, fw::delete_rule)
                .perm(modify)
                .params(with(scope(), vec![("pos", pos()), ("digest", digest())])),
        ),
    ]
}

/// A guest type's routes (`/nodes/{node}/qemu/{vmid}/firewall` or the
/// `lxc` one): not proxied but for `options`, and the node is not checked.
#[allow(clippy::too_many_arguments)]
fn guest_routes(
    root: &'static str,
    rules: &'static str,
    rule: &'static str,
    options: &'static str,
    aliases: &'static str,
    ipsets: &'static str,
    ipset: &'static str,
    refs: &'static str,
    create: Handler,
    update: Handler,
) -> Vec<Route> {
    let mut v = vec![
        Route::get(root, fw::index).params(guest()),
        Route::get(options, fw::options)
            .perm(VM_AUDIT)
            .proxy("node")
            .params(guest()),
        Route::put(options, fw::set_options)
            .perm(VM_NETWORK)
            .proxy("node")
            .params(with(guest(), guest_options())),
        Route::get(aliases, fw::aliases)
            .perm(VM_AUDIT)
            .params(guest()),
        Route::get(ipsets, fw::ipsets)
            .perm(VM_AUDIT)
            .params(guest()),
        Route::get(ipset, fw::ipset)
            .perm(VM_AUDIT)
            .params(with(guest(), vec![("name", name(64))])),
        Route::get(refs, fw::refs)
            .perm(VM_AUDIT)
            .params(with(guest(), vec![("type", refs_type())])),
    ];
    v.extend(rule_routes(
        rules, rule, VM_AUDIT, VM_NETWORK, guest, false, create, update,
    ));
    v
}

fn refs_type() -> Prop {
    Prop::string().one_of(&["alias", "ipset"]).optional()
}

pub(crate) fn routes() -> Vec<Route> {
    let mut v = vec![
        // Cluster.
        Route::get("/cluster/firewall", fw::index),
        Route::get("/cluster/firewall/options", fw::options).perm(SYS_AUDIT),
        Route::put("/cluster/firewall/options", fw::set_options)
            .perm(SYS_MODIFY)
            .params(cluster_options()),
        Route::get("/cluster/firewall/aliases", fw::aliases).perm(SYS_AUDIT),
        Route::get("/cluster/firewall/ipset", fw::ipsets).perm(SYS_AUDIT),
        Route::get("/cluster/firewall/ipset/{name}", fw::ipset)
            .perm(SYS_AUDIT)
            .params(vec![("name", name(64))]),
        Route::get("/cluster/firewall/groups", fw::groups),
        Route::get("/cluster/firewall/refs", fw::refs)
            .perm(SYS_AUDIT)
            .params(vec![("type", refs_type())]),
        // Node.
        Route::get("/nodes/{node}/firewall", fw::index).params(node()),
        Route::get("/nodes/{node}/firewall/options", fw::options)
            .perm(NODE_AUDIT)
            .proxy("node")
            .params(node()),
        Route::put("/nodes/{node}/firewall/options", fw::set_options)
            .perm(NODE_MODIFY)
            .proxy("node")
            .params(with(node(), host_options())),
    ];
    v.extend(rule_routes(
        "/cluster/firewall/rules",
        "/cluster/firewall/rules/{pos}",
        SYS_AUDIT,
        SYS_MODIFY,
        cluster,
        false,
        fw::create_rule,
        fw::update_rule,
    ));
    v.extend(rule_routes(
        "/cluster/firewall/groups/{group}",
        "/cluster/firewall/groups/{group}/{pos}",
        SYS_AUDIT,
        SYS_MODIFY,
        group,
        false,
        fw::create_rule,
        fw::update_rule,
    ));
    v.extend(rule_routes(
        "/nodes/{node}/firewall/rules",
        "/nodes/{node}/firewall/rules/{pos}",
        NODE_AUDIT,
        NODE_MODIFY,
        node,
        true,
        fw::create_rule,
        fw::update_rule,
    ));
    v.extend(guest_routes(
        "/nodes/{node}/qemu/{vmid}/firewall",
        "/nodes/{node}/qemu/{vmid}/firewall/rules",
        "/nodes/{node}/qemu/{vmid}/firewall/rules/{pos}",
        "/nodes/{node}/qemu/{vmid}/firewall/options",
        "/nodes/{node}/qemu/{vmid}/firewall/aliases",
        "/nodes/{node}/qemu/{vmid}/firewall/ipset",
        "/nodes/{node}/qemu/{vmid}/firewall/ipset/{name}",
        "/nodes/{node}/qemu/{vmid}/firewall/refs",
        fw::create_rule,
        fw::update_rule,
    ));
    v.extend(guest_routes(
        "/nodes/{node}/lxc/{vmid}/firewall",
        "/nodes/{node}/lxc/{vmid}/firewall/rules",
        "/nodes/{node}/lxc/{vmid}/firewall/rules/{pos}",
        "/nodes/{node}/lxc/{vmid}/firewall/options",
        "/nodes/{node}/lxc/{vmid}/firewall/aliases",
        "/nodes/{node}/lxc/{vmid}/firewall/ipset",
        "/nodes/{node}/lxc/{vmid}/firewall/ipset/{name}",
        "/nodes/{node}/lxc/{vmid}/firewall/refs",
        fw::create_ct_rule,
        fw::update_ct_rule,
    ));
    v
}
