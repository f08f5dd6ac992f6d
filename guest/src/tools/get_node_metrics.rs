//! `pve_get_node_metrics`: one node's live status from
//! `GET /nodes/{node}/status`, and, when a timeframe is given, its history
//! from `GET /nodes/{node}/rrddata` summarised per series.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json::ratio;
use crate::arg::time::{Consolidation, Timeframe};
use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{Flag, NodeName};
use crate::error::ToolError;
use crate::fetch;
use crate::format;
use crate::json::{self as pj, Tidy};
use crate::path::ApiPath;

/// Most raw points returned with `raw: true` (the newest ones).
pub const RAW_MAX: usize = 100;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_node_metrics",
    title: "Get node metrics",
    description: "One node's CPU, load, memory, swap, disk, uptime and versions now; with \
        timeframe also its history, summarised per series.",
    reads: ["/nodes/{node}/status", "/nodes/{node}/rrddata"],
    privileges: [
        "/nodes/{node}": "Sys.Audit",
    ],
    run: run,
};

/// The node, and what history to add.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Node name (pve_list_nodes)
    node: NodeName,
    /// Also the history over this period
    timeframe: Option<Timeframe>,
    /// AVERAGE (default) or MAX
    cf: Option<Consolidation>,
    /// Also the newest points
    #[serde(default)]
    #[cfg_attr(test, schemars(extend("default" = false)))]
    raw: Flag,
}

/// One node's live status, and its history when asked for.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct NodeMetrics {
    /// Node name
    pub node: String,
    /// Seconds since boot; null if unknown
    pub uptime: Option<u64>,
    /// CPU use as a fraction of all CPUs (0.25 = 25%); null if unknown
    pub cpu: Option<Tidy>,
    /// IO wait fraction; null if unknown
    pub iowait: Option<Tidy>,
    /// 1, 5 and 15 minute load averages (Proxmox sends strings; converted)
    pub loadavg: Vec<Tidy>,
    /// RAM.
    pub memory: UsageAvailable,
    /// Swap.
    pub swap: Usage,
    /// Root filesystem.
    pub rootfs: UsageAvailable,
    /// CPU hardware.
    pub cpuinfo: CpuInfo,
    /// Running kernel; null if unknown
    pub kversion: Option<String>,
    /// pve-manager/<version>/<repoid>; null if unknown
    // Verbatim in the schema's description, which is plain text.
    #[allow(rustdoc::invalid_html_tags)]
    pub pveversion: Option<String>,
    /// efi or legacy-bios (PVE 8+); null if not reported
    pub boot_mode: Option<String>,
    /// Secure boot on (PVE 8+); null if not reported
    pub secureboot: Option<bool>,
    /// History over timeframe; null if no timeframe was given
    pub rrd: Option<Rrd>,
}

/// Space or memory use.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Usage {
    /// Total, bytes; null if unknown
    pub total: Option<u64>,
    /// Used, bytes; null if unknown
    pub used: Option<u64>,
    /// Free, bytes; null if unknown
    pub free: Option<u64>,
    /// used / total (0..1); null if unknown
    pub used_fraction: Option<f64>,
}

/// Space or memory use, with what is available to new users.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct UsageAvailable {
    /// The use.
    #[serde(flatten)]
    pub usage: Usage,
    /// Available to new processes (PVE 9: memory; rootfs: avail), bytes; null if not reported
    pub available: Option<u64>,
}

/// CPU hardware.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CpuInfo {
    /// CPU model; null if unknown
    pub model: Option<String>,
    /// Sockets; null if unknown
    pub sockets: Option<u64>,
    /// Cores per socket; null if unknown
    pub cores: Option<u64>,
    /// Logical CPUs; null if unknown
    pub cpus: Option<u64>,
    /// Clock, MHz; null if unknown
    pub mhz: Option<Tidy>,
}

/// A node's RRD history, summarised per data source.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Rrd {
    /// The timeframe asked for
    pub timeframe: Timeframe,
    /// The consolidation function used
    pub cf: Consolidation,
    /// Number of RRD points returned by Proxmox
    pub points: usize,
    /// Time of the first point, ISO-8601 UTC; null if none
    pub from: Option<String>,
    /// Time of the last point, ISO-8601 UTC; null if none
    pub to: Option<String>,
    /// Per data source, by name; points without a value for a source are skipped, not counted
    /// as 0
    pub series: Vec<RrdSeries>,
    /// The newest points (at most 100) as time + values, when raw was true; else null
    pub raw: Option<Vec<BTreeMap<String, Tidy>>>,
    /// Older points left out of raw
    pub raw_omitted: usize,
}

