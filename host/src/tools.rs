//! Tools as the host sees them: what the component declared, checked once
//! at load, and what one call produced.

use serde_json::{Map, Value};

use crate::route::Route;

/// A JSON object.
pub type JsonObject = Map<String, Value>;

/// Behaviour hints, as declared by the component (never trusted for
/// security decisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// MCP `readOnlyHint`.
    pub read_only: bool,
    /// MCP `destructiveHint`.
    pub destructive: bool,
    /// MCP `idempotentHint`.
    pub idempotent: bool,
    /// MCP `openWorldHint`.
    pub open_world: bool,
}

/// One tool, validated.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    /// Unique name.
    pub name: String,
    /// Human-readable title.
    pub title: String,
    /// When and why to use it.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: JsonObject,
    /// JSON Schema of the structured result.
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// The writes it may send, parsed once at load; the gate binds them to
    /// each call's arguments.
    pub routes: Vec<Route>,
    /// It may wait for Proxmox tasks (WIT `waits`), so its calls may run
    /// `sandbox.max_wait_secs` longer.
    pub waits: bool,
    /// The Proxmox privileges it needs, as the component declares them:
    /// shown to operators and checked by `pve_check_permissions`, never a
    /// security decision (Proxmox's own ACLs are).
    pub privileges: Vec<Privilege>,
    /// The GET requests it declares (WIT `reads`), for people and docs:
    /// the gate lets a call's GETs out without them.
    pub reads: Vec<String>,
    /// The toolset it belongs to (WIT `toolset`), which an operator
    /// enables or not.
    pub toolset: String,
}

impl ToolInfo {
    /// Whether this call of the tool waits, and so takes a wait slot and
    /// gets the longer deadline: a tool that declares it waits, called
    /// without routes (`pve_wait_task` always waits), or a write tool
    /// called with `wait: true` (or a `timeout` above 0: a guest command
    /// it waits for) and without `dry_run: true`. A write tool's
    /// call that does not ask to wait never queues behind calls that do,
    /// and a component that waits anyway is held to the plain deadline.
    pub fn call_waits(&self, arguments: &JsonObject) -> bool {
        let flag = |name: &str| arguments.get(name) == Some(&serde_json::Value::Bool(true));
        // A command's `timeout` is how long the call waits for it to end.
        let timeout = arguments
            .get("timeout")
            .and_then(serde_json::Value::as_f64)
            .is_some_and(|t| t > 0.0);
        self.waits && (self.routes.is_empty() || ((flag("wait") || timeout) && !flag("dry_run")))
    }
}

/// One Proxmox privilege a tool needs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Privilege {
    /// The ACL path, with `{argument}` placeholders: `/vms/{vmid}`.
    pub path: String,
    /// The privileges any one of which suffices: `VM.GuestAgent.Audit` on
    /// PVE 9 or `VM.Monitor` on PVE 8.
    pub any_of: Vec<String>,
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The tool ran; `is_error` says whether the operation failed.
    Output {
        /// Structured result (a JSON object).
        structured: Value,
        /// Short human summary.
        summary: String,
        /// MCP `isError`.
        is_error: bool,
    },
    /// No tool of that name: a protocol error, not a tool result.
    UnknownTool(String),
    /// The tool could not produce a result; the text says why and what to
    /// do. Shown to the agent as `isError: true`.
    Failed {
        /// `invalid-arguments`, `upstream`, `internal`, `sandbox` or `policy`.
        kind: FailureKind,
        /// The message for the agent.
        message: String,
    },
}

/// The kinds of [`CallOutcome::Failed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The arguments were rejected.
    InvalidArguments,
    /// Proxmox or the way to it failed.
    Upstream,
    /// The guest's state rules the action out; nothing was written.
    Precondition,
    /// A bug in the component.
    Internal,
    /// The sandbox stopped the call: deadline, memory cap, crash, oversize
    /// output, or no free slot.
    Sandbox,
    /// The policy refused the call before the guest ran.
    Policy,
    /// Refused at once, before the guest ran, because the caller already
    /// holds its share of a limited resource (`[sandbox]
    /// max_waiting_per_caller`); its rate-limit units are given back.
    Busy,
}

impl FailureKind {
    /// A stable name for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::InvalidArguments => "invalid-arguments",
            FailureKind::Upstream => "upstream",
            FailureKind::Precondition => "precondition",
            FailureKind::Internal => "internal",
            FailureKind::Sandbox => "sandbox",
            FailureKind::Policy => "policy",
            FailureKind::Busy => "busy",
        }
    }
}

impl CallOutcome {
    /// A sandbox failure with this message.
    pub fn sandbox(message: impl Into<String>) -> Self {
        CallOutcome::Failed {
            kind: FailureKind::Sandbox,
            message: message.into(),
        }
    }

