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

#[cfg(test)]
mod tests {
    use super::*;

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
