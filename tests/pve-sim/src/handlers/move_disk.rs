//! Disk moves: `POST .../qemu/{vmid}/move_disk` and
//! `POST .../lxc/{vmid}/move_volume`, as qemu-server's `move_vm_disk` and
//! pve-container's `move_volume` do them.
//!
//! With `storage` the disk is copied to a new volume there (a `qmmove` /
//! `move_volume` task) and the config points at the copy; the source stays
//! as `unusedN` unless `delete=1` frees it. With `target-vmid` the volume
//! is renamed to belong to another guest on the same node. The checks PVE
//! runs before forking answer at once (500, or 400 for parameters); QEMU
//! holds the config file lock while it copies, a container the `disk`
//! config lock.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Ctx;
use super::act::{self, die, word};
use super::cloudinit;
use super::config::{config_digest, materialize, render};
use super::power::human;
use super::storage_cfg::{self, fs_base, has_content};
use crate::conf;
use crate::errors::{ApiError, HandlerResult};
use crate::state::{Cluster, Guest, GuestKind, Storage, Volume};
use crate::work::{self, Spec};

/// `PVE::Tools::assert_if_modified`'s message.
const MODIFIED: &str = "detected modified configuration - file changed by other user? Try again.";

/// A 400 naming both `storage` and `target-vmid`.
fn both(msg: &str) -> ApiError {
    let mut m = BTreeMap::new();
    m.insert("storage".to_string(), msg.to_string());
    m.insert("target-vmid".to_string(), msg.to_string());
    ApiError::params(m)
}

/// A drive string pointing at another volume (its options kept, `size`
/// last as PVE prints it); an `unusedN` entry is the bare volid.
fn with_volume(key: &str, value: &str, volid: &str, size: Option<u64>) -> String {
    if conf::is_unused_key(key) {
        return volid.to_string();
    }
    let mut parts = vec![volid.to_string()];
    parts.extend(
        value
            .split(',')
            .skip(1)
            .filter(|o| !o.starts_with("size="))
            .map(str::to_string),
    );
    if let Some(s) = size {
        parts.push(format!("size={}", super::size_str(s)));
    }
    parts.join(",")
}

/// The first free `unusedN` key of a config.
fn free_unused(conf: &serde_json::Map<String, Value>) -> String {
    (0..)
        .map(|i| format!("unused{i}"))
        .find(|k| !conf.contains_key(k))
        .unwrap_or_default()
}

/// The LV or file name of a volid.
fn volname_leaf(volid: &str) -> &str {
    volid.rsplit([':', '/']).next().unwrap_or(volid)
}

/// The log lines of allocating `volid` (`size` bytes, `format`) on `s`.
fn alloc_lines(spec: &mut Spec, at: f64, s: &Storage, volid: &str, format: &str, size: u64) {
    let volname = volid.split_once(':').map_or(volid, |(_, n)| n);
    match fs_base(s) {
        None => {
            spec.line(
                at,
                format!("  Logical volume \"{}\" created.", volname_leaf(volid)),
            );
        }
        Some(_) => {
            let path = storage_cfg::fs_path(s, volname);
            let line = if format == "qcow2" {
                format!(
                    "Formatting '{path}', fmt=qcow2 cluster_size=65536 extended_l2=off \
                     preallocation=metadata compression_type=zlib size={size} \
                     lazy_refcounts=off refcount_bits=16"
                )
            } else {
                format!("Formatting '{path}', fmt={format} size={size}")
            };
            spec.line(at, line);
        }
    }
}

/// The lines of freeing `volid` (LVM reports its LV; files go quietly).
fn free_lines(spec: &mut Spec, at: f64, c: &Cluster, volid: &str) {
    let sid = volid.split_once(':').map_or("", |(s, _)| s);
    if storage_cfg::config(c, sid).is_ok_and(|s| fs_base(s).is_none()) {
        spec.line(
            at,
            format!(
                "  Logical volume \"{}\" successfully removed.",
                volname_leaf(volid)
            ),
        );
    }
}

