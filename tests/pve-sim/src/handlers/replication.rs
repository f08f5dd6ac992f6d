//! Storage replication (pve-manager's `PVE::API2::ReplicationConfig` and
//! `PVE::API2::Replication`): the jobs' configuration (`GET
//! /cluster/replication[/{id}]`) and, per node, the state of the jobs
//! whose guest is there (`GET /nodes/{node}/replication`,
//! `.../{id}/status`, `.../{id}/log`, `POST .../{id}/schedule_now`). The
//! model is in [`crate::replication`].

use serde_json::{Map, Value, json};

use super::{Ctx, act::die, pbool};
use crate::digests::{hex, sha1};
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::replication::{self, Job};
use crate::state::Cluster;
use crate::util::now_secs;

/// The job's `replication.cfg` section as the config API returns it.
fn config(job: &Job) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), "local".into());
    m.insert("id".into(), job.id().into());
    m.insert("guest".into(), job.guest.into());
    m.insert("jobnum".into(), job.jobnum.into());
    m.insert("target".into(), job.target.clone().into());
    if let Some(s) = &job.schedule {
        m.insert("schedule".into(), s.clone().into());
    }
    if let Some(r) = job.rate {
        // As Perl prints it: `50`, `12.5`.
        let v = if r.fract() == 0.0 {
            Value::from(r as i64)
        } else {
            Value::from(r)
        };
        m.insert("rate".into(), v);
    }
    if let Some(cm) = &job.comment {
        m.insert("comment".into(), cm.clone().into());
    }
    if job.disable {
        m.insert("disable".into(), pbool(true));
    }
    m.insert("source".into(), job.source.clone().into());
    m
}

/// The config file's digest.
fn digest(c: &Cluster) -> String {
    let text: String = c
        .replication
        .iter()
        .map(|j| Value::Object(config(j)).to_string())
        .collect();
    hex(&sha1(text.as_bytes()))
}

/// `GET /cluster/replication`: the jobs on guests the caller may audit.
pub(crate) fn cluster_index(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let mut jobs: Vec<&Job> = c.replication.iter().collect();
    jobs.sort_by_key(|j| j.id());
    let list = jobs
        .into_iter()
        .filter(|j| ctx.can(&format!("/vms/{}", j.guest), "VM.Audit"))
        .map(|j| Value::Object(config(j)))
        .collect();
    Ok(Reply::Data(Value::Array(list)))
}

fn audit(ctx: &Ctx<'_>, guest: u32) -> Result<(), ApiError> {
    super::act::require(ctx, &format!("/vms/{guest}"), "VM.Audit")
}

fn no_such(id: &str) -> ApiError {
    die(format!("no such replication job '{id}'"))
}

/// `GET /cluster/replication/{id}`.
pub(crate) fn cluster_read(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let id = ctx.params.path("id");
    let job = c
        .replication
        .iter()
        .find(|j| j.id() == id)
        .ok_or_else(|| no_such(id))?;
    audit(ctx, job.guest)?;
    let mut m = config(job);
    m.insert("digest".into(), digest(&c).into());
    Ok(Reply::Data(Value::Object(m)))
}

/// `job_status`: the jobs whose guest is on `node` (never to itself).
fn local_jobs<'c>(c: &'c Cluster, node: &str) -> Vec<&'c Job> {
    let mut jobs: Vec<&Job> = c
        .replication
        .iter()
        .filter(|j| c.guests.get(&j.guest).is_some_and(|g| g.node == node))
        .filter(|j| j.target != node)
        .collect();
    jobs.sort_by_key(|j| j.id());
    jobs
}

/// A job's config plus its state (`$extract_job_status`).
fn status_entry(c: &Cluster, job: &Job) -> Value {
    let st = replication::status(c, job, now_secs());
    let mut m = config(job);
    m.insert("last_sync".into(), st.last_sync.into());
    m.insert("last_try".into(), st.last_try.into());
    m.insert("fail_count".into(), st.fail_count.into());
    if let Some(e) = st.error {
        m.insert("error".into(), e.into());
    }
    if let Some(d) = st.duration {
        m.insert("duration".into(), d.into());
    }
    if let Some(pid) = st.pid {
        m.insert("pid".into(), pid.into());
    }
    m.insert("next_sync".into(), st.next_sync.into());
    let vmtype = c.guests.get(&job.guest).map_or("qemu", |g| g.kind.as_str());
    m.insert("vmtype".into(), vmtype.into());
    Value::Object(m)
}

