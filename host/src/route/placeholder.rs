//! What a route's `{name}` placeholder may stand for when the call leaves
//! its argument out: PVE's own pattern for that kind of path segment.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// A call's arguments (the same type as `tools::JsonObject`, named here so
/// `tools`, which holds routes, and this module do not use each other).
pub(crate) type JsonObject = serde_json::Map<String, Value>;

/// What a placeholder may stand for when the call leaves its argument out
/// (the tool resolves it itself, as it does `node` from `vmid`): PVE's own
/// pattern for that kind of path segment. A name not in this table cannot
/// be a placeholder, so a component cannot declare a segment that matches
/// anything.
pub(super) const PLACEHOLDERS: &[(&str, &str)] = &[
    // PVE's `pve-node` format; `localhost` is refused below.
    ("node", r"[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?"),
    ("target", r"[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?"),
    // `pve-vmid`: 100 to 999999999.
    ("vmid", r"[1-9][0-9]{2,8}"),
    ("newid", r"[1-9][0-9]{2,8}"),
    ("source_vmid", r"[1-9][0-9]{2,8}"),
    ("vm_type", r"qemu|lxc"),
    // `pve-configid`, as PVE checks snapshot names.
    ("snapname", r"[A-Za-z][A-Za-z0-9_\-]{0,39}"),
    // `pve-storage-id`.
    ("storage", r"[a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]"),
    // `pve-poolid` without nesting: letters, digits, `-` and `_`.
    ("poolid", r"[A-Za-z0-9\-_]{1,64}"),
    // `pve-replication-job-id`: the guest's vmid, `-`, the job number.
    ("job", r"[1-9][0-9]{2,8}-[0-9]{1,9}"),
    // An HA resource: `vm:100` or `ct:101`.
    ("sid", r"(vm|ct):[1-9][0-9]{2,8}"),
    // A firewall rule's position in its ruleset.
    ("pos", r"[0-9]{1,5}"),
    // `pve-volume-id`: the one segment that may hold a `/`.
    ("volid", crate::endpoint::VOLID_PATTERN),
    // A task's UPID, as PVE formats it.
    (
        "upid",
        r"UPID:[a-zA-Z0-9\-]+:[0-9A-Fa-f]{8}:[0-9A-Fa-f]{8,9}:([0-9A-Fa-f]{8,9}:)?[0-9A-Fa-f]{8}:[a-zA-Z0-9\-_]+:[^:/\s]*:[^:/\s]+:",
    ),
];

static PATTERNS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    PLACEHOLDERS
        .iter()
        .map(|(name, pattern)| {
            let anchored = format!("^(?:{pattern})$");
            // A fixed table, not input: `every_builtin_pattern_compiles`.
            let regex = Regex::new(&anchored).expect("the built-in route patterns compile");
            (*name, regex)
        })
        .collect()
});

/// PVE's own pattern for the path segment `name` (e.g. `node`, `upid`).
pub(crate) fn pattern(name: &str) -> Option<&'static Regex> {
    PATTERNS.iter().find(|(n, _)| *n == name).map(|(_, r)| r)
}

/// Proxmox reads `localhost` as whichever node answers, so it never stands
/// for a node in a route.
pub(crate) fn is_localhost(name: &str, segment: &str) -> bool {
    matches!(name, "node" | "target") && segment.eq_ignore_ascii_case("localhost")
}
