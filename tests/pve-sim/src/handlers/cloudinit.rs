//! Cloud-init (QEMU): `GET .../cloudinit` (values and pending changes),
//! `GET .../cloudinit/dump` (the generated user, network and meta data)
//! and `PUT .../cloudinit` (regenerate the drive), as qemu-server 9 does
//! them, plus what config writes need: the cloud-init drive a
//! `<storage>:cloudinit` value allocates, the hashed `cipassword`, and the
//! record of changed keys (PVE's `[special:cloudinit]` section).
//!
//! What "pending" means: PVE records a cloud-init key's previous value
//! when it changes while the drive exists, and forgets the record when it
//! regenerates the drive (`PUT .../cloudinit`, VM start, a new cloud-init
//! drive). The simulator records every config write that way (PVE records
//! the changes it applies to a running VM; it has no pending section
//! here). PVE writes `cipassword` straight into the config, so a new
//! password is never recorded, there as here.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::Ctx;
use super::act::{self, die};
use super::config::{mac, render};
use crate::conf;
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::state::{Cluster, Guest, GuestKind, Volume};

/// qemu-server's `$cloudinitoptions`, in the order they are listed.
const OPTIONS: &[&str] = &[
    "cicustom",
    "cipassword",
    "citype",
    "ciuser",
    "ciupgrade",
    "nameserver",
    "searchdomain",
    "sshkeys",
];

/// What PVE shows instead of the stored password hash.
pub(crate) const MASK: &str = "**********";

/// The host's `/etc/resolv.conf`, which generated data falls back to.
const HOST_SEARCH: &str = "demo.lan";
const HOST_NAMESERVERS: &[&str] = &["192.0.2.1"];

/// Size of a cloud-init drive (`CLOUDINIT_DISK_SIZE`).
pub(crate) const DRIVE_SIZE: u64 = 4 * 1024 * 1024;

/// The seed's cloud-init template's password (its stored hash is
/// [`crypt`] of it).
pub(crate) const SEED_PASSWORD: &str = "ubuntu-demo";

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Perl truthiness of a config value (`""` and `"0"` are false).
fn truthy(v: Option<&str>) -> bool {
    v.is_some_and(|s| !s.is_empty() && s != "0")
}