/// A new volume of a guest.
fn new_volume(
    s: &Storage,
    node: &str,
    volid: &str,
    kind: GuestKind,
    vmid: u32,
    size: u64,
) -> Volume {
    Volume {
        storage: s.id.clone(),
        node: (!s.shared).then(|| node.to_string()),
        volid: volid.to_string(),
        content: match kind {
            GuestKind::Qemu => "images",
            GuestKind::Lxc => "rootdir",
        },
        format: storage_cfg::format_of(volid),
        size,
        ctime: Some(crate::util::now_secs()),
        vmid: Some(vmid),
        notes: None,
        protected: false,
        subtype: None,
        verification: None,
        encrypted: None,
    }
}

/// Points the guest's `key` at `new_volid`, keeps the old volume as
/// `unusedN` or frees it, and lists the new volume.
struct Swap {
    vmid: u32,
    node: String,
    key: String,
    old_volid: String,
    new: Volume,
    delete: bool,
}

fn swap(c: &mut Cluster, s: Swap) {
    let Some(g) = c.guests.get_mut(&s.vmid) else {
        return;
    };
    let m = materialize(g);
    let Some(cur) = m.get(&s.key).and_then(Value::as_str).map(str::to_string) else {
        return;
    };
    let size = conf::drive_size(&cur);
    m.insert(
        s.key.clone(),
        with_volume(&s.key, &cur, &s.new.volid, size).into(),
    );
    if !s.delete {
        let unused = free_unused(m);
        m.insert(unused, s.old_volid.clone().into());
    }
    conf::sync_fields(g);
    if s.delete {
        c.volumes
            .retain(|v| !(v.volid == s.old_volid && v.node.as_deref().is_none_or(|n| n == s.node)));
    }
    storage_cfg::put_volume(c, s.new);
    c.generation += 1;
}

// ------------------------------------------------------------ qemu

/// `POST /nodes/{node}/qemu/{vmid}/move_disk`.
pub(crate) fn qemu_move_disk(ctx: &Ctx<'_>) -> HandlerResult {
    match (ctx.params.get("storage"), ctx.params.get("target-vmid")) {
        (Some(_), Some(_)) => Err(both("either set 'storage' or 'target-vmid', but not both")),
        (Some(storage), None) => qemu_to_storage(ctx, storage),
        (None, Some(target)) => reassign(ctx, GuestKind::Qemu, target),
        (None, None) => Err(both(
            "both 'storage' and 'target-vmid' missing, either needs to be set",
        )),
    }
}

