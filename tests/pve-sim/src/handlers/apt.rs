//! A node's packages (pve-manager's `PVE::API2::APT`): `GET
//! /nodes/{node}/apt/update`, the upgrades the last `apt update` found
//! (cached in `/var/lib/pve-manager/pkgupdates`), and `GET
//! /nodes/{node}/apt/versions`, the versions of the important packages
//! (what `pveversion -v` prints).
//!
//! Seed: `pve1` (PVE 9.1) has six upgrades (pve-manager 9.1.6, a new
//! 6.17 kernel with its new signed image package, libpve-common-perl,
//! OpenSSL); `pve2` none; `lab1` (PVE 8.4) one (tzdata).

use serde_json::{Map, Value};

use super::Ctx;
use crate::errors::{HandlerResult, Reply};
use crate::state::Cluster;

/// One package record.
struct Pkg {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    origin: &'static str,
    section: &'static str,
    arch: &'static str,
}

const PVE_MANAGER: Pkg = Pkg {
    name: "pve-manager",
    title: "Proxmox Virtual Environment Management Tools",
    description: "This package contains the Proxmox Virtual Environment management tools.",
    origin: "Proxmox",
    section: "admin",
    arch: "all",
};

const PROXMOX_VE: Pkg = Pkg {
    name: "proxmox-ve",
    title: "Proxmox Virtual Environment",
    description: "The Proxmox Virtual Environment is an easy to use Open Source \
                  virtualization platform for running Virtual Appliances and Virtual Machines. \
                  This is a meta package which will install everything needed.",
    origin: "Proxmox",
    section: "admin",
    arch: "all",
};

const COMMON: Pkg = Pkg {
    name: "libpve-common-perl",
    title: "Proxmox VE base library",
    description: "This package contains the base library used by other Proxmox VE components.",
    origin: "Proxmox",
    section: "perl",
    arch: "all",
};

const KERNEL_META: Pkg = Pkg {
    name: "proxmox-kernel-6.17",
    title: "Latest Proxmox Kernel Image",
    description: "This meta package depends on the latest Proxmox Kernel Image of the 6.17 series.",
    origin: "Proxmox",
    section: "admin",
    arch: "all",
};

const NEW_KERNEL: Pkg = Pkg {
    name: "proxmox-kernel-6.17.4-1-pve-signed",
    title: "Proxmox Kernel Image (signed)",
    description: "This package contains the Linux kernel (signed), modules and corresponding \
                  other files for version 6.17.4-1-pve.",
    origin: "Proxmox",
    section: "admin",
    arch: "amd64",
};

const OPENSSL: Pkg = Pkg {
    name: "openssl",
    title: "Secure Sockets Layer toolkit - cryptographic utility",
    description: "This package is part of the OpenSSL project's implementation of the SSL and \
                  TLS cryptographic protocols for secure communication over the Internet. It \
                  contains the general-purpose command line binary /usr/bin/openssl, useful \
                  for cryptographic operations.",
    origin: "Debian",
    section: "utils",
    arch: "amd64",
};

const LIBSSL: Pkg = Pkg {
    name: "libssl3t64",
    title: "Secure Sockets Layer toolkit - shared libraries",
    description: "This package is part of the OpenSSL project's implementation of the SSL and \
                  TLS cryptographic protocols for secure communication over the Internet. It \
                  provides the libssl and libcrypto shared libraries.",
    origin: "Debian",
    section: "libs",
    arch: "amd64",
};

const TZDATA: Pkg = Pkg {
    name: "tzdata",
    title: "time zone and daylight-saving time data",
    description: "This package contains data required for the implementation of standard \
                  local time for many representative locations around the globe. It is updated \
                  periodically to reflect changes made by political bodies to time zone \
                  boundaries, UTC offsets, and daylight-saving rules.",
    origin: "Debian",
    section: "localization",
    arch: "all",
};

/// `$assemble_pkginfo`: `old` is the installed version (none for a package
/// an upgrade pulls in).
fn record(p: &Pkg, old: Option<&str>, new: &str) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in [
        ("Package", p.name),
        ("Title", p.title),
        ("Origin", p.origin),
        ("Description", p.description),
        ("Section", p.section),
        ("Arch", p.arch),
        ("Priority", "optional"),
        ("Version", new),
    ] {
        m.insert(k.into(), v.into());
    }
    if let Some(old) = old {
        m.insert("OldVersion".into(), old.into());
    }
    m
}

/// A node's upgrades: `(package, installed, candidate)`.
fn upgrades(node: &str) -> Vec<(&'static Pkg, Option<&'static str>, &'static str)> {
    match node {
        "pve1" => vec![
            (&COMMON, Some("9.0.13"), "9.0.15"),
            (&LIBSSL, Some("3.5.1-1"), "3.5.4-1~deb13u1"),
            (&OPENSSL, Some("3.5.1-1"), "3.5.4-1~deb13u1"),
            (&KERNEL_META, Some("6.17.2-1"), "6.17.4-1"),
            (&NEW_KERNEL, None, "6.17.4-1"),
            (&PVE_MANAGER, Some("9.1.5"), "9.1.6"),
        ],
        "lab1" => vec![(&TZDATA, Some("2025b-0+deb12u1"), "2025b-0+deb12u2")],
        _ => Vec::new(),
    }
}

