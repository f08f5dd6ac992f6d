//! Generators shared by every fuzz target (guest, host and e2e tests
//! include this file with `#[path]`): hostile JSON values and texts, and
//! mutations of valid examples (bit flips, truncation, line swaps, inserted
//! junk).
//!
//! The engine is proptest on the stable toolchain. A target runs
//! [`cases`] inputs: a short bounded pass by default (what `cargo test`
//! runs in CI), or `PVE_MCP_FUZZ_CASES` of them (`just fuzz` sets one
//! million). A failing input is shrunk and printed by proptest; keep it as
//! a regression case next to the target.

// Each test crate uses part of this module.
#![allow(dead_code)]

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use serde_json::{Map, Value, json};

/// The variable that sets how many inputs each target runs.
pub const CASES_VAR: &str = "PVE_MCP_FUZZ_CASES";

/// How many inputs a target runs: `PVE_MCP_FUZZ_CASES`, else `default`
/// (chosen per target so the CI pass takes seconds).
pub fn cases(default: u32) -> u32 {
    match std::env::var(CASES_VAR) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{CASES_VAR}={v:?} is not a whole number")),
        Err(_) => default,
    }
}

/// The proptest configuration for a target running [`cases`]`(default)`
/// inputs. Failures are not persisted to files: a found input is kept as
/// a regression test instead.
pub fn config(default: u32) -> Config {
    Config {
        cases: cases(default),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        // Hostile inputs are rejected often by design; never give up.
        max_global_rejects: u32::MAX,
        ..Config::default()
    }
}

/// Numbers that break naive code: extremes, precision edges, negatives.
pub fn hostile_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", serde_json::Number::from_f64)
            .prop_map(Value::Number),
        Just(json!(i64::MIN)),
        Just(json!(i64::MAX)),
        Just(json!(u64::MAX)),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(9_007_199_254_740_993u64)),
        Just(json!(1e308)),
        Just(json!(-1e308)),
        Just(json!(5e-324)),
        Just(json!(0.5)),
        Just(json!(99.999)),
    ]
}

/// Strings that break naive code: empty, huge, control characters,
/// look-alike numbers, path tricks, odd Unicode.
pub fn hostile_string() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => Just(String::new()),
        2 => Just("localhost".to_string()),
        2 => Just("100".to_string()),
        2 => Just("-1".to_string()),
        2 => Just("1e999".to_string()),
        2 => Just("NaN".to_string()),
        2 => Just("../../etc/passwd".to_string()),
        2 => Just("a\u{0}b".to_string()),
        2 => Just("\u{202e}evil\u{feff}".to_string()),
        2 => Just("pve1%2Fqemu".to_string()),
        2 => Just(" pve1 ".to_string()),
        4 => proptest::collection::vec(any::<char>(), 0..40).prop_map(|c| c.into_iter().collect()),
        4 => proptest::collection::vec(proptest::char::range('\u{0}', '\u{7f}'), 0..40)
            .prop_map(|c| c.into_iter().collect()),
    ]
}

/// A string long enough to break a message or a buffer.
pub fn huge_string() -> impl Strategy<Value = String> {
    (1_000usize..70_000).prop_map(|n| "x".repeat(n))
}

/// A JSON scalar, hostile or ordinary; now and then a huge string.
pub fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        40 => Just(Value::Null),
        1 => huge_string().prop_map(Value::String),
        40 => any::<bool>().prop_map(Value::Bool),
        80 => hostile_number(),
        80 => hostile_string().prop_map(Value::String),
    ]
}

/// Any JSON value: scalars nested in arrays and objects (keys from
/// `keys`) up to a few levels.
pub fn value_with_keys(keys: &'static [&'static str]) -> BoxedStrategy<Value> {
    let key = prop_oneof![
        4 => proptest::sample::select(keys).prop_map(str::to_string),
        1 => hostile_string(),
    ];
    scalar()
        .prop_recursive(5, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::vec((key.clone(), inner), 0..8)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
            ]
        })
        .boxed()
}

/// Any JSON value, with arbitrary keys.
pub fn value() -> BoxedStrategy<Value> {
    value_with_keys(&["", "a", "id", "data", "type"])
}

/// JSON text nested `depth` levels (serde_json stops at 128).
pub fn deeply_nested(depth: usize) -> String {
    let (open, close) = if depth.is_multiple_of(2) {
        ("[", "]")
    } else {
        ("{\"a\":", "}")
    };
    format!("{}1{}", open.repeat(depth), close.repeat(depth))
}

/// Texts that are not quite JSON: deep nesting, huge numbers, lone
/// surrogates, truncations, random bytes.
pub fn hostile_json_text() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (100usize..5_000).prop_map(|d| deeply_nested(d).into_bytes()),
        (1usize..2_000).prop_map(|n| format!("{{\"a\":{}}}", "9".repeat(n)).into_bytes()),
        Just(b"1e999999".to_vec()),
        Just(b"-1e-999999".to_vec()),
        Just(b"\"\\ud800\"".to_vec()),
        Just(b"{\"a\":1,\"a\":2}".to_vec()),
        Just(b"\xef\xbb\xbf{}".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..256),
        value().prop_map(|v| {
            let text = v.to_string().into_bytes();
            let cut = text.len() / 2;
            text[..cut].to_vec()
        }),
    ]
}