fn qemu_to_storage(ctx: &Ctx<'_>, storeid: &str) -> HandlerResult {
    act::require(
        ctx,
        &format!("/storage/{storeid}"),
        "Datastore.AllocateSpace",
    )?;
    let p = ctx.params;
    let disk = p.get("disk").unwrap_or("").to_string();
    let delete = act::flag(ctx, "delete");
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, GuestKind::Qemu)?;
    let vmid = g.vmid;
    // `$load_and_check_move`, in its order.
    if let Some(e) = act::lock_error(g) {
        return Err(die(e));
    }
    if p.get("digest").is_some_and(|d| d != config_digest(g)) {
        return Err(die(MODIFIED));
    }
    let conf = render(g);
    let Some(value) = conf.get(&disk).and_then(Value::as_str).map(str::to_string) else {
        return Err(die(format!("disk '{disk}' does not exist")));
    };
    let old_volid = conf::drive_volid(&value).to_string();
    let is_ci = cloudinit::is_cloudinit_drive(&value);
    if conf::is_cdrom(&value) && !is_ci {
        return Err(die("you can't move a cdrom"));
    }
    let Some((old_store, _)) = old_volid.split_once(':') else {
        return Err(die(format!("unable to parse volume ID '{old_volid}'")));
    };
    let old_format = storage_cfg::format_of(&old_volid);
    let format = p.get("format");
    if old_store == storeid && format.is_none_or(|f| f == old_format) {
        return Err(die("you can't move to the same storage with same format"));
    }
    let s = storage_cfg::check_enabled(&c, storeid, ctx.node)?;
    if !has_content(s, "images") {
        return Err(ApiError::param(
            "storage",
            format!("storage '{storeid}' does not support vm images"),
        ));
    }
    let snapshotted = !g.snapshots.is_empty();
    if snapshotted && delete {
        return Err(die(
            "you can't move a disk with snapshots and delete the source",
        ));
    }

    let mut spec = Spec::new(ctx.node, "qmmove", vmid.to_string(), &act::user(ctx));
    if work::flocked(&c, vmid) {
        let spec = spec.fail(act::flock_error(GuestKind::Qemu, vmid));
        return act::upid(work::spawn(&mut c, spec));
    }
    let mut warnings = Vec::new();
    let formats = storage_cfg::formats(s);
    let dst_format = match format {
        Some(f) if formats.contains(&f) => storage_cfg::leak_format(f),
        _ if formats.contains(&old_format) => old_format,
        _ => formats[0],
    };
    let size = if is_ci {
        cloudinit::DRIVE_SIZE
    } else {
        conf::drive_size(&value)
            .or_else(|| storage_cfg::volume_on(&c, &old_volid, ctx.node).map(|v| v.size))
            .unwrap_or(0)
    };
    let name = if is_ci {
        format!("vm-{vmid}-cloudinit")
    } else {
        let n = storage_cfg::free_disk_number(&c, storeid, ctx.node, vmid);
        format!("vm-{vmid}-disk-{n}")
    };
    let allocated = storage_cfg::image_volid(s, vmid, &name, dst_format);
    // `template_create` turns a template's new disk into a base volume.
    let final_volid = if g.template && !is_ci {
        allocated.replace(&format!("vm-{vmid}-disk-"), &format!("base-{vmid}-disk-"))
    } else {
        allocated.clone()
    };

    spec.line(
        0.0,
        format!(
            "copying volume '{old_volid}' from current storage '{old_store}' to target storage '{storeid}'"
        ),
    );
    if snapshotted {
        warnings.push("moving disk with snapshots, snapshots will not be moved!".to_string());
        spec.line(
            0.0,
            "WARN: moving disk with snapshots, snapshots will not be moved!",
        );
    }
    spec.line(
        0.01,
        format!("create full clone of drive {disk} ({old_volid})"),
    );
    if let Some(f) = format.filter(|f| *f != dst_format) {
        let w = format!(
            "format '{f}' is not supported by the target storage '{storeid}' - using '{dst_format}' instead"
        );
        spec.line(0.01, format!("WARN: {w}"));
        warnings.push(w);
    }
    alloc_lines(&mut spec, 0.02, s, &allocated, dst_format, size);
    spec.line(0.03, format!("allocated target volume '{allocated}'"));
    if !is_ci {
        copy_lines(&mut spec, &disk, size, g.is_running());
    }
    if final_volid != allocated {
        let vg = if fs_base(s).is_none() {
            " in volume group \"pve\""
        } else {
            ""
        };
        if !vg.is_empty() {
            spec.line(
                0.92,
                format!(
                    "  Renamed \"{}\" to \"{}\"{vg}",
                    volname_leaf(&allocated),
                    volname_leaf(&final_volid)
                ),
            );
        }
    }
    if delete {
        spec.line(
            0.95,
            format!("removing source volume '{old_volid}' after successful copy"),
        );
        free_lines(&mut spec, 0.97, &c, &old_volid);
    } else {
        spec.line(
            0.95,
            format!(
                "adding source volume '{old_volid}' as '{}' to config",
                free_unused(&conf)
            ),
        );
    }
    let job = Swap {
        vmid,
        node: ctx.node.to_string(),
        key: disk,
        old_volid,
        new: new_volume(s, ctx.node, &final_volid, GuestKind::Qemu, vmid, size),
        delete,
    };
    let spec = spec.flock(vmid);
    let spec = if warnings.is_empty() {
        spec.effect(move |c: &mut Cluster| swap(c, job))
    } else {
        // A task with warnings still did its work.
        spec.fail(format!("WARNINGS: {}", warnings.len()))
            .always(move |c: &mut Cluster| swap(c, job))
    };
    act::upid(work::spawn(&mut c, spec))
}

