//! `POST agent/exec` and `GET agent/exec-status`: qemu-server's
//! `qemu_exec`/`qemu_exec_status` over the simulated guest's programs
//! ([`crate::guest_exec`]).

use serde_json::{Map, Value, json};

use super::agent::{agent_error, available, check_agent_error};
use super::{Ctx, pbool};
use crate::errors::{ApiError, HandlerResult, Reply};

/// The argv PVE received: `command` once per element, in order (the
/// parameter layer joins repeats with NUL, as PVE does before it splits
/// an array parameter again).
fn argv(ctx: &Ctx<'_>) -> Vec<String> {
    ctx.params
        .get("command")
        .map(|c| c.split('\0').map(str::to_string).collect())
        .unwrap_or_default()
}

/// `POST agent/exec`: `{"pid": N}`, a fresh pid per call.
pub(crate) fn exec(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let vmid = {
        let g = available(&c, ctx)?;
        check_agent_error(g)?;
        g.vmid
    };
    let argv = argv(ctx);
    let input = ctx.params.get("input-data").map(str::as_bytes);
    let os = c
        .guest_os_mut(vmid)
        .ok_or_else(|| ApiError::new(500, "internal simulator error\n"))?;
    let Some(proc) = crate::guest_exec::run(os, &argv, input) else {
        // qemu-ga reports g_spawn's GError in QERR_QGA_COMMAND_FAILED, and
        // `check_agent_error` prefixes it (glib quotes the program name
        // with U+201C/U+201D).
        let prog = argv.first().map(String::as_str).unwrap_or("");
        return Err(agent_error(&format!(
            "Guest agent command failed, error was 'Failed to execute child process \u{201c}{prog}\u{201d} (No such file or directory)'"
        )));
    };
    let pid = os.spawn(proc);
    Ok(Reply::Data(json!({ "pid": pid })))
}

/// `GET agent/exec-status`: `{"exited":0}` while the process runs, then
/// its exit code and output once. qemu-ga forgets a process when it
/// reports it exited, so asking again (or about a pid it never started,
/// or one started in another VM) is `Invalid parameter 'pid'`.
pub(crate) fn exec_status(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let vmid = {
        let g = available(&c, ctx)?;
        check_agent_error(g)?;
        g.vmid
    };
    let os = c
        .guest_os_mut(vmid)
        .ok_or_else(|| ApiError::new(500, "internal simulator error\n"))?;
    let pid: i64 = ctx
        .params
        .get("pid")
        .and_then(|p| p.parse().ok())
        .unwrap_or(-1);
    let Some(proc) = os.procs.get(&pid) else {
        return Err(agent_error("Invalid parameter 'pid'"));
    };
    if !proc.exited() {
        return Ok(Reply::Data(json!({ "exited": pbool(false) })));
    }
    let Some(proc) = os.procs.remove(&pid) else {
        return Err(agent_error("Invalid parameter 'pid'"));
    };
    let mut m = Map::new();
    m.insert("exited".into(), pbool(true));
    m.insert("exitcode".into(), proc.exitcode.into());
    // qemu-ga sends a stream (and its truncation flag) only when it
    // captured something; PVE decodes it from base64 and as UTF-8.
    if !proc.out.is_empty() {
        m.insert(
            "out-data".into(),
            String::from_utf8_lossy(&proc.out).into_owned().into(),
        );
        if proc.out_truncated {
            m.insert("out-truncated".into(), pbool(true));
        }
    }
    if !proc.err.is_empty() {
        m.insert(
            "err-data".into(),
            String::from_utf8_lossy(&proc.err).into_owned().into(),
        );
        if proc.err_truncated {
            m.insert("err-truncated".into(), pbool(true));
        }
    }
    Ok(Reply::Data(Value::Object(m)))
}
