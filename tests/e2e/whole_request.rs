//! The gate holds the whole request (issue 21, F1, F2 and the plan): a
//! write reaches Proxmox only with the parameters its route declares,
//! bound to the call's arguments; a call's tier follows from what its
//! arguments let it send; the audit records what was sent. Through the
//! real binary, the hostile component and the stateful simulator, whose
//! log holds each request's parameters as PVE reads them.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::common::*;
use crate::policy_harness::with_policy;

fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A smuggling tool's call, the one write it may send, and that write's
/// parameters.
type Case = (
    &'static str,
    Value,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// Runs a smuggling tool: every attempt but the control is refused, the
/// control reaches Proxmox, and Proxmox saw one write: `path` with exactly
/// `expected`.
async fn only_the_control_is_sent(
    server: &Server,
    sim: &pve_sim::Simulator,
    tool: &str,
    args: Value,
    path: &str,
    expected: &[(&str, &str)],
) {
    sim.clear_requests();
    let report = server.ok(tool, args.clone()).await;
    let attempts = report["attempts"].as_array().cloned().unwrap_or_default();
    assert!(attempts.len() >= 3, "{tool}: {report}");
    for a in &attempts {
        if a["what"] == "control" {
            assert!(
                a["status"].as_u64().is_some(),
                "{tool}: the control was refused: {a}"
            );
        } else {
            assert_eq!(a["outcome"], "denied", "{tool}({args}) let it through: {a}");
        }
    }
    let writes = sim.writes();
    assert_eq!(writes.len(), 1, "{tool}: {writes:?}");
    assert_eq!(writes[0].api_path(), path, "{tool}");
    assert_eq!(writes[0].params, params(expected), "{tool}");
}

/// F1: each case of the attack, under the policies it was found under. The
/// component declares innocent parameters bound to its arguments and
/// sends more; nothing but the declared request leaves, and the audit
/// names what was refused and records what was sent.
#[tokio::test]
async fn a_write_carries_only_the_parameters_its_call_names() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let server = Server::hostile(
            &sim,
            dir.path(),
            "[policy]\ndefault = \"allow\"\n\
             [policy.tools.hostile_backup]\naction = \"allow\"\n\
             conditions = [{ arg = \"vmid\", op = \"in\", value = [550] }]\n\
             [policy.tools.hostile_migrate]\naction = \"allow\"\n\
             conditions = [{ arg = \"target\", op = \"eq\", value = \"pve2\" }]\n",
        )
        .await;
        // Each tool's call, the one write it may send, and that write's
        // parameters.
        let cases: [Case; 4] = [
            (
                "hostile_create",
                json!({"node": "pve1", "vmid": 560, "name": "scratch"}),
                "/nodes/pve1/qemu",
                &[("vmid", "560"), ("name", "scratch")],
            ),
            (
                "hostile_backup",
                json!({"node": "pve1", "vmid": 550, "storage": "local"}),
                "/nodes/pve1/vzdump",
                &[("vmid", "550"), ("storage", "local"), ("remove", "0")],
            ),
            (
                "hostile_config",
                json!({"node": "pve1", "vmid": 560, "description": "x"}),
                "/nodes/pve1/qemu/560/config",
                &[("description", "x")],
            ),
            (
                "hostile_migrate",
                json!({"node": "pve1", "vmid": 560, "target": "pve2"}),
                "/nodes/pve1/qemu/560/migrate",
                &[("target", "pve2")],
            ),
        ];
        for (tool, args, path, expected) in cases {
            only_the_control_is_sent(&server, &sim, tool, args, path, expected).await;
        }

        let records = audit_records(&dir.path().join("audit.jsonl"));
        let egress: Vec<&Value> = records.iter().filter(|r| r["kind"] == "egress").collect();
        let refused = |what: &str| {
            egress.iter().any(|r| {
                r["rule"] == "egress.params"
                    && r["reason"]
                        .as_str()
                        .is_some_and(|reason| reason.contains(what))
            })
        };
        for what in [
            "`vmid` must carry the call's argument vmid",
            "`force` is not a parameter",
            "`vmid` is sent twice",
            "raw '+'",
            "which the gate does not read",
            "`remove` is \"1\", not one of 0",
            "`prune-backups` is not a parameter",
            "leaves out remove",
            "`protection` is not a parameter",
            "`delete` is not a parameter",
            "`target` must carry the call's argument target",
        ] {
            assert!(refused(what), "no refusal says {what:?}: {egress:#?}");
        }
        // What was refused and what was sent are on record, parameters
        // included, each with the SHA-256 of the whole list.
        let restore = egress
            .iter()
            .find(|r| r["params"]["values"]["archive"].is_string())
            .expect("the refused restore's parameters are recorded");
        assert_eq!(restore["decision"], "deny", "{restore}");
        assert_eq!(restore["params"]["values"]["force"], "1", "{restore}");
        let sent = egress
            .iter()
            .find(|r| r["decision"] == "allow" && r["path"] == "/api2/json/nodes/pve1/vzdump")
            .expect("the backup that went out");
        assert_eq!(
            sent["params"]["values"],
            json!({"vmid": "550", "storage": "local", "remove": "0"})
        );
        assert_eq!(sent["params"]["count"], 3);
        assert_eq!(sent["params"]["sha256"].as_str().map(str::len), Some(64));
        // The policy's conditions held the call; the route binding held its
        // requests to the same values.
        let text = server
            .err(
                "hostile_backup",
                json!({"node": "pve1", "vmid": 102, "storage": "local"}),
            )
            .await;
        assert!(text.contains("vmid"), "{text}");
    })
    .await;
}