/// qemu-img's or the drive mirror's progress.
fn copy_lines(spec: &mut Spec, disk: &str, size: u64, running: bool) {
    if running {
        spec.line(0.05, format!("drive mirror is starting for drive-{disk}"));
    }
    for (i, pct) in [0u64, 25, 50, 75, 100].into_iter().enumerate() {
        let done = size / 100 * pct;
        let at = 0.1 + pct as f64 / 130.0;
        let text = format!("transferred {} of {} ({pct}.00%)", human(done), human(size));
        if running {
            let ready = if pct == 100 { ", ready" } else { "" };
            spec.line(at, format!("drive-{disk}: {text} in {i}s{ready}"));
        } else {
            spec.line(at, text);
        }
    }
    if running {
        spec.line(0.88, "all 'mirror' jobs are ready");
        spec.line(0.89, format!("drive-{disk}: Completing block job..."));
        spec.line(0.9, format!("drive-{disk}: Completed successfully."));
        spec.line(0.91, format!("drive-{disk}: mirror-job finished"));
    }
}

// ------------------------------------------------------------ lxc

/// `POST /nodes/{node}/lxc/{vmid}/move_volume`.
pub(crate) fn lxc_move_volume(ctx: &Ctx<'_>) -> HandlerResult {
    match (ctx.params.get("storage"), ctx.params.get("target-vmid")) {
        (Some(_), Some(_)) => Err(die("either set storage or target-vmid, but not both")),
        (Some(storage), None) => lxc_to_storage(ctx, storage),
        (None, Some(target)) => reassign(ctx, GuestKind::Lxc, target),
        (None, None) => Err(both(
            "both 'storage' and 'target-vmid' missing, either needs to be set",
        )),
    }
}

