//! `DELETE /nodes/{node}/storage/{storage}/content/{volume}` (pve-storage's
//! `Content::delete`): an `imgdel` task that frees the volume, for every
//! kind of volume. `{volume}` is a volume name or a whole volid; PVE
//! matches the rest of the path after `content/`, slashes included.
//!
//! As in PVE, nothing checks whether a guest's config still uses an image
//! (only the GUI refuses that): the image goes and the config keeps
//! naming it. A protected backup fails the task, and a file that is not
//! there is only a warning.

use serde_json::Value;

use super::Ctx;
use super::act::{self, die};
use super::storage_cfg::{self, fs_base};
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::state::{Cluster, Storage};
use crate::work::{self, Spec};

/// `parse_volume_id`: `<storage>:<volume name>`.
fn parse_volume_id(volid: &str) -> Option<(&str, &str)> {
    let (sid, name) = volid.split_once(':')?;
    let b = sid.as_bytes();
    let ok = b.len() >= 2
        && b[0].is_ascii_alphabetic()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    (ok && !name.is_empty()).then_some((sid, name))
}

/// What `parse_volname` makes of a volume name: its type and owner.
struct Parsed {
    vtype: &'static str,
    owner: Option<u32>,
}

fn owner_of(s: &str) -> Option<u32> {
    s.parse().ok().filter(|v| *v >= 100)
}

/// The plugin's `parse_volname`, or its error.
fn parse_volname(s: &Storage, name: &str) -> Result<Parsed, String> {
    let image_owner = |n: &str| {
        n.strip_prefix("vm-")
            .or_else(|| n.strip_prefix("base-"))
            .and_then(|r| r.split_once('-'))
            .and_then(|(id, rest)| (!rest.is_empty()).then(|| owner_of(id)).flatten())
    };
    if s.plugintype == "pbs" {
        let parts: Vec<&str> = name.split('/').collect();
        return match parts.as_slice() {
            ["backup", _, id, _] => Ok(Parsed {
                vtype: "backup",
                owner: owner_of(id),
            }),
            _ => Err(format!("unable to parse PBS volume name '{name}'")),
        };
    }
    if fs_base(s).is_none() {
        return image_owner(name)
            .map(|owner| Parsed {
                vtype: "images",
                owner: Some(owner),
            })
            .ok_or_else(|| format!("unable to parse lvm volume name '{name}'"));
    }
    let (dir, file) = name.split_once('/').unwrap_or(("", name));
    let plain = !file.is_empty() && !file.contains('/');
    let parsed = match dir {
        "iso" if plain => Some(Parsed {
            vtype: "iso",
            owner: None,
        }),
        "vztmpl" if plain => Some(Parsed {
            vtype: "vztmpl",
            owner: None,
        }),
        "snippets" if plain => Some(Parsed {
            vtype: "snippets",
            owner: None,
        }),
        "import" if plain => Some(Parsed {
            vtype: "import",
            owner: None,
        }),
        "backup" if plain => Some(Parsed {
            vtype: "backup",
            owner: ["qemu", "lxc", "openvz"].iter().find_map(|t| {
                file.strip_prefix(&format!("vzdump-{t}-"))
                    .and_then(|r| r.split_once('-'))
                    .and_then(|(id, _)| owner_of(id))
            }),
        }),
        d if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && plain => image_owner(file)
            .map(|owner| Parsed {
                vtype: "images",
                owner: Some(owner),
            }),
        _ => None,
    };
    parsed.ok_or_else(|| format!("unable to parse directory volume name '{name}'"))
}

/// `DELETE /nodes/{node}/storage/{storage}/content/{volume}`.
pub(crate) fn delete(ctx: &Ctx<'_>) -> HandlerResult {
    let storage = ctx.params.path("storage");
    let volume = ctx.params.path("volume");
    // `$real_volume_id`.
    let (volid, storeid) = if volume.contains(':') {
        let Some((sid, _)) = parse_volume_id(volume) else {
            return Err(ApiError::param(
                "volume",
                format!("unable to parse volume ID '{volume}'\n"),
            ));
        };
        if !storage.is_empty() && sid != storage {
            return Err(ApiError::param(
                "volume",
                format!("storage ID mismatch ({sid} != {storage})\n"),
            ));
        }
        (volume.to_string(), sid.to_string())
    } else {
        (format!("{storage}:{volume}"), storage.to_string())
    };
    let volname = volid.split_once(':').map_or("", |(_, n)| n).to_string();
    let mut c = ctx.cluster_mut();
    let s = storage_cfg::config(&c, &storeid)?;
    let parsed = parse_volname(s, &volname).map_err(die)?;
    let spath = format!("/storage/{storeid}");
    match (parsed.vtype, parsed.owner) {
        ("backup", Some(owner)) => {
            act::require(ctx, &spath, "Datastore.AllocateSpace")?;
            act::require(ctx, &format!("/vms/{owner}"), "VM.Backup")?;
        }
        _ => act::require(ctx, &spath, "Datastore.Allocate")?,
    }
    let id = match parsed.owner {
        Some(o) => format!("{o}@{storeid}"),
        None => storeid.clone(),
    };
    let spec = free_spec(&c, ctx, s, &volid, &volname, &id);
    let upid = work::spawn(&mut c, spec);
    let delay: u64 = ctx
        .params
        .get("delay")
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    if delay > 0 && work::duration_of(&c, "imgdel").as_secs_f64() <= delay as f64 {
        return match work::finish_now(&mut c, &upid) {
            Some(status) if status != "OK" && !status.starts_with("WARNINGS") => Err(die(status)),
            _ => Ok(Reply::Data(Value::Null)),
        };
    }
    act::upid(upid)
}

