//! The deterministic clusters the simulator starts with (the standard seed
//! is tabulated in the crate documentation).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::perms::{Acl, AclEntry};
use crate::release::Release;
use crate::state::{
    Cluster, Guest, GuestKind, HaResource, Node, NodeNetwork, Pool, ResourceCache, RunState,
    RunStats, Snapshot, Storage, Task, Token, User, Volume,
};
use crate::{ClusterFlavor, Scenario, Shapes, shapes, tokens};

/// Guests the auditor token (`auditor@pve!mcp`) holds `VM.Audit` on. It has
/// no other privilege anywhere (no `Sys.Audit`, no `Datastore.Audit`).
pub const AUDITOR_VISIBLE_VMIDS: &[u32] = &[100, 101, 200];

pub(crate) const GIB: u64 = 1024 * 1024 * 1024;

/// Upper bound for the large scenario, keeping vmids valid and memory sane.
pub(crate) const MAX_GUESTS: usize = 1_000_000;

/// 2026-11-28 00:00:00 UTC: the seed's "last night".
pub(crate) const T0: u64 = 1_795_824_000;

/// UPID of the standard seed's nightly backup on `pve1`, whose log is 400+
/// lines long.
pub const LONG_LOG_UPID: &str = "UPID:pve1:000A3F1C:14497B40:6B0A2790:vzdump::root@pam:";

#[cfg(test)]
pub(crate) fn build(scenario: &Scenario) -> Cluster {
    build_flavor(scenario, &ClusterFlavor::Primary, Shapes::Schema)
}

/// The cluster to serve: the secondary one, or the primary in `shapes`.
pub(crate) fn build_flavor(scenario: &Scenario, flavor: &ClusterFlavor, shapes: Shapes) -> Cluster {
    if *flavor == ClusterFlavor::Secondary {
        return secondary();
    }
    let mut cluster = primary(scenario);
    if shapes == Shapes::Real {
        shapes::apply(&mut cluster);
    }
    cluster
}

fn primary(scenario: &Scenario) -> Cluster {
    let mut guests: BTreeMap<u32, Guest> =
        standard_guests().into_iter().map(|g| (g.vmid, g)).collect();
    if let Scenario::Large { guests: total } = scenario {
        let extra = (*total).min(MAX_GUESTS).saturating_sub(guests.len());
        for i in 0..extra {
            let g = generated_guest(i);
            guests.insert(g.vmid, g);
        }
    }
    let auditor_acl = Acl::Entries(
        AUDITOR_VISIBLE_VMIDS
            .iter()
            .map(|id| AclEntry {
                path: format!("/vms/{id}"),
                privs: vec!["VM.Audit"],
                propagate: true,
            })
            .collect(),
    );
    let mut production = Pool::new("production", Some("Production workloads"));
    production.storage = vec!["nfs-backup".into()];
    let mut cluster = Cluster {
        name: "demo-cluster".into(),
        config_version: 3,
        local_node: "pve1".into(),
        release: Release::new("9.1.5"),
        nodes: nodes(),
        guests,
        storages: storages(),
        pools: vec![production],
        users: vec![
            User {
                userid: tokens::TICKET_USER.into(),
                password: Some(tokens::TICKET_PASSWORD.into()),
                acl: Acl::Root,
            },
            User {
                userid: "auditor@pve".into(),
                password: None,
                acl: auditor_acl.clone(),
            },
        ],
        tokens: vec![
            Token {
                full_id: tokens::ADMIN_TOKEN_ID.into(),
                secret: tokens::ADMIN_TOKEN_SECRET.into(),
                acl: Acl::Root,
            },
            Token {
                full_id: tokens::AUDITOR_TOKEN_ID.into(),
                secret: tokens::AUDITOR_TOKEN_SECRET.into(),
                acl: auditor_acl,
            },
            Token {
                full_id: tokens::OPERATOR_TOKEN_ID.into(),
                secret: tokens::OPERATOR_TOKEN_SECRET.into(),
                acl: crate::perms::operator_acl(),
            },
        ],
        clustered: true,
        volumes: volumes(scenario),
        tasks: tasks(scenario),
        shapes: Shapes::Schema,
        generation: 0,
        work: crate::work::Work::default(),
        resource_cache: Mutex::new(ResourceCache::default()),
        pve8_nodes: Vec::new(),
        guest_os: BTreeMap::new(),
        networks: networks(&[
            ("pve1", "192.0.2.11"),
            ("pve2", "192.0.2.12"),
            ("pve3", "192.0.2.13"),
        ]),
        file_origins: file_origins(),
        replication: Vec::new(),
        journals: BTreeMap::new(),
        firewall: crate::firewall::seed_primary(),
        ceph: true,
        ha: crate::ha::seed(),
    };
    cluster.replication = crate::replication::seed(&cluster);
    cluster.journals = crate::journal_seed::seed(&cluster);
    cluster
}

