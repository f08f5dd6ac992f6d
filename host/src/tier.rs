//! A tool's risk tier, decided by the host from what the tool may send:
//! the component's annotations can raise it (`destructiveHint`), never
//! lower it. The policy uses the tier to decide which rules may enable a
//! call: `default = "read-only"` runs only [`Tier::Read`] tools, and a
//! [`Tier::Destructive`] call runs only under its tool's own
//! `[policy.tools.NAME]` table with an `action`.
//!
//! A call's tier follows from what its arguments let it send
//! ([`Tier::of_call`]): `pve_backup_vm` is a write, and destructive with
//! `prune: true`, because its route's `remove` then carries `1`
//! ([`crate::route::destructive`]). A tool's own tier ([`Tier::of`]) is
//! that of its mildest call, and [`Tier::worst`] that of its worst.

use std::fmt;

use http::Method;

use crate::route::Route;
use crate::route::destructive::{DESTRUCTIVE_PARAMS, HARMLESS_FREE};
use crate::tools::{JsonObject, ToolInfo};

/// How much harm a tool can do, as far as the host can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// It declares no routes: the egress gate lets it send nothing but
    /// `GET`, whatever the policy says.
    Read,
    /// It declares routes, none of them destructive.
    Write,
    /// It declares `destructiveHint`, a route in [`DESTRUCTIVE`], or a
    /// guarded read.
    Destructive,
}

impl Tier {
    /// The tier of a tool's mildest call: the worst of the routes that
    /// apply to it and its own claim. A tool whose routes apply only under
    /// conditions (`scope` = `guest`, `scope` = `cluster`) is ranked by its
    /// mildest choice. Which tools a policy lists and which rules enable
    /// them follow from it; each call is then judged at [`Tier::of_call`].
    pub fn of(tool: &ToolInfo) -> Tier {
        if tool.annotations.destructive {
            return Tier::Destructive;
        }
        if tool.routes.is_empty() {
            return Tier::Read;
        }
        choices(tool)
            .iter()
            .map(|arguments| judged(tool, arguments))
            .min()
            .unwrap_or(Tier::Destructive)
    }

    /// The tier of one call of `tool` with these `arguments` (as the
    /// policy sees them): its tool's, or destructive when a route that
    /// applies to them is a destructive write, or may send a [destructive
    /// parameter](DESTRUCTIVE_PARAMS) with a harmful value.
    pub fn of_call(tool: &ToolInfo, arguments: &JsonObject) -> Tier {
        match Tier::of(tool) {
            Tier::Write => judged(tool, arguments),
            tier => tier,
        }
    }

    /// The worst tier any call of `tool` can have: what its MCP
    /// `destructiveHint` says.
    pub fn worst(tool: &ToolInfo) -> Tier {
        match Tier::of(tool) {
            Tier::Write
                if !raised_by(tool).is_empty() || tool.routes.iter().any(is_destructive) =>
            {
                Tier::Destructive
            }
            tier => tier,
        }
    }

    /// As printed by `pve-mcp policy check` and `pve-mcp tools`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::Write => "write",
            Tier::Destructive => "destructive",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One kind of destructive write: a method, and the last segments of the
/// path (`"*"`: any one segment; no segments: any path), or its first.
pub struct DestructiveWrite {
    /// The method.
    pub method: Method,
    /// The path's last segments.
    pub tail: &'static [&'static str],
    /// The path's first segments instead, when not empty: anything below.
    pub under: &'static [&'static str],
    /// Why it destroys, for the docs and tests.
    pub why: &'static str,
}

impl DestructiveWrite {
    /// Whether some call of `route` could send this write.
    pub fn could_be_sent_by(&self, route: &Route) -> bool {
        if self.under.is_empty() {
            route.could_send(&self.method, self.tail)
        } else {
            route.could_send_under(&self.method, self.under)
        }
    }
}

/// A firewall write at cluster or node scope: one rule or option there
/// applies to every node (or the node's own management interface), so a
/// wrong one cuts the API and SSH off for everyone. A guest's firewall
/// stays a write: it guards that guest only.
const FIREWALL_WHY: &str = "a cluster or node firewall rule or option can cut every client off \
                            the API and SSH";

