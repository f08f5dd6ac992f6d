//! `pve_api_request` through the real binary against the simulator: the
//! host normalises the call's method and path, the policy judges the
//! request (a GET reads, anything else is a destructive write, a sensitive
//! class needs its own line), and the gate lets out that one request.

use serde_json::{Value, json};

use crate::actions::{allow, writes};
use crate::common::*;
use crate::policy_harness::*;

const TOOL: &str = "pve_api_request";

/// `METHOD /api/path` of every request the simulator saw.
fn sent(sim: &pve_sim::Simulator) -> Vec<String> {
    sim.requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.api_path()))
        .collect()
}

#[tokio::test]
async fn reads_and_writes_go_out_as_normalised_and_exactly_once() {
    within(async {
        let sim = simulator().await;
        // Deleting a snapshot or a guest is in the guest-destroy class,
        // which the rule opens by name.
        let policy = format!("{}sensitive = [\"guest-destroy\"]\n", allow(&[TOOL]));
        let p = with_policy(&sim, &policy).await;

        // A GET, written loosely: lower case, no leading slash, the API
        // prefix, a trailing slash, an encoded letter. The simulator sees
        // the normalised request, once, and the answer is its data.
        sim.clear_requests();
        let out = p
            .server
            .ok(
                TOOL,
                json!({"method": "get", "path": "api2/json/nodes/pve1/qemu/100/status/%63urrent/"}),
            )
            .await;
        assert_eq!(out["data"]["status"], "running", "{out}");
        assert_eq!(out["method"], "GET");
        assert_eq!(out["path"], "/api2/json/nodes/pve1/qemu/100/status/current");
        assert_eq!(sent(&sim), ["GET /nodes/pve1/qemu/100/status/current"]);

        // GET parameters go in the query string, booleans as 1/0.
        sim.clear_requests();
        let out = p
            .server
            .ok(TOOL, json!({"path": "/cluster/resources", "params": {"type": "vm"}}))
            .await;
        assert!(out["data"].as_array().is_some_and(|a| a.len() > 5), "{out}");
        let seen = sim.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].query, "type=vm");

        // A write that starts a task, waited for: the guest starts, and
        // the only write is the one asked for.
        sim.clear_requests();
        let out = p
            .server
            .ok(
                TOOL,
                json!({"method": "POST", "path": "/nodes/pve1/qemu/104/status/start", "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["type"], "qmstart", "{out}");
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        assert_eq!(sim.guest(104).unwrap().status, "running");
        assert_eq!(writes(&sim), ["POST /nodes/pve1/qemu/104/status/start"]);

        // A POST's parameters go in the body, a DELETE's in the query
        // (the simulator answers a DELETE with a body 501, as pveproxy
        // does, and a boolean `true` 400).
        sim.clear_requests();
        p.server
            .ok(
                TOOL,
                json!({"method": "POST", "path": "/nodes/pve1/qemu/101/snapshot",
                       "params": {"snapname": "viaapi", "vmstate": false}, "wait": true}),
            )
            .await;
        let out = p
            .server
            .ok(
                TOOL,
                json!({"method": "DELETE", "path": "/nodes/pve1/qemu/101/snapshot/viaapi",
                       "params": {"force": true}, "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        assert_eq!(
            writes(&sim),
            [
                "POST /nodes/pve1/qemu/101/snapshot snapname=viaapi&vmstate=0",
                "DELETE /nodes/pve1/qemu/101/snapshot/viaapi force=1",
            ]
        );
        let delete = sim
            .requests()
            .into_iter()
            .find(|r| r.method == "DELETE")
            .unwrap();
        assert_eq!(delete.query, "force=1");
        assert!(sim.schema_violations().is_empty(), "{:?}", sim.schema_violations());

        // A dry run sends nothing.
        sim.clear_requests();
        let out = p
            .server
            .ok(
                TOOL,
                json!({"method": "DELETE", "path": "/nodes/pve1/qemu/104", "dry_run": true}),
            )
            .await;
        assert_eq!(out["sent"], false, "{out}");
        assert!(sim.requests().is_empty());
    })
    .await;
}

#[tokio::test]
async fn paths_that_could_mean_another_are_refused_before_anything_is_sent() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, &allow(&[TOOL])).await;
        sim.clear_requests();
        for (args, says) in [
            (
                json!({"path": "/nodes/pve1/qemu/100/%2e%2e/%2e%2e/%2e%2e/access/users"}),
                "path: ",
            ),
            (
                json!({"method": "DELETE", "path": "/nodes/pve1%2Fqemu%2F100/qemu/101"}),
                "encoded '/'",
            ),
            (json!({"path": "/nodes/%252e%252e"}), "encoded twice"),
            (
                json!({"path": "https://evil.example/api2/json/version"}),
                "names a server",
            ),
            (json!({"path": "/cluster/resources?type=vm"}), "params"),
            (json!({"path": "/api2/extjs/version"}), "/api2/json/"),
            // Issue 21: said as what it is, not refused later as a route.
            (
                json!({"method": "DELETE", "path": "/api2/json/api2/json/nodes/pve1/qemu/100"}),
                "the API prefix /api2/json twice",
            ),
            (json!({"method": "PATCH", "path": "/version"}), "method: "),
            (json!({"method": "GET"}), "path: missing"),
        ] {
            let text = p.server.err(TOOL, args.clone()).await;
            assert!(
                text.starts_with("Invalid arguments: ") && text.contains(says),
                "{args}: {text}"
            );
            assert!(text.contains("Nothing was sent"), "{text}");
        }
        assert!(sim.requests().is_empty(), "{:?}", sent(&sim));
        // The server keeps serving.
        p.server.ok(TOOL, json!({"path": "/version"})).await;
    })
    .await;
}

