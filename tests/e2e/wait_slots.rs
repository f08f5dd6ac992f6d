//! Each caller's share of the wait slots (`[sandbox]
//! max_waiting_per_caller`, issue 21 F3) through the real binary over
//! Streamable HTTP: one token holding its share of `pve_wait_task` calls on
//! long simulated tasks has its next wait refused at once, naming the
//! setting, while another token's plain `pve_stop_vm` still runs.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

use crate::common::*;
use crate::http::{HttpServer, http_client};

const ALICE: &str = "a11ce-wait-a11ce-wait-a11ce-wait";
const BOB: &str = "b0b-wait-b0b-wait-b0b-wait-b0b-w";

fn call(tool: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_string())
        .with_arguments(arguments.as_object().cloned().unwrap())
}

/// Whether `pve_wait_task` has polled the start task of `vmid`: the wait
/// is inside the sandbox, holding its place in its caller's share.
fn polled(sim: &pve_sim::Simulator, vmid: u64) -> bool {
    let id = format!("qmstart:{vmid}:");
    sim.requests().iter().any(|r| {
        r.method == "GET" && r.path.contains("/tasks/") && {
            let path = r.path.replace("%3A", ":").replace("%3a", ":");
            path.contains(&id) && path.ends_with("/status")
        }
    })
}

#[tokio::test]
async fn one_tokens_waits_cannot_take_another_tokens_share() {
    within(async {
        let sim = simulator().await;
        // The starts run for minutes: every wait on them holds its place.
        sim.set_task_duration_for("qmstart", Duration::from_secs(600));
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("pve-mcp.toml");
        std::fs::write(
            &config,
            format!(
                "[sandbox]\nmax_waiting_per_caller = 2\n\n\
                 [http]\nlisten = \"127.0.0.1:0\"\n[http.tokens]\nalice = \"{ALICE}\"\nbob = \"{BOB}\"\n\n\
                 [policy.tools.pve_start_vm]\naction = \"allow\"\n\
                 [policy.tools.pve_stop_vm]\naction = \"allow\"\n"
            ),
        )
        .unwrap();
        let opts = Opts::default().arg("--config").arg(config.to_str().unwrap());
        let server = HttpServer::spawn(&sim, opts, &["serve"], http_client()).await;

        // Two long tasks, each with a wait of Alice's on it, in sessions of
        // their own: her share counts the token, not the session.
        let starter = server.client_with(Some(ALICE)).await.expect("alice connects");
        let mut waits = Vec::new();
        for vmid in [104, 110] {
            let started = starter
                .call_tool(call("pve_start_vm", json!({"vmid": vmid})))
                .await
                .expect("a result");
            assert_ne!(started.is_error, Some(true), "{}", text(&started));
            let upid = started.structured_content.as_ref().unwrap()["task"]["upid"]
                .as_str()
                .expect("a UPID")
                .to_owned();
            let session = server.client_with(Some(ALICE)).await.expect("alice connects");
            waits.push(tokio::spawn(async move {
                let result: CallToolResult = session
                    .call_tool(call("pve_wait_task", json!({"upid": upid, "timeout": 300})))
                    .await
                    .expect("a result");
                result
            }));
        }
        wait_until(
            "both of Alice's waits to poll their tasks",
            Duration::from_secs(60),
            async || (polled(&sim, 104) && polled(&sim, 110)).then_some(()),
        )
        .await;

        // Her third wait, in a third session, is refused at once.
        let third = server.client_with(Some(ALICE)).await.expect("alice connects");
        let upid = sim.running_tasks().into_iter().next().expect("a running task");
        let refused = third
            .call_tool(call("pve_wait_task", json!({"upid": upid, "timeout": 300})))
            .await
            .expect("a result");
        assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
        let said = text(&refused);
        assert!(
            said.contains("max_waiting_per_caller") && said.contains("2 calls waiting"),
            "{said}"
        );

        // Bob's stop, which does not wait, runs while Alice's waits hold.
        let bob = server.client_with(Some(BOB)).await.expect("bob connects");
        let stopped = bob
            .call_tool(call("pve_stop_vm", json!({"vmid": 101, "wait": false})))
            .await
            .expect("a result");
        assert_ne!(stopped.is_error, Some(true), "{}", text(&stopped));
        assert_eq!(
            stopped.structured_content.as_ref().unwrap()["sent"],
            true,
            "{stopped:?}"
        );
        assert!(
            waits.iter().all(|w| !w.is_finished()),
            "Alice's waits still hold their places"
        );
        for wait in waits {
            wait.abort();
        }
    })
    .await;
}
