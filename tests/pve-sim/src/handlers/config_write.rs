//! Config changes (`PUT`/`POST .../qemu/{vmid}/config`, `PUT
//! .../lxc/{vmid}/config`) and disk resize.
//!
//! The digest, lock and root-only checks run before the fork for both the
//! synchronous PUT and qemu's asynchronous POST; the POST applies its
//! change when its `qmconfig` task ends (or at once, answering `null`, when
//! the task fits in `background_delay`). Changes apply directly: the
//! simulator has no `[pending]` section.

use serde_json::Value;

use super::Ctx;
use super::act::{self, die, word};
use super::cloudinit;
use super::config::{config_digest, materialize, render};
use super::lifecycle::check_root_keys;
use crate::conf;
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::ssh_keys;
use crate::state::{Cluster, Guest, GuestKind, Volume};
use crate::util::split_list;
use crate::work::{self, Spec};

/// Request keys that steer the change rather than being config keys.
const CONTROL: &[&str] = &[
    "node",
    "vmid",
    "delete",
    "revert",
    "digest",
    "force",
    "skiplock",
    "background_delay",
];

fn digest_error(kind: GuestKind) -> ApiError {
    die(match kind {
        GuestKind::Qemu => "checksum mismatch (file change by other user?)",
        GuestKind::Lxc => {
            "detected modified configuration - file changed by other user? Try again."
        }
    })
}

/// A validated change: keys to set and keys to delete.
struct Change {
    set: Vec<(String, String)>,
    delete: Vec<String>,
    force: bool,
    /// New cloud-init drives: key, stored drive string, its volume.
    cloudinit: Vec<(String, String, Volume)>,
}

