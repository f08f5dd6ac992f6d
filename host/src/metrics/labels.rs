//! Every label value a metric can carry: fixed enums, the names of the
//! tools the component declares (anything else is `other`), the cluster
//! names the configuration declares, and the protocol versions the server
//! speaks. No label is built from a call's arguments, a path, a token or
//! any other text a client chooses, so the number of series is bounded and
//! no secret can reach `/metrics`.

use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

/// Implements [`EncodeLabelValue`] by a type's `as_str`.
macro_rules! label_value {
    ($($ty:ty),*) => {$(
        impl EncodeLabelValue for $ty {
            fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
                EncodeLabelValue::encode(&self.as_str(), encoder)
            }
        }
    )*};
}

/// How a tool call ended, as `pve_mcp_tool_calls_total{outcome}` counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The tool answered (`isError` false).
    Ok,
    /// The tool answered with `isError` true: Proxmox refused or the
    /// guest's state ruled the action out.
    ToolError,
    /// Proxmox or the way to it failed (an error, a timeout, no answer).
    UpstreamError,
    /// The arguments were rejected.
    InvalidArguments,
    /// The policy denied the call (or its dry run planned a request the
    /// gate refuses, or it needs an approval nobody can give here).
    PolicyRefused,
    /// A rate limit refused the call.
    RateLimited,
    /// The call needs a person's approval, which is pending.
    ApprovalPending,
    /// A person declined or denied it (or its approval expired, or the
    /// approval store refused it).
    ApprovalDenied,
    /// The caller is not offered the tool (toolsets, read-only).
    NotOffered,
    /// The caller already holds its share (session calls, waiting calls).
    Busy,
    /// The sandbox stopped it: see `pve_mcp_sandbox_limits_total{kind}`.
    SandboxLimit,
    /// A bug in the component or in pve-mcp.
    InternalError,
}

impl Outcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::UpstreamError => "upstream_error",
            Outcome::InvalidArguments => "invalid_arguments",
            Outcome::PolicyRefused => "policy_refused",
            Outcome::RateLimited => "rate_limited",
            Outcome::ApprovalPending => "approval_pending",
            Outcome::ApprovalDenied => "approval_denied",
            Outcome::NotOffered => "not_offered",
            Outcome::Busy => "busy",
            Outcome::SandboxLimit => "sandbox_limit",
            Outcome::InternalError => "internal_error",
        }
    }

    /// Every outcome, for the docs' test.
    pub const ALL: [Outcome; 12] = [
        Outcome::Ok,
        Outcome::ToolError,
        Outcome::UpstreamError,
        Outcome::InvalidArguments,
        Outcome::PolicyRefused,
        Outcome::RateLimited,
        Outcome::ApprovalPending,
        Outcome::ApprovalDenied,
        Outcome::NotOffered,
        Outcome::Busy,
        Outcome::SandboxLimit,
        Outcome::InternalError,
    ];
}

/// Which of the sandbox's limits stopped a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxLimit {
    /// The call's time (`timeout_secs`, plus `max_wait_secs` for a wait).
    Deadline,
    /// The guest computed for longer than `timeout_secs` of running time.
    Cpu,
    /// The instance's memory cap (`memory_mib`).
    Memory,
    /// The tool's result over `max_output_mib`.
    Output,
    /// More than `max_requests_per_call` requests to Proxmox.
    Requests,
    /// Too many requests the egress gate refused.
    Refusals,
    /// The guest trapped (a crash in the component).
    Trap,
    /// The server was shutting down: no slot was given.
    Shutdown,
}

impl SandboxLimit {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxLimit::Deadline => "deadline",
            SandboxLimit::Cpu => "cpu",
            SandboxLimit::Memory => "memory",
            SandboxLimit::Output => "output",
            SandboxLimit::Requests => "requests",
            SandboxLimit::Refusals => "refusals",
            SandboxLimit::Trap => "trap",
            SandboxLimit::Shutdown => "shutdown",
        }
    }
}

/// Why the egress gate refused a request, one value per rule (the audit
/// log's `egress.*` rule names, with `_` for `-`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Denial {
    /// Not a configured Proxmox endpoint.
    Authority,
    /// Another cluster than the call's.
    Cluster,
    /// Outside `/api2/json/`, or escaping it.
    Path,
    /// A method the call's access does not allow.
    Method,
    /// No route of the tool admits it.
    Route,
    /// A guarded read the tool does not declare.
    Guarded,
    /// A once-only request sent again.
    Once,
    /// Parameters the routes do not admit.
    Params,
    /// Not the approved plan's next write.
    Plan,
    /// A body on a GET.
    BodyOnGet,
    /// A body over 512 KiB.
    BodyTooLarge,
    /// Over the call's request cap.
    TooManyRequests,
    /// Refused unseen: the call was being stopped.
    Stopping,
}

impl Denial {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Denial::Authority => "authority",
            Denial::Cluster => "cluster",
            Denial::Path => "path",
            Denial::Method => "method",
            Denial::Route => "route",
            Denial::Guarded => "guarded",
            Denial::Once => "once",
            Denial::Params => "params",
            Denial::Plan => "plan",
            Denial::BodyOnGet => "body_on_get",
            Denial::BodyTooLarge => "body_too_large",
            Denial::TooManyRequests => "too_many_requests",
            Denial::Stopping => "stopping",
        }
    }
}

/// `read` for GET and HEAD, `write` for anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MethodClass {
    /// GET, HEAD.
    Read,
    /// POST, PUT, DELETE, ...
    Write,
}

