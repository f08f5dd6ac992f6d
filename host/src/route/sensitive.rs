//! The sensitive parts of the Proxmox API: paths where one request can
//! take over the cluster, a node or a guest, or read secrets (the shared
//! reference's `pve_api_request` section, "Sensitive paths"). A call's own
//! request ([`super::request::ApiRequest`]) into one of these classes is refused
//! unless the tool's own policy rule names the class
//! (`sensitive = ["guest-agent"]`); the `"*"` table and `default` never
//! open one.
//!
//! Each class is a list of path patterns: a literal segment, `*` for any
//! one segment, `a|b` for either, and a final `**` for anything below
//! (or nothing). Methods: [`Methods::Any`] for a path whose reads leak
//! (shell sockets, guest files, logs, credential stores), else
//! [`Methods::Writes`].
//!
//! `host/tests/sensitive_schema.rs` walks every method and path of the
//! official API schema and fails on a write that is in no class and not on
//! its list of ordinary writes (each with its reason), so a path Proxmox
//! adds is judged rather than left open by default.

use super::request::ApiRequest;

/// Which methods of a class's paths are sensitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Methods {
    /// Every method, GET included.
    Any,
    /// POST, PUT and DELETE.
    Writes,
}

/// One group of paths.
#[derive(Debug)]
pub struct Pattern {
    /// Which methods.
    pub methods: Methods,
    /// The path's segments below `/api2/json`.
    pub path: &'static [&'static str],
}

/// A class of sensitive requests, named as a policy rule opens it.
#[derive(Debug)]
pub struct Class {
    /// The name in `sensitive = [...]`, e.g. `guest-agent`.
    pub name: &'static str,
    /// Why it is sensitive, for the refusal, the docs and `policy check`.
    pub why: &'static str,
    /// The requests it holds.
    pub patterns: &'static [Pattern],
}

const fn any(path: &'static [&'static str]) -> Pattern {
    Pattern {
        methods: Methods::Any,
        path,
    }
}

const fn writes(path: &'static [&'static str]) -> Pattern {
    Pattern {
        methods: Methods::Writes,
        path,
    }
}

/// A guest's path: `/nodes/{node}/{qemu|lxc}/{vmid}`.
const GUEST: [&str; 4] = ["nodes", "*", "qemu|lxc", "*"];

