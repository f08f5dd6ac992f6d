//! `pve_get_vm_config`: one guest's configuration from
//! `GET /nodes/{node}/{qemu|lxc}/{vmid}/config`, with secrets masked and
//! the commonly needed settings parsed out.
//!
//! Masking rule: `cipassword` is always `**********` (Proxmox already masks
//! it; we never pass anything else through). Any other key whose name
//! contains `password`, `secret`, `token` or `key` (case-insensitive) is
//! replaced by `**********`, except `sshkeys` (public keys; shown
//! URL-decoded) and `keyboard` (a keyboard layout). The masked keys are
//! listed in `masked_keys`.

use percent_encoding::percent_decode_str;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{self, VmType};
use crate::error::ToolError;
use crate::fetch;
use crate::format;
use crate::json as pj;
use crate::path::ApiPath;
use crate::resolve::{Resolved, Target, guest_input};

use crate::format::MASK;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_vm_config",
    title: "Get VM/container configuration",
    description: "A guest's configuration: every key as stored (secrets masked) plus its disks, \
        NICs, CPU and memory parsed. For live state use pve_get_vm_status.",
    reads: ["/nodes/{node}/{vm_type}/{vmid}/config", "/cluster/resources?type=vm"],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
    ],
    run: run,
};

guest_input! {
    /// The guest to ask about.
    pub struct Input {}
}

/// A guest's configuration, masked, with its highlights parsed.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct VmConfig {
    /// VM/CT id
    pub vmid: u32,
    /// Node the guest is on
    pub node: String,
    /// "qemu" (VM) or "lxc" (container)
    pub vm_type: VmType,
    /// Every config key with its value as Proxmox gives it; secrets replaced by **********. A
    /// container's raw lxc.* lines (key lxc) are a list of [key, value] pairs.
    pub config: Config,
    /// Config keys whose values were masked
    pub masked_keys: Vec<String>,
    /// Parsed settings; null where the config leaves them unset (Proxmox defaults apply).
    pub highlights: Highlights,
    /// SHA-1 of the config file, to detect changes; null if not reported
    pub digest: Option<String>,
    /// Which of node and vm_type pve-mcp looked up because the call omitted them.
    pub resolved: Resolved,
}

/// Config keys and their values: scalars, and lists of `[key, value]`
/// pairs for the one list-valued key (an LXC config's raw `lxc`).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct Config(Map<String, Value>);

arg::fixed_schema!(
    Config,
    serde_json::json!({
        "type": "object",
        "additionalProperties": {"anyOf": [
            {"type": ["string", "number", "boolean", "null"]},
            {
                "type": "array",
                "description": "Raw lxc.* lines as [key, value] pairs",
                "items": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 2,
                    "maxItems": 2,
                },
            },
        ]},
    })
);

/// `[[key, value], ...]` as Proxmox gives an LXC config's raw `lxc` key,
/// with every part as a string; `None` for any other shape.
fn pairs(v: &Value) -> Option<Value> {
    let pair = |p: &Value| match p.as_array()?.as_slice() {
        [k, v] => Some(Value::from(vec![pj::text(Some(k))?, text_or_empty(v)?])),
        _ => None,
    };
    let list = v.as_array()?;
    list.iter()
        .map(pair)
        .collect::<Option<Vec<_>>>()
        .map(Value::from)
}

/// A pair's value: text, or `""` for an empty one (`lxc.mount.auto =`).
fn text_or_empty(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        other => pj::text(Some(other)),
    }
}

/// Parsed settings; null where the config leaves them unset (Proxmox defaults apply).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Highlights {
    /// VM name or container hostname; null if unset
    pub name: Option<String>,
    /// Cores (per socket for VMs); null if unset
    pub cores: Option<u64>,
    /// CPU sockets (VMs); null if unset or a container
    pub sockets: Option<u64>,
    /// Memory, MiB; null if unset
    pub memory_mib: Option<u64>,
    /// OS type, e.g. l26, win11, debian; null if unset
    pub ostype: Option<String>,
    /// true if the QEMU guest agent is enabled (always false for containers)
    pub agent: bool,
    /// true if started at host boot
    pub onboot: bool,
    /// true for a template
    pub template: bool,
    /// Config lock (backup, migrate, snapshot, ...); null if none
    pub lock: Option<String>,
    /// Tags
    pub tags: Vec<String>,
    /// Disks, CD drives and mount points
    pub disks: Vec<Disk>,
    /// Network interfaces
    pub nics: Vec<Nic>,
}

