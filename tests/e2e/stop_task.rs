//! `pve_stop_task` through the real binary against the stateful
//! simulator: a running task is stopped with exactly one DELETE, what it
//! would have done is not done, an ended task is refused saying how it
//! ended, and the hostile component cannot stop another task or the same
//! one twice.

use std::time::Duration;

use serde_json::json;

use crate::actions::{allow, writes};
use crate::common::*;
use crate::guest_agent_gate::{outcomes, refusal_rules};
use crate::policy_harness::*;

/// Starts VM 104 and CT 108 (both stopped, on pve1) with tasks that run
/// for ten minutes, through a server under `policy`; their UPIDs.
async fn two_long_starts(sim: &pve_sim::Simulator, server: &Server) -> (String, String) {
    sim.set_task_duration(Duration::from_secs(600));
    let mut upids = Vec::new();
    for vmid in [104, 108] {
        let out = server.ok("pve_start_vm", json!({"vmid": vmid})).await;
        let upid = out["task"]["upid"]
            .as_str()
            .expect("a start task")
            .to_owned();
        assert!(sim.task(&upid).expect("the task").running());
        upids.push(upid);
    }
    (upids[0].clone(), upids[1].clone())
}

#[tokio::test]
async fn a_running_task_is_stopped_with_one_delete_and_an_ended_one_is_refused() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, &allow(&["pve_start_vm", "pve_stop_task"])).await;
        let (vm, ct) = two_long_starts(&sim, &p.server).await;
        sim.clear_requests();

        let dry = p
            .server
            .ok("pve_stop_task", json!({"upid": vm, "dry_run": true}))
            .await;
        assert_eq!(dry["sent"], false, "{dry}");
        assert!(sim.writes().is_empty());
        assert!(sim.task(&vm).unwrap().running());

        let stopped = p
            .server
            .ok("pve_stop_task", json!({"upid": vm, "wait": true}))
            .await;
        assert_eq!(stopped["requests"], dry["requests"], "{stopped}");
        assert_eq!(stopped["found"], "task qmstart on pve1 is running");
        assert_eq!(writes(&sim), [format!("DELETE /nodes/pve1/tasks/{vm}")]);
        let task = sim.task(&vm).unwrap();
        assert_eq!(task.exitstatus.as_deref(), Some("interrupted by signal"));
        assert_eq!(
            stopped["task"]["end"]["exitstatus"], "interrupted by signal",
            "{stopped}"
        );
        // The start it interrupted never happened; the other task runs on.
        assert_eq!(sim.guest(104).unwrap().status, "stopped");
        assert!(sim.task(&ct).unwrap().running());

        // Stopping it again: refused, saying how it ended, nothing sent.
        sim.clear_requests();
        let again = p.server.err("pve_stop_task", json!({"upid": vm})).await;
        assert!(
            again.contains("already ended (with \"interrupted by signal\")"),
            "{again}"
        );
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());

        // Bad input is refused before any request.
        sim.clear_requests();
        for (args, field) in [
            (json!({"upid": "not-a-upid"}), "upid"),
            (json!({"upid": ct, "node": "pve2"}), "node"),
        ] {
            let message = p.server.err("pve_stop_task", args.clone()).await;
            assert!(message.contains(field), "{args}: {message}");
        }
        assert_eq!(sim.requests(), [], "a refused call sent something");
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// The gate binds the DELETE to the call's `upid` and lets it out once.
#[tokio::test]
async fn a_component_cannot_stop_another_task_or_the_same_one_twice() {
    within(async {
        let sim = simulator().await;
        let starter = with_policy(&sim, &allow(&["pve_start_vm"])).await;
        let (vm, ct) = two_long_starts(&sim, &starter.server).await;
        let dir = tempfile::tempdir().unwrap();
        let policy =
            "[policy]\ndefault = \"allow\"\n[policy.tools.hostile_stop]\naction = \"allow\"\n";
        let server = Server::hostile(&sim, dir.path(), policy).await;
        sim.clear_requests();
        let report = server
            .ok("hostile_stop", json!({"upid": vm, "other": ct}))
            .await;
        assert_eq!(
            outcomes(&report),
            [
                ("another task".into(), false),
                ("control".into(), true),
                ("a second stop".into(), false),
            ],
            "{report}"
        );
        assert_eq!(writes(&sim), [format!("DELETE /nodes/pve1/tasks/{vm}")]);
        assert!(sim.task(&ct).unwrap().running());
        server.stop().await;
        assert_eq!(refusal_rules(dir.path()), ["egress.route", "egress.once"]);
    })
    .await;
}
