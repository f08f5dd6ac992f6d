//! Fuzz target: `audit verify` on corrupted files. A valid hash-chained log
//! is corrupted (bit flips, truncation, line swaps, inserted junk, and
//! records whose `seq` or `prev` is replaced by a hostile value), then
//! verified: the result is a clean error naming a line of the file, or an
//! input error; and with the original last hash as the anchor, nothing but
//! the untouched log verifies.
//!
//! `PVE_MCP_FUZZ_CASES=1000000 cargo test --release -p pve-mcp --test fuzz_audit_verify`

#[path = "../../tests/fuzz/gen.rs"]
mod fuzz_gen;

use std::path::PathBuf;

use proptest::prelude::*;
use pve_mcp::audit::chain::{GENESIS, line_hash};
use pve_mcp::audit::verify::{VerifyError, VerifyOptions, verify};
use serde_json::{Value, json};

/// Record bodies as `pve-mcp` writes them (docs/audit.md), without the
/// link fields.
const BODIES: &[&str] = &[
    r#""kind":"call-start","time":"2026-11-29T18:40:05.354Z","call_id":"call-1","session":"stdio","client":"claude-ai/0.1.0","token":null,"tool":"pve_get_vm_status","args_hash":"sha256:0d25a9caeef4ad56752ffa52be88702fc65df2ff49bd44cc2b0b845e7b53c10d","decision":"allow","rule":"policy.default","access":"read"}"#,
    r#""kind":"call","time":"2026-11-29T18:40:05.354Z","call_id":"call-1","session":"stdio","client":"claude-ai/0.1.0","token":null,"tool":"pve_get_vm_status","args_hash":"sha256:0d25a9caeef4ad56752ffa52be88702fc65df2ff49bd44cc2b0b845e7b53c10d","decision":"allow","rule":"policy.default","outcome":"ok","ms":13.357,"result_bytes":493,"upstream":[{"method":"GET","path":"/api2/json/nodes/pve1/qemu/100/status/current","decision":"allow","status":200,"ms":5.861}]}"#,
    r#""kind":"egress","time":"2026-11-29T18:40:05.354Z","call_id":"call-1","call_seq":2,"session":"stdio","token":null,"tool":"pve_get_vm_status","method":"GET","authority":"127.0.0.1:18006","path":"/api2/json/nodes/pve1/qemu/100/status/current","decision":"allow","rule":"egress.gate","status":200,"ms":5.861}"#,
];

/// A valid chain of `n` records, one per line.
fn chain(n: usize) -> Vec<String> {
    let mut prev = GENESIS.to_string();
    (1..=n)
        .map(|seq| {
            let line = format!(
                "{{\"seq\":{seq},\"prev\":\"{prev}\",{}",
                BODIES[seq % BODIES.len()]
            );
            prev = line_hash(line.as_bytes());
            line
        })
        .collect()
}

const RECORDS: usize = 8;

fn original() -> Vec<u8> {
    let mut text = chain(RECORDS).join("\n").into_bytes();
    text.push(b'\n');
    text
}

/// Replaces a record's link field with a hostile value (or removes it).
#[derive(Debug, Clone)]
struct Relink {
    line: usize,
    field: &'static str,
    value: Option<Value>,
}

fn relink() -> impl Strategy<Value = Relink> {
    let value = prop_oneof![
        fuzz_gen::scalar(),
        Just(json!(0)),
        Just(json!(u64::MAX)),
        Just(json!(u64::MAX - 1)),
        (0u64..=RECORDS as u64 + 2).prop_map(|s| json!(s)),
        Just(json!(GENESIS)),
    ];
    (
        0..RECORDS,
        proptest::sample::select(&["seq", "prev"][..]),
        proptest::option::weighted(0.9, value),
    )
        .prop_map(|(line, field, value)| Relink { line, field, value })
}

fn apply_relink(text: &[u8], r: &Relink) -> Vec<u8> {
    let mut lines: Vec<String> = String::from_utf8_lossy(text)
        .lines()
        .map(String::from)
        .collect();
    if let Some(line) = lines.get_mut(r.line)
        && let Ok(Value::Object(mut record)) = serde_json::from_str::<Value>(line)
    {
        match &r.value {
            Some(v) => record.insert(r.field.to_string(), v.clone()),
            None => record.remove(r.field),
        };
        *line = Value::Object(record).to_string();
    }
    let mut out = lines.join("\n").into_bytes();
    out.push(b'\n');
    out
}