/// One disk or mount point.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Disk {
    /// Config key, e.g. scsi0, rootfs, mp0, efidisk0, unused0
    pub key: String,
    /// Storage id; null for none/cdrom-without-media or a host path
    pub storage: Option<String>,
    /// Volume (storage:name) or path as configured; null if none
    pub volume: Option<String>,
    /// Size as configured, e.g. 32G; null if not set
    pub size: Option<String>,
    /// cdrom for CD/DVD drives; null for disks
    pub media: Option<String>,
    /// Container mount path (mp keys); null otherwise
    pub mountpoint: Option<String>,
}

/// One network interface.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Nic {
    /// Config key, e.g. net0
    pub key: String,
    /// NIC model (virtio, e1000, ...) or container type (veth); null if unknown
    pub model: Option<String>,
    /// MAC address; null if not set
    pub mac: Option<String>,
    /// Bridge, e.g. vmbr0; null if none
    pub bridge: Option<String>,
    /// VLAN tag; null if none
    pub vlan: Option<u64>,
    /// true if the Proxmox firewall is on for this NIC
    pub firewall: bool,
    /// Interface name inside a container (eth0); null for VMs
    pub name: Option<String>,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<VmConfig>, ToolError> {
    let target = input.wanted().resolve(pve)?;
    let path = ApiPath::new("nodes")
        .seg(&target.node)
        .lit(target.vm_type.as_str())
        .id(target.vmid)
        .lit("config");
    let config = fetch::object(pve, &path)?;
    Ok(shape(&target, &config))
}

/// Whether a config key's value must be masked (see the module docs).
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    if k == "sshkeys" || k == "keyboard" {
        return false;
    }
    ["password", "secret", "token", "key"]
        .iter()
        .any(|w| k.contains(w))
}

/// `a=1,b=2` → pairs; a leading bare value gets the key `""`.
fn props(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), v.trim().to_owned()),
            None => (String::new(), p.trim().to_owned()),
        })
        .collect()
}

fn prop<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn is_indexed(key: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|p| {
        key.strip_prefix(p)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
    })
}

fn disk(key: &str, value: &str) -> Disk {
    let pairs = props(value);
    let volume = prop(&pairs, "")
        .or(prop(&pairs, "volume"))
        .or(prop(&pairs, "file"))
        .map(str::to_owned);
    let storage = volume
        .as_deref()
        .and_then(|v| v.split_once(':'))
        .map(|(s, _)| s.to_owned())
        .filter(|s| !s.is_empty() && !s.starts_with('/'));
    let owned = |k: &str| prop(&pairs, k).map(str::to_owned);
    Disk {
        key: key.to_owned(),
        storage,
        volume: volume.filter(|v| v != "none"),
        size: owned("size"),
        media: owned("media"),
        mountpoint: owned("mp"),
    }
}

const QEMU_MODELS: [&str; 10] = [
    "virtio",
    "e1000",
    "e1000e",
    "rtl8139",
    "vmxnet3",
    "e1000-82540em",
    "e1000-82544gc",
    "e1000-82545em",
    "i82551",
    "ne2k_pci",
];

fn nic(key: &str, value: &str, vm_type: VmType) -> Nic {
    let pairs = props(value);
    let (model, mac) = match vm_type {
        VmType::Qemu => match pairs.iter().find(|(k, _)| {
            QEMU_MODELS.contains(&k.as_str())
                || k.starts_with("i8255")
                || k == "pcnet"
                || k == "ne2k_isa"
        }) {
            Some((m, mac)) => (Some(m.clone()), Some(mac.clone()).filter(|m| !m.is_empty())),
            None => (
                prop(&pairs, "model").map(str::to_owned),
                prop(&pairs, "macaddr").map(str::to_owned),
            ),
        },
        VmType::Lxc => (
            prop(&pairs, "type")
                .map(str::to_owned)
                .or(Some("veth".to_owned())),
            prop(&pairs, "hwaddr").map(str::to_owned),
        ),
    };
    Nic {
        key: key.to_owned(),
        model,
        mac,
        bridge: prop(&pairs, "bridge").map(str::to_owned),
        vlan: prop(&pairs, "tag").and_then(|t| t.parse::<u64>().ok()),
        firewall: prop(&pairs, "firewall").is_some_and(|f| f == "1"),
        name: prop(&pairs, "name")
            .filter(|_| vm_type == VmType::Lxc)
            .map(str::to_owned),
    }
}