/// Every class, in the order the docs list them.
pub const CLASSES: &[Class] = &[
    Class {
        name: "access",
        why: "users, groups, roles, realms, API tokens, ACLs, passwords, TFA and tickets: one \
              write grants any privilege, and a new token's secret is in the answer (the \
              token's own `/access/permissions` is an ordinary read: every client asks it)",
        patterns: &[
            any(&["access"]),
            any(&[
                "access",
                "users|groups|roles|acl|domains|openid|tfa|ticket|vncticket|password",
                "**",
            ]),
            writes(&["access", "**"]),
        ],
    },
    Class {
        name: "node-shell",
        why: "a root shell on the node (termproxy, vncshell, spiceshell and their websocket), \
              or /execute, which runs a batch of API calls as root",
        patterns: &[any(&[
            "nodes",
            "*",
            "execute|termproxy|vncshell|spiceshell|vncwebsocket",
        ])],
    },
    Class {
        name: "guest-console",
        why: "a guest's console, keyboard or QEMU monitor: whoever holds the ticket types into \
              the guest",
        patterns: &[any(&[
            GUEST[0],
            GUEST[1],
            GUEST[2],
            GUEST[3],
            "termproxy|vncproxy|spiceproxy|vncwebsocket|sendkey|monitor",
        ])],
    },
    Class {
        name: "guest-agent",
        why: "commands, files and passwords inside a VM through its guest agent (exec, \
              exec-status, file-read, file-write, set-user-password, and the generic agent \
              command)",
        patterns: &[
            any(&["nodes", "*", "qemu", "*", "agent"]),
            any(&[
                "nodes",
                "*",
                "qemu",
                "*",
                "agent",
                "exec|exec-status|file-read|file-write|set-user-password",
            ]),
        ],
    },
    Class {
        name: "migration-tunnel",
        why: "a raw migration tunnel into the cluster, or a migration to another cluster",
        patterns: &[any(&[
            GUEST[0],
            GUEST[1],
            GUEST[2],
            GUEST[3],
            "mtunnel|mtunnelwebsocket|remote_migrate",
        ])],
    },
    Class {
        name: "guest-config",
        why: "creating a guest, changing its configuration, moving or reassigning its disks, \
              or making it a template: one write attaches a host disk, device or another \
              guest's disk, changes its network or drops its protection, and a create with \
              archive and force restores a backup over an existing guest",
        patterns: &[
            writes(&["nodes", "*", "qemu|lxc"]),
            writes(&[
                GUEST[0],
                GUEST[1],
                GUEST[2],
                GUEST[3],
                "config|move_disk|move_volume|template",
            ]),
        ],
    },
    Class {
        name: "guest-destroy",
        why: "deleting a guest or its disk images (unlink), deleting a snapshot, or rolling \
              back to one, which discards everything since: data no later call brings back",
        patterns: &[
            writes(&GUEST),
            writes(&[GUEST[0], GUEST[1], GUEST[2], GUEST[3], "unlink"]),
            writes(&[GUEST[0], GUEST[1], GUEST[2], GUEST[3], "snapshot", "*"]),
            writes(&[
                GUEST[0], GUEST[1], GUEST[2], GUEST[3], "snapshot", "*", "rollback",
            ]),
        ],
    },
    Class {
        name: "guest-secrets",
        why: "a VM's cloud-init data as the guest receives it (cloudinit/dump): user data, \
              passwords and keys, unredacted",
        patterns: &[any(&["nodes", "*", "qemu", "*", "cloudinit", "dump"])],
    },
    Class {
        name: "apt",
        why: "package repositories and updates on the node: code that runs as root",
        patterns: &[writes(&["nodes", "*", "apt", "**"])],
    },
    Class {
        name: "certificates",
        why: "the node's TLS certificates and ACME: a change restarts pveproxy and can \
              intercept every client",
        patterns: &[writes(&["nodes", "*", "certificates", "**"])],
    },
    Class {
        name: "cluster-join",
        why: "creating or joining a cluster, or adding and removing its nodes (the join takes \
              a peer's root password)",
        patterns: &[writes(&["cluster", "config", "**"])],
    },
    Class {
        name: "firewall",
        why: "firewall rules, options, groups, IP sets and aliases of the cluster, a node or a \
              guest: one rule can lock everyone out of the management network",
        patterns: &[
            writes(&["cluster", "firewall", "**"]),
            writes(&["nodes", "*", "firewall", "**"]),
            writes(&[GUEST[0], GUEST[1], GUEST[2], GUEST[3], "firewall", "**"]),
        ],
    },
    Class {
        name: "node-system",
        why: "the node itself: network, DNS, hosts, time, config, subscription, services \
              (stopping pveproxy cuts off the API), power, bulk start and stop, wake-on-LAN \
              and disks",
        patterns: &[
            writes(&[
                "nodes",
                "*",
                "network|dns|hosts|time|config|subscription|services|status|disks",
                "**",
            ]),
            writes(&[
                "nodes",
                "*",
                "startall|stopall|suspendall|migrateall|wakeonlan",
            ]),
        ],
    },
    Class {
        name: "node-logs",
        why: "the node's journal, syslog and system report, which hold what other processes \
              logged",
        patterns: &[any(&["nodes", "*", "journal|syslog|report"])],
    },
    Class {
        name: "ceph",
        why: "the cluster's Ceph: flags (pause stops all Ceph I/O, noout and norecover hold \
              recovery), monitors, managers, OSDs, pools, file systems and its services; one \
              write takes every guest on Ceph storage down",
        patterns: &[
            writes(&["cluster", "ceph", "**"]),
            writes(&["nodes", "*", "ceph", "**"]),
        ],
    },
    Class {
        name: "cluster-config",
        why: "cluster-wide jobs and options: HA, backup and replication jobs (and running a \
              node's replication now), SDN, resource mappings, pools, metric servers and bulk \
              actions on every guest",
        patterns: &[
            writes(&["cluster", "options"]),
            writes(&[
                "cluster",
                "ha|backup|replication|sdn|mapping|metrics|bulk-action|jobs",
                "**",
            ]),
            writes(&["pools", "**"]),
            writes(&["nodes", "*", "replication", "**"]),
        ],
    },
    Class {
        name: "credentials",
        why: "stores of third-party credentials: ACME accounts and DNS plugins, notification \
              endpoints, metric servers, and the metrics export that reuses the caller's own",
        patterns: &[
            any(&["cluster", "acme", "**"]),
            any(&["cluster", "notifications", "**"]),
            any(&["cluster", "metrics", "server", "**"]),
            any(&["cluster", "metrics", "export"]),
        ],
    },
    Class {
        name: "storage",
        why: "storage definitions, volumes and backups: deleting or overwriting disk images \
              and backups, pruning backups, a backup run (vzdump, whose remove and \
              prune-backups delete older ones), uploads, and file restore from backups",
        patterns: &[
            writes(&["storage", "**"]),
            writes(&["nodes", "*", "storage", "*", "content|upload", "**"]),
            writes(&["nodes", "*", "storage", "*", "prunebackups"]),
            writes(&["nodes", "*", "vzdump", "**"]),
            any(&["nodes", "*", "storage", "*", "file-restore", "**"]),
        ],
    },
    Class {
        name: "url-fetch",
        why: "the node fetches a URL or connects to a host the caller names (download-url, \
              oci-registry-pull, query-url-metadata, query-oci-repo-tags, aplinfo, and the \
              storage scans of NFS, CIFS, PBS, iSCSI and GlusterFS servers, reads included): a \
              request from inside the cluster's network",
        patterns: &[
            writes(&[
                "nodes",
                "*",
                "storage",
                "*",
                "download-url|oci-registry-pull",
            ]),
            any(&["nodes", "*", "query-url-metadata|query-oci-repo-tags"]),
            // glusterfs: PVE 8 has the scan, 9 dropped it; a cluster on 8
            // still answers it.
            any(&["nodes", "*", "scan", "nfs|cifs|pbs|iscsi|glusterfs"]),
            writes(&["nodes", "*", "aplinfo"]),
        ],
    },
];

