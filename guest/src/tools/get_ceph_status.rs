//! `pve_get_ceph_status`: the cluster's Ceph health (`GET /cluster/ceph/
//! status`): the overall state, each health check with its message,
//! monitors in quorum, OSDs up and in, placement groups by state and the
//! space used. A cluster without Ceph answers that it has none.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::api::Pve;
use crate::error::ToolError;
use crate::format;
use crate::json as pj;
use crate::path::ApiPath;
use crate::tool::{Answer, NoArguments, Tool, read_tool};

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_ceph_status",
    title: "Get Ceph status",
    description: "The cluster's Ceph health with each warning's message, monitors, OSDs up/in, \
        placement group states and space used; says so if there is no Ceph.",
    reads: ["/cluster/ceph/status"],
    privileges: [
        "/": "Sys.Audit" | "Datastore.Audit",
    ],
    run: run,
};

/// The cluster's Ceph status.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CephStatus {
    /// false: this cluster runs no Ceph (every other field is then null or empty)
    pub ceph: bool,
    /// HEALTH_OK, HEALTH_WARN or HEALTH_ERR
    pub health: Option<String>,
    /// Each health check, worst first
    pub checks: Vec<Check>,
    /// Monitors in the map
    pub mons: Option<u64>,
    /// Monitors in quorum, by name
    pub quorum: Vec<String>,
    /// OSDs in the map
    pub osds: Option<u64>,
    /// OSDs up
    pub osds_up: Option<u64>,
    /// OSDs in
    pub osds_in: Option<u64>,
    /// Placement groups in all
    pub pgs: Option<u64>,
    /// Placement groups by state, e.g. active+clean
    pub pg_states: Vec<PgState>,
    /// Raw bytes used
    pub used: Option<u64>,
    /// Raw bytes in all
    pub total: Option<u64>,
    /// used of total, e.g. "1.2 TiB of 12 TiB (10.0%)"; null if unknown
    pub usage: Option<String>,
}

/// One health check.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Check {
    /// Its code, e.g. OSD_NEARFULL
    pub name: String,
    /// HEALTH_WARN or HEALTH_ERR
    pub severity: Option<String>,
    /// What it says
    pub message: Option<String>,
    /// Its detail lines (at most 10)
    pub detail: Vec<String>,
}

/// How many placement groups are in one state.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct PgState {
    /// State, e.g. active+clean
    pub state: String,
    /// Placement groups in it
    pub count: u64,
}

/// Whether Proxmox's error says the cluster runs no Ceph (not installed,
/// not configured), rather than that Ceph is broken.
fn no_ceph(e: &ToolError) -> bool {
    let m = e.message();
    m.contains("binary not installed")
        || m.contains("not initialized")
        || m.contains("ceph.conf")
        || m.contains("rados_connect failed - No such file or directory")
}

fn object<'a>(v: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

