//! Guests as `/cluster/resources?type=vm` reports them.
//!
//! One request lists every VM and container the token may see, on every
//! node, with live figures from the RRD cache. Guests on an offline node
//! still appear, but with only `id, vmid, node, status, type, name, ...`,
//! so every figure here is optional.

use serde_json::Value;

use crate::api::Pve;
use crate::arg::VmType;
use crate::error::ToolError;
use crate::json;
use crate::path::ApiPath;

/// The request every guest lookup uses.
pub fn guests_path() -> ApiPath {
    ApiPath::new("cluster").lit("resources").query("type", "vm")
}

/// One guest entry, normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct Guest {
    /// The VM/CT id.
    pub vmid: u64,
    /// The guest's name, when it has one.
    pub name: Option<String>,
    /// `qemu` or `lxc`.
    pub vm_type: VmType,
    /// The node it is assigned to.
    pub node: String,
    /// The RRD status: `running`, `stopped`, `paused` (a paused VM's QMP
    /// status), `unknown` without RRD data, ...
    pub status: String,
    /// Whether the guest is a template.
    pub template: bool,
    /// CPU use as a fraction of `maxcpu`.
    pub cpu: Option<f64>,
    /// CPUs allotted (may be fractional for a CPU-limited container).
    pub maxcpu: Option<f64>,
    /// Memory in use, bytes.
    pub mem: Option<u64>,
    /// Memory allotted, bytes.
    pub maxmem: Option<u64>,
    /// Seconds since start.
    pub uptime: Option<u64>,
    /// Tags, split.
    pub tags: Vec<String>,
    /// The config lock (`backup`, `migrate`, ...), if any.
    pub lock: Option<String>,
    /// The HA state (`started`, `stopped`, ...) for HA-managed guests.
    pub hastate: Option<String>,
    /// The resource pool it belongs to, if any.
    pub pool: Option<String>,
}

impl Guest {
    /// Reads one entry; `None` for entries that are not a QEMU VM or LXC
    /// container or have no usable vmid.
    pub fn from_entry(entry: &Value) -> Option<Guest> {
        let vm_type = VmType::parse(entry.get("type")?.as_str()?)?;
        let vmid = json::uint(entry.get("vmid")).or_else(|| {
            // `id` is "qemu/100"; use it if `vmid` is missing or mangled.
            let id = entry.get("id")?.as_str()?;
            id.rsplit_once('/')?.1.parse().ok()
        })?;
        Some(Guest {
            vmid,
            name: json::text(entry.get("name")),
            vm_type,
            node: json::text(entry.get("node")).unwrap_or_default(),
            status: json::text(entry.get("status")).unwrap_or_else(|| "unknown".to_owned()),
            template: json::flag(entry.get("template")),
            cpu: json::fraction(entry.get("cpu")),
            maxcpu: json::num(entry.get("maxcpu")),
            mem: json::uint(entry.get("mem")),
            maxmem: json::uint(entry.get("maxmem")),
            uptime: json::uint(entry.get("uptime")),
            tags: json::tags(entry.get("tags")),
            lock: json::text(entry.get("lock")),
            hastate: json::text(entry.get("hastate")),
            pool: json::text(entry.get("pool")),
        })
    }
}

/// All guests in a `/cluster/resources` answer, in Proxmox's order.
pub fn parse_guests(data: &Value) -> Result<Vec<Guest>, ToolError> {
    let Value::Array(entries) = data else {
        return Err(ToolError::Upstream(format!(
            "Proxmox's /cluster/resources answer is not a list (got {}); this Proxmox version \
             may not be supported. [GET /api2/json{}]",
            kind(data),
            guests_path()
        )));
    };
    Ok(entries.iter().filter_map(Guest::from_entry).collect())
}