#[tokio::test]
async fn sensitive_classes_open_only_by_name() {
    within(async {
        let sim = simulator().await;
        // A wildcard that allows everything, and the tool's own allow: no
        // sensitive class is open.
        let base = format!(
            "[policy]\ndefault = \"allow\"\n[policy.tools.\"*\"]\naction = \"allow\"\n{}",
            allow(&[TOOL])
        );
        let p = with_policy(&sim, &base).await;
        sim.clear_requests();
        for (method, path, class) in [
            ("POST", "/nodes/pve1/qemu/100/agent/exec", "guest-agent"),
            ("GET", "/nodes/pve1/qemu/100/agent/file-read", "guest-agent"),
            ("GET", "/access/users", "access"),
            ("POST", "/access/users/mcp@pve/token/new", "access"),
            ("POST", "/nodes/pve1/termproxy", "node-shell"),
            ("POST", "/nodes/pve1/execute", "node-shell"),
            ("POST", "/nodes/pve1/qemu/100/vncproxy", "guest-console"),
            ("POST", "/nodes/pve1/apt/update", "apt"),
            ("POST", "/nodes/pve1/certificates/custom", "certificates"),
            ("POST", "/cluster/config/join", "cluster-join"),
            ("PUT", "/cluster/firewall/options", "firewall"),
            // Issue 21, F5: the paths that were in no class.
            ("DELETE", "/nodes/pve1/storage/local/prunebackups", "storage"),
            ("POST", "/nodes/pve1/vzdump", "storage"),
            ("PUT", "/cluster/ceph/flags/pause", "ceph"),
            ("POST", "/nodes/pve1/ceph/stop", "ceph"),
            ("GET", "/nodes/pve1/scan/nfs", "url-fetch"),
            ("GET", "/nodes/pve1/scan/pbs", "url-fetch"),
            ("GET", "/nodes/pve1/qemu/100/cloudinit/dump", "guest-secrets"),
            ("POST", "/nodes/pve1/replication/100-0/schedule_now", "cluster-config"),
            ("POST", "/nodes/pve1/qemu", "guest-config"),
            ("PUT", "/nodes/pve1/qemu/100/config", "guest-config"),
            ("POST", "/nodes/pve1/lxc/200/template", "guest-config"),
            ("DELETE", "/nodes/pve1/qemu/100", "guest-destroy"),
            ("DELETE", "/nodes/pve1/qemu/100/snapshot/before", "guest-destroy"),
            ("POST", "/nodes/pve1/lxc/200/snapshot/before/rollback", "guest-destroy"),
            ("PUT", "/nodes/pve1/qemu/100/unlink", "guest-destroy"),
            // Encoded or in another case, the same class.
            ("post", "/nodes/pve1/qemu/100/agent/%65xec", "guest-agent"),
            ("POST", "/nodes/pve1/qemu/100/AGENT/exec", "guest-agent"),
        ] {
            let text = p
                .server
                .err(TOOL, json!({"method": method, "path": path}))
                .await;
            assert!(
                text.contains(&format!("sensitive class \"{class}\""))
                    && text.contains(&format!("sensitive = [\"{class}\"]"))
                    && text.contains("[policy.tools.pve_api_request]"),
                "{method} {path}: {text}"
            );
        }
        assert!(sim.requests().is_empty(), "{:?}", sent(&sim));
        drop(p);

        // Named in the tool's own rule, that class (and only that one)
        // goes out: the simulator has no agent exec, and answers 501 as
        // PVE does for an unknown method, which proves the request left.
        let opened = "[policy.tools.pve_api_request]\naction = \"allow\"\nsensitive = [\"guest-agent\"]\n";
        let p = with_policy(&sim, opened).await;
        sim.clear_requests();
        let text = p
            .server
            .err(
                TOOL,
                json!({"method": "POST", "path": "/nodes/pve1/qemu/100/agent/exec", "params": {"command": "uptime"}}),
            )
            .await;
        assert!(!text.contains("sensitive class"), "{text}");
        assert_eq!(sent(&sim), ["POST /nodes/pve1/qemu/100/agent/exec"]);
        let text = p.server.err(TOOL, json!({"path": "/access/users"})).await;
        assert!(text.contains("sensitive class \"access\""), "{text}");
        assert_eq!(sim.requests().len(), 1);
    })
    .await;
}

