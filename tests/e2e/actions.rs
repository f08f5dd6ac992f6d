//! The write tools against the stateful simulator, through the real binary
//! and an rmcp client: each action changes the simulated guest, sends
//! exactly the request it plans (schema-valid), and sends nothing on a dry
//! run, a failed precondition or a refusal.

use serde_json::{Value, json};

use crate::common::*;
use crate::policy_harness::*;

/// The power tools, allowed by name.
const POWER_POLICY: &str = "
[policy.tools.pve_start_vm]
action = \"allow\"
[policy.tools.pve_shutdown_vm]
action = \"allow\"
[policy.tools.pve_stop_vm]
action = \"allow\"
[policy.tools.pve_reboot_vm]
action = \"allow\"
[policy.tools.pve_suspend_vm]
action = \"allow\"
[policy.tools.pve_resume_vm]
action = \"allow\"
";

/// A policy enabling each of `tools` by a rule of its own.
pub fn allow(tools: &[&str]) -> String {
    tools
        .iter()
        .map(|t| format!("[policy.tools.{t}]\naction = \"allow\"\n"))
        .collect()
}

/// `METHOD /api/path params` of every write the simulator saw.
pub fn writes(sim: &pve_sim::Simulator) -> Vec<String> {
    sim.writes()
        .iter()
        .map(|w| {
            let params: Vec<String> = w.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{} {} {}", w.method, w.api_path(), params.join("&"))
                .trim_end()
                .to_owned()
        })
        .collect()
}

fn status(sim: &pve_sim::Simulator, vmid: u32) -> &'static str {
    sim.guest(vmid).expect("the guest exists").status
}

#[tokio::test]
async fn power_actions_change_the_guest_and_send_exactly_their_request() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, POWER_POLICY).await;
        // A stopped VM, looked up by vmid alone, started and waited for.
        let out = p
            .server
            .ok("pve_start_vm", json!({"vmid": 104, "wait": true}))
            .await;
        assert_eq!(out["sent"], true, "{out}");
        assert_eq!(out["resolved"]["node"], true, "{out}");
        assert_eq!(out["task"]["type"], "qmstart", "{out}");
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        assert_eq!(status(&sim, 104), "running");
        assert_eq!(writes(&sim), ["POST /nodes/pve1/qemu/104/status/start"]);

        // Shutdown with its own parameters, spelled as PVE wants them.
        let out = p
            .server
            .ok(
                "pve_shutdown_vm",
                json!({"vmid": 104, "timeout": 30, "force_stop": true, "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        assert_eq!(status(&sim, 104), "stopped");
        assert_eq!(
            writes(&sim)[1],
            "POST /nodes/pve1/qemu/104/status/shutdown forceStop=1&timeout=30"
        );

        // A container: the lxc endpoints.
        p.server
            .ok("pve_start_vm", json!({"vmid": 108, "wait": true}))
            .await;
        assert_eq!(status(&sim, 108), "running");
        p.server
            .ok(
                "pve_stop_vm",
                json!({"vmid": 108, "vm_type": "lxc", "node": "pve1", "wait": true}),
            )
            .await;
        assert_eq!(status(&sim, 108), "stopped");

        // Pause and continue a running VM; reboot it.
        p.server
            .ok("pve_suspend_vm", json!({"vmid": 101, "wait": true}))
            .await;
        assert_eq!(status(&sim, 101), "paused");
        p.server
            .ok("pve_resume_vm", json!({"vmid": 101, "wait": true}))
            .await;
        assert_eq!(status(&sim, 101), "running");
        let out = p
            .server
            .ok("pve_reboot_vm", json!({"vmid": 101, "wait": true}))
            .await;
        assert_eq!(out["task"]["type"], "qmreboot", "{out}");
        assert_eq!(
            writes(&sim)[2..],
            [
                "POST /nodes/pve1/lxc/108/status/start",
                "POST /nodes/pve1/lxc/108/status/stop",
                "POST /nodes/pve1/qemu/101/status/suspend",
                "POST /nodes/pve1/qemu/101/status/resume",
                "POST /nodes/pve1/qemu/101/status/reboot",
            ]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_dry_run_nothing_to_do_and_a_held_lock_send_no_write() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, POWER_POLICY).await;
        let out = p
            .server
            .ok("pve_stop_vm", json!({"vmid": 101, "dry_run": true}))
            .await;
        assert_eq!(out["dry_run"], true, "{out}");
        assert_eq!(out["sent"], false, "{out}");
        assert_eq!(
            out["requests"],
            json!([{"method": "POST", "path": "/api2/json/nodes/pve1/qemu/101/status/stop", "params": {}}])
        );
        assert!(out["found"].as_str().unwrap().contains("is running"), "{out}");
        assert!(out["effect"].as_str().unwrap().contains("pulling the plug"), "{out}");

        let (result, out) = p
            .server
            .ok_result("pve_start_vm", json!({"vmid": 101}))
            .await;
        assert_eq!(out["sent"], false, "{out}");
        assert!(summary(&result).contains("already running"), "{}", summary(&result));

        // 103 is held by a backup.
        let message = p.server.err("pve_shutdown_vm", json!({"vmid": 103})).await;
        assert!(message.contains("locked (backup)"), "{message}");
        assert!(message.contains("Nothing was sent"), "{message}");

        let message = p.server.err("pve_reboot_vm", json!({"vmid": 104})).await;
        assert!(message.contains("not running") && message.contains("pve_start_vm"), "{message}");

        assert_eq!(writes(&sim), Vec::<String>::new());
        assert_eq!(status(&sim, 101), "running");
    })
    .await;
}