/// Fetches and parses every guest the token can see.
pub fn fetch_guests(pve: &mut dyn Pve) -> Result<Vec<Guest>, ToolError> {
    parse_guests(&pve.get(&guests_path())?)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
pub mod fixtures {
    //! `/cluster/resources?type=vm` data in Proxmox's exact shape.
    use serde_json::Value;

    /// The real go-proxmox PVE 8 capture's guest, plus guests covering
    /// containers, templates, pauses, locks, HA, tags, string vmids and an
    /// offline node. Order is Proxmox's: by vmid *as a string*.
    pub fn cluster_vms() -> Value {
        serde_json::from_str(
            r#"[
            {"netout":545248946,"type":"qemu","name":"server1","maxcpu":1,"mem":842551296,"netin":2456116121,
             "maxmem":1073741824,"disk":0,"node":"node2","cpu":0.0249060195469461,"maxdisk":34359738368,"vmid":100,
             "diskwrite":6059209728,"diskread":4510777856,"status":"running","template":0,"id":"qemu/100","uptime":874350},
            {"id":"qemu/1000","vmid":1000,"type":"qemu","node":"node1","status":"stopped","name":"big-one","template":0,
             "maxcpu":8,"cpu":0,"mem":0,"maxmem":17179869184,"uptime":0,"disk":0,"maxdisk":0,"netin":0,"netout":0,
             "diskread":0,"diskwrite":0,"tags":"prod;db"},
            {"id":"lxc/101","vmid":101,"type":"lxc","node":"node1","status":"running","name":"ct-web","template":0,
             "maxcpu":2,"cpu":0.015,"mem":104857600,"maxmem":536870912,"uptime":3600,"disk":1073741824,
             "maxdisk":8589934592,"netin":1,"netout":2,"diskread":0,"diskwrite":0,"tags":"web,Prod","hastate":"started"},
            {"id":"qemu/102","vmid":102,"type":"qemu","node":"node1","status":"paused","name":"paused-vm","template":0,
             "maxcpu":4,"cpu":0,"mem":2147483648,"maxmem":4294967296,"uptime":500,"lock":"backup","tags":"prod"},
            {"id":"lxc/103","vmid":"103","type":"lxc","node":"node3","status":"unknown","name":"offline-ct"},
            {"id":"lxc/104","vmid":104,"type":"lxc","node":"node1","status":"stopped","name":"ct-db","template":0,
             "maxcpu":0.5,"cpu":0,"mem":0,"maxmem":268435456,"uptime":0,"tags":"db prod"},
            {"id":"qemu/9000","vmid":9000,"type":"qemu","node":"node2","status":"stopped","name":"tmpl-debian","template":1,
             "maxcpu":2,"cpu":0,"mem":0,"maxmem":2147483648,"uptime":0}
            ]"#,
        )
        .expect("fixture is JSON")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_guest_shape() {
        let guests = parse_guests(&fixtures::cluster_vms()).unwrap();
        assert_eq!(guests.len(), 7);
        let g = &guests[0];
        assert_eq!(g.vmid, 100);
        assert_eq!(g.vm_type, VmType::Qemu);
        assert_eq!(g.name.as_deref(), Some("server1"));
        assert_eq!(g.node, "node2");
        assert_eq!(g.cpu, Some(0.0249));
        assert_eq!(g.maxcpu, Some(1.0));
        assert!(!g.template);
        assert!(g.tags.is_empty());
        let offline = guests.iter().find(|g| g.vmid == 103).unwrap();
        assert_eq!(offline.status, "unknown");
        assert_eq!(
            (offline.cpu, offline.mem, offline.maxmem, offline.uptime),
            (None, None, None, None)
        );
        let ct = guests.iter().find(|g| g.vmid == 101).unwrap();
        assert_eq!(ct.tags, ["web", "Prod"]);
        assert_eq!(ct.hastate.as_deref(), Some("started"));
        assert!(guests.iter().find(|g| g.vmid == 9000).unwrap().template);
    }

    #[test]
    fn skips_non_guests_and_recovers_vmid_from_id() {
        let data = json!([
            {"id":"node/pve1","type":"node","node":"pve1","status":"online"},
            {"id":"storage/pve1/local","type":"storage","storage":"local"},
            {"id":"qemu/555","type":"qemu","node":"pve1","status":"running"},
            {"type":"qemu","node":"pve1"},
            "garbage"
        ]);
        let guests = parse_guests(&data).unwrap();
        assert_eq!(guests.len(), 1);
        assert_eq!(guests[0].vmid, 555);
        assert_eq!(guests[0].name, None);
    }

    #[test]
    fn non_list_is_an_upstream_error() {
        let e = parse_guests(&json!({"oops": 1})).unwrap_err();
        assert!(matches!(e, ToolError::Upstream(_)));
        assert!(e.message().contains("not a list (got an object)"), "{e}");
    }
}