/// The class by its policy name.
pub fn class(name: &str) -> Option<&'static Class> {
    CLASSES.iter().find(|c| c.name == name)
}

/// The names, for messages.
pub fn names() -> String {
    CLASSES
        .iter()
        .map(|c| c.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The class `request` falls in, if any: the first whose patterns hold it.
pub fn class_of(request: &ApiRequest) -> Option<&'static Class> {
    CLASSES
        .iter()
        .find(|c| c.patterns.iter().any(|p| p.holds(request)))
}

/// The class of the read side of which `segments` (decoded, below
/// `/api2/json`) is a GET: a path whose reads leak what is inside a guest
/// or a secret ([`Methods::Any`]). The gate lets such a GET out only for a
/// call whose tool declares it as a route, or whose own request it is.
pub fn guarded_read(segments: &[String]) -> Option<&'static Class> {
    CLASSES.iter().find(|c| {
        c.patterns
            .iter()
            .any(|p| p.methods == Methods::Any && matches(p.path, segments))
    })
}

impl Pattern {
    /// Whether this pattern alone holds `request`: its method and path.
    /// Public so a test can check each pattern against the API schema.
    pub fn holds(&self, request: &ApiRequest) -> bool {
        (self.methods == Methods::Any || !request.is_read())
            && matches(self.path, request.segments())
    }
}

