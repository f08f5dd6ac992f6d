//! `pve_run_replication`: `POST /nodes/{node}/replication/{job}/
//! schedule_now`, a replication job run now rather than at its next
//! scheduled time, on the node that holds its guest.
//!
//! Refused without writing: a job that does not exist, a disabled one
//! (Proxmox would accept and never run it) and one whose guest cannot be
//! found.

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::error::ToolError;
use crate::fetch;
use crate::node_action::{self, NodeActionOutput};
use crate::path::ApiPath;
use crate::replication::{Job, JobId};
use crate::resources;
use crate::route::Route;
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    new:
    /// The job to run.
    pub struct Input {
        /// Job id, e.g. 101-0 (pve_list_replication)
        job: JobId,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_run_replication",
    title: "Run a replication job now",
    description: "Run a storage replication job now instead of at its next scheduled time.",
    annotations: Annotations::write(false, true),
    routes: &[Route::new("POST", "/nodes/{node}/replication/{job}/schedule_now", &[]).once()],
    privileges: [
        // On /vms/<the job's guest>; the job id names it.
        "/vms": "VM.Replicate",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    let execution = input.execution();
    let id = input.job.as_str();
    let jobs = fetch::list(pve, &ApiPath::new("cluster").lit("replication"))?;
    let Some(job) = jobs.iter().filter_map(Job::read).find(|j| j.id == id) else {
        return Err(ToolError::field(
            "job",
            format!("no replication job {id}; pve_list_replication lists them"),
        ));
    };
    if job.disabled {
        return Err(ToolError::Precondition(format!(
            "replication job {id} is disabled, so Proxmox would not run it. Nothing was sent. \
             Enable it first."
        )));
    }
    let vmid = job.guest.unwrap_or(input.job.vmid());
    let guests = resources::fetch_guests(pve)?;
    let Some(guest) = guests.iter().find(|g| g.vmid == vmid) else {
        return Err(ToolError::Precondition(format!(
            "the guest {vmid} of replication job {id} is not in the cluster's resources. \
             Nothing was sent."
        )));
    };
    let node = guest.node.clone();
    let target = job.target.as_deref().unwrap_or("its target");
    let request = WriteRequest::new(
        Method::Post,
        ApiPath::new("nodes")
            .seg(&node)
            .lit("replication")
            .seg(id)
            .lit("schedule_now"),
    );
    let prepared = Prepared::Act {
        request,
        effect: format!("replication job {id} of {vmid} runs now, from {node} to {target}"),
    };
    let found = format!(
        "job {id} replicates {} {vmid} on {node} to {target}{}",
        guest.vm_type.label(),
        job.schedule
            .as_deref()
            .map(|s| format!(", scheduled {s}"))
            .unwrap_or_default()
    );
    node_action::run(pve, &node, found, prepared, execution)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::{Value, json};

    fn fake() -> FakePve {
        FakePve::default()
            .with(
                "/cluster/replication",
                json!([{"id": "101-0", "guest": 101, "target": "pve2", "schedule": "*/15"},
                       {"id": "102-0", "guest": 102, "target": "pve1", "disable": 1}]),
            )
            .with(
                "/cluster/resources?type=vm",
                json!([{"vmid": 101, "type": "qemu", "node": "pve1", "status": "running"}]),
            )
            .answering("POST /nodes/pve1/replication/101-0/schedule_now", Value::Null)
    }

    #[test]
    fn a_job_runs_on_its_guests_node() {
        let mut pve = fake();
        let out = TOOL.call(&mut pve, r#"{"job": "101-0"}"#).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(pve.writes, ["POST /nodes/pve1/replication/101-0/schedule_now "]);
        assert_eq!(out.structured["node"], "pve1");
    }

    #[test]
    fn an_unknown_or_disabled_job_is_refused_before_any_write() {
        for (job, says) in [("101-7", "job: no replication job 101-7"), ("102-0", "is disabled")] {
            let mut pve = fake();
            let e = TOOL
                .call(&mut pve, &json!({"job": job}).to_string())
                .unwrap_err();
            assert!(e.message().contains(says), "{job}: {e}");
            assert!(pve.writes.is_empty());
        }
    }
}
