//! Task lists, status and logs (`PVE::API2::Tasks`, `/cluster/tasks`).

use serde_json::{Map, Value, json};

use super::Ctx;
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::state::Task;
use crate::util::civil;

/// `user@realm` or `user@realm!token`, as task owners are recorded.
pub(crate) fn authid(ctx: &Ctx<'_>) -> String {
    match ctx.ident {
        Some(i) => match &i.tokenid {
            Some(t) => format!("{}!{t}", i.userid),
            None => i.userid.clone(),
        },
        None => String::new(),
    }
}

/// `$convert_token_task`: `root@pam!mcp` becomes `user` + `tokenid`.
fn put_user(t: &Task, m: &mut Map<String, Value>) {
    match t.user.split_once('!') {
        Some((u, tok)) => {
            m.insert("user".into(), u.into());
            m.insert("tokenid".into(), tok.into());
        }
        None => {
            m.insert("user".into(), t.user.clone().into());
        }
    }
}

fn base_entry(t: &Task, pstart: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("upid".into(), t.upid.clone().into());
    m.insert("node".into(), t.node.clone().into());
    m.insert("pid".into(), t.pid.into());
    if pstart {
        m.insert("pstart".into(), t.pstart.into());
    }
    m.insert("starttime".into(), t.starttime.into());
    m.insert("type".into(), t.ty.clone().into());
    m.insert("id".into(), t.id.clone().into());
    put_user(t, &mut m);
    m
}

/// `upid_normalize_status_type`.
fn status_type(status: Option<&str>) -> &'static str {
    match status {
        None => "unknown",
        Some("OK") => "ok",
        Some(s) if s.starts_with("WARNINGS") => "warning",
        Some("unexpected status") => "unknown",
        Some(_) => "error",
    }
}

fn int_param(ctx: &Ctx<'_>, k: &str) -> Option<u64> {
    ctx.params
        .get(k)
        .and_then(|v| v.trim_start_matches('+').parse().ok())
}

/// `GET /nodes/{node}/tasks`.
pub(crate) fn node_tasks(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let p = ctx.params;
    let me = authid(ctx);
    let auditor = ctx.can(&format!("/nodes/{}", ctx.node), "Sys.Audit");
    let start = int_param(ctx, "start").unwrap_or(0) as usize;
    let limit = int_param(ctx, "limit").unwrap_or(50) as usize;
    let since = int_param(ctx, "since");
    let until = int_param(ctx, "until");
    let source = p.get("source").unwrap_or("archive");
    let errors = p.get("errors") == Some("1");
    let userfilter = p
        .get("userfilter")
        .filter(|s| !s.is_empty())
        .map(str::to_lowercase);
    let typefilter = p.get("typefilter").filter(|s| !s.is_empty());
    let vmid = p.get("vmid");
    let statusfilter: Option<Vec<String>> = p.get("statusfilter").map(|v| {
        v.split([',', ';', ' ', '\0'])
            .filter(|s| !s.is_empty())
            .map(str::to_lowercase)
            .collect()
    });
    let matching = c.tasks.iter().filter(|t| {
        t.node == ctx.node
            && (auditor || t.user == me)
            && match source {
                "active" => t.status.is_none(),
                "all" => true,
                _ => t.status.is_some(),
            }
            && !(errors && t.status.as_deref() == Some("OK"))
            && userfilter
                .as_ref()
                .is_none_or(|u| t.user.to_lowercase().contains(u.as_str()))
            && typefilter.is_none_or(|ty| ty == t.ty)
            && vmid.is_none_or(|v| v == t.id)
            && since.is_none_or(|s| t.starttime >= s)
            && until.is_none_or(|u| t.starttime <= u)
            && statusfilter
                .as_ref()
                .is_none_or(|f| f.iter().any(|x| x == status_type(t.status.as_deref())))
    });
    let mut total = 0u64;
    let mut out = Vec::new();
    for (i, t) in matching.enumerate() {
        total += 1;
        if i < start || (limit > 0 && out.len() >= limit) {
            continue;
        }
        let mut m = base_entry(t, true);
        match (&t.status, t.endtime) {
            (Some(s), Some(e)) => {
                m.insert("endtime".into(), e.into());
                m.insert("status".into(), s.clone().into());
            }
            _ => {
                m.insert("status".into(), "RUNNING".into());
            }
        }
        out.push(Value::Object(m));
    }
    Ok(Reply::DataTotal(Value::Array(out), total))
}

