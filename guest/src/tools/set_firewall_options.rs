//! `pve_set_firewall_options`: the options of the cluster's, a node's or a
//! guest's firewall, with `PUT .../firewall/options` and the digest the
//! tool read (or the one the agent gives, refused when stale).
//!
//! The common options are arguments (`enable`, the input and output
//! policies and log levels); the others of a scope go in `other`, each
//! checked against the keys that scope has. Refused without writing: an
//! option the scope does not have, a stale digest, a change with nothing
//! in it, and switching a node's or the cluster's firewall on while a rule
//! would cut the management network off the API or SSH, unless
//! `allow_lockout`. Destructive at every scope: the master switch and the
//! default policies decide what every rule means.

use serde_json::{Map, Value};

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::arg::{Flag, NodeName, Vmid};
use crate::error::{ToolError, quoted};
use crate::fetch;
use crate::firewall::args::{Digest, LogLevel, Policy};
use crate::firewall::{self, Place, Scope};
use crate::json as pj;
use crate::node_action::{self, NodeActionOutput};
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

/// The options each scope has beyond the common arguments, and the JSON
/// type each takes.
const OTHER: &[(Scope, &str, Kind)] = &[
    (Scope::Cluster, "ebtables", Kind::Flag),
    (Scope::Cluster, "log_ratelimit", Kind::Text),
    (Scope::Cluster, "policy_forward", Kind::Text),
    (Scope::Node, "log_level_forward", Kind::Text),
    (Scope::Node, "log_nf_conntrack", Kind::Flag),
    (Scope::Node, "ndp", Kind::Flag),
    (Scope::Node, "nf_conntrack_allow_invalid", Kind::Flag),
    (Scope::Node, "nf_conntrack_helpers", Kind::Text),
    (Scope::Node, "nf_conntrack_max", Kind::Int),
    (Scope::Node, "nf_conntrack_tcp_timeout_established", Kind::Int),
    (Scope::Node, "nf_conntrack_tcp_timeout_syn_recv", Kind::Int),
    (Scope::Node, "nftables", Kind::Flag),
    (Scope::Node, "nosmurfs", Kind::Flag),
    (Scope::Node, "protection_synflood", Kind::Flag),
    (Scope::Node, "protection_synflood_burst", Kind::Int),
    (Scope::Node, "protection_synflood_rate", Kind::Int),
    (Scope::Node, "smurf_log_level", Kind::Text),
    (Scope::Node, "tcp_flags_log_level", Kind::Text),
    (Scope::Node, "tcpflags", Kind::Flag),
    (Scope::Guest, "dhcp", Kind::Flag),
    (Scope::Guest, "ipfilter", Kind::Flag),
    (Scope::Guest, "macfilter", Kind::Flag),
    (Scope::Guest, "ndp", Kind::Flag),
    (Scope::Guest, "radv", Kind::Flag),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Flag,
    Int,
    Text,
}

/// Further options of the scope, by key.
#[derive(Debug, Clone, PartialEq)]
pub struct Other(pub Map<String, Value>);

impl Other {
    fn from_json(v: &Value) -> Result<Self, String> {
        let Value::Object(map) = v else {
            return Err(format!(
                "must be an object of option keys and values, e.g. {{\"nosmurfs\": true}}, not {}",
                crate::arg::json_kind(v)
            ));
        };
        for (key, value) in map {
            let Some((_, _, kind)) = OTHER.iter().find(|(_, k, _)| k == key) else {
                return Err(format!(
                    "{} is not a firewall option this tool sets; enable, policy_in, policy_out, \
                     log_level_in and log_level_out are arguments of their own",
                    quoted(key, 64)
                ));
            };
            let ok = match (kind, value) {
                (Kind::Flag, Value::Bool(_)) => true,
                (Kind::Int, Value::Number(n)) => n.as_u64().is_some(),
                (Kind::Text, Value::String(s)) => {
                    (1..=128).contains(&s.len())
                        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/,._-".contains(&b))
                }
                _ => false,
            };
            if !ok {
                let want = match kind {
                    Kind::Flag => "true or false",
                    Kind::Int => "a whole number",
                    Kind::Text => "a short text of letters, digits and / , . _ -",
                };
                return Err(format!("{key}: must be {want}"));
            }
        }
        Ok(Other(map.clone()))
    }
}
crate::arg::deserialize_from_json!(Other);
crate::arg::fixed_schema!(
    Other,
    serde_json::json!({
        "type": "object",
        "additionalProperties": {"type": ["string", "integer", "boolean"]},
    })
);

action_input! {
    plan:
    /// Where, and the options.
    pub struct Input {
        /// cluster, node or guest
        scope: Scope,
        /// Node, for scope node
        node: Option<NodeName>,
        /// Guest id, for scope guest
        vmid: Option<Vmid>,
        /// Firewall on or off
        enable: Option<Flag>,
        /// ACCEPT, REJECT or DROP (cluster, guest)
        policy_in: Option<Policy>,
        /// ACCEPT, REJECT or DROP (cluster, guest)
        policy_out: Option<Policy>,
        /// Log level (node, guest)
        log_level_in: Option<LogLevel>,
        /// Log level (node, guest)
        log_level_out: Option<LogLevel>,
        /// Other options of the scope, e.g. {"nosmurfs": true}
        other: Option<Other>,
        /// Digest pve_get_firewall gave; refused if they changed
        digest: Option<Digest>,
        /// Send even if it cuts the API or SSH off
        allow_lockout: Option<Flag>,
    }
}