/// `GET /nodes/{node}/apt/update`. The daily update check notified about
/// each (`NotifyStatus`).
pub(crate) fn updates(ctx: &Ctx<'_>) -> HandlerResult {
    let list = upgrades(ctx.node)
        .into_iter()
        .map(|(p, old, new)| {
            let mut m = record(p, old, new);
            m.insert("NotifyStatus".into(), new.into());
            Value::Object(m)
        })
        .collect();
    Ok(Reply::Data(Value::Array(list)))
}

/// Installed versions of the core packages, PVE 9 and PVE 8.
fn installed(c: &Cluster, node: &str) -> Vec<(&'static str, &'static str)> {
    if c.release_of(node).major() >= 9 {
        vec![
            ("ceph", "19.2.3-pve2"),
            ("ceph-fuse", "19.2.3-pve2"),
            ("corosync", "3.1.9-pve2"),
            ("ifupdown2", "3.3.0-1+pmx11"),
            ("libpve-storage-perl", "9.1.0"),
            ("lxc-pve", "6.0.5-3"),
            ("pve-cluster", "9.0.7"),
            ("pve-container", "6.0.18"),
            ("pve-firewall", "6.0.4"),
            ("pve-ha-manager", "5.0.8"),
            ("pve-qemu-kvm", "10.1.2-4"),
            ("qemu-server", "9.1.2"),
            ("smartmontools", "7.4-pve1"),
            ("zfsutils-linux", "2.3.4-pve1"),
        ]
    } else {
        vec![
            ("ceph-fuse", "17.2.8-pve2"),
            ("corosync", "3.1.9-pve1"),
            ("ifupdown2", "3.2.0-1+pmx11"),
            ("libpve-storage-perl", "8.3.7"),
            ("lxc-pve", "6.0.0-1"),
            ("pve-cluster", "8.1.2"),
            ("pve-container", "5.3.3"),
            ("pve-firewall", "5.1.2"),
            ("pve-ha-manager", "4.0.7"),
            ("pve-qemu-kvm", "9.2.0-7"),
            ("qemu-server", "8.4.4"),
            ("smartmontools", "7.3-pve1"),
            ("zfsutils-linux", "2.2.8-pve1"),
        ]
    }
}

/// `GET /nodes/{node}/apt/versions`: `proxmox-ve` (with the running
/// kernel), `pve-manager` (with the running API's version), the installed
/// kernels, then the others by name; the candidate is the newer version
/// when an upgrade is pending.
pub(crate) fn versions(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let release = c.release_of(ctx.node);
    let kernel = c.node(ctx.node).map_or("", |n| n.kernel_release);
    let pending = upgrades(ctx.node);
    let candidate = |name: &str, current: &str| {
        pending
            .iter()
            .find(|(p, _, _)| p.name == name)
            .map_or(current.to_string(), |(_, _, new)| new.to_string())
    };
    let entry = |name: &'static str, title: &'static str, current: &str| {
        let p = Pkg {
            name,
            title,
            description: title,
            origin: "Proxmox",
            section: "admin",
            arch: "amd64",
        };
        let mut m = record(&p, Some(current), &candidate(name, current));
        m.insert("CurrentState".into(), "Installed".into());
        m
    };
    let pve9 = release.major() >= 9;
    let ve = if pve9 { "9.1.0" } else { "8.4.0" };
    let mut out = Vec::new();
    let mut m = entry(PROXMOX_VE.name, PROXMOX_VE.title, ve);
    m.insert("RunningKernel".into(), kernel.into());
    out.push(m);
    let mut m = entry(PVE_MANAGER.name, PVE_MANAGER.title, &release.version);
    m.insert(
        "ManagerVersion".into(),
        format!("{}/{}", release.version, release.repoid).into(),
    );
    out.push(m);
    let kernels: &[(&str, &str)] = if pve9 {
        &[
            ("proxmox-kernel-6.17.2-1-pve-signed", "6.17.2-1"),
            ("proxmox-kernel-6.14.11-4-pve-signed", "6.14.11-4"),
        ]
    } else {
        &[
            ("proxmox-kernel-6.8.12-16-pve-signed", "6.8.12-16"),
            ("proxmox-kernel-6.8.12-9-pve-signed", "6.8.12-9"),
        ]
    };
    for (k, v) in kernels {
        out.push(entry(k, "Proxmox Kernel Image (signed)", v));
    }
    let common = if pve9 { "9.0.13" } else { "8.3.4" };
    let mut rest = installed(&c, ctx.node);
    rest.push((COMMON.name, common));
    rest.sort();
    for (name, v) in rest {
        out.push(entry(name, name, v));
    }
    Ok(Reply::Data(Value::Array(
        out.into_iter().map(Value::Object).collect(),
    )))
}