fn lxc_to_storage(ctx: &Ctx<'_>, storeid: &str) -> HandlerResult {
    act::require(
        ctx,
        &format!("/storage/{storeid}"),
        "Datastore.AllocateSpace",
    )?;
    let p = ctx.params;
    let key = p.get("volume").unwrap_or("").to_string();
    let delete = act::flag(ctx, "delete");
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, GuestKind::Lxc)?;
    let vmid = g.vmid;
    // `$move_to_storage_checks`, under the config file lock.
    if work::flocked(&c, vmid) {
        return Err(die(act::flock_error(GuestKind::Lxc, vmid)));
    }
    if let Some(e) = act::lock_error(g) {
        return Err(die(e));
    }
    if g.is_running() {
        return Err(die("cannot move volumes of a running container"));
    }
    if conf::is_unused_key(&key) {
        return Err(die(format!(
            "cannot move volume '{key}', only configured volumes can be moved to another storage"
        )));
    }
    let conf = render(g);
    let Some(value) = conf.get(&key).and_then(Value::as_str).map(str::to_string) else {
        // `parse_volume` of nothing: the mount point's required members.
        let mut e = BTreeMap::new();
        for k in ["mp", "volume"] {
            e.insert(
                k.to_string(),
                "property is missing and it is not optional".to_string(),
            );
        }
        return Err(ApiError {
            errors: Some(e),
            ..ApiError::new(500, "format error\n")
        });
    };
    if delete && !g.snapshots.is_empty() {
        return Err(die(
            "you can't move a volume with snapshots and delete the source",
        ));
    }
    if p.get("digest").is_some_and(|d| d != config_digest(g)) {
        return Err(die(MODIFIED));
    }
    let old_volid = conf::drive_volid(&value).to_string();
    let template = g.template;
    let used = g.disk;
    let mut spec =
        Spec::new(ctx.node, "move_volume", vmid.to_string(), &act::user(ctx)).lock(vmid, "disk");
    // The copy (`alloc_disk`, mkfs, rsync) fails in the task.
    let s = match storage_cfg::config(&c, storeid) {
        Ok(s) if has_content(s, "rootdir") => s,
        Ok(_) => {
            let spec = spec.fail(format!(
                "content type 'rootdir' is not available or configured on storage '{storeid}'"
            ));
            return act::upid(work::spawn(&mut c, spec));
        }
        Err(e) => {
            let spec = spec.fail(e.message.trim_end().to_string());
            return act::upid(work::spawn(&mut c, spec));
        }
    };
    if !old_volid.contains(':') {
        let spec = spec.fail("cannot copy volumes of type bind");
        return act::upid(work::spawn(&mut c, spec));
    }
    let size = conf::drive_size(&value).unwrap_or(0);
    let n = storage_cfg::free_disk_number(&c, storeid, ctx.node, vmid);
    let allocated = storage_cfg::image_volid(s, vmid, &format!("vm-{vmid}-disk-{n}"), "raw");
    let final_volid = if template {
        allocated.replace(&format!("vm-{vmid}-disk-"), &format!("base-{vmid}-disk-"))
    } else {
        allocated.clone()
    };
    alloc_lines(&mut spec, 0.05, s, &allocated, "raw", size);
    let blocks = size / 4096;
    spec.line(
        0.1,
        format!(
            "Creating filesystem with {blocks} 4k blocks and {} inodes",
            blocks / 4
        ),
    );
    spec.line(
        0.8,
        "Number of files: 31,862 (reg: 24,317, dir: 3,215, link: 4,297, special: 33)",
    );
    spec.line(
        0.81,
        "Number of created files: 31,861 (reg: 24,317, dir: 3,214, link: 4,297, special: 33)",
    );
    spec.line(0.82, format!("Total file size: {used} bytes"));
    spec.line(0.83, format!("Total transferred file size: {used} bytes"));
    spec.line(
        0.84,
        format!(
            "sent {} bytes  received 612,943 bytes  98,304,120.00 bytes/sec",
            used + used / 200
        ),
    );
    spec.line(0.85, format!("total size is {used}  speedup is 1.00"));
    if delete {
        free_lines(&mut spec, 0.95, &c, &old_volid);
    }
    let job = Swap {
        vmid,
        node: ctx.node.to_string(),
        key,
        old_volid,
        new: new_volume(s, ctx.node, &final_volid, GuestKind::Lxc, vmid, size),
        delete,
    };
    let spec = spec.effect(move |c: &mut Cluster| swap(c, job));
    act::upid(work::spawn(&mut c, spec))
}

// ------------------------------------------------------------ reassign

