//! The deterministic clusters the simulator starts with (the standard seed
//! is tabulated in the crate documentation).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::perms::{Acl, AclEntry};
use crate::state::{
    Cluster, Guest, GuestKind, HaResource, Node, ResourceCache, RunState, RunStats, Storage, Token,
    User,
};
use crate::{Scenario, tokens};

/// Guests the auditor token (`auditor@pve!mcp`) holds `VM.Audit` on. It has
/// no other privilege anywhere (no `Sys.Audit`, no `Datastore.Audit`).
pub const AUDITOR_VISIBLE_VMIDS: &[u32] = &[100, 101, 200];

const GIB: u64 = 1024 * 1024 * 1024;

/// Upper bound for the large scenario, keeping vmids valid and memory sane.
pub(crate) const MAX_GUESTS: usize = 1_000_000;

pub(crate) fn build(scenario: &Scenario) -> Cluster {
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
    Cluster {
        name: "demo-cluster".into(),
        config_version: 3,
        local_node: "pve1".into(),
        version: "9.1.5",
        release: "9.1",
        repoid: "8f3a5c1e7b2d9046",
        nodes: nodes(),
        guests,
        storages: storages(),
        pools: vec!["production".into()],
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
        ],
        generation: 0,
        resource_cache: Mutex::new(ResourceCache::default()),
    }
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
        },
        Storage {
            id: "local-lvm".into(),
            plugintype: "lvmthin",
            content: "images,rootdir",
            shared: false,
            nodes: None,
            total: 1_836_996_870_144,
            used: per_node(412_316_860_416, 287_762_808_832, 96_636_764_160),
        },
        Storage {
            id: "nfs-backup".into(),
            plugintype: "nfs",
            content: "backup",
            shared: true,
            nodes: None,
            total: 7_999_376_588_800,
            used: per_node(2_345_052_143_616, 2_345_052_143_616, 2_345_052_143_616),
        },
    ]
}

/// A guest with fields every seed entry shares; callers override the rest.
fn base(vmid: u32, kind: GuestKind, node: &str, name: Option<&str>) -> Guest {
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
    }
}

fn running(g: &mut Guest, uptime: u64, cpu: f64, mem: u64) {
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
    g.agent = true;
    g.memory_mib = 4096;
    g.balloon_mib = 2048;
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
    out.push(g);

    let mut g = base(102, Qemu, "pve2", Some("win-build-agent"));
    running(&mut g, 86_217, 0.0, 7_516_192_768);
    g.run = RunState::Paused;
    g.agent = true;
    g.cores = 4;
    g.memory_mib = 8192;
    g.maxdisk = 100 * GIB;
    g.machine = "pc-q35-10.1+pve0";
    out.push(g);

    let mut g = base(103, Qemu, "pve2", Some("mail-gateway"));
    running(&mut g, 604_833, 0.0412, 1_610_612_736);
    g.lock = Some("backup".into());
    g.tags = Some("mail".into());
    g.ha = ha(Some("prod-ha"));
    g.agent = true;
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
    out.push(g);

    let mut g = base(107, Lxc, "pve2", Some("reverse-proxy"));
    running(&mut g, 950_112, 0.0121, 201_326_592);
    g.stats.swap = 4_194_304;
    g.tags = Some("prod;web".into());
    g.memory_mib = 1024;
    g.maxdisk = 16 * GIB;
    g.disk = 3_435_973_836;
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
    g.maxdisk = 3_758_096_384;
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
fn mix(v: u64, salt: u64) -> u64 {
    let mut z = v
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