/// Where the seeded files that PVE's appliance index offers came from:
/// downloading them again finds the right file already there.
fn file_origins() -> BTreeMap<String, String> {
    let tmpl = "debian-12-standard_12.12-1_amd64.tar.zst";
    BTreeMap::from([(
        format!("local:vztmpl/{tmpl}"),
        format!("http://download.proxmox.com/images/system/{tmpl}"),
    )])
}

/// A node's `/etc/network/interfaces` as PVE's installer and GUI write
/// it: two NICs, `vmbr0` on `eno1` with the node's address, and the
/// VLAN-aware `vmbr1` on `eno2` without one.
fn interfaces(ip: &str) -> String {
    let net = ip.rsplit_once('.').map_or(ip, |(n, _)| n);
    format!(
        "auto lo\n\
         iface lo inet loopback\n\
         \n\
         iface eno1 inet manual\n\
         \n\
         iface eno2 inet manual\n\
         \n\
         auto vmbr0\n\
         iface vmbr0 inet static\n\
         \taddress {ip}/24\n\
         \tgateway {net}.1\n\
         \tbridge-ports eno1\n\
         \tbridge-stp off\n\
         \tbridge-fd 0\n\
         #Management and guest LAN\n\
         \n\
         auto vmbr1\n\
         iface vmbr1 inet manual\n\
         \tbridge-ports eno2\n\
         \tbridge-stp off\n\
         \tbridge-fd 0\n\
         \tbridge-vlan-aware yes\n\
         \tbridge-vids 2-4094\n\
         #VLAN trunk for guests\n\
         \n\
         source /etc/network/interfaces.d/*\n"
    )
}

/// Each node's network files; `pve2` has a change written but not applied
/// (a new bridge `vmbr2` for a storage network), as the GUI leaves it
/// until "Apply Configuration".
pub(crate) fn networks(nodes: &[(&str, &str)]) -> BTreeMap<String, NodeNetwork> {
    nodes
        .iter()
        .map(|(node, ip)| {
            let applied = interfaces(ip);
            let host = ip.rsplit('.').next().unwrap_or("1");
            let pending = (*node == "pve2").then(|| {
                applied.replace(
                    "\nsource /etc/network/interfaces.d/*\n",
                    &format!(
                        "\nauto vmbr2\n\
                         iface vmbr2 inet static\n\
                         \taddress 10.10.10.{host}/24\n\
                         \tbridge-ports none\n\
                         \tbridge-stp off\n\
                         \tbridge-fd 0\n\
                         \tmtu 9000\n\
                         #Storage network\n\
                         \n\
                         source /etc/network/interfaces.d/*\n"
                    ),
                )
            });
            let net = NodeNetwork {
                applied,
                pending,
                mtimes: (T0 - 200 * 86_400 + 7_261, T0 - 86_400 + 52_911),
                physical: vec!["eno1".into(), "eno2".into()],
                active: ["eno1", "eno2", "vmbr0", "vmbr1"]
                    .map(String::from)
                    .to_vec(),
            };
            (node.to_string(), net)
        })
        .collect()
}

fn nodes() -> Vec<Node> {
    vec![
        Node {
            name: "pve1".into(),
            nodeid: 1,
            ip: "192.0.2.11".into(),
            online: true,
            level: "c",
            cpu_model: "AMD EPYC 7302P 16-Core Processor",
            sockets: 1,
            cores: 16,
            threads: 32,
            mhz: "2999.998",
            cpu: 0.0734126984126984,
            wait: 0.00132275132275132,
            loadavg: ["1.52", "1.38", "1.29"],
            maxmem: 134_924_009_472,
            mem: 48_318_382_080,
            swap_total: 8_589_930_496,
            swap_used: 268_435_456,
            ksm_shared: 0,
            rootfs_total: 100_861_726_720,
            rootfs_used: 14_298_456_064,
            uptime: 3_456_789,
            kernel_release: "6.17.2-1-pve",
            kernel_version: "#1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (2025-11-18T14:27Z)",
            boot_efi: true,
        },
        Node {
            name: "pve2".into(),
            nodeid: 2,
            ip: "192.0.2.12".into(),
            online: true,
            level: "c",
            cpu_model: "Intel(R) Xeon(R) E-2388G CPU @ 3.20GHz",
            sockets: 1,
            cores: 8,
            threads: 16,
            mhz: "3200.000",
            cpu: 0.127450980392157,
            wait: 0.0,
            loadavg: ["2.07", "1.91", "1.85"],
            maxmem: 67_278_131_200,
            mem: 27_917_287_424,
            swap_total: 8_589_930_496,
            swap_used: 0,
            ksm_shared: 1_073_741_824,
            rootfs_total: 67_317_858_304,
            rootfs_used: 9_664_446_464,
            uptime: 1_209_633,
            kernel_release: "6.17.2-1-pve",
            kernel_version: "#1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (2025-11-18T14:27Z)",
            boot_efi: false,
        },
        Node {
            name: "pve3".into(),
            nodeid: 3,
            ip: "192.0.2.13".into(),
            online: false,
            level: "",
            cpu_model: "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz",
            sockets: 1,
            cores: 6,
            threads: 12,
            mhz: "3192.000",
            cpu: 0.0,
            wait: 0.0,
            loadavg: ["0.00", "0.00", "0.00"],
            maxmem: 33_520_029_696,
            mem: 0,
            swap_total: 0,
            swap_used: 0,
            ksm_shared: 0,
            rootfs_total: 67_317_858_304,
            rootfs_used: 7_516_192_768,
            uptime: 0,
            kernel_release: "6.14.11-4-pve",
            kernel_version: "#1 SMP PREEMPT_DYNAMIC PMX 6.14.11-4 (2025-10-10T08:04Z)",
            boot_efi: true,
        },
    ]
}

