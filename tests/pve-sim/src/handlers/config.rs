//! Guest configuration, snapshots and guest-agent / container network
//! views.

use serde_json::{Map, Value, json};

use super::Ctx;
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::seed::{T0, mix};
use crate::state::{Guest, GuestKind};

fn find<'c>(
    c: &'c crate::state::Cluster,
    ctx: &Ctx<'_>,
    kind: GuestKind,
) -> Result<&'c Guest, ApiError> {
    let vmid = ctx.params.path("vmid");
    c.guest_on(ctx.node, kind, vmid)
        .ok_or_else(|| ApiError::no_config(ctx.node, kind.config_dir(), vmid))
}

fn hex(v: u64, n: usize) -> String {
    let s = format!("{v:016x}");
    s[16 - n..].to_string()
}

fn uuid(vmid: u32, salt: u64) -> String {
    let v = u64::from(vmid);
    let a = mix(v, salt);
    let b = mix(v, salt + 1);
    format!(
        "{}-{}-4{}-a{}-{}",
        hex(a >> 32, 8),
        hex(a >> 16, 4),
        hex(a, 3),
        hex(b >> 48, 3),
        hex(b, 12)
    )
}

/// The guest's NIC `i` MAC address (Proxmox OUI `BC:24:11`).
pub(crate) fn mac(vmid: u32, i: u32) -> String {
    let v = mix(u64::from(vmid), 40 + u64::from(i));
    format!(
        "BC:24:11:{:02X}:{:02X}:{:02X}",
        (v >> 16) as u8,
        (v >> 8) as u8,
        v as u8
    )
}

/// The guest's primary IPv4 address.
pub(crate) fn ipv4(vmid: u32) -> String {
    format!("10.0.{}.{}", vmid / 250 % 256, vmid % 250)
}

/// Link-local IPv6 derived from the MAC (EUI-64).
pub(crate) fn link_local(vmid: u32) -> String {
    let m: Vec<u8> = mac(vmid, 0)
        .split(':')
        .map(|x| u8::from_str_radix(x, 16).unwrap_or(0))
        .collect();
    format!(
        "fe80::{:x}:{:x}ff:fe{:x}:{:x}",
        (u16::from(m[0] ^ 2) << 8) | u16::from(m[1]),
        m[2],
        m[3],
        (u16::from(m[4]) << 8) | u16::from(m[5])
    )
}

pub(crate) fn size_str(bytes: u64) -> String {
    const G: u64 = 1 << 30;
    const M: u64 = 1 << 20;
    if bytes.is_multiple_of(G) {
        format!("{}G", bytes / G)
    } else if bytes.is_multiple_of(M) {
        format!("{}M", bytes / M)
    } else {
        format!("{}K", bytes / 1024)
    }
}

/// SHA-1-length hex digest of the whole config "file": the current
/// section, every snapshot section and the cloud-init record (PVE hashes
/// the file), so any change, a new snapshot or a lock included, changes it.
pub(crate) fn config_digest(g: &Guest) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(Value::Object(render(g)).to_string().as_bytes());
    for s in &g.snapshots {
        h.update(
            format!(
                "\n[{}]\n{}\n{}\n{:?}\n{}",
                s.name, s.snaptime, s.description, s.parent, s.vmstate
            )
            .as_bytes(),
        );
    }
    // The `[special:cloudinit]` section is part of the file too.
    if !g.ci_changes.is_empty() {
        h.update(format!("\n[special:cloudinit]\n{:?}", g.ci_changes).as_bytes());
    }
    h.finalize()
        .iter()
        .take(20)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The guest's current config as `GET .../config` shows it (without
/// `digest`).
pub(crate) fn render(g: &Guest) -> Map<String, Value> {
    let mut m = match &g.conf {
        Some(conf) => conf.clone(),
        None => {
            let mut m = seed_config(g);
            plain_keys(g, &mut m);
            m
        }
    };
    state_keys(g, &mut m);
    m
}

fn seed_config(g: &Guest) -> Map<String, Value> {
    match g.kind {
        GuestKind::Qemu => qemu_config(g),
        GuestKind::Lxc => lxc_config(g),
    }
}

