//! The simulated cluster's state. Handlers render it into PVE's JSON shapes;
//! the write endpoints change it (and bump `generation`), mostly through
//! worker tasks ([`crate::work`]).

use std::collections::BTreeMap;
use std::sync::Mutex;

use bytes::Bytes;

use crate::Shapes;
use crate::perms::Acl;
use crate::release::Release;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GuestKind {
    Qemu,
    Lxc,
}

impl GuestKind {
    /// `type` in API output and the first part of resource ids.
    pub fn as_str(self) -> &'static str {
        match self {
            GuestKind::Qemu => "qemu",
            GuestKind::Lxc => "lxc",
        }
    }

    /// Directory of the guest's config under `/etc/pve/nodes/<node>/`.
    pub fn config_dir(self) -> &'static str {
        match self {
            GuestKind::Qemu => "qemu-server",
            GuestKind::Lxc => "lxc",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunState {
    Stopped,
    Running,
    /// QEMU only: the process runs (`status: running`) but QMP reports
    /// `paused`.
    Paused,
}

/// Counters of a running guest (all zero when stopped).
#[derive(Debug, Clone, Default)]
pub(crate) struct RunStats {
    pub pid: u32,
    pub uptime: u64,
    /// Fraction of `cpus`, 0..1.
    pub cpu: f64,
    pub mem: u64,
    pub netin: u64,
    pub netout: u64,
    pub diskread: u64,
    pub diskwrite: u64,
    /// LXC swap in use.
    pub swap: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct HaResource {
    pub group: Option<String>,
    pub state: String,
    /// Migrate back to the preferred node when it returns (PVE's default).
    pub failback: bool,
    /// PVE 9.2: the CRM may move it to balance the load.
    pub auto_rebalance: bool,
    /// `max_restart`, `max_relocate` and `comment` as `resources.cfg` holds
    /// them (`None`: not set; the HA manager then uses 1, 1 and none).
    pub max_restart: Option<u32>,
    pub max_relocate: Option<u32>,
    pub comment: Option<String>,
    /// Whether `resources.cfg` sets `state` / `failback` (else PVE's
    /// defaults `started` / 1 apply and reads leave the key out).
    pub state_set: bool,
    pub failback_set: bool,
    /// A migration or relocation the HA manager is carrying out
    /// ([`crate::ha`]).
    pub motion: Option<HaMotion>,
}

/// The HA manager moving a service: `migrate` or `relocate` to `target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HaMotion {
    pub cmd: &'static str,
    pub target: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Guest {
    pub vmid: u32,
    pub kind: GuestKind,
    pub node: String,
    /// Config `name` (QEMU) or `hostname` (LXC); `None` renders as PVE's
    /// default `VM <id>` / `CT<id>`.
    pub name: Option<String>,
    pub run: RunState,
    pub template: bool,
    pub lock: Option<String>,
    /// Semicolon-separated, as PVE stores and sends them.
    pub tags: Option<String>,
    pub pool: Option<String>,
    pub ha: Option<HaResource>,
    /// QEMU guest agent enabled in the config.
    pub agent: bool,
    pub sockets: u32,
    pub cores: u32,
    /// Configured memory in MiB.
    pub memory_mib: u64,
    /// QEMU balloon minimum in MiB (0 = ballooning off).
    pub balloon_mib: u64,
    /// LXC swap in MiB.
    pub swap_mib: u64,
    /// Boot disk (QEMU) or rootfs (LXC) size in bytes.
    pub maxdisk: u64,
    /// Used bytes of the rootfs (LXC; QEMU always reports 0).
    pub disk: u64,
    pub nics: u32,
    pub machine: &'static str,
    pub stats: RunStats,
    /// Config `ostype`.
    pub ostype: &'static str,
    /// Config `description` (the `#` comment lines).
    pub description: Option<String>,
    /// Start at boot (`onboot: 1`).
    pub onboot: bool,
    /// QEMU: the agent is enabled but does not answer (guest-ping times out).
    pub agent_hangs: bool,
    /// QEMU: the agent answers `network-get-interfaces` with its own
    /// error `(class, desc)`, which PVE passes through as HTTP 200.
    pub agent_error: Option<(&'static str, &'static str)>,
    /// LXC: raw `lxc.*` keys, which the config API returns as the list
    /// `"lxc": [[key, value], ...]`.
    pub raw_lxc: Vec<(&'static str, &'static str)>,
    /// QEMU: the seed's config has a cloud-init drive and
    /// `ciuser`/`cipassword`/`sshkeys` (once written, the config's drives
    /// tell: `handlers::has_cloudinit_drive`).
    pub cloudinit: bool,
    /// QEMU: PVE's `[special:cloudinit]` config section: the values of the
    /// cloud-init keys as the drive was last generated, for those changed
    /// since, and under `added` the keys set since. Empty when the drive is
    /// up to date.
    pub ci_changes: BTreeMap<String, String>,
    /// Snapshots in PVE's hash order; `current_parent` is the running
    /// state's parent.
    pub snapshots: Vec<Snapshot>,
    pub current_parent: Option<String>,
    /// The config file once a write changed it (or the guest was created
    /// through the API): every key but `lock`, `parent` and `template`,
    /// which come from the fields above. `None` renders the seed's config
    /// from the fields.
    pub conf: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub name: String,
    pub snaptime: u64,
    pub description: String,
    pub parent: Option<String>,
    /// QEMU: RAM state saved.
    pub vmstate: bool,
}

/// A volume listed by `/nodes/{node}/storage/{storage}/content`.
#[derive(Debug, Clone)]
pub(crate) struct Volume {
    pub storage: String,
    /// Node the volume lives on for local storages; `None` for shared ones.
    pub node: Option<String>,
    pub volid: String,
    pub content: &'static str,
    pub format: &'static str,
    pub size: u64,
    pub ctime: Option<u64>,
    pub vmid: Option<u32>,
    pub notes: Option<String>,
    pub protected: bool,
    /// `qemu` or `lxc` for backups.
    pub subtype: Option<&'static str>,
    /// PBS backups: the last verification's state (`ok`, `failed`).
    pub verification: Option<&'static str>,
    /// PBS backups: the encryption key's fingerprint.
    pub encrypted: Option<&'static str>,
}

/// A worker task in a node's task list.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub upid: String,
    pub node: String,
    pub pid: u32,
    pub pstart: u64,
    pub starttime: u64,
    pub ty: String,
    pub id: String,
    /// Full auth id as in the UPID (`user@realm` or `user@realm!token`).
    pub user: String,
    /// `None` while running.
    pub endtime: Option<u64>,
    /// Exit status (`OK`, `WARNINGS: n`, error text); `None` while running.
    pub status: Option<String>,
    /// Number of log lines before the final `TASK ...` line.
    pub log_lines: usize,
    /// The log as written so far, for tasks the write endpoints started
    /// (seeded tasks synthesise theirs from `log_lines`).
    pub log: Option<Vec<String>>,
}

impl Task {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        node: &str,
        pid: u32,
        pstart: u64,
        starttime: u64,
        ty: &str,
        id: &str,
        user: &str,
        result: Option<(u64, &str)>,
        log_lines: usize,
    ) -> Task {
        Task {
            upid: format!("UPID:{node}:{pid:08X}:{pstart:08X}:{starttime:08X}:{ty}:{id}:{user}:"),
            node: node.into(),
            pid,
            pstart,
            starttime,
            ty: ty.into(),
            id: id.into(),
            user: user.into(),
            endtime: result.map(|(d, _)| starttime + d),
            status: result.map(|(_, s)| s.to_string()),
            log_lines,
            log: None,
        }
    }
}