fn checks(health: Option<&Map<String, Value>>) -> Vec<Check> {
    let Some(found) = health.and_then(|h| object(h, "checks")) else {
        return Vec::new();
    };
    let mut out: Vec<Check> = found
        .iter()
        .map(|(name, c)| Check {
            name: name.clone(),
            severity: pj::text(c.get("severity")),
            message: c
                .get("summary")
                .and_then(|s| pj::text(s.get("message"))),
            detail: c
                .get("detail")
                .and_then(Value::as_array)
                .map(|d| {
                    d.iter()
                        .filter_map(|l| pj::text(l.get("message")))
                        .take(10)
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    out.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.name.cmp(&b.name)));
    out
}

fn run(pve: &mut dyn Pve, _: NoArguments) -> Result<Answer<CephStatus>, ToolError> {
    let data = match pve.get(&ApiPath::new("cluster").lit("ceph").lit("status")) {
        Ok(data) => data,
        Err(e) if no_ceph(&e) => {
            return Ok(Answer {
                summary: format!(
                    "This cluster runs no Ceph (Proxmox: {}).",
                    e.message().lines().next().unwrap_or_default()
                ),
                structured: CephStatus {
                    ceph: false,
                    health: None,
                    checks: Vec::new(),
                    mons: None,
                    quorum: Vec::new(),
                    osds: None,
                    osds_up: None,
                    osds_in: None,
                    pgs: None,
                    pg_states: Vec::new(),
                    used: None,
                    total: None,
                    usage: None,
                },
            });
        }
        Err(e) => return Err(e),
    };
    let empty = Map::new();
    let d = data.as_object().unwrap_or(&empty);
    let health = object(d, "health");
    let osdmap = object(d, "osdmap").map(|m| object(m, "osdmap").unwrap_or(m));
    let pgmap = object(d, "pgmap");
    let mut pg_states: Vec<PgState> = pgmap
        .and_then(|p| p.get("pgs_by_state"))
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(|e| {
                    Some(PgState {
                        state: pj::text(e.get("state_name"))?,
                        count: pj::uint(e.get("count")).unwrap_or(0),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    pg_states.sort_by_key(|p| std::cmp::Reverse(p.count));
    let used = pgmap.and_then(|p| pj::uint(p.get("bytes_used")));
    let total = pgmap.and_then(|p| pj::uint(p.get("bytes_total")));
    let usage = match (used, total) {
        (Some(u), Some(t)) if t > 0 => Some(format!(
            "{} of {} ({})",
            format::bytes(u),
            format::bytes(t),
            format::percent(u as f64 / t as f64)
        )),
        _ => None,
    };
    let status = CephStatus {
        ceph: true,
        health: health.and_then(|h| pj::text(h.get("status"))),
        checks: checks(health),
        mons: object(d, "monmap")
            .and_then(|m| m.get("mons"))
            .and_then(Value::as_array)
            .map(|m| m.len() as u64),
        quorum: d
            .get("quorum_names")
            .and_then(Value::as_array)
            .map(|q| q.iter().filter_map(|n| pj::text(Some(n))).collect())
            .unwrap_or_default(),
        osds: osdmap.and_then(|m| pj::uint(m.get("num_osds"))),
        osds_up: osdmap.and_then(|m| pj::uint(m.get("num_up_osds"))),
        osds_in: osdmap.and_then(|m| pj::uint(m.get("num_in_osds"))),
        pgs: pgmap.and_then(|p| pj::uint(p.get("num_pgs"))),
        pg_states,
        used,
        total,
        usage,
    };
    let mut summary = format!(
        "Ceph is {}",
        status.health.as_deref().unwrap_or("of unknown health")
    );
    if let (Some(n), Some(up), Some(inn)) = (status.osds, status.osds_up, status.osds_in) {
        summary.push_str(&format!("; {up}/{n} OSDs up, {inn} in"));
    }
    if let Some(u) = &status.usage {
        summary.push_str(&format!("; {u} used"));
    }
    summary.push('.');
    for c in &status.checks {
        summary.push_str(&format!(
            " {}: {}.",
            c.name,
            c.message.as_deref().unwrap_or("no message")
        ));
    }
    Ok(Answer {
        summary,
        structured: status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    #[test]
    fn health_checks_osds_and_usage_are_read() {
        let mut pve = FakePve::default().with(
            "/cluster/ceph/status",
            json!({
                "fsid": "x",
                "health": {"status": "HEALTH_WARN", "checks": {"OSD_NEARFULL": {
                    "severity": "HEALTH_WARN",
                    "summary": {"message": "1 nearfull osd(s)"},
                    "detail": [{"message": "osd.3 is near full"}]}}},
                "monmap": {"mons": [{"name": "pve1"}, {"name": "pve2"}, {"name": "pve3"}]},
                "quorum_names": ["pve1", "pve2"],
                "osdmap": {"num_osds": 6, "num_up_osds": 4, "num_in_osds": 6},
                "pgmap": {"num_pgs": 129, "bytes_used": 1_000_000_000_000u64,
                          "bytes_total": 10_000_000_000_000u64,
                          "pgs_by_state": [{"state_name": "active+clean", "count": 100},
                                           {"state_name": "active+undersized+degraded", "count": 29}]}
            }),
        );
        let out = TOOL.call(&mut pve, "{}").unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["health"], "HEALTH_WARN");
        assert_eq!(s["checks"][0]["detail"], json!(["osd.3 is near full"]));
        assert_eq!(s["osds_up"], 4);
        assert_eq!(s["mons"], 3);
        assert!(out.summary.contains("OSD_NEARFULL: 1 nearfull osd(s)"), "{}", out.summary);
    }

    #[test]
    fn a_cluster_without_ceph_says_so() {
        let mut pve = FakePve::default().failing(
            "/cluster/ceph/status",
            ToolError::Upstream("HTTP 500: binary not installed: /usr/bin/ceph-mon".into()),
        );
        let out = TOOL.call(&mut pve, "{}").unwrap();
        assert_eq!(out.structured["ceph"], false);
        assert!(out.summary.starts_with("This cluster runs no Ceph"), "{}", out.summary);
    }
}