fn indexed(key: &str, prefix: &str) -> bool {
    key.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `cloudinit_pending_properties`: the keys whose changes are recorded.
fn recorded_key(key: &str) -> bool {
    OPTIONS.contains(&key) || indexed(key, "ipconfig") || indexed(key, "net") || key == "name"
}

/// `drive_is_cloudinit`: a volume named `[vm-<id>-]cloudinit[.<fmt>]`.
pub(crate) fn is_cloudinit_drive(value: &str) -> bool {
    let volid = conf::drive_volid(value);
    let name = volid.rsplit([':', '/']).next().unwrap_or("");
    if !volid.contains([':', '/']) {
        return false;
    }
    let stem = ["raw", "qcow2", "vmdk"]
        .iter()
        .find_map(|f| name.strip_suffix(&format!(".{f}")))
        .unwrap_or(name);
    stem == "cloudinit"
        || stem
            .strip_prefix("vm-")
            .and_then(|r| r.strip_suffix("-cloudinit"))
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

/// The key of the config's cloud-init drive, if it has one.
pub(crate) fn cloudinit_key(conf: &Map<String, Value>) -> Option<String> {
    conf.iter()
        .filter(|(k, _)| conf::is_disk_key(GuestKind::Qemu, k))
        .find(|(_, v)| v.as_str().is_some_and(is_cloudinit_drive))
        .map(|(k, _)| k.clone())
}

/// Whether the guest has a cloud-init drive now.
pub(crate) fn has_cloudinit_drive(g: &Guest) -> bool {
    g.kind == GuestKind::Qemu && cloudinit_key(&render(g)).is_some()
}

/// Whether a drive value asks for a new cloud-init drive
/// (`<storage>:cloudinit[,opts]`); returns the storage.
pub(crate) fn requested_storage(value: &str) -> Option<&str> {
    let volid = conf::drive_volid(value);
    volid
        .strip_suffix(":cloudinit")
        .filter(|s| !s.is_empty() && !s.contains('/'))
}

/// Allocates the cloud-init drive `key = <storage>:cloudinit[,opts]` asks
/// for (`create_disks`): the stored drive string and its volume. Fails
/// like PVE when another drive is already the cloud-init drive or the
/// storage does not exist.
pub(crate) fn allocate_drive(
    c: &Cluster,
    node: &str,
    vmid: u32,
    conf: &Map<String, Value>,
    key: &str,
    value: &str,
) -> Result<(String, Volume), ApiError> {
    let storage = requested_storage(value).unwrap_or("");
    if let Some(other) = cloudinit_key(conf).filter(|k| k != key) {
        return Err(die(format!(
            "{key} - cloud-init drive is already attached at '{other}'"
        )));
    }
    let s = super::storage_cfg::config(c, storage)?;
    let requested = value
        .split(',')
        .find_map(|o| o.strip_prefix("format="))
        .map(str::to_string);
    let name = format!("vm-{vmid}-cloudinit");
    let (volid, format) = if super::storage_cfg::fs_base(s).is_some() {
        let fmt = super::storage_cfg::leak_format(requested.as_deref().unwrap_or("qcow2"));
        (format!("{storage}:{vmid}/{name}.{fmt}"), fmt)
    } else {
        (format!("{storage}:{name}"), "raw")
    };
    let mut drive = vec![volid.clone()];
    drive.extend(
        value
            .split(',')
            .skip(1)
            .filter(|o| {
                !o.starts_with("format=") && !o.starts_with("size=") && !o.starts_with("media=")
            })
            .map(str::to_string),
    );
    drive.push("media=cdrom".into());
    let volume = Volume {
        storage: storage.to_string(),
        node: (!s.shared).then(|| node.to_string()),
        volid,
        content: "images",
        format,
        size: DRIVE_SIZE,
        ctime: Some(crate::util::now_secs()),
        vmid: Some(vmid),
        notes: None,
        protected: false,
        subtype: None,
        verification: None,
        encrypted: None,
    };
    Ok((drive.join(","), volume))
}

/// PVE's `$cloudinit_record_changed`: keeps the value the drive was
/// generated with for a changed key, and notes keys added since under
/// `added`. `None` means absent (before) or deleted (after).
pub(crate) fn record_change(
    ci: &mut BTreeMap<String, String>,
    key: &str,
    old: Option<&str>,
    new: Option<&str>,
) {
    if !recorded_key(key) || key == "cipassword" || old == new {
        return;
    }
    let recorded = ci.get(key).cloned();
    let mut added: BTreeSet<String> = ci
        .remove("added")
        .map(|a| crate::util::split_list(&a))
        .unwrap_or_default()
        .into_iter()
        .collect();
    match (old, new) {
        (_, Some(new)) if recorded.as_deref() == Some(new) => {
            // Back to what the drive has.
            ci.remove(key);
            added.remove(key);
        }
        (Some(old), Some(_)) if recorded.is_none() && !added.contains(key) => {
            ci.insert(key.to_string(), old.to_string());
        }
        (None, Some(_)) if recorded.is_none() => {
            added.insert(key.to_string());
        }
        // An added key deleted again is simply no longer added.
        (Some(_), None) if recorded.is_none() && added.remove(key) => {}
        (Some(old), None) if recorded.is_none() => {
            ci.insert(key.to_string(), old.to_string());
        }
        _ => {}
    }
    if !added.is_empty() {
        let list: Vec<String> = added.into_iter().collect();
        ci.insert("added".into(), list.join(","));
    }
}

/// `PVE::Tools::encrypt_pw`'s shape: `$5$<salt>$<hash>`. (The hash is a
/// SHA-256 of salt and password in crypt's alphabet, not real
/// sha256-crypt: nothing reads it back.)
pub(crate) fn crypt(password: &str, salt: &str) -> String {
    use sha2::{Digest, Sha256};
    const ALPHABET: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let d = Sha256::digest(format!("{salt}${password}").as_bytes());
    let hash: String = d
        .iter()
        .cycle()
        .take(43)
        .map(|b| ALPHABET[(*b % 64) as usize] as char)
        .collect();
    format!("$5${salt}${hash}")
}

/// What the config stores for a new `cipassword`: a crypt hash (kept as
/// given when it is one already), or the plain text for Windows guests,
/// whose cloudbase-init wants it so.
pub(crate) fn stored_password(value: &str, ostype: &str, seed: u64) -> String {
    let hashed = ["$1$", "$5$", "$6$", "$2a$", "$2y$"]
        .iter()
        .any(|p| value.strip_prefix(p).is_some_and(|r| r.contains('$')));
    if hashed || windows(ostype) {
        return value.to_string();
    }
    let salt: String =
        crate::digests::hex(&crate::digests::sha1(format!("{seed}:{value}").as_bytes()))
            .chars()
            .take(8)
            .collect();
    crypt(value, &salt)
}

fn windows(ostype: &str) -> bool {
    matches!(
        ostype,
        "wxp" | "w2k" | "w2k3" | "w2k8" | "wvista" | "win7" | "win8" | "win10" | "win11"
    )
}

/// `GET /nodes/{node}/qemu/{vmid}/cloudinit`.
pub(crate) fn pending(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let g = act::guest(&c, ctx, GuestKind::Qemu)?;
    let conf = render(g);
    let value = |k: &str| conf.get(k).and_then(text);
    let shown = |k: &str, v: String| if k == "cipassword" { MASK.into() } else { v };
    let mut ci = g.ci_changes.clone();
    let added = ci.remove("added").unwrap_or_default();
    let mut out = Vec::new();
    for key in crate::util::split_list(&added) {
        let pending = value(&key).map(|v| shown(&key, v));
        out.push(json!({"key": key, "pending": pending}));
    }
    for &key in OPTIONS {
        let Some(current) = value(key).filter(|v| truthy(Some(v))) else {
            continue;
        };
        // PVE matches the `added` list as a pattern, not per item.
        if added.contains(key) {
            continue;
        }
        let mut item = Map::new();
        item.insert("key".into(), key.into());
        match ci.get(key).filter(|v| truthy(Some(v))) {
            Some(was) => {
                item.insert("value".into(), shown(key, was.clone()).into());
                item.insert("pending".into(), shown(key, current).into());
            }
            None => {
                item.insert("value".into(), shown(key, current).into());
            }
        }
        out.push(Value::Object(item));
    }
    for key in ci.keys() {
        if truthy(value(key).as_deref()) {
            continue;
        }
        out.push(json!({"key": key, "delete": 1}));
    }
    Ok(Reply::Data(Value::Array(out)))
}

/// `PUT /nodes/{node}/qemu/{vmid}/cloudinit`: regenerates the drive under
/// the config file lock. A VM without a cloud-init drive is left as it
/// is (PVE returns without a word).
pub(crate) fn update(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, GuestKind::Qemu)?;
    let vmid = g.vmid;
    if crate::work::flocked(&c, vmid) {
        return Err(die(act::flock_error(GuestKind::Qemu, vmid)));
    }
    if let Some(err) = act::lock_error(g) {
        return Err(die(err));
    }
    if has_cloudinit_drive(g)
        && let Some(g) = c.guests.get_mut(&vmid)
        && !g.ci_changes.is_empty()
    {
        g.ci_changes.clear();
        c.generation += 1;
    }
    Ok(Reply::Data(Value::Null))
}

/// `GET /nodes/{node}/qemu/{vmid}/cloudinit/dump?type=user|network|meta`:
/// the data as it would be generated now. The password hash shows only to
/// callers who may change cloud-init settings.
pub(crate) fn dump(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let g = act::guest(&c, ctx, GuestKind::Qemu)?;
    let conf = render(g);
    let mask = !ctx.can(&format!("/vms/{}", g.vmid), "VM.Config.Cloudinit");
    let nocloud = format(&conf) == "nocloud";
    let network = |conf: &Map<String, Value>| {
        if nocloud {
            nocloud_network(g.vmid, conf)
        } else {
            configdrive2_network(conf)
        }
    };
    let out = match ctx.params.get("type").unwrap_or("user") {
        "user" => user_data(g.vmid, &conf, mask),
        "network" => network(&conf),
        _ => {
            // The instance id hashes the unmasked user data.
            let seed = format!("{}{}", user_data(g.vmid, &conf, false), network(&conf));
            let id = crate::digests::hex(&crate::digests::sha1(seed.as_bytes()));
            if nocloud {
                format!("instance-id: {id}\n")
            } else {
                format!(
                    "{{\n     \"uuid\": \"{id}\",\n     \"network_config\": {{ \"content_path\": \"/content/0000\" }}\n}}\n"
                )
            }
        }
    };
    Ok(Reply::Data(Value::String(out)))
}

/// `get_cloudinit_format`: `citype`, else `configdrive2` for Windows and
/// `nocloud` for the rest.
fn format(conf: &Map<String, Value>) -> String {
    if let Some(t) = conf.get("citype").and_then(text) {
        return t;
    }
    let ostype = conf.get("ostype").and_then(text).unwrap_or_default();
    if windows(&ostype) {
        "configdrive2".into()
    } else {
        "nocloud".into()
    }
}

/// `cloudinit_userdata`.
fn user_data(vmid: u32, conf: &Map<String, Value>, mask: bool) -> String {
    let get = |k: &str| conf.get(k).and_then(text);
    let name = get("name").unwrap_or_else(|| format!("VM{vmid}"));
    let (hostname, fqdn) = match name.split_once('.') {
        Some((h, _)) => (h.to_string(), name.clone()),
        None => match get("searchdomain").filter(|s| truthy(Some(s))) {
            Some(search) => (name.clone(), format!("{name}.{search}")),
            None => (name.clone(), name.clone()),
        },
    };
    let mut out =
        format!("#cloud-config\nhostname: {hostname}\nmanage_etc_hosts: true\nfqdn: {fqdn}\n");
    let user = get("ciuser");
    if let Some(u) = &user {
        out.push_str(&format!("user: {u}\n"));
        if u == "root" {
            out.push_str("disable_root: False\n");
        }
    }
    if let Some(pw) = get("cipassword") {
        out.push_str(&format!("password: {}\n", if mask { MASK } else { &pw }));
    }
    if let Some(keys) = get("sshkeys") {
        out.push_str("ssh_authorized_keys:\n");
        for k in crate::ssh_keys::uri_unescape(&keys)
            .split('\n')
            .filter(|k| !k.trim().is_empty())
        {
            out.push_str(&format!("  - {k}\n"));
        }
    }
    out.push_str("chpasswd:\n  expire: False\n");
    if user.as_deref() != Some("root") {
        out.push_str("users:\n  - default\n");
    }
    if get("ciupgrade").is_none_or(|v| truthy(Some(&v))) {
        out.push_str("package_upgrade: true\n");
    }
    out
}

/// An `ipconfigN` value as `parse_ipconfig` reads it (`None` for the
/// combinations it only warns about).
struct IpConfig {
    ip: Option<String>,
    gw: Option<String>,
    ip6: Option<String>,
    gw6: Option<String>,
}

fn parse_ipconfig(v: &str) -> Option<IpConfig> {
    let get = |k: &str| {
        v.split(',')
            .find_map(|p| p.strip_prefix(&format!("{k}=")))
            .map(str::to_string)
    };
    let mut c = IpConfig {
        ip: get("ip"),
        gw: get("gw"),
        ip6: get("ip6"),
        gw6: get("gw6"),
    };
    if (c.gw.is_some() && c.ip.is_none())
        || (c.gw6.is_some() && c.ip6.is_none())
        || (c.gw.is_some() && c.ip.as_deref() == Some("dhcp"))
        || (c.gw6.is_some() && matches!(c.ip6.as_deref(), Some("dhcp" | "auto")))
    {
        return None;
    }
    if c.ip.is_none() && c.ip6.is_none() {
        c.ip = Some("dhcp".into());
        c.ip6 = Some("dhcp".into());
    }
    Some(c)
}

/// `split_ip4`: address and dotted netmask of an IPv4 CIDR.
fn split_ip4(cidr: &str) -> (String, String) {
    let (addr, bits) = cidr.split_once('/').unwrap_or((cidr, "32"));
    let bits: u32 = bits.parse().unwrap_or(32).min(32);
    let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
    let m = mask.to_be_bytes();
    (addr.into(), format!("{}.{}.{}.{}", m[0], m[1], m[2], m[3]))
}

/// The `netN` keys with an `ipconfigN`, as `sort` orders them.
fn configured_nics(conf: &Map<String, Value>) -> Vec<(String, IpConfig)> {
    let mut nics: Vec<&String> = conf.keys().filter(|k| indexed(k, "net")).collect();
    nics.sort();
    nics.into_iter()
        .filter_map(|k| {
            let id = &k[3..];
            let v = conf.get(&format!("ipconfig{id}")).and_then(text)?;
            truthy(Some(&v)).then(|| parse_ipconfig(&v).map(|c| (k.clone(), c)))?
        })
        .collect()
}

/// `get_dns_conf`: the config's search domains and nameservers, else the
/// host's.
fn dns(conf: &Map<String, Value>) -> (Vec<String>, Vec<String>) {
    let words = |s: String| -> Vec<String> { s.split_whitespace().map(str::to_string).collect() };
    let search = conf
        .get("searchdomain")
        .and_then(text)
        .map_or_else(|| vec![HOST_SEARCH.to_string()], words);
    let servers = conf.get("nameserver").and_then(text).map_or_else(
        || HOST_NAMESERVERS.iter().map(|s| s.to_string()).collect(),
        words,
    );
    (search, servers)
}

/// The MAC address of `netN` (`model=MAC` or `macaddr=MAC`), lower case.
fn nic_mac(vmid: u32, key: &str, conf: &Map<String, Value>) -> String {
    let v = conf.get(key).and_then(text).unwrap_or_default();
    let first = v.split(',').next().unwrap_or("");
    let found = v
        .split(',')
        .find_map(|p| p.strip_prefix("macaddr="))
        .or_else(|| first.split_once('=').map(|(_, m)| m))
        .filter(|m| m.len() == 17);
    let n: u32 = key[3..].parse().unwrap_or(0);
    found
        .map_or_else(|| mac(vmid, n), str::to_string)
        .to_lowercase()
}

/// `nocloud_network`: network config version 1.
fn nocloud_network(vmid: u32, conf: &Map<String, Value>) -> String {
    let mut out = String::from("version: 1\nconfig:\n");
    for (key, ipc) in configured_nics(conf) {
        let id = &key[3..];
        let mac = nic_mac(vmid, &key, conf);
        out.push_str(&format!(
            "    - type: physical\n      name: eth{id}\n      mac_address: '{mac}'\n      subnets:\n"
        ));
        let i = "      ";
        match ipc.ip.as_deref() {
            Some("dhcp") => out.push_str(&format!("{i}- type: dhcp4\n")),
            Some(ip) => {
                let (addr, mask) = split_ip4(ip);
                out.push_str(&format!(
                    "{i}- type: static\n{i}  address: '{addr}'\n{i}  netmask: '{mask}'\n"
                ));
                if let Some(gw) = &ipc.gw {
                    out.push_str(&format!("{i}  gateway: '{gw}'\n"));
                }
            }
            None => {}
        }
        match ipc.ip6.as_deref() {
            Some("dhcp") => out.push_str(&format!("{i}- type: dhcp6\n")),
            Some("auto") => out.push_str(&format!("{i}- type: ipv6_slaac\n")),
            Some(ip6) => {
                out.push_str(&format!("{i}- type: static6\n{i}  address: '{ip6}'\n"));
                if let Some(gw) = &ipc.gw6 {
                    out.push_str(&format!("{i}  gateway: '{gw}'\n"));
                }
            }
            None => {}
        }
    }
    let (search, servers) = dns(conf);
    out.push_str("    - type: nameserver\n");
    if !servers.is_empty() {
        out.push_str("      address:\n");
        for s in &servers {
            out.push_str(&format!("      - '{s}'\n"));
        }
    }
    if !search.is_empty() {
        out.push_str("      search:\n");
        for s in &search {
            out.push_str(&format!("      - '{s}'\n"));
        }
    }
    out
}

/// `configdrive2_network`: ifupdown syntax.
fn configdrive2_network(conf: &Map<String, Value>) -> String {
    let mut out = String::from("auto lo\niface lo inet loopback\n\n");
    let (search, servers) = dns(conf);
    if !servers.is_empty() {
        out.push_str(&format!("        dns_nameservers {}\n", servers.join(" ")));
    }
    if !search.is_empty() {
        out.push_str(&format!("        dns_search {}\n", search.join(" ")));
    }
    for (key, ipc) in configured_nics(conf) {
        let id = format!("eth{}", &key[3..]);
        out.push_str(&format!("auto {id}\n"));
        match ipc.ip.as_deref() {
            Some("dhcp") => out.push_str(&format!("iface {id} inet dhcp\n")),
            Some(ip) => {
                let (addr, mask) = split_ip4(ip);
                out.push_str(&format!(
                    "iface {id} inet static\n        address {addr}\n        netmask {mask}\n"
                ));
                if let Some(gw) = &ipc.gw {
                    out.push_str(&format!("        gateway {gw}\n"));
                }
            }
            None => {}
        }
        match ipc.ip6.as_deref() {
            Some(m @ ("auto" | "dhcp")) => out.push_str(&format!("iface {id} inet6 {m}\n")),
            Some(ip6) => {
                let (addr, bits) = ip6.split_once('/').unwrap_or((ip6, ""));
                out.push_str(&format!(
                    "iface {id} inet6 static\n        address {addr}\n        netmask {bits}\n"
                ));
                if let Some(gw) = &ipc.gw6 {
                    out.push_str(&format!("        gateway {gw}\n"));
                }
            }
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_like_qemu_server() {
        let mut ci = BTreeMap::new();
        record_change(&mut ci, "ciuser", Some("ubuntu"), Some("ops"));
        record_change(&mut ci, "ciuser", Some("ops"), Some("admin"));
        assert_eq!(ci["ciuser"], "ubuntu", "the generated value is kept");
        record_change(&mut ci, "ciuser", Some("admin"), Some("ubuntu"));
        assert!(ci.is_empty(), "back in sync: {ci:?}");
        record_change(&mut ci, "nameserver", None, Some("1.1.1.1"));
        record_change(&mut ci, "searchdomain", None, Some("lab"));
        assert_eq!(ci["added"], "nameserver,searchdomain");
        record_change(&mut ci, "nameserver", Some("1.1.1.1"), None);
        assert_eq!(ci["added"], "searchdomain");
        record_change(&mut ci, "sshkeys", Some("k"), None);
        assert_eq!(ci["sshkeys"], "k");
        record_change(&mut ci, "cores", Some("1"), Some("2"));
        record_change(&mut ci, "cipassword", Some("x"), Some("y"));
        assert_eq!(ci.len(), 2, "{ci:?}");
    }

    #[test]
    fn drives_and_passwords() {
        assert!(is_cloudinit_drive("local-lvm:vm-900-cloudinit,media=cdrom"));
        assert!(is_cloudinit_drive("nfs-images:120/vm-120-cloudinit.qcow2"));
        assert!(!is_cloudinit_drive("local-lvm:vm-900-disk-0"));
        assert!(!is_cloudinit_drive("none,media=cdrom"));
        assert_eq!(requested_storage("local-lvm:cloudinit"), Some("local-lvm"));
        assert_eq!(requested_storage("local-lvm:vm-1-cloudinit"), None);
        let h = stored_password("secret", "l26", 1);
        assert!(h.starts_with("$5$") && h.len() == 3 + 8 + 1 + 43, "{h}");
        assert_eq!(stored_password(&h, "l26", 2), h);
        assert_eq!(stored_password("secret", "win11", 1), "secret");
        assert_eq!(split_ip4("10.0.0.5/20").1, "255.255.240.0");
    }
}