fn storages() -> Vec<Storage> {
    let per_node = |a: u64, b: u64, c: u64| {
        BTreeMap::from([
            ("pve1".to_string(), a),
            ("pve2".to_string(), b),
            ("pve3".to_string(), c),
        ])
    };
    vec![
        Storage {
            id: "local".into(),
            plugintype: "dir",
            content: "backup,iso,vztmpl",
            shared: false,
            nodes: None,
            total: 100_861_726_720,
            used: per_node(14_298_456_064, 9_664_446_464, 7_516_192_768),
            extra: vec![("path", "/var/lib/vz"), ("prune-backups", "keep-all=1")],
        },
        Storage {
            id: "local-lvm".into(),
            plugintype: "lvmthin",
            content: "images,rootdir",
            shared: false,
            nodes: None,
            total: 1_836_996_870_144,
            used: per_node(412_316_860_416, 287_762_808_832, 96_636_764_160),
            extra: vec![("thinpool", "data"), ("vgname", "pve")],
        },
        Storage {
            id: "nfs-backup".into(),
            plugintype: "nfs",
            content: "backup",
            shared: true,
            nodes: None,
            total: 7_999_376_588_800,
            used: per_node(2_345_052_143_616, 2_345_052_143_616, 2_345_052_143_616),
            extra: vec![
                ("server", "192.0.2.50"),
                ("export", "/export/pve-backup"),
                ("path", "/mnt/pve/nfs-backup"),
                ("options", "vers=4.2"),
                ("prune-backups", "keep-daily=7,keep-weekly=4"),
            ],
        },
        // Shared file storage for guest disks (raw or qcow2) and imports:
        // where disks move to and `download-url` puts `import` files.
        Storage {
            id: "nfs-images".into(),
            plugintype: "nfs",
            content: "images,import,rootdir",
            shared: true,
            nodes: None,
            total: 3_998_614_552_576,
            used: per_node(601_295_421_440, 601_295_421_440, 601_295_421_440),
            extra: vec![
                ("server", "192.0.2.50"),
                ("export", "/export/pve-images"),
                ("path", "/mnt/pve/nfs-images"),
                ("options", "vers=4.2"),
            ],
        },
    ]
}

/// A guest with fields every seed entry shares; callers override the rest.
pub(crate) fn base(vmid: u32, kind: GuestKind, node: &str, name: Option<&str>) -> Guest {
    Guest {
        vmid,
        kind,
        node: node.into(),
        name: name.map(str::to_string),
        run: RunState::Stopped,
        template: false,
        lock: None,
        tags: None,
        pool: None,
        ha: None,
        agent: false,
        sockets: 1,
        cores: 2,
        memory_mib: 2048,
        balloon_mib: 0,
        swap_mib: 512,
        maxdisk: 32 * GIB,
        disk: 0,
        nics: 1,
        machine: "pc-i440fx-10.1+pve0",
        stats: RunStats::default(),
        ostype: match kind {
            GuestKind::Qemu => "l26",
            GuestKind::Lxc => "debian",
        },
        description: None,
        onboot: false,
        agent_hangs: false,
        agent_error: None,
        raw_lxc: Vec::new(),
        cloudinit: false,
        ci_changes: BTreeMap::new(),
        snapshots: Vec::new(),
        current_parent: None,
        conf: None,
    }
}

pub(crate) fn running(g: &mut Guest, uptime: u64, cpu: f64, mem: u64) {
    g.run = RunState::Running;
    let v = u64::from(g.vmid);
    g.stats = RunStats {
        pid: 1000 + (mix(v, 1) % 3_000_000) as u32,
        uptime,
        cpu,
        mem,
        netin: 1_000_000 + mix(v, 2) % 90_000_000_000,
        netout: 1_000_000 + mix(v, 3) % 40_000_000_000,
        diskread: 10_000_000 + mix(v, 4) % 200_000_000_000,
        diskwrite: 10_000_000 + mix(v, 5) % 300_000_000_000,
        swap: 0,
    };
}