/// The source and target guests of a reassignment, checked like
/// `$load_and_check_reassign_configs`.
fn check_reassign<'c>(
    c: &'c Cluster,
    ctx: &Ctx<'_>,
    kind: GuestKind,
    target: u32,
) -> Result<(&'c Guest, &'c Guest, String), ApiError> {
    let p = ctx.params;
    let vmid = act::vmid(ctx);
    let key = match kind {
        GuestKind::Qemu => p.get("disk"),
        GuestKind::Lxc => p.get("volume"),
    }
    .unwrap_or("")
    .to_string();
    let target_key = match kind {
        GuestKind::Qemu => p.get("target-disk"),
        GuestKind::Lxc => p.get("target-volume"),
    }
    .unwrap_or(&key)
    .to_string();
    let w = word(kind);
    if kind == GuestKind::Lxc {
        if key == "rootfs" || target_key == "rootfs" {
            return Err(die("Cannot move to/from 'rootfs'"));
        }
        if conf::is_unused_key(&key) && !conf::is_unused_key(&target_key) {
            return Err(die("Moving an unused volume to a used one is not possible"));
        }
    }
    let Some(src) = c.guests.get(&vmid).filter(|g| g.kind == kind) else {
        return Err(die(format!("could not find {w} {vmid}")));
    };
    let Some(dst) = c.guests.get(&target).filter(|g| g.kind == kind) else {
        return Err(die(match kind {
            GuestKind::Qemu => format!("could not find target VM {target}"),
            GuestKind::Lxc => format!("could not find CT {target}"),
        }));
    };
    if src.node != dst.node {
        return Err(die(match kind {
            GuestKind::Qemu => format!(
                "Both VMs need to be on the same node ({} != {})",
                src.node, dst.node
            ),
            GuestKind::Lxc => format!(
                "Both containers need to be on the same node ({} != {})",
                src.node, dst.node
            ),
        }));
    }
    let src = act::guest(c, ctx, kind)?;
    for g in [src, dst] {
        if let Some(e) = act::lock_error(g) {
            return Err(die(e));
        }
    }
    if src.template || dst.template {
        return Err(die(match kind {
            GuestKind::Qemu => "Can't move disks from or to template VMs",
            GuestKind::Lxc => "Can't move volumes from or to template CT",
        }));
    }
    let label = match kind {
        GuestKind::Qemu => "VM",
        GuestKind::Lxc => "Container",
    };
    for (param, g) in [("digest", src), ("target-digest", dst)] {
        if p.get(param).is_some_and(|d| d != config_digest(g)) {
            return Err(die(format!("{label} {}: {MODIFIED}", g.vmid)));
        }
    }
    let src_conf = render(src);
    let Some(value) = src_conf.get(&key).and_then(Value::as_str) else {
        return Err(die(match kind {
            GuestKind::Qemu => format!("Disk '{key}' for VM '{vmid}' does not exist"),
            GuestKind::Lxc => format!("volume '{key}' for container '{vmid}' does not exist"),
        }));
    };
    if render(dst).contains_key(&target_key) {
        return Err(die(match kind {
            GuestKind::Qemu => {
                format!("Target disk key '{target_key}' is already in use for VM '{target}'")
            }
            GuestKind::Lxc => format!(
                "Target volume key '{target_key}' is already in use for container '{target}'"
            ),
        }));
    }
    if kind == GuestKind::Qemu && conf::is_cdrom(value) && !cloudinit::is_cloudinit_drive(value) {
        return Err(die("CD drive contents can't be moved to another VM"));
    }
    if !src.snapshots.is_empty() {
        return Err(die(match kind {
            GuestKind::Qemu => "Can't move disk used by a snapshot to another VM",
            GuestKind::Lxc => "Cannot move volume used by a snapshot to another container",
        }));
    }
    if src.is_running() && !conf::is_unused_key(&key) {
        return Err(die(match kind {
            GuestKind::Qemu => {
                "Cannot move disk to another VM while the source VM is running - detach first"
            }
            GuestKind::Lxc => {
                "Cannot move in-use volume while the source CT is running - detach or shutdown first"
            }
        }));
    }
    Ok((src, dst, target_key))
}

