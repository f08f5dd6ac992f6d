//! How the policy's messages show what a call carries: a value or a list
//! quoted as JSON and folded to a readable length, and a rule's table
//! name. Below every other policy file, so each can quote the same way.

use serde_json::Value;

/// The longest argument a message shows whole, in characters.
const SHOWN_CHARS: usize = 200;
/// The most list elements a message shows.
const SHOWN_ITEMS: usize = 32;

/// One value quoted as JSON, folded past [`SHOWN_CHARS`] characters.
pub fn show_value(value: &str) -> String {
    match value.char_indices().nth(SHOWN_CHARS) {
        None => Value::String(value.into()).to_string(),
        Some((cut, _)) => format!(
            "{}…(+{} chars)",
            Value::String(value[..cut].into()),
            value[cut..].chars().count()
        ),
    }
}

/// A list quoted as JSON, each element by [`show_value`], at most
/// [`SHOWN_ITEMS`] of them, e.g. `["systemctl","status","*"]`.
pub fn show_list(items: &[String]) -> String {
    let mut shown: Vec<String> = items
        .iter()
        .take(SHOWN_ITEMS)
        .map(|s| show_value(s))
        .collect();
    if items.len() > SHOWN_ITEMS {
        shown.push(format!("…(+{} more)", items.len() - SHOWN_ITEMS));
    }
    format!("[{}]", shown.join(","))
}

/// The name a rule for `tool` has in decisions and the audit log.
pub fn rule_name(tool: &str) -> String {
    if tool
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        format!("policy.tools.{tool}")
    } else {
        format!("policy.tools.{tool:?}")
    }
}
