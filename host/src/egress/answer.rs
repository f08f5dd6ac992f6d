//! What the gate keeps of an answer it reads: the values a write was
//! answered with that later requests may carry (see [`super::history`]),
//! and a guarded read's summary for the audit log, made from Proxmox's
//! answer itself, so a component cannot report another command's exit
//! code or another file's digest than the one it received.
//!
//! A summary holds each field of the answer's `data`: a number or boolean
//! as it is, a string as its length and SHA-256 with its first
//! [`MAX_TEXT`] bytes (the audit log keeps those only under
//! `[audit] record_output = true`).

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The most bytes of one string field a summary carries as text.
pub const MAX_TEXT: usize = 4 << 10;
/// The most fields a summary lists.
const MAX_FIELDS: usize = 16;

/// The summary of a guarded read's answer `body` (`{"data": ...}`), or
/// `None` when it is not Proxmox's JSON.
pub fn summary(body: &[u8]) -> Option<Value> {
    let Value::Object(mut answer) = serde_json::from_slice::<Value>(body).ok()? else {
        return None;
    };
    let data = answer.remove("data")?;
    let mut fields = Map::new();
    match data {
        Value::Object(map) => {
            for (name, value) in map.into_iter().take(MAX_FIELDS) {
                fields.insert(name, field(value));
            }
        }
        other => {
            fields.insert("data".into(), field(other));
        }
    }
    Some(json!({"bytes": body.len(), "fields": fields}))
}

fn field(value: Value) -> Value {
    match value {
        Value::String(text) => {
            let hash: String = Sha256::digest(text.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let mut end = text.len().min(MAX_TEXT);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            json!({"bytes": text.len(), "sha256": hash, "text": &text[..end]})
        }
        Value::Array(items) => json!({"items": items.len()}),
        Value::Object(map) => json!({"fields": map.len()}),
        scalar => scalar,
    }
}

/// The summary without the text of its string fields: what the audit log
/// keeps unless it records output.
pub fn without_text(summary: &Value) -> Value {
    let mut summary = summary.clone();
    if let Some(Value::Object(fields)) = summary.get_mut("fields") {
        for value in fields.values_mut() {
            if let Value::Object(f) = value {
                f.remove("text");
            }
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_counts_and_hashes_what_the_answer_carried() {
        let body = br#"{"data":{"exited":1,"exitcode":3,"out-data":"hello\n","err-data":"","out-truncated":0}}"#;
        let s = summary(body).unwrap();
        assert_eq!(s["fields"]["exitcode"], 3);
        assert_eq!(s["fields"]["out-data"]["bytes"], 6);
        assert_eq!(s["fields"]["out-data"]["text"], "hello\n");
        assert_eq!(
            s["fields"]["out-data"]["sha256"],
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
        let kept = without_text(&s);
        assert!(kept["fields"]["out-data"].get("text").is_none());
        assert_eq!(kept["fields"]["out-data"]["bytes"], 6);
        // Long text is cut on a character boundary, its digest whole.
        let long = format!(r#"{{"data":{{"content":"{}"}}}}"#, "é".repeat(MAX_TEXT));
        let s = summary(long.as_bytes()).unwrap();
        assert_eq!(s["fields"]["content"]["bytes"], 2 * MAX_TEXT);
        assert_eq!(
            s["fields"]["content"]["text"].as_str().unwrap().len(),
            MAX_TEXT
        );
        assert!(summary(b"<html>").is_none());
        assert!(summary(br#"{"errors":{}}"#).is_none());
    }
}
