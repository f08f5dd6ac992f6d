//! `pve_guest_exec`: runs one command in a VM through its guest agent
//! (`POST .../agent/exec`, once) and polls `GET .../agent/exec-status` for
//! the pid Proxmox answered until the process exits or the timeout passes.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::arg::guest::{Argv, Bytes};
use crate::agent_tool::{agent_input, agent_path, prepare};
use crate::agent;
use crate::api::Pve;
use crate::arg::{Flag, Int};
use crate::error::ToolError;
use crate::json as pj;
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, PlannedRequest, WriteRequest};

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_guest_exec",
    title: "Run a command in a VM",
    description: "Run a command (argv, no shell) in a running VM via its guest agent: exit code, stdout, stderr.",
    annotations: Annotations::write(true, false),
    routes: &[
        Route::new(
            "POST",
            "/nodes/{node}/qemu/{vmid}/agent/exec",
            &[Param::arg("command"), Param::from("input-data", "input")],
        )
        .once(),
        Route::new(
            "GET",
            "/nodes/{node}/qemu/{vmid}/agent/exec-status",
            &[Param::answered("pid", "pid")],
        ),
    ],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.GuestAgent.Unrestricted" | "VM.Monitor",
    ],
    run: run,
};

/// Seconds waited unless `timeout` says otherwise.
pub const DEFAULT_TIMEOUT: u64 = 10;
/// Most of stdout and of stderr returned, in bytes.
pub const OUTPUT_MAX: usize = 64 * 1024;
/// Largest stdin Proxmox takes.
pub const INPUT_MAX: usize = 64 * 1024;

const FIRST_POLL: Duration = Duration::from_millis(200);
const LAST_POLL: Duration = Duration::from_secs(1);

agent_input! {
    /// The command to run.
    pub struct Input {
        /// Program and arguments, e.g. ["df","-h"]
        pub command: Argv,
        /// Text fed to stdin
        pub input: Option<Bytes<INPUT_MAX>>,
        /// Seconds to wait (default 10)
        pub timeout: Option<Int<1, 86400>>,
        /// Plan only, send nothing
        #[serde(default)]
        pub dry_run: Flag,
    }
}

/// A command's result, or the plan of a dry run.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ExecOutput {
    /// VM id
    pub vmid: u32,
    /// Node it runs on
    pub node: String,
    /// true: a dry run; nothing was sent and requests is the plan
    pub dry_run: bool,
    /// Whether the command was sent
    pub sent: bool,
    /// What pve-mcp read first
    pub found: String,
    /// The exec request sent, or on a dry run the one that would be
    pub requests: Vec<PlannedRequest>,
    /// The process id in the guest; null if not started
    pub pid: Option<u64>,
    /// Whether the process ended within the timeout
    pub exited: bool,
    /// Its exit code; null if it has not exited (or was killed by a signal)
    pub exit_code: Option<i64>,
    /// Its standard output, at most 64 KiB
    pub stdout: String,
    /// Its standard error, at most 64 KiB
    pub stderr: String,
    /// Bytes of stdout the agent returned
    pub stdout_bytes: u64,
    /// Bytes of stderr the agent returned
    pub stderr_bytes: u64,
    /// stdout is incomplete (the agent's limit, or cut to 64 KiB)
    pub stdout_truncated: bool,
    /// stderr is incomplete (the agent's limit, or cut to 64 KiB)
    pub stderr_truncated: bool,
    /// Milliseconds from sending the command to its end or the timeout
    pub duration_ms: u64,
}