fn ha(group: Option<&str>) -> Option<HaResource> {
    Some(HaResource {
        group: group.map(str::to_string),
        state: "started".into(),
        failback: true,
        auto_rebalance: false,
        max_restart: Some(1),
        max_relocate: Some(1),
        comment: None,
        state_set: true,
        failback_set: true,
        motion: None,
    })
}

fn standard_guests() -> Vec<Guest> {
    use GuestKind::{Lxc, Qemu};
    let mut out = Vec::new();

    let mut g = base(100, Qemu, "pve1", Some("web-frontend-01"));
    running(&mut g, 1_728_432, 0.0231842, 2_894_548_992);
    g.tags = Some("prod;web".into());
    g.pool = Some("production".into());
    g.ha = ha(Some("prod-ha"));
    if let Some(h) = &mut g.ha {
        h.comment = Some("customer-facing web tier".into());
    }
    g.agent = true;
    g.memory_mib = 4096;
    g.balloon_mib = 2048;
    g.onboot = true;
    g.snapshots = vec![
        snap(
            "post_upgrade",
            T0 - 20 * 86_400,
            "after apt full-upgrade",
            Some("pre_upgrade"),
            false,
        ),
        snap(
            "test_branch",
            T0 - 25 * 86_400,
            "experiment: nginx 1.27",
            Some("pre_upgrade"),
            true,
        ),
        snap(
            "pre_upgrade",
            T0 - 30 * 86_400,
            "before dist-upgrade\nticket OPS-1234",
            None,
            false,
        ),
        snap(
            "kernel_617",
            T0 - 5 * 86_400,
            "before kernel 6.17",
            Some("post_upgrade"),
            true,
        ),
    ];
    g.current_parent = Some("kernel_617".into());
    out.push(g);

    let mut g = base(101, Qemu, "pve1", Some("db-primary"));
    running(&mut g, 1_728_401, 0.184213, 15_032_385_536);
    g.tags = Some("db;prod".into());
    g.pool = Some("production".into());
    g.sockets = 2;
    g.cores = 4;
    g.memory_mib = 16384;
    g.maxdisk = 128 * GIB;
    g.nics = 2;
    g.onboot = true;
    g.description = Some("Primary PostgreSQL 16\nOwner: dba team\n".into());
    out.push(g);

    let mut g = base(102, Qemu, "pve2", Some("win-build-agent"));
    running(&mut g, 86_217, 0.0, 7_516_192_768);
    g.run = RunState::Paused;
    g.agent = true;
    g.cores = 4;
    g.memory_mib = 8192;
    g.maxdisk = 100 * GIB;
    g.machine = "pc-q35-10.1+pve0";
    g.ostype = "win11";
    out.push(g);

    let mut g = base(103, Qemu, "pve2", Some("mail-gateway"));
    running(&mut g, 604_833, 0.0412, 1_610_612_736);
    g.lock = Some("backup".into());
    g.tags = Some("mail".into());
    g.ha = ha(Some("prod-ha"));
    g.agent = true;
    g.agent_hangs = true;
    g.onboot = true;
    out.push(g);

    let mut g = base(104, Qemu, "pve1", Some("dev-sandbox"));
    g.tags = Some("dev".into());
    g.memory_mib = 4096;
    g.maxdisk = 64 * GIB;
    out.push(g);

    let mut g = base(105, Qemu, "pve3", Some("legacy-erp"));
    running(&mut g, 3_000_000, 0.05, 3_221_225_472);
    g.memory_mib = 4096;
    out.push(g);

    let mut g = base(106, Lxc, "pve1", Some("dns-resolver-01"));
    running(&mut g, 2_419_200, 0.00312, 73_400_320);
    g.tags = Some("infra".into());
    g.ha = ha(None);
    g.cores = 1;
    g.memory_mib = 512;
    g.maxdisk = 8 * GIB;
    g.disk = 1_288_490_188;
    g.onboot = true;
    g.snapshots = vec![snap(
        "before_bind_update",
        T0 - 2 * 86_400,
        "bind9 9.18 -> 9.20",
        None,
        false,
    )];
    g.current_parent = Some("before_bind_update".into());
    out.push(g);

    let mut g = base(107, Lxc, "pve2", Some("reverse-proxy"));
    running(&mut g, 950_112, 0.0121, 201_326_592);
    g.stats.swap = 4_194_304;
    g.tags = Some("prod;web".into());
    g.memory_mib = 1024;
    g.maxdisk = 16 * GIB;
    g.disk = 3_435_973_836;
    g.ostype = "alpine";
    out.push(g);

    let mut g = base(108, Lxc, "pve1", Some("ci-runner"));
    g.cores = 4;
    g.memory_mib = 4096;
    g.swap_mib = 1024;
    g.maxdisk = 64 * GIB;
    g.disk = 21_474_836_480;
    out.push(g);

    let mut g = base(109, Lxc, "pve3", Some("monitoring"));
    running(&mut g, 3_000_000, 0.02, 536_870_912);
    g.memory_mib = 2048;
    g.maxdisk = 32 * GIB;
    g.disk = 9_663_676_416;
    out.push(g);

    let mut g = base(110, Qemu, "pve2", None);
    g.agent = true;
    g.memory_mib = 1024;
    g.maxdisk = 16 * GIB;
    out.push(g);

    let mut g = base(200, Lxc, "pve1", Some("debian-12-template"));
    g.template = true;
    g.cores = 1;
    g.memory_mib = 512;
    g.maxdisk = 4 * GIB;
    g.disk = 0;
    out.push(g);

    let mut g = base(900, Qemu, "pve1", Some("ubuntu-2404-cloudinit"));
    g.template = true;
    g.agent = true;
    g.cloudinit = true;
    g.maxdisk = 3_758_096_384;
    // The drive was generated for user `admin` with DHCP for IPv4 only;
    // `ciuser: ubuntu` and `ip6=auto` came after, so it is behind the
    // config (`GET .../cloudinit` shows the user as pending; PVE does not
    // list changed `ipconfigN` there).
    g.ci_changes = BTreeMap::from([
        ("ciuser".to_string(), "admin".to_string()),
        ("ipconfig0".to_string(), "ip=dhcp".to_string()),
    ]);
    out.push(g);

    out
}

