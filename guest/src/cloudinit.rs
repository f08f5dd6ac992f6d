//! Cloud-init as every tool that sets or reads it speaks it: the keys,
//! the `sshkeys` encoding Proxmox wants, `ipconfigN` checked before any
//! request, and the cloud-init drive found in a VM's config.
//!
//! Proxmox stores `sshkeys` URL-encoded (its schema's `urlencoded`
//! format; qemu-server `uri_unescape`s it to check the keys), so a key's
//! spaces and newlines reach it as `%20` and `%0A`. [`encode_keys`]
//! encodes exactly what the call gave, as Perl's `uri_escape` does: the
//! host compares the value decoded once with the call's argument.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use serde_json::{Map, Value};

use crate::arg::{VmType, choice, deserialize_from_json, fixed_schema, string};
use crate::error::{ToolError, quoted};
use crate::json as pj;
use crate::resolve::Target;

/// The settings pve_get_cloudinit shows and pve_set_cloudinit sets, as
/// Proxmox names them (`cipassword` is shown masked, never set here).
pub const KEYS: &[&str] = &[
    "ciuser",
    "cipassword",
    "sshkeys",
    "ipconfig0",
    "ipconfig1",
    "nameserver",
    "searchdomain",
    "citype",
    "ciupgrade",
    "cicustom",
];

/// Longest `sshkeys` taken, before encoding.
const KEYS_MAX: usize = 16384;

/// The key types OpenSSH writes public keys of.
const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ssh-dss",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

/// SSH public keys, one per line in OpenSSH's format, as the call gave
/// them (sent encoded, never changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshKeys(pub String);

impl SshKeys {
    fn from_json(v: &Value) -> Result<Self, String> {
        let rule = "OpenSSH public keys, one per line, e.g. \"ssh-ed25519 AAAAC3Nza... me@host\"";
        let s = string(v, KEYS_MAX).map_err(|e| format!("{e}; it must be {rule}"))?;
        let mut keys = 0;
        for (i, line) in s.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let kind = parts.next().unwrap_or_default();
            let blob = parts.next().unwrap_or_default();
            let blob_ok = blob.len() >= 16
                && blob
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b));
            if !KEY_TYPES.contains(&kind) || !blob_ok {
                // Not quoted: what is not a public key may be a secret.
                return Err(format!(
                    "line {} is not a public key; it must be {rule}. A private key or a \
                     password never belongs here",
                    i + 1
                ));
            }
            keys += 1;
        }
        if keys == 0 {
            return Err(format!("holds no key; it must be {rule}"));
        }
        if s.chars().any(|c| c.is_control() && c != '\n' && c != '\r') {
            return Err("holds a control character other than a line break".into());
        }
        Ok(SshKeys(s.to_owned()))
    }

    /// How many keys it holds.
    pub fn count(&self) -> usize {
        count_keys(&self.0)
    }
}
deserialize_from_json!(SshKeys);
fixed_schema!(SshKeys, serde_json::json!({"type": "string"}));

/// What Perl's `uri_escape` (which `qm set --sshkeys` uses) escapes:
/// every byte but `A-Za-z0-9-._~`.
const URI_ESCAPED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `keys` as Proxmox stores `sshkeys`.
pub fn encode_keys(keys: &str) -> String {
    utf8_percent_encode(keys, URI_ESCAPED).to_string()
}

/// A stored `sshkeys` decoded for showing; as stored when it does not
/// decode to UTF-8.
pub fn decode_keys(stored: &str) -> String {
    percent_decode_str(stored)
        .decode_utf8()
        .map_or_else(|_| stored.to_owned(), |s| s.into_owned())
}

/// One NIC's cloud-init address: `ip=dhcp`, `ip=10.0.0.5/24,gw=10.0.0.1`,
/// `ip6=auto`, or both families.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpConfig(pub String);

impl IpConfig {
    fn from_json(v: &Value) -> Result<Self, String> {
        let rule = "ip=dhcp, ip=<IPv4>/<prefix>[,gw=<IPv4>], ip6=dhcp|auto|<IPv6>/<prefix>\
                    [,gw6=<IPv6>], or both, comma-separated, e.g. \"ip=dhcp\"";
        let s = string(v, 256).map_err(|e| format!("{e}; it must be {rule}"))?;
        let mut seen = Vec::new();
        for part in s.split(',') {
            let Some((key, value)) = part.split_once('=') else {
                return Err(format!("{} is not {rule}", quoted(s, 64)));
            };
            if seen.contains(&key) {
                return Err(format!("{key} is given twice in {}", quoted(s, 64)));
            }
            seen.push(key);
            let ok = match key {
                "ip" => value == "dhcp" || cidr(value, false),
                "ip6" => matches!(value, "dhcp" | "auto") || cidr(value, true),
                "gw" => value.parse::<std::net::Ipv4Addr>().is_ok(),
                "gw6" => value.parse::<std::net::Ipv6Addr>().is_ok(),
                _ => false,
            };
            if !ok {
                return Err(format!(
                    "{} in {} is not {rule}",
                    quoted(part, 64),
                    quoted(s, 64)
                ));
            }
        }
        if seen.contains(&"gw") && !seen.contains(&"ip")
            || seen.contains(&"gw6") && !seen.contains(&"ip6")
        {
            return Err(format!(
                "{} names a gateway without its address; {rule}",
                quoted(s, 64)
            ));
        }
        Ok(IpConfig(s.to_owned()))
    }
}
deserialize_from_json!(IpConfig);
fixed_schema!(IpConfig, serde_json::json!({"type": "string"}));

