//! The four guest agent tools through the real binary, a real MCP client
//! and the simulator (issue 23): each sends exactly its request (an argv
//! as one `command` per element, booleans as 1/0, `pid` and `file` in the
//! query), its dry run plans what the real call then sends, the policy's
//! command and path patterns refuse a call before anything is sent, the
//! audit log keeps what Proxmox answered rather than what the component
//! says, and each failure names its fix.

use std::path::Path;

use serde_json::{Value, json};

use crate::actions::writes;
use crate::common::*;

/// Commands and files a careful operator lets agents reach, plus the few
/// the test needs to see a failure, stdin and a timeout.
const POLICY: &str = r#"[policy]
default = "read-only"
[policy.tools.pve_guest_exec]
action = "allow"
commands = [
    ["df", "-h"],
    ["cat"],
    ["systemctl", "status", "*"],
    ["sleep", "*"],
    ["no-such-program"],
]
[policy.tools.pve_guest_file_read]
action = "allow"
paths = ["/tmp/*", "/etc/hostname"]
[policy.tools.pve_guest_file_write]
action = "allow"
paths = ["/tmp/*"]
"#;

/// `POLICY` with the audit log (arguments included) at `dir/audit.jsonl`,
/// and the guests' output in it when `record_output`.
fn config(dir: &Path, record_output: bool) -> String {
    // `agent` is a toolset a server offers only when named.
    format!(
        "[tools]\ntoolsets = [\"default\", \"agent\"]\n{POLICY}\n[audit]\npath = \"{}\"\ninclude_arguments = true\nrecord_output = {record_output}\n",
        dir.join("audit.jsonl").display()
    )
}

async fn server(sim: &pve_sim::Simulator, dir: &Path, record_output: bool) -> Server {
    Server::with_config(sim, dir, &config(dir, record_output), Opts::default()).await
}

/// The agent endpoints the simulator was asked for, as `METHOD path?query`.
fn agent_requests(sim: &pve_sim::Simulator) -> Vec<String> {
    sim.requests()
        .iter()
        .filter(|r| r.api_path().contains("/agent/"))
        .map(|r| {
            let query = if r.query.is_empty() {
                String::new()
            } else {
                format!("?{}", r.query)
            };
            format!("{} {}{query}", r.method, r.api_path())
        })
        .collect()
}

