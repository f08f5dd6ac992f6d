//! `pve_list_replication`: the storage replication jobs
//! (`GET /cluster/replication`) with each one's state from the node it
//! runs on (`GET /nodes/{node}/replication`): last and next sync, how
//! long it took, how often it failed and why. Failing jobs are named.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Pve;
use crate::arg::Vmid;
use crate::error::ToolError;
use crate::fetch;
use crate::format;
use crate::json as pj;
use crate::path::ApiPath;
use crate::replication::Job;
use crate::tool::{Answer, Tool, read_tool};

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_replication",
    title: "List replication jobs",
    description: "Storage replication jobs with target, schedule, last and next sync, fail count \
        and error. Run one now with pve_run_replication.",
    reads: ["/cluster/replication", "/nodes", "/nodes/{node}/replication"],
    privileges: [
        "/vms": "VM.Audit",
    ],
    run: run,
};

/// Which jobs.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Only this guest's jobs
    vmid: Option<Vmid>,
}

/// The replication jobs.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct JobList {
    /// Jobs by id
    pub jobs: Vec<JobState>,
    /// Ids of the jobs whose last try failed
    pub failing: Vec<String>,
    /// Nodes that could not be asked for their jobs' state (offline); their jobs show no state
    pub unreachable_nodes: Vec<String>,
}

/// One job and its state.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct JobState {
    /// Job id, <vmid>-<n>
    pub id: String,
    /// The guest replicated
    pub guest: Option<u64>,
    /// Node it runs on; null if unknown
    pub source: Option<String>,
    /// Node it replicates to
    pub target: Option<String>,
    /// Calendar event, e.g. */15
    pub schedule: Option<String>,
    /// Rate limit, MB/s; null if none
    pub rate: Option<String>,
    /// Disabled in its configuration
    pub disabled: bool,
    /// Last successful sync, ISO-8601 UTC; null if never
    pub last_sync: Option<String>,
    /// Next planned sync, ISO-8601 UTC; null if unknown
    pub next_sync: Option<String>,
    /// Seconds the last sync took
    pub duration: Option<f64>,
    /// Tries failed in a row
    pub fail_count: u64,
    /// The last failure's message; null when the last try worked
    pub error: Option<String>,
    /// Comment
    pub comment: Option<String>,
}

fn time(v: Option<&Value>) -> Option<String> {
    pj::uint(v).filter(|t| *t > 0).map(|t| format::iso_utc(t as i64))
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<JobList>, ToolError> {
    let wanted = input.vmid.map(|v| u64::from(v.0));
    let mut jobs: Vec<Job> = fetch::list(pve, &ApiPath::new("cluster").lit("replication"))?
        .iter()
        .filter_map(Job::read)
        .filter(|j| wanted.is_none_or(|v| j.guest == Some(v)))
        .collect();
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    // Each node knows the state of the jobs of the guests it holds.
    let mut states: Vec<(String, Value)> = Vec::new();
    let mut unreachable = Vec::new();
    if !jobs.is_empty() {
        for node in fetch::list(pve, &ApiPath::new("nodes"))? {
            let Some(name) = pj::text(node.get("node")) else {
                continue;
            };
            if pj::text(node.get("status")).as_deref() != Some("online") {
                unreachable.push(name);
                continue;
            }
            let path = ApiPath::new("nodes").seg(&name).lit("replication");
            for s in fetch::list(pve, &path)? {
                states.push((name.clone(), s));
            }
        }
    }
    let out: Vec<JobState> = jobs
        .into_iter()
        .map(|j| {
            let state = states
                .iter()
                .find(|(_, s)| pj::text(s.get("id")).as_deref() == Some(j.id.as_str()));
            let s = state.map(|(_, s)| s);
            JobState {
                source: state.map(|(n, _)| n.clone()).or(j.source),
                last_sync: s.and_then(|s| time(s.get("last_sync"))),
                next_sync: s.and_then(|s| time(s.get("next_sync"))),
                duration: s.and_then(|s| pj::num(s.get("duration"))),
                fail_count: s.and_then(|s| pj::uint(s.get("fail_count"))).unwrap_or(0),
                error: s.and_then(|s| pj::text(s.get("error"))),
                id: j.id,
                guest: j.guest,
                target: j.target,
                schedule: j.schedule,
                rate: j.rate,
                disabled: j.disabled,
                comment: j.comment,
            }
        })
        .collect();
    let failing: Vec<String> = out
        .iter()
        .filter(|j| j.fail_count > 0 || j.error.is_some())
        .map(|j| j.id.clone())
        .collect();
    let mut summary = format!("{}.", format::count(out.len(), "replication job", "replication jobs"));
    for j in out.iter().filter(|j| failing.contains(&j.id)) {
        summary.push_str(&format!(
            " {} FAILING ({} in a row): {}.",
            j.id,
            j.fail_count,
            j.error.as_deref().unwrap_or("no message")
        ));
    }
    if !unreachable.is_empty() {
        summary.push_str(&format!(
            " Not asked (offline): {}.",
            unreachable.join(", ")
        ));
    }
    Ok(Answer {
        summary,
        structured: JobList {
            jobs: out,
            failing,
            unreachable_nodes: unreachable,
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
    fn jobs_carry_the_state_their_node_reports_and_failures_are_named() {
        let mut pve = FakePve::default()
            .with(
                "/cluster/replication",
                json!([
                    {"id": "101-0", "guest": 101, "target": "pve2", "schedule": "*/15", "type": "local"},
                    {"id": "100-0", "guest": 100, "target": "pve3", "type": "local"},
                ]),
            )
            .with(
                "/nodes",
                json!([{"node": "pve1", "status": "online"}, {"node": "pve3", "status": "offline"}]),
            )
            .with(
                "/nodes/pve1/replication",
                json!([
                    {"id": "101-0", "last_sync": 1_700_000_000, "next_sync": 1_700_000_900,
                     "duration": 3.2, "fail_count": 0},
                    {"id": "100-0", "last_sync": 0, "fail_count": 3,
                     "error": "no route to host pve3"},
                ]),
            );
        let out = TOOL.call(&mut pve, "{}").unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["jobs"][0]["id"], "100-0");
        assert_eq!(s["jobs"][0]["source"], "pve1");
        assert_eq!(s["jobs"][0]["last_sync"], Value::Null);
        assert_eq!(s["jobs"][1]["next_sync"], "2023-11-14T22:28:20Z");
        assert_eq!(s["failing"], json!(["100-0"]));
        assert_eq!(s["unreachable_nodes"], json!(["pve3"]));
        assert!(out.summary.contains("100-0 FAILING (3 in a row): no route to host pve3"));
    }
}