/// One edit of a text.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Flip one bit at a position (taken modulo the length).
    FlipBit(usize, u8),
    /// Cut the text at a position.
    Truncate(usize),
    /// Swap two lines.
    SwapLines(usize, usize),
    /// Duplicate a line.
    DuplicateLine(usize),
    /// Delete a line.
    DeleteLine(usize),
    /// Insert junk at a position.
    Insert(usize, Vec<u8>),
    /// Replace a byte range with junk.
    Overwrite(usize, Vec<u8>),
}

/// Junk to insert: bytes, or fragments of the formats under test.
fn junk() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 1..16),
        proptest::sample::select(
            &[
                "\n",
                "\"",
                "'",
                "[",
                "]",
                "{",
                "}",
                "=",
                ",",
                "#",
                "\\",
                "\n[",
                "]]\n",
                "\u{0}",
                "9999999999999999999999",
                "-0",
                "nan",
                "inf",
                "1979-05-27T07:32:00Z",
                "true",
                "\"\"\"",
                "'''",
                "[[policy.tools.x.conditions]]\n",
                "[policy]\n",
                "\n[pve]\n",
                "= { a = 1 }",
                "\"seq\":",
                "\"prev\":",
                "sha256:",
                "{}",
                "\u{feff}",
                "\r\n",
                "\t",
                "é",
            ][..],
        )
        .prop_map(|s| s.as_bytes().to_vec()),
    ]
}

/// One mutation.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::DeleteLine),
        (any::<usize>(), junk()).prop_map(|(i, j)| Mutation::Insert(i, j)),
        (any::<usize>(), junk()).prop_map(|(i, j)| Mutation::Overwrite(i, j)),
    ]
}

/// Applies `m` to `text`.
pub fn apply(text: &mut Vec<u8>, m: &Mutation) {
    let len = text.len();
    let at = |i: usize| if len == 0 { 0 } else { i % (len + 1) };
    match m {
        Mutation::FlipBit(i, bit) if len > 0 => text[i % len] ^= 1 << bit,
        Mutation::FlipBit(..) => {}
        Mutation::Truncate(i) => text.truncate(at(*i)),
        Mutation::Insert(i, junk) => {
            let i = at(*i);
            text.splice(i..i, junk.iter().copied());
        }
        Mutation::Overwrite(i, junk) => {
            let i = at(*i);
            let end = (i + junk.len()).min(len);
            text.splice(i..end, junk.iter().copied());
        }
        Mutation::SwapLines(..) | Mutation::DuplicateLine(_) | Mutation::DeleteLine(_) => {
            let mut lines: Vec<Vec<u8>> = text.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
            let n = lines.len();
            match m {
                Mutation::SwapLines(a, b) => lines.swap(a % n, b % n),
                Mutation::DuplicateLine(a) => {
                    let line = lines[a % n].clone();
                    lines.insert(a % n, line);
                }
                Mutation::DeleteLine(a) if n > 1 => {
                    lines.remove(a % n);
                }
                _ => {}
            }
            *text = lines.join(&b'\n');
        }
    }
}

/// A valid example from `seeds` with one to four mutations applied; the
/// mutations are returned too, for the failure message.
pub fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = (Vec<u8>, Vec<Mutation>)> {
    (
        proptest::sample::select(seeds),
        proptest::collection::vec(mutation(), 1..5),
    )
        .prop_map(|(mut text, ms)| {
            for m in &ms {
                apply(&mut text, m);
            }
            (text, ms)
        })
}