/// The writes that destroy data or cannot be undone (the shared
/// reference's "Dangerous" classification, §4, and the guest-destructive
/// paths of §5), as far as a route can say it. What depends on the
/// request's parameters (`pve_set_vm_config` with `delete`, a restore with
/// `force`, vzdump pruning, `move_disk` with `delete`) a route cannot
/// express: such a tool declares `destructiveHint`.
pub const DESTRUCTIVE: &[DestructiveWrite] = &[
    DestructiveWrite {
        method: Method::DELETE,
        tail: &[],
        under: &[],
        why: "removes what the path names: a guest and its disks, a snapshot, a volume, a job",
    },
    DestructiveWrite {
        method: Method::POST,
        tail: &["snapshot", "*", "rollback"],
        under: &[],
        why: "loses every change since the snapshot, disk and RAM",
    },
    DestructiveWrite {
        method: Method::PUT,
        tail: &["resize"],
        under: &[],
        why: "a disk never shrinks back, and a size without a unit is bytes",
    },
    DestructiveWrite {
        method: Method::POST,
        tail: &["template"],
        under: &[],
        why: "converting a guest to a template cannot be undone",
    },
    DestructiveWrite {
        method: Method::PUT,
        tail: &["unlink"],
        under: &[],
        why: "destroys disk images",
    },
    DestructiveWrite {
        method: Method::POST,
        tail: &[],
        under: &["cluster", "firewall"],
        why: FIREWALL_WHY,
    },
    DestructiveWrite {
        method: Method::PUT,
        tail: &[],
        under: &["cluster", "firewall"],
        why: FIREWALL_WHY,
    },
    DestructiveWrite {
        method: Method::POST,
        tail: &[],
        under: &["nodes", "*", "firewall"],
        why: FIREWALL_WHY,
    },
    DestructiveWrite {
        method: Method::PUT,
        tail: &[],
        under: &["nodes", "*", "firewall"],
        why: FIREWALL_WHY,
    },
];

/// The arguments that pick each choice of a tool's conditional routes
/// (`{"scope": "cluster"}`, ...), or one empty object when it has none.
fn choices(tool: &ToolInfo) -> Vec<JsonObject> {
    let mut choices: Vec<JsonObject> = Vec::new();
    for (argument, value) in tool.routes.iter().filter_map(Route::condition) {
        let mut choice = JsonObject::new();
        choice.insert(argument.to_owned(), value.into());
        if !choices.contains(&choice) {
            choices.push(choice);
        }
    }
    if choices.is_empty() {
        choices.push(JsonObject::new());
    }
    choices
}

/// A write tool's call with `arguments`: destructive when a route that
/// applies to it is, or may send a harmful parameter; else a write.
fn judged(tool: &ToolInfo, arguments: &JsonObject) -> Tier {
    let destroys = tool
        .routes
        .iter()
        .filter(|r| r.applies(arguments))
        .any(is_destructive);
    if destroys || sends_harm(tool, arguments) {
        Tier::Destructive
    } else {
        Tier::Write
    }
}

/// Whether a call of `tool` with `arguments` may send a destructive
/// parameter with a harmful value.
fn sends_harm(tool: &ToolInfo, arguments: &JsonObject) -> bool {
    tool.routes
        .iter()
        .filter(|r| r.applies(arguments))
        .any(|route| {
            let bound = route.bind(arguments);
            let destroys = DESTRUCTIVE_PARAMS.iter().any(|d| {
                route.could_send(&d.method, d.tail) && bound.may_send(d.name).beyond(d.harmless)
            });
            // A value the tool chooses that the host cannot judge.
            let unnamed = bound
                .chosen_by_the_tool()
                .iter()
                .any(|name| !HARMLESS_FREE.contains(name));
            destroys || unnamed
        })
}

