//! Storage replication jobs as the replication tools read them: the job
//! id argument (`<vmid>-<n>`, PVE's `pve-replication-job-id`) and a job's
//! configuration from `GET /cluster/replication`.

use serde_json::Value;

use crate::arg::{deserialize_from_json, fixed_schema, string};
use crate::error::quoted;
use crate::json as pj;

/// A replication job id: the guest's vmid, `-`, the job number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobId(pub String);

impl JobId {
    /// The id as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The guest it replicates.
    pub fn vmid(&self) -> u64 {
        self.0
            .split_once('-')
            .and_then(|(v, _)| v.parse().ok())
            .unwrap_or(0)
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let rule = "a replication job id, <vmid>-<number>, e.g. \"101-0\" (pve_list_replication)";
        let s = string(v, 24).map_err(|e| format!("{e}; it must be {rule}"))?;
        let ok = s.split_once('-').is_some_and(|(vmid, n)| {
            (3..=9).contains(&vmid.len())
                && !vmid.starts_with('0')
                && vmid.bytes().all(|b| b.is_ascii_digit())
                && (1..=9).contains(&n.len())
                && n.bytes().all(|b| b.is_ascii_digit())
        });
        if !ok {
            return Err(format!("{} is not {rule}", quoted(s, 32)));
        }
        Ok(JobId(s.to_owned()))
    }
}
deserialize_from_json!(JobId);
fixed_schema!(JobId, serde_json::json!({"type": "string"}));

/// A job's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// `101-0`.
    pub id: String,
    /// The guest.
    pub guest: Option<u64>,
    /// The node it replicates to.
    pub target: Option<String>,
    /// Its calendar event, e.g. `*/15`.
    pub schedule: Option<String>,
    /// Rate limit, MB/s.
    pub rate: Option<String>,
    /// Comment.
    pub comment: Option<String>,
    /// Disabled in its configuration.
    pub disabled: bool,
    /// The node it replicates from, when the configuration says.
    pub source: Option<String>,
}

impl Job {
    /// Reads one entry of `/cluster/replication`; `None` without an id.
    pub fn read(e: &Value) -> Option<Job> {
        Some(Job {
            id: pj::text(e.get("id"))?,
            guest: pj::uint(e.get("guest")),
            target: pj::text(e.get("target")),
            schedule: pj::text(e.get("schedule")),
            rate: pj::text(e.get("rate")),
            comment: pj::text(e.get("comment")),
            disabled: pj::flag(e.get("disable")),
            source: pj::text(e.get("source")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn job_ids_are_vmid_dash_number() {
        assert_eq!(JobId::from_json(&json!("101-0")).unwrap().vmid(), 101);
        for bad in [
            "101", "99-0", "0101-1", "101-", "101-a", "101-0/x", "101-0-1",
        ] {
            assert!(JobId::from_json(&json!(bad)).is_err(), "{bad}");
        }
    }
}