/// One RRD series.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RrdSeries {
    /// Data source, e.g. cpu, loadavg, memused, netin
    pub name: String,
    /// Points that had a value
    #[cfg_attr(test, schemars(range(min = 1)))]
    pub points: usize,
    /// Smallest value
    pub min: Tidy,
    /// Mean of the values
    pub avg: Tidy,
    /// Largest value
    pub max: Tidy,
    /// Newest value
    pub last: Tidy,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeMetrics>, ToolError> {
    let node = input.node.as_str();
    let (timeframe, cf, raw) = (input.timeframe, input.cf, input.raw.0);
    if timeframe.is_none() && (cf.is_some() || raw) {
        return Err(ToolError::field(
            if cf.is_some() { "cf" } else { "raw" },
            "needs timeframe; pass e.g. {\"timeframe\": \"hour\"} as well",
        ));
    }
    let status = fetch::object(pve, &ApiPath::new("nodes").seg(node).lit("status"))?;
    let rrd = match timeframe {
        Some(tf) => {
            let mut path = ApiPath::new("nodes")
                .seg(node)
                .lit("rrddata")
                .query("timeframe", tf.as_str());
            if let Some(cf) = cf {
                path = path.query("cf", cf.as_str());
            }
            let points = fetch::list(pve, &path)?;
            Some(summarise(
                &points,
                tf,
                cf.unwrap_or(Consolidation::Average),
                raw,
            ))
        }
        None => None,
    };
    Ok(shape(node, &status, rrd))
}

fn usage(o: Option<&Value>) -> Usage {
    let get = |k: &str| o.and_then(|o| pj::uint(o.get(k)));
    let (total, used) = (get("total"), get("used"));
    Usage {
        total,
        used,
        free: get("free"),
        used_fraction: ratio(used, total),
    }
}

fn usage_available(o: Option<&Value>, available_key: &str) -> UsageAvailable {
    UsageAvailable {
        usage: usage(o),
        available: o.and_then(|o| pj::uint(o.get(available_key))),
    }
}

/// Shapes a `status` answer plus the optional RRD summary.
pub fn shape(node: &str, d: &Map<String, Value>, rrd: Option<Rrd>) -> Answer<NodeMetrics> {
    let loadavg: Vec<Tidy> = d
        .get("loadavg")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| pj::num(Some(v)))
                .map(Tidy)
                .collect()
        })
        .unwrap_or_default();
    let cpuinfo = d.get("cpuinfo").and_then(Value::as_object);
    let ci = |k: &str| cpuinfo.and_then(|c| c.get(k));
    let boot = d.get("boot-info").and_then(Value::as_object);
    let s = NodeMetrics {
        node: node.to_owned(),
        uptime: pj::uint(d.get("uptime")),
        cpu: pj::fraction(d.get("cpu")).map(Tidy),
        iowait: pj::fraction(d.get("wait")).map(Tidy),
        loadavg,
        memory: usage_available(d.get("memory"), "available"),
        swap: usage(d.get("swap")),
        rootfs: usage_available(d.get("rootfs"), "avail"),
        cpuinfo: CpuInfo {
            model: pj::text(ci("model")),
            sockets: pj::uint(ci("sockets")),
            cores: pj::uint(ci("cores")),
            cpus: pj::uint(ci("cpus")),
            mhz: pj::num(ci("mhz")).map(Tidy),
        },
        kversion: pj::text(d.get("kversion")),
        pveversion: pj::text(d.get("pveversion")),
        boot_mode: boot.and_then(|b| pj::text(b.get("mode"))),
        secureboot: boot
            .and_then(|b| b.get("secureboot"))
            .map(|v| pj::flag(Some(v))),
        rrd,
    };
    let mut parts = Vec::new();
    if let Some(c) = s.cpu {
        let cpus = s
            .cpuinfo
            .cpus
            .map(|n| format!(" of {n} CPUs"))
            .unwrap_or_default();
        parts.push(format!("CPU {}{cpus}", format::percent(c.0)));
    }
    if let Some(l) = s.loadavg.first() {
        parts.push(format!("load {}", format::one_decimal(l.0)));
    }
    if let (Some(u), Some(t)) = (s.memory.usage.used, s.memory.usage.total) {
        parts.push(format!("mem {} / {}", format::bytes(u), format::bytes(t)));
    }
    if let (Some(u), Some(t)) = (s.rootfs.usage.used, s.rootfs.usage.total) {
        parts.push(format!(
            "rootfs {} / {}",
            format::bytes(u),
            format::bytes(t)
        ));
    }
    if let Some(up) = s.uptime {
        parts.push(format!("up {}", format::duration(up)));
    }
    let mut summary = format!("Node {node}: {}.", parts.join(", "));
    if let Some(r) = &s.rrd {
        let tf = r.timeframe.as_str();
        match r.series.iter().find(|x| x.name == "cpu") {
            Some(cpu) => summary.push_str(&format!(
                " Past {tf}: CPU avg {}, max {} ({} points).",
                format::percent(cpu.avg.0),
                format::percent(cpu.max.0),
                cpu.points
            )),
            None => summary.push_str(&format!(
                " Past {tf}: {} RRD points, no CPU data.",
                r.points
            )),
        }
    }
    Answer {
        structured: s,
        summary,
    }
}