/// The `imgdel` task: `vdisk_free` and its outcome.
fn free_spec(
    c: &Cluster,
    ctx: &Ctx<'_>,
    s: &Storage,
    volid: &str,
    volname: &str,
    id: &str,
) -> Spec {
    let mut spec = Spec::new(ctx.node, "imgdel", id, &act::user(ctx));
    let storeid = s.id.clone();
    // LVM-thin allows deleting a base volume linked clones still use.
    let linked = format!("{storeid}:{volname}/");
    let in_use = volname.starts_with("base-")
        && c.guests.values().any(|g| {
            super::config::render(g)
                .values()
                .any(|v| v.as_str().is_some_and(|x| x.contains(&linked)))
        });
    if in_use {
        return spec.fail(format!(
            "base volume '{volname}' is still in use by linked clones"
        ));
    }
    let found = storage_cfg::volume_on(c, volid, ctx.node);
    let file_based = fs_base(s).is_some() || s.plugintype == "pbs";
    match found {
        Some(v) if v.protected && file_based => {
            return spec.fail(format!(
                "cannot remove protected volume '{volname}' on '{storeid}'"
            ));
        }
        Some(_) if !file_based => {
            spec.line(
                0.5,
                format!("  Logical volume \"{volname}\" successfully removed."),
            );
        }
        Some(_) => {}
        None if file_based => {
            spec.line(
                0.5,
                format!(
                    "WARN: disk image '{}' does not exist",
                    storage_cfg::fs_path(s, volname)
                ),
            );
            spec.line(0.9, format!("Removed volume '{volid}'"));
            return spec.fail("WARNINGS: 1");
        }
        None => {}
    }
    spec.line(0.9, format!("Removed volume '{volid}'"));
    let (volid, node) = (volid.to_string(), ctx.node.to_string());
    spec.effect(move |c: &mut Cluster| {
        c.volumes
            .retain(|v| !(v.volid == volid && v.node.as_deref().is_none_or(|n| n == node)));
        c.file_origins.remove(&volid);
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// For tests: the parse of a volume name on each seeded storage type.
    fn parse_on(
        kind: &'static str,
        path: Option<&'static str>,
        name: &str,
    ) -> Result<(String, Option<u32>), String> {
        let s = Storage {
            id: "x".into(),
            plugintype: kind,
            content: "images",
            shared: false,
            nodes: None,
            total: 0,
            used: BTreeMap::new(),
            extra: path.map(|p| vec![("path", p)]).unwrap_or_default(),
        };
        parse_volname(&s, name).map(|p| (p.vtype.to_string(), p.owner))
    }

    #[test]
    fn volume_names_like_the_plugins() {
        let dir = |n: &str| parse_on("dir", Some("/var/lib/vz"), n);
        assert_eq!(
            dir("backup/vzdump-qemu-104-2026_11_14-01_22_17.vma.zst"),
            Ok(("backup".into(), Some(104)))
        );
        assert_eq!(dir("iso/x.iso"), Ok(("iso".into(), None)));
        assert_eq!(
            dir("104/vm-104-disk-0.qcow2"),
            Ok(("images".into(), Some(104)))
        );
        assert_eq!(
            dir("nonsense"),
            Err("unable to parse directory volume name 'nonsense'".into())
        );
        let lvm = |n: &str| parse_on("lvmthin", None, n);
        assert_eq!(lvm("vm-900-cloudinit"), Ok(("images".into(), Some(900))));
        assert_eq!(
            lvm("iso/x.iso"),
            Err("unable to parse lvm volume name 'iso/x.iso'".into())
        );
        assert_eq!(
            parse_volume_id("local:iso/a.iso"),
            Some(("local", "iso/a.iso"))
        );
        assert_eq!(parse_volume_id("1x:y"), None);
    }
}