/// Extra guest number `i` of the large scenario.
fn generated_guest(i: usize) -> Guest {
    let vmid = 1000 + i as u32;
    let kind = if i % 5 == 4 {
        GuestKind::Lxc
    } else {
        GuestKind::Qemu
    };
    let node = ["pve1", "pve2", "pve3"][i % 3];
    let prefix = if kind == GuestKind::Qemu { "vm" } else { "ct" };
    let name = format!("load-{prefix}-{vmid:05}");
    let mut g = base(vmid, kind, node, Some(&name));
    let v = u64::from(vmid);
    g.memory_mib = [512, 1024, 2048, 4096, 8192][(mix(v, 6) % 5) as usize];
    g.cores = 1 + (mix(v, 7) % 4) as u32;
    g.maxdisk = (8 + mix(v, 8) % 120) * GIB;
    if kind == GuestKind::Lxc {
        g.disk = g.maxdisk / (2 + mix(v, 9) % 6);
    }
    if i.is_multiple_of(7) {
        g.tags = Some("bulk;load".into());
    }
    if !i.is_multiple_of(4) {
        let mem = g.maxmem() / 100 * (20 + mix(v, 10) % 70);
        let cpu = (mix(v, 11) % 10_000) as f64 / 40_000.0;
        running(&mut g, 3_600 + mix(v, 12) % 5_000_000, cpu, mem);
    }
    g
}

