//! `pve_get_node_metrics`: one node's live status from
//! `GET /nodes/{node}/status`, and, when a timeframe is given, its history
//! from `GET /nodes/{node}/rrddata` summarised per series.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::support::{Consolidation, Timeframe};
use super::{Answer, Output, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{Flag, NodeName};
use crate::error::ToolError;
use crate::fetch;
use crate::format;
use crate::json as pj;
use crate::path::ApiPath;
#[cfg(test)]
use crate::schema;

/// Most raw points returned with `raw: true` (the newest ones).
pub const RAW_MAX: usize = 100;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_node_metrics",
    title: "Get node metrics",
    description: "Get one node's current status: CPU use and IO wait, load average, memory, \
        swap and root-disk use, uptime, CPU model and counts, kernel and pve-manager versions, \
        boot mode. Pass timeframe (hour, day, week, month, year) to also get its history \
        summarised per series (min, avg, max, last, number of points), e.g. to answer \"was \
        this node overloaded today?\"; raw: true adds the newest points (at most 100). Use \
        pve_list_nodes for an overview of all nodes. Needs Sys.Audit on /nodes/{node}.",
    run: run,
    legacy_output_schema: output_schema,
};

/// The node, and what history to add.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Node name, e.g. "pve1" (pve_list_nodes lists them).
    node: NodeName,
    /// Also summarise the node's RRD history over this period (hour: 1-minute points, day:
    /// 30-minute, week: 3-hour, ...). Omit for current status only.
    timeframe: Option<Timeframe>,
    /// RRD consolidation: AVERAGE (default) or MAX per point; needs timeframe.
    cf: Option<Consolidation>,
    /// Also return the newest RRD points themselves (at most 100); needs timeframe.
    #[serde(default)]
    #[cfg_attr(test, schemars(extend("default" = false)))]
    raw: Flag,
}

#[cfg(test)]
fn usage_schema(description: &str, with_available: bool) -> Value {
    let n = schema::nullable;
    let mut props = vec![
        ("total", n("integer", "Total, bytes; null if unknown")),
        ("used", n("integer", "Used, bytes; null if unknown")),
        ("free", n("integer", "Free, bytes; null if unknown")),
        (
            "used_fraction",
            n("number", "used / total (0..1); null if unknown"),
        ),
    ];
    if with_available {
        props.push((
            "available",
            n(
                "integer",
                "Available to new processes (PVE 9: memory; rootfs: avail), bytes; null if not reported",
            ),
        ));
    }
    schema::object(description, &props)
}