#[tokio::test]
async fn agent_info_reads_the_default_sections_and_only_them() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let server = server(&sim, dir.path(), false).await;
        sim.clear_requests();
        let info = server
            .ok("pve_guest_agent_info", json!({"vmid": 100}))
            .await;
        assert!(info["hostname"].is_string(), "{info}");
        assert!(info["os"]["pretty_name"].is_string(), "{info}");
        let fs = info["filesystems"].as_array().expect("filesystems");
        assert!(!fs.is_empty(), "{info}");
        assert!(fs.iter().all(|f| f["mountpoint"].is_string()), "{info}");
        let mut asked = agent_requests(&sim);
        asked.sort();
        assert_eq!(
            asked,
            [
                "GET /nodes/pve1/qemu/100/agent/get-fsinfo",
                "GET /nodes/pve1/qemu/100/agent/get-host-name",
                "GET /nodes/pve1/qemu/100/agent/get-osinfo",
            ]
        );
        assert!(sim.writes().is_empty());
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn exec_sends_the_argv_once_and_reads_the_status_of_its_own_pid() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let server = server(&sim, dir.path(), false).await;
        sim.clear_requests();

        // The dry run reads the guest and sends nothing.
        let dry = server
            .ok(
                "pve_guest_exec",
                json!({"vmid": 100, "command": ["df", "-h"], "dry_run": true}),
            )
            .await;
        assert_eq!(dry["sent"], false, "{dry}");
        assert!(sim.writes().is_empty());
        assert!(
            agent_requests(&sim).is_empty(),
            "{:?}",
            agent_requests(&sim)
        );
        assert_eq!(
            dry["requests"],
            json!([{
                "method": "POST",
                "path": "/api2/json/nodes/pve1/qemu/100/agent/exec",
                "params": {"command": ["df", "-h"]},
            }])
        );

        // The real call sends what the dry run planned, once, then polls
        // the pid Proxmox answered with.
        let ran = server
            .ok(
                "pve_guest_exec",
                json!({"vmid": 100, "command": ["df", "-h"]}),
            )
            .await;
        assert_eq!(ran["requests"], dry["requests"]);
        assert_eq!(ran["exited"], true, "{ran}");
        assert_eq!(ran["exit_code"], 0, "{ran}");
        let stdout = ran["stdout"].as_str().unwrap();
        assert!(stdout.starts_with("Filesystem"), "{ran}");
        assert_eq!(ran["stdout_bytes"], stdout.len() as u64);
        assert_eq!(ran["stdout_truncated"], false);
        assert_eq!(
            writes(&sim),
            ["POST /nodes/pve1/qemu/100/agent/exec command=df\0-h"]
        );
        let pid = ran["pid"].as_u64().expect("a pid");
        let asked = agent_requests(&sim);
        let status: Vec<&String> = asked.iter().filter(|r| r.contains("exec-status")).collect();
        assert!(!status.is_empty(), "{asked:?}");
        for r in &status {
            assert_eq!(
                **r,
                format!("GET /nodes/pve1/qemu/100/agent/exec-status?pid={pid}")
            );
        }

        // Standard input goes as input-data, byte for byte.
        sim.clear_requests();
        let cat = server
            .ok(
                "pve_guest_exec",
                json!({"vmid": 100, "command": ["cat"], "input": "one line\nand a second\n"}),
            )
            .await;
        assert_eq!(cat["stdout"], "one line\nand a second\n", "{cat}");
        let sent = sim.writes();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0].params["command"], "cat");
        assert_eq!(sent[0].params["input-data"], "one line\nand a second\n");

        // The guest's own failure is an answer, not an error.
        let unit = server
            .ok(
                "pve_guest_exec",
                json!({"vmid": 100, "command": ["systemctl", "status", "no-such-unit"]}),
            )
            .await;
        assert_eq!(unit["exit_code"], 4, "{unit}");
        assert!(
            unit["stderr"]
                .as_str()
                .unwrap()
                .contains("could not be found"),
            "{unit}"
        );

        // A program the guest does not have: the agent's error, explained.
        let missing = server
            .err(
                "pve_guest_exec",
                json!({"vmid": 100, "command": ["no-such-program"]}),
            )
            .await;
        assert!(
            missing.contains("Check that the program or file exists in the guest"),
            "{missing}"
        );

        // Past the timeout the call answers with the pid, saying the
        // process may still run.
        let (result, slow) = server
            .ok_result(
                "pve_guest_exec",
                json!({"vmid": 100, "command": ["sleep", "30"], "timeout": 1}),
            )
            .await;
        assert_eq!(slow["exited"], false, "{slow}");
        assert!(slow["pid"].is_u64(), "{slow}");
        let said = summary(&result);
        assert!(said.contains("may still be running"), "{said}");
        assert!(said.contains(&format!("pid {}", slow["pid"])), "{said}");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_file_is_written_and_read_back_with_its_parameters_on_the_wire() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let server = server(&sim, dir.path(), false).await;
        sim.clear_requests();
        let args = json!({"vmid": 100, "path": "/tmp/e2e-note", "content": "written by e2e\n"});
        let mut dry_args = args.clone();
        dry_args["dry_run"] = json!(true);
        let dry = server.ok("pve_guest_file_write", dry_args).await;
        assert!(sim.writes().is_empty());
        let wrote = server.ok("pve_guest_file_write", args).await;
        assert_eq!(wrote["requests"], dry["requests"], "{wrote}");
        // Text: PVE base64-encodes it for the agent (encode=1).
        assert_eq!(
            writes(&sim),
            ["POST /nodes/pve1/qemu/100/agent/file-write content=written by e2e\n&encode=1&file=/tmp/e2e-note"]
        );
        sim.clear_requests();
        let read = server
            .ok("pve_guest_file_read", json!({"vmid": 100, "path": "/tmp/e2e-note"}))
            .await;
        assert_eq!(read["content"], "written by e2e\n", "{read}");
        assert_eq!(read["encoding"], "text");
        assert_eq!(read["truncated"], false);
        let asked = agent_requests(&sim);
        assert_eq!(asked.len(), 1, "{asked:?}");
        let request = &sim.requests()[sim.requests().len() - 1];
        assert_eq!(request.params["file"], "/tmp/e2e-note");
        assert_eq!(request.params["decode"], "0");
        assert!(request.params.contains_key("count"), "{request:?}");

        // Bytes that are not UTF-8: base64 both ways, sent as is
        // (encode=0).
        sim.clear_requests();
        server
            .ok(
                "pve_guest_file_write",
                json!({"vmid": 100, "path": "/tmp/e2e-bytes", "content": "AAEC/w==",
                    "encoding": "base64"}),
            )
            .await;
        assert_eq!(
            writes(&sim),
            ["POST /nodes/pve1/qemu/100/agent/file-write content=AAEC/w==&encode=0&file=/tmp/e2e-bytes"]
        );
        let bytes = server
            .ok(
                "pve_guest_file_read",
                json!({"vmid": 100, "path": "/tmp/e2e-bytes"}),
            )
            .await;
        assert_eq!(bytes["encoding"], "base64", "{bytes}");
        assert_eq!(bytes["content"], "AAEC/w==", "{bytes}");
        assert_eq!(bytes["bytes"], 4, "{bytes}");
        assert_no_schema_violations(&sim);

        // The log names the file and holds its content as size and
        // digest, in the call's arguments and in the request sent alike.
        server.stop().await;
        let log = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
        assert!(!log.contains("written by e2e"), "{log}");
        let shown = format!(
            "[not shown: 15 bytes, sha256 {}]",
            sha256_hex(b"written by e2e\n")
        );
        let records = audit_records(&dir.path().join("audit.jsonl"));
        let write = |kind: &str, method: Option<&str>| {
            records
                .iter()
                .find(|r| {
                    r["kind"] == kind
                        && r["tool"] == "pve_guest_file_write"
                        && method.is_none_or(|m| r["method"] == m)
                })
                .unwrap_or_else(|| panic!("no {kind} record of the write: {log}"))
                .clone()
        };
        let call = write("call", None);
        assert_eq!(call["args"]["content"], shown.as_str(), "{call}");
        assert_eq!(call["args"]["path"], "/tmp/e2e-note", "{call}");
        let sent = write("egress", Some("POST"));
        assert_eq!(sent["params"]["values"]["content"], shown.as_str(), "{sent}");
        assert_eq!(sent["params"]["values"]["file"], "/tmp/e2e-note", "{sent}");
    })
    .await;
}

