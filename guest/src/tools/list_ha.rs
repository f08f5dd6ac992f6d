//! `pve_list_ha`: the HA manager's view from `/cluster/ha/status/current`
//! merged with the configured resources from `/cluster/ha/resources`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::error::ToolError;
use crate::json as pj;
use crate::paging::{self, Counts, Page, PageArgs, PageInfo};
use crate::path::ApiPath;

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 1000;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_ha",
    title: "List HA status and resources",
    description: "HA state: quorum, master, each node's LRM and every HA-managed guest's requested \
        and actual state. Use it when an HA guest misbehaves.",
    reads: ["/cluster/ha/status/current", "/cluster/ha/resources"],
    privileges: [
        "/": "Sys.Audit",
    ],
    run: run,
};

/// The HA manager's view, with one page of resources.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct HaStatus {
    /// Cluster quorum as the HA manager sees it.
    pub quorum: Quorum,
    /// The current HA master (CRM).
    pub master: Master,
    /// Whether the HA stack may fence nodes (PVE 9.2+); null if Proxmox does not report it
    pub fencing: Option<Fencing>,
    /// Each node's LRM, by node
    pub lrm: Vec<Lrm>,
    /// HA resources by sid
    pub resources: Vec<HaResource>,
    /// All resources (not just this page) by state
    pub counts: Vec<StateCount>,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// Cluster quorum as the HA manager sees it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Quorum {
    /// true if the HA quorum status is OK
    pub ok: bool,
    /// Whether the cluster is quorate; null if not reported
    pub quorate: Option<bool>,
    /// Proxmox's quorum status text; null if not reported
    pub status: Option<String>,
}

/// The current HA master (CRM).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Master {
    /// Master node; null if there is none
    pub node: Option<String>,
    /// Proxmox's status text; null if none
    pub status: Option<String>,
    /// Last update, epoch seconds; null if unknown
    pub timestamp: Option<u64>,
    /// Last update, ISO-8601 UTC; null if unknown
    pub timestamp_iso: Option<String>,
}

/// The HA fencing state (PVE 9.2's `fencing` status row).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Fencing {
    /// armed, standby, disarming or disarmed; null if not reported
    pub armed_state: Option<String>,
    /// How resources are handled while disarmed (freeze, ignore); null if not reported
    pub resource_mode: Option<String>,
    /// Proxmox's status text, e.g. "armed (CRM watchdog active)"; null if not reported
    pub status: Option<String>,
}

/// One node's local resource manager.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Lrm {
    /// Node
    pub node: String,
    /// LRM state parsed from status: active, idle, wait_for_agent_lock, ...; null if not given
    pub state: Option<String>,
    /// Proxmox's status text, e.g. "pve1 (active, Tue Mar 24 11:00:00 2026)"
    pub status: String,
    /// Last status update, epoch seconds; null if unknown
    pub timestamp: Option<u64>,
    /// Last status update, ISO-8601 UTC; null if unknown
    pub timestamp_iso: Option<String>,
}

/// One HA resource.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct HaResource {
    /// HA service id, e.g. vm:100 or ct:200
    pub sid: String,
    /// vm or ct; null if unknown
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The guest's vmid; null if the sid has none
    pub vmid: Option<u64>,
    /// Requested state (started, stopped, ignored, disabled); null if unknown
    pub state: Option<String>,
    /// State the CRM sees (started, stopped, fence, error, migrate, ...); null if not reported
    pub crm_state: Option<String>,
    /// Verbose service state from the HA status; null if not reported
    pub actual_state: Option<String>,
    /// Proxmox's status text for the service; null if not reported
    pub status: Option<String>,
    /// Node the resource is on; null if unknown
    pub node: Option<String>,
    /// HA group; null if none
    pub group: Option<String>,
    /// Restart attempts on the same node; null if default
    pub max_restart: Option<u64>,
    /// Relocation attempts; null if default
    pub max_relocate: Option<u64>,
    /// true if it moves back to its preferred node when that node returns; null if not reported
    pub failback: Option<bool>,
    /// true if the CRM may move it to balance the load (PVE 9.2+); null if not reported
    pub auto_rebalance: Option<bool>,
    /// Comment; null if none
    pub comment: Option<String>,
}

/// Resources in one state.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct StateCount {
    /// CRM state, else requested state, else "unknown"
    pub state: String,
    /// Number of resources
    pub count: usize,
}

