//! `storage.cfg` as the storage writes consult it (pve-storage's
//! `storage_config`, `storage_check_enabled`, volume names and paths), and
//! the volumes they find and allocate.

use super::act::die;
use crate::errors::ApiError;
use crate::state::{Cluster, Storage, Volume};

/// `storage_config`: the storage, or `storage '<id>' does not exist`.
pub(crate) fn config<'c>(c: &'c Cluster, id: &str) -> Result<&'c Storage, ApiError> {
    c.storages
        .iter()
        .find(|s| s.id == id)
        .ok_or_else(|| die(format!("storage '{id}' does not exist")))
}

/// `storage_check_enabled`: the storage if it is enabled on `node`.
pub(crate) fn check_enabled<'c>(
    c: &'c Cluster,
    id: &str,
    node: &str,
) -> Result<&'c Storage, ApiError> {
    let s = config(c, id)?;
    if s.nodes
        .as_ref()
        .is_some_and(|l| !l.iter().any(|n| n == node))
    {
        return Err(die(format!(
            "storage '{id}' is not available on node '{node}'"
        )));
    }
    Ok(s)
}

/// The directory a file-based storage (dir, NFS, CIFS, ...) keeps its
/// files under; `None` for block storages (LVM, ZFS, RBD, PBS).
pub(crate) fn fs_base(s: &Storage) -> Option<&'static str> {
    s.extra.iter().find(|(k, _)| *k == "path").map(|(_, v)| *v)
}

/// Whether the storage is configured for a content type.
pub(crate) fn has_content(s: &Storage, content: &str) -> bool {
    s.content.split(',').any(|c| c == content)
}

/// The image formats a storage can hold and its default
/// (`default_format`): files take raw, qcow2 and vmdk; block storages raw.
pub(crate) fn formats(s: &Storage) -> &'static [&'static str] {
    if fs_base(s).is_some() {
        &["raw", "qcow2", "vmdk"]
    } else {
        &["raw"]
    }
}

/// A format name as the `'static` text [`Volume::format`] holds.
pub(crate) fn leak_format(f: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "raw", "qcow2", "vmdk", "iso", "tzst", "tgz", "txz", "tbz2", "tar", "ova", "subvol",
    ];
    KNOWN.iter().find(|k| **k == f).copied().unwrap_or("raw")
}

/// The format a volume name says (`parse_volname`'s last field): a file's
/// extension, or raw.
pub(crate) fn format_of(volid: &str) -> &'static str {
    let name = volid.rsplit([':', '/']).next().unwrap_or("");
    name.rsplit_once('.')
        .map(|(_, ext)| ext)
        .filter(|ext| ["qcow2", "vmdk", "raw"].contains(ext))
        .map_or("raw", leak_format)
}

/// The volume `volid` as `node` sees it (its own for local storages).
pub(crate) fn volume_on<'c>(c: &'c Cluster, volid: &str, node: &str) -> Option<&'c Volume> {
    c.volumes
        .iter()
        .find(|v| v.volid == volid && v.node.as_deref().is_none_or(|n| n == node))
}

/// `find_free_diskname`: the first `vm-<vmid>-disk-<n>` no volume of the
/// storage (as `node` sees it) uses yet, nor the guest's own config (whose
/// disks the simulator's listing may not show).
pub(crate) fn free_disk_number(c: &Cluster, storage: &str, node: &str, vmid: u32) -> u32 {
    let own: Vec<String> = c
        .guests
        .get(&vmid)
        .map(|g| {
            super::config::render(g)
                .values()
                .filter_map(|v| v.as_str())
                .map(|s| crate::conf::drive_volid(s).to_string())
                .filter(|volid| volid.starts_with(&format!("{storage}:")))
                .collect()
        })
        .unwrap_or_default();
    let taken = |n: u32| {
        let names = [
            format!("vm-{vmid}-disk-{n}"),
            format!("base-{vmid}-disk-{n}"),
        ];
        let used_by_volume = c.volumes.iter().any(|v| {
            v.storage == storage
                && v.node.as_deref().is_none_or(|x| x == node)
                && names.iter().any(|nm| volume_name_is(&v.volid, nm))
        });
        used_by_volume
            || own
                .iter()
                .any(|volid| names.iter().any(|nm| volume_name_is(volid, nm)))
    };
    (0..).find(|n| !taken(*n)).unwrap_or(0)
}

/// Whether a volid's file or LV name is `name` (with any extension).
fn volume_name_is(volid: &str, name: &str) -> bool {
    let last = volid.rsplit([':', '/']).next().unwrap_or("");
    last == name || last.strip_prefix(name).is_some_and(|r| r.starts_with('.'))
}

/// The volid of image `name` (`vm-<id>-disk-<n>`) on a storage: an LV of
/// that name, or `<vmid>/<name>.<fmt>` under a file storage's `images`.
pub(crate) fn image_volid(s: &Storage, vmid: u32, name: &str, format: &str) -> String {
    if fs_base(s).is_some() {
        format!("{}:{vmid}/{name}.{format}", s.id)
    } else {
        format!("{}:{name}", s.id)
    }
}

/// `filesystem_path` of a volume name on a file storage, or the LV's
/// device path on LVM.
pub(crate) fn fs_path(s: &Storage, volname: &str) -> String {
    let Some(base) = fs_base(s) else {
        let vg = s
            .extra
            .iter()
            .find(|(k, _)| *k == "vgname")
            .map_or("pve", |(_, v)| *v);
        return format!("/dev/{vg}/{volname}");
    };
    let (kind, rest) = volname.split_once('/').unwrap_or(("", volname));
    let dir = match kind {
        "iso" => "template/iso",
        "vztmpl" => "template/cache",
        "backup" => "dump",
        "import" => "import",
        "snippets" => "snippets",
        _ => return format!("{base}/images/{volname}"),
    };
    format!("{base}/{dir}/{rest}")
}

/// Adds a volume to the storage's content (replacing one with its volid).
pub(crate) fn put_volume(c: &mut Cluster, v: Volume) {
    c.volumes
        .retain(|x| !(x.volid == v.volid && x.node == v.node));
    c.volumes.push(v);
}