/// Whether `s` is an address with a prefix length of the family asked.
fn cidr(s: &str, v6: bool) -> bool {
    let Some((ip, prefix)) = s.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return false;
    };
    if v6 {
        ip.parse::<std::net::Ipv6Addr>().is_ok() && prefix <= 128
    } else {
        ip.parse::<std::net::Ipv4Addr>().is_ok() && prefix <= 32
    }
}

choice! {
    /// The format of the cloud-init drive.
    pub enum CiType {
        /// NoCloud, Linux's default.
        Nocloud = "nocloud",
        /// ConfigDrive v2, Windows' default.
        Configdrive2 = "configdrive2",
        /// OpenNebula.
        Opennebula = "opennebula",
    }
}

/// The cloud-init drive in a VM's `config`: its key and volume
/// (`ide2`, `local-lvm:vm-100-cloudinit`).
pub fn drive(config: &Map<String, Value>) -> Option<(String, String)> {
    let mut keys: Vec<&String> = config.keys().collect();
    keys.sort_unstable();
    keys.into_iter().find_map(|k| {
        let value = pj::text(config.get(k))?;
        let volume = value.split(',').next()?.to_owned();
        let is_disk = crate::arg::disk::is_disk_key(k);
        (is_disk && volume.contains("cloudinit")).then(|| (k.clone(), volume))
    })
}

/// Whether one entry of `GET .../cloudinit` waits for the drive's next
/// generation: removed, or set to other than what the drive holds.
pub fn is_pending(value: Option<&str>, pending: Option<&str>, delete: bool) -> bool {
    delete || (pending.is_some() && pending != value)
}

/// How many keys an `sshkeys` text holds: its lines that are not blank.
pub fn count_keys(text: &str) -> usize {
    text.lines().filter(|l| !l.trim().is_empty()).count()
}

/// Refuses a container, before any request about it: cloud-init is a
/// VM's.
pub fn refuse_container(target: &Target) -> Result<(), ToolError> {
    if target.vm_type == VmType::Lxc {
        return Err(ToolError::field(
            "vmid",
            format!(
                "{} is a container, and containers have no cloud-init: its network and keys \
                 are in its config (pve_get_vm_config, pve_set_vm_config)",
                target.label()
            ),
        ));
    }
    Ok(())
}

/// The VM's cloud-init drive, or a refusal saying how to add one: without
/// it no setting reaches the guest.
pub fn require_drive(
    target: &Target,
    config: &Map<String, Value>,
) -> Result<(String, String), ToolError> {
    drive(config).ok_or_else(|| {
        ToolError::Precondition(format!(
            "{} has no cloud-init drive, so no cloud-init setting reaches it. Nothing was sent. \
             Add one first, e.g. pve_set_vm_config {{\"ide2\": \"local-lvm:cloudinit\"}}.",
            target.label()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB me@host";

    #[test]
    fn keys_are_encoded_as_uri_escape_does_and_decode_back() {
        let two = format!("{KEY}\n{KEY}");
        let encoded = encode_keys(&two);
        assert_eq!(
            encoded,
            "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIB%20me%40host%0Assh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIB%20me%40host"
        );
        assert_eq!(decode_keys(&encoded), two);
        assert_eq!(decode_keys("100%"), "100%");
    }

    #[test]
    fn only_public_keys_are_taken() {
        assert_eq!(SshKeys::from_json(&json!(KEY)).unwrap().count(), 1);
        for bad in [
            "hunter2",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
            "ssh-ed25519",
            "ssh-ed25519 short",
            "",
        ] {
            assert!(SshKeys::from_json(&json!(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn ipconfig_takes_what_proxmox_takes() {
        for good in [
            "ip=dhcp",
            "ip=10.0.0.5/24,gw=10.0.0.1",
            "ip6=auto",
            "ip=dhcp,ip6=2001:db8::5/64,gw6=2001:db8::1",
        ] {
            assert!(IpConfig::from_json(&json!(good)).is_ok(), "{good}");
        }
        for bad in [
            "dhcp",
            "ip=10.0.0.5",
            "ip=dhcp,ip=dhcp",
            "gw=10.0.0.1",
            "ip=1.2.3.4/33",
            "mtu=1500",
        ] {
            assert!(IpConfig::from_json(&json!(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_drive_is_the_disk_holding_a_cloudinit_volume() {
        let config = json!({"scsi0": "local-lvm:vm-100-disk-0", "ide2": "local-lvm:vm-100-cloudinit,media=cdrom"});
        assert_eq!(
            drive(config.as_object().unwrap()),
            Some(("ide2".into(), "local-lvm:vm-100-cloudinit".into()))
        );
        assert_eq!(
            drive(json!({"ide2": "none,media=cdrom"}).as_object().unwrap()),
            None
        );
    }
}
