//! Editing guest configs the way the write endpoints do: drive strings,
//! sizes, disk allocation, and keeping the guest's modelled fields (name,
//! memory, boot disk size, ...) in step with its config.

use serde_json::{Map, Value};

use crate::state::{Guest, GuestKind};

const GIB: u64 = 1 << 30;

/// Whether `key` is a disk: a qemu drive (`scsiN`, `virtioN`, `sataN`,
/// `ideN`, `efidisk0`, `tpmstate0`) or an lxc `rootfs`/`mpN`.
pub(crate) fn is_disk_key(kind: GuestKind, key: &str) -> bool {
    let indexed = |prefix: &str| {
        key.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    match kind {
        GuestKind::Qemu => {
            ["scsi", "virtio", "sata", "ide"].iter().any(|p| indexed(p))
                || key == "efidisk0"
                || key == "tpmstate0"
        }
        GuestKind::Lxc => key == "rootfs" || indexed("mp"),
    }
}

/// Whether `key` is an `unusedN` entry.
pub(crate) fn is_unused_key(key: &str) -> bool {
    key.strip_prefix("unused")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `PVE::JSONSchema::parse_size` with the resize `+`: `(grow, bytes)`.
/// Units are binary; no unit means bytes.
pub(crate) fn parse_size(s: &str) -> Option<(bool, u64)> {
    let (grow, rest) = match s.strip_prefix('+') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (num, unit) = match rest.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&rest[..i], Some(c)),
        _ => (rest, None),
    };
    let valid_num = !num.is_empty()
        && !num.starts_with('.')
        && !num.ends_with('.')
        && num.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && num.matches('.').count() <= 1;
    if !valid_num {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    let mult = match unit {
        None => 1.0,
        Some('K') => 1024.0,
        Some('M') => 1024.0 * 1024.0,
        Some('G') => GIB as f64,
        Some('T') => GIB as f64 * 1024.0,
        Some(_) => return None,
    };
    Some((grow, (n * mult) as u64))
}

/// The volume id of a drive or mount point string (`[file=|volume=]<volid>,...`).
pub(crate) fn drive_volid(v: &str) -> &str {
    let first = v.split(',').next().unwrap_or("");
    first
        .strip_prefix("file=")
        .or_else(|| first.strip_prefix("volume="))
        .unwrap_or(first)
}

/// Whether the drive is a CD-ROM.
pub(crate) fn is_cdrom(v: &str) -> bool {
    v.split(',').any(|o| o == "media=cdrom") || drive_volid(v) == "none"
}

/// The `size=` of a drive string in bytes.
pub(crate) fn drive_size(v: &str) -> Option<u64> {
    v.split(',')
        .find_map(|o| o.strip_prefix("size="))
        .and_then(parse_size)
        .map(|(_, b)| b)
}

/// The drive string with `size=` set to `bytes`.
pub(crate) fn set_drive_size(v: &str, bytes: u64) -> String {
    let size = format!("size={}", crate::handlers::size_str(bytes));
    let mut parts: Vec<String> = v
        .split(',')
        .filter(|o| !o.starts_with("size="))
        .map(str::to_string)
        .collect();
    parts.push(size);
    parts.join(",")
}

/// The disk the guest boots from: lxc `rootfs`, qemu the first of
/// `scsi0`, `virtio0`, `sata0`, `ide0` that is not a CD-ROM.
pub(crate) fn boot_disk(kind: GuestKind, conf: &Map<String, Value>) -> Option<String> {
    let candidates: &[&str] = match kind {
        GuestKind::Lxc => &["rootfs"],
        GuestKind::Qemu => &["scsi0", "virtio0", "sata0", "ide0"],
    };
    candidates
        .iter()
        .find(|k| {
            conf.get(**k)
                .and_then(Value::as_str)
                .is_some_and(|v| !is_cdrom(v))
        })
        .map(|k| k.to_string())
}

/// Allocates a disk written `STORAGE:SIZE_IN_GiB[,opts]`: returns the
/// stored drive string (`STORAGE:vm-ID-disk-N,opts,size=SIZEG`) and its
/// size. Other values (an existing volume, a CD-ROM) stay as they are.
pub(crate) fn allocate_disk(vmid: u32, n: usize, v: &str) -> Option<(String, u64)> {
    let first = v.split(',').next().unwrap_or("");
    let first = first
        .strip_prefix("file=")
        .or_else(|| first.strip_prefix("volume="))
        .unwrap_or(first);
    let (storage, size) = first.split_once(':')?;
    let gib: f64 = size.parse().ok()?;
    if storage.is_empty() || size.contains('/') {
        return None;
    }
    let bytes = (gib * GIB as f64) as u64;
    let mut out = format!("{storage}:vm-{vmid}-disk-{n}");
    for o in v.split(',').skip(1) {
        if !o.starts_with("size=") && !o.starts_with("import-from=") {
            out.push(',');
            out.push_str(o);
        }
    }
    out.push_str(&format!(",size={}", crate::handlers::size_str(bytes)));
    Some((out, bytes))
}

/// Integer-typed config keys: PVE's config API returns these as numbers.
const INT_KEYS: &[&str] = &[
    "cores",
    "sockets",
    "vcpus",
    "numa",
    "onboot",
    "balloon",
    "cpuunits",
    "shares",
    "protection",
    "tablet",
    "kvm",
    "acpi",
    "localtime",
    "reboot",
    "autostart",
    "freeze",
    "template",
    "swap",
    "unprivileged",
    "console",
    "tty",
    "debug",
    "ciupgrade",
];

/// A request value as the config stores and returns it.
pub(crate) fn value_for(kind: GuestKind, key: &str, v: &str) -> Value {
    let int = INT_KEYS.contains(&key) || (kind == GuestKind::Lxc && key == "memory");
    if int && let Ok(n) = v.parse::<i64>() {
        return n.into();
    }
    if key == "cpulimit"
        && let Ok(n) = v.parse::<f64>()
        && let Some(num) = serde_json::Number::from_f64(n)
    {
        return Value::Number(num);
    }
    v.into()
}

/// `ostype` values PVE knows (qemu and lxc), as static strings for the
/// guest's field.
const OSTYPES: &[&str] = &[
    "other",
    "wxp",
    "w2k",
    "w2k3",
    "w2k8",
    "wvista",
    "win7",
    "win8",
    "win10",
    "win11",
    "l24",
    "l26",
    "solaris",
    "debian",
    "devuan",
    "ubuntu",
    "centos",
    "fedora",
    "opensuse",
    "archlinux",
    "alpine",
    "gentoo",
    "nixos",
    "unmanaged",
];

fn text(conf: &Map<String, Value>, key: &str) -> Option<String> {
    match conf.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn number(conf: &Map<String, Value>, key: &str) -> Option<u64> {
    text(conf, key)?.parse().ok()
}

/// Copies what the rest of the simulator reads from fields (listings,
/// status, resources) back from the guest's explicit config.
pub(crate) fn sync_fields(g: &mut Guest) {
    let Some(conf) = &g.conf else { return };
    let name_key = match g.kind {
        GuestKind::Qemu => "name",
        GuestKind::Lxc => "hostname",
    };
    g.name = text(conf, name_key);
    g.tags = text(conf, "tags");
    g.description = text(conf, "description");
    g.onboot = text(conf, "onboot").is_some_and(|v| v == "1");
    let memory = text(conf, "memory").and_then(|m| {
        let v = m.split(',').next().unwrap_or("");
        v.strip_prefix("current=").unwrap_or(v).parse::<u64>().ok()
    });
    g.memory_mib = memory.unwrap_or(512);
    g.cores = number(conf, "cores").unwrap_or(1) as u32;
    g.sockets = number(conf, "sockets").unwrap_or(1) as u32;
    g.balloon_mib = number(conf, "balloon").unwrap_or(0);
    g.swap_mib = number(conf, "swap").unwrap_or(512);
    if g.kind == GuestKind::Qemu {
        g.agent = text(conf, "agent").is_some_and(|a| {
            let first = a.split(',').next().unwrap_or("");
            matches!(
                first.strip_prefix("enabled=").unwrap_or(first),
                "1" | "on" | "yes" | "true"
            )
        });
    }
    if let Some(os) = text(conf, "ostype")
        && let Some(known) = OSTYPES.iter().find(|o| **o == os)
    {
        g.ostype = known;
    }
    g.nics = conf
        .keys()
        .filter(|k| {
            k.strip_prefix("net")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .count() as u32;
    if let Some(size) = boot_disk(g.kind, conf)
        .and_then(|k| text(conf, &k))
        .and_then(|v| drive_size(&v))
    {
        g.maxdisk = size;
    }
}

/// The disks of a rendered config: `(key, volid, size)`, CD-ROMs left out.
pub(crate) fn disks(kind: GuestKind, conf: &Map<String, Value>) -> Vec<(String, String, u64)> {
    conf.iter()
        .filter(|(k, _)| is_disk_key(kind, k))
        .filter_map(|(k, v)| {
            let v = v.as_str()?;
            if is_cdrom(v) {
                return None;
            }
            Some((k.clone(), drive_volid(v).to_string(), drive_size(v)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_like_pve() {
        assert_eq!(parse_size("+10G"), Some((true, 10 * GIB)));
        assert_eq!(parse_size("10"), Some((false, 10)));
        assert_eq!(parse_size("1.5K"), Some((false, 1536)));
        assert_eq!(parse_size("2T"), Some((false, 2048 * GIB)));
        for bad in ["", "+", "G", "10X", "1.", ".5G", "1..2G", "-1G"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn drive_strings() {
        let d = "local-lvm:vm-100-disk-0,iothread=1,size=32G";
        assert_eq!(drive_volid(d), "local-lvm:vm-100-disk-0");
        assert_eq!(drive_size(d), Some(32 * GIB));
        assert_eq!(
            set_drive_size(d, 40 * GIB),
            "local-lvm:vm-100-disk-0,iothread=1,size=40G"
        );
        assert!(is_cdrom("none,media=cdrom"));
        assert_eq!(
            allocate_disk(120, 0, "local-lvm:8,ssd=1"),
            Some(("local-lvm:vm-120-disk-0,ssd=1,size=8G".to_string(), 8 * GIB))
        );
        assert_eq!(allocate_disk(120, 0, "local:iso/x.iso,media=cdrom"), None);
        assert!(is_disk_key(GuestKind::Qemu, "scsi12"));
        assert!(!is_disk_key(GuestKind::Qemu, "scsihw"));
        assert!(is_disk_key(GuestKind::Lxc, "mp3") && !is_disk_key(GuestKind::Lxc, "mpx"));
    }
}
