//! `pve_get_vm_metrics`: a guest's RRD history from
//! `/nodes/{node}/{qemu|lxc}/{vmid}/rrddata`, summarised per data source.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::arg::time::{Consolidation, Timeframe};
use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{Flag, VmType};
use crate::error::ToolError;
use crate::format;
use crate::json::{self as pj, Tidy};
use crate::path::ApiPath;
use crate::resolve::{Resolved, Target, guest_input};

/// Most raw points returned.
pub const RAW_MAX: usize = 100;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_vm_metrics",
    title: "Get VM/container metrics history",
    description: "A guest's CPU, memory, disk and network history, summarised per metric (min, \
        avg, max, last). For now use pve_get_vm_status.",
    reads: ["/nodes/{node}/{vm_type}/{vmid}/rrddata", "/cluster/resources?type=vm"],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
    ],
    run: run,
};

guest_input! {
    /// The guest, and which history of it.
    pub struct Input {
        /// Period ending now
        #[cfg_attr(test, schemars(extend("default" = "hour")))]
        pub timeframe: Option<Timeframe>,
        /// AVERAGE (default) or MAX
        #[cfg_attr(test, schemars(extend("default" = "AVERAGE")))]
        pub cf: Option<Consolidation>,
        /// Also the points (≤100)
        #[serde(default)]
        #[cfg_attr(test, schemars(extend("default" = false)))]
        pub raw: Flag,
    }
}

/// A guest's RRD history, summarised per data source.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct VmMetrics {
    /// VM/CT id
    pub vmid: u32,
    /// Node the guest is on
    pub node: String,
    /// "qemu" or "lxc"
    pub vm_type: VmType,
    /// The timeframe
    pub timeframe: Timeframe,
    /// The consolidation function
    pub cf: Consolidation,
    /// Data points Proxmox returned
    pub points: usize,
    /// Time of the oldest point, epoch seconds; null if none
    pub first_time: Option<u64>,
    /// Time of the oldest point, ISO-8601 UTC; null if none
    pub first_time_iso: Option<String>,
    /// Time of the newest point, epoch seconds; null if none
    pub last_time: Option<u64>,
    /// Time of the newest point, ISO-8601 UTC; null if none
    pub last_time_iso: Option<String>,
    /// One entry per data source present; sources absent from every point (e.g. cpu of a
    /// stopped VM) are left out, not zero
    pub series: Vec<Series>,
    /// With raw: the points ({time, <source>: value}, as Proxmox sends them), oldest first;
    /// null without raw
    pub raw_points: Option<Vec<BTreeMap<String, Tidy>>>,
    /// With raw: true if points were dropped evenly to keep at most 100; null without raw
    pub raw_downsampled: Option<bool>,
    /// Which of node and vm_type pve-mcp looked up because the call omitted them.
    pub resolved: Resolved,
}

/// Statistics of one data source over the points that have it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Series {
    /// Data source: cpu, mem, mem_fraction, maxmem, maxcpu, disk, maxdisk, netin, netout,
    /// diskread, diskwrite, or others Proxmox adds (memhost, pressure*)
    pub name: String,
    /// percent (cpu), fraction, bytes, bytes/s, cpus or raw
    pub unit: &'static str,
    /// Smallest value
    pub min: Tidy,
    /// Mean value
    pub avg: Tidy,
    /// Largest value
    pub max: Tidy,
    /// Value of the newest point that has it
    pub last: Tidy,
    /// Points that have this data source
    pub points: u64,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<VmMetrics>, ToolError> {
    let timeframe = input.timeframe.unwrap_or(Timeframe::Hour);
    let cf = input.cf.unwrap_or(Consolidation::Average);
    let raw = input.raw.0;
    let target = input.wanted().resolve(pve)?;
    let path = ApiPath::new("nodes")
        .seg(&target.node)
        .lit(target.vm_type.as_str())
        .id(target.vmid)
        .lit("rrddata")
        .query("timeframe", timeframe.as_str())
        .query("cf", cf.as_str());
    let data = pve.get(&path)?;
    Ok(shape(&target, timeframe, cf, raw, &data))
}

fn unit(name: &str) -> &'static str {
    match name {
        "cpu" => "percent",
        "mem_fraction" => "fraction",
        "maxcpu" => "cpus",
        "mem" | "maxmem" | "disk" | "maxdisk" | "memhost" | "swap" | "maxswap" => "bytes",
        "netin" | "netout" | "diskread" | "diskwrite" => "bytes/s",
        _ => "raw",
    }
}

#[derive(Default)]
struct Stats {
    min: f64,
    max: f64,
    sum: f64,
    last: f64,
    n: u64,
}

impl Stats {
    fn add(&mut self, v: f64) {
        if self.n == 0 {
            self.min = v;
            self.max = v;
        }
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v;
        self.last = v;
        self.n += 1;
    }
}