impl MethodClass {
    /// The class of an HTTP method's name.
    pub fn of(method: &str) -> MethodClass {
        if method.eq_ignore_ascii_case("GET") || method.eq_ignore_ascii_case("HEAD") {
            MethodClass::Read
        } else {
            MethodClass::Write
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            MethodClass::Read => "read",
            MethodClass::Write => "write",
        }
    }
}

/// An upstream answer's status class, or `error` when none came (refused
/// connection, timeout, TLS, DNS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusClass {
    /// 1xx.
    Informational,
    /// 2xx.
    Success,
    /// 3xx.
    Redirect,
    /// 4xx.
    ClientError,
    /// 5xx (Proxmox's own 595 and 596, no route to a node, included).
    ServerError,
    /// No answer.
    Error,
}

impl StatusClass {
    /// The class of `status` (`None`: no answer).
    pub fn of(status: Option<u16>) -> StatusClass {
        match status {
            Some(100..=199) => StatusClass::Informational,
            Some(200..=299) => StatusClass::Success,
            Some(300..=399) => StatusClass::Redirect,
            Some(400..=499) => StatusClass::ClientError,
            Some(_) => StatusClass::ServerError,
            None => StatusClass::Error,
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusClass::Informational => "1xx",
            StatusClass::Success => "2xx",
            StatusClass::Redirect => "3xx",
            StatusClass::ClientError => "4xx",
            StatusClass::ServerError => "5xx",
            StatusClass::Error => "error",
        }
    }
}

/// `network.transport`: `pipe` for stdio, `tcp` for Streamable HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// stdio.
    Pipe,
    /// Streamable HTTP.
    Tcp,
}

impl Transport {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Tcp => "tcp",
        }
    }
}

/// The compile cache had the component's compiled artifact, or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheResult {
    /// Loaded from the cache.
    Hit,
    /// Not there (or not trusted, or no cache): compiled.
    Miss,
}

impl CacheResult {
    /// `Hit` when the cache had it.
    pub fn of(found: bool) -> CacheResult {
        if found {
            CacheResult::Hit
        } else {
            CacheResult::Miss
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheResult::Hit => "hit",
            CacheResult::Miss => "miss",
        }
    }
}

label_value!(
    Outcome,
    SandboxLimit,
    Denial,
    MethodClass,
    StatusClass,
    Transport,
    CacheResult
);

/// A tool's name as a label (one the component declares, or `other`), or a configured cluster's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Name(pub Arc<str>);

impl EncodeLabelValue for Name {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&&*self.0, encoder)
    }
}

/// The MCP protocol versions a label may name; any other is `other`.
pub const PROTOCOL_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// `version` if it is one of [`PROTOCOL_VERSIONS`], else `other`; an
/// unknown version is `""` (absent).
pub fn protocol_version(version: Option<&str>) -> &'static str {
    match version {
        None => "",
        Some(v) => PROTOCOL_VERSIONS
            .iter()
            .find(|known| **known == v)
            .copied()
            .unwrap_or("other"),
    }
}

/// `mcp_server_operation_duration_seconds`' labels (OpenTelemetry's MCP
/// semantic conventions, `.` as `_`). `error_type` is `tool_error` for a
/// result with `isError`, the JSON-RPC error code for a protocol error,
/// and empty (which Prometheus reads as absent) otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct OperationLabels {
    /// `tools/call`.
    pub mcp_method_name: &'static str,
    /// The tool, or `other`.
    pub gen_ai_tool_name: Name,
    /// `tool_error`, a JSON-RPC error code, or empty.
    pub error_type: &'static str,
    /// `pipe` or `tcp`.
    pub network_transport: Transport,
    /// The negotiated version, `other`, or empty when unknown.
    pub mcp_protocol_version: &'static str,
}

/// `pve_mcp_tool_calls_total`'s labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CallLabels {
    /// The tool, or `other`.
    pub tool: Name,
    /// How it ended.
    pub outcome: Outcome,
}

/// `pve_mcp_upstream_requests_total`'s labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct UpstreamLabels {
    /// The configured cluster's name.
    pub cluster: Name,
    /// `read` or `write`.
    pub method_class: MethodClass,
    /// `2xx` ... `5xx`, or `error`.
    pub status: StatusClass,
}

/// Labels with one enum, named `NAME`.
macro_rules! one_label {
    ($name:ident { $label:ident: $ty:ty }) => {
        /// One label.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
        pub struct $name {
            /// Its value.
            pub $label: $ty,
        }
    };
}

one_label!(LimitLabels { kind: SandboxLimit });
one_label!(DenialLabels { reason: Denial });
one_label!(CacheLabels {
    result: CacheResult
});
one_label!(VersionLabels { version: &'static str });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_method_classes() {
        assert_eq!(StatusClass::of(Some(200)).as_str(), "2xx");
        assert_eq!(StatusClass::of(Some(404)).as_str(), "4xx");
        assert_eq!(StatusClass::of(Some(500)).as_str(), "5xx");
        assert_eq!(StatusClass::of(Some(596)).as_str(), "5xx");
        assert_eq!(StatusClass::of(None).as_str(), "error");
        assert_eq!(MethodClass::of("GET"), MethodClass::Read);
        assert_eq!(MethodClass::of("POST"), MethodClass::Write);
        assert_eq!(MethodClass::of("DELETE"), MethodClass::Write);
    }

    #[test]
    fn protocol_versions_are_a_fixed_set() {
        assert_eq!(protocol_version(Some("2025-06-18")), "2025-06-18");
        assert_eq!(protocol_version(Some("9999-01-01\"} x")), "other");
        assert_eq!(protocol_version(None), "");
    }
}