#[cfg(test)]
fn output_schema() -> Value {
    let n = schema::nullable;
    let series = schema::object(
        "One RRD series.",
        &[
            (
                "name",
                schema::string("Data source, e.g. cpu, loadavg, memused, netin"),
            ),
            (
                "points",
                json!({"type": "integer", "minimum": 1, "description": "Points that had a value"}),
            ),
            ("min", schema::typed("number", "Smallest value")),
            ("avg", schema::typed("number", "Mean of the values")),
            ("max", schema::typed("number", "Largest value")),
            ("last", schema::typed("number", "Newest value")),
        ],
    );
    let rrd = json!({
        "type": ["object", "null"],
        "description": "History over timeframe; null if no timeframe was given",
        "properties": {
            "timeframe": {"type": "string", "description": "The timeframe asked for"},
            "cf": {"type": "string", "description": "The consolidation function used"},
            "points": {"type": "integer", "minimum": 0, "description": "Number of RRD points returned by Proxmox"},
            "from": {"type": ["string", "null"], "description": "Time of the first point, ISO-8601 UTC; null if none"},
            "to": {"type": ["string", "null"], "description": "Time of the last point, ISO-8601 UTC; null if none"},
            "series": {"type": "array", "items": series, "description": "Per data source, by name; points without a value for a source are skipped, not counted as 0"},
            "raw": {
                "type": ["array", "null"],
                "items": {"type": "object", "additionalProperties": {"type": "number"}},
                "description": "The newest points (at most 100) as time + values, when raw was true; else null"
            },
            "raw_omitted": {"type": "integer", "minimum": 0, "description": "Older points left out of raw"}
        },
        "required": ["timeframe", "cf", "points", "from", "to", "series", "raw", "raw_omitted"],
        "additionalProperties": false
    });
    let cpuinfo = schema::object(
        "CPU hardware.",
        &[
            ("model", n("string", "CPU model; null if unknown")),
            ("sockets", n("integer", "Sockets; null if unknown")),
            ("cores", n("integer", "Cores per socket; null if unknown")),
            ("cpus", n("integer", "Logical CPUs; null if unknown")),
            ("mhz", n("number", "Clock, MHz; null if unknown")),
        ],
    );
    schema::object(
        "",
        &[
            ("node", schema::string("Node name")),
            (
                "uptime",
                n("integer", "Seconds since boot; null if unknown"),
            ),
            (
                "cpu",
                n(
                    "number",
                    "CPU use as a fraction of all CPUs (0.25 = 25%); null if unknown",
                ),
            ),
            ("iowait", n("number", "IO wait fraction; null if unknown")),
            (
                "loadavg",
                json!({"type": "array", "items": {"type": "number"}, "description": "1, 5 and 15 minute load averages (Proxmox sends strings; converted)"}),
            ),
            ("memory", usage_schema("RAM.", true)),
            ("swap", usage_schema("Swap.", false)),
            ("rootfs", usage_schema("Root filesystem.", true)),
            ("cpuinfo", cpuinfo),
            ("kversion", n("string", "Running kernel; null if unknown")),
            (
                "pveversion",
                n("string", "pve-manager/<version>/<repoid>; null if unknown"),
            ),
            (
                "boot_mode",
                n(
                    "string",
                    "efi or legacy-bios (PVE 8+); null if not reported",
                ),
            ),
            (
                "secureboot",
                n("boolean", "Secure boot on (PVE 8+); null if not reported"),
            ),
            ("rrd", rrd),
        ],
    )
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<Value>, ToolError> {
    let node = input.node.as_str();
    let timeframe = input.timeframe.map(Timeframe::as_str);
    let cf = input.cf.map(Consolidation::as_str);
    let raw = input.raw.0;
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
                .query("timeframe", tf);
            if let Some(cf) = cf {
                path = path.query("cf", cf);
            }
            let points = fetch::list(pve, &path)?;
            Some(summarise(&points, tf, cf.unwrap_or("AVERAGE"), raw))
        }
        None => None,
    };
    Ok(shape(node, &status, rrd).untyped())
}

fn usage(o: Option<&Value>, available_key: Option<&str>) -> Value {
    let o = o.and_then(Value::as_object);
    let get = |k: &str| o.and_then(|o| pj::uint(o.get(k)));
    let (total, used) = (get("total"), get("used"));
    let mut v = json!({
        "total": total,
        "used": used,
        "free": get("free"),
        "used_fraction": match (used, total) {
            (Some(u), Some(t)) if t > 0 => Some(((u as f64 / t as f64) * 10_000.0).round() / 10_000.0),
            _ => None,
        },
    });
    if let Some(k) = available_key {
        v["available"] = json!(get(k));
    }
    v
}

