//! `pve-mcp policy check`: a bad policy exits 2 with a message naming the
//! key and the line; a good one prints the effective decision per tool.

use serde_json::Value;

use crate::common::{read_tools, write_tools};
use crate::policy_harness::run;

fn check(policy: &str, json: bool) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, policy).unwrap();
    let path = path.to_str().unwrap();
    let mut args = vec!["policy", "check", path];
    if json {
        args.push("--json");
    }
    let out = run(&args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Each mistake is refused with exit code 2, naming the line and the key.
#[test]
fn mistakes_name_their_line_and_key() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "unknown tool",
            "[policy]\ndefault = \"read-only\"\n[policy.tools.pve_list_vm]\naction = \"deny\"\n",
            &[
                "line 3",
                "policy.tools.pve_list_vm",
                "no tool named \"pve_list_vm\"",
                "pve_list_vms",
            ],
        ),
        (
            "unknown key",
            "[policy.tools.pve_list_vms]\nactoin = \"deny\"\n",
            &["line 2", "unknown field `actoin`", "action"],
        ),
        (
            "bad rate_limit",
            "[policy.tools.pve_list_vms]\n\nrate_limit = \"30/minit\"\n",
            &[
                "line 3",
                "policy.tools.pve_list_vms.rate_limit",
                "\"minit\" is not a unit",
                "30/minute",
            ],
        ),
        (
            "bad regex",
            "[policy.tools.pve_list_vms]\nconditions = [\n  { arg = \"name\", op = \"regex\", value = \"web-(\" },\n]\n",
            &[
                "line 3",
                "policy.tools.pve_list_vms.conditions[0].value",
                "not a valid regular expression",
            ],
        ),
        (
            "bad op",
            "[policy.tools.pve_get_vm_status]\nconditions = [{ arg = \"vmid\", op = \"gte\", value = 100 }]\n",
            &[
                "line 2",
                "unknown variant `gte`",
                "eq, in, not_in, lt, gt or regex",
            ],
        ),
        (
            "bad action",
            "[policy.tools.pve_list_vms]\naction = \"permit\"\n",
            &["line 2", "unknown variant `permit`"],
        ),
        (
            "unknown argument",
            "[policy.tools.pve_list_nodes]\nconditions = [{ arg = \"vmid\", op = \"eq\", value = 100 }]\n",
            &["line 2", "pve_list_nodes has no argument \"vmid\"", "limit"],
        ),
        (
            "wrong value for op",
            "[policy.tools.pve_get_vm_status]\nconditions = [{ arg = \"vmid\", op = \"in\", value = 100 }]\n",
            &["line 2", "needs a list"],
        ),
        (
            "write without allow",
            "[policy.tools.pve_list_vms]\nwrite = true\n",
            &[
                "line 2",
                "policy.tools.pve_list_vms.write",
                "action = \"allow\"",
            ],
        ),
        (
            "bad default",
            "[policy]\ndefault = \"readonly-ish\"\n",
            &["line 2", "unknown variant `readonly-ish`"],
        ),
        (
            "bad state",
            "[policy]\nstate = \"http://:secret@cache:6379\"\n",
            &["line 2", "policy.state", "redis://"],
        ),
    ];
    for (what, policy, needles) in cases {
        let (code, stdout, stderr) = check(policy, false);
        assert_eq!(code, Some(2), "{what}: {stderr}");
        assert!(stdout.is_empty(), "{what}: {stdout}");
        assert!(stderr.contains("fix:"), "{what}: {stderr}");
        for needle in *needles {
            assert!(stderr.contains(needle), "{what}: no {needle:?} in {stderr}");
        }
        assert!(!stderr.contains("secret"), "{what}: {stderr}");
    }
}

const GOOD: &str = r#"
[policy]
default = "read-only"
[policy.tools.pve_list_backups]
action = "deny"
reason = "backups are out of scope for this agent"
[policy.tools.pve_list_vms]
rate_limit = "30/minute"
rate_limit_global = "1000/day"
[policy.tools.pve_get_vm_status]
conditions = [{ arg = "vmid", op = "in", value = [100, 101] }]
[policy.tools.pve_list_nodes]
hide = true
[policy.tools.pve_get_vm_config]
action = "require_approval"
"#;

