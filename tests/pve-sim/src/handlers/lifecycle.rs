//! Guests coming, going and moving: create (and restore), clone, migrate
//! and destroy, for qemu and lxc.
//!
//! A created, cloned or restored guest's config exists (with lock `create`,
//! or `clone` for a qemu clone) from the moment the UPID is returned; its
//! disks appear in the storage listing when the task ends.

use serde_json::{Map, Value};

use super::Ctx;
use super::act::{self, die, word};
use super::cloudinit;
use super::config::{mac, materialize, render};
use crate::conf;
use crate::errors::{ApiError, HandlerResult};
use crate::state::{Cluster, Guest, GuestKind, Volume};
use crate::util::now_secs;
use crate::work::{self, Spec, stamp};

/// Whether storage `id` is shared (its volumes are on every node).
fn shared_storage(c: &Cluster, id: &str) -> bool {
    c.storages.iter().any(|s| s.id == id && s.shared)
}

/// Lists the guest's disks as storage content (on its node for local
/// storages).
pub(crate) fn add_volumes(c: &mut Cluster, vmid: u32) {
    let Some(g) = c.guests.get(&vmid) else { return };
    let conf = render(g);
    let mut disks = conf::disks(g.kind, &conf);
    // The cloud-init drive is a CD-ROM, yet a volume of its own.
    if g.kind == GuestKind::Qemu
        && let Some(key) = cloudinit::cloudinit_key(&conf)
        && let Some(v) = conf.get(&key).and_then(Value::as_str)
    {
        let volid = conf::drive_volid(v).to_string();
        disks.push((key, volid, cloudinit::DRIVE_SIZE));
    }
    let content = match g.kind {
        GuestKind::Qemu => "images",
        GuestKind::Lxc => "rootdir",
    };
    let node = g.node.clone();
    for (_, volid, size) in disks {
        let Some((storage, _)) = volid.split_once(':') else {
            continue;
        };
        if c.volumes.iter().any(|v| v.volid == volid) {
            continue;
        }
        let on = (!shared_storage(c, storage)).then(|| node.clone());
        c.volumes.push(Volume {
            storage: storage.to_string(),
            node: on,
            volid: volid.clone(),
            content,
            format: super::storage_cfg::format_of(&volid),
            size,
            ctime: Some(now_secs()),
            vmid: Some(vmid),
            notes: None,
            protected: false,
            subtype: None,
            verification: None,
            encrypted: None,
        });
    }
}

/// Removes the guest's disk volumes (backups stay).
fn remove_volumes(c: &mut Cluster, vmid: u32) {
    c.volumes
        .retain(|v| !(v.vmid == Some(vmid) && matches!(v.content, "images" | "rootdir")));
}

/// A copy of `src` as guest `newid` on `node`: a stopped, unlocked,
/// non-template guest without snapshots, HA or pool, whose disks and MAC
/// addresses are its own.
fn derive(src: &Guest, newid: u32, node: &str) -> Guest {
    let mut g = src.clone();
    g.vmid = newid;
    g.node = node.to_string();
    g.template = false;
    g.lock = None;
    g.ha = None;
    g.pool = None;
    g.snapshots.clear();
    g.current_parent = None;
    act::stop_guest(&mut g);
    if let Some(old) = &src.conf {
        g.conf = Some(rewrite_ids(g.kind, old, src.vmid, newid));
    }
    materialize(&mut g);
    g
}

/// A config's disk names and MAC addresses for a new vmid.
fn rewrite_ids(
    kind: GuestKind,
    old: &Map<String, Value>,
    from: u32,
    to: u32,
) -> Map<String, Value> {
    let mut out = Map::new();
    let mut nic = 0;
    for (k, v) in old {
        if conf::is_unused_key(k) {
            continue;
        }
        let Some(s) = v.as_str() else {
            out.insert(k.clone(), v.clone());
            continue;
        };
        let mut s = s
            .replace(&format!("vm-{from}-"), &format!("vm-{to}-"))
            .replace(&format!("base-{from}-"), &format!("vm-{to}-"));
        if k.starts_with("net") && k[3..].bytes().all(|b| b.is_ascii_digit()) {
            s = with_mac(kind, &s, &mac(to, nic));
            nic += 1;
        }
        out.insert(k.clone(), s.into());
    }
    out
}

