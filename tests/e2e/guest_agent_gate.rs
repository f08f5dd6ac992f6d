//! The gate holds a guest-agent call to the one command or file its call
//! names (issue 23), whatever the component does: through the real
//! binary, the hostile component and the simulator, whose log holds each
//! request's parameters as PVE reads them (a repeated `command` joined
//! with NUL, as pveproxy joins it).

use serde_json::{Value, json};

use crate::common::*;

/// Each attempt of a hostile report: its `what` and whether it reached
/// Proxmox.
pub fn outcomes(report: &Value) -> Vec<(String, bool)> {
    report["attempts"]
        .as_array()
        .unwrap_or_else(|| panic!("no attempts: {report}"))
        .iter()
        .map(|a| {
            let what = a["what"].as_str().unwrap_or_default().to_owned();
            (what, a["status"].as_u64().is_some())
        })
        .collect()
}

/// The rules of the audit's refusals, by attempt order.
pub fn refusal_rules(dir: &std::path::Path) -> Vec<String> {
    audit_records(&dir.join("audit.jsonl"))
        .iter()
        .filter(|r| r["kind"] == "egress" && r["decision"] == "deny")
        .map(|r| r["rule"].as_str().unwrap_or_default().to_owned())
        .collect()
}

const POLICY: &str = "[policy]\ndefault = \"allow\"\n\
    [policy.tools.hostile_exec]\naction = \"allow\"\n\
    [policy.tools.hostile_file]\naction = \"allow\"\n";

/// A tool that declares nothing cannot read inside a guest: the guarded
/// reads are refused before they leave, and an ordinary read still goes.
#[tokio::test]
async fn a_tool_without_a_route_reads_nothing_inside_a_guest() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::hostile(&sim, dir.path(), POLICY).await;
        sim.clear_requests();
        let report = server.ok("hostile_peek", json!({"vmid": 100})).await;
        assert_eq!(
            outcomes(&report),
            [
                ("a guest's file".into(), false),
                ("an exec status".into(), false),
                ("a cloud-init dump".into(), false),
                ("control".into(), true),
            ],
            "{report}"
        );
        let seen: Vec<String> = sim.requests().iter().map(|r| r.path.clone()).collect();
        assert_eq!(seen, ["/api2/json/nodes/pve1/qemu/100/status/current"]);
        server.stop().await;
        assert_eq!(
            refusal_rules(dir.path()),
            ["egress.guarded", "egress.guarded", "egress.guarded"]
        );
    })
    .await;
}

/// One exec of exactly the call's argv, once; its status by its own pid
/// only; one file, on one VM.
#[tokio::test]
async fn an_agent_call_runs_its_own_command_once_and_reads_its_own_file() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::hostile(&sim, dir.path(), POLICY).await;
        sim.clear_requests();
        let report = server
            .ok("hostile_exec", json!({"vmid": 100, "argv": ["df", "-h"]}))
            .await;
        assert_eq!(
            outcomes(&report),
            [
                ("another argv".into(), false),
                ("stdin the call did not give".into(), false),
                ("control".into(), true),
                ("a second exec".into(), false),
                ("another call's pid".into(), false),
                ("control status".into(), true),
            ],
            "{report}"
        );
        let sent = sim.requests();
        let writes: Vec<_> = sent.iter().filter(|r| r.is_write()).collect();
        assert_eq!(writes.len(), 1, "{writes:?}");
        assert_eq!(writes[0].api_path(), "/nodes/pve1/qemu/100/agent/exec");
        assert_eq!(writes[0].params["command"], "df\0-h");
        assert!(!writes[0].params.contains_key("input-data"));
        let status: Vec<_> = sent
            .iter()
            .filter(|r| r.api_path().ends_with("/agent/exec-status"))
            .collect();
        assert_eq!(status.len(), 1, "{status:?}");

        sim.clear_requests();
        let report = server
            .ok(
                "hostile_file",
                json!({"vmid": 100, "path": "/etc/hostname"}),
            )
            .await;
        assert_eq!(
            outcomes(&report),
            [
                ("another file".into(), false),
                ("the same file on another VM".into(), false),
                ("control".into(), true),
            ],
            "{report}"
        );
        let sent = sim.requests();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0].params["file"], "/etc/hostname");
        server.stop().await;
        assert_eq!(
            refusal_rules(dir.path()),
            [
                "egress.params",
                "egress.params",
                "egress.once",
                "egress.params",
                "egress.params",
                "egress.guarded",
            ]
        );
    })
    .await;
}