#[test]
fn the_table_shows_every_tool_and_its_effective_decision() {
    let (code, stdout, stderr) = check(GOOD, false);
    assert_eq!(code, Some(0), "{stderr}");
    let row = |tool: &str| -> String {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(tool))
            .unwrap_or_else(|| panic!("no row for {tool}:\n{stdout}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(stdout.starts_with("policy: "), "{stdout}");
    assert!(stdout.contains("default = \"read-only\""), "{stdout}");
    assert_eq!(
        stdout.lines().count(),
        read_tools().len() + write_tools().len() + 2,
        "{stdout}"
    );
    assert_eq!(
        row("pve_list_backups"),
        "pve_list_backups read deny - policy.tools.pve_list_backups reason: backups are out of scope for this agent"
    );
    assert_eq!(
        row("pve_list_vms"),
        "pve_list_vms read allow GET policy.default limit 30/minute per session; limit 1000/day for all callers together"
    );
    assert_eq!(
        row("pve_get_vm_status"),
        "pve_get_vm_status read allow GET policy.default if vmid in [100,101]"
    );
    assert!(
        row("pve_list_nodes")
            .starts_with("pve_list_nodes read hidden - policy.tools.pve_list_nodes")
    );
    assert_eq!(
        row("pve_get_vm_config"),
        "pve_get_vm_config read approval GET policy.tools.pve_get_vm_config approver client"
    );
    assert_eq!(
        row("pve_get_version"),
        "pve_get_version read allow GET policy.default"
    );
}

#[test]
fn json_output_has_the_same_decisions() {
    let (code, stdout, stderr) = check(GOOD, true);
    assert_eq!(code, Some(0), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["default"], "read-only");
    assert_eq!(v["state"], "memory");
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), read_tools().len() + write_tools().len());
    let tool = |name: &str| tools.iter().find(|t| t["tool"] == name).unwrap().clone();
    assert_eq!(tool("pve_list_backups")["decision"], "deny");
    assert_eq!(tool("pve_list_backups")["methods"], serde_json::json!([]));
    assert_eq!(tool("pve_list_nodes")["hidden"], true);
    assert_eq!(tool("pve_get_vm_config")["decision"], "approval");
    assert_eq!(tool("pve_get_vm_config")["approver"], "client");
    assert_eq!(tool("pve_list_vms")["approver"], Value::Null);
    assert_eq!(tool("pve_list_vms")["methods"], serde_json::json!(["GET"]));
    assert_eq!(tool("pve_list_vms")["may_write"], false);
    assert_eq!(tool("pve_list_vms")["tier"], "read");
    assert_eq!(tool("pve_delete_vm")["tier"], "destructive");
    assert_eq!(tool("pve_start_vm")["tier"], "write");
    assert_eq!(tool("pve_start_vm")["hidden"], true);

    let limits = tool("pve_list_vms")["rate_limits"].clone();
    assert_eq!(limits[0]["rule"], "policy.tools.pve_list_vms.rate_limit");
    assert_eq!(limits[0]["limit"], "30/minute");
    assert_eq!(limits[1]["scope"], "rate_limit_global");
    assert_eq!(
        tool("pve_get_vm_status")["conditions"][0]["rule"],
        "policy.tools.pve_get_vm_status.conditions[0]"
    );
}