#[tokio::test]
async fn the_policy_judges_method_and_path_and_write_false_keeps_to_reads() {
    within(async {
        let sim = simulator().await;
        // Conditions on the normalised method and path.
        let policy = "[policy.tools.pve_api_request]\naction = \"allow\"\nconditions = [\n  \
            { arg = \"method\", op = \"eq\", value = \"GET\" },\n  \
            { arg = \"path\", op = \"regex\", value = \"/nodes/[^/]+/qemu/10[0-9]/status/current\" },\n]\n";
        let p = with_policy(&sim, policy).await;
        sim.clear_requests();
        // Written loosely, judged as normalised.
        let out = p
            .server
            .ok(
                TOOL,
                json!({"method": "get", "path": "/api2/json/nodes/pve1/qemu/101/status/current"}),
            )
            .await;
        assert_eq!(out["data"]["status"], "running", "{out}");
        for (method, path, rule) in [
            ("POST", "/nodes/pve1/qemu/101/status/stop", "conditions[0]"),
            ("GET", "/version", "conditions[1]"),
            ("GET", "/nodes/pve1/qemu/101/status/current/../../config", "path: "),
        ] {
            let text = p
                .server
                .err(TOOL, json!({"method": method, "path": path}))
                .await;
            assert!(text.contains(rule), "{method} {path}: {text}");
        }
        assert_eq!(sim.requests().len(), 1, "{:?}", sent(&sim));
        drop(p);

        // write = false: reads run, writes are refused before sending.
        let policy = "[policy.tools.pve_api_request]\naction = \"allow\"\nwrite = false\n";
        let p = with_policy(&sim, policy).await;
        sim.clear_requests();
        p.server.ok(TOOL, json!({"path": "/version"})).await;
        let text = p
            .server
            .err(
                TOOL,
                json!({"method": "POST", "path": "/nodes/pve1/qemu/104/status/start"}),
            )
            .await;
        assert!(text.contains("write = false"), "{text}");
        // A scan is a GET, but the node connects to the server it names:
        // refused by its class, read access or not (issue 21, F5).
        let text = p
            .server
            .err(TOOL, json!({"path": "/nodes/pve1/scan/nfs", "params": {"server": "10.0.0.9"}}))
            .await;
        assert!(text.contains("sensitive class \"url-fetch\""), "{text}");
        assert_eq!(sent(&sim), ["GET /version"]);
    })
    .await;
}

