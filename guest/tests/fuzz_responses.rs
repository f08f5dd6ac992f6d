//! Fuzz target: Proxmox responses into every tool's parser. A hostile
//! Proxmox answers each request with a generated status and body (records
//! with Proxmox's field names holding wrong types, huge numbers, deep
//! nesting, missing and extra fields; mutated envelopes; junk), decoded by
//! the guest's own envelope decoder (`api::decode_envelope`, the seam the
//! real client uses) and shaped by the tool. Every call must end in an
//! answer that matches the tool's output schema, or a clean `upstream`
//! error.
//!
//! `PVE_MCP_FUZZ_CASES=1000000 cargo test --release -p pve-mcp-guest --test fuzz_responses`

#[path = "../../tests/fuzz/gen.rs"]
mod fuzz_gen;

use std::sync::LazyLock;
use std::time::Duration;

use proptest::prelude::*;
use pve_mcp_guest::api::{Envelope, Pve, decode_envelope};
use pve_mcp_guest::cluster::Endpoint;
use pve_mcp_guest::error::ToolError;
use pve_mcp_guest::failure::Request;
use pve_mcp_guest::path::ApiPath;
use pve_mcp_guest::tool::{Tool, with_cluster};
use pve_mcp_guest::tools::TOOLS;
use pve_mcp_guest::write::WriteRequest;
use serde_json::{Map, Value, json};

/// Longest upstream error message: bodies are quoted cut short.
const MESSAGE_MAX: usize = 4096;

const BASE_URL: &str = "https://pve1.example:8006";

/// The field names the tools read from Proxmox's answers.
const FIELDS: &[&str] = &[
    "active",
    "agent",
    "armed-state",
    "avail",
    "boot-info",
    "comment",
    "content",
    "cores",
    "cpu",
    "cpuinfo",
    "cpus",
    "crm_state",
    "ctime",
    "data",
    "description",
    "disable",
    "disk",
    "enabled",
    "endtime",
    "error",
    "exitstatus",
    "format",
    "free",
    "group",
    "ha",
    "hardware-address",
    "hastate",
    "hwaddr",
    "id",
    "ip",
    "ip-address",
    "ip-address-type",
    "ip-addresses",
    "items",
    "kversion",
    "level",
    "loadavg",
    "local",
    "lock",
    "managed",
    "max_relocate",
    "max_restart",
    "maxcpu",
    "maxdisk",
    "maxmem",
    "mem",
    "memory",
    "mode",
    "n",
    "name",
    "netin",
    "netout",
    "node",
    "nodeid",
    "nodes",
    "notes",
    "onboot",
    "online",
    "parent",
    "pid",
    "prefix",
    "properties",
    "protected",
    "pveversion",
    "qmpstatus",
    "quorate",
    "release",
    "repoid",
    "request_state",
    "result",
    "rootfs",
    "running",
    "running-qemu",
    "shared",
    "sid",
    "size",
    "snapstate",
    "snaptime",
    "sockets",
    "starttime",
    "state",
    "status",
    "storage",
    "subtype",
    "swap",
    "t",
    "tags",
    "template",
    "time",
    "timestamp",
    "tokenid",
    "total",
    "type",
    "upid",
    "uptime",
    "used",
    "used_fraction",
    "user",
    "version",
    "vmid",
    "vmstate",
    "volid",
];

/// One answer of the hostile Proxmox.
#[derive(Debug, Clone)]
struct Reply {
    status: u16,
    reason: Option<String>,
    body: Vec<u8>,
}

/// A Proxmox that gives its replies in turn (the last one again once
/// they run out).
struct Hostile {
    replies: Vec<Reply>,
    next: usize,
    endpoints: Vec<Endpoint>,
    /// A fake clock, so a tool waiting on a task that never ends stops
    /// at its limit without the test sleeping.
    clock: Duration,
}

impl Pve for Hostile {
    fn get(&mut self, path: &ApiPath) -> Result<Value, ToolError> {
        self.get_envelope(path).map(|e| e.data)
    }

    fn get_envelope(&mut self, path: &ApiPath) -> Result<Envelope, ToolError> {
        let reply = &self.replies[self.next.min(self.replies.len() - 1)];
        self.next += 1;
        let target = format!("/api2/json{path}");
        let req = Request {
            method: "GET",
            target: &target,
            base_url: BASE_URL,
        };
        decode_envelope(req, reply.status, reply.reason.as_deref(), &reply.body)
    }

    fn send(&mut self, request: &WriteRequest) -> Result<Value, ToolError> {
        let reply = &self.replies[self.next.min(self.replies.len() - 1)];
        self.next += 1;
        let target = format!("/api2/json{}", request.target());
        let req = Request {
            method: request.method.as_str(),
            target: &target,
            base_url: BASE_URL,
        };
        decode_envelope(req, reply.status, reply.reason.as_deref(), &reply.body).map(|e| e.data)
    }