/// SplitMix64: cheap, deterministic pseudo-random numbers per (vmid, salt).
pub(crate) fn mix(v: u64, salt: u64) -> u64 {
    let mut z = v
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn snap(name: &str, t: u64, desc: &str, parent: Option<&str>, vmstate: bool) -> Snapshot {
    Snapshot {
        name: name.into(),
        snaptime: t,
        description: desc.into(),
        parent: parent.map(str::to_string),
        vmstate,
    }
}

/// `vzdump-<type>-<vmid>-YYYY_MM_DD-HH_MM_SS.<ext>` for a UTC epoch.
pub(crate) fn backup_name(kind: GuestKind, vmid: u32, t: u64) -> String {
    let (y, mo, d, h, mi, s) = crate::util::civil(t);
    let ext = match kind {
        GuestKind::Qemu => "vma.zst",
        GuestKind::Lxc => "tar.zst",
    };
    format!(
        "backup/vzdump-{}-{vmid}-{y:04}_{mo:02}_{d:02}-{h:02}_{mi:02}_{s:02}.{ext}",
        kind.as_str()
    )
}

pub(crate) fn backup(
    storage: &str,
    node: Option<&str>,
    kind: GuestKind,
    vmid: u32,
    t: u64,
    size: u64,
) -> Volume {
    Volume {
        storage: storage.into(),
        node: node.map(str::to_string),
        volid: format!("{storage}:{}", backup_name(kind, vmid, t)),
        content: "backup",
        format: match kind {
            GuestKind::Qemu => "vma.zst",
            GuestKind::Lxc => "tar.zst",
        },
        size,
        ctime: Some(t),
        vmid: Some(vmid),
        notes: None,
        protected: false,
        subtype: Some(kind.as_str()),
        verification: None,
        encrypted: None,
    }
}

fn image(
    storage: &str,
    node: &str,
    name: &str,
    vmid: u32,
    size: u64,
    content: &'static str,
) -> Volume {
    Volume {
        storage: storage.into(),
        node: Some(node.into()),
        volid: format!("{storage}:{name}"),
        content,
        format: "raw",
        size,
        ctime: Some(T0 - 200 * 86_400 + u64::from(vmid) * 3_607),
        vmid: Some(vmid),
        notes: None,
        protected: false,
        subtype: None,
        verification: None,
        encrypted: None,
    }
}

fn file(
    storage: &str,
    node: &str,
    name: &str,
    content: &'static str,
    format: &'static str,
    size: u64,
    ctime: u64,
) -> Volume {
    Volume {
        storage: storage.into(),
        node: Some(node.into()),
        volid: format!("{storage}:{name}"),
        content,
        format,
        size,
        ctime: Some(ctime),
        vmid: None,
        notes: None,
        protected: false,
        subtype: None,
        verification: None,
        encrypted: None,
    }
}

fn volumes(scenario: &Scenario) -> Vec<Volume> {
    use GuestKind::{Lxc, Qemu};
    let nightly = |day: u64, offset: u64| T0 - day * 86_400 + 3_600 + offset;
    let mut v = vec![
        // nfs-backup (shared): the nightly job's archives.
        backup("nfs-backup", None, Qemu, 100, nightly(0, 3), 3_912_228_127),
        backup("nfs-backup", None, Qemu, 100, nightly(1, 4), 3_907_110_543),
        backup("nfs-backup", None, Qemu, 100, nightly(2, 3), 3_899_802_311),
        backup(
            "nfs-backup",
            None,
            Qemu,
            101,
            nightly(0, 184),
            41_872_118_016,
        ),
        backup(
            "nfs-backup",
            None,
            Qemu,
            101,
            nightly(1, 190),
            41_660_020_774,
        ),
        backup("nfs-backup", None, Lxc, 106, nightly(0, 1_102), 412_668_125),
        backup("nfs-backup", None, Lxc, 106, nightly(1, 1_098), 411_002_876),
        backup("nfs-backup", None, Lxc, 107, nightly(0, 17), 901_334_002),
        backup("nfs-backup", None, Qemu, 103, nightly(1, 7), 2_118_773_004),
        // local (per node): ad-hoc backups, ISOs and templates.
        backup(
            "local",
            Some("pve1"),
            Qemu,
            104,
            nightly(14, 1_337),
            9_212_004_118,
        ),
        backup(
            "local",
            Some("pve1"),
            Lxc,
            108,
            nightly(3, 602),
            6_104_882_137,
        ),
        backup(
            "local",
            Some("pve2"),
            Qemu,
            110,
            nightly(9, 59),
            1_004_332_115,
        ),
        file(
            "local",
            "pve1",
            "iso/ubuntu-24.04.3-live-server-amd64.iso",
            "iso",
            "iso",
            3_213_064_192,
            T0 - 90 * 86_400,
        ),
        file(
            "local",
            "pve1",
            "vztmpl/debian-12-standard_12.12-1_amd64.tar.zst",
            "vztmpl",
            "tzst",
            126_867_456,
            T0 - 120 * 86_400,
        ),
        file(
            "local",
            "pve2",
            "iso/virtio-win-0.1.285.iso",
            "iso",
            "iso",
            771_035_136,
            T0 - 60 * 86_400,
        ),
        // local-lvm (per node): guest disks.
        image(
            "local-lvm",
            "pve1",
            "vm-100-disk-0",
            100,
            32 * GIB,
            "images",
        ),
        image(
            "local-lvm",
            "pve1",
            "vm-101-disk-0",
            101,
            128 * GIB,
            "images",
        ),
        image(
            "local-lvm",
            "pve1",
            "vm-101-disk-1",
            101,
            512 * GIB,
            "images",
        ),
        image(
            "local-lvm",
            "pve1",
            "vm-104-disk-0",
            104,
            64 * GIB,
            "images",
        ),
        image(
            "local-lvm",
            "pve1",
            "vm-106-disk-0",
            106,
            8 * GIB,
            "rootdir",
        ),
        image(
            "local-lvm",
            "pve1",
            "vm-108-disk-0",
            108,
            64 * GIB,
            "rootdir",
        ),
        image(
            "local-lvm",
            "pve1",
            "base-200-disk-0",
            200,
            4 * GIB,
            "rootdir",
        ),
        image(
            "local-lvm",
            "pve1",
            "base-900-disk-0",
            900,
            3_758_096_384,
            "images",
        ),
        image(
            "local-lvm",
            "pve1",
            "vm-900-cloudinit",
            900,
            4_194_304,
            "images",
        ),
        image(
            "local-lvm",
            "pve2",
            "vm-102-disk-0",
            102,
            100 * GIB,
            "images",
        ),
        image(
            "local-lvm",
            "pve2",
            "vm-102-disk-1",
            102,
            4 * 1024 * 1024,
            "images",
        ),
        image(
            "local-lvm",
            "pve2",
            "vm-103-disk-0",
            103,
            32 * GIB,
            "images",
        ),
        image(
            "local-lvm",
            "pve2",
            "vm-107-disk-0",
            107,
            16 * GIB,
            "rootdir",
        ),
        image(
            "local-lvm",
            "pve2",
            "vm-110-disk-0",
            110,
            16 * GIB,
            "images",
        ),
    ];
    v[0].notes = Some("web-frontend-01 nightly".into());
    v[7].notes = Some("reverse-proxy before TLS rework\nkeep until 2027".into());
    v[7].protected = true;
    v[9].protected = true;
    if let Scenario::Large { guests } = scenario {
        let extra = (*guests).min(MAX_GUESTS).saturating_sub(13).min(5_000);
        for i in 0..extra {
            let vmid = 1000 + i as u32;
            let kind = if i % 5 == 4 { Lxc } else { Qemu };
            let size = 500_000_000 + mix(u64::from(vmid), 13) % 20_000_000_000;
            v.push(backup(
                "nfs-backup",
                None,
                kind,
                vmid,
                nightly(0, 1_300 + i as u64 * 3),
                size,
            ));
        }
    }
    v
}

/// Boot time of a node in the seed (for `pstart`).
fn boot_time(node: &str) -> u64 {
    match node {
        "pve1" => T0 - 3_400_000,
        "pve2" => T0 - 1_150_000,
        _ => T0 - 9_000_000,
    }
}

fn task(
    node: &str,
    start: u64,
    ty: &str,
    id: &str,
    user: &str,
    result: Option<(u64, &str)>,
    lines: usize,
) -> Task {
    let pid = 10_000 + (mix(start, 21) % 4_000_000) as u32;
    let pstart = start.saturating_sub(boot_time(node)) * 100 + mix(start, 22) % 100;
    Task::new(node, pid, pstart, start, ty, id, user, result, lines)
}

fn tasks(scenario: &Scenario) -> Vec<Task> {
    let root = "root@pam";
    let tok = tokens::ADMIN_TOKEN_ID;
    let mut t = vec![
        // pve1
        // Fixed pid/pstart so the long-log UPID is a constant.
        Task::new(
            "pve1",
            0x000A_3F1C,
            340_360_000,
            T0 + 3_600,
            "vzdump",
            "",
            root,
            Some((1_243, "OK")),
            412,
        ),
        task(
            "pve1",
            T0 + 9 * 3_600 + 12,
            "qmstart",
            "100",
            tok,
            Some((3, "OK")),
            4,
        ),
        task(
            "pve1",
            T0 + 9 * 3_600 + 340,
            "qmstart",
            "104",
            tok,
            Some((2, "start failed: QEMU exited with code 1")),
            6,
        ),
        task(
            "pve1",
            T0 + 10 * 3_600 + 5,
            "vncproxy",
            "100",
            root,
            Some((912, "OK")),
            3,
        ),
        task(
            "pve1",
            T0 + 11 * 3_600,
            "qmsnapshot",
            "100",
            root,
            Some((14, "OK")),
            5,
        ),
        task(
            "pve1",
            T0 + 12 * 3_600 + 30,
            "aptupdate",
            "",
            root,
            Some((22, "WARNINGS: 2")),
            9,
        ),
        task(
            "pve1",
            T0 + 13 * 3_600,
            "vzsnapshot",
            "106",
            tok,
            Some((6, "OK")),
            4,
        ),
        // pve2
        task(
            "pve2",
            T0 + 3_600,
            "vzdump",
            "",
            root,
            Some((2_201, "WARNINGS: 2")),
            30,
        ),
        task(
            "pve2",
            T0 + 14 * 3_600,
            "qmshutdown",
            "103",
            tok,
            Some((180, "VM 103 qmp command 'guest-ping' failed - got timeout")),
            3,
        ),
        task(
            "pve2",
            T0 + 14 * 3_600 + 200,
            "qmstart",
            "107",
            tok,
            Some((1, "OK")),
            2,
        ),
        // Running: tonight's backup of 103 (which holds its `backup` lock).
        task("pve2", T0 + 86_400 + 3_600, "vzdump", "103", root, None, 7),
        // pve3 (offline): only visible through /cluster/tasks.
        task(
            "pve3",
            T0 - 3 * 86_400,
            "qmstart",
            "105",
            root,
            Some((2, "OK")),
            3,
        ),
    ];
    if let Scenario::Large { .. } = scenario {
        let types = [
            "qmstart",
            "qmstop",
            "vzdump",
            "qmshutdown",
            "vncproxy",
            "qmreboot",
        ];
        for i in 0..5_000u64 {
            let node = ["pve1", "pve2"][(i % 2) as usize];
            let vmid = 1000 + (mix(i, 23) % 4_000);
            let ty = types[(i % 6) as usize];
            let status = if i % 17 == 5 {
                format!("VM {vmid} not running")
            } else if i % 29 == 7 {
                "WARNINGS: 1".to_string()
            } else {
                "OK".to_string()
            };
            let start = T0 - 3_600 - i * 120;
            t.push(task(
                node,
                start,
                ty,
                &vmid.to_string(),
                root,
                Some((1 + i % 90, &status)),
                3,
            ));
        }
    }
    t.sort_by(|a, b| b.starttime.cmp(&a.starttime).then(a.upid.cmp(&b.upid)));
    t
}

/// The second, standalone cluster (see `ClusterFlavor::Secondary`).
fn secondary() -> Cluster {
    use GuestKind::{Lxc, Qemu};
    let node = Node {
        name: "lab1".into(),
        nodeid: 0,
        ip: "198.51.100.21".into(),
        online: true,
        level: "",
        cpu_model: "Intel(R) Core(TM) i5-12500T",
        sockets: 1,
        cores: 6,
        threads: 12,
        mhz: "2000.000",
        cpu: 0.0412,
        wait: 0.0021,
        loadavg: ["0.41", "0.37", "0.30"],
        maxmem: 67_108_864_000,
        mem: 12_884_901_888,
        swap_total: 0,
        swap_used: 0,
        ksm_shared: 0,
        rootfs_total: 100_861_726_720,
        rootfs_used: 8_589_934_592,
        uptime: 864_000,
        kernel_release: "6.8.12-16-pve",
        kernel_version: "#1 SMP PREEMPT_DYNAMIC PMX 6.8.12-16 (2025-10-14T09:23Z)",
        boot_efi: true,
    };
    let mut guests = Vec::new();
    let mut g = base(300, Qemu, "lab1", Some("lab-k8s-master"));
    running(&mut g, 400_000, 0.0812, 3_221_225_472);
    g.agent = true;
    g.memory_mib = 4096;
    g.tags = Some("k8s;lab".into());
    guests.push(g);
    let mut g = base(301, Qemu, "lab1", Some("lab-k8s-worker"));
    g.memory_mib = 8192;
    g.tags = Some("k8s;lab".into());
    guests.push(g);
    let mut g = base(302, Lxc, "lab1", Some("lab-pihole"));
    running(&mut g, 860_000, 0.004, 98_566_144);
    g.memory_mib = 512;
    g.maxdisk = 8 * GIB;
    g.disk = 1_932_735_283;
    guests.push(g);
    let mut g = base(303, Lxc, "lab1", Some("lab-scratch"));
    g.memory_mib = 1024;
    guests.push(g);
    let storages = vec![Storage {
        id: "local".into(),
        plugintype: "dir",
        content: "backup,images,iso,rootdir,vztmpl",
        shared: false,
        nodes: None,
        total: 100_861_726_720,
        used: BTreeMap::from([("lab1".to_string(), 38_654_705_664)]),
        extra: vec![("path", "/var/lib/vz")],
    }];
    let tasks = vec![
        Task::new(
            "lab1",
            0x0001_2B3C,
            0x0049_3E00,
            T0 + 7_200,
            "vzdump",
            "302",
            tokens::TICKET_USER,
            Some((95, "OK")),
            12,
        ),
        Task::new(
            "lab1",
            0x0001_4D20,
            0x004A_0000,
            T0 + 9_000,
            "qmstart",
            "300",
            tokens::LAB_TOKEN_ID,
            Some((2, "OK")),
            3,
        ),
    ];
    let volumes = vec![backup(
        "local",
        Some("lab1"),
        Lxc,
        302,
        T0 + 7_203,
        310_550_331,
    )];
    let mut cluster = Cluster {
        name: "lab-cluster".into(),
        config_version: 1,
        local_node: "lab1".into(),
        release: Release::new(crate::release::PVE8_VERSION),
        nodes: vec![node],
        guests: guests.into_iter().map(|g| (g.vmid, g)).collect(),
        storages,
        pools: Vec::new(),
        users: vec![User {
            userid: tokens::TICKET_USER.into(),
            password: Some(tokens::LAB_TICKET_PASSWORD.into()),
            acl: Acl::Root,
        }],
        tokens: vec![Token {
            full_id: tokens::LAB_TOKEN_ID.into(),
            secret: tokens::LAB_TOKEN_SECRET.into(),
            acl: Acl::Root,
        }],
        clustered: false,
        volumes,
        tasks,
        shapes: Shapes::Schema,
        generation: 0,
        work: crate::work::Work::default(),
        resource_cache: Mutex::new(ResourceCache::default()),
        pve8_nodes: Vec::new(),
        guest_os: BTreeMap::new(),
        networks: networks(&[("lab1", "198.51.100.21")]),
        file_origins: BTreeMap::new(),
        replication: Vec::new(),
        journals: BTreeMap::new(),
        firewall: Default::default(),
        ceph: false,
        ha: crate::ha::HaConfig::default(),
    };
    cluster.journals = crate::journal_seed::seed(&cluster);
    cluster
}