#[tokio::test]
async fn hidden_and_refused_under_the_default_policy() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let listed = server.tool_names().await;
        assert!(!listed.iter().any(|n| n == TOOL), "{listed:?}");
        sim.clear_requests();
        let text = server.err(TOOL, json!({"path": "/version"})).await;
        assert!(
            text.contains("[policy.tools.pve_api_request] action = \"allow\""),
            "{text}"
        );
        assert!(sim.requests().is_empty());
    })
    .await;
}

/// The component cannot send beside its call's request: `hostile_request`
/// declares the call's own request as its route (as pve_api_request does)
/// and tries another method, a GET elsewhere, another guest, encoded `..`
/// and `/`, an extra segment and a sensitive path; only the request itself
/// reaches the simulator.
#[tokio::test]
async fn a_component_can_send_only_its_calls_own_request() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(
            &sim,
            "[policy.tools.hostile_request]\naction = \"allow\"\n",
            Opts::default().arg("--component").arg(HOSTILE_WASM),
        )
        .await;
        for (method, path) in [
            ("post", "/nodes/pve1/qemu/104/status/start"),
            ("GET", "/nodes/pve1/qemu/100/status/current"),
        ] {
            sim.clear_requests();
            let report = p
                .server
                .ok("hostile_request", json!({"method": method, "path": path}))
                .await;
            let attempts = report["attempts"].as_array().cloned().unwrap_or_default();
            assert!(attempts.len() >= 8, "{report}");
            for a in &attempts {
                if a["what"] == "control" {
                    assert_eq!(a["status"], 200, "the call's own request: {a}");
                } else {
                    assert_eq!(a["outcome"], "denied", "sent beside the request: {a}");
                }
            }
            assert_eq!(
                sent(&sim),
                [format!("{} {path}", method.to_ascii_uppercase())],
                "{report}"
            );
        }
        assert!(
            p.server
                .stderr()
                .contains("not a request this call's tool declares"),
            "refusals are logged with their reason"
        );
    })
    .await;
}

/// The audit record of a write through the generic tool names its method,
/// path and task, and a refused sensitive request is recorded with the
/// rule that refused it.
#[tokio::test]
async fn writes_and_refusals_are_audited_with_the_request() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let p = with_policy_opts(
            &sim,
            &allow(&[TOOL]),
            Opts::default()
                .env("PVE_MCP_AUDIT_PATH", log.to_str().unwrap())
                .env("PVE_MCP_AUDIT_INCLUDE_ARGUMENTS", "true"),
        )
        .await;
        p.server
            .ok(
                TOOL,
                json!({"method": "POST", "path": "nodes/pve1/qemu/104/status/start"}),
            )
            .await;
        p.server
            .err(
                TOOL,
                json!({"method": "POST", "path": "/nodes/pve1/execute"}),
            )
            .await;
        let records: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let calls: Vec<&Value> = records
            .iter()
            .filter(|r| r["kind"] == "call" && r["tool"] == TOOL)
            .collect();
        assert_eq!(calls.len(), 2, "{records:?}");
        // Recorded as normalised.
        assert_eq!(
            calls[0]["args"]["path"],
            "/nodes/pve1/qemu/104/status/start"
        );
        let upstream = &calls[0]["upstream"][0];
        assert_eq!(upstream["method"], "POST", "{}", calls[0]);
        assert_eq!(
            upstream["path"], "/api2/json/nodes/pve1/qemu/104/status/start",
            "{}",
            calls[0]
        );
        assert!(
            calls[0]["task"]["upid"]
                .as_str()
                .is_some_and(|u| u.contains(":qmstart:")),
            "{}",
            calls[0]
        );
        assert_eq!(calls[1]["decision"], "deny", "{}", calls[1]);
        assert_eq!(calls[1]["rule"], "policy.tools.pve_api_request.sensitive");
    })
    .await;
}