impl Guest {
    pub fn display_name(&self) -> String {
        match (&self.name, self.kind) {
            (Some(n), _) => n.clone(),
            (None, GuestKind::Qemu) => format!("VM {}", self.vmid),
            (None, GuestKind::Lxc) => format!("CT{}", self.vmid),
        }
    }

    pub fn cpus(&self) -> u32 {
        self.sockets.max(1) * self.cores.max(1)
    }

    pub fn maxmem(&self) -> u64 {
        self.memory_mib * 1024 * 1024
    }

    pub fn is_running(&self) -> bool {
        self.run != RunState::Stopped
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub name: String,
    pub nodeid: u32,
    pub ip: String,
    pub online: bool,
    /// Subscription level: "", "c", "b", "s" or "p".
    pub level: &'static str,
    pub cpu_model: &'static str,
    pub sockets: u32,
    pub cores: u32,
    pub threads: u32,
    pub mhz: &'static str,
    pub cpu: f64,
    pub wait: f64,
    pub loadavg: [&'static str; 3],
    pub maxmem: u64,
    pub mem: u64,
    pub swap_total: u64,
    pub swap_used: u64,
    pub ksm_shared: u64,
    pub rootfs_total: u64,
    pub rootfs_used: u64,
    pub uptime: u64,
    pub kernel_release: &'static str,
    pub kernel_version: &'static str,
    pub boot_efi: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Storage {
    pub id: String,
    pub plugintype: &'static str,
    /// Content types, sorted and comma-joined like PVE prints them.
    pub content: &'static str,
    pub shared: bool,
    /// Nodes it is enabled on; `None` means all.
    pub nodes: Option<Vec<String>>,
    pub total: u64,
    /// Used bytes per node (shared storages use the same for all).
    pub used: BTreeMap<String, u64>,
    /// Type-specific `storage.cfg` keys (`path`, `server`, `export`, ...).
    pub extra: Vec<(&'static str, &'static str)>,
}

#[derive(Debug, Clone)]
pub(crate) struct User {
    pub userid: String,
    pub password: Option<String>,
    pub acl: Acl,
}

#[derive(Debug, Clone)]
pub(crate) struct Token {
    /// `user@realm!name`.
    pub full_id: String,
    pub secret: String,
    pub acl: Acl,
}

/// Serialised `/cluster/resources` guest entries, rebuilt when the state's
/// generation moves on.
#[derive(Default)]
pub(crate) struct ResourceCache {
    pub generation: u64,
    /// `(vmid, JSON object)` in PVE's order (vmid sorted as a string).
    pub guests: Vec<(u32, Bytes)>,
    pub valid: bool,
}

pub(crate) struct Cluster {
    pub name: String,
    pub config_version: u32,
    /// The node this API endpoint "is" (answers locally, `local: 1`).
    pub local_node: String,
    /// The `pve-manager` release the nodes run (but those in `pve8_nodes`).
    pub release: Release,
    pub nodes: Vec<Node>,
    pub guests: BTreeMap<u32, Guest>,
    pub storages: Vec<Storage>,
    /// Resource pools (`user.cfg`); guests name theirs in [`Guest::pool`].
    pub pools: Vec<Pool>,
    pub users: Vec<User>,
    pub tokens: Vec<Token>,
    /// `false` for a standalone node (no corosync cluster).
    pub clustered: bool,
    pub volumes: Vec<Volume>,
    /// Every node's tasks, newest first.
    pub tasks: Vec<Task>,
    /// Which wire shapes the handlers answer in.
    pub shapes: Shapes,
    /// Bumped by every mutation; keys caches.
    pub generation: u64,
    /// Running worker tasks and their timing.
    pub work: crate::work::Work,
    pub resource_cache: Mutex<ResourceCache>,
    /// Nodes that run PVE 8 ([`crate::release::PVE8_VERSION`]) in a PVE 9
    /// cluster: their agent endpoints check `VM.Monitor` and `file-read`
    /// takes no `count`/`decode`/`offset`.
    pub pve8_nodes: Vec<String>,
    /// The inside of the VMs the guest agent was asked about, by vmid
    /// (seeded on first use by [`Cluster::guest_os_mut`]).
    pub guest_os: BTreeMap<u32, crate::guest_os::GuestOs>,
    /// Each node's `/etc/network/interfaces` (and pending `.new`).
    pub networks: BTreeMap<String, NodeNetwork>,
    /// The URL each downloaded file came from, by volid: its bytes (and so
    /// its checksums) are those of [`crate::handlers::download_bytes`].
    pub file_origins: BTreeMap<String, String>,
    /// Storage replication jobs (`replication.cfg`) and their state.
    pub replication: Vec<crate::replication::Job>,
    /// Each node's systemd journal, oldest first.
    pub journals: BTreeMap<String, Vec<crate::journal::Entry>>,
    /// The firewall's config files (`cluster.fw`, `host.fw`, `<vmid>.fw`).
    pub firewall: crate::firewall::Firewall,
    /// Whether the cluster runs Ceph (`pveceph init` done, monitors on every
    /// node, two OSDs per node).
    pub ceph: bool,
    /// The HA groups and rules (`ha/groups.cfg`, `ha/rules.cfg`); the HA
    /// resources are the guests' [`Guest::ha`].
    pub ha: crate::ha::HaConfig,
}

/// A resource pool. Its guests are those whose [`Guest::pool`] names it,
/// plus `orphans`: vmids added while no guest had them (PVE keeps them in
/// `user.cfg` and lists only existing guests).
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    /// `name`, or `parent/child` (up to three levels, PVE >= 8.1).
    pub id: String,
    pub comment: Option<String>,
    /// Storage members, sorted.
    pub storage: Vec<String>,
    pub orphans: std::collections::BTreeSet<u32>,
}

impl Pool {
    pub fn new(id: &str, comment: Option<&str>) -> Pool {
        Pool {
            id: id.to_string(),
            comment: comment.map(str::to_string),
            storage: Vec::new(),
            orphans: Default::default(),
        }
    }
}

/// A node's network configuration files and what the kernel has up.
#[derive(Debug, Clone)]
pub(crate) struct NodeNetwork {
    /// `/etc/network/interfaces`, as applied.
    pub applied: String,
    /// `/etc/network/interfaces.new`: changes written but not applied yet.
    pub pending: Option<String>,
    /// Modification times of the two files (for the diff's headers).
    pub mtimes: (u64, u64),
    /// Physical NICs (`ip link`), which PVE marks `exists`.
    pub physical: Vec<String>,
    /// Interfaces that are up, which PVE marks `active`.
    pub active: Vec<String>,
}

impl Cluster {
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The release `node` runs.
    pub fn release_of(&self, node: &str) -> Release {
        if self.release.major() >= 9 && self.pve8_nodes.iter().any(|n| n == node) {
            Release::new(crate::release::PVE8_VERSION)
        } else {
            self.release.clone()
        }
    }

    /// Whether `node` runs PVE 8 rather than 9.
    pub fn is_pve8(&self, node: &str) -> bool {
        self.release_of(node).major() == 8
    }

    /// The release of the node this API endpoint is (which answers the
    /// calls that are not proxied).
    pub fn local_release(&self) -> Release {
        self.release_of(&self.local_node)
    }

    pub fn pool(&self, id: &str) -> Option<&Pool> {
        self.pools.iter().find(|p| p.id == id)
    }

    /// The guest OS of VM `vmid`, seeded from the guest on first use.
    pub fn guest_os_mut(&mut self, vmid: u32) -> Option<&mut crate::guest_os::GuestOs> {
        if !self.guest_os.contains_key(&vmid) {
            let os = crate::guest_os::GuestOs::seed(self.guests.get(&vmid)?);
            self.guest_os.insert(vmid, os);
        }
        self.guest_os.get_mut(&vmid)
    }

    /// The guest with this vmid if its config lives on `node` with `kind`
    /// (PVE looks only in that node's config directory).
    pub fn guest_on(&self, node: &str, kind: GuestKind, vmid: &str) -> Option<&Guest> {
        let id: u32 = vmid.parse().ok()?;
        self.guests
            .get(&id)
            .filter(|g| g.node == node && g.kind == kind)
    }
}
