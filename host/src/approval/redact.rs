//! The arguments and plan of a call as a person may see them in an
//! approval: secret-looking values hidden, everything else complete.
//!
//! An approval record carries the complete canonical arguments and the
//! complete plan ([`record_arguments`], [`record_plan`]): a person must be
//! able to see everything they approve (issue 21 F4: a `net0` change behind
//! a long description was approved unseen when each value was cut). Only a
//! record past [`MAX_SHOWN`] bytes is folded, and the fold says how many
//! bytes the whole has and its SHA-256. The approval form in a client
//! ([`preview`]) and the terminal table fold long values for reading, and
//! each fold says how much it left out.
//!
//! A call inside a guest is shown as exactly what it touches: the form
//! names its argv and path on lines of their own ([`inside`]), and the
//! `content` of a file write is shown as its size and SHA-256, never
//! itself (it may be megabytes). The approval's hash still covers the
//! exact arguments, content included.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical::canonical_json;
use crate::egress::guest_file::{content_summary, summarised, writes_a_file};
use crate::secret::{MASK, Redactor, holds_private_key, is_secret_name};
use crate::tools::JsonObject;

/// The most bytes of arguments, and of plan, one approval record carries:
/// at most 16 KiB for both, so 10,000 open approvals (160 MiB at worst) stay within memory
/// and the admin endpoint's answer. Real calls are far smaller; a call
/// past it is folded with the size and hash of the whole.
pub const MAX_SHOWN: usize = 8 << 10;

/// Longest string value an approval form shows before folding it.
const FORM_STRING: usize = 120;
/// Longest argument text an approval form shows before folding it.
const FORM_TEXT: usize = 1000;

/// The complete redacted canonical JSON of the arguments, for the
/// approval record (folded, saying so, only past [`MAX_SHOWN`] bytes).
pub fn record_arguments(arguments: &JsonObject, redactor: &Redactor) -> String {
    bound(&redacted(&summarised(arguments), redactor), MAX_SHOWN)
}

/// The complete plan, redacted, for the approval record (folded, saying
/// so, only past [`MAX_SHOWN`] bytes).
pub fn record_plan(plan: &str, redactor: &Redactor) -> String {
    bound(&redactor.redact(plan), MAX_SHOWN)
}

/// The redacted arguments folded for an approval form: each long string,
/// and the whole, folded with a note of how much was left out.
pub fn preview(arguments: &JsonObject, redactor: &Redactor) -> String {
    let shown = redact_value(
        &Value::Object(summarised(arguments)),
        None,
        Some(FORM_STRING),
    );
    let text = canonical_json(&shown);
    let text = redactor.redact(&text).into_owned();
    fold(&text, FORM_TEXT, "")
}

/// Longest argv or path text an approval form shows on its own line.
const FORM_INSIDE: usize = 4000;

/// For a call inside a guest, the lines an approval form shows besides
/// the arguments: the exact argv (every element quoted), the exact path,
/// and a written content's size and SHA-256; empty for other calls.
pub fn inside(arguments: &JsonObject, redactor: &Redactor) -> String {
    let mut lines = String::new();
    if let Some(Value::Array(argv)) = arguments.get("command") {
        let quoted: Vec<String> = argv.iter().map(canonical_json).collect();
        let text = format!("[{}]", quoted.join(", "));
        lines.push_str(&format!(
            "\nCommand ({} arguments, exactly as run): {}",
            argv.len(),
            fold(&redactor.redact(&text), FORM_INSIDE, "")
        ));
    }
    // `pve_api_request`'s `path` is an API path, shown in its plan.
    if let Some(path) = arguments.get("path").and_then(Value::as_str)
        && !arguments.contains_key("method")
    {
        let text = canonical_json(&Value::String(path.into()));
        lines.push_str(&format!(
            "\nPath (exactly): {}",
            fold(&redactor.redact(&text), FORM_INSIDE, "")
        ));
    }
    if let Some(content) = writes_a_file(arguments) {
        lines.push_str(&format!(
            "\nContent (not shown): {}",
            content_summary(content)
        ));
    }
    lines
}