/// Whether `segments` fit `pattern`. Matching is case-insensitive, as a
/// defence: Proxmox's router is case-sensitive, so another case reaches no
/// endpoint, and refusing it too costs nothing.
fn matches(pattern: &[&str], segments: &[String]) -> bool {
    match (pattern.split_first(), segments.split_first()) {
        (Some((&"**", _)), _) => true,
        (None, None) => true,
        (Some((want, rest)), Some((got, tail))) => {
            let fits = *want == "*"
                || want
                    .split('|')
                    .any(|alternative| alternative.eq_ignore_ascii_case(got));
            fits && matches(rest, tail)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(method: &str, path: &str) -> ApiRequest {
        let mut args = json!({"method": method, "path": path})
            .as_object()
            .cloned()
            .unwrap();
        ApiRequest::normalise(&mut args).unwrap()
    }

    fn class_name(method: &str, path: &str) -> Option<&'static str> {
        class_of(&request(method, path)).map(|c| c.name)
    }

    /// The examples the issue and the shared reference name, each in its
    /// class, and encodings that would hide them.
    #[test]
    fn the_named_sensitive_paths_are_in_their_classes() {
        for (method, path, want) in [
            ("GET", "/access", "access"),
            ("GET", "/access/users", "access"),
            ("PUT", "/access/acl", "access"),
            ("POST", "/access/users/a@pve/token/t", "access"),
            ("POST", "/access/permissions", "access"),
            ("POST", "/nodes/pve1/execute", "node-shell"),
            ("POST", "/nodes/pve1/termproxy", "node-shell"),
            ("GET", "/nodes/pve1/vncwebsocket", "node-shell"),
            ("POST", "/nodes/pve1/qemu/100/vncproxy", "guest-console"),
            ("POST", "/nodes/pve1/lxc/200/spiceproxy", "guest-console"),
            ("PUT", "/nodes/pve1/qemu/100/sendkey", "guest-console"),
            ("POST", "/nodes/pve1/qemu/100/monitor", "guest-console"),
            ("POST", "/nodes/pve1/qemu/100/agent/exec", "guest-agent"),
            (
                "GET",
                "/nodes/pve1/qemu/100/agent/exec-status",
                "guest-agent",
            ),
            ("GET", "/nodes/pve1/qemu/100/agent/file-read", "guest-agent"),
            (
                "POST",
                "/nodes/pve1/qemu/100/agent/file-write",
                "guest-agent",
            ),
            ("POST", "/nodes/pve1/qemu/100/agent", "guest-agent"),
            ("POST", "/nodes/pve1/lxc/200/mtunnel", "migration-tunnel"),
            ("POST", "/nodes/pve1/apt/update", "apt"),
            ("PUT", "/nodes/pve1/apt/repositories", "apt"),
            ("POST", "/nodes/pve1/certificates/custom", "certificates"),
            ("POST", "/cluster/config/join", "cluster-join"),
            ("DELETE", "/cluster/config/nodes/pve3", "cluster-join"),
            ("PUT", "/cluster/firewall/options", "firewall"),
            ("POST", "/nodes/pve1/firewall/rules", "firewall"),
            ("POST", "/nodes/pve1/qemu/100/firewall/rules", "firewall"),
            ("POST", "/nodes/pve1/services/pveproxy/stop", "node-system"),
            ("POST", "/nodes/pve1/status", "node-system"),
            ("POST", "/nodes/pve1/stopall", "node-system"),
            ("PUT", "/nodes/pve1/disks/wipedisk", "node-system"),
            ("GET", "/nodes/pve1/journal", "node-logs"),
            ("GET", "/nodes/pve1/syslog", "node-logs"),
            ("PUT", "/cluster/options", "cluster-config"),
            ("POST", "/cluster/ha/resources", "cluster-config"),
            ("POST", "/pools", "cluster-config"),
            ("GET", "/cluster/acme/plugins", "credentials"),
            ("GET", "/cluster/metrics/export", "credentials"),
            (
                "DELETE",
                "/nodes/pve1/storage/local/content/local:backup",
                "storage",
            ),
            ("POST", "/storage", "storage"),
            (
                "POST",
                "/nodes/pve1/storage/local/download-url",
                "url-fetch",
            ),
            ("GET", "/nodes/pve1/query-url-metadata", "url-fetch"),
            // Issue 21, F5: paths that fit a class and were in none.
            (
                "DELETE",
                "/nodes/pve1/storage/local/prunebackups",
                "storage",
            ),
            ("POST", "/nodes/pve1/vzdump", "storage"),
            ("PUT", "/cluster/ceph/flags/pause", "ceph"),
            ("PUT", "/cluster/ceph/flags", "ceph"),
            ("POST", "/nodes/pve1/ceph/osd/3/out", "ceph"),
            ("DELETE", "/nodes/pve1/ceph/pool/rbd", "ceph"),
            ("GET", "/nodes/pve1/scan/nfs", "url-fetch"),
            ("GET", "/nodes/pve1/scan/cifs", "url-fetch"),
            ("GET", "/nodes/pve1/scan/pbs", "url-fetch"),
            ("GET", "/nodes/pve1/scan/iscsi", "url-fetch"),
            ("GET", "/nodes/pve1/scan/glusterfs", "url-fetch"),
            ("GET", "/nodes/pve1/query-oci-repo-tags", "url-fetch"),
            (
                "POST",
                "/nodes/pve1/replication/100-0/schedule_now",
                "cluster-config",
            ),
            (
                "GET",
                "/nodes/pve1/qemu/100/cloudinit/dump",
                "guest-secrets",
            ),
            ("POST", "/nodes/pve1/qemu", "guest-config"),
            ("POST", "/nodes/pve1/lxc", "guest-config"),
            ("PUT", "/nodes/pve1/qemu/100/config", "guest-config"),
            ("POST", "/nodes/pve1/qemu/100/config", "guest-config"),
            ("PUT", "/nodes/pve1/lxc/200/config", "guest-config"),
            ("POST", "/nodes/pve1/qemu/100/move_disk", "guest-config"),
            ("POST", "/nodes/pve1/lxc/200/template", "guest-config"),
            ("DELETE", "/nodes/pve1/qemu/100", "guest-destroy"),
            ("DELETE", "/nodes/pve1/lxc/200", "guest-destroy"),
            (
                "DELETE",
                "/nodes/pve1/qemu/100/snapshot/before",
                "guest-destroy",
            ),
            (
                "POST",
                "/nodes/pve1/lxc/200/snapshot/before/rollback",
                "guest-destroy",
            ),
            ("PUT", "/nodes/pve1/qemu/100/unlink", "guest-destroy"),
            // Encoded, in another case, with a trailing slash: the same.
            ("POST", "/nodes/pve1/qemu/100/agent/%65xec", "guest-agent"),
            ("POST", "/nodes/pve1/qemu/100/AGENT/exec", "guest-agent"),
            ("post", "api2/json/access/acl/", "access"),
        ] {
            assert_eq!(class_name(method, path), Some(want), "{method} {path}");
        }
    }

    #[test]
    fn ordinary_requests_are_in_no_class() {
        for (method, path) in [
            ("GET", "/version"),
            ("GET", "/cluster/resources"),
            ("GET", "/nodes/pve1/qemu/100/status/current"),
            ("POST", "/nodes/pve1/qemu/100/status/start"),
            ("GET", "/nodes/pve1/qemu/100"),
            ("GET", "/nodes/pve1/qemu/100/config"),
            ("GET", "/nodes/pve1/qemu/100/cloudinit"),
            ("POST", "/nodes/pve1/qemu/100/snapshot"),
            ("PUT", "/nodes/pve1/qemu/100/snapshot/before/config"),
            ("PUT", "/nodes/pve1/qemu/100/resize"),
            ("POST", "/nodes/pve1/qemu/100/migrate"),
            ("POST", "/nodes/pve1/qemu/100/clone"),
            ("GET", "/cluster/ceph/flags"),
            ("GET", "/nodes/pve1/ceph/status"),
            ("GET", "/nodes/pve1/scan/lvm"),
            ("GET", "/nodes/pve1/vzdump/defaults"),
            ("GET", "/nodes/pve1/storage/local/prunebackups"),
            ("GET", "/nodes/pve1/qemu/100/agent/network-get-interfaces"),
            ("GET", "/nodes/pve1/apt/update"),
            ("GET", "/nodes/pve1/firewall/rules"),
            ("GET", "/cluster/config/join"),
            ("GET", "/nodes/pve1/storage/local/content"),
            ("GET", "/cluster/ha/resources"),
            ("GET", "/nodes/pve1/network"),
            ("GET", "/access/permissions"),
        ] {
            assert_eq!(class_name(method, path), None, "{method} {path}");
        }
    }

    #[test]
    fn names_are_unique_and_found() {
        for c in CLASSES {
            assert_eq!(class(c.name).map(|f| f.name), Some(c.name));
            assert!(!c.why.is_empty() && !c.patterns.is_empty());
        }
        assert!(class("*").is_none());
    }
}