/// The patterns are decided on the arguments, in the host, before the
/// component runs: nothing at all reaches Proxmox.
#[tokio::test]
async fn commands_and_paths_outside_the_policy_are_refused_before_anything_is_sent() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let server = server(&sim, dir.path(), false).await;
        sim.clear_requests();
        for (tool, args, expected) in [
            (
                "pve_guest_exec",
                json!({"vmid": 100, "command": ["systemctl", "restart", "nginx"]}),
                r#"the closest is ["systemctl","status","*"], which wants "status" at argument 2, not "restart""#,
            ),
            (
                "pve_guest_exec",
                json!({"vmid": 100, "command": ["df", "-h", "/"]}),
                "matches no pattern",
            ),
            (
                "pve_guest_exec",
                json!({"vmid": 100, "command": ["sh", "-c", "df -h"]}),
                r#"its program "sh" is a shell"#,
            ),
            (
                "pve_guest_file_read",
                json!({"vmid": 100, "path": "/etc/shadow"}),
                "/etc/shadow",
            ),
            (
                "pve_guest_file_read",
                json!({"vmid": 100, "path": "/tmp/../etc/shadow"}),
                "path",
            ),
            (
                "pve_guest_file_write",
                json!({"vmid": 100, "path": "/etc/hostname", "content": "x"}),
                "/etc/hostname",
            ),
        ] {
            let message = server.err(tool, args.clone()).await;
            assert!(message.contains(expected), "{tool}({args}): {message}");
        }
        assert_eq!(sim.requests(), [], "a refused call sent something");
    })
    .await;
}

