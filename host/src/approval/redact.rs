//! The arguments of a call as a person may see them in an approval:
//! secret-looking values hidden, long strings shortened, the whole bounded.

use serde_json::Value;

use crate::canonical::canonical_json;
use crate::secret::{MASK, Redactor, holds_private_key, is_secret_name};
use crate::tools::JsonObject;

/// Longest string value shown in full.
const MAX_STRING: usize = 120;
/// Longest preview; an approval list stays readable.
const MAX_PREVIEW: usize = 1000;

/// The redacted, canonical JSON of the arguments.
pub fn preview(arguments: &JsonObject, redactor: &Redactor) -> String {
    let shown = redact_value(&Value::Object(arguments.clone()), None);
    let text = canonical_json(&shown);
    let text = redactor.redact(&text).into_owned();
    shorten(&text, MAX_PREVIEW)
}

fn redact_value(value: &Value, name: Option<&str>) -> Value {
    if name.is_some_and(is_secret_name) && !value.is_null() {
        return Value::String(MASK.into());
    }
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_value(v, Some(k))))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact_value(v, name)).collect()),
        Value::String(s) if holds_private_key(s) => Value::String(MASK.into()),
        Value::String(s) => Value::String(shorten(s, MAX_STRING)),
        other => other.clone(),
    }
}

/// At most `max` characters, cut on a character boundary, saying how much
/// was left out.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…(+{} chars)", &text[..cut], text[cut..].chars().count()),
    }
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
        assert_eq!(
            preview(&args, &Redactor::default()),
            r#"{"node":"pve1","vmid":100}"#
        );
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
        let text = preview(&args, &redactor);
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("5f0c1e1a"), "{text}");
        assert!(!text.contains("\"a\""), "{text}");
        assert!(text.contains("visible"), "{text}");
        assert!(text.contains(r#""password":"[REDACTED]""#), "{text}");
        assert!(text.contains(r#""auth_mode":null"#), "{text}");
    }

    #[test]
    fn long_values_and_long_previews_are_bounded() {
        let long = "é".repeat(500);
        let text = preview(&obj(json!({ "name": long })), &Redactor::default());
        assert!(text.contains("…(+380 chars)"), "{text}");
        let many: JsonObject = (0..200)
            .map(|i| (format!("k{i:03}"), json!("x".repeat(50))))
            .collect();
        let text = preview(&many, &Redactor::default());
        assert!(text.chars().count() < MAX_PREVIEW + 30, "{}", text.len());
    }
}