/// Natural order for indexed keys: scsi2 before scsi10.
fn key_order(k: &str) -> (String, u64) {
    let split = k.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    (k[..split].to_owned(), k[split..].parse().unwrap_or(0))
}

/// Masks the config and parses its highlights.
pub fn shape(target: &Target, raw: &Map<String, Value>) -> Answer<VmConfig> {
    let qemu = target.vm_type == VmType::Qemu;
    let mut config = Map::new();
    let mut masked = Vec::new();
    for (k, v) in raw {
        let value = if k == "cipassword" || is_secret_key(k) {
            masked.push(k.clone());
            Value::from(MASK)
        } else if k == "sshkeys" {
            v.as_str()
                .map(|s| Value::from(percent_decode_str(s).decode_utf8_lossy().into_owned()))
                .unwrap_or_else(|| v.clone())
        } else if let Some(list) = pairs(v) {
            // A list stays a list: re-encoding it as a JSON string would
            // make agents parse JSON inside JSON.
            list
        } else if v.is_object() || v.is_array() {
            Value::from(v.to_string())
        } else {
            v.clone()
        };
        config.insert(k.clone(), value);
    }
    masked.sort();
    let s = |k: &str| config.get(k).and_then(|v| pj::text(Some(v)));
    let mut keys: Vec<&String> = config.keys().collect();
    keys.sort_by_key(|k| key_order(k));
    let disk_prefixes: &[&str] = if qemu {
        &[
            "ide", "sata", "scsi", "virtio", "efidisk", "tpmstate", "unused",
        ]
    } else {
        &["mp", "unused"]
    };
    let mut disks: Vec<Disk> = Vec::new();
    if !qemu && let Some(r) = s("rootfs") {
        disks.push(disk("rootfs", &r));
    }
    let mut nics = Vec::new();
    for k in &keys {
        if is_indexed(k, disk_prefixes)
            && let Some(v) = s(k)
        {
            disks.push(disk(k, &v));
        } else if is_indexed(k, &["net"])
            && let Some(v) = s(k)
        {
            nics.push(nic(k, &v, target.vm_type));
        }
    }
    let memory_mib = s("memory").and_then(|m| {
        let pairs = props(&m);
        prop(&pairs, "")
            .or(prop(&pairs, "current"))
            .and_then(|v| v.parse::<u64>().ok())
    });
    let agent = qemu
        && s("agent").is_some_and(|a| {
            let pairs = props(&a);
            prop(&pairs, "")
                .or(prop(&pairs, "enabled"))
                .is_some_and(|v| v == "1")
        });
    let highlights = Highlights {
        name: if qemu { s("name") } else { s("hostname") },
        cores: pj::uint(config.get("cores")),
        sockets: if qemu {
            pj::uint(config.get("sockets"))
        } else {
            None
        },
        memory_mib,
        ostype: s("ostype"),
        agent,
        onboot: pj::flag(config.get("onboot")),
        template: pj::flag(config.get("template")),
        lock: s("lock"),
        tags: pj::tags(config.get("tags")),
        disks,
        nics,
    };
    let summary = summary(target, &highlights, &masked);
    let digest = s("digest");
    Answer {
        structured: VmConfig {
            vmid: target.vmid,
            node: target.node.clone(),
            vm_type: target.vm_type,
            digest,
            config: Config(config),
            masked_keys: masked,
            highlights,
            resolved: target.resolved(),
        },
        summary,
    }
}