const OPTION_PARAMS: &[Param] = &[
    Param::arg("enable"),
    Param::arg("policy_in"),
    Param::arg("policy_out"),
    Param::arg("log_level_in"),
    Param::arg("log_level_out"),
    firewall::SEEN_DIGEST,
];

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_set_firewall_options",
    title: "Set firewall options",
    description: "Turn a firewall on or off and set its policies, log levels and other options \
        (cluster, node or guest); refused if it cuts the API or SSH off.",
    annotations: Annotations::write(true, true),
    routes: &[
        Route::new("PUT", "/cluster/firewall/options", OPTION_PARAMS)
            .with_entries("other")
            .once()
            .when("scope", "cluster"),
        Route::new("PUT", "/nodes/{node}/firewall/options", OPTION_PARAMS)
            .with_entries("other")
            .once()
            .when("scope", "node"),
        Route::new("PUT", "/nodes/{node}/{vm_type}/{vmid}/firewall/options", OPTION_PARAMS)
            .with_entries("other")
            .once()
            .when("scope", "guest"),
    ],
    privileges: [
        "/": "Sys.Modify",
        "/nodes/{node}": "Sys.Modify",
        "/vms/{vmid}": "VM.Config.Network",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    let execution = input.execution();
    let place = Place::resolve(pve, input.scope, input.node.as_ref(), input.vmid)?;
    let scope = place.scope;
    let has_policies = scope != Scope::Node;
    let has_log_levels = scope != Scope::Cluster;
    for (field, given, fits) in [
        ("policy_in", input.policy_in.is_some(), has_policies),
        ("policy_out", input.policy_out.is_some(), has_policies),
        ("log_level_in", input.log_level_in.is_some(), has_log_levels),
        ("log_level_out", input.log_level_out.is_some(), has_log_levels),
    ] {
        if given && !fits {
            return Err(ToolError::field(
                field,
                format!("{} has no such option", place.label()),
            ));
        }
    }
    let other = input.other.as_ref().map(|o| o.0.clone()).unwrap_or_default();
    for key in other.keys() {
        if !OTHER.iter().any(|(s, k, _)| *s == scope && k == key) {
            return Err(ToolError::field(
                "other",
                format!(
                    "{key} is not an option of {} ({} firewall options: {})",
                    place.label(),
                    scope.as_str(),
                    OTHER
                        .iter()
                        .filter(|(s, _, _)| *s == scope)
                        .map(|(_, k, _)| *k)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let options = fetch::object(pve, &place.base().lit("options"))?;
    let digest = pj::text(options.get("digest"));
    if let Some(seen) = &input.digest
        && digest.as_deref() != Some(seen.as_str())
    {
        return Err(ToolError::Precondition(format!(
            "the firewall options of {} changed since you read them. Nothing was sent. Read \
             them again with pve_get_firewall what=options.",
            place.label()
        )));
    }
    let mut request = WriteRequest::new(Method::Put, place.base().lit("options"))
        .flag("enable", input.enable.map(|f| f.0))
        .text("policy_in", input.policy_in.map(Policy::as_str))
        .text("policy_out", input.policy_out.map(Policy::as_str))
        .text("log_level_in", input.log_level_in.map(LogLevel::as_str))
        .text("log_level_out", input.log_level_out.map(LogLevel::as_str));
    for (key, value) in &other {
        request = match value {
            Value::Bool(b) => request.flag(key, Some(*b)),
            Value::Number(n) => request.int(key, n.as_i64()),
            other => request.text(key, other.as_str()),
        };
    }
    let changes = request.planned().params;
    if changes.is_empty() {
        return Err(ToolError::InvalidArguments(
            "name an option to set (enable, policy_in, other, ...): there is nothing to change"
                .into(),
        ));
    }
    let request = request.text("digest", digest.as_deref());
    let warning = match (scope, input.enable) {
        (Scope::Cluster | Scope::Node, Some(Flag(true))) => firewall::guard::change(
            pve,
            &place,
            input.allow_lockout.is_some_and(|f| f.0),
            |scene| match &place.node {
                Some(node) => {
                    if let Some(n) = scene.nodes.get_mut(node) {
                        n.enabled = true;
                    }
                }
                None => scene.cluster_enabled = true,
            },
        )?,
        _ => None,
    };
    let was: Vec<String> = changes
        .iter()
        .map(|(k, v)| {
            let old = options
                .get(k)
                .map_or_else(|| "unset".to_owned(), ToString::to_string);
            format!("{k} {old} -> {v}")
        })
        .collect();
    let mut effect = format!("set the firewall options of {}: {}", place.label(), was.join(", "));
    if let Some(w) = warning {
        effect = format!("{w}. {effect}");
    }
    let found = format!(
        "the firewall of {} is {} (digest {})",
        place.label(),
        if pj::flag(options.get("enable")) { "enabled" } else { "not enabled" },
        digest.as_deref().unwrap_or("none")
    );
    let prepared = Prepared::Act { request, effect };
    node_action::run(pve, &place.node_or_cluster(), found, prepared, execution)
}
