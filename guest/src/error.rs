//! The component's error type, a plain mirror of the WIT `tool-error`
//! variant so that pure logic (and its native tests) does not depend on the
//! generated bindings.

use std::fmt;

/// Why a tool call could not produce an output. Converted one-to-one into
/// the WIT `tool-error` in `lib.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// No tool of that name; the payload is the name asked for.
    UnknownTool(String),
    /// The arguments are wrong; the message names the field and the fix.
    InvalidArguments(String),
    /// Proxmox, or the path to it, failed; the message says what happened
    /// and what to do next.
    Upstream(String),
    /// The guest's state rules the action out, found by reading before
    /// writing; nothing was written. The message names the state and the
    /// next step.
    Precondition(String),
    /// A bug or an unexpected state inside the component.
    Internal(String),
}

impl ToolError {
    /// An `invalid-arguments` error about one field, formatted
    /// `field: message` so that agents see which argument to fix.
    pub fn field(field: &str, message: impl fmt::Display) -> Self {
        ToolError::InvalidArguments(format!("{field}: {message}"))
    }

    /// The message carried by any variant.
    pub fn message(&self) -> &str {
        match self {
            ToolError::UnknownTool(m)
            | ToolError::InvalidArguments(m)
            | ToolError::Upstream(m)
            | ToolError::Precondition(m)
            | ToolError::Internal(m) => m,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::UnknownTool(name) => write!(f, "unknown tool {name:?}"),
            ToolError::InvalidArguments(m) => write!(f, "invalid arguments: {m}"),
            ToolError::Upstream(m) => write!(f, "upstream error: {m}"),
            ToolError::Precondition(m) => write!(f, "cannot act now: {m}"),
            ToolError::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

impl std::error::Error for ToolError {}

/// Renders untrusted text (an argument value, a key, a server message)
/// for inclusion in an error message: JSON-quoted so control characters
/// and quotes cannot break the message, and cut to `max` characters so a
/// huge value cannot flood the agent's context.
pub fn quoted(text: &str, max: usize) -> String {
    let mut cut: String = text.chars().take(max).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    serde_json::Value::String(cut).to_string()
}

/// How many items [`listed`] names.
pub const LISTED: usize = 20;

/// Names from an answer (nodes, snapshots, disks, storages) for a message:
/// at most [`LISTED`] of them, each quoted and cut to 40 characters, then
/// how many more; `none` for none. They come from Proxmox, or something
/// posing as it, and the message must stay small whatever they hold.
pub fn listed<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return "none".to_owned();
    }
    let mut shown: Vec<String> = items
        .iter()
        .take(LISTED)
        .map(|n| quoted(n.as_ref(), 40))
        .collect();
    if items.len() > LISTED {
        shown.push(format!("and {} more", items.len() - LISTED));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_stay_short_whatever_they_hold() {
        assert_eq!(listed::<&str>(&[]), "none");
        assert_eq!(listed(&["a", "b"]), "\"a\", \"b\"");
        let many: Vec<String> = (0..500).map(|i| "x".repeat(i % 7 * 1000)).collect();
        let text = listed(&many);
        assert!(text.len() < 2_000, "{}", text.len());
        assert!(text.ends_with("and 480 more"), "{text}");
    }

    #[test]
    fn field_errors_name_the_field() {
        let e = ToolError::field("vmid", "must be an integer");
        assert_eq!(
            e,
            ToolError::InvalidArguments("vmid: must be an integer".into())
        );
        assert_eq!(e.message(), "vmid: must be an integer");
    }

    #[test]
    fn quoted_escapes_and_truncates() {
        assert_eq!(quoted("pve 1", 64), "\"pve 1\"");
        assert_eq!(quoted("a\"b\n", 64), "\"a\\\"b\\n\"");
        assert_eq!(quoted("abcdef", 3), "\"abc…\"");
    }
}
