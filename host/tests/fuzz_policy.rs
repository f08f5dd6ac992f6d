//! Fuzz target: policy TOML and conditions. Valid policies mutated (bit
//! flips, truncation, line swaps, inserted junk) must load or fail with a
//! `ConfigError` naming the key, the problem and the fix; a policy that
//! loads must decide any call's arguments without panicking, and a refusal
//! must name its rule and say why.
//!
//! `PVE_MCP_FUZZ_CASES=1000000 cargo test --release -p pve-mcp --test fuzz_policy`

#[path = "../../tests/fuzz/gen.rs"]
mod fuzz_gen;

use std::sync::LazyLock;

use proptest::prelude::*;
use pve_mcp::caller::Caller;
use pve_mcp::error::ConfigError;
use pve_mcp::policy::conditions::{Condition, Op};
use pve_mcp::policy::{Decision, Engine, Policy, StateSpec};
use pve_mcp::tools::{Annotations, JsonObject, ToolInfo};
use serde_json::Value;

/// Valid policies covering every key, op and rate-limit form.
const SEEDS: &[&str] = &[
    r#"[policy]
default = "read-only"
state = "memory"
state_failure = "closed"
[policy.tools.pve_list_backups]
action = "deny"
reason = "backups are out of scope for this agent"
[policy.tools.pve_list_vms]
rate_limit = "30/minute"
rate_limit_per_token = "100/h"
rate_limit_global = "1000/day"
[policy.tools.pve_get_vm_status]
conditions = [{ arg = "vmid", op = "in", value = [100, 101] }]
[policy.tools.pve_list_nodes]
hide = true
[policy.tools.pve_get_vm_config]
action = "require_approval"
"#,
    r#"[policy]
default = "deny"
[policy.tools."*"]
rate_limit_global = "600/hour"
[policy.tools.pve_get_node_metrics]
action = "allow"
write = false
conditions = [
  { arg = "node", op = "eq", value = "pve1" },
  { arg = "timeframe", op = "not_in", value = ["year", "month"] },
]
[policy.tools.pve_list_snapshots]
action = "allow"
[[policy.tools.pve_list_snapshots.conditions]]
arg = "vmid"
op = "lt"
value = 200
[[policy.tools.pve_list_snapshots.conditions]]
arg = "vmid"
op = "gt"
value = 99.5
[[policy.tools.pve_list_snapshots.conditions]]
arg = "node"
op = "regex"
value = "pve[0-9]+|dev-.*"
"#,
    r#"[policy]
default = "allow"
state_failure = "open"
[policy.tools.poke]
action = "allow"
write = true
rate_limit = "1/s"
conditions = [{ arg = "vmid", op = "eq", value = 100 }]
"#,
    r#"[policy]
default = "deny"
[policy.tools.exec]
action = "require_approval"
commands = [["systemctl", "status", "*"], ["df", "-h"], ["bash", "/opt/x.sh"], ["ls", "**"]]
conditions = [{ arg = "vmid", op = "lt", value = 200 }]
[policy.tools.fileread]
action = "allow"
paths = ["/var/log/*", "/etc/hostname", "/srv/app/**", "C:\\Logs\\*", "D:/data/**/*.txt"]
"#,
];

/// The guest's tools as the host sees them (from the checked-in schemas),
/// plus `poke`, a tool that does not claim to be read-only.
static TOOLS: LazyLock<Vec<ToolInfo>> = LazyLock::new(|| {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest/schemas");
    let mut tools: Vec<ToolInfo> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".input.json")?
                .to_string();
            let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
            Some(tool(&name, schema.as_object()?.clone(), true))
        })
        .collect();
    let poke = serde_json::json!({"type": "object", "properties": {"vmid": {}, "node": {}}});
    tools.push(tool("poke", poke.as_object().unwrap().clone(), false));
    // A tool that runs guest commands, and one that names guest files.
    let exec = serde_json::json!({"type": "object", "properties": {"vmid": {},
        "command": {"type": "array", "items": {"type": "string"}}}});
    tools.push(tool("exec", exec.as_object().unwrap().clone(), false));
    let fileread = serde_json::json!({"type": "object", "properties": {"vmid": {},
        "path": {"type": "string"}}});
    tools.push(tool(
        "fileread",
        fileread.as_object().unwrap().clone(),
        true,
    ));
    assert!(
        tools.len() > 10,
        "the guest's schemas are missing in {}",
        dir.display()
    );
    tools
});