    /// Whether the agent should see this as a failed call.
    pub fn is_error(&self) -> bool {
        match self {
            CallOutcome::Output { is_error, .. } => *is_error,
            _ => true,
        }
    }
}

/// MCP (and the conformance suite) allow 1-64 of these characters.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The toolset the host keeps for itself: the discovery pair
/// (`pve_search_tools`, `pve_call_tool`).
pub const DISCOVER: &str = "discover";
/// The toolsets a server offers only when they are named (`--toolsets
/// default,agent`, or `all`): with every toolset, the read-only default
/// list would outgrow its budget (docs/tools.md), so a toolset an agent
/// needs only for some jobs joins this list when it is made. Every other
/// toolset, a foreign component's too, is offered by default.
pub const OPT_IN_TOOLSETS: &[&str] = &[
    "agent",
    "provisioning",
    "nodes",
    "replication",
    "pools",
    "firewall",
    "ha",
];
/// The toolset-list word for the toolsets offered when none are named.
pub const DEFAULT_TOOLSETS: &str = "default";
/// The toolset-list word for every toolset.
pub const ALL_TOOLSETS: &str = "all";

/// Whether a server that names no toolsets offers `toolset`.
pub fn offered_by_default(toolset: &str) -> bool {
    !OPT_IN_TOOLSETS.contains(&toolset)
}

/// The discovery pair's search, a name no component may take.
pub const SEARCH_TOOL: &str = "pve_search_tools";
/// The discovery pair's call, a name no component may take.
pub const CALL_TOOL: &str = "pve_call_tool";

/// Whether `name` is a toolset name: 1-32 of `[a-z0-9-]`, starting with a
/// letter.
pub fn valid_toolset(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A tool for the host's own tests: `name`, writing these `routes`
/// (`(method, path)`), claiming read-only exactly when it has none, in the
/// toolset `t`; a test changes the fields it is about.
#[cfg(test)]
impl ToolInfo {
    pub(crate) fn sample(name: &str, routes: &[(&str, &str)]) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            title: name.into(),
            description: String::new(),
            input_schema: Default::default(),
            output_schema: None,
            annotations: Annotations {
                read_only: routes.is_empty(),
                destructive: false,
                idempotent: true,
                open_world: true,
            },
            routes: routes
                .iter()
                .map(|(m, p)| Route::parse(m, p).unwrap())
                .collect(),
            waits: false,
            privileges: Vec::new(),
            reads: Vec::new(),
            toolset: "t".into(),
        }
    }
}

/// Parses a schema the component declared; it must be a JSON object.
pub fn parse_schema(tool: &str, which: &str, text: &str) -> anyhow::Result<JsonObject> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => anyhow::bail!("tool {tool}: its {which} is not a JSON object"),
        Err(e) => anyhow::bail!("tool {tool}: its {which} is not valid JSON: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 21 (F3): only calls that wait take a wait slot.
    #[test]
    fn a_call_waits_only_when_its_tool_does_and_it_asks_to() {
        let tool = |waits: bool, routes: &[(&str, &str)]| ToolInfo {
            waits,
            ..ToolInfo::sample("t", routes)
        };
        let args = |v: serde_json::Value| v.as_object().cloned().unwrap();
        let stop = tool(true, &[("POST", "/nodes/{node}/qemu/{vmid}/status/stop")]);
        assert!(stop.call_waits(&args(serde_json::json!({"vmid": 100, "wait": true}))));
        for not_waiting in [
            serde_json::json!({"vmid": 100}),
            serde_json::json!({"vmid": 100, "wait": false}),
            serde_json::json!({"vmid": 100, "wait": "true"}),
            serde_json::json!({"vmid": 100, "wait": true, "dry_run": true}),
        ] {
            assert!(
                !stop.call_waits(&args(not_waiting.clone())),
                "{not_waiting}"
            );
        }
        // A read tool that waits (pve_wait_task) always does; a tool that
        // does not declare waiting never does.
        assert!(tool(true, &[]).call_waits(&args(serde_json::json!({}))));
        assert!(!tool(false, &[]).call_waits(&args(serde_json::json!({"wait": true}))));
    }

    #[test]
    fn tool_names_follow_mcp_rules() {
        assert!(valid_tool_name("pve_list_vms"));
        assert!(valid_tool_name("a.b-c_D9"));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name("has space"));
        assert!(!valid_tool_name(&"x".repeat(65)));
    }

    #[test]
    fn schemas_must_be_objects() {
        assert!(parse_schema("t", "input schema", r#"{"type":"object"}"#).is_ok());
        assert!(parse_schema("t", "input schema", "[]").is_err());
        assert!(parse_schema("t", "input schema", "{").is_err());
    }
}