/// `GET /cluster/tasks`: the cluster-wide recent task list (no
/// parameters at all).
pub(crate) fn cluster_tasks(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let me = authid(ctx);
    let all = ctx.can("/", "Sys.Audit");
    let out = c
        .tasks
        .iter()
        .filter(|t| all || t.user == me)
        .map(|t| {
            let mut m = base_entry(t, false);
            if let (Some(s), Some(e)) = (&t.status, t.endtime) {
                m.insert("endtime".into(), e.into());
                m.insert("status".into(), s.clone().into());
            }
            Value::Object(m)
        })
        .collect();
    Ok(Reply::Data(Value::Array(out)))
}

/// `PVE::Tools::upid_decode`'s regex.
fn valid_upid(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("UPID:") else {
        return false;
    };
    let Some(body) = rest.strip_suffix(':') else {
        return false;
    };
    let parts: Vec<&str> = body.split(':').collect();
    if parts.len() != 7 {
        return false;
    }
    let hexn = |s: &str, lens: &[usize]| {
        lens.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
    };
    let node = parts[0].as_bytes();
    let node_ok = !node.is_empty()
        && node[0].is_ascii_alphanumeric()
        && node[node.len() - 1].is_ascii_alphanumeric()
        && node.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-');
    let field = |s: &str| !s.contains(char::is_whitespace) && !s.contains('/');
    node_ok
        && hexn(parts[1], &[8])
        && hexn(parts[2], &[8, 9])
        && hexn(parts[3], &[8])
        && !parts[4].is_empty()
        && field(parts[4])
        && field(parts[5])
        && !parts[6].is_empty()
        && field(parts[6])
}

/// Finds the task like PVE (parse, then look for the log file on this
/// node), then applies the owner-or-`Sys.Audit` rule.
fn find_task<'c>(c: &'c crate::state::Cluster, ctx: &Ctx<'_>) -> Result<&'c Task, ApiError> {
    let upid = ctx.params.path("upid");
    if !valid_upid(upid) {
        return Err(ApiError::param("upid", "unable to parse worker upid"));
    }
    let t = c
        .tasks
        .iter()
        .find(|t| t.upid == upid && t.node == ctx.node)
        .ok_or_else(|| ApiError::param("upid", "no such task"))?;
    if t.user != authid(ctx) {
        let path = format!("/nodes/{}", ctx.node);
        if !ctx.can(&path, "Sys.Audit") {
            return Err(ApiError::perm(&path, "Sys.Audit"));
        }
    }
    Ok(t)
}

/// `GET /nodes/{node}/tasks/{upid}/status`.
pub(crate) fn task_status(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let t = find_task(&c, ctx)?;
    let mut m = base_entry(t, true);
    match &t.status {
        Some(s) => {
            m.insert("status".into(), "stopped".into());
            m.insert("exitstatus".into(), s.clone().into());
        }
        None => {
            m.insert("status".into(), "running".into());
        }
    }
    Ok(Reply::Data(Value::Object(m)))
}