#[tokio::test]
async fn a_write_tool_the_policy_does_not_name_is_refused_before_anything_is_sent() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let message = server.err("pve_stop_vm", json!({"vmid": 101})).await;
        assert!(
            message.contains("[policy.tools.pve_stop_vm]")
                && message.contains("action = \"allow\""),
            "{message}"
        );
        assert!(sim.requests().is_empty(), "{:?}", paths(&sim));
        // confirm grants nothing.
        let message = server
            .err("pve_stop_vm", json!({"vmid": 101, "confirm": true}))
            .await;
        assert!(message.contains("[policy.tools.pve_stop_vm]"), "{message}");
        assert!(sim.requests().is_empty(), "{:?}", paths(&sim));
    })
    .await;
}

#[tokio::test]
async fn an_ha_managed_guest_answers_with_a_queued_ha_task() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, POWER_POLICY).await;
        let (result, out) = p
            .server
            .ok_result("pve_shutdown_vm", json!({"vmid": 100, "wait": true}))
            .await;
        assert_eq!(out["task"]["type"], "hastop", "{out}");
        assert_eq!(out["task"]["ha"], true, "{out}");
        assert!(
            out["found"].as_str().unwrap().contains("managed by HA"),
            "{out}"
        );
        assert!(
            summary(&result).contains("HA manager"),
            "{}",
            summary(&result)
        );
    })
    .await;
}

#[tokio::test]
async fn a_task_is_waited_for_by_its_upid_and_a_free_vmid_is_found() {
    within(async {
        let sim = simulator().await;
        sim.set_task_duration_for("qmstart", std::time::Duration::from_secs(2));
        let p = with_policy(&sim, POWER_POLICY).await;
        let out = p.server.ok("pve_start_vm", json!({"vmid": 110})).await;
        let upid = out["task"]["upid"].as_str().expect("a UPID").to_owned();
        assert_eq!(out["task"]["end"], Value::Null, "{out}");
        assert!(sim.task(&upid).expect("the task").running());
        let waited = p
            .server
            .ok("pve_wait_task", json!({"upid": upid, "timeout": 60}))
            .await;
        assert_eq!(waited["status"], "stopped", "{waited}");
        assert_eq!(waited["outcome"], "ok", "{waited}");
        assert_eq!(waited["type"], "qmstart", "{waited}");
        assert_eq!(status(&sim, 110), "running");

        let next = p.server.ok("pve_get_next_vmid", json!({})).await;
        assert_eq!(next["vmid"], 111, "{next}");
        let message = p
            .server
            .err("pve_get_next_vmid", json!({"vmid": 100}))
            .await;
        assert!(message.contains("100"), "{message}");
    })
    .await;
}

#[tokio::test]
async fn a_writes_audit_record_has_its_request_status_upid_and_exit_status() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let config = dir.path().join("pve-mcp.toml");
        std::fs::write(
            &config,
            format!("[audit]\npath = \"{}\"\n", audit.display()),
        )
        .unwrap();
        let p = with_policy_opts(
            &sim,
            POWER_POLICY,
            Opts::default()
                .arg("--config")
                .arg(config.to_str().unwrap()),
        )
        .await;
        let out = p
            .server
            .ok("pve_start_vm", json!({"vmid": 104, "wait": true}))
            .await;
        let upid = out["task"]["upid"].as_str().unwrap();
        let text = std::fs::read_to_string(&audit).unwrap();
        let call: Value = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|r| r["kind"] == "call" && r["tool"] == "pve_start_vm")
            .expect("the call's record");
        assert_eq!(call["task"]["upid"], upid, "{call}");
        assert_eq!(call["task"]["exitstatus"], "OK", "{call}");
        let post: Vec<&Value> = call["upstream"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["method"] == "POST")
            .collect();
        assert_eq!(post.len(), 1, "{call}");
        assert_eq!(
            post[0]["path"],
            "/api2/json/nodes/pve1/qemu/104/status/start"
        );
        assert_eq!(post[0]["status"], 200);
    })
    .await;
}
