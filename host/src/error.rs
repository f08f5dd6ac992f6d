//! The crate's shared error types. A bad setting is reported the same way
//! wherever it is read: which key, what is wrong, and how to fix it.

/// A bad or missing setting: which key, what is wrong, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {problem}\n  fix: {fix}")]
pub struct ConfigError {
    /// The environment variable or `section.key` (with its file) at fault.
    pub key: String,
    /// What is wrong.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

impl ConfigError {
    /// A setting `key` is wrong: what the `problem` is and the `fix`.
    pub fn new(key: impl Into<String>, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}