fn run(
    pve: &mut dyn Pve,
    input: PageArgs<DEFAULT_LIMIT, MAX_LIMIT>,
) -> Result<Answer<HaStatus>, ToolError> {
    let page = input.page();
    let status = pve.get(
        &ApiPath::new("cluster")
            .lit("ha")
            .lit("status")
            .lit("current"),
    )?;
    let resources = pve.get(&ApiPath::new("cluster").lit("ha").lit("resources"))?;
    Ok(shape(&status, &resources, page))
}

/// One JSON object from Proxmox.
type Entry = Map<String, Value>;

/// `pve1 (active, Tue ...)` → `active`.
fn paren_state(status: &str) -> Option<String> {
    let inner = status.split_once('(')?.1;
    let word = inner.split([',', ')']).next()?.trim();
    (!word.is_empty()).then(|| word.to_owned())
}

fn iso(t: Option<u64>) -> Option<String> {
    t.map(|t| crate::format::iso_utc(t as i64))
}

/// Merges the HA status and the resource configuration.
pub fn shape(status: &Value, resources: &Value, page: Page) -> Answer<HaStatus> {
    let entries: Vec<&Map<String, Value>> = status
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default();
    let kind = |e: &Map<String, Value>| {
        pj::text(e.get("type")).unwrap_or_else(|| {
            pj::text(e.get("id"))
                .map(|id| id.split(':').next().unwrap_or("").to_owned())
                .unwrap_or_default()
        })
    };
    let quorum = entries.iter().find(|e| kind(e) == "quorum");
    let quorum_status = quorum.and_then(|q| pj::text(q.get("status")));
    let quorate = quorum
        .and_then(|q| q.get("quorate"))
        .map(|v| pj::flag(Some(v)));
    let master = entries.iter().find(|e| kind(e) == "master");
    let master_ts = master.and_then(|m| pj::uint(m.get("timestamp")));
    let fencing = entries
        .iter()
        .find(|e| kind(e) == "fencing")
        .map(|f| Fencing {
            armed_state: pj::text(f.get("armed-state")),
            resource_mode: pj::text(f.get("resource_mode")),
            status: pj::text(f.get("status")),
        });
    let mut lrm: Vec<Lrm> = entries
        .iter()
        .filter(|e| kind(e) == "lrm")
        .map(|e| {
            let status = pj::text(e.get("status")).unwrap_or_default();
            let ts = pj::uint(e.get("timestamp"));
            let node = pj::text(e.get("node")).or_else(|| {
                pj::text(e.get("id")).and_then(|id| id.strip_prefix("lrm:").map(str::to_owned))
            });
            Lrm {
                node: node.unwrap_or_default(),
                state: paren_state(&status),
                status,
                timestamp: ts,
                timestamp_iso: iso(ts),
            }
        })
        .collect();
    lrm.sort_by(|a, b| a.node.cmp(&b.node));

    // sid → (config, status entry)
    let mut merged: BTreeMap<String, (Option<&Entry>, Option<&Entry>)> = BTreeMap::new();
    for r in resources
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
    {
        if let Some(sid) = pj::text(r.get("sid")) {
            merged.entry(sid).or_default().0 = Some(r);
        }
    }
    for e in entries.iter().filter(|e| kind(e) == "service") {
        let sid = pj::text(e.get("sid")).or_else(|| {
            pj::text(e.get("id")).and_then(|id| id.strip_prefix("service:").map(str::to_owned))
        });
        if let Some(sid) = sid {
            merged.entry(sid).or_default().1 = Some(e);
        }
    }
    let all: Vec<HaResource> = merged
        .iter()
        .map(|(sid, (cfg, st))| {
            let get = |k: &str| {
                cfg.and_then(|c| c.get(k))
                    .or_else(|| st.and_then(|s| s.get(k)))
            };
            // Perl 0/1 or, on PVE 9, JSON booleans; absent means unknown.
            let flag = |k: &str| get(k).map(|v| pj::flag(Some(v)));
            let from_sid = sid.split_once(':');
            let ty = pj::text(cfg.and_then(|c| c.get("type")))
                .or_else(|| from_sid.map(|(t, _)| t.to_owned()));
            HaResource {
                sid: sid.clone(),
                kind: ty,
                vmid: from_sid.and_then(|(_, id)| id.parse::<u64>().ok()),
                state: pj::text(cfg.and_then(|c| c.get("state")))
                    .or_else(|| pj::text(st.and_then(|s| s.get("request_state")))),
                crm_state: pj::text(st.and_then(|s| s.get("crm_state"))),
                actual_state: pj::text(st.and_then(|s| s.get("state"))),
                status: pj::text(st.and_then(|s| s.get("status"))),
                node: pj::text(st.and_then(|s| s.get("node"))),
                group: pj::text(get("group")),
                max_restart: pj::uint(get("max_restart")),
                max_relocate: pj::uint(get("max_relocate")),
                failback: flag("failback"),
                auto_rebalance: flag("auto-rebalance"),
                comment: pj::text(cfg.and_then(|c| c.get("comment"))),
            }
        })
        .collect();
    let by_state = Counts::of(&all, |r| {
        r.crm_state
            .as_deref()
            .or(r.state.as_deref())
            .unwrap_or("unknown")
    });
    let counts: Vec<StateCount> = by_state
        .0
        .iter()
        .map(|(s, c)| StateCount {
            state: s.clone(),
            count: *c,
        })
        .collect();
    let (page_items, info) = paging::paginate(all, page);
    let ok = quorum_status.as_deref() == Some("OK");
    let master_node = master.and_then(|m| pj::text(m.get("node")));
    let structured = HaStatus {
        quorum: Quorum {
            ok,
            quorate,
            status: quorum_status,
        },
        master: Master {
            node: master_node.clone(),
            status: master.and_then(|m| pj::text(m.get("status"))),
            timestamp: master_ts,
            timestamp_iso: iso(master_ts),
        },
        fencing,
        lrm,
        resources: page_items,
        counts,
        page: info,
    };

    let mut summary = if info.total == 0 && master_node.is_none() {
        "HA is not in use: no HA resources configured and no HA master.".to_owned()
    } else {
        let states = by_state
            .0
            .iter()
            .map(|(s, c)| format!("{c} {s}"))
            .collect::<Vec<_>>()
            .join(", ");
        let fencing = structured
            .fencing
            .as_ref()
            .and_then(|f| f.armed_state.as_deref().or(f.status.as_deref()))
            .map(|f| format!(", fencing {f}"))
            .unwrap_or_default();
        format!(
            "HA quorum {}, master {}{fencing}; {}{}.",
            if ok { "OK" } else { "NOT OK" },
            master_node.as_deref().unwrap_or("none"),
            crate::format::count(info.total, "resource", "resources"),
            if states.is_empty() {
                String::new()
            } else {
                format!(" ({states})")
            }
        )
    };
    if info.returned < info.total {
        summary.push_str(&format!(" {}.", info.describe()));
    }
    Answer {
        structured,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::Output;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const STATUS: &str = "/cluster/ha/status/current";
    const RESOURCES: &str = "/cluster/ha/resources";

    fn status() -> Value {
        json!([
            {"id":"quorum","type":"quorum","node":"pve1","status":"OK","quorate":1},
            {"id":"master","type":"master","node":"pve1","status":"pve1 (active, Tue Mar 24 11:00:00 2026)","timestamp":1774350000},
            {"id":"lrm:pve2","type":"lrm","node":"pve2","status":"pve2 (idle, Tue Mar 24 11:00:02 2026)","timestamp":1774350002},
            {"id":"lrm:pve1","type":"lrm","node":"pve1","status":"pve1 (active, Tue Mar 24 11:00:01 2026)","timestamp":1774350001},
            {"id":"service:vm:100","type":"service","sid":"vm:100","node":"pve1","state":"started","crm_state":"started",
             "request_state":"started","max_restart":1,"max_relocate":1,"status":"vm:100 (pve1, started)"},
            {"id":"service:ct:200","type":"service","sid":"ct:200","node":"pve2","state":"error","crm_state":"error",
             "request_state":"started","status":"ct:200 (pve2, error)"}
        ])
    }

    fn resources() -> Value {
        json!([
            {"sid":"vm:100","type":"vm","state":"started","group":"prod","max_restart":1,"max_relocate":1,"digest":"abc"},
            {"sid":"ct:200","type":"ct","state":"started","comment":"db"},
            {"sid":"vm:300","type":"vm","state":"stopped","digest":"abc"}
        ])
    }

    fn call(pve: &mut FakePve, args: Value) -> Result<Output, ToolError> {
        TOOL.call(pve, &args.to_string())
    }

    #[test]
    fn merges_status_and_resources() {
        let mut pve = FakePve::default()
            .with(STATUS, status())
            .with(RESOURCES, resources());
        let out = call(&mut pve, json!({})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(
            s["quorum"],
            json!({"ok": true, "quorate": true, "status": "OK"})
        );
        assert_eq!(s["master"]["node"], "pve1");
        assert_eq!(s["lrm"][0]["node"], "pve1");
        assert_eq!(s["lrm"][1]["state"], "idle");
        let sids: Vec<&str> = s["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["sid"].as_str().unwrap())
            .collect();
        assert_eq!(sids, ["ct:200", "vm:100", "vm:300"]);
        assert_eq!(s["resources"][0]["crm_state"], "error");
        assert_eq!(s["resources"][0]["vmid"], 200);
        assert_eq!(s["resources"][1]["group"], "prod");
        assert_eq!(s["resources"][2]["crm_state"], Value::Null);
        assert_eq!(s["resources"][2]["state"], "stopped");
        assert_eq!(
            s["counts"],
            json!([{"state":"error","count":1},{"state":"started","count":1},{"state":"stopped","count":1}])
        );
        assert_eq!(
            out.summary,
            "HA quorum OK, master pve1; 3 resources (1 error, 1 started, 1 stopped)."
        );
        // Before PVE 9.2: no fencing row; failback only where given.
        assert_eq!(s["fencing"], Value::Null);
        assert_eq!(s["resources"][0]["failback"], Value::Null);
        assert_eq!(s["resources"][0]["auto_rebalance"], Value::Null);
    }

    #[test]
    fn pve_9_2_fencing_row_failback_and_auto_rebalance() {
        let mut status = status();
        let rows = status.as_array_mut().unwrap();
        rows.insert(
            2,
            json!({"id":"fencing","type":"fencing","armed-state":"armed",
                   "status":"armed (CRM watchdog active)"}),
        );
        rows[5]["failback"] = json!(true);
        rows[5]["auto-rebalance"] = json!(false);
        rows[6]["failback"] = json!(0);
        rows[6]["auto-rebalance"] = json!(1);
        let mut pve = FakePve::default()
            .with(STATUS, status)
            .with(RESOURCES, resources());
        let out = call(&mut pve, json!({})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(
            s["fencing"],
            json!({"armed_state": "armed", "resource_mode": null,
                   "status": "armed (CRM watchdog active)"})
        );
        // ct:200 then vm:100; both JSON and Perl booleans read.
        assert_eq!(s["resources"][0]["failback"], false);
        assert_eq!(s["resources"][0]["auto_rebalance"], true);
        assert_eq!(s["resources"][1]["failback"], true);
        assert_eq!(s["resources"][1]["auto_rebalance"], false);
        // The fencing row is neither an LRM nor a service.
        assert_eq!(s["lrm"].as_array().unwrap().len(), 2);
        assert_eq!(s["total"], 3);
        assert!(
            out.summary
                .starts_with("HA quorum OK, master pve1, fencing armed; 3 resources"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn unused_ha_and_paging() {
        let mut pve = FakePve::default()
            .with(
                STATUS,
                json!([{"id":"quorum","type":"quorum","node":"pve1","status":"OK","quorate":1}]),
            )
            .with(RESOURCES, json!([]));
        let out = call(&mut pve, json!({})).unwrap();
        assert_valid_output(&TOOL, &out);
        assert!(
            out.summary.starts_with("HA is not in use"),
            "{}",
            out.summary
        );

        let mut pve = FakePve::default()
            .with(STATUS, status())
            .with(RESOURCES, resources());
        let out = call(&mut pve, json!({"limit": 1, "offset": 1})).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["resources"][0]["sid"], "vm:100");
        assert_eq!(out.structured["next_offset"], 2);
        assert_eq!(out.structured["counts"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn bad_arguments_make_no_request() {
        let mut pve = FakePve::default();
        for args in [
            json!({"limit": 0}),
            json!({"limit": 1001}),
            json!({"offset": "1"}),
        ] {
            let e = call(&mut pve, args.clone()).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{args}: {e:?}");
        }
        assert!(pve.requests.is_empty());
    }
}