fn stamp(t: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

/// The task's log file, final `TASK ...` line included once finished.
pub(crate) fn log_lines(t: &Task) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(t.log_lines + 1);
    if let Some(written) = &t.log {
        out.extend(written.iter().cloned());
        push_end_line(t, &mut out);
        return out;
    }
    match t.ty.as_str() {
        "vzdump" => {
            let guests: Vec<u32> = if t.id.is_empty() {
                vec![100, 101, 104, 106, 108]
            } else {
                vec![t.id.parse().unwrap_or(100)]
            };
            let ids: Vec<String> = guests.iter().map(u32::to_string).collect();
            out.push(format!(
                "INFO: starting new backup job: vzdump {} --storage nfs-backup --mode snapshot \
                 --compress zstd --notes-template '{{{{guestname}}}} nightly' --mailnotification failure",
                ids.join(" ")
            ));
            let per = (t.log_lines.saturating_sub(2) / guests.len()).max(4);
            for (gi, id) in guests.iter().enumerate() {
                let at = t.starttime + 3 + gi as u64 * 240;
                let kind = if matches!(id, 106..=109 | 200 | 302 | 303) {
                    "lxc"
                } else {
                    "qemu"
                };
                out.push(format!("INFO: Starting Backup of VM {id} ({kind})"));
                out.push(format!("INFO: Backup started at {}", stamp(at)));
                out.push("INFO: status = running".into());
                let steps = per.saturating_sub(5).max(1);
                for i in 1..=steps {
                    let pct = i * 100 / steps;
                    out.push(format!(
                        "INFO: {pct:3}% ({:.1} GiB of 32.0 GiB) in {}s, read: 412.3 MiB/s, write: 398.0 MiB/s",
                        32.0 * pct as f64 / 100.0,
                        i * 2
                    ));
                }
                out.push(format!(
                    "INFO: Finished Backup of VM {id} ({:02}:{:02}:{:02})",
                    0, 3, 58
                ));
                if out.len() >= t.log_lines {
                    break;
                }
            }
            if t.status
                .as_deref()
                .is_some_and(|s| s.starts_with("WARNINGS"))
            {
                out.push("WARN: vzdump: unable to honor bwlimit (ignored)".into());
                out.push("WARN: prune: 1 backup group skipped (protected)".into());
            }
            if t.status.is_some() {
                while out.len() + 1 < t.log_lines {
                    out.push(format!("INFO: prune: kept {} backup(s)", out.len() % 7 + 1));
                }
                out.push("INFO: Backup job finished successfully".into());
            }
        }
        ty => {
            out.push(format!("starting task {ty} for '{}'", t.id));
            while out.len() < t.log_lines.saturating_sub(1) {
                out.push(format!("{ty}: step {} done", out.len()));
            }
            if let Some(s) = &t.status
                && let Some(n) = s.strip_prefix("WARNINGS: ")
            {
                for i in 0..n.parse::<usize>().unwrap_or(1) {
                    out.push(format!("WARN: warning {} of {n}", i + 1));
                }
            }
        }
    }
    // Pad to the advertised length (long logs are exactly that long).
    while out.len() < t.log_lines {
        out.push(format!("INFO: {}", out.len()));
    }
    push_end_line(t, &mut out);
    out
}

/// The final `TASK ...` line of a finished task.
fn push_end_line(t: &Task, out: &mut Vec<String>) {
    match t.status.as_deref() {
        None => {}
        Some("OK") => out.push("TASK OK".into()),
        Some(s) if s.starts_with("WARNINGS: ") => out.push(format!("TASK {s}")),
        Some(s) => out.push(format!("TASK ERROR: {s}")),
    }
}

/// `DELETE /nodes/{node}/tasks/{upid}`: stops a running task. The owner
/// may; anyone else needs `Sys.Modify` on the node.
pub(crate) fn task_stop(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let upid = ctx.params.path("upid");
    if !valid_upid(upid) {
        return Err(ApiError::param("upid", "unable to parse worker upid"));
    }
    let Some(t) = c
        .tasks
        .iter()
        .find(|t| t.upid == upid && t.node == ctx.node)
    else {
        return Err(ApiError::param("upid", "no such task"));
    };
    if t.user != authid(ctx) {
        let path = format!("/nodes/{}", ctx.node);
        if !ctx.can(&path, "Sys.Modify") {
            return Err(ApiError::perm(&path, "Sys.Modify"));
        }
    }
    crate::work::stop(&mut c, upid);
    Ok(Reply::Data(Value::Null))
}

/// `GET /nodes/{node}/tasks/{upid}/log`.
pub(crate) fn task_log(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let t = find_task(&c, ctx)?;
    let start = int_param(ctx, "start").unwrap_or(0) as usize;
    let limit = int_param(ctx, "limit").unwrap_or(50) as usize;
    let lines = log_lines(t);
    let total = lines.len() as u64;
    let take = if limit == 0 { usize::MAX } else { limit };
    let out: Vec<Value> = lines
        .into_iter()
        .enumerate()
        .skip(start)
        .take(take)
        .map(|(i, l)| json!({"n": i + 1, "t": l}))
        .collect();
    Ok(Reply::DataTotal(Value::Array(out), total))
}