    fn sleep(&mut self, duration: Duration) {
        self.clock += duration;
    }

    fn elapsed(&self) -> Duration {
        self.clock
    }

    fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    fn selected(&self) -> Option<usize> {
        Some(0)
    }
}

/// A value for one of Proxmox's fields: mostly the kind Proxmox sends,
/// otherwise anything.
fn field_value(key: &'static str) -> BoxedStrategy<Value> {
    let usual = match key {
        "vmid" => json!([100, 101, "100", 100.0, 99]),
        "node" | "name" | "id" | "sid" => json!(["pve1", "pve2", "qemu/100", "", "local"]),
        "type" => json!(["qemu", "lxc", "node", "storage", "sdn", "vm", "ct", "pool"]),
        "status" => json!([
            "running", "stopped", "ok", "OK", "error", "online", "unknown"
        ]),
        "upid" => json!([fuzz_gen::UPID, "UPID:", "x"]),
        "t" | "n" | "time" | "starttime" | "endtime" | "ctime" | "snaptime" | "timestamp" => {
            json!([0, 1_700_000_000, -1, 1.5e300, "1700000000"])
        }
        "tags" => json!(["a;b", ["a", 1], ""]),
        _ => json!([0, 1, 0.5, "1", "", true, [], {}]),
    };
    let usual = usual.as_array().cloned().unwrap_or_default();
    prop_oneof![
        3 => proptest::sample::select(usual),
        2 => fuzz_gen::scalar(),
        1 => fuzz_gen::value_with_keys(FIELDS),
    ]
    .boxed()
}

/// A Proxmox record: some of the fields tools read, each maybe
/// well-formed; half start from a guest that resolves (vmid 100 on pve1).
fn record() -> impl Strategy<Value = Value> {
    let fields = proptest::collection::vec(
        proptest::sample::select(FIELDS).prop_flat_map(|k| (Just(k), field_value(k))),
        0..12,
    );
    (any::<bool>(), fields).prop_map(|(seeded, fields)| {
        let mut record = if seeded {
            json!({"vmid": 100, "node": "pve1", "type": "qemu", "status": "running",
                "name": "web", "id": "qemu/100"})
        } else {
            json!({})
        };
        for (k, v) in fields {
            record[k] = v;
        }
        record
    })
}

/// An envelope's `data`: a list of records, one record, or anything.
fn data() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => proptest::collection::vec(record(), 0..6).prop_map(Value::Array),
        3 => record(),
        1 => fuzz_gen::value_with_keys(FIELDS),
    ]
}

fn envelope() -> impl Strategy<Value = Vec<u8>> {
    let total = prop_oneof![Just(None), fuzz_gen::scalar().prop_map(Some)];
    (data(), total).prop_map(|(data, total)| {
        let mut e = json!({"data": data});
        if let Some(t) = total {
            e["total"] = t;
        }
        e.to_string().into_bytes()
    })
}

fn reply() -> impl Strategy<Value = Reply> {
    let status = prop_oneof![
        8 => Just(200u16),
        1 => proptest::sample::select(&[0u16, 204, 302, 400, 401, 403, 404, 500, 501, 595, 596, 999][..]),
    ];
    let body = prop_oneof![
        6 => envelope(),
        2 => envelope().prop_flat_map(|e| fuzz_gen::mutated(vec![e]).prop_map(|(t, _)| t)),
        1 => fuzz_gen::hostile_json_text(),
    ];
    let reason = proptest::option::weighted(0.2, fuzz_gen::hostile_string());
    (status, reason, body).prop_map(|(status, reason, body)| Reply {
        status,
        reason,
        body,
    })
}

/// Every tool with valid arguments to start from and its listed output
/// schema, compiled once.
struct Target {
    tool: &'static Tool,
    input: Value,
    output: jsonschema::Validator,
}

static TARGETS: LazyLock<Vec<Target>> = LazyLock::new(|| {
    TOOLS
        .iter()
        .map(|tool| {
            let input: Value = serde_json::from_str(tool.input_schema).unwrap();
            let output: Value = serde_json::from_str(tool.output_schema).unwrap();
            Target {
                tool,
                input,
                output: jsonschema::draft202012::new(&output).unwrap(),
            }
        })
        .collect()
});

/// Valid arguments: every required one (its first plausible value), and
/// `node`/`vm_type` when the tool takes them and `located` says so, which
/// skips the guest lookup and reaches the per-guest endpoints at once.
fn valid_arguments(schema: &Value, located: bool) -> String {
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut args = Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap();
        let first = fuzz_gen::plausible_values(name, &props[name])[0].clone();
        args.insert(name.to_string(), first);
    }
    if located {
        for (k, v) in [("node", json!("pve1")), ("vm_type", json!("qemu"))] {
            if props.contains_key(k) {
                args.insert(k.into(), v);
            }
        }
    }
    Value::Object(args).to_string()
}

