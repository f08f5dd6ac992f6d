//! `pve_list_disks`: a node's physical disks (`GET /nodes/{node}/disks/
//! list`) with type, size, health and SSD wear, and on request one disk's
//! SMART attributes (`GET /nodes/{node}/disks/smart?disk=`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Pve;
use crate::arg::{NodeName, deserialize_from_json, fixed_schema, string};
use crate::error::{ToolError, quoted};
use crate::fetch;
use crate::format;
use crate::json as pj;
use crate::path::ApiPath;
use crate::tool::{Answer, Tool, read_tool};

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_disks",
    title: "List a node's disks",
    description: "A node's physical disks with type, size, SMART health, SSD wear and use; with \
        smart, one disk's SMART attributes.",
    reads: ["/nodes/{node}/disks/list", "/nodes/{node}/disks/smart"],
    privileges: [
        "/nodes/{node}": "Sys.Audit",
        // SMART details: Proxmox checks / itself.
        "/": "Sys.Audit",
    ],
    run: run,
};

/// A device path: `/dev/` and letters, digits and `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevPath(pub String);

impl DevPath {
    fn from_json(v: &Value) -> Result<Self, String> {
        let s = string(v, 128)?;
        let ok = s.strip_prefix("/dev/").is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'/')
                && !rest.contains("//")
        });
        if !ok {
            return Err(format!(
                "{} is not a device path; use one pve_list_disks lists, e.g. \"/dev/sda\" or \
                 \"/dev/nvme0n1\"",
                quoted(s, 64)
            ));
        }
        Ok(DevPath(s.to_owned()))
    }
}
deserialize_from_json!(DevPath);
fixed_schema!(DevPath, serde_json::json!({"type": "string"}));

/// Which node, and which disk's SMART data.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Node to ask
    node: NodeName,
    /// Also this disk's SMART attributes, e.g. /dev/sda
    smart: Option<DevPath>,
}

/// A node's disks.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct DiskList {
    /// Node asked
    pub node: String,
    /// Disks by device path
    pub disks: Vec<Disk>,
    /// The SMART data asked for; null unless smart was given
    pub smart: Option<Smart>,
}

/// One disk.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Disk {
    /// Device path, e.g. /dev/sda
    pub devpath: String,
    /// hdd, ssd, nvme, usb, ...
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Size, bytes
    pub size: Option<u64>,
    /// Size in binary units
    pub size_human: Option<String>,
    /// Model
    pub model: Option<String>,
    /// Serial number
    pub serial: Option<String>,
    /// SMART health: PASSED, FAILED!, UNKNOWN
    pub health: Option<String>,
    /// SSD life left, percent; null for disks without wear data
    pub wearout: Option<u64>,
    /// What uses it: LVM, ZFS, a partition table, a mount, a Ceph OSD...
    pub used: Option<String>,
}

/// One disk's SMART data.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Smart {
    /// Device path
    pub disk: String,
    /// PASSED, FAILED, UNKNOWN
    pub health: Option<String>,
    /// ATA attributes; empty for a text report (NVMe)
    pub attributes: Vec<Attribute>,
    /// The text report (NVMe, SAS); null for ATA attributes
    pub text: Option<String>,
}

/// One ATA SMART attribute.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Attribute {
    /// Attribute id
    pub id: Option<String>,
    /// Name, e.g. Reallocated_Sector_Ct
    pub name: Option<String>,
    /// Normalised value
    pub value: Option<String>,
    /// Worst value seen
    pub worst: Option<String>,
    /// Failure threshold
    pub threshold: Option<String>,
    /// Raw value
    pub raw: Option<String>,
    /// When it failed, if it did (e.g. FAILING_NOW); null otherwise
    pub fail: Option<String>,
}

fn disk(e: &Value) -> Option<Disk> {
    let size = pj::uint(e.get("size"));
    Some(Disk {
        devpath: pj::text(e.get("devpath"))?,
        kind: pj::text(e.get("type")),
        size,
        size_human: size.map(format::bytes),
        model: pj::text(e.get("model")),
        serial: pj::text(e.get("serial")),
        health: pj::text(e.get("health")),
        // Proxmox writes "N/A" where a disk has no wear data.
        wearout: pj::uint(e.get("wearout")),
        used: pj::text(e.get("used")),
    })
}