/// Each state in which the agent cannot answer is refused with its fix
/// before the agent is asked.
#[tokio::test]
async fn guests_the_agent_cannot_reach_are_refused_with_the_fix() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let server = server(&sim, dir.path(), false).await;
        sim.clear_requests();
        let df = json!(["df", "-h"]);
        for (vmid, expected) in [
            (106, "pct exec has no API endpoint"),
            (104, "Start it first (pve_start_vm)"),
            (101, "pve_set_vm_config"),
        ] {
            let message = server
                .err("pve_guest_exec", json!({"vmid": vmid, "command": df}))
                .await;
            assert!(message.contains(expected), "VM {vmid}: {message}");
            assert!(message.contains("Nothing was sent"), "VM {vmid}: {message}");
        }
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        assert!(
            agent_requests(&sim).is_empty(),
            "{:?}",
            agent_requests(&sim)
        );
        // An agent configured but not answering is known only once asked.
        let message = server
            .err("pve_guest_exec", json!({"vmid": 103, "command": df}))
            .await;
        assert!(
            message.contains("agent in VM 103 is not running: install the qemu-guest-agent"),
            "{message}"
        );
    })
    .await;
}

/// A token without the agent's privileges gets their PVE 9 and PVE 8
/// names and the command that grants them.
#[tokio::test]
async fn a_missing_agent_privilege_is_named_with_the_grant() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::with_config(
            &sim,
            dir.path(),
            &config(dir.path(), false),
            Opts::auditor(),
        )
        .await;
        let message = server
            .err("pve_guest_agent_info", json!({"vmid": 100}))
            .await;
        for part in ["VM.GuestAgent.Audit", "VM.Monitor", "pveum"] {
            assert!(message.contains(part), "{part}: {message}");
        }
    })
    .await;
}

/// The audit log keeps the argv as sent and, from Proxmox's own answer,
/// the exit code and the size and digest of the output; the output itself
/// only under `record_output = true`.
#[tokio::test]
async fn the_audit_log_holds_the_argv_and_what_proxmox_answered() {
    within(async {
        for record_output in [false, true] {
            let sim = simulator().await;
            let dir = tempfile::tempdir().unwrap();
            let server = server(&sim, dir.path(), record_output).await;
            let ran = server
                .ok(
                    "pve_guest_exec",
                    json!({"vmid": 100, "command": ["df", "-h"]}),
                )
                .await;
            server.stop().await;
            let stdout = ran["stdout"].as_str().unwrap().to_owned();
            let records = audit_records(&dir.path().join("audit.jsonl"));
            let of_exec: Vec<&Value> = records
                .iter()
                .filter(|r| r["tool"] == "pve_guest_exec")
                .collect();
            let call = of_exec
                .iter()
                .find(|r| r["kind"] == "call")
                .unwrap_or_else(|| panic!("no call record: {of_exec:?}"));
            assert_eq!(call["args"]["command"], json!(["df", "-h"]), "{call}");
            let egress: Vec<&&Value> = of_exec.iter().filter(|r| r["kind"] == "egress").collect();
            let exec = egress
                .iter()
                .find(|r| r["method"] == "POST")
                .unwrap_or_else(|| panic!("no exec record: {egress:?}"));
            assert_eq!(
                exec["params"]["values"]["command"],
                json!(["df", "-h"]),
                "{exec}"
            );
            let status = egress
                .iter()
                .rev()
                .find(|r| {
                    r["path"]
                        .as_str()
                        .unwrap_or_default()
                        .ends_with("/exec-status")
                })
                .unwrap_or_else(|| panic!("no exec-status record: {egress:?}"));
            let fields = &status["answer"]["fields"];
            assert_eq!(fields["exitcode"], 0, "{status}");
            assert_eq!(fields["out-data"]["bytes"], stdout.len() as u64, "{status}");
            assert_eq!(
                fields["out-data"]["sha256"],
                sha256_hex(stdout.as_bytes()),
                "{status}"
            );
            if record_output {
                assert_eq!(fields["out-data"]["text"], stdout.as_str(), "{status}");
            } else {
                assert!(fields["out-data"].get("text").is_none(), "{status}");
                let log = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
                assert!(!log.contains("Filesystem"), "output in the log: {log}");
            }
        }
    })
    .await;
}