/// A corrupted log: relinked records, then byte-level mutations.
fn corrupted() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(relink(), 0..3),
        proptest::collection::vec(fuzz_gen::mutation(), 0..4),
    )
        .prop_map(|(relinks, mutations)| {
            let mut text = original();
            for r in &relinks {
                text = apply_relink(&text, r);
            }
            for m in &mutations {
                fuzz_gen::apply(&mut text, m);
            }
            text
        })
}

thread_local! {
    /// Each test thread's directory for the file under test.
    static DIR: tempfile::TempDir = tempfile::tempdir().unwrap();
}

/// Verifies `text` as one file; a broken chain must name a line of it.
fn check(text: &[u8], options: &VerifyOptions) -> Result<bool, TestCaseError> {
    let path: PathBuf = DIR.with(|d| d.path().join("audit.jsonl"));
    std::fs::write(&path, text).unwrap();
    let lines = text.split(|b| *b == b'\n').count();
    match verify(std::slice::from_ref(&path), options) {
        Ok(summary) => {
            prop_assert!(summary.records as usize <= lines);
            Ok(true)
        }
        Err(VerifyError::Broken { at, problem }) => {
            prop_assert_eq!(&at.file, &path);
            prop_assert!(
                (1..=lines + 1).contains(&at.line),
                "line {} of {}",
                at.line,
                lines
            );
            prop_assert!(!problem.is_empty());
            Ok(false)
        }
        Err(VerifyError::Input(m)) => {
            prop_assert!(!m.is_empty());
            Ok(false)
        }
    }
}

#[test]
fn the_original_log_verifies() {
    let text = original();
    let summary = verify(&[write_temp(&text)], &VerifyOptions::default()).unwrap();
    assert_eq!(summary.records, RECORDS as u64);
}

fn write_temp(text: &[u8]) -> PathBuf {
    let path = DIR.with(|d| d.path().join("original.jsonl"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Regression: a first record with `seq` 0 made verification subtract
/// one from zero (a panic in debug builds, "records 1..18446744073709551615
/// are missing" in release).
#[test]
fn a_first_seq_of_zero_is_a_clean_error() {
    let text = apply_relink(
        &original(),
        &Relink {
            line: 0,
            field: "seq",
            value: Some(json!(0)),
        },
    );
    let err = verify(&[write_temp(&text)], &VerifyOptions::default()).unwrap_err();
    let VerifyError::Broken { at, problem } = err else {
        panic!("{err:?}")
    };
    assert_eq!(at.line, 1);
    assert!(!problem.contains("18446744073709551615"), "{problem}");
}

/// Regression: in a partial log starting at the largest `seq`, the next
/// record overflowed the expected seq (a panic in debug builds, "seq 0
/// belongs" in release).
#[test]
fn a_seq_after_the_largest_is_a_clean_error() {
    let options = VerifyOptions {
        partial: true,
        anchor: None,
    };
    let text = apply_relink(
        &original(),
        &Relink {
            line: 0,
            field: "seq",
            value: Some(json!(u64::MAX)),
        },
    );
    let err = verify(&[write_temp(&text)], &options).unwrap_err();
    let VerifyError::Broken { at, problem } = err else {
        panic!("{err:?}")
    };
    assert_eq!(at.line, 1, "{problem}");
}

proptest! {
    #![proptest_config(fuzz_gen::config(1_000))]

    #[test]
    fn fuzz_audit_verify(text in corrupted(), partial in any::<bool>()) {
        let options = VerifyOptions { partial, anchor: None };
        check(&text, &options)?;
        // With the last hash saved earlier, only the untouched log passes.
        let anchor = line_hash(chain(RECORDS).last().unwrap().as_bytes());
        let anchored = VerifyOptions { partial, anchor: Some(anchor) };
        if check(&text, &anchored)? && !partial {
            prop_assert!(text == original(), "a changed log verified:\n{}", String::from_utf8_lossy(&text));
        }
    }
}