/// A JSON-RPC message the way a hostile MCP client sends it: a valid
/// request with hostile parts, a mutated valid request, or junk. One line
/// (no newline inside), as stdio framing needs.
pub fn jsonrpc_line() -> impl Strategy<Value = Vec<u8>> {
    let methods = proptest::sample::select(
        &[
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "prompts/list",
            "notifications/initialized",
            "notifications/cancelled",
            "logging/setLevel",
            "completion/complete",
            "server/discover",
            "nope",
            "",
        ][..],
    );
    let valid =
        (methods, value(), value(), any::<bool>()).prop_map(|(method, id, params, note)| {
            let mut m = json!({"jsonrpc": "2.0", "method": method, "params": params});
            if !note {
                m["id"] = id;
            }
            m
        });
    let tool = prop_oneof![
        proptest::sample::select(
            &[
                "pve_get_vm_status",
                "pve_list_vms",
                "pve_get_task_log",
                "pve_list_tasks"
            ][..]
        )
        .prop_map(Value::from),
        value(),
    ];
    let call = (
        tool,
        value_with_keys(&["vmid", "node", "limit", "cluster", "upid"]),
    )
        .prop_map(|(name, arguments)| {
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
        });
    let seeds: Vec<Vec<u8>> = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "pve_get_vm_status", "arguments": {"vmid": 100}}}),
        json!({"jsonrpc": "2.0", "id": "x", "method": "tools/list", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        json!([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
    ]
    .iter()
    .map(|v| v.to_string().into_bytes())
    .collect();
    prop_oneof![
        3 => valid.prop_map(|v| v.to_string().into_bytes()),
        2 => call.prop_map(|v| v.to_string().into_bytes()),
        3 => mutated(seeds).prop_map(|(t, _)| t),
        2 => hostile_json_text(),
    ]
    .prop_map(|mut line| {
        // A raw newline would split the input into two lines; keep one.
        line.retain(|b| *b != b'\n' && *b != b'\r');
        line
    })
}

/// A task id in Proxmox's `UPID:node:pid:pstart:starttime:type:id:user:` form.
pub const UPID: &str = "UPID:pve1:00001234:00005678:65F0A1B2:qmstart:100:root@pam:";

/// Values a tool argument's schema accepts, or nearly accepts (bounds ±1,
/// look-alikes): from its `enum`, its bounds, or known examples by name.
pub fn plausible_values(name: &str, schema: &Value) -> Vec<Value> {
    if let Some(choices) = schema["enum"].as_array() {
        let mut out = choices.clone();
        out.extend(
            choices
                .iter()
                .filter_map(Value::as_str)
                .map(|c| json!(c.to_uppercase())),
        );
        return out;
    }
    let by_name = match name {
        "node" => json!(["pve1", "pve2", "localhost", "a", "pve-1-"]),
        "upid" => json!([UPID, "UPID:pve1:0:0:0:x::y:", UPID.trim_end_matches(':')]),
        "storage" => json!(["local", "local-lvm", "a", "-x"]),
        "path" => json!([
            "/",
            "/vms/100",
            "/nodes/pve1",
            "/storage/local",
            "//",
            "/a/../b",
            "/nodes/pve1/qemu/100/status/current",
            "api2/json/version/",
            "/nodes/pve1%2F..%2Faccess",
            "/access/users",
            "/nodes/%252e%252e"
        ]),
        "params" => json!([{"type": "vm"}, {"force": true, "x": null}, {"a": [1]}, [], "x"]),
        "tag" => json!(["prod", "+x", "a.b"]),
        "type" => json!(["qmstart", "vzdump", "a b"]),
        "since" => json!([
            1_700_000_000,
            0,
            "2026-01-01T00:00:00Z",
            "2026-01-01",
            "yesterday"
        ]),
        "cluster" => json!(["default", "lab", "nope"]),
        "disk" => json!(["scsi0", "rootfs", "mp0", "scsi31", "net0"]),
        "size" => json!(["+10G", "50G", "10", "-1G", "1e3G"]),
        "snapname" => json!(["pre-upgrade", "current", "a", "1ab"]),
        "target" => json!(["pve2", "pve1", "localhost", "-x"]),
        "targetstorage" => json!(["local-lvm", "a", "-x"]),
        "newid" => json!([150, 100, 99]),
        "config" => json!([{"memory": 4096, "onboot": true}, {"args": "-x"}, {}, "x"]),
        "archive" => json!([
            "local:backup/vzdump-qemu-100-2026_01_01-00_00_00.vma.zst",
            "pbs:backup/ct/200/2026-01-01T00:00:00Z",
            "x"
        ]),
        "ostemplate" => json!(["local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "\n"]),
        _ => Value::Null,
    };
    if let Value::Array(v) = by_name {
        return v;
    }
    match schema["type"].as_str() {
        Some("integer") => {
            let min = schema["minimum"].as_i64().unwrap_or(0);
            let max = schema["maximum"].as_i64().unwrap_or(1_000);
            json!([
                min,
                max,
                min - 1,
                max + 1,
                (min + max) / 2,
                min as f64,
                min as f64 + 0.5
            ])
            .as_array()
            .cloned()
            .unwrap_or_default()
        }
        Some("boolean") => vec![json!(true), json!(false), json!(1), json!("true")],
        _ => vec![json!("web"), json!("running"), json!("a")],
    }
}

/// An arguments object for a tool with this input schema: each declared
/// property present or not, mostly with a plausible value, sometimes a
/// hostile one; now and then an undeclared key.
pub fn arguments_for(schema: &Value) -> BoxedStrategy<Map<String, Value>> {
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut fields: Vec<BoxedStrategy<Option<(String, Value)>>> = props
        .into_iter()
        .map(|(name, prop)| {
            let examples = plausible_values(&name, &prop);
            let value = prop_oneof![
                4 => proptest::sample::select(examples),
                1 => value(),
            ];
            proptest::option::weighted(0.6, value.prop_map(move |v| (name.clone(), v))).boxed()
        })
        .collect();
    let stray = (
        prop_oneof![
            Just("type".to_string()),
            Just("id".to_string()),
            Just("VMID".to_string()),
            hostile_string()
        ],
        scalar(),
    );
    fields.push(proptest::option::weighted(0.1, stray).boxed());
    fields
        .prop_map(|kv| kv.into_iter().flatten().collect())
        .boxed()
}
