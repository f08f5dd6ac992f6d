//! Reads on a caller's behalf for the MCP features that are not tool calls
//! (resources, completions, prompts): each is the read tool's own call,
//! through [`App::call`], so the exposure, the policy (rate limits
//! included), the credential choice, the sandbox and the audit log treat
//! it exactly like `tools/call` of that tool by the same caller.

use rmcp::ErrorData;
use serde_json::Value;

use crate::caller::Caller;
use crate::policy::Policy;
use crate::policy::rules::Action;
use crate::server::app::App;
use crate::tools::{CallOutcome, FailureKind, JsonObject, ToolInfo};

/// One caller's view of the read tools.
pub struct Reads<'a> {
    app: &'a App,
    caller: Caller,
    policy: std::sync::Arc<Policy>,
}

/// Why a read gave no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFailure {
    /// Refused before it ran (not offered, hidden, denied, no credential,
    /// rate-limited, approval needed): the text says why.
    Refused(String),
    /// The arguments were rejected: the text names the field.
    InvalidArguments(String),
    /// It ran and failed (Proxmox, the sandbox): the text says why.
    Failed(String),
}

impl ReadFailure {
    /// The MCP error for a failed read of `tool`: a refusal reads as "not
    /// found" (the resource is not there for this caller, as the listing
    /// says), bad arguments as invalid params, anything else as internal.
    pub fn into_error(self, tool: &str) -> ErrorData {
        match self {
            ReadFailure::Refused(why) => {
                ErrorData::resource_not_found(format!("{tool} refused this read: {why}"), None)
            }
            ReadFailure::InvalidArguments(why) => {
                ErrorData::invalid_params(format!("{tool}: {why}"), None)
            }
            ReadFailure::Failed(why) => {
                ErrorData::internal_error(format!("{tool} failed: {why}"), None)
            }
        }
    }
}

impl<'a> Reads<'a> {
    /// The reads of `caller` under the policy in force now.
    pub fn new(app: &'a App, caller: Caller) -> Reads<'a> {
        let policy = app.policy().policy();
        Reads {
            app,
            caller,
            policy,
        }
    }

    /// The server the reads go to.
    pub fn app(&self) -> &'a App {
        self.app
    }

    /// The tool named `name` when this caller may run it without anyone's
    /// approval: offered to it, not hidden, allowed by the policy before
    /// any argument is seen, and with a credential to carry. What this
    /// refuses is left out of listings and completions; the call itself
    /// is still decided in full by [`App::call`].
    pub fn usable(&self, name: &str) -> Option<&'a ToolInfo> {
        let tool = self.app.tool(name)?;
        let view = self.app.exposure().view(self.caller.token.as_deref());
        let usable = view.offers(tool).is_ok()
            && self.policy.visible(tool)
            && self.policy.effective(tool).action == Action::Allow
            && self.app.has_credential(&self.caller, tool, &self.policy);
        usable.then_some(tool)
    }

    /// Whether every one of `names` is [`usable`](Self::usable).
    pub fn all_usable(&self, names: &[&str]) -> bool {
        names.iter().all(|n| self.usable(n).is_some())
    }

    /// Runs `tool` with `arguments` as this caller: its structured result,
    /// or why there is none.
    pub async fn run(&self, tool: &str, arguments: JsonObject) -> Result<Value, ReadFailure> {
        let report = self.app.call(&self.caller, tool, &arguments).await;
        match report.outcome {
            CallOutcome::Output {
                structured,
                is_error: false,
                ..
            } => Ok(structured),
            CallOutcome::Output { summary, .. } => Err(ReadFailure::Failed(summary)),
            CallOutcome::Failed { kind, message } => Err(match kind {
                FailureKind::Policy | FailureKind::Busy => ReadFailure::Refused(message),
                FailureKind::InvalidArguments => ReadFailure::InvalidArguments(message),
                _ => ReadFailure::Failed(message),
            }),
            CallOutcome::UnknownTool(name) => Err(ReadFailure::Refused(format!(
                "the component has no tool {name}"
            ))),
        }
    }
}
