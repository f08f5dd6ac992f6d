//! The span of one `tools/call`, as OpenTelemetry's MCP semantic
//! conventions name it: `"{mcp.method.name} {gen_ai.tool.name}"`
//! (`tools/call pve_list_vms`), kind server, with `mcp.method.name`,
//! `gen_ai.tool.name`, `gen_ai.operation.name` (`execute_tool`),
//! `mcp.protocol.version`, `network.transport` (`pipe` over stdio, `tcp`
//! over HTTP), `jsonrpc.request.id`, and at the end `error.type`
//! (`tool_error` for a result with `isError`, the JSON-RPC error code for a
//! protocol error) with the status set to error. Its parent is the W3C
//! `traceparent` (and `tracestate`) the request carries in `params._meta`.
//!
//! No argument is in it unless `[telemetry] include_arguments` is on, and
//! then as the audit log records them: secret-named values masked, private
//! keys masked, the host's secrets scrubbed, a file's content as its size
//! and SHA-256, long strings cut. No result, message or token is ever in it.

use std::collections::HashMap;
use std::future::Future;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use rmcp::model::{CallToolRequestParams, CallToolResponse, RequestMetaObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{TARGET, options};
use crate::secret::Redactor;

/// `mcp.method.name` of a tool call.
pub const TOOLS_CALL: &str = "tools/call";
/// `error.type` of a result with `isError: true`.
pub const TOOL_ERROR: &str = "tool_error";
/// Longest tool name a span carries (the client chooses it).
const MAX_TOOL_NAME: usize = 128;
/// Most bytes of arguments a span carries; past it they are cut.
const MAX_ARGUMENTS: usize = 4096;

/// The span of a `tools/call`, not entered: [`traced`] runs the call and
/// records how it ended. A disabled span, at the cost of one atomic load,
/// when traces are off.
pub fn call_span(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    redactor: &Redactor,
) -> Span {
    let Some(options) = options() else {
        return Span::none();
    };
    let tool = bounded(&request.name, MAX_TOOL_NAME);
    let transport = if context.extensions.get::<http::request::Parts>().is_some() {
        "tcp"
    } else {
        "pipe"
    };
    let version = context.protocol_version().map(|v| v.to_string());
    let span = tracing::info_span!(
        target: TARGET,
        parent: None,
        "tools/call",
        otel.name = %format!("{TOOLS_CALL} {tool}"),
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = TOOLS_CALL,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        mcp.protocol.version = version.as_deref(),
        network.transport = transport,
        jsonrpc.request.id = %context.id,
        "error.type" = Empty,
        gen_ai.tool.call.arguments = Empty,
    );
    if let Some(parent) = remote_parent(&context.meta, request.meta.as_ref()) {
        let _ = span.set_parent(parent);
    }
    if options.include_arguments {
        let arguments = request.arguments.clone().unwrap_or_default();
        span.record(
            "gen_ai.tool.call.arguments",
            arguments_text(&arguments, redactor).as_str(),
        );
    }
    span
}

/// Runs `call` and records on `span` how it ended; the span ends when the
/// call does (or is dropped with it, when the client cancels).
pub async fn traced<F>(span: Span, call: F) -> Result<CallToolResponse, ErrorData>
where
    F: Future<Output = Result<CallToolResponse, ErrorData>>,
{
    if span.is_disabled() {
        return call.await;
    }
    let result = call.await;
    if let Some(error) = error_type(&result) {
        span.record("error.type", error.as_str());
        span.record("otel.status_code", "error");
    }
    drop(span);
    result
}

/// `error.type` for an answer: `tool_error` for a result with `isError`,
/// the JSON-RPC code for a protocol error, `None` for a success.
pub fn error_type(result: &Result<CallToolResponse, ErrorData>) -> Option<String> {
    match result {
        Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => {
            Some(TOOL_ERROR.to_string())
        }
        Ok(_) => None,
        Err(e) => Some(e.code.0.to_string()),
    }
}

/// The remote parent from the request's `_meta` (rmcp moves it into the
/// context; the params' own copy is read too), when it is a valid W3C
/// `traceparent`.
fn remote_parent(
    context_meta: &RequestMetaObject,
    params_meta: Option<&RequestMetaObject>,
) -> Option<opentelemetry::Context> {
    let meta = [Some(context_meta), params_meta]
        .into_iter()
        .flatten()
        .find(|m| m.get_traceparent().is_some())?;
    let mut carrier = HashMap::new();
    carrier.insert(
        "traceparent".to_string(),
        meta.get_traceparent()?.to_string(),
    );
    if let Some(state) = meta.get_tracestate() {
        carrier.insert("tracestate".to_string(), state.to_string());
    }
    let cx = TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

/// The arguments as the audit log records them, as compact JSON, cut at
/// [`MAX_ARGUMENTS`] bytes.
fn arguments_text(arguments: &crate::tools::JsonObject, redactor: &Redactor) -> String {
    let summarised = serde_json::Value::Object(crate::egress::guest_file::summarised(arguments));
    let redacted = crate::audit::record::redact_arguments(&summarised, redactor);
    let text = crate::canonical::canonical_json(&redacted);
    let text = redactor.redact(&text).into_owned();
    if text.len() <= MAX_ARGUMENTS {
        return text;
    }
    format!(
        "{}…[cut: {} bytes]",
        bounded(&text, MAX_ARGUMENTS),
        text.len()
    )
}

/// `text`'s first `max` bytes, on a character boundary.
fn bounded(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    #[test]
    fn error_type_follows_the_answer() {
        let ok: Result<CallToolResponse, ErrorData> =
            Ok(CallToolResult::success(vec![ContentBlock::text("x")]).into());
        assert_eq!(error_type(&ok), None);
        let tool: Result<CallToolResponse, ErrorData> =
            Ok(CallToolResult::error(vec![ContentBlock::text("x")]).into());
        assert_eq!(error_type(&tool).as_deref(), Some(TOOL_ERROR));
        let protocol = Err(ErrorData::invalid_params("Unknown tool: x", None));
        assert_eq!(error_type(&protocol).as_deref(), Some("-32602"));
    }

    #[test]
    fn the_parent_comes_from_a_valid_traceparent_only() {
        let mut meta = RequestMetaObject::new();
        assert!(remote_parent(&meta, None).is_none());
        meta.set_traceparent("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01");
        let cx = remote_parent(&RequestMetaObject::new(), Some(&meta)).unwrap();
        let parent = cx.span().span_context().clone();
        assert_eq!(
            parent.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(parent.span_id().to_string(), "00f067aa0ba902b7");
        assert!(parent.is_remote() && parent.is_sampled());
        let mut bad = RequestMetaObject::new();
        bad.set_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01");
        assert!(remote_parent(&bad, None).is_none());
        bad.set_traceparent("not a traceparent");
        assert!(remote_parent(&bad, None).is_none());
    }

    #[test]
    fn arguments_are_redacted_as_the_audit_log_does() {
        let secret = "0b5a5c2e-6f7d-4a1b-9c3d-2e1f0a9b8c7d";
        let redactor = Redactor::new([Secret::new(secret)]);
        let args = json!({
            "vmid": 100,
            "cipassword": "hunter2hunter2",
            "description": format!("token {secret}"),
            "sshkey": "-----BEGIN OPENSSH PRIVATE KEY-----\nabc",
        });
        let text = arguments_text(args.as_object().unwrap(), &redactor);
        assert!(text.contains("\"vmid\":100"), "{text}");
        for leaked in ["hunter2hunter2", secret, "BEGIN OPENSSH"] {
            assert!(!text.contains(leaked), "{leaked} in {text}");
        }
        let long = json!({"description": "x".repeat(10_000)});
        let text = arguments_text(long.as_object().unwrap(), &redactor);
        assert!(text.len() < MAX_ARGUMENTS + 64, "{}", text.len());
        assert!(text.contains("…[cut:"), "{text}");
    }

    #[test]
    fn a_span_is_disabled_while_traces_are_off() {
        // No exporter is started in unit tests.
        assert!(options().is_none());
    }
}