#[test]
fn without_a_file_it_checks_the_policy_serve_would_use() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pve-mcp.toml");
    std::fs::write(
        &config,
        "[sandbox]\nmemory_mib = 64\n\n[policy]\nfile = \"agent-policy.toml\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("agent-policy.toml"),
        "[policy]\ndefault = \"deny\"\n[policy.tools.pve_get_version]\n",
    )
    .unwrap();
    let out = run(&["--config", config.to_str().unwrap(), "policy", "check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("agent-policy.toml"), "{stdout}");
    assert!(stdout.contains("default = \"deny\""), "{stdout}");
    // An inline [policy] in the config works as well.
    std::fs::write(
        &config,
        "[sandbox]\nmemory_mib = 64\n\n[policy.tools.pve_list_vms]\nactoin = \"deny\"\n",
    )
    .unwrap();
    let out = run(&["--config", config.to_str().unwrap(), "policy", "check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("pve-mcp.toml line 5") && stderr.contains("actoin"),
        "{stderr}"
    );
}

/// A Redis password in the URL's query (`pass=`, `password=`, `user=`, as
/// the redis crate reads them for unix sockets) or user info is shown
/// nowhere: not by `policy check`, not in a refusal when Redis is down,
/// not in the server's log.
#[tokio::test]
async fn a_redis_password_is_never_shown() {
    use crate::common::{simulator, within};
    use crate::policy_harness::{refused, with_policy};

    const SECRET: &str = "SECRETVALUE1234";
    let urls = [
        format!("unix:///nonexistent.sock?pass={SECRET}"),
        format!("redis+unix:///nonexistent.sock?db=1&password={SECRET}"),
        format!("unix:///nonexistent.sock?user={SECRET}&pass={SECRET}"),
        format!("redis://user:{SECRET}@127.0.0.1:1/0"),
    ];
    for url in &urls {
        let policy = format!(
            "[policy]\nstate = \"{url}\"\n[policy.tools.pve_get_version]\nrate_limit = \"5/day\"\n"
        );
        for json in [false, true] {
            let (code, stdout, stderr) = check(&policy, json);
            assert_eq!(code, Some(0), "{url}: {stderr}");
            assert!(stdout.contains("[REDACTED]"), "{url}: {stdout}");
            assert!(
                !stdout.contains(SECRET) && !stderr.contains(SECRET),
                "{url} leaked: {stdout}{stderr}"
            );
        }
    }
    within(async {
        let sim = simulator().await;
        for url in &urls {
            let policy = format!(
                "[policy]\nstate = \"{url}\"\n[policy.tools.pve_get_version]\nrate_limit = \"5/day\"\n"
            );
            let p = with_policy(&sim, &policy).await;
            let text = refused(
                &p.server,
                "pve_get_version",
                serde_json::json!({}),
                "policy.state_failure",
            )
            .await;
            assert!(text.contains("[REDACTED]"), "{url}: {text}");
            let log = p.server.stop().await;
            assert!(
                !text.contains(SECRET) && !log.contains(SECRET),
                "{url} leaked: {text}\n{log}"
            );
        }
    })
    .await;
}

/// `policy check --config` refuses what `serve` refuses: a misspelt
/// section (`[Policy...]`) is an unknown key, not "no policy".
#[test]
fn a_misspelt_policy_section_is_refused_as_serve_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pve-mcp.toml");
    std::fs::write(
        &config,
        "[sandbox]\nmemory_mib = 64\n\n[Policy.tools.pve_list_vms]\naction = \"deny\"\n",
    )
    .unwrap();
    let out = run(&["--config", config.to_str().unwrap(), "policy", "check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown field `Policy`") && stderr.contains("line 4"),
        "{stderr}"
    );
}

/// `policy check` puts each tool's tier next to its verdict: the host's
/// tier, from the routes each hostile tool declares (all of them claim
/// `readOnlyHint`), and the approver a `require_approval` rule defaults
/// to follows it.
#[test]
fn the_table_shows_each_tools_tier_next_to_its_verdict() {
    use crate::common::HOSTILE_WASM;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(
        &path,
        "[policy]\ndefault = \"allow\"\n\
         [policy.tools.hostile_write]\naction = \"require_approval\"\n\
         [policy.tools.hostile_rollback]\naction = \"require_approval\"\n",
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let out = run(&["--component", HOSTILE_WASM, "policy", "check", path]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = stdout.lines().nth(1).unwrap_or_default();
    assert!(
        header.split_whitespace().collect::<Vec<_>>()[..3] == ["TOOL", "TIER", "DECISION"],
        "{stdout}"
    );
    let row = |tool: &str| -> String {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(tool))
            .unwrap_or_else(|| panic!("no row for {tool}:\n{stdout}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        row("hostile_egress"),
        "hostile_egress read allow GET policy.default"
    );
    assert_eq!(
        row("hostile_write"),
        "hostile_write write approval GET,POST policy.tools.hostile_write approver client"
    );
    assert_eq!(
        row("hostile_rollback"),
        "hostile_rollback destructive approval GET,POST policy.tools.hostile_rollback approver operator"
    );
    assert_eq!(
        row("hostile_routes"),
        "hostile_routes write allow GET,POST policy.default"
    );
    assert_eq!(
        row("hostile_hinted"),
        "hostile_hinted destructive hidden - policy.default reason: hostile_hinted is destructive, and \
         default = \"allow\" never enables a destructive tool: it needs its own rule; \
         an operator can enable it with [policy.tools.hostile_hinted] action = \"allow\""
    );
    assert!(
        row("hostile_methods").starts_with("hostile_methods destructive hidden - policy.default"),
        "{stdout}"
    );

    let out = run(&[
        "--component",
        HOSTILE_WASM,
        "policy",
        "check",
        path,
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let tool = |name: &str| {
        v["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["tool"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {v}"))
    };
    for (name, tier, approver) in [
        ("hostile_egress", "read", Value::Null),
        ("hostile_write", "write", "client".into()),
        ("hostile_rollback", "destructive", "operator".into()),
        ("hostile_hinted", "destructive", Value::Null),
    ] {
        assert_eq!(tool(name)["tier"], tier, "{name}");
        assert_eq!(tool(name)["approver"], approver, "{name}");
    }
    assert_eq!(tool("hostile_hinted")["hidden"], true);
}