fn tool(name: &str, input_schema: JsonObject, read_only: bool) -> ToolInfo {
    ToolInfo {
        name: name.into(),
        title: name.into(),
        description: String::new(),
        input_schema,
        output_schema: None,
        annotations: Annotations {
            read_only,
            destructive: !read_only,
            idempotent: read_only,
            open_world: true,
        },
        routes: Vec::new(),
        waits: false,
        privileges: Vec::new(),
        reads: Vec::new(),
        toolset: "t".into(),
    }
}

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
});

fn assert_clean(e: &ConfigError) -> Result<(), TestCaseError> {
    prop_assert!(
        !e.key.is_empty() && !e.problem.is_empty() && !e.fix.is_empty(),
        "an error without key, problem or fix: {:?}",
        e
    );
    Ok(())
}

/// Decides a call of every tool with `arguments`; a refusal names its rule
/// and gives a reason.
fn decide_all(policy: Policy, arguments: &JsonObject) -> Result<(), TestCaseError> {
    // Only the in-memory store: the fuzzer must not reach out to a Redis.
    if !matches!(policy.state, StateSpec::Memory) {
        return Ok(());
    }
    let engine = Engine::new(policy).expect("a memory store always opens");
    let caller = Caller::stdio();
    for tool in TOOLS.iter() {
        let decision = RUNTIME.block_on(engine.decide(&caller, tool, arguments));
        prop_assert!(!decision.rule().is_empty(), "{}: {:?}", tool.name, decision);
        if let Decision::Deny { reason, .. } = &decision {
            prop_assert!(!reason.is_empty() || decision.rule().starts_with("policy.tools."));
        }
    }
    Ok(())
}

/// Arguments a caller might send: the tools' argument names with hostile
/// values, lists among them.
fn arguments() -> impl Strategy<Value = JsonObject> {
    fuzz_gen::value_with_keys(&[
        "vmid",
        "node",
        "timeframe",
        "limit",
        "cluster",
        "command",
        "path",
    ])
    .prop_map(|v| match v {
        Value::Object(o) => o,
        other => [("vmid".to_string(), other)].into_iter().collect(),
    })
}

fn seeds() -> Vec<Vec<u8>> {
    SEEDS.iter().map(|s| s.as_bytes().to_vec()).collect()
}

#[test]
fn the_seeds_are_valid_policies() {
    for seed in SEEDS {
        Policy::parse(seed, "seed.toml", &TOOLS).unwrap_or_else(|e| panic!("{e}\n{seed}"));
    }
}

proptest! {
    #![proptest_config(fuzz_gen::config(500))]

    #[test]
    fn fuzz_policy_files((text, _) in fuzz_gen::mutated(seeds()), args in arguments()) {
        let text = String::from_utf8_lossy(&text);
        match Policy::parse(&text, "fuzz.toml", &TOOLS) {
            Ok(policy) => decide_all(policy, &args)?,
            Err(e) => assert_clean(&e)?,
        }
    }

    /// Any op with any TOML value, checked against any arguments.
    #[test]
    fn fuzz_conditions(
        op in proptest::sample::select(&[Op::Eq, Op::In, Op::NotIn, Op::Lt, Op::Gt, Op::Regex][..]),
        arg in prop_oneof![Just("vmid".to_string()), Just("node".to_string()), fuzz_gen::hostile_string()],
        value in toml_value(),
        args in arguments(),
    ) {
        match Condition::new("policy.tools.fuzz.conditions[0]".into(), arg, op, &value) {
            Ok(condition) => {
                if let Err(why) = condition.check(&args) {
                    prop_assert!(why.contains(&condition.arg) || why.contains("argument"), "{}", why);
                }
            }
            Err(why) => prop_assert!(!why.is_empty()),
        }
    }
}

/// A TOML value: scalars (regex-looking strings among them), lists,
/// tables, dates.
fn toml_value() -> impl Strategy<Value = toml::Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(toml::Value::Integer),
        any::<f64>().prop_map(toml::Value::Float),
        any::<bool>().prop_map(toml::Value::Boolean),
        fuzz_gen::hostile_string().prop_map(toml::Value::String),
        proptest::sample::select(
            &[
                "(a+)+$",
                "[",
                "\\",
                "(?i)pve.*",
                ".{0,100000}",
                "a{1000}{1000}",
                "\\p{L}+",
                "(?P<x>a)|b",
                ""
            ][..]
        )
        .prop_map(|s| toml::Value::String(s.into())),
        Just(toml::Value::Datetime(
            "1979-05-27T07:32:00Z".parse().unwrap()
        )),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(toml::Value::Array),
            proptest::collection::vec(("[a-z]{1,3}", inner), 0..4)
                .prop_map(|kv| toml::Value::Table(kv.into_iter().collect())),
        ]
    })
}