fn round(v: f64) -> Tidy {
    let r = if v.abs() >= 100.0 {
        v.round()
    } else {
        (v * 10_000.0).round() / 10_000.0
    };
    Tidy(r)
}

/// Summarises an rrddata answer.
pub fn shape(
    target: &Target,
    timeframe: Timeframe,
    cf: Consolidation,
    raw: bool,
    data: &Value,
) -> Answer<VmMetrics> {
    let mut points: Vec<&Map<String, Value>> = data
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default();
    points.sort_by_key(|p| pj::uint(p.get("time")).unwrap_or(0));
    let mut stats: BTreeMap<String, Stats> = BTreeMap::new();
    for p in &points {
        for (k, v) in p.iter() {
            if k == "time" {
                continue;
            }
            let Some(mut x) = pj::num(Some(v)) else {
                continue;
            };
            if k == "cpu" {
                x *= 100.0;
            }
            stats.entry(k.clone()).or_default().add(x);
        }
        if let (Some(m), Some(max)) = (pj::num(p.get("mem")), pj::num(p.get("maxmem")))
            && max > 0.0
        {
            stats.entry("mem_fraction".into()).or_default().add(m / max);
        }
    }
    // Most useful first, then the rest alphabetically.
    const ORDER: [&str; 11] = [
        "cpu",
        "mem",
        "mem_fraction",
        "netin",
        "netout",
        "diskread",
        "diskwrite",
        "disk",
        "maxcpu",
        "maxmem",
        "maxdisk",
    ];
    let mut names: Vec<&String> = stats.keys().collect();
    names.sort_by_key(|n| {
        (
            ORDER.iter().position(|o| o == n).unwrap_or(ORDER.len()),
            n.as_str(),
        )
    });
    let series: Vec<Series> = names
        .iter()
        .map(|name| {
            let s = &stats[name.as_str()];
            Series {
                name: (*name).clone(),
                unit: unit(name),
                min: round(s.min),
                avg: round(s.sum / s.n as f64),
                max: round(s.max),
                last: round(s.last),
                points: s.n,
            }
        })
        .collect();
    let time = |p: Option<&&Map<String, Value>>| p.and_then(|p| pj::uint(p.get("time")));
    let (first, last) = (time(points.first()), time(points.last()));
    let (raw_points, downsampled) = if raw {
        let picked: Vec<&Map<String, Value>> = if points.len() > RAW_MAX {
            let n = points.len();
            (0..RAW_MAX)
                .map(|i| points[(i * (n - 1) + (RAW_MAX - 1) / 2) / (RAW_MAX - 1)])
                .collect()
        } else {
            points.clone()
        };
        let cleaned: Vec<BTreeMap<String, Tidy>> = picked
            .iter()
            .map(|p| {
                p.iter()
                    .filter_map(|(k, v)| pj::num(Some(v)).map(|x| (k.clone(), Tidy(x))))
                    .collect()
            })
            .collect();
        (Some(cleaned), Some(points.len() > RAW_MAX))
    } else {
        (None, None)
    };
    let summary = summary(
        target,
        timeframe.as_str(),
        cf.as_str(),
        points.len(),
        &stats,
        downsampled,
    );
    Answer {
        structured: VmMetrics {
            vmid: target.vmid,
            node: target.node.clone(),
            vm_type: target.vm_type,
            timeframe,
            cf,
            points: points.len(),
            first_time: first,
            first_time_iso: first.map(|t| crate::format::iso_utc(t as i64)),
            last_time: last,
            last_time_iso: last.map(|t| crate::format::iso_utc(t as i64)),
            series,
            raw_points,
            raw_downsampled: downsampled,
            resolved: target.resolved(),
        },
        summary,
    }
}