/// The complete redacted canonical arguments.
fn redacted(arguments: &JsonObject, redactor: &Redactor) -> String {
    let shown = redact_value(&Value::Object(arguments.clone()), None, None);
    redactor.redact(&canonical_json(&shown)).into_owned()
}

/// Hides values under secret names and private keys anywhere; with
/// `fold_at`, folds strings longer than that many characters.
fn redact_value(value: &Value, name: Option<&str>, fold_at: Option<usize>) -> Value {
    if name.is_some_and(is_secret_name) && !value.is_null() {
        return Value::String(MASK.into());
    }
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_value(v, Some(k), fold_at)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| redact_value(v, name, fold_at))
                .collect(),
        ),
        Value::String(s) if holds_private_key(s) => Value::String(MASK.into()),
        Value::String(s) => match fold_at {
            Some(max) => Value::String(fold(s, max, "")),
            None => value.clone(),
        },
        other => other.clone(),
    }
}

/// At most `max` characters, cut on a character boundary, followed by a
/// note of how many were folded away and `then` (where to see them).
pub fn fold(text: &str, max: usize, then: &str) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!(
            "{}…[folded: {} chars{then}]",
            &text[..cut],
            text[cut..].chars().count()
        ),
    }
}

/// The text whole when it fits in `max` bytes, else its first bytes (on a
/// character boundary) and what the whole was: `…[folded: the whole is
/// 70000 bytes, sha256 …]`.
fn bound(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let hex: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "{}…[folded: the whole is {} bytes, sha256 {hex}]",
        &text[..cut],
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;
    use serde_json::json;

    fn obj(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn ordinary_arguments_are_shown_canonically() {
        let args = obj(json!({"vmid": 100, "node": "pve1"}));
        let want = r#"{"node":"pve1","vmid":100}"#;
        assert_eq!(preview(&args, &Redactor::default()), want);
        assert_eq!(record_arguments(&args, &Redactor::default()), want);
    }

    #[test]
    fn secret_names_and_known_secrets_are_hidden() {
        let args = obj(json!({
            "password": "hunter2",
            "nested": {"api_token": ["a", "b"], "ok": "visible"},
            "note": "contains 5f0c1e1a-0000-4000-8000-123456789abc here",
            "auth_mode": null
        }));
        let redactor = Redactor::new([Secret::new("5f0c1e1a-0000-4000-8000-123456789abc")]);
        for text in [
            preview(&args, &redactor),
            record_arguments(&args, &redactor),
        ] {
            assert!(!text.contains("hunter2"), "{text}");
            assert!(!text.contains("5f0c1e1a"), "{text}");
            assert!(!text.contains("\"a\""), "{text}");
            assert!(text.contains("visible"), "{text}");
            assert!(text.contains(r#""password":"[REDACTED]""#), "{text}");
            assert!(text.contains(r#""auth_mode":null"#), "{text}");
        }
        let plan = record_plan(
            "PUT /x {\"k\":\"5f0c1e1a-0000-4000-8000-123456789abc\"}",
            &redactor,
        );
        assert!(!plan.contains("5f0c1e1a"), "{plan}");
    }

    /// Issue 21 F4: a change behind a long value is in the record whole.
    #[test]
    fn the_record_carries_every_value_whole() {
        let description = "d".repeat(1024);
        let args = obj(json!({"vmid": 102, "config": {
            "description": description, "net0": "virtio,bridge=vmbr666,firewall=0"}}));
        let text = record_arguments(&args, &Redactor::default());
        assert!(text.contains(&description), "{text}");
        assert!(text.contains("bridge=vmbr666,firewall=0"), "{text}");
        assert!(!text.contains("folded"), "{text}");
        let plan = format!(
            "PUT /api2/json/nodes/pve1/qemu/102/config {}",
            "p".repeat(5000)
        );
        assert_eq!(record_plan(&plan, &Redactor::default()), plan);
        // The form folds, and says so.
        let form = preview(&args, &Redactor::default());
        assert!(form.contains("…[folded: 904 chars]"), "{form}");
    }

    #[test]
    fn a_record_past_the_bound_says_what_it_folded() {
        let huge = "é".repeat(MAX_SHOWN);
        let args = obj(json!({ "name": huge }));
        let whole = redacted(&args, &Redactor::default());
        let text = record_arguments(&args, &Redactor::default());
        let hex: String = Sha256::digest(whole.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(
            text.ends_with(&format!(
                "…[folded: the whole is {} bytes, sha256 {hex}]",
                whole.len()
            )),
            "{}",
            &text[text.len() - 120..]
        );
        assert!(text.len() <= MAX_SHOWN + 120);
    }

    #[test]
    fn a_guest_call_shows_its_exact_argv_and_path() {
        let args = obj(json!({"vmid": 100, "command": ["systemctl", "status", "a b\"c", ""]}));
        let lines = inside(&args, &Redactor::default());
        assert_eq!(
            lines,
            "\nCommand (4 arguments, exactly as run): [\"systemctl\", \"status\", \"a b\\\"c\", \"\"]"
        );
        // The record keeps every element, quoted.
        let record = record_arguments(&args, &Redactor::default());
        assert!(
            record.contains(r#""command":["systemctl","status","a b\"c",""]"#),
            "{record}"
        );
        let read = obj(json!({"vmid": 100, "path": "/var/log/syslog"}));
        assert_eq!(
            inside(&read, &Redactor::default()),
            "\nPath (exactly): \"/var/log/syslog\""
        );
        // An API request's path is in its plan, not here.
        let api = obj(json!({"method": "GET", "path": "/version"}));
        assert_eq!(inside(&api, &Redactor::default()), "");
        // A known secret on a command line is still hidden.
        let secret = "5f0c1e1a-0000-4000-8000-123456789abc";
        let redactor = Redactor::new([Secret::new(secret)]);
        let args = obj(json!({"command": ["curl", "-u", secret]}));
        assert!(!inside(&args, &redactor).contains(secret));
    }

    #[test]
    fn a_written_content_is_shown_as_its_size_and_hash() {
        let content = "x".repeat(100_000);
        let args =
            obj(json!({"vmid": 100, "path": "/etc/motd", "content": content, "encoding": "utf-8"}));
        let hex: String = Sha256::digest(content.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let record = record_arguments(&args, &Redactor::default());
        assert!(!record.contains("xxxx"), "{record}");
        assert!(
            record.contains(&format!(
                r#""content":"[not shown: 100000 bytes, sha256 {hex}]""#
            )) && record.contains(r#""path":"/etc/motd""#),
            "{record}"
        );
        assert!(!record.contains("folded"), "{record}");
        let form = preview(&args, &Redactor::default());
        assert!(
            !form.contains("xxxx") && form.contains("100000 bytes"),
            "{form}"
        );
        let lines = inside(&args, &Redactor::default());
        assert!(
            lines.ends_with(&format!(
                "\nContent (not shown): 100000 bytes, sha256 {hex}"
            )),
            "{lines}"
        );
        // A storage filter named `content` is an ordinary argument.
        let filter = obj(json!({"content": "backup"}));
        assert_eq!(
            record_arguments(&filter, &Redactor::default()),
            r#"{"content":"backup"}"#
        );
    }

    #[test]
    fn long_values_and_long_previews_are_folded_saying_so() {
        let long = "é".repeat(500);
        let text = preview(&obj(json!({ "name": long })), &Redactor::default());
        assert!(text.contains("…[folded: 380 chars]"), "{text}");
        let many: JsonObject = (0..200)
            .map(|i| (format!("k{i:03}"), json!("x".repeat(50))))
            .collect();
        let text = preview(&many, &Redactor::default());
        assert!(text.chars().count() < FORM_TEXT + 30, "{}", text.len());
        assert!(text.contains("…[folded: "), "{text}");
        assert_eq!(
            fold("abcdef", 2, "; see all"),
            "ab…[folded: 4 chars; see all]"
        );
    }
}
