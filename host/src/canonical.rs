//! Canonical JSON of tool arguments and its SHA-256: the one identity of
//! "this call with these arguments", shared by approvals (an approval binds
//! to it) and the audit log (which records it instead of the values).

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::tools::JsonObject;

/// JSON text with object keys sorted at every level and no whitespace, so
/// two argument objects that mean the same thing have the same text.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            // Sorted explicitly: serde_json's map keeps insertion order when
            // any crate in the build enables `preserve_order`.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// `sha256:<hex>` of the canonical JSON of a call's arguments.
pub fn arguments_hash(arguments: &JsonObject) -> String {
    let text = canonical_json(&Value::Object(arguments.clone()));
    let digest = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256:");
    for byte in digest {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a = json!({"vmid": 100, "node": "pve1", "x": {"b": [1, {"d": 1, "c": 2}], "a": null}});
        let b: Value = serde_json::from_str(
            r#"{ "x": {"a": null, "b": [1, {"c": 2, "d": 1}]}, "node": "pve1", "vmid": 100 }"#,
        )
        .unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            canonical_json(&a),
            r#"{"node":"pve1","vmid":100,"x":{"a":null,"b":[1,{"c":2,"d":1}]}}"#
        );
    }

    #[test]
    fn different_values_hash_differently() {
        let one = json!({"vmid": 100}).as_object().unwrap().clone();
        let other = json!({"vmid": 101}).as_object().unwrap().clone();
        let as_text = json!({"vmid": "100"}).as_object().unwrap().clone();
        assert_ne!(arguments_hash(&one), arguments_hash(&other));
        assert_ne!(arguments_hash(&one), arguments_hash(&as_text));
        assert_eq!(arguments_hash(&one), arguments_hash(&one.clone()));
        assert!(arguments_hash(&one).starts_with("sha256:"));
        assert_eq!(arguments_hash(&one).len(), 7 + 64);
    }
}
