//! A tool's risk tier, decided by the host from what the tool may send:
//! the component's annotations can raise it (`destructiveHint`), never
//! lower it. The policy uses the tier to decide which rules may enable a
//! tool: `default = "read-only"` runs only [`Tier::Read`] tools, and a
//! [`Tier::Destructive`] tool runs only under its own
//! `[policy.tools.NAME]` table with an `action`.

use std::fmt;

use http::Method;

use crate::route::Route;
use crate::tools::ToolInfo;

/// How much harm a tool can do, as far as the host can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// It declares no routes: the egress gate lets it send nothing but
    /// `GET`, whatever the policy says.
    Read,
    /// It declares routes, none of them destructive.
    Write,
    /// It declares `destructiveHint`, or a route in [`DESTRUCTIVE`].
    Destructive,
}

impl Tier {
    /// The tier of a tool: the worst of its routes and its own claim.
    pub fn of(tool: &ToolInfo) -> Tier {
        if tool.annotations.destructive || tool.routes.iter().any(is_destructive) {
            Tier::Destructive
        } else if tool.routes.is_empty() {
            Tier::Read
        } else {
            Tier::Write
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
/// path (`"*"`: any one segment; no segments: any path).
pub struct DestructiveWrite {
    /// The method.
    pub method: Method,
    /// The path's last segments.
    pub tail: &'static [&'static str],
    /// Why it destroys, for the docs and tests.
    pub why: &'static str,
}

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
        why: "removes what the path names: a guest and its disks, a snapshot, a volume, a job",
    },
    DestructiveWrite {
        method: Method::POST,
        tail: &["snapshot", "*", "rollback"],
        why: "loses every change since the snapshot, disk and RAM",
    },
    DestructiveWrite {
        method: Method::PUT,
        tail: &["resize"],
        why: "a disk never shrinks back, and a size without a unit is bytes",
    },
    DestructiveWrite {
        method: Method::POST,
        tail: &["template"],
        why: "converting a guest to a template cannot be undone",
    },
    DestructiveWrite {
        method: Method::PUT,
        tail: &["unlink"],
        why: "destroys disk images",
    },
];

/// Whether some call of `route` could send a write in [`DESTRUCTIVE`].
pub fn is_destructive(route: &Route) -> bool {
    DESTRUCTIVE
        .iter()
        .any(|d| route.could_send(&d.method, d.tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Annotations;

    fn tool(destructive_hint: bool, routes: &[(&str, &str)]) -> ToolInfo {
        ToolInfo {
            name: "t".into(),
            title: "t".into(),
            description: String::new(),
            input_schema: Default::default(),
            output_schema: None,
            annotations: Annotations {
                // Claims to be harmless: the tier must not believe it.
                read_only: true,
                destructive: destructive_hint,
                idempotent: true,
                open_world: false,
            },
            routes: routes
                .iter()
                .map(|(m, p)| Route::parse(m, p).unwrap())
                .collect(),
            waits: false,
            privileges: Vec::new(),
            reads: Vec::new(),
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
