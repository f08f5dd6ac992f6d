//! What records and approvals show of a file written into a guest: its
//! size and SHA-256, never the content itself, which may be megabytes or
//! hold the guest's own secrets (a config file's password). The audit
//! log, the egress records, an approval's record and its form all show it
//! this one way; an approval's hash still covers the exact content.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::tools::JsonObject;

/// `1234 bytes, sha256 …` of `content`, as given.
pub fn content_summary(content: &str) -> String {
    let hex: String = Sha256::digest(content.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{} bytes, sha256 {hex}", content.len())
}

/// `[not shown: 1234 bytes, sha256 …]`: the content's place in a record.
pub fn not_shown(content: &str) -> String {
    format!("[not shown: {}]", content_summary(content))
}

/// Whether parameter `name` of a request to `api_path` (below
/// `/api2/json`, still encoded, decoded as pveproxy decodes it) is the
/// content of a file written into a guest.
pub fn is_content(api_path: &str, name: &str) -> bool {
    name == "content"
        && crate::route::request::decoded_segments(api_path)
            .is_some_and(|s| s.ends_with(&["agent".to_owned(), "file-write".to_owned()]))
}

/// The content, when the arguments write a guest file: a `path` string
/// beside a `content` string (`pve_list_storage`'s `content` is a filter,
/// and it has no `path`).
pub fn writes_a_file(arguments: &JsonObject) -> Option<&str> {
    arguments.get("path").and_then(Value::as_str)?;
    arguments.get("content").and_then(Value::as_str)
}

/// The arguments with a file write's `content` [`not_shown`].
pub fn summarised(arguments: &JsonObject) -> JsonObject {
    let mut shown = arguments.clone();
    if let Some(content) = writes_a_file(arguments) {
        shown.insert("content".into(), Value::String(not_shown(content)));
    }
    shown
}