/// `text` cut to at most [`OUTPUT_MAX`] bytes on a character boundary, and
/// whether it was cut.
fn cut(text: &str) -> (String, bool) {
    if text.len() <= OUTPUT_MAX {
        return (text.to_owned(), false);
    }
    let mut end = OUTPUT_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ExecOutput>, ToolError> {
    let limit = Duration::from_secs(input.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0)).min(pve.wait_limit());
    let ready = prepare(pve, input.wanted())?;
    let target = &ready.target;
    let label = target.label();
    let mut request = WriteRequest::new(Method::Post, agent_path(target, "exec"));
    for arg in &input.command.0 {
        request = request.text("command", Some(arg));
    }
    let request = request.text("input-data", input.input.as_ref().map(Bytes::as_str));
    let shown = shown_command(&input.command.0);
    let mut out = ExecOutput {
        vmid: target.vmid,
        node: target.node.clone(),
        dry_run: input.dry_run.0,
        sent: false,
        found: ready.found.clone(),
        requests: vec![request.planned()],
        pid: None,
        exited: false,
        exit_code: None,
        stdout: String::new(),
        stderr: String::new(),
        stdout_bytes: 0,
        stderr_bytes: 0,
        stdout_truncated: false,
        stderr_truncated: false,
        duration_ms: 0,
    };
    if out.dry_run {
        let summary = format!(
            "Dry run, nothing was sent. Would run {shown} in {label} on {} and wait up to {} s. \
             Found: {}.",
            target.node,
            limit.as_secs(),
            out.found
        );
        return Ok(Answer { structured: out, summary });
    }
    let started = pve.elapsed();
    let data = pve.send(&request).map_err(|e| agent::explain(target, e))?;
    out.sent = true;
    let Some(pid) = pj::uint(data.get("pid")) else {
        return Err(ToolError::Upstream(format!(
            "Proxmox ran {shown} in {label} but answered no pid, so its result cannot be read; \
             do not send it again. [POST /api2/json{}]",
            request.path
        )));
    };
    out.pid = Some(pid);
    let status_path = agent_path(target, "exec-status").query("pid", &pid.to_string());
    let mut interval = FIRST_POLL;
    let mut last_report = 0.0;
    let status = loop {
        let status = pve.get(&status_path).map_err(|e| {
            let e = agent::explain(target, e);
            ToolError::Upstream(format!(
                "{} The command was started in {label} (pid {pid}) and may still be running; \
                 do not send it again.",
                e.message()
            ))
        })?;
        let waited = pve.elapsed().saturating_sub(started);
        if pj::flag(status.get("exited")) || waited >= limit {
            out.duration_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
            break status;
        }
        let secs = waited.as_secs_f64().max(0.1);
        let progress = if secs > last_report { secs } else { last_report + 0.01 };
        last_report = progress;
        pve.report_progress(progress, None, &format!("{label}: pid {pid} running for {secs:.1} s"));
        pve.sleep(interval.min(limit - waited));
        interval = (interval + FIRST_POLL).min(LAST_POLL);
    };
    shape(&mut out, &status);
    let summary = if out.exited {
        let code = out.exit_code.map_or_else(|| "no exit code".to_owned(), |c| format!("exit code {c}"));
        format!(
            "{shown} in {label} ended with {code} after {} ms: {} bytes of stdout, {} of stderr{}.",
            out.duration_ms,
            out.stdout_bytes,
            out.stderr_bytes,
            if out.stdout_truncated || out.stderr_truncated { " (truncated)" } else { "" }
        )
    } else {
        format!(
            "{shown} in {label} had not exited after {} s; the process may still be running in \
             the guest (pid {pid}). Its output so far is not available; do not send it again \
             unless running it twice is harmless.",
            limit.as_secs()
        )
    };
    Ok(Answer { structured: out, summary })
}

/// Reads a finished `exec-status` answer into `out`.
fn shape(out: &mut ExecOutput, status: &Value) {
    out.exited = pj::flag(status.get("exited"));
    if !out.exited {
        return;
    }
    out.exit_code = pj::num(status.get("exitcode"))
        .filter(|n| n.fract() == 0.0 && n.abs() < 9.0e15)
        .map(|n| n as i64);
    for (key, flag, text, bytes, truncated) in [
        ("out-data", "out-truncated", &mut out.stdout, &mut out.stdout_bytes, &mut out.stdout_truncated),
        ("err-data", "err-truncated", &mut out.stderr, &mut out.stderr_bytes, &mut out.stderr_truncated),
    ] {
        let data = status.get(key).and_then(Value::as_str).unwrap_or_default();
        let (kept, was_cut) = cut(data);
        *text = kept;
        *bytes = data.len() as u64;
        *truncated = was_cut || pj::flag(status.get(flag));
    }
}

/// The command for a summary: its argv JSON, cut short.
fn shown_command(argv: &[String]) -> String {
    let json = serde_json::to_string(argv).unwrap_or_default();
    if json.len() <= 120 {
        return json;
    }
    let mut end = 117;
    while !json.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…]", &json[..end])
}

#[cfg(test)]
mod tests {
    use crate::agent_tool::testing::{fake, with_status};
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const EXEC: &str = "POST /nodes/pve1/qemu/100/agent/exec";
    const STATUS: &str = "/nodes/pve1/qemu/100/agent/exec-status?pid=4242";

    fn started() -> FakePve {
        fake().answering(EXEC, json!({"pid": 4242}))
    }