/// Calls the tool against the replies: an answer that matches the output
/// schema, or a clean upstream error.
fn check(i: usize, located: bool, replies: Vec<Reply>) -> Result<(), TestCaseError> {
    let target = &TARGETS[i];
    let name = target.tool.name;
    let arguments = valid_arguments(&target.input, located);
    let mut pve = Hostile {
        replies,
        next: 0,
        endpoints: vec![Endpoint {
            name: "default".into(),
            base_url: BASE_URL.into(),
        }],
        clock: Duration::ZERO,
    };
    match target.tool.call(&mut pve, &arguments) {
        Ok(out) => {
            let full = with_cluster(out, Some("default"));
            let errors: Vec<String> = target
                .output
                .iter_errors(&full.structured)
                .map(|e| format!("{e} at {}", e.instance_path))
                .collect();
            prop_assert!(
                errors.is_empty(),
                "{}: {:#?}\n{}",
                name,
                errors,
                full.structured
            );
            prop_assert!(!full.summary.is_empty(), "{}: no summary", name);
        }
        // A state read before a write may rule the action out, or show
        // that an argument names what the cluster does not have.
        Err(
            ToolError::Upstream(m) | ToolError::Precondition(m) | ToolError::InvalidArguments(m),
        ) => {
            prop_assert!(
                !m.is_empty() && m.len() <= MESSAGE_MAX,
                "{}: {} bytes: {}",
                name,
                m.len(),
                m
            );
        }
        Err(other) => prop_assert!(false, "{} {}: {:?}", name, arguments, other),
    }
    Ok(())
}

fn ok(body: &str) -> Reply {
    Reply {
        status: 200,
        reason: None,
        body: body.as_bytes().to_vec(),
    }
}

fn index(name: &str) -> usize {
    TARGETS.iter().position(|t| t.tool.name == name).unwrap()
}

/// Found by fuzzing: a metric of 1e308 overflowed to infinity (CPU in
/// percent), which was written as `null` against the output schema.
#[test]
fn huge_metrics_stay_numbers() {
    let body = r#"{"data":[{"cpu":1e+308,"netin":1e308,"time":1}]}"#;
    check(index("pve_get_vm_metrics"), true, vec![ok(body)]).unwrap();
    let body = r#"{"data":[{"cpu":1e+308,"loadavg":1.7e308,"time":1},{"loadavg":1.7e308}]}"#;
    check(
        index("pve_get_node_metrics"),
        true,
        vec![ok(r#"{"data":{}}"#), ok(body)],
    )
    .unwrap();
}

/// Found by fuzzing: a guest listed on a 5,000-character node was
/// resolved to it, and the node echoed whole in the next error message.
#[test]
fn a_listed_node_that_is_no_node_name_is_refused_short() {
    let node = "x".repeat(5_000);
    let listing = json!({"data": [{"vmid": 100, "type": "qemu", "node": node}]}).to_string();
    for tool in ["pve_get_vm_config", "pve_get_vm_status"] {
        let replies = vec![ok(&listing), ok(r#"{"data": []}"#)];
        check(index(tool), false, replies).unwrap();
    }
}

/// Found by fuzzing: a lock of 4,000 characters in a guest's status was
/// echoed whole in the precondition error of every write tool.
#[test]
fn a_huge_lock_name_is_cut_short_in_the_precondition() {
    let status = json!({"data": {"status": "stopped", "lock": "x".repeat(4_000)}}).to_string();
    for tool in ["pve_start_vm", "pve_delete_vm", "pve_create_snapshot"] {
        check(index(tool), true, vec![ok(&status)]).unwrap();
    }
}

/// Found by fuzzing: a snapshot list with a 4,000-character name was
/// listed whole when the snapshot asked for was not in it.
#[test]
fn a_huge_snapshot_list_is_cut_short_in_the_precondition() {
    let status = json!({"data": {"status": "stopped"}}).to_string();
    let long = json!({"data": [{"name": "x".repeat(4_000)}, {"name": "current"}]}).to_string();
    let many: Vec<Value> = (0..500)
        .map(|i| json!({"name": format!("snap{i}")}))
        .collect();
    let many = json!({"data": many}).to_string();
    for tool in ["pve_delete_snapshot", "pve_rollback_snapshot"] {
        for list in [&long, &many] {
            check(index(tool), true, vec![ok(&status), ok(list)]).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(fuzz_gen::config(1_000))]

    #[test]
    fn fuzz_proxmox_responses(
        i in 0..TARGETS.len(),
        located in any::<bool>(),
        replies in proptest::collection::vec(reply(), 1..5),
    ) {
        check(i, located, replies)?;
    }
}