/// Summarises RRD points: per data source min/avg/max/last over the points
/// that have it (missing keys are skipped, not zero).
pub fn summarise(points: &[Value], timeframe: Timeframe, cf: Consolidation, raw: bool) -> Rrd {
    let mut points: Vec<&Map<String, Value>> = points.iter().filter_map(Value::as_object).collect();
    points.sort_by_key(|p| pj::uint(p.get("time")).unwrap_or(0));
    let mut acc: BTreeMap<&str, (usize, f64, f64, f64, f64)> = BTreeMap::new();
    for p in &points {
        for (k, v) in p.iter() {
            if k == "time" {
                continue;
            }
            let Some(x) = pj::num(Some(v)) else { continue };
            let e =
                acc.entry(k.as_str())
                    .or_insert((0, f64::INFINITY, 0.0, f64::NEG_INFINITY, 0.0));
            e.0 += 1;
            e.1 = e.1.min(x);
            e.2 += x;
            e.3 = e.3.max(x);
            e.4 = x;
        }
    }
    let round = |x: f64| Tidy((x * 10_000.0).round() / 10_000.0);
    let series: Vec<RrdSeries> = acc
        .iter()
        .map(|(name, (n, min, sum, max, last))| RrdSeries {
            name: (*name).to_owned(),
            points: *n,
            min: round(*min),
            avg: round(sum / *n as f64),
            max: round(*max),
            last: round(*last),
        })
        .collect();
    let time = |p: Option<&&Map<String, Value>>| {
        p.and_then(|p| pj::num(p.get("time")))
            .map(|t| format::iso_utc(t as i64))
    };
    let skip = points.len().saturating_sub(RAW_MAX);
    let raw_points: Option<Vec<BTreeMap<String, Tidy>>> = raw.then(|| {
        points[skip..]
            .iter()
            .map(|p| {
                p.iter()
                    .filter_map(|(k, v)| pj::num(Some(v)).map(|x| (k.clone(), Tidy(x))))
                    .collect()
            })
            .collect()
    });
    Rrd {
        timeframe,
        cf,
        points: points.len(),
        from: time(points.first()),
        to: time(points.last()),
        series,
        raw: raw_points,
        raw_omitted: if raw { skip } else { 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use serde_json::json;

    /// The real PVE 7.4 capture (go-proxmox pve7x), flags cut, plus PVE 8
    /// boot-info.
    fn status() -> Value {
        json!({"idle":0,"cpu":0.00260552371026576,"ksm":{"shared":0},"swap":{"total":0,"free":0,"used":0},
            "pveversion":"pve-manager/7.4-16/0f39f621","wait":0,"uptime":2501631,
            "kversion":"Linux 5.15.108-1-pve #1 SMP PVE 5.15.108-2 (2023-07-20T10:06Z)",
            "cpuinfo":{"mhz":"3400.000","model":"Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz","sockets":1,"flags":"fpu vme","hvm":"1","cores":4,"user_hz":100,"cpus":8},
            "loadavg":["0.50","0.25","0.00"],"memory":{"total":65919459328u64,"free":57824059392u64,"used":8095399936u64},
            "rootfs":{"total":948338819072u64,"free":937851224064u64,"used":10487595008u64,"avail":937851224064u64},
            "boot-info":{"mode":"efi","secureboot":0}})
    }

    fn rrd() -> Value {
        json!([
            {"time":1700000060,"cpu":0.5,"loadavg":1.0,"memused":100,"netin":10},
            {"time":1700000000,"cpu":0.1,"loadavg":"0.5","memused":50},
            {"time":1700000120,"memused":70,"maxcpu":8}
        ])
    }

    #[test]
    fn current_status_only() {
        let mut pve = FakePve::default().with("/nodes/pve1/status", status());
        let out = TOOL.call(&mut pve, r#"{"node": "pve1"}"#).unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        assert_eq!(pve.requests, ["/nodes/pve1/status"]);
        let s = &out.structured;
        assert_eq!(s["loadavg"], json!([0.5, 0.25, 0]));
        assert_eq!(s["cpu"], 0.0026);
        assert_eq!(s["memory"]["used"], 8095399936u64);
        assert_eq!(s["memory"]["available"], Value::Null);
        assert_eq!(s["memory"]["used_fraction"], 0.1228);
        assert_eq!(s["swap"]["used_fraction"], Value::Null);
        assert_eq!(s["rootfs"]["available"], 937851224064u64);
        assert_eq!(s["cpuinfo"]["mhz"], 3400);
        assert_eq!(s["cpuinfo"]["cpus"], 8);
        assert_eq!(s["boot_mode"], "efi");
        assert_eq!(s["secureboot"], false);
        assert_eq!(s["rrd"], Value::Null);
        assert_eq!(
            out.summary,
            "Node pve1: CPU 0.3% of 8 CPUs, load 0.5, mem 7.5 GiB / 61.4 GiB, rootfs 9.8 GiB / 883.2 GiB, up 28d 22h."
        );
    }

    #[test]
    fn rrd_is_summarised_skipping_missing_keys() {
        let mut pve = FakePve::default()
            .with("/nodes/pve1/status", json!({}))
            .with("/nodes/pve1/rrddata?timeframe=day&cf=MAX", rrd());
        let out = TOOL
            .call(
                &mut pve,
                r#"{"node": "pve1", "timeframe": "day", "cf": "MAX"}"#,
            )
            .unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        let r = &out.structured["rrd"];
        assert_eq!(r["points"], 3);
        assert_eq!(r["cf"], "MAX");
        assert_eq!(r["from"], "2023-11-14T22:13:20Z");
        assert_eq!(r["raw"], Value::Null);
        let cpu = r["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "cpu")
            .unwrap();
        assert_eq!(
            *cpu,
            json!({"name":"cpu","points":2,"min":0.1,"avg":0.3,"max":0.5,"last":0.5})
        );
        let mem = r["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "memused")
            .unwrap();
        assert_eq!(mem["last"], 70);
        assert_eq!(mem["points"], 3);
        assert!(
            out.summary
                .contains("Past day: CPU avg 30%, max 50% (2 points)."),
            "{}",
            out.summary
        );
    }

    #[test]
    fn raw_points_are_bounded() {
        let many: Vec<Value> = (0..150)
            .map(|i| json!({"time": 1700000000 + i * 60, "cpu": 0.1}))
            .collect();
        let mut pve = FakePve::default()
            .with("/nodes/pve1/status", status())
            .with("/nodes/pve1/rrddata?timeframe=hour", Value::Array(many));
        let out = TOOL
            .call(
                &mut pve,
                r#"{"node": "pve1", "timeframe": "hour", "raw": true}"#,
            )
            .unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        let r = &out.structured["rrd"];
        assert_eq!(r["raw"].as_array().unwrap().len(), RAW_MAX);
        assert_eq!(r["raw_omitted"], 50);
        assert_eq!(r["raw"][99]["time"], 1700000000 + 149 * 60);
    }

    #[test]
    fn arguments_are_validated_first() {
        let mut pve = FakePve::default();
        for (a, start) in [
            ("{}", "node: missing required argument"),
            (
                r#"{"node": "a b"}"#,
                "node: \"a b\" is not a valid node name",
            ),
            (
                r#"{"node": "pve1", "timeframe": "decade2"}"#,
                "timeframe: must be one of",
            ),
            (
                r#"{"node": "pve1", "cf": "MIN", "timeframe": "hour"}"#,
                "cf: must be \"AVERAGE\" or \"MAX\"",
            ),
            (r#"{"node": "pve1", "cf": "MAX"}"#, "cf: needs timeframe"),
            (r#"{"node": "pve1", "raw": true}"#, "raw: needs timeframe"),
            (
                r#"{"node": "pve1", "timeframe": "hour", "raw": 1}"#,
                "raw: must be true or false",
            ),
        ] {
            let e = TOOL.call(&mut pve, a).unwrap_err();
            assert!(e.message().starts_with(start), "{a}: {e}");
        }
        assert!(pve.requests.is_empty());
    }
}