/// `GET /nodes/{node}/replication[?guest=]`.
pub(crate) fn node_index(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let guest: Option<u32> = ctx.params.get("guest").and_then(|g| g.parse().ok());
    let list = local_jobs(&c, ctx.node)
        .into_iter()
        .filter(|j| guest.is_none_or(|g| g == j.guest))
        .filter(|j| ctx.can(&format!("/vms/{}", j.guest), "VM.Audit"))
        .map(|j| status_entry(&c, j))
        .collect();
    Ok(Reply::Data(Value::Array(list)))
}

/// `GET /nodes/{node}/replication/{id}`: the directory (not proxied).
pub(crate) fn job_index(_ctx: &Ctx<'_>) -> HandlerResult {
    Ok(Reply::Data(json!([
        {"name": "schedule_now"},
        {"name": "log"},
        {"name": "status"},
    ])))
}

/// `GET /nodes/{node}/replication/{id}/status`: only a job of this node.
pub(crate) fn job_status(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let id = ctx.params.path("id");
    let job = local_jobs(&c, ctx.node)
        .into_iter()
        .find(|j| j.id() == id)
        .ok_or_else(|| no_such(id))?;
    audit(ctx, job.guest)?;
    Ok(Reply::Data(status_entry(&c, job)))
}

/// `GET /nodes/{node}/replication/{id}/log`: the last run's log file on
/// this node (`dump_logfile`: `start`, `limit` 50, 0 for all).
pub(crate) fn job_log(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let id = ctx.params.path("id");
    let job = c
        .replication
        .iter()
        .find(|j| j.id() == id)
        .ok_or_else(|| no_such(id))?;
    let node_path = format!("/nodes/{}", ctx.node);
    if !ctx.can(&format!("/vms/{}", job.guest), "VM.Audit") && !ctx.can(&node_path, "Sys.Audit") {
        return Err(ApiError::new(403, "Permission check failed\n"));
    }
    // The log file exists where the job runs.
    if !local_jobs(&c, ctx.node).iter().any(|j| j.id() == id) {
        return Ok(Reply::DataTotal(
            json!([{"n": 1, "t": "unable to open file - No such file or directory"}]),
            1,
        ));
    }
    let lines = replication::status(&c, job, now_secs()).log;
    let int = |k: &str| ctx.params.get(k).and_then(|v| v.parse::<usize>().ok());
    let start = int("start").unwrap_or(0);
    let limit = int("limit").unwrap_or(50);
    let total = lines.len();
    let take = if limit == 0 { usize::MAX } else { limit };
    let mut out: Vec<Value> = lines
        .into_iter()
        .enumerate()
        .skip(start)
        .take(take)
        .map(|(i, t)| json!({"n": i + 1, "t": t}))
        .collect();
    if total == 0 {
        out.push(json!({"n": 1, "t": "no content"}));
    }
    Ok(Reply::DataTotal(Value::Array(out), total.max(1) as u64))
}

/// `POST /nodes/{node}/replication/{id}/schedule_now`: `VM.Replicate` on
/// the id's guest first, then the job must exist; the state file of the
/// node called is changed (a job whose guest is elsewhere has no entry
/// there: nothing happens, as in PVE). Answers `""`, the value PVE's
/// code ends with.
pub(crate) fn schedule_now(ctx: &Ctx<'_>) -> HandlerResult {
    let id = ctx.params.path("id").to_string();
    let guest = id.split('-').next().unwrap_or("");
    super::act::require(ctx, &format!("/vms/{guest}"), "VM.Replicate")?;
    let mut c = ctx.cluster_mut();
    let Some(i) = c.replication.iter().position(|j| j.id() == id) else {
        return Err(no_such(&id));
    };
    let here = local_jobs(&c, ctx.node).iter().any(|j| j.id() == id);
    if here {
        let mut job = c.replication[i].clone();
        replication::schedule_now(&c, &mut job, now_secs());
        c.replication[i] = job;
        c.generation += 1;
    }
    Ok(Reply::Data(Value::String(String::new())))
}