    #[test]
    fn the_command_is_sent_once_with_each_argument_and_polled_to_its_end() {
        let mut pve = started().with(
            STATUS,
            json!({"exited": 1, "exitcode": 0, "out-data": "Filesystem  Size\n/dev/sda1 10G\n"}),
        );
        let out = TOOL
            .call(&mut pve, r#"{"vmid": 100, "command": ["df", "-h"], "input": "a b&c"}"#)
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(
            pve.writes,
            ["POST /nodes/pve1/qemu/100/agent/exec command=df&command=-h&input-data=a%20b%26c"]
        );
        let s = &out.structured;
        assert_eq!(s["exited"], true);
        assert_eq!(s["exit_code"], 0);
        assert_eq!(s["pid"], 4242);
        assert_eq!(s["stdout"], "Filesystem  Size\n/dev/sda1 10G\n");
        assert_eq!(s["stdout_bytes"], 31);
        assert_eq!(s["stderr"], "");
        assert_eq!(s["stdout_truncated"], false);
        assert_eq!(s["requests"][0]["params"]["command"], json!(["df", "-h"]));
        assert!(out.summary.contains("ended with exit code 0"), "{}", out.summary);
    }

    #[test]
    fn a_dry_run_sends_nothing() {
        let mut pve = fake();
        let out = TOOL
            .call(&mut pve, r#"{"vmid": 100, "command": ["reboot"], "dry_run": true}"#)
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert!(pve.writes.is_empty());
        assert_eq!(out.structured["sent"], false);
        assert_eq!(
            out.structured["requests"][0]["params"],
            json!({"command": "reboot"})
        );
        assert!(out.summary.starts_with("Dry run, nothing was sent."), "{}", out.summary);
    }

    #[test]
    fn the_wait_stops_at_the_timeout_and_names_the_pid() {
        let mut pve = started().with(STATUS, json!({"exited": 0}));
        let out = TOOL
            .call(&mut pve, r#"{"vmid": 100, "command": ["sleep", "99"], "timeout": 3}"#)
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["exited"], false);
        assert_eq!(out.structured["exit_code"], Value::Null);
        assert_eq!(out.structured["duration_ms"], 3000);
        assert_eq!(pve.clock, Duration::from_secs(3));
        assert!(out.summary.contains("may still be running in the guest (pid 4242)"), "{}", out.summary);
        // 0.2 + 0.4 + 0.6 + 0.8 + 1.0 = 3 s: six polls.
        let polls = pve.requests.iter().filter(|r| r.contains("exec-status")).count();
        assert_eq!(polls, 6, "{:?}", pve.requests);
        assert_eq!(pve.writes.len(), 1);
    }

    #[test]
    fn the_timeout_is_clamped_to_the_wait_limit() {
        let mut pve = started().with(STATUS, json!({"exited": false}));
        let out = TOOL
            .call(&mut pve, r#"{"vmid": 100, "command": ["x"], "timeout": 86400}"#)
            .unwrap();
        assert_eq!(pve.clock, crate::api::DEFAULT_WAIT_LIMIT);
        assert!(out.summary.contains("after 600 s"), "{}", out.summary);
    }

    #[test]
    fn output_is_cut_to_64_kib_on_a_char_boundary() {
        let big = "é".repeat(40_000); // 80,000 bytes
        let mut pve = started().with(
            STATUS,
            json!({"exited": true, "exitcode": 1, "out-data": big, "err-data": "x", "err-truncated": 1}),
        );
        let out = TOOL.call(&mut pve, r#"{"vmid": 100, "command": ["cat"]}"#).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["stdout"].as_str().unwrap().len(), OUTPUT_MAX);
        assert_eq!(s["stdout_bytes"], 80_000);
        assert_eq!(s["stdout_truncated"], true);
        assert_eq!(s["stderr_truncated"], true);
        assert_eq!(s["exit_code"], 1);
    }

    #[test]
    fn refusals_send_nothing() {
        for (mut pve, args, needle) in [
            (fake(), json!({"vmid": 200, "command": ["ls"]}), "is a container"),
            (with_status(json!({"status": "stopped", "agent": 1})), json!({"vmid": 100, "command": ["ls"]}), "pve_start_vm"),
            (with_status(json!({"status": "running"})), json!({"vmid": 100, "command": ["ls"]}), "{\"agent\": \"1\"}"),
            (fake(), json!({"vmid": 100, "command": "ls -l"}), "command: must be a list"),
            (fake(), json!({"vmid": 100, "command": ["ls"], "input": "x".repeat(INPUT_MAX + 1)}), "input: is 65537 bytes"),
            (fake(), json!({"vmid": 100, "command": ["ls"], "timeout": 0}), "timeout: "),
        ] {
            let e = TOOL.call(&mut pve, &args.to_string()).unwrap_err();
            assert!(e.message().contains(needle), "{needle}: {e}");
            assert!(pve.writes.is_empty());
        }
    }

    #[test]
    fn proxmox_and_agent_errors_are_explained() {
        let up = |m: &str| {
            ToolError::Upstream(format!("Proxmox returned an error (HTTP 500 \"{m}\"). [{EXEC}]"))
        };
        let mut pve = fake();
        pve.write_answers.insert(EXEC.into(), Err(up("QEMU guest agent is not running")));
        let e = TOOL.call(&mut pve, r#"{"vmid": 100, "command": ["ls"]}"#).unwrap_err();
        assert!(e.message().contains("start its service"), "{e}");
        let agent = "Agent error: Guest agent command failed, error was 'Failed to execute child \
                     process “nope” (No such file or directory)'";
        let mut pve = fake();
        pve.write_answers.insert(EXEC.into(), Err(up(agent)));
        let e = TOOL.call(&mut pve, r#"{"vmid": 100, "command": ["nope"]}"#).unwrap_err();
        assert!(e.message().contains("full path"), "{e}");
        assert!(e.message().contains("Failed to execute child process"), "{e}");
        // A failed poll says the command was started.
        let mut pve = started().failing(STATUS, up("got timeout"));
        let e = TOOL.call(&mut pve, r#"{"vmid": 100, "command": ["ls"]}"#).unwrap_err();
        assert!(e.message().contains("(pid 4242) and may still be running"), "{e}");
    }
}