fn summary(
    target: &Target,
    timeframe: &str,
    cf: &str,
    n: usize,
    stats: &BTreeMap<String, Stats>,
    downsampled: Option<bool>,
) -> String {
    let avg = |k: &str| stats.get(k).map(|s| (s.sum / s.n as f64, s.max));
    let mut out = format!(
        "{} over the last {timeframe} ({n} points, {cf})",
        target.label()
    );
    let mut parts = Vec::new();
    if let Some((a, m)) = avg("cpu") {
        parts.push(format!(
            "CPU avg {}% max {}%",
            format::one_decimal(a),
            format::one_decimal(m)
        ));
    }
    if let Some((a, m)) = avg("mem_fraction") {
        parts.push(format!(
            "memory avg {} max {} of allotted",
            format::percent(a),
            format::percent(m)
        ));
    }
    for (k, label) in [("netin", "net in"), ("netout", "net out")] {
        if let Some((a, _)) = avg(k) {
            parts.push(format!(
                "{label} avg {}/s",
                format::bytes(a.max(0.0) as u64)
            ));
        }
    }
    if parts.is_empty() {
        out.push_str(if n == 0 {
            ": no data."
        } else {
            ": no usage data (the guest was probably stopped)."
        });
    } else {
        out.push_str(&format!(": {}.", parts.join(", ")));
    }
    if downsampled == Some(true) {
        out.push_str(&format!(" Raw points downsampled to {RAW_MAX}."));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::Output;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    fn running(n: u64) -> Value {
        Value::Array(
            (0..n)
                .map(|i| {
                    json!({"time": 1693110660 + i * 60, "maxcpu": 4, "cpu": 0.01 * (i % 5) as f64,
                        "maxmem": 2147483648u64, "mem": 1073741824u64 + i * 1024, "maxdisk": 68719476736u64, "disk": 0,
                        "netin": 1000.5, "netout": 200.0, "diskread": 0, "diskwrite": 4096.0})
                })
                .collect(),
        )
    }

    fn call(pve: &mut FakePve, args: Value) -> Result<Output, ToolError> {
        TOOL.call(pve, &args.to_string())
    }

    const HOUR: &str = "/nodes/pve1/qemu/101/rrddata?timeframe=hour&cf=AVERAGE";

    #[test]
    fn summarises_per_source() {
        let mut pve = FakePve::default().with(HOUR, running(60));
        let out = call(
            &mut pve,
            json!({"vmid": 101, "node": "pve1", "vm_type": "qemu"}),
        )
        .unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["points"], 60);
        assert_eq!(s["raw_points"], Value::Null);
        let cpu = &s["series"][0];
        assert_eq!(cpu["name"], "cpu");
        assert_eq!(cpu["unit"], "percent");
        assert_eq!(cpu["max"], 4);
        assert_eq!(cpu["min"], 0);
        assert_eq!(s["series"][2]["name"], "mem_fraction");
        assert_eq!(s["series"][2]["min"], 0.5);
        assert_eq!(s["first_time_iso"], "2023-08-27T04:31:00Z");
        assert!(
            out.summary
                .starts_with("VM 101 over the last hour (60 points, AVERAGE): CPU avg 2% max 4%"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn stopped_guest_skips_absent_sources() {
        let data = json!([{"maxdisk":68719476736u64,"disk":0,"time":1693110660,"maxcpu":4,"maxmem":16777216000u64},
                          {"maxdisk":68719476736u64,"disk":0,"time":1693110720,"maxcpu":4,"maxmem":16777216000u64}]);
        let mut pve =
            FakePve::default().with("/nodes/pve1/lxc/200/rrddata?timeframe=week&cf=MAX", data);
        let out = call(&mut pve, json!({"vmid": 200, "node": "pve1", "vm_type": "lxc", "timeframe": "week", "cf": "MAX", "raw": true})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        let names: Vec<&str> = s["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["disk", "maxcpu", "maxmem", "maxdisk"]);
        assert_eq!(s["raw_points"].as_array().unwrap().len(), 2);
        assert_eq!(s["raw_downsampled"], false);
        assert!(out.summary.contains("no usage data"), "{}", out.summary);
    }

    #[test]
    fn raw_points_are_downsampled() {
        let mut pve = FakePve::default().with(HOUR, running(250));
        let out = call(
            &mut pve,
            json!({"vmid": 101, "node": "pve1", "vm_type": "qemu", "raw": true}),
        )
        .unwrap();
        assert_valid_output(&TOOL, &out);
        let pts = out.structured["raw_points"].as_array().unwrap();
        assert_eq!(pts.len(), RAW_MAX);
        assert_eq!(pts[0]["time"], 1693110660);
        assert_eq!(pts[RAW_MAX - 1]["time"], 1693110660 + 249 * 60);
        assert_eq!(out.structured["raw_downsampled"], true);
        let empty = call(
            &mut FakePve::default().with(HOUR, json!([])),
            json!({"vmid": 101, "node": "pve1", "vm_type": "qemu"}),
        )
        .unwrap();
        assert_valid_output(&TOOL, &empty);
    }

    #[test]
    fn bad_arguments_make_no_request() {
        let mut pve = FakePve::default();
        for (args, needle) in [
            (
                json!({"vmid": 101, "timeframe": "minute"}),
                "timeframe: must be one of",
            ),
            (
                json!({"vmid": 101, "cf": "MIN"}),
                "cf: must be \"AVERAGE\" or \"MAX\"",
            ),
            (
                json!({"vmid": 101, "raw": "yes"}),
                "raw: must be true or false",
            ),
            (json!({"timeframe": "hour"}), "vmid: missing"),
        ] {
            let e = call(&mut pve, args.clone()).unwrap_err();
            assert!(e.message().contains(needle), "{args}: {e}");
        }
        assert!(pve.requests.is_empty());
    }
}