/// A NIC string with its MAC address set (qemu `model=MAC`, lxc
/// `hwaddr=MAC`), as PVE fills it in for a new NIC.
fn with_mac(kind: GuestKind, v: &str, mac: &str) -> String {
    let parts: Vec<&str> = v.split(',').collect();
    match kind {
        GuestKind::Qemu => {
            let first = parts.first().copied().unwrap_or("virtio");
            let model = match first.split_once('=') {
                Some(("model", m)) => m,
                Some((m, _)) => m,
                None => first,
            };
            let mut out = vec![format!("{model}={mac}")];
            out.extend(
                parts
                    .iter()
                    .skip(1)
                    .filter(|p| !p.starts_with("macaddr="))
                    .map(|p| p.to_string()),
            );
            out.join(",")
        }
        GuestKind::Lxc => {
            let mut out: Vec<String> = parts
                .iter()
                .filter(|p| !p.starts_with("hwaddr=") && !p.is_empty())
                .map(|p| p.to_string())
                .collect();
            out.push(format!("hwaddr={mac}"));
            if !out.iter().any(|p| p.starts_with("type=")) {
                out.push("type=veth".into());
            }
            out.join(",")
        }
    }
}

// ---------------------------------------------------------------- create

/// Parameters of the create endpoints that are not config keys.
const QEMU_CONTROL: &[&str] = &[
    "vmid",
    "node",
    "start",
    "pool",
    "storage",
    "archive",
    "force",
    "unique",
    "live-restore",
    "bwlimit",
];
const LXC_CONTROL: &[&str] = &[
    "vmid",
    "node",
    "start",
    "pool",
    "storage",
    "ostemplate",
    "restore",
    "force",
    "unique",
    "ignore-unpack-errors",
    "bwlimit",
    "password",
    "ssh-public-keys",
];

/// Config keys only `root@pam` may set (qemu: everything outside the
/// privilege groups of `check_vm_modify_config_perm`).
pub(crate) const ROOT_ONLY_KEYS: &[&str] = &["args", "lock", "hookscript", "affinity"];

/// `only root can set '<opt>' config` for a non-root caller.
pub(crate) fn check_root_keys<'a>(
    ctx: &Ctx<'_>,
    keys: impl IntoIterator<Item = &'a str>,
) -> Result<(), ApiError> {
    if act::is_root(ctx) {
        return Ok(());
    }
    for k in keys {
        if ROOT_ONLY_KEYS.contains(&k) {
            return Err(die(format!("only root can set '{k}' config")));
        }
    }
    Ok(())
}

/// Who may create or restore guest `vmid`: `VM.Allocate` on it or on the
/// pool; overwriting an existing guest from a backup also with `VM.Backup`.
fn check_create_perm(ctx: &Ctx<'_>, vmid: u32, overwrite: bool) -> Result<(), ApiError> {
    let path = format!("/vms/{vmid}");
    let pool_ok = ctx
        .params
        .get("pool")
        .is_some_and(|p| ctx.can(&format!("/pool/{p}"), "VM.Allocate"));
    if ctx.can(&path, "VM.Allocate") || pool_ok || (overwrite && ctx.can(&path, "VM.Backup")) {
        Ok(())
    } else {
        Err(ApiError::perm(&path, "VM.Allocate"))
    }
}

/// A backup archive listed on `node`.
fn find_backup<'c>(c: &'c Cluster, node: &str, volid: &str) -> Option<&'c Volume> {
    c.volumes.iter().find(|v| {
        v.volid == volid && v.content == "backup" && v.node.as_deref().is_none_or(|n| n == node)
    })
}