/// Turns the seed-rendered config into an explicit one, so writes can
/// change any key.
pub(crate) fn materialize(g: &mut Guest) -> &mut Map<String, Value> {
    if g.conf.is_none() {
        let mut m = seed_config(g);
        plain_keys(g, &mut m);
        g.conf = Some(m);
    }
    g.conf.get_or_insert_with(Map::new)
}

/// URI-escapes like Perl's `URI::Escape::uri_escape` (PVE stores
/// `sshkeys` that way).
fn uri_escape(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn qemu_config(g: &Guest) -> Map<String, Value> {
    let mut m = Map::new();
    let disk_prefix = if g.template { "base" } else { "vm" };
    if let Some(n) = &g.name {
        m.insert("name".into(), n.clone().into());
    }
    m.insert("cores".into(), g.cores.into());
    m.insert("sockets".into(), g.sockets.into());
    m.insert("memory".into(), g.memory_mib.to_string().into());
    if g.balloon_mib > 0 {
        m.insert("balloon".into(), g.balloon_mib.into());
    }
    if g.agent {
        m.insert("agent".into(), "1".into());
    }
    m.insert("cpu".into(), "x86-64-v2-AES".into());
    m.insert("numa".into(), 0.into());
    m.insert("ostype".into(), g.ostype.into());
    let virtio = g.nics > 1;
    for i in 0..g.nics {
        m.insert(
            format!("net{i}"),
            format!("virtio={},bridge=vmbr0,firewall=1", mac(g.vmid, i)).into(),
        );
    }
    let bootdisk = if virtio { "virtio0" } else { "scsi0" };
    m.insert(
        bootdisk.into(),
        format!(
            "local-lvm:{disk_prefix}-{}-disk-0,iothread=1,size={}",
            g.vmid,
            size_str(g.maxdisk)
        )
        .into(),
    );
    if virtio {
        m.insert(
            "virtio1".into(),
            format!(
                "local-lvm:{disk_prefix}-{}-disk-1,iothread=1,size=512G",
                g.vmid
            )
            .into(),
        );
    } else {
        m.insert("scsihw".into(), "virtio-scsi-single".into());
    }
    if g.cloudinit {
        m.insert(
            "ide2".into(),
            format!("local-lvm:vm-{}-cloudinit,media=cdrom", g.vmid).into(),
        );
        m.insert("ciuser".into(), "ubuntu".into());
        // The stored hash; the config API masks it ([`mask_secrets`]).
        m.insert(
            "cipassword".into(),
            super::cloudinit::crypt(super::cloudinit::SEED_PASSWORD, "Qv8Zc1Lr").into(),
        );
        m.insert(
            "sshkeys".into(),
            uri_escape(
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMq0b4m1jN3sH2d7Zx9yQ4cVv8rT6eW1aB2cD3eF4gH5 ops@example.com\n",
            )
            .into(),
        );
        m.insert("ipconfig0".into(), "ip=dhcp,ip6=auto".into());
        m.insert("serial0".into(), "socket".into());
        m.insert("vga".into(), "serial0".into());
    } else {
        m.insert("ide2".into(), "none,media=cdrom".into());
    }
    m.insert("boot".into(), format!("order={bootdisk};ide2;net0").into());
    if g.ostype.starts_with('w') {
        m.insert("bios".into(), "ovmf".into());
        m.insert("machine".into(), "pc-q35-10.1".into());
        m.insert(
            "efidisk0".into(),
            format!(
                "local-lvm:vm-{}-disk-1,efitype=4m,pre-enrolled-keys=1,size=4M",
                g.vmid
            )
            .into(),
        );
        m.insert(
            "tpmstate0".into(),
            format!("local-lvm:vm-{}-disk-2,size=4M,version=v2.0", g.vmid).into(),
        );
    }
    m.insert(
        "smbios1".into(),
        format!("uuid={}", uuid(g.vmid, 50)).into(),
    );
    m.insert("vmgenid".into(), uuid(g.vmid, 60).into());
    let ctime = T0 - 400 * 86_400 + u64::from(g.vmid) * 86_413 % (300 * 86_400);
    m.insert(
        "meta".into(),
        format!("creation-qemu=9.2.0,ctime={ctime}").into(),
    );
    m
}

fn lxc_config(g: &Guest) -> Map<String, Value> {
    let mut m = Map::new();
    let disk_prefix = if g.template { "base" } else { "vm" };
    m.insert("arch".into(), "amd64".into());
    m.insert("cores".into(), g.cores.into());
    if let Some(n) = &g.name {
        m.insert("hostname".into(), n.clone().into());
    }
    m.insert("memory".into(), g.memory_mib.into());
    m.insert("swap".into(), g.swap_mib.into());
    m.insert(
        "net0".into(),
        format!(
            "name=eth0,bridge=vmbr0,firewall=1,gw=10.0.0.1,hwaddr={},ip={}/24,type=veth",
            mac(g.vmid, 0),
            ipv4(g.vmid)
        )
        .into(),
    );
    m.insert(
        "rootfs".into(),
        format!(
            "local-lvm:{disk_prefix}-{}-disk-0,size={}",
            g.vmid,
            size_str(g.maxdisk)
        )
        .into(),
    );
    m.insert("ostype".into(), g.ostype.into());
    m.insert("unprivileged".into(), 1.into());
    m.insert("features".into(), "nesting=1".into());
    if !g.raw_lxc.is_empty() {
        // The one list-valued config key: raw `lxc.*` lines as pairs.
        let pairs: Vec<Value> = g.raw_lxc.iter().map(|(k, v)| json!([k, v])).collect();
        m.insert("lxc".into(), Value::Array(pairs));
    }
    m
}

/// Keys a materialized config keeps itself.
fn plain_keys(g: &Guest, m: &mut Map<String, Value>) {
    if let Some(t) = &g.tags {
        m.insert("tags".into(), t.clone().into());
    }
    if g.onboot {
        m.insert("onboot".into(), 1.into());
    }
    if let Some(d) = &g.description {
        m.insert("description".into(), d.clone().into());
    }
}

/// Keys that always come from the guest's state fields.
fn state_keys(g: &Guest, m: &mut Map<String, Value>) {
    if g.template {
        m.insert("template".into(), 1.into());
    }
    if let Some(l) = &g.lock {
        m.insert("lock".into(), l.clone().into());
    }
    if let Some(p) = &g.current_parent {
        m.insert("parent".into(), p.clone().into());
    }
}

/// PVE shows `**********` for a stored `cipassword` in every config it
/// returns.
pub(crate) fn mask_secrets(m: &mut Map<String, Value>) {
    if let Some(pw) = m.get_mut("cipassword")
        && pw.as_str().is_some_and(|s| !s.is_empty())
    {
        *pw = super::cloudinit::MASK.into();
    }
}

fn config(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    let c = ctx.cluster();
    let g = find(&c, ctx, kind)?;
    let mut m = render(g);
    mask_secrets(&mut m);
    let file_digest = config_digest(g);
    if let Some(name) = ctx.params.get("snapshot") {
        let Some(s) = g.snapshots.iter().find(|s| s.name == name) else {
            return Err(ApiError::new(
                500,
                format!("snapshot '{name}' does not exist\n"),
            ));
        };
        m.remove("lock");
        m.remove("parent");
        m.remove("description");
        m.remove("tags");
        m.insert("snaptime".into(), s.snaptime.into());
        if !s.description.is_empty() {
            m.insert("description".into(), s.description.clone().into());
        }
        if let Some(p) = &s.parent {
            m.insert("parent".into(), p.clone().into());
        }
        if kind == GuestKind::Qemu && s.vmstate {
            m.insert(
                "vmstate".into(),
                format!("local-lvm:vm-{}-state-{}", g.vmid, s.name).into(),
            );
            m.insert("runningmachine".into(), g.machine.into());
            m.insert(
                "runningcpu".into(),
                "x86-64-v2-AES,+kvm_pv_eoi,+kvm_pv_unhalt".into(),
            );
        }
    }
    m.insert("digest".into(), file_digest.into());
    Ok(Reply::Data(Value::Object(m)))
}

pub(crate) fn qemu_config_get(ctx: &Ctx<'_>) -> HandlerResult {
    config(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_config_get(ctx: &Ctx<'_>) -> HandlerResult {
    config(ctx, GuestKind::Lxc)
}

fn snapshots(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    let c = ctx.cluster();
    let g = find(&c, ctx, kind)?;
    let mut out: Vec<Value> = g
        .snapshots
        .iter()
        .map(|s| {
            let mut m = Map::new();
            m.insert("name".into(), s.name.clone().into());
            m.insert("snaptime".into(), s.snaptime.into());
            m.insert("description".into(), s.description.clone().into());
            if let Some(p) = &s.parent {
                m.insert("parent".into(), p.clone().into());
            }
            if kind == GuestKind::Qemu {
                m.insert("vmstate".into(), u8::from(s.vmstate).into());
            }
            Value::Object(m)
        })
        .collect();
    let mut current = json!({
        "name": "current",
        "digest": config_digest(g),
        "running": u8::from(g.is_running()),
        "description": "You are here!",
    });
    if let Some(p) = &g.current_parent {
        current["parent"] = p.clone().into();
    }
    out.push(current);
    Ok(Reply::Data(Value::Array(out)))
}

pub(crate) fn qemu_snapshots(ctx: &Ctx<'_>) -> HandlerResult {
    snapshots(ctx, GuestKind::Qemu)
}

pub(crate) fn lxc_snapshots(ctx: &Ctx<'_>) -> HandlerResult {
    snapshots(ctx, GuestKind::Lxc)
}

fn addr(ip: &str, ty: &str, prefix: u32) -> Value {
    json!({"ip-address": ip, "ip-address-type": ty, "prefix": prefix})
}

/// What `guest-network-get-interfaces` answers for `g` (the agent
/// endpoints are in [`super::agent`]).
pub(crate) fn agent_interfaces(g: &Guest) -> Value {
    let v = u64::from(g.vmid);
    let s = &g.stats;
    let lo = json!({
        "name": "lo",
        "hardware-address": "00:00:00:00:00:00",
        "ip-addresses": [addr("127.0.0.1", "ipv4", 8), addr("::1", "ipv6", 128)],
        "statistics": {
            "rx-bytes": 1_204_332 + mix(v, 70) % 9_000_000, "rx-packets": 14_021 + mix(v, 71) % 90_000,
            "rx-errs": 0, "rx-dropped": 0,
            "tx-bytes": 1_204_332 + mix(v, 70) % 9_000_000, "tx-packets": 14_021 + mix(v, 71) % 90_000,
            "tx-errs": 0, "tx-dropped": 0,
        },
    });
    let eth0 = json!({
        "name": "eth0",
        "hardware-address": mac(g.vmid, 0).to_ascii_lowercase(),
        "ip-addresses": [
            addr(&ipv4(g.vmid), "ipv4", 24),
            addr(&format!("2001:db8::{:x}", g.vmid), "ipv6", 64),
            addr(&link_local(g.vmid), "ipv6", 64),
        ],
        "statistics": {
            "rx-bytes": s.netout, "rx-packets": s.netout / 900, "rx-errs": 0, "rx-dropped": 17,
            "tx-bytes": s.netin, "tx-packets": s.netin / 1_100, "tx-errs": 0, "tx-dropped": 0,
        },
    });
    json!([lo, eth0])
}

/// `GET /nodes/{node}/lxc/{vmid}/interfaces`.
pub(crate) fn lxc_interfaces(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let g = find(&c, ctx, GuestKind::Lxc)?;
    if !g.is_running() {
        return Err(ApiError::new(500, format!("CT {} not running\n", g.vmid)));
    }
    // PVE 9 lists both the legacy `hwaddr`/`inet`/`inet6` and the
    // agent-style `hardware-address`/`ip-addresses`.
    let mac = mac(g.vmid, 0).to_ascii_lowercase();
    let ll = link_local(g.vmid);
    Ok(Reply::Data(json!([
        {
            "name": "lo",
            "hwaddr": "00:00:00:00:00:00",
            "hardware-address": "00:00:00:00:00:00",
            "inet": "127.0.0.1/8",
            "inet6": "::1/128",
            "ip-addresses": [addr("127.0.0.1", "inet", 8), addr("::1", "inet6", 128)],
        },
        {
            "name": "eth0",
            "hwaddr": mac,
            "hardware-address": mac,
            "inet": format!("{}/24", ipv4(g.vmid)),
            "inet6": format!("{ll}/64"),
            "ip-addresses": [addr(&ipv4(g.vmid), "inet", 24), addr(&ll, "inet6", 64)],
        },
    ])))
}