fn summary(target: &Target, h: &Highlights, masked: &[String]) -> String {
    let mut parts = Vec::new();
    match (h.cores, h.sockets) {
        (Some(c), Some(s)) if s > 1 => parts.push(format!("{s}x{c} cores")),
        (Some(c), _) => parts.push(format::count(c as usize, "core", "cores")),
        _ => {}
    }
    if let Some(m) = h.memory_mib {
        parts.push(format!("{} memory", format::bytes(m * 1024 * 1024)));
    }
    parts.push(format::count(h.disks.len(), "disk", "disks"));
    parts.push(format::count(h.nics.len(), "NIC", "NICs"));
    if let Some(os) = &h.ostype {
        parts.push(format!("ostype {os}"));
    }
    let name = h
        .name
        .as_ref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    let mut out = format!(
        "{}{name} on {}: {}.",
        target.label(),
        target.node,
        parts.join(", ")
    );
    if let Some(l) = &h.lock {
        out.push_str(&format!(" Locked ({l})."));
    }
    if !masked.is_empty() {
        out.push_str(&format!(" Masked: {}.", masked.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::resources::fixtures::cluster_vms;
    use crate::tool::Output;
    use serde_json::json;

    /// The PVE 8.2/QEMU 9.0 payload from the reference, plus cloud-init
    /// keys, tags, a second disk and a VLAN NIC.
    fn qemu_config() -> Value {
        json!({"agent":"1","bios":"ovmf","boot":"order=sata0;sata1","cores":2,"cpu":"Cascadelake-Server-noTSX",
            "digest":"1c6a44c158cd25dd20fb45a56bcf2c3258abde1b","efidisk0":"ceph-vm-data:vm-126-disk-0,size=128K",
            "machine":"pc-i440fx-9.0","memory":"3072","meta":"creation-qemu=9.0.2,ctime=1727867268","name":"xx.example.com",
            "numa":0,"ostype":"win10","scsihw":"virtio-scsi-single","smbios1":"uuid=42393877-1111","sockets":1,
            "vmgenid":"c5b96294-2222","sata0":"none,media=cdrom","net0":"virtio=00:50:56:b9:02:4d,bridge=v656",
            "scsi10":"local-lvm:vm-126-disk-2,size=10G","scsi2":"local-lvm:vm-126-disk-1,iothread=1,size=32G",
            "net1":"e1000=BC:24:11:00:00:01,bridge=vmbr0,firewall=1,tag=20",
            "cipassword":"**********","ciuser":"admin","sshkeys":"ssh-ed25519%20AAAAC3Nz%20me%40host%0A",
            "keyboard":"de","tags":"prod;win","onboot":1,"lock":"backup"})
    }

    fn lxc_config() -> Value {
        json!({"arch":"amd64","cores":2,"hostname":"ct-web","memory":512,"swap":512,"ostype":"debian",
            "rootfs":"local-lvm:vm-101-disk-0,size=8G","mp0":"/mnt/host,mp=/data",
            "net0":"name=eth0,bridge=vmbr0,firewall=1,hwaddr=BC:24:11:AA:BB:CC,ip=dhcp,type=veth",
            "digest":"abc","unprivileged":1,"features":"nesting=1"})
    }

    fn call_q(args: &str) -> (Output, FakePve) {
        let mut pve = FakePve::default()
            .with("/cluster/resources?type=vm", cluster_vms())
            .with("/nodes/node2/qemu/100/config", qemu_config())
            .with("/nodes/node1/lxc/101/config", lxc_config());
        let out = TOOL.call(&mut pve, args).unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        (out, pve)
    }

    #[test]
    fn qemu_highlights_and_masking() {
        let (out, pve) = call_q(r#"{"vmid": 100}"#);
        assert_eq!(
            pve.requests,
            ["/cluster/resources?type=vm", "/nodes/node2/qemu/100/config"]
        );
        let s = &out.structured;
        assert_eq!(s["config"]["cipassword"], MASK);
        assert_eq!(s["config"]["sshkeys"], "ssh-ed25519 AAAAC3Nz me@host\n");
        assert_eq!(s["config"]["keyboard"], "de");
        assert_eq!(s["config"]["memory"], "3072");
        assert_eq!(s["masked_keys"], json!(["cipassword"]));
        let h = &s["highlights"];
        assert_eq!(h["name"], "xx.example.com");
        assert_eq!(h["cores"], 2);
        assert_eq!(h["sockets"], 1);
        assert_eq!(h["memory_mib"], 3072);
        assert_eq!(h["agent"], true);
        assert_eq!(h["onboot"], true);
        assert_eq!(h["lock"], "backup");
        assert_eq!(h["tags"], json!(["prod", "win"]));
        let keys: Vec<&str> = h["disks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["key"].as_str().unwrap())
            .collect();
        assert_eq!(keys, ["efidisk0", "sata0", "scsi2", "scsi10"]);
        assert_eq!(
            h["disks"][1],
            json!({"key":"sata0","storage":null,"volume":null,"size":null,"media":"cdrom","mountpoint":null})
        );
        assert_eq!(
            h["disks"][2],
            json!({"key":"scsi2","storage":"local-lvm","volume":"local-lvm:vm-126-disk-1","size":"32G","media":null,"mountpoint":null})
        );
        assert_eq!(
            h["nics"][0],
            json!({"key":"net0","model":"virtio","mac":"00:50:56:b9:02:4d","bridge":"v656","vlan":null,"firewall":false,"name":null})
        );
        assert_eq!(h["nics"][1]["vlan"], 20);
        assert_eq!(h["nics"][1]["firewall"], true);
        assert_eq!(s["digest"], "1c6a44c158cd25dd20fb45a56bcf2c3258abde1b");
        assert_eq!(
            out.summary,
            "VM 100 (xx.example.com) on node2: 2 cores, 3 GiB memory, 4 disks, 2 NICs, ostype win10. Locked (backup). Masked: cipassword."
        );
    }

    #[test]
    fn lxc_highlights() {
        let (out, pve) = call_q(r#"{"vmid": 101, "node": "node1", "vm_type": "lxc"}"#);
        assert_eq!(pve.requests, ["/nodes/node1/lxc/101/config"]);
        let h = &out.structured["highlights"];
        assert_eq!(h["name"], "ct-web");
        assert_eq!(h["sockets"], Value::Null);
        assert_eq!(h["memory_mib"], 512);
        assert_eq!(h["agent"], false);
        assert_eq!(h["disks"][0]["key"], "rootfs");
        assert_eq!(h["disks"][0]["size"], "8G");
        assert_eq!(
            h["disks"][1],
            json!({"key":"mp0","storage":null,"volume":"/mnt/host","size":null,"media":null,"mountpoint":"/data"})
        );
        assert_eq!(
            h["nics"][0],
            json!({"key":"net0","model":"veth","mac":"BC:24:11:AA:BB:CC","bridge":"vmbr0","vlan":null,"firewall":true,"name":"eth0"})
        );
        assert_eq!(out.structured["masked_keys"], json!([]));
    }

    #[test]
    fn raw_lxc_lines_stay_a_list() {
        let mut cfg = lxc_config();
        cfg["lxc"] = json!([
            ["lxc.apparmor.profile", "unconfined"],
            ["lxc.cgroup2.devices.allow", "a"]
        ]);
        cfg["odd"] = json!({"nested": 1});
        let mut pve = FakePve::default().with("/nodes/node1/lxc/101/config", cfg);
        let out = TOOL
            .call(
                &mut pve,
                r#"{"vmid": 101, "node": "node1", "vm_type": "lxc"}"#,
            )
            .unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        assert_eq!(
            out.structured["config"]["lxc"],
            json!([
                ["lxc.apparmor.profile", "unconfined"],
                ["lxc.cgroup2.devices.allow", "a"]
            ])
        );
        // Any other structured value is still passed on as JSON text.
        assert_eq!(out.structured["config"]["odd"], "{\"nested\":1}");
        assert_eq!(pairs(&json!([["a"]])), None);
        assert_eq!(pairs(&json!([["k", ""]])), Some(json!([["k", ""]])));
    }

    #[test]
    fn defensive_masking() {
        for k in [
            "cipassword",
            "password",
            "api_token",
            "client-secret",
            "privkey",
            "KEY",
        ] {
            assert!(is_secret_key(k) || k == "cipassword", "{k}");
        }
        for k in ["sshkeys", "keyboard", "name", "net0", "description"] {
            assert!(!is_secret_key(k), "{k}");
        }
        let mut raw = Map::new();
        raw.insert("cipassword".into(), json!("plaintext?!"));
        raw.insert("hookscript_token".into(), json!("abc"));
        let t = Target {
            vmid: 100,
            node: "n".into(),
            vm_type: VmType::Qemu,
            node_resolved: false,
            vm_type_resolved: false,
        };
        let out = shape(&t, &raw).into_output().unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["config"]["cipassword"], MASK);
        assert_eq!(out.structured["config"]["hookscript_token"], MASK);
        assert!(!out.structured.to_string().contains("plaintext"));
        assert_eq!(
            out.structured["masked_keys"],
            json!(["cipassword", "hookscript_token"])
        );
    }

    #[test]
    fn validation_comes_first() {
        let mut pve = FakePve::default();
        for a in [
            "{}",
            r#"{"vmid": 99}"#,
            r#"{"vmid": 100, "node": "a b"}"#,
            r#"{"vmid": 100, "vm_type": "vm"}"#,
        ] {
            let e = TOOL.call(&mut pve, a).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{a}: {e:?}");
        }
        assert!(pve.requests.is_empty());
    }
}