/// Shapes a `status` answer plus the optional RRD summary.
pub fn shape(node: &str, d: &Map<String, Value>, rrd: Option<Value>) -> Output {
    let loadavg: Vec<Value> = d
        .get("loadavg")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| pj::num(Some(v)))
                .map(pj::tidy)
                .collect()
        })
        .unwrap_or_default();
    let cpuinfo = d.get("cpuinfo").and_then(Value::as_object);
    let ci = |k: &str| cpuinfo.and_then(|c| c.get(k));
    let boot = d.get("boot-info").and_then(Value::as_object);
    let memory = usage(d.get("memory"), Some("available"));
    let structured = json!({
        "node": node,
        "uptime": pj::uint(d.get("uptime")),
        "cpu": pj::fraction(d.get("cpu")).map(pj::tidy),
        "iowait": pj::fraction(d.get("wait")).map(pj::tidy),
        "loadavg": loadavg,
        "memory": memory,
        "swap": usage(d.get("swap"), None),
        "rootfs": usage(d.get("rootfs"), Some("avail")),
        "cpuinfo": {
            "model": pj::text(ci("model")),
            "sockets": pj::uint(ci("sockets")),
            "cores": pj::uint(ci("cores")),
            "cpus": pj::uint(ci("cpus")),
            "mhz": pj::num(ci("mhz")).map(pj::tidy),
        },
        "kversion": pj::text(d.get("kversion")),
        "pveversion": pj::text(d.get("pveversion")),
        "boot_mode": boot.and_then(|b| pj::text(b.get("mode"))),
        "secureboot": boot.and_then(|b| b.get("secureboot")).map(|v| pj::flag(Some(v))),
        "rrd": rrd,
    });
    let s = &structured;
    let mut parts = Vec::new();
    if let Some(c) = s["cpu"].as_f64() {
        let cpus = s["cpuinfo"]["cpus"]
            .as_u64()
            .map(|n| format!(" of {n} CPUs"))
            .unwrap_or_default();
        parts.push(format!("CPU {}{cpus}", format::percent(c)));
    }
    if let Some(l) = s["loadavg"]
        .as_array()
        .and_then(|a| a.first())
        .and_then(Value::as_f64)
    {
        parts.push(format!("load {}", format::one_decimal(l)));
    }
    if let (Some(u), Some(t)) = (s["memory"]["used"].as_u64(), s["memory"]["total"].as_u64()) {
        parts.push(format!("mem {} / {}", format::bytes(u), format::bytes(t)));
    }
    if let (Some(u), Some(t)) = (s["rootfs"]["used"].as_u64(), s["rootfs"]["total"].as_u64()) {
        parts.push(format!(
            "rootfs {} / {}",
            format::bytes(u),
            format::bytes(t)
        ));
    }
    if let Some(up) = s["uptime"].as_u64() {
        parts.push(format!("up {}", format::duration(up)));
    }
    let mut summary = format!("Node {node}: {}.", parts.join(", "));
    if let Some(r) = s["rrd"].as_object() {
        let find = |name: &str| {
            r["series"]
                .as_array()
                .and_then(|a| a.iter().find(|x| x["name"] == name))
        };
        let tf = r["timeframe"].as_str().unwrap_or("");
        match find("cpu") {
            Some(cpu) => summary.push_str(&format!(
                " Past {tf}: CPU avg {}, max {} ({} points).",
                format::percent(cpu["avg"].as_f64().unwrap_or(0.0)),
                format::percent(cpu["max"].as_f64().unwrap_or(0.0)),
                cpu["points"]
            )),
            None => summary.push_str(&format!(
                " Past {tf}: {} RRD points, no CPU data.",
                r["points"]
            )),
        }
    }
    Output {
        structured,
        summary,
    }
}

/// Summarises RRD points: per data source min/avg/max/last over the points
/// that have it (missing keys are skipped, not zero).
pub fn summarise(points: &[Value], timeframe: &str, cf: &str, raw: bool) -> Value {
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
    let round = |x: f64| pj::tidy((x * 10_000.0).round() / 10_000.0);
    let series: Vec<Value> = acc
        .iter()
        .map(|(name, (n, min, sum, max, last))| {
            json!({"name": name, "points": n, "min": round(*min), "avg": round(sum / *n as f64),
                "max": round(*max), "last": round(*last)})
        })
        .collect();
    let time = |p: Option<&&Map<String, Value>>| {
        p.and_then(|p| pj::num(p.get("time")))
            .map(|t| format::iso_utc(t as i64))
    };
    let skip = points.len().saturating_sub(RAW_MAX);
    let raw_points: Option<Vec<Value>> = raw.then(|| {
        points[skip..]
            .iter()
            .map(|p| {
                Value::Object(
                    p.iter()
                        .filter_map(|(k, v)| pj::num(Some(v)).map(|x| (k.clone(), pj::tidy(x))))
                        .collect(),
                )
            })
            .collect()
    });
    json!({
        "timeframe": timeframe,
        "cf": cf,
        "points": points.len(),
        "from": time(points.first()),
        "to": time(points.last()),
        "series": series,
        "raw": raw_points,
        "raw_omitted": if raw { skip } else { 0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;

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
        crate::tools::testing::assert_valid_output(&TOOL, &out);
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
        crate::tools::testing::assert_valid_output(&TOOL, &out);
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
        crate::tools::testing::assert_valid_output(&TOOL, &out);
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