/// The arguments (or `ARG.KEY` entries) whose values can make a call of
/// `tool` destructive, e.g. `prune` for `pve_backup_vm`; empty when none
/// can.
pub fn raised_by(tool: &ToolInfo) -> Vec<String> {
    let mut names = Vec::new();
    // A harsher choice of conditional routes (`scope` = `cluster`).
    let choices = choices(tool);
    let tiers: Vec<Tier> = choices.iter().map(|c| judged(tool, c)).collect();
    if tiers.iter().min() != tiers.iter().max() {
        for (argument, _) in tool.routes.iter().filter_map(Route::condition) {
            if !names.iter().any(|n| n == argument) {
                names.push(argument.to_owned());
            }
        }
    }
    for route in &tool.routes {
        for d in DESTRUCTIVE_PARAMS
            .iter()
            .filter(|d| route.could_destroy_with(d))
        {
            let params = route.params();
            let name = match params.rules().iter().find(|r| r.name == d.name) {
                Some(rule) => rule.argument.clone().unwrap_or_else(|| d.name.to_string()),
                None => format!("{}.{}", params.entries().unwrap_or_default(), d.name),
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// Whether some call of `route` could send a write in [`DESTRUCTIVE`], or
/// it is a guarded read.
pub fn is_destructive(route: &Route) -> bool {
    // A guarded read shows what is inside a guest (its files, a command's
    // output) or a secret: as much harm as most writes, and no undo.
    route.is_guarded_read() || DESTRUCTIVE.iter().any(|d| d.could_be_sent_by(route))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::params::{Otherwise, ParamRule, Params, ValueKind};
    use crate::tools::Annotations;

    fn tool(destructive_hint: bool, routes: &[(&str, &str)]) -> ToolInfo {
        ToolInfo {
            annotations: Annotations {
                // Claims to be harmless: the tier must not believe it.
                read_only: true,
                destructive: destructive_hint,
                idempotent: true,
                open_world: false,
            },
            ..ToolInfo::sample("t", routes)
        }
    }

    fn tier(routes: &[(&str, &str)]) -> Tier {
        Tier::of(&tool(false, routes))
    }

    #[test]
    fn no_routes_is_read_and_routes_are_write() {
        assert_eq!(tier(&[]), Tier::Read);
        for (method, path) in [
            ("POST", "/nodes/{node}/{vm_type}/{vmid}/status/start"),
            ("POST", "/nodes/{node}/qemu/{vmid}/status/stop"),
            ("POST", "/nodes/{node}/qemu/{vmid}/snapshot"),
            ("POST", "/nodes/{node}/qemu/{vmid}/clone"),
            ("POST", "/nodes/{node}/qemu/{vmid}/migrate"),
            ("PUT", "/nodes/{node}/qemu/{vmid}/config"),
            ("POST", "/nodes/{node}/vzdump"),
            // The same words under another method are not in the table.
            (
                "PUT",
                "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config",
            ),
            ("POST", "/nodes/{node}/qemu/{vmid}/resize"),
        ] {
            assert_eq!(tier(&[(method, path)]), Tier::Write, "{method} {path}");
        }
    }

    #[test]
    fn every_destructive_write_of_the_table_is_destructive() {
        for (method, path) in [
            ("DELETE", "/nodes/{node}/{vm_type}/{vmid}"),
            ("DELETE", "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}"),
            ("DELETE", "/version"),
            (
                "POST",
                "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback",
            ),
            (
                "POST",
                "/nodes/{node}/lxc/{vmid}/snapshot/before-upgrade/rollback",
            ),
            ("PUT", "/nodes/{node}/{vm_type}/{vmid}/resize"),
            ("POST", "/nodes/{node}/lxc/{vmid}/template"),
            ("PUT", "/nodes/{node}/qemu/{vmid}/unlink"),
        ] {
            assert_eq!(
                tier(&[(method, path)]),
                Tier::Destructive,
                "{method} {path}"
            );
        }
        // One destructive route among harmless ones is enough.
        assert_eq!(
            tier(&[
                ("POST", "/nodes/{node}/qemu/{vmid}/status/start"),
                ("DELETE", "/nodes/{node}/qemu/{vmid}"),
            ]),
            Tier::Destructive
        );
    }

    /// A placeholder whose pattern admits `rollback` or `resize` could be
    /// bound to it by the call's arguments: the route counts as what it
    /// could become.
    #[test]
    fn a_placeholder_that_could_spell_a_destructive_write_is_destructive() {
        for (method, path) in [
            (
                "POST",
                "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/{target}",
            ),
            (
                "POST",
                "/nodes/{node}/qemu/{vmid}/{snapname}/{snapname}/{node}",
            ),
            ("PUT", "/nodes/{node}/qemu/{vmid}/{storage}"),
            ("POST", "/nodes/{node}/qemu/{vmid}/{node}"),
            ("PUT", "/nodes/{node}/qemu/{vmid}/{snapname}"),
        ] {
            assert_eq!(
                tier(&[(method, path)]),
                Tier::Destructive,
                "{method} {path}"
            );
        }
        // A placeholder that cannot spell the word does not count.
        assert_eq!(
            tier(&[("PUT", "/nodes/{node}/qemu/{vmid}/{vmid}")]),
            Tier::Write
        );
        assert_eq!(
            tier(&[("POST", "/nodes/{node}/qemu/{vmid}/{vm_type}")]),
            Tier::Write
        );
    }

    /// The call's own request could be any write, so its tool is
    /// destructive: only its own rule enables it.
    #[test]
    fn the_calls_own_request_is_destructive() {
        assert_eq!(tier(&[("{method}", "/{path}")]), Tier::Destructive);
    }

    fn with_params(
        method: &str,
        path: &str,
        rules: &[(&str, Option<&str>, Otherwise)],
        entries: Option<&str>,
    ) -> ToolInfo {
        let rules = rules
            .iter()
            .map(|(name, argument, otherwise)| ParamRule {
                name: name.to_string(),
                argument: argument.map(Into::into),
                otherwise: otherwise.clone(),
            })
            .collect();
        let params = Params::parse(rules, entries.map(Into::into)).unwrap();
        let mut t = tool(false, &[]);
        t.routes = vec![Route::parse(method, path).unwrap().with_params(params)];
        t
    }

    fn args(v: serde_json::Value) -> JsonObject {
        v.as_object().cloned().unwrap_or_default()
    }

    /// F2 of issue 21: `pve_backup_vm` is a write, and destructive when
    /// asked to prune, for the policy and everything that follows it.
    #[test]
    fn a_calls_arguments_can_make_its_write_destructive() {
        let backup = with_params(
            "POST",
            "/nodes/{node}/vzdump",
            &[
                ("vmid", Some("vmid"), Otherwise::Absent),
                ("remove", Some("prune"), Otherwise::OneOf(vec!["0".into()])),
            ],
            None,
        );
        assert_eq!(Tier::of(&backup), Tier::Write);
        assert_eq!(Tier::worst(&backup), Tier::Destructive);
        assert_eq!(raised_by(&backup), ["prune"]);
        let call = |v| Tier::of_call(&backup, &args(v));
        assert_eq!(call(serde_json::json!({"vmid": 100})), Tier::Write);
        assert_eq!(
            call(serde_json::json!({"vmid": 100, "prune": false})),
            Tier::Write
        );
        assert_eq!(
            call(serde_json::json!({"vmid": 100, "prune": true})),
            Tier::Destructive
        );

        // A configuration's entries: a delete or lifting protection destroys.
        let config = with_params(
            "PUT",
            "/nodes/{node}/qemu/{vmid}/config",
            &[],
            Some("config"),
        );
        assert_eq!(raised_by(&config), ["config.delete", "config.protection"]);
        let call = |v| Tier::of_call(&config, &args(v));
        assert_eq!(
            call(serde_json::json!({"config": {"description": "x"}})),
            Tier::Write
        );
        assert_eq!(
            call(serde_json::json!({"config": {"protection": 1}})),
            Tier::Write
        );
        assert_eq!(
            call(serde_json::json!({"config": {"protection": false}})),
            Tier::Destructive
        );
        assert_eq!(
            call(serde_json::json!({"config": {"delete": "unused0"}})),
            Tier::Destructive
        );
    }

    /// A component that declares a destructive parameter as its own to
    /// choose is destructive whatever the call: the host's table decides.
    #[test]
    fn a_destructive_parameter_the_tool_chooses_makes_it_destructive() {
        let create = with_params(
            "POST",
            "/nodes/{node}/qemu",
            &[
                ("vmid", Some("vmid"), Otherwise::Absent),
                ("force", None, Otherwise::Free(ValueKind::Boolean)),
            ],
            None,
        );
        assert_eq!(Tier::of(&create), Tier::Destructive);
        let harmless = with_params(
            "POST",
            "/nodes/{node}/qemu",
            &[("force", None, Otherwise::OneOf(vec!["0".into()]))],
            None,
        );
        assert_eq!(Tier::of(&harmless), Tier::Write);
        assert_eq!(Tier::worst(&harmless), Tier::Write);
        // A value no argument names and the host cannot judge: destructive,
        // unless it is a config digest.
        let chosen = with_params(
            "PUT",
            "/nodes/{node}/qemu/{vmid}/config",
            &[
                ("digest", None, Otherwise::Free(ValueKind::Text(64))),
                ("hookscript", None, Otherwise::Free(ValueKind::Text(128))),
            ],
            None,
        );
        assert_eq!(Tier::of(&chosen), Tier::Destructive);
        let digest = with_params(
            "PUT",
            "/nodes/{node}/qemu/{vmid}/config",
            &[("digest", None, Otherwise::Free(ValueKind::Text(64)))],
            None,
        );
        assert_eq!(Tier::of(&digest), Tier::Write);
        // Bound to an argument with a free fallback: the tool's call
        // without it sends a chosen value, so the tool is destructive, and
        // so is every call of it (a tool's tier is its mildest call's).
        let fallback = with_params(
            "POST",
            "/nodes/{node}/qemu/{vmid}/snapshot",
            &[(
                "description",
                Some("description"),
                Otherwise::Free(ValueKind::Text(64)),
            )],
            None,
        );
        assert_eq!(Tier::of(&fallback), Tier::Destructive);
        assert_eq!(
            Tier::of_call(&fallback, &args(serde_json::json!({"description": "x"}))),
            Tier::Destructive
        );
    }

    #[test]
    fn destructive_hint_raises_the_tier_and_read_only_hint_lowers_nothing() {
        assert_eq!(Tier::of(&tool(true, &[])), Tier::Destructive);
        assert_eq!(
            Tier::of(&tool(
                true,
                &[("POST", "/nodes/{node}/qemu/{vmid}/status/start")]
            )),
            Tier::Destructive
        );
        // `tool` claims readOnlyHint; its routes decide anyway.
        assert_eq!(
            Tier::of(&tool(false, &[("DELETE", "/nodes/{node}/qemu/{vmid}")])),
            Tier::Destructive
        );
    }
}

#[cfg(test)]
mod conditional_tests {
    use serde_json::json;

    use super::*;

    /// A firewall rule tool: the same write at three scopes, each route
    /// applying to one value of `scope`.
    fn firewall_tool() -> ToolInfo {
        let mut tool = ToolInfo::sample(
            "fw",
            &[
                ("POST", "/cluster/firewall/rules"),
                ("POST", "/nodes/{node}/firewall/rules"),
                ("POST", "/nodes/{node}/{vm_type}/{vmid}/firewall/rules"),
            ],
        );
        let scopes = ["cluster", "node", "guest"];
        tool.routes = std::mem::take(&mut tool.routes)
            .into_iter()
            .zip(scopes)
            .map(|(r, s)| r.applying_when("scope".into(), s.into()))
            .collect();
        tool
    }

    fn args(v: serde_json::Value) -> JsonObject {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn a_call_is_ranked_by_the_routes_its_scope_picks() {
        let tool = firewall_tool();
        assert_eq!(Tier::of(&tool), Tier::Write, "the mildest choice: a guest");
        assert_eq!(Tier::worst(&tool), Tier::Destructive);
        assert_eq!(raised_by(&tool), vec!["scope".to_string()]);
        for (scope, want) in [
            ("guest", Tier::Write),
            ("node", Tier::Destructive),
            ("cluster", Tier::Destructive),
        ] {
            let call = args(json!({"scope": scope, "vmid": 100}));
            assert_eq!(Tier::of_call(&tool, &call), want, "{scope}");
        }
    }

    #[test]
    fn a_route_admits_nothing_for_a_call_it_does_not_apply_to() {
        let tool = firewall_tool();
        let cluster = &tool.routes[0];
        let post = http::Method::POST;
        let path = "/cluster/firewall/rules";
        assert!(
            cluster
                .bind(&args(json!({"scope": "cluster"})))
                .admits(&post, path)
        );
        for other in [json!({"scope": "guest"}), json!({}), json!({"scope": 1})] {
            assert!(
                !cluster.bind(&args(other.clone())).admits(&post, path),
                "{other}"
            );
        }
        // The node route, for a guest-scope call that names no node, would
        // otherwise admit every node's rules.
        let node = &tool.routes[1];
        let guest_call = args(json!({"scope": "guest", "vmid": 100}));
        assert!(
            !node
                .bind(&guest_call)
                .admits(&post, "/nodes/pve1/firewall/rules")
        );
        assert!(
            tool.routes[2]
                .bind(&guest_call)
                .admits(&post, "/nodes/pve1/qemu/100/firewall/rules")
        );
        assert!(cluster.to_string().ends_with("(scope = cluster)"));
        // A route that does not apply leaves the call's reads alone.
        assert!(!cluster.bind(&guest_call).binds_reads());
    }

    #[test]
    fn only_cluster_and_node_firewall_writes_are_destructive() {
        let route = |m: &str, p: &str| Route::parse(m, p).unwrap();
        assert!(is_destructive(&route("PUT", "/cluster/firewall/options")));
        assert!(is_destructive(&route(
            "POST",
            "/nodes/{node}/firewall/rules"
        )));
        assert!(is_destructive(&route(
            "PUT",
            "/nodes/{node}/firewall/rules/{vmid}"
        )));
        assert!(!is_destructive(&route(
            "POST",
            "/nodes/{node}/{vm_type}/{vmid}/firewall/rules"
        )));
        assert!(!is_destructive(&route(
            "PUT",
            "/nodes/{node}/qemu/{vmid}/firewall/options"
        )));
    }
}