fn attribute(e: &Value) -> Attribute {
    let fail = pj::text(e.get("fail")).filter(|f| f != "-");
    Attribute {
        id: pj::text(e.get("id")),
        name: pj::text(e.get("name")),
        value: pj::text(e.get("value")),
        worst: pj::text(e.get("worst")),
        threshold: pj::text(e.get("threshold")),
        raw: pj::text(e.get("raw")),
        fail,
    }
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<DiskList>, ToolError> {
    let node = input.node.as_str();
    let base = ApiPath::new("nodes").seg(node).lit("disks");
    let mut disks: Vec<Disk> = fetch::list(pve, &base.clone().lit("list"))?
        .iter()
        .filter_map(disk)
        .collect();
    disks.sort_by(|a, b| a.devpath.cmp(&b.devpath));
    let smart = match &input.smart {
        None => None,
        Some(dev) => {
            let data = fetch::object(pve, &base.lit("smart").query("disk", &dev.0))?;
            Some(Smart {
                disk: dev.0.clone(),
                health: pj::text(data.get("health")),
                attributes: data
                    .get("attributes")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(attribute).collect())
                    .unwrap_or_default(),
                text: pj::text(data.get("text")),
            })
        }
    };
    let failing: Vec<&str> = disks
        .iter()
        // smartctl says "FAILED!".
        .filter(|d| d.health.as_deref().is_some_and(|h| h.starts_with("FAILED")))
        .map(|d| d.devpath.as_str())
        .collect();
    let worn: Vec<String> = disks
        .iter()
        .filter_map(|d| d.wearout.filter(|w| *w <= 20).map(|w| format!("{} ({w}% left)", d.devpath)))
        .collect();
    let mut summary = format!(
        "{} on {node}.",
        format::count(disks.len(), "disk", "disks")
    );
    if !failing.is_empty() {
        summary.push_str(&format!(" SMART health FAILED: {}.", failing.join(", ")));
    }
    if !worn.is_empty() {
        summary.push_str(&format!(" Worn out: {}.", worn.join(", ")));
    }
    if let Some(s) = &smart {
        summary.push_str(&format!(
            " {}: SMART {}.",
            s.disk,
            s.health.as_deref().unwrap_or("health unknown")
        ));
    }
    Ok(Answer {
        summary,
        structured: DiskList {
            node: node.to_owned(),
            disks,
            smart,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    #[test]
    fn failing_and_worn_disks_are_named_and_smart_read_on_request() {
        let mut pve = FakePve::default()
            .with(
                "/nodes/pve1/disks/list",
                json!([
                    {"devpath": "/dev/sdb", "type": "hdd", "size": 4_000_787_030_016u64,
                     "health": "FAILED!", "wearout": "N/A", "used": "ZFS"},
                    {"devpath": "/dev/sda", "type": "ssd", "size": 480_103_981_056u64,
                     "health": "PASSED", "wearout": 12, "used": "LVM"},
                ]),
            )
            .with(
                "/nodes/pve1/disks/smart?disk=%2Fdev%2Fsdb",
                json!({"health": "FAILED", "type": "ata", "attributes": [
                    {"id": "  5", "name": "Reallocated_Sector_Ct", "value": "001", "worst": "001",
                     "threshold": "010", "raw": "4096", "fail": "FAILING_NOW"}]}),
            );
        let out = TOOL
            .call(&mut pve, r#"{"node": "pve1", "smart": "/dev/sdb"}"#)
            .unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["disks"][0]["devpath"], "/dev/sda");
        assert_eq!(s["disks"][1]["wearout"], serde_json::Value::Null);
        assert_eq!(s["smart"]["attributes"][0]["fail"], "FAILING_NOW");
        assert!(out.summary.contains("SMART health FAILED: /dev/sdb"), "{}", out.summary);
        assert!(out.summary.contains("/dev/sda (12% left)"), "{}", out.summary);
    }

    #[test]
    fn a_device_path_is_checked_before_any_request() {
        let mut pve = FakePve::default();
        let e = TOOL
            .call(&mut pve, r#"{"node": "pve1", "smart": "/etc/shadow/../x"}"#)
            .unwrap_err();
        assert!(e.message().starts_with("smart: "), "{e}");
        assert!(pve.requests.is_empty());
    }
}