fn create_guest(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    let vmid = act::vmid(ctx);
    let restore_src = match kind {
        GuestKind::Qemu => ctx.params.get("archive"),
        GuestKind::Lxc => act::flag(ctx, "restore")
            .then(|| ctx.params.get("ostemplate"))
            .flatten(),
    }
    .map(str::to_string);
    let restore = restore_src.is_some();
    let force = act::flag(ctx, "force");
    let w = word(kind);
    let emsg = format!(
        "unable to {} {w} {vmid} -",
        if restore { "restore" } else { "create" }
    );
    let control = match kind {
        GuestKind::Qemu => QEMU_CONTROL,
        GuestKind::Lxc => LXC_CONTROL,
    };
    let keys: Vec<(String, String)> = ctx
        .params
        .iter()
        .filter(|(k, _)| !control.contains(k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if restore
        && kind == GuestKind::Qemu
        && let Some((k, _)) = keys.iter().find(|(k, _)| conf::is_disk_key(kind, k))
    {
        return Err(ApiError::param(k, "option conflicts with option 'archive'"));
    }
    check_root_keys(ctx, keys.iter().map(|(k, _)| k.as_str()))?;
    if kind == GuestKind::Qemu
        && let Some(k) = ctx.params.get("sshkeys")
        && !crate::ssh_keys::valid_keys(&crate::ssh_keys::uri_unescape(k))
    {
        return Err(die("SSH public key validation error"));
    }

    let mut c = ctx.cluster_mut();
    let existing = c.guests.get(&vmid);
    check_create_perm(ctx, vmid, restore && force && existing.is_some())?;
    if let Some(old) = existing {
        if !(restore && force) || old.node != ctx.node || old.kind != kind {
            return Err(die(format!(
                "{emsg} {} {vmid} already exists on node '{}'",
                word(old.kind),
                old.node
            )));
        }
        if old.is_running() {
            return Err(die(match kind {
                GuestKind::Qemu => format!("{emsg} vm is running"),
                GuestKind::Lxc => "can't overwrite running container".to_string(),
            }));
        }
        if protected(old) {
            return Err(die(format!("{emsg} protection mode enabled")));
        }
        if let Some(err) = act::lock_error(old) {
            return Err(die(err));
        }
    }
    let start = act::flag(ctx, "start");
    let user = act::user(ctx);
    let storage = ctx
        .params
        .get("storage")
        .unwrap_or(if kind == GuestKind::Qemu {
            "local-lvm"
        } else {
            "local"
        })
        .to_string();

    let (ty, mut g, mut spec) = if let Some(archive) = &restore_src {
        let Some(backup) = find_backup(&c, ctx.node, archive) else {
            return Err(die(format!("{emsg} volume '{archive}' does not exist")));
        };
        let src_id = backup.vmid.unwrap_or(vmid);
        let size = backup.size;
        let src = c
            .work
            .backup_configs
            .get(archive)
            .or_else(|| c.guests.get(&src_id).filter(|g| g.kind == kind))
            .cloned()
            .unwrap_or_else(|| crate::seed::base(src_id, kind, ctx.node, None));
        let g = derive(&src, vmid, ctx.node);
        let ty = if kind == GuestKind::Qemu {
            "qmrestore"
        } else {
            "vzrestore"
        };
        let mut spec = Spec::new(ctx.node, ty, vmid.to_string(), &user);
        restore_log(&mut spec, &g, archive, size);
        (ty, g, spec)
    } else {
        let ty = if kind == GuestKind::Qemu {
            "qmcreate"
        } else {
            "vzcreate"
        };
        let mut spec = Spec::new(ctx.node, ty, vmid.to_string(), &user);
        let g = match kind {
            GuestKind::Qemu => {
                // `create_disks` runs in the worker: a cloud-init drive it
                // cannot make fails the task, and no VM is left.
                let drives = match cloudinit_drives(&c, ctx.node, vmid, &keys) {
                    Ok(d) => d,
                    Err(e) => {
                        let spec = spec.fail(format!("{emsg} {}", e.message.trim_end()));
                        return act::upid(work::spawn(&mut c, spec));
                    }
                };
                new_qemu(ctx.node, vmid, &keys, &drives, c.generation, &mut spec)
            }
            GuestKind::Lxc => {
                let template = ctx.params.get("ostemplate").unwrap_or("");
                if template.starts_with('/') && !act::is_root(ctx) {
                    return Err(die("Only root can pass arbitrary filesystem paths."));
                }
                if !c.volumes.iter().any(|v| {
                    v.volid == template
                        && v.content == "vztmpl"
                        && v.node.as_deref().is_none_or(|n| n == ctx.node)
                }) {
                    return Err(die(format!("{emsg} volume '{template}' does not exist")));
                }
                new_lxc(ctx.node, vmid, &keys, &storage, template, &mut spec)
            }
        };
        (ty, g, spec)
    };
    let _ = ty;
    if restore {
        // Restore options that are config keys override the backup's.
        let m = materialize(&mut g);
        for (k, v) in &keys {
            if k != "unprivileged" {
                m.insert(k.clone(), conf::value_for(kind, k, v));
            }
        }
        conf::sync_fields(&mut g);
    }
    if let Some(pool) = ctx.params.get("pool") {
        g.pool = Some(pool.to_string());
    }
    let previous = c.guests.insert(vmid, g);
    if previous.is_some() {
        remove_volumes(&mut c, vmid);
    }
    c.generation += 1;
    spec = spec
        .lock(vmid, "create")
        .effect(move |c: &mut Cluster| {
            add_volumes(c, vmid);
            if start && let Some(g) = c.guests.get_mut(&vmid) {
                act::start_guest(g);
            }
        })
        .undo(move |c: &mut Cluster| {
            c.guests.remove(&vmid);
        });
    act::upid(work::spawn(&mut c, spec))
}

fn protected(g: &Guest) -> bool {
    render(g)
        .get("protection")
        .is_some_and(|v| v == 1 || v == "1")
}

/// The cloud-init drives `<storage>:cloudinit` values of a new VM ask
/// for, as `(key, drive string)`.
fn cloudinit_drives(
    c: &Cluster,
    node: &str,
    vmid: u32,
    keys: &[(String, String)],
) -> Result<Vec<(String, String)>, ApiError> {
    let mut made = Map::new();
    let mut out = Vec::new();
    for (k, v) in keys {
        if conf::is_disk_key(GuestKind::Qemu, k) && cloudinit::requested_storage(v).is_some() {
            let (drive, _) = cloudinit::allocate_drive(c, node, vmid, &made, k, v)?;
            made.insert(k.clone(), drive.clone().into());
            out.push((k.clone(), drive));
        }
    }
    Ok(out)
}

fn new_qemu(
    node: &str,
    vmid: u32,
    keys: &[(String, String)],
    cloudinit_drives: &[(String, String)],
    salt: u64,
    spec: &mut Spec,
) -> Guest {
    let mut g = crate::seed::base(vmid, GuestKind::Qemu, node, None);
    let mut m = Map::new();
    let mut n_disk = 0;
    let mut nic = 0;
    let ostype = keys
        .iter()
        .find(|(k, _)| k == "ostype")
        .map_or("l26", |(_, v)| v.as_str());
    for (k, v) in keys {
        let value = if let Some((_, drive)) = cloudinit_drives.iter().find(|(key, _)| key == k) {
            spec.line(0.5, format!("{k}: successfully created disk '{drive}'"));
            drive.clone()
        } else if k == "cipassword" {
            cloudinit::stored_password(v, ostype, salt)
        } else if conf::is_disk_key(GuestKind::Qemu, k) {
            match conf::allocate_disk(vmid, n_disk, v) {
                Some((drive, _)) => {
                    let volid = conf::drive_volid(&drive).to_string();
                    let lv = volid.split_once(':').map_or("", |(_, n)| n).to_string();
                    spec.line(0.3, format!("  Logical volume \"{lv}\" created."));
                    spec.line(0.5, format!("{k}: successfully created disk '{drive}'"));
                    n_disk += 1;
                    drive
                }
                None => v.clone(),
            }
        } else if k.starts_with("net") && k[3..].bytes().all(|b| b.is_ascii_digit()) {
            let s = with_mac(GuestKind::Qemu, v, &mac(vmid, nic));
            nic += 1;
            s
        } else {
            v.clone()
        };
        m.insert(k.clone(), conf::value_for(GuestKind::Qemu, k, &value));
    }
    m.insert(
        "smbios1".into(),
        format!("uuid=6f1c{vmid:04x}-1d2e-4c3b-9a8d-{vmid:012x}").into(),
    );
    m.insert(
        "vmgenid".into(),
        format!("0e7a{vmid:04x}-5b6c-4d7e-8f90-{vmid:012x}").into(),
    );
    m.insert(
        "meta".into(),
        format!("creation-qemu=10.1.2,ctime={}", now_secs()).into(),
    );
    g.conf = Some(m);
    conf::sync_fields(&mut g);
    g
}

fn new_lxc(
    node: &str,
    vmid: u32,
    keys: &[(String, String)],
    storage: &str,
    template: &str,
    spec: &mut Spec,
) -> Guest {
    let mut g = crate::seed::base(vmid, GuestKind::Lxc, node, None);
    let mut m = Map::new();
    let mut nic = 0;
    m.insert("arch".into(), "amd64".into());
    let file = template.rsplit('/').next().unwrap_or(template);
    let ostype = file.split(['-', '_']).next().unwrap_or("debian");
    m.insert("ostype".into(), ostype.into());
    m.insert("unprivileged".into(), 1.into());
    let mut rootfs = format!("{storage}:4");
    for (k, v) in keys {
        if k == "rootfs" {
            rootfs = v.clone();
            continue;
        }
        let value = if k.starts_with("net") && k[3..].bytes().all(|b| b.is_ascii_digit()) {
            let s = with_mac(GuestKind::Lxc, v, &mac(vmid, nic));
            nic += 1;
            s
        } else {
            v.clone()
        };
        m.insert(k.clone(), conf::value_for(GuestKind::Lxc, k, &value));
    }
    let (drive, size) = conf::allocate_disk(vmid, 0, &rootfs).unwrap_or((rootfs.clone(), 0));
    let lv = conf::drive_volid(&drive)
        .split_once(':')
        .map_or("", |(_, n)| n)
        .to_string();
    m.insert("rootfs".into(), drive.into());
    let blocks = size / 4096;
    spec.line(0.1, format!("  Logical volume \"{lv}\" created."));
    spec.line(
        0.2,
        format!(
            "Creating filesystem with {blocks} 4k blocks and {} inodes",
            blocks / 4
        ),
    );
    spec.line(
        0.3,
        format!("extracting archive '/var/lib/vz/template/cache/{file}'"),
    );
    spec.line(0.7, "Total bytes read: 524288000 (500MiB, 168MiB/s)");
    spec.line(0.8, "Detected container architecture: amd64");
    spec.line(
        0.9,
        "Creating SSH host key 'ssh_host_ed25519_key' - this may take some time ...",
    );
    spec.line(
        0.95,
        "done: SHA256:Yx3b1p0Wq7cN2kR5tV8zD4fG6hJ9mL1sA3eU7iO0pQw root@localhost",
    );
    g.conf = Some(m);
    conf::sync_fields(&mut g);
    g
}

fn restore_log(spec: &mut Spec, g: &Guest, archive: &str, size: u64) {
    let disks = conf::disks(g.kind, &render(g));
    let total: u64 = disks.iter().map(|d| d.2).sum::<u64>().max(size);
    let file = archive.rsplit('/').next().unwrap_or(archive);
    match g.kind {
        GuestKind::Qemu => {
            spec.line(
                0.0,
                format!(
                    "restore vma archive: zstd -q -d -c /mnt/pve/nfs-backup/dump/{file} | vma extract -v -r /var/tmp/vzdumptmp{0}.fifo - /var/tmp/vzdumptmp{0}",
                    g.vmid
                ),
            );
            spec.line(0.0, "CFG: size: 612 name: qemu-server.conf");
            for (key, volid, size) in &disks {
                spec.line(
                    0.05,
                    format!("DEV: dev_id=1 size: {size} devname: drive-{key}"),
                );
                spec.line(0.1, format!("new volume ID is '{volid}'"));
            }
            for pct in [10u64, 25, 50, 75, 100] {
                spec.line(
                    pct as f64 / 110.0,
                    format!(
                        "progress {pct}% (read {} bytes, duration {} sec)",
                        total / 100 * pct,
                        pct / 10
                    ),
                );
            }
            spec.line(
                0.95,
                format!(
                    "total bytes read {total}, sparse bytes {} (87.5%)",
                    total / 8 * 7
                ),
            );
            spec.line(0.97, "rescan volumes...");
        }
        GuestKind::Lxc => {
            for (_, volid, size) in &disks {
                spec.line(
                    0.05,
                    format!(
                        "  Logical volume \"{}\" created.",
                        volid.split_once(':').map_or("", |p| p.1)
                    ),
                );
                spec.line(
                    0.1,
                    format!(
                        "Creating filesystem with {} 4k blocks and {} inodes",
                        size / 4096,
                        size / 16384
                    ),
                );
            }
            spec.line(
                0.2,
                format!("restoring '/mnt/pve/nfs-backup/dump/{file}' now.."),
            );
            spec.line(
                0.8,
                format!(
                    "Total bytes read: {total} ({}, 180MiB/s)",
                    super::power::human(total)
                ),
            );
            spec.line(0.9, "merging backed-up and given configuration..");
        }
    }
}

pub(crate) fn qemu_create(ctx: &Ctx<'_>) -> HandlerResult {
    create_guest(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_create(ctx: &Ctx<'_>) -> HandlerResult {
    create_guest(ctx, GuestKind::Lxc)
}

// ---------------------------------------------------------------- clone

fn clone_guest(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    let newid: u32 = ctx
        .params
        .get("newid")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let w = word(kind);
    let mut c = ctx.cluster_mut();
    let src = act::guest(&c, ctx, kind)?;
    let vmid = src.vmid;
    let pool_ok = ctx
        .params
        .get("pool")
        .is_some_and(|p| ctx.can(&format!("/pool/{p}"), "VM.Allocate"));
    if !pool_ok {
        act::require(ctx, &format!("/vms/{newid}"), "VM.Allocate")?;
    }
    if let Some(err) = act::lock_error(src) {
        return Err(die(err));
    }
    if c.guests.contains_key(&newid) {
        return Err(die(format!(
            "unable to create {w} {newid}: config file already exists"
        )));
    }
    let full = match ctx.params.get("full") {
        Some(v) => v == "1",
        None => !src.template,
    };
    let src_conf = render(src);
    let disks = conf::disks(kind, &src_conf);
    if !full {
        if let Some(k) = ["storage", "format"]
            .iter()
            .find(|k| ctx.params.get(k).is_some())
        {
            return Err(die(format!(
                "parameter '{k}' not allowed for linked clones"
            )));
        }
        if !src.template
            && let Some((key, volid, _)) = disks.first()
        {
            return Err(die(match kind {
                GuestKind::Qemu => {
                    format!("Linked clone feature is not supported for drive '{key}'")
                }
                GuestKind::Lxc => format!("Linked clone feature for '{volid}' is not available"),
            }));
        }
    }
    let target = ctx.params.get("target").unwrap_or(ctx.node).to_string();
    if target != ctx.node {
        if c.node(&target).is_none() {
            return Err(die(format!("no such cluster node '{target}'")));
        }
        let local = disks.iter().any(|(_, volid, _)| {
            volid
                .split_once(':')
                .is_some_and(|(s, _)| !shared_storage(&c, s))
        });
        if local {
            return Err(die(format!(
                "can't clone {w} to node '{target}' ({w} uses local storage)"
            )));
        }
    }
    if kind == GuestKind::Lxc && full && src.is_running() && ctx.params.get("snapname").is_none() {
        return Err(die(
            "Cannot do full clones on a running container without snapshots",
        ));
    }
    let mut g = derive(src, newid, &target);
    {
        let m = materialize(&mut g);
        match kind {
            GuestKind::Qemu => {
                let name = ctx
                    .params
                    .get("name")
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("Copy-of-VM-{}", src.display_name()));
                m.insert("name".into(), name.into());
            }
            GuestKind::Lxc => {
                if let Some(h) = ctx.params.get("hostname") {
                    m.insert("hostname".into(), h.into());
                }
            }
        }
        if let Some(d) = ctx.params.get("description") {
            m.insert("description".into(), d.into());
        }
        if full && let Some(storage) = ctx.params.get("storage") {
            for (k, v) in m.iter_mut() {
                if conf::is_disk_key(kind, k)
                    && let Some(s) = v.as_str()
                    && !conf::is_cdrom(s)
                    && let Some((_, rest)) = s.split_once(':')
                {
                    *v = format!("{storage}:{rest}").into();
                }
            }
        }
    }
    conf::sync_fields(&mut g);
    if let Some(pool) = ctx.params.get("pool") {
        g.pool = Some(pool.to_string());
    }
    let ty = if kind == GuestKind::Qemu {
        "qmclone"
    } else {
        "vzclone"
    };
    let mut spec = Spec::new(ctx.node, ty, vmid.to_string(), &act::user(ctx));
    let new_disks = conf::disks(kind, &render(&g));
    for ((key, volid, size), (_, new_volid, _)) in disks.iter().zip(&new_disks) {
        let what = match kind {
            GuestKind::Qemu => format!("drive {key}"),
            GuestKind::Lxc => format!("mountpoint {key}"),
        };
        let mode = if full { "full" } else { "linked" };
        spec.line(0.0, format!("create {mode} clone of {what} ({volid})"));
        spec.line(
            0.05,
            format!(
                "  Logical volume \"{}\" created.",
                new_volid.split_once(':').map_or("", |p| p.1)
            ),
        );
        if full {
            for pct in [0u64, 25, 50, 75, 100] {
                let done = size / 100 * pct;
                spec.line(
                    0.1 + pct as f64 / 120.0,
                    format!(
                        "transferred {} of {} ({pct}.00%)",
                        super::power::human(done),
                        super::power::human(*size)
                    ),
                );
            }
        }
    }
    let new_lock = match kind {
        GuestKind::Qemu => "clone",
        GuestKind::Lxc => "create",
    };
    c.guests.insert(newid, g);
    spec = spec.lock(newid, new_lock).flock(vmid);
    if kind == GuestKind::Lxc {
        spec = spec.lock(vmid, "disk");
    }
    let spec = spec
        .effect(move |c: &mut Cluster| add_volumes(c, newid))
        .undo(move |c: &mut Cluster| {
            c.guests.remove(&newid);
        });
    act::upid(work::spawn(&mut c, spec))
}

pub(crate) fn qemu_clone(ctx: &Ctx<'_>) -> HandlerResult {
    clone_guest(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_clone(ctx: &Ctx<'_>) -> HandlerResult {
    clone_guest(ctx, GuestKind::Lxc)
}

// ---------------------------------------------------------------- migrate

fn migrate(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    act::root_only(ctx, &["force", "migration_type", "migration_network"])?;
    let target = ctx.params.get("target").unwrap_or("").to_string();
    if target == ctx.node {
        return Err(ApiError::param("target", "target is local node."));
    }
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, kind)?;
    let vmid = g.vmid;
    let w = word(kind);
    let Some(target_node) = c.node(&target) else {
        return Err(die(format!("no such cluster node '{target}'")));
    };
    let target_online = target_node.online;
    let target_ip = target_node.ip.clone();
    let online = act::flag(ctx, "online");
    let restart = act::flag(ctx, "restart");
    let running = g.is_running();
    match kind {
        GuestKind::Qemu if running && !online => {
            return Err(die("can't migrate running VM without --online"));
        }
        GuestKind::Lxc if running && !online && !restart => {
            return Err(die(
                "can't migrate running container without --online or --restart",
            ));
        }
        _ => {}
    }
    let user = act::user(ctx);
    if g.ha.as_ref().is_some_and(|h| h.state != "ignored") {
        let mut spec = Spec::new(ctx.node, "hamigrate", vmid.to_string(), &user);
        spec.line(
            0.0,
            format!("Requesting HA migration for {w} {vmid} to node {target}"),
        );
        // `ha-manager migrate <sid> <target>`: the CRM takes it from there
        // (`crate::ha`), its LRM running the migration as `root@pam`.
        let sid = crate::ha::sid(g);
        let spec = spec.effect(move |c: &mut Cluster| {
            crate::ha::request_motion(c, &sid, "migrate", &target);
        });
        return act::upid(work::spawn(&mut c, spec));
    }

    let ty = if kind == GuestKind::Qemu {
        "qmigrate"
    } else {
        "vzmigrate"
    };
    let mut spec = Spec::new(ctx.node, ty, vmid.to_string(), &user);
    let t = |s: u64, msg: String| format!("{} {msg}", stamp(s));
    spec.line(
        0.0,
        t(
            0,
            format!("starting migration of {w} {vmid} to node '{target}' ({target_ip})"),
        ),
    );
    let disks = conf::disks(kind, &render(g));
    let fail = |mut spec: Spec, err: String| {
        spec.line(0.5, t(1, format!("ERROR: {err}")));
        spec.line(
            0.6,
            t(1, "aborting phase 1 - cleanup resources".to_string()),
        );
        spec.line(
            0.7,
            t(
                2,
                "ERROR: migration aborted (duration 00:00:02): ".to_string() + &err,
            ),
        );
        spec.fail("migration aborted")
    };
    if let Some(err) = act::busy(&c, g) {
        return act::upid(work::spawn(&mut c, fail(spec, err)));
    }
    if !target_online {
        let err = "migration aborted (duration 00:00:03): Can't connect to destination address using public key";
        spec.line(0.5, t(3, format!("ERROR: {err}")));
        return act::upid(work::spawn(&mut c, spec.fail("migration aborted")));
    }
    if kind == GuestKind::Lxc && running && online && !restart {
        return act::upid(work::spawn(
            &mut c,
            spec.fail("lxc live migration is currently not implemented"),
        ));
    }
    let local_disks =
        ctx.params.get("targetstorage").is_some() || act::flag(ctx, "with-local-disks");
    let live = kind == GuestKind::Qemu && running;
    if live && !local_disks && !disks.is_empty() {
        let err =
            "can't live migrate attached local disks without with-local-disks option".to_string();
        return act::upid(work::spawn(
            &mut c,
            fail(
                spec,
                format!("Problem found while scanning volumes - {err}"),
            ),
        ));
    }
    for (_, volid, _) in &disks {
        spec.line(0.02, t(0, format!("found local disk '{volid}' (attached)")));
    }
    if kind == GuestKind::Lxc && running && restart {
        spec.line(0.05, t(0, format!("shutdown CT {vmid}")));
    }
    for (key, volid, size) in &disks {
        if live {
            spec.line(0.1, t(2, format!("{key}: start migration to nbd:unix:/run/qemu-server/{vmid}_nbd.migrate:exportname=drive-{key}")));
            spec.line(0.1, "drive mirror is starting for drive-".to_string() + key);
        } else {
            spec.line(0.1, t(1, format!("copying local disk images ({volid})")));
        }
        for pct in [25u64, 50, 75, 100] {
            let line = format!(
                "{}transferred {} of {} ({pct}.00%)",
                if live {
                    format!("drive-{key}: ")
                } else {
                    String::new()
                },
                super::power::human(size / 100 * pct),
                super::power::human(*size)
            );
            spec.line(0.1 + pct as f64 / 250.0, line);
        }
    }
    if live {
        let mem = g.maxmem();
        spec.line(
            0.55,
            t(
                10,
                "starting online/live migration on unix:/run/qemu-server/".to_string()
                    + &format!("{vmid}.migrate"),
            ),
        );
        spec.line(0.56, t(10, "set migration capabilities".into()));
        spec.line(0.57, t(10, "migration downtime limit: 100 ms".into()));
        for pct in [25u64, 50, 75] {
            spec.line(
                0.6 + pct as f64 / 400.0,
                t(
                    11,
                    format!(
                        "migration active, transferred {} of {} VM-state, 1.1 GiB/s",
                        super::power::human(mem / 100 * pct),
                        super::power::human(mem)
                    ),
                ),
            );
        }
        spec.line(0.85, t(14, "migration status: completed".into()));
    }
    if kind == GuestKind::Lxc && running && restart {
        spec.line(0.9, t(15, "start final cleanup".to_string()));
        spec.line(0.92, t(15, "start container on target node".to_string()));
    }
    spec.line(
        0.99,
        t(
            16,
            "migration finished successfully (duration 00:00:16)".into(),
        ),
    );
    let keep_running = running && (live || restart);
    let spec = spec
        .lock(vmid, "migrate")
        .effect(move |c: &mut Cluster| move_guest(c, vmid, &target, keep_running));
    act::upid(work::spawn(&mut c, spec))
}

/// The guest and its local disks now live on `target`.
fn move_guest(c: &mut Cluster, vmid: u32, target: &str, keep_running: bool) {
    let Some(g) = c.guests.get_mut(&vmid) else {
        return;
    };
    g.node = target.to_string();
    if keep_running {
        act::start_guest(g);
    } else {
        act::stop_guest(g);
    }
    for v in &mut c.volumes {
        if v.vmid == Some(vmid) && v.node.is_some() && matches!(v.content, "images" | "rootdir") {
            v.node = Some(target.to_string());
        }
    }
}

pub(crate) fn qemu_migrate(ctx: &Ctx<'_>) -> HandlerResult {
    migrate(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_migrate(ctx: &Ctx<'_>) -> HandlerResult {
    migrate(ctx, GuestKind::Lxc)
}

// ---------------------------------------------------------------- destroy

fn destroy(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    act::root_only(ctx, &["skiplock"])?;
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, kind)?;
    let vmid = g.vmid;
    let w = word(kind);
    let purge = act::flag(ctx, "purge");
    let force = act::flag(ctx, "force");
    if protected(g) {
        return Err(die(format!(
            "can't remove {w} {vmid} - protection mode enabled"
        )));
    }
    if g.ha.is_some() && !purge {
        return Err(die(format!(
            "unable to remove {w} {vmid} - used in HA resources and purge parameter not set."
        )));
    }
    match kind {
        GuestKind::Qemu if g.is_running() => {
            return Err(die(format!("VM {vmid} is running - destroy failed")));
        }
        GuestKind::Lxc => {
            if let Some(err) = act::lock_error(g) {
                return Err(die(err));
            }
            if g.is_running() && !force {
                return Err(die(format!(
                    "unable to destroy CT {vmid} - container is running"
                )));
            }
        }
        _ => {}
    }
    let ty = if kind == GuestKind::Qemu {
        "qmdestroy"
    } else {
        "vzdestroy"
    };
    let mut spec = Spec::new(ctx.node, ty, vmid.to_string(), &act::user(ctx));
    if let Some(err) = act::busy(&c, g) {
        return act::upid(work::spawn(&mut c, spec.fail(err)));
    }
    if g.is_running() {
        spec.line(0.0, format!("stopping CT {vmid}"));
    }
    for (_, volid, _) in conf::disks(kind, &render(g)) {
        spec.line(
            0.5,
            format!(
                "  Logical volume \"{}\" successfully removed.",
                volid.split_once(':').map_or("", |p| p.1)
            ),
        );
    }
    if purge {
        spec.line(
            0.8,
            format!("purging {w} {vmid} from related configurations.."),
        );
        spec.line(0.85, "from HA resources");
    }
    let spec = spec.flock(vmid).effect(move |c: &mut Cluster| {
        c.guests.remove(&vmid);
        remove_volumes(c, vmid);
    });
    act::upid(work::spawn(&mut c, spec))
}

pub(crate) fn qemu_destroy(ctx: &Ctx<'_>) -> HandlerResult {
    destroy(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_destroy(ctx: &Ctx<'_>) -> HandlerResult {
    destroy(ctx, GuestKind::Lxc)
}