fn prepare(ctx: &Ctx<'_>, kind: GuestKind, c: &Cluster, g: &Guest) -> Result<Change, ApiError> {
    let set: Vec<(String, String)> = ctx
        .params
        .iter()
        .filter(|(k, _)| !CONTROL.contains(k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let delete = split_list(ctx.params.get("delete").unwrap_or(""));
    let revert = split_list(ctx.params.get("revert").unwrap_or(""));
    if kind == GuestKind::Qemu
        && let Some(keys) = ctx.params.get("sshkeys")
        && !ssh_keys::valid_keys(&ssh_keys::uri_unescape(keys))
    {
        return Err(die("SSH public key validation error"));
    }
    if set.is_empty() && delete.is_empty() && revert.is_empty() {
        return Err(die("no options specified"));
    }
    for d in &delete {
        if set.iter().any(|(k, _)| k == d) {
            return Err(ApiError::param(
                "delete",
                format!("you can't use '-{d}' and -delete {d}' at the same time"),
            ));
        }
        if revert.contains(d) {
            return Err(ApiError::param(
                "revert",
                format!("you can't use '-{d}' and -revert {d}' at the same time"),
            ));
        }
    }
    check_root_keys(
        ctx,
        set.iter()
            .map(|(k, _)| k.as_str())
            .chain(delete.iter().map(String::as_str)),
    )?;
    if let Some(d) = ctx.params.get("digest")
        && d != config_digest(g)
    {
        return Err(digest_error(kind));
    }
    if !(kind == GuestKind::Qemu && act::is_root(ctx) && act::flag(ctx, "skiplock"))
        && let Some(err) = act::busy(c, g)
    {
        return Err(die(err));
    }
    let cur = render(g);
    let protected = cur.get("protection").is_some_and(|v| v == 1 || v == "1");
    if protected {
        for d in &delete {
            if conf::is_disk_key(kind, d) || conf::is_unused_key(d) || d == "vmstate" {
                let what = if conf::is_unused_key(d) {
                    "unused disk"
                } else {
                    "drive"
                };
                return Err(die(format!(
                    "can't remove {what} '{d}' - protection mode enabled"
                )));
            }
        }
    }
    // `create_disks`: a `<storage>:cloudinit` value becomes the drive.
    let mut cloudinit = Vec::new();
    if kind == GuestKind::Qemu {
        for (k, v) in &set {
            if conf::is_disk_key(kind, k) && cloudinit::requested_storage(v).is_some() {
                let (drive, volume) = cloudinit::allocate_drive(c, &g.node, g.vmid, &cur, k, v)?;
                cloudinit.push((k.clone(), drive, volume));
            }
        }
    }
    Ok(Change {
        set,
        delete,
        force: act::flag(ctx, "force"),
        cloudinit,
    })
}

/// A config value as text (numbers too).
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Applies a change to the guest's config (and its volumes). A QEMU
/// guest's cloud-init keys are recorded as changed since its drive was
/// generated; a new or removed cloud-init drive ends that record.
fn apply(c: &mut Cluster, vmid: u32, change: Change) {
    let mut dropped_volumes = Vec::new();
    let mut new_volumes = Vec::new();
    let salt = c.generation;
    let Some(g) = c.guests.get_mut(&vmid) else {
        return;
    };
    let kind = g.kind;
    let ostype = g.ostype;
    // (key, value before, value after) of every key touched.
    let mut touched: Vec<(String, Option<String>, Option<String>)> = Vec::new();
    let mut regenerated = false;
    let m = materialize(g);
    for d in &change.delete {
        let Some(old) = m.remove(d) else { continue };
        let old = value_text(&old);
        touched.push((d.clone(), Some(old.clone()), None));
        if conf::is_unused_key(d) {
            dropped_volumes.push(conf::drive_volid(&old).to_string());
        } else if kind == GuestKind::Qemu && cloudinit::is_cloudinit_drive(&old) {
            // `vmconfig_register_unused_drive` frees a cloud-init drive.
            dropped_volumes.push(conf::drive_volid(&old).to_string());
            regenerated = true;
        } else if conf::is_disk_key(kind, d) && !conf::is_cdrom(&old) {
            let volid = conf::drive_volid(&old).to_string();
            if change.force {
                dropped_volumes.push(volid);
            } else {
                let n = (0..)
                    .find(|i| !m.contains_key(&format!("unused{i}")))
                    .unwrap_or(0);
                m.insert(format!("unused{n}"), volid.into());
            }
        }
    }
    for (k, v) in &change.set {
        let old = m.get(k).map(value_text);
        let value = if let Some((_, drive, volume)) =
            change.cloudinit.iter().find(|(key, _, _)| key == k)
        {
            new_volumes.push(volume.clone());
            regenerated = true;
            drive.clone()
        } else if conf::is_disk_key(kind, k) {
            let n = (0..)
                .find(|i| {
                    !m.values().any(|x| {
                        x.as_str()
                            .is_some_and(|s| s.contains(&format!("vm-{vmid}-disk-{i},")))
                    })
                })
                .unwrap_or(0);
            conf::allocate_disk(vmid, n, v).map_or_else(|| v.clone(), |(d, _)| d)
        } else if k == "cipassword" && kind == GuestKind::Qemu {
            cloudinit::stored_password(v, ostype, salt)
        } else {
            v.clone()
        };
        if let Some(old) = old.as_deref().filter(|o| {
            kind == GuestKind::Qemu
                && cloudinit::is_cloudinit_drive(o)
                && conf::drive_volid(o) != conf::drive_volid(&value)
        }) {
            dropped_volumes.push(conf::drive_volid(old).to_string());
            regenerated = true;
        }
        touched.push((k.clone(), old, Some(value.clone())));
        m.insert(k.clone(), conf::value_for(kind, k, &value));
    }
    if change.delete.iter().any(|d| d == "lock") {
        g.lock = None;
    }
    if kind == GuestKind::Qemu {
        for (k, old, new) in &touched {
            cloudinit::record_change(&mut g.ci_changes, k, old.as_deref(), new.as_deref());
        }
        if regenerated {
            g.ci_changes.clear();
        }
    }
    conf::sync_fields(g);
    c.volumes.retain(|v| !dropped_volumes.contains(&v.volid));
    for v in new_volumes {
        super::storage_cfg::put_volume(c, v);
    }
    super::lifecycle::add_volumes(c, vmid);
    c.generation += 1;
}

fn put(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    act::root_only(ctx, &["skiplock"])?;
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, kind)?;
    let vmid = g.vmid;
    let change = prepare(ctx, kind, &c, g)?;
    apply(&mut c, vmid, change);
    Ok(Reply::Data(Value::Null))
}

pub(crate) fn qemu_put(ctx: &Ctx<'_>) -> HandlerResult {
    put(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_put(ctx: &Ctx<'_>) -> HandlerResult {
    put(ctx, GuestKind::Lxc)
}

/// `POST .../qemu/{vmid}/config`: a `qmconfig` task, or `null` when it
/// would finish within `background_delay` seconds.
pub(crate) fn qemu_post(ctx: &Ctx<'_>) -> HandlerResult {
    act::root_only(ctx, &["skiplock"])?;
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, GuestKind::Qemu)?;
    let vmid = g.vmid;
    let change = prepare(ctx, GuestKind::Qemu, &c, g)?;
    let delay: u64 = ctx
        .params
        .get("background_delay")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let took = c
        .work
        .durations
        .get("qmconfig")
        .copied()
        .unwrap_or(c.work.default_duration);
    let mut spec = Spec::new(ctx.node, "qmconfig", vmid.to_string(), &act::user(ctx));
    for (k, v) in &change.set {
        spec.line(0.0, format!("update VM {vmid}: -{k} {v}"));
    }
    if !change.delete.is_empty() {
        spec.line(
            0.0,
            format!("update VM {vmid}: -delete {}", change.delete.join(",")),
        );
    }
    if delay > 0 && took.as_secs_f64() <= delay as f64 {
        apply(&mut c, vmid, change);
        return Ok(Reply::Data(Value::Null));
    }
    let spec = spec
        .flock(vmid)
        .effect(move |c: &mut Cluster| apply(c, vmid, change));
    act::upid(work::spawn(&mut c, spec))
}

/// `PUT .../{qemu,lxc}/{vmid}/resize`. qemu checks inside the task, lxc
/// before forking.
fn resize(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    act::root_only(ctx, &["skiplock"])?;
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, kind)?;
    let vmid = g.vmid;
    let disk = ctx.params.get("disk").unwrap_or("").to_string();
    let size = ctx.params.get("size").unwrap_or("");
    let Some((grow, amount)) = conf::parse_size(size) else {
        return Err(ApiError::param(
            "size",
            "value does not match the regex pattern",
        ));
    };
    let cur = render(g);
    let drive = cur.get(&disk).and_then(Value::as_str).map(str::to_string);
    let old = drive.as_deref().and_then(conf::drive_size);
    let new = old.map(|o| if grow { o + amount } else { amount });
    let stale = ctx
        .params
        .get("digest")
        .is_some_and(|d| d != config_digest(g));
    // The first error PVE would meet, in its order.
    let error = if stale {
        Some(match kind {
            GuestKind::Qemu => "checksum mismatch (file change by other user?)".to_string(),
            GuestKind::Lxc => {
                "detected modified configuration - file changed by other user? Try again."
                    .to_string()
            }
        })
    } else if let Some(e) = act::busy(&c, g) {
        Some(e)
    } else {
        match (&drive, old, new) {
            (None, _, _) => Some(format!("disk '{disk}' does not exist")),
            (Some(d), _, _) if conf::is_cdrom(d) => Some("you can't resize a cdrom".to_string()),
            (Some(_), Some(o), Some(n)) if n < o => Some(match kind {
                GuestKind::Qemu => "shrinking disks is not supported".to_string(),
                GuestKind::Lxc => "unable to shrink disk size".to_string(),
            }),
            (Some(_), Some(o), Some(n)) if n == o && kind == GuestKind::Lxc => {
                Some("disk is already at specified size".to_string())
            }
            (Some(_), None, _) => Some(format!("disk '{disk}' has no size")),
            _ => None,
        }
    };
    let mut spec = Spec::new(ctx.node, "resize", vmid.to_string(), &act::user(ctx));
    if let Some(err) = error {
        if kind == GuestKind::Lxc {
            return Err(die(err));
        }
        return act::upid(work::spawn(&mut c, spec.fail(err)));
    }
    let (Some(drive), Some(old), Some(new)) = (drive, old, new) else {
        return Err(die(format!("disk '{disk}' does not exist")));
    };
    let volid = conf::drive_volid(&drive).to_string();
    let lv = volid.split_once(':').map_or("", |p| p.1).to_string();
    if new != old {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        spec.line(
            0.3,
            format!(
                "  Size of logical volume pve/{lv} changed from {:.2} GiB ({} extents) to {:.2} GiB ({} extents).",
                gib(old),
                old / (4 << 20),
                gib(new),
                new / (4 << 20)
            ),
        );
        spec.line(
            0.5,
            format!("  Logical volume pve/{lv} successfully resized."),
        );
        if kind == GuestKind::Lxc {
            spec.line(0.7, "resize2fs 1.47.2 (1-Jan-2025)");
            spec.line(
                0.8,
                format!(
                    "Resizing the filesystem on /dev/pve/{lv} to {} (4k) blocks.",
                    new / 4096
                ),
            );
            spec.line(
                0.9,
                format!(
                    "The filesystem on /dev/pve/{lv} is now {} (4k) blocks long.",
                    new / 4096
                ),
            );
        }
    }
    let _ = word(kind);
    let spec = spec.flock(vmid).effect(move |c: &mut Cluster| {
        if let Some(g) = c.guests.get_mut(&vmid) {
            let m = materialize(g);
            if let Some(v) = m.get(&disk).and_then(Value::as_str).map(str::to_string) {
                m.insert(disk.clone(), conf::set_drive_size(&v, new).into());
            }
            conf::sync_fields(g);
        }
        for v in &mut c.volumes {
            if v.volid == volid {
                v.size = new;
            }
        }
    });
    act::upid(work::spawn(&mut c, spec))
}

pub(crate) fn qemu_resize(ctx: &Ctx<'_>) -> HandlerResult {
    resize(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_resize(ctx: &Ctx<'_>) -> HandlerResult {
    resize(ctx, GuestKind::Lxc)
}