/// F2 and the host's table of destructive parameters: a call's arguments
/// decide its tier. `pve_backup_vm` runs under `default = "allow"` and,
/// asked to prune, needs its own rule; a component that declares `force`
/// as its own to choose is destructive whatever it claims.
#[tokio::test]
async fn a_calls_arguments_decide_whether_it_is_destructive() {
    within(async {
        let sim = simulator().await;
        // Kept whole, so its policy file outlives the server.
        let p = with_policy(&sim, "[policy]\ndefault = \"allow\"\n").await;
        let server = &p.server;
        // Waits for its task, so the guest is not locked by it after.
        let backup = json!({"vmid": 104, "storage": "local", "wait": true});
        server.ok("pve_backup_vm", backup.clone()).await;
        let sent = sim.writes();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0].params.get("remove").map(String::as_str), Some("0"));

        sim.clear_requests();
        let mut pruning = backup.clone();
        pruning["prune"] = json!(true);
        let text = server.err("pve_backup_vm", pruning.clone()).await;
        assert!(
            text.contains("this call of pve_backup_vm is destructive (by its prune)"),
            "{text}"
        );
        assert!(text.contains("[policy.tools.pve_backup_vm]"), "{text}");
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        drop(p);

        // Its own rule lets the destructive call run, and remove=1 goes out.
        let p = with_policy(
            &sim,
            "[policy]\ndefault = \"allow\"\n[policy.tools.pve_backup_vm]\naction = \"allow\"\n",
        )
        .await;
        let server = &p.server;
        server.ok("pve_backup_vm", pruning).await;
        let sent = sim.writes();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0].params.get("remove").map(String::as_str), Some("1"));
        drop(p);

        sim.clear_requests();
        let dir = tempfile::tempdir().unwrap();
        let server = Server::hostile(&sim, dir.path(), "[policy]\ndefault = \"allow\"\n").await;
        let text = server
            .err("hostile_force", json!({"node": "pve1", "vmid": 561}))
            .await;
        assert!(text.contains("hostile_force is destructive"), "{text}");
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
    })
    .await;
}

/// `pve-mcp tools` and `--routes` show what each write may carry and
/// what makes a call of it destructive.
#[test]
fn tools_show_each_routes_parameters_and_what_raises_a_call() {
    let out = crate::policy_harness::run(&["tools", "--routes"]);
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains(
            "POST /api2/json/nodes/{node}/vzdump  params: vmid=<vmid>, storage=<storage>"
        ),
        "{table}"
    );
    assert!(table.contains("remove=<prune>|0"), "{table}");
    assert!(table.contains("<each entry of config>"), "{table}");
    let out = crate::policy_harness::run(&["tools"]);
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("pve_backup_vm "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("write; destructive with prune"), "{row}");
}

/// `policy check` shows what a call a write tool's arguments make
/// destructive gets: under `default = "allow"`, `pve_backup_vm` runs, and
/// with `prune` it is refused until its own rule, whose approver then
/// defaults to the operator.
#[test]
fn policy_check_shows_the_verdict_of_a_destructive_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    let check = |policy: &str| -> Value {
        std::fs::write(&path, policy).unwrap();
        let out =
            crate::policy_harness::run(&["policy", "check", path.to_str().unwrap(), "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let all: Value = serde_json::from_slice(&out.stdout).unwrap();
        all["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tool"] == "pve_backup_vm")
            .cloned()
            .unwrap()
    };
    let backup = check("[policy]\ndefault = \"allow\"\n");
    assert_eq!(backup["tier"], "write", "{backup}");
    assert_eq!(backup["decision"], "allow", "{backup}");
    assert_eq!(
        backup["when_destructive"]["arguments"],
        json!(["prune"]),
        "{backup}"
    );
    assert_eq!(backup["when_destructive"]["decision"], "deny", "{backup}");
    let backup = check(
        "[policy]\ndefault = \"allow\"\n[policy.tools.pve_backup_vm]\naction = \"require_approval\"\n",
    );
    assert_eq!(backup["approver"], "client", "{backup}");
    assert_eq!(
        backup["when_destructive"]["decision"], "approval",
        "{backup}"
    );
    assert_eq!(
        backup["when_destructive"]["approver"], "operator",
        "{backup}"
    );
}
