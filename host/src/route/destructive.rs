//! The parameters that destroy data on a write the path alone calls
//! harmless (the shared reference's write endpoints and their risk
//! tiers): `force` on a create overwrites a guest, `remove` on vzdump
//! deletes backups, `delete` on a config can destroy a disk. The host knows
//! them itself, so a component cannot declare them away: a call that can
//! send one with a harmful value is destructive (`crate::tier`).

use http::Method;

/// One parameter that can make a write destructive.
pub struct DestructiveParam {
    /// The write's method.
    pub method: Method,
    /// The last segments of its path (`"*"`: any one segment).
    pub tail: &'static [&'static str],
    /// Proxmox's name for the parameter.
    pub name: &'static str,
    /// Its values that harm nothing; any other value is destructive.
    pub harmless: &'static [&'static str],
    /// Proxmox's default, when it is left out, is harmful: every request
    /// of a route that may send this write must carry it (harmlessly,
    /// unless the call is destructive).
    pub required: bool,
    /// Why, for the docs and `pve-mcp tools`.
    pub why: &'static str,
}

const fn param(
    method: Method,
    tail: &'static [&'static str],
    name: &'static str,
    harmless: &'static [&'static str],
    why: &'static str,
) -> DestructiveParam {
    DestructiveParam {
        method,
        tail,
        name,
        harmless,
        required: false,
        why,
    }
}

/// Every destructive parameter the host knows.
pub const DESTRUCTIVE_PARAMS: &[DestructiveParam] = &[
    param(
        Method::POST,
        &["qemu"],
        "archive",
        &[],
        "creates the VM from a backup archive: a restore",
    ),
    param(
        Method::POST,
        &["qemu"],
        "force",
        &["0"],
        "overwrites the VM that has this id, destroying its disks",
    ),
    param(
        Method::POST,
        &["lxc"],
        "force",
        &["0"],
        "overwrites the container that has this id, destroying its volumes",
    ),
    param(
        Method::POST,
        &["lxc"],
        "restore",
        &["0"],
        "creates the container from a backup archive: a restore",
    ),
    DestructiveParam {
        method: Method::POST,
        tail: &["vzdump"],
        name: "remove",
        harmless: &["0"],
        required: true,
        why: "deletes older backups beyond the storage's retention; Proxmox does so unless told \
              remove=0",
    },
    param(
        Method::POST,
        &["vzdump"],
        "prune-backups",
        &[],
        "sets which older backups the run deletes",
    ),
    param(
        Method::PUT,
        &["config"],
        "delete",
        &[],
        "removes configuration keys; removing an unused disk's key destroys the disk",
    ),
    param(
        Method::POST,
        &["config"],
        "delete",
        &[],
        "removes configuration keys; removing an unused disk's key destroys the disk",
    ),
    param(
        Method::PUT,
        &["config"],
        "protection",
        &["1"],
        "lifts the guard that stops the guest and its disks from being removed",
    ),
    param(
        Method::POST,
        &["config"],
        "protection",
        &["1"],
        "lifts the guard that stops the guest and its disks from being removed",
    ),
    param(
        Method::POST,
        &["move_disk"],
        "delete",
        &["0"],
        "deletes the source disk after the copy",
    ),
    param(
        Method::POST,
        &["move_volume"],
        "delete",
        &["0"],
        "deletes the source volume after the copy",
    ),
];

/// The parameters a tool may choose the value of itself without its call
/// being destructive: a config's `digest` only guards a write against a
/// concurrent change. Any other free parameter carries what no argument
/// names, so the host cannot tell what it does: such a call is ranked
/// destructive, which only its tool's own rule enables.
pub const HARMLESS_FREE: &[&str] = &["digest"];