/// `move_disk`/`move_volume` with `target-vmid`: the volume is renamed to
/// the target guest and moves from one config to the other.
fn reassign(ctx: &Ctx<'_>, kind: GuestKind, target: &str) -> HandlerResult {
    let vmid = act::vmid(ctx);
    let target: u32 = target.parse().unwrap_or(0);
    if kind == GuestKind::Qemu && target == vmid {
        return Err(ApiError::param(
            "target-vmid",
            "must be different than source VMID to reassign disk",
        ));
    }
    if !act::is_root(ctx) {
        act::require(ctx, &format!("/vms/{target}"), "VM.Config.Disk")?;
    }
    let key = match kind {
        GuestKind::Qemu => ctx.params.get("disk"),
        GuestKind::Lxc => ctx.params.get("volume"),
    }
    .unwrap_or("")
    .to_string();
    let mut c = ctx.cluster_mut();
    let (src, _, target_key) = check_reassign(&c, ctx, kind, target)?;
    let value = render(src)
        .get(&key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let volid = conf::drive_volid(&value).to_string();
    let storeid = volid.split_once(':').map_or("", |(s, _)| s).to_string();
    act::require(
        ctx,
        &format!("/storage/{storeid}"),
        "Datastore.AllocateSpace",
    )?;
    let ty = match kind {
        GuestKind::Qemu => "qmmove",
        GuestKind::Lxc => "move_volume",
    };
    let id = format!("{vmid}-{key}>{target}-{target_key}");
    let mut spec = Spec::new(ctx.node, ty, id, &act::user(ctx));
    if let Some(locked) = [vmid, target].into_iter().find(|v| work::flocked(&c, *v)) {
        let spec = spec.fail(act::flock_error(kind, locked));
        return act::upid(work::spawn(&mut c, spec));
    }
    let s = storage_cfg::config(&c, &storeid)?;
    let n = storage_cfg::free_disk_number(&c, &storeid, ctx.node, target);
    let format = storage_cfg::format_of(&volid);
    let new_volid = storage_cfg::image_volid(s, target, &format!("vm-{target}-disk-{n}"), format);
    match kind {
        GuestKind::Qemu => spec.line(
            0.1,
            format!("reassign disk '{key}' from VM '{vmid}' as '{target_key}' to VM '{target}'"),
        ),
        GuestKind::Lxc => spec.line(
            0.1,
            format!("moving volume '{key}' from container '{vmid}' to '{target}'"),
        ),
    };
    if fs_base(s).is_none() {
        spec.line(
            0.4,
            format!(
                "  Renamed \"{}\" to \"{}\" in volume group \"pve\"",
                volname_leaf(&volid),
                volname_leaf(&new_volid)
            ),
        );
    }
    let src_conf = render(src);
    let in_boot = kind == GuestKind::Qemu
        && src_conf
            .get("boot")
            .and_then(Value::as_str)
            .and_then(|b| b.strip_prefix("order="))
            .is_some_and(|o| o.split(';').any(|d| d == key));
    if in_boot {
        spec.line(0.5, format!("removing disk '{key}' from boot order config"));
    }
    match kind {
        GuestKind::Qemu => {
            spec.line(
                0.6,
                format!("removing disk '{key}' from VM '{vmid}' config"),
            );
        }
        GuestKind::Lxc => {
            spec.line(
                0.6,
                format!("removing volume '{key}' from container '{vmid}' config"),
            );
            spec.line(
                0.9,
                format!("target container '{target}' updated with '{target_key}'"),
            );
        }
    }
    let (node, new_value) = (
        ctx.node.to_string(),
        with_volume(&target_key, &value, &new_volid, conf::drive_size(&value)),
    );
    let spec = spec
        .flock(vmid)
        .flock(target)
        .effect(move |c: &mut Cluster| {
            if let Some(g) = c.guests.get_mut(&vmid) {
                let m = materialize(g);
                m.remove(&key);
                if in_boot
                    && let Some(order) = m
                        .get("boot")
                        .and_then(Value::as_str)
                        .and_then(|b| b.strip_prefix("order="))
                {
                    let rest: Vec<&str> = order.split(';').filter(|d| *d != key).collect();
                    let boot = format!("order={}", rest.join(";"));
                    m.insert("boot".into(), boot.into());
                }
                conf::sync_fields(g);
            }
            if let Some(g) = c.guests.get_mut(&target) {
                materialize(g).insert(target_key, new_value.into());
                conf::sync_fields(g);
            }
            for v in &mut c.volumes {
                if v.volid == volid && v.node.as_deref().is_none_or(|n| n == node) {
                    v.volid = new_volid.clone();
                    v.vmid = Some(target);
                }
            }
            c.generation += 1;
        });
    act::upid(work::spawn(&mut c, spec))
}
