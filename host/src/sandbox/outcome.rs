//! What a call's outcome becomes for the agent: the limit it hit or the
//! crash, said plainly; its result checked; the host's secrets redacted.

use super::bindings::exports::pve_mcp::guest::tools as guest;
use super::limits::time_limit;
use crate::config::SandboxLimits;
use crate::secret::Redactor;
use crate::tools::{CallOutcome, FailureKind};

use wasmtime::Trap;

/// Shapes the outcome of one call of `tool`.
pub struct Shaper<'a> {
    /// The limits the call ran under, which messages name.
    pub limits: &'a SandboxLimits,
    /// The host's secrets.
    pub redactor: &'a Redactor,
    /// The tool's name, for the log.
    pub tool: &'a str,
    /// Whether the tool waits for Proxmox tasks (a longer limit).
    pub waits: bool,
}

impl Shaper<'_> {
    /// The outcome of a call the guest trapped in: which limit it hit, or
    /// the crash (with the guest's panic message when it printed one).
    pub fn describe_trap(
        &self,
        trap: &wasmtime::Error,
        hit_memory: bool,
        guest_log: &str,
    ) -> CallOutcome {
        use crate::metrics::SandboxLimit;
        let interrupted = matches!(trap.downcast_ref::<Trap>(), Some(Trap::Interrupt));
        crate::metrics::sandbox_limit(match (hit_memory, interrupted) {
            (true, _) => SandboxLimit::Memory,
            (false, true) => SandboxLimit::Deadline,
            (false, false) => SandboxLimit::Trap,
        });
        let message = if hit_memory {
            format!(
                "the tool component exceeded its memory limit of {} MiB and was stopped",
                self.limits.memory_bytes >> 20
            )
        } else if interrupted {
            format!(
                "the tool component ran past {} and was stopped",
                self.describe_limit()
            )
        } else if let Some(panic) = panic_message(guest_log) {
            format!("the tool component crashed ({panic}); this is a bug in the component")
        } else {
            format!("the tool component crashed: {}", trap.root_cause())
        };
        tracing::warn!(
            tool = self.tool,
            "sandbox stopped a call: {message} ({trap:#})"
        );
        CallOutcome::sandbox(message)
    }

    /// The limit a call of `tool` ran into, for its error message.
    pub fn describe_limit(&self) -> String {
        let timeout = self.limits.timeout.as_secs();
        if self.waits {
            format!(
                "its {} s limit (the {timeout} s deadline plus up to {} s of waiting for Proxmox tasks)",
                time_limit(self.limits, self.waits).as_secs(),
                self.limits.max_wait.as_secs()
            )
        } else {
            format!("its {timeout} s deadline")
        }
    }

    /// The outcome of a call that returned: its result, if it is a JSON
    /// object within the output cap.
    pub fn check_output(&self, output: guest::ToolOutput) -> CallOutcome {
        if output.structured.len() > self.limits.max_output_bytes {
            crate::metrics::sandbox_limit(crate::metrics::SandboxLimit::Output);
            return CallOutcome::sandbox(format!(
                "the tool's result is {} MiB, over the {} MiB limit; narrow the request (filters, a lower limit)",
                output.structured.len() >> 20,
                self.limits.max_output_bytes >> 20
            ));
        }
        match serde_json::from_str::<serde_json::Value>(&output.structured) {
            Ok(structured @ serde_json::Value::Object(_)) => CallOutcome::Output {
                structured,
                summary: output.summary,
                is_error: output.is_error,
            },
            _ => {
                tracing::warn!(
                    tool = self.tool,
                    "the component returned a structured result that is not a JSON object"
                );
                CallOutcome::Failed {
                    kind: FailureKind::Internal,
                    message: "the tool component returned a malformed result; this is a bug in the component".into(),
                }
            }
        }
    }

    /// The outcome with the host's secrets taken out of everything the
    /// agent sees.
    pub fn redact(&self, outcome: CallOutcome) -> CallOutcome {
        match outcome {
            CallOutcome::Output {
                structured,
                summary,
                is_error,
            } => {
                let text = structured.to_string();
                let structured = match self.redactor.redact(&text) {
                    std::borrow::Cow::Borrowed(_) => structured,
                    std::borrow::Cow::Owned(clean) => {
                        serde_json::from_str(&clean).unwrap_or(serde_json::Value::Null)
                    }
                };
                CallOutcome::Output {
                    structured,
                    summary: self.redactor.redact(&summary).into_owned(),
                    is_error,
                }
            }
            CallOutcome::Failed { kind, message } => CallOutcome::Failed {
                kind,
                message: self.redactor.redact(&message).into_owned(),
            },
            other => other,
        }
    }
}

/// Rust prints `thread '..' panicked at FILE:LINE:COL:` and the message on
/// the next line; both together say what went wrong.
pub fn panic_message(guest_log: &str) -> Option<String> {
    let mut lines = guest_log.lines();
    let at = lines.by_ref().find(|l| l.contains("panicked at"))?;
    let location = at
        .split("panicked at")
        .nth(1)
        .unwrap_or("")
        .trim()
        .trim_end_matches(':');
    let message = lines.next().unwrap_or("").trim();
    Some(format!("panicked at {location}: {message}"))
}

pub fn from_tool_error(error: guest::ToolError) -> CallOutcome {
    let (kind, message) = match error {
        guest::ToolError::UnknownTool(name) => return CallOutcome::UnknownTool(name),
        guest::ToolError::InvalidArguments(m) => (FailureKind::InvalidArguments, m),
        guest::ToolError::Upstream(m) => (FailureKind::Upstream, m),
        guest::ToolError::Precondition(m) => (FailureKind::Precondition, m),
        guest::ToolError::Internal(m) => (FailureKind::Internal, m),
    };
    CallOutcome::Failed { kind, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_keep_location_and_text() {
        let log = "thread '<unnamed>' (1) panicked at src/x.rs:5:9:\nboom here\nnote: run with RUST_BACKTRACE";
        assert_eq!(
            panic_message(log).unwrap(),
            "panicked at src/x.rs:5:9: boom here"
        );
        assert_eq!(panic_message("nothing"), None);
    }
}
