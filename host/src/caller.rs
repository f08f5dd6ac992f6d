//! Who is calling: the MCP session and, over HTTP, the name of the bearer
//! token that authenticated it. Policy (rate limits per session and per
//! token) and the audit log both key on this.

use std::collections::HashMap;
use std::sync::Arc;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use rmcp::RoleServer;
use rmcp::model::RequestMetaObject;
use rmcp::service::RequestContext;

/// The session name used for the one stdio client of a process.
pub const STDIO_SESSION: &str = "stdio";

/// The session name of an HTTP request without a session (MCP
/// 2026-07-28), followed by `:TOKEN` when a bearer token authenticated it.
pub const STATELESS_SESSION: &str = "stateless";

/// Longest client name kept, in characters.
const MAX_CLIENT_NAME: usize = 128;

/// The name of the bearer token that authenticated an HTTP request. The HTTP
/// auth layer inserts it into the request's extensions; rmcp hands the
/// request's `http::request::Parts` to the handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenName(pub Arc<str>);

/// The caller of one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The MCP session id over HTTP (`stateless:TOKEN` or
    /// [`STATELESS_SESSION`] without one), [`STDIO_SESSION`] over stdio.
    pub session: Arc<str>,
    /// The named bearer token, over HTTP with auth on.
    pub token: Option<Arc<str>>,
    /// The client's `name/version` from its MCP `initialize`, if known.
    pub client: Option<Arc<str>>,
    /// The tool the call came through when it was not called by name:
    /// `pve_call_tool`, for the audit record.
    pub via: Option<&'static str>,
    /// The W3C `traceparent` in the request's `_meta`, when valid (see
    /// [`traceparent`]): the audit record and the
    /// call's log line carry it.
    pub trace: Option<Arc<str>>,
}

impl Caller {
    /// The caller over stdio (and for `pve-mcp call` and the demo).
    pub fn stdio() -> Caller {
        Caller {
            session: Arc::from(STDIO_SESSION),
            token: None,
            client: None,
            via: None,
            trace: None,
        }
    }

    /// Whom this caller's waits count against (`[sandbox]
    /// max_waiting_per_caller`): its bearer token across all its sessions
    /// (`token:NAME`), else its session (`session:ID`). `None` for stdio,
    /// which is one client and has no other tenant to starve.
    pub fn wait_key(&self) -> Option<Arc<str>> {
        match &self.token {
            Some(token) => Some(Arc::from(format!("token:{token}"))),
            None if self.session.as_ref() == STDIO_SESSION => None,
            None => Some(Arc::from(format!("session:{}", self.session))),
        }
    }

    /// Whether this is an HTTP request without a session (MCP
    /// 2026-07-28). The HTTP layer lets through only session ids it issued,
    /// which never take this form.
    pub fn is_stateless(&self) -> bool {
        self.session.as_ref() == STATELESS_SESSION
            || self
                .session
                .strip_prefix(STATELESS_SESSION)
                .is_some_and(|rest| rest.starts_with(':'))
    }

    /// The caller of an MCP request: over Streamable HTTP the session header
    /// and the token the auth layer recorded, otherwise stdio.
    pub fn from_context(context: &RequestContext<RoleServer>) -> Caller {
        let client = context.peer.peer_info().map(|info| {
            let mut name = format!("{}/{}", info.client_info.name, info.client_info.version);
            // The client chooses this text; a record needs no more of it.
            if let Some((cut, _)) = name.char_indices().nth(MAX_CLIENT_NAME) {
                name.truncate(cut);
            }
            Arc::from(name)
        });
        let trace = traceparent(&context.meta).map(Arc::from);
        let Some(parts) = context.extensions.get::<http::request::Parts>() else {
            return Caller {
                client,
                trace,
                ..Caller::stdio()
            };
        };
        let token = parts.extensions.get::<TokenName>().map(|t| t.0.clone());
        // The HTTP layer lets through only session ids it issued (to this
        // token). A request without one is stateless (MCP 2026-07-28):
        // its session is named after the token, so that rate limits,
        // audit records and approvals are per token, not per request.
        let session = match parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            Some(id) => Arc::from(id),
            None => match &token {
                Some(token) => Arc::from(format!("{STATELESS_SESSION}:{token}")),
                None => Arc::from(STATELESS_SESSION),
            },
        };
        Caller {
            session,
            token,
            client,
            via: None,
            trace,
        }
    }
}

/// The W3C `traceparent` of a request's `_meta` in its canonical
/// version-00 form, when it parses as a valid one (the rule the telemetry
/// span's parent follows): what the audit record and the call's log line keep.
/// Rebuilt from the parsed ids, so nothing else the client wrote is kept.
pub fn traceparent(meta: &RequestMetaObject) -> Option<String> {
    let value = meta.get_traceparent()?;
    // Version 00 is 55 characters; later versions may append fields, but
    // nothing longer is worth parsing.
    if value.len() > 256 {
        return None;
    }
    let carrier = HashMap::from([("traceparent".to_string(), value.to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let span = cx.span();
    let context = span.span_context();
    context.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_is_kept_only_when_valid_and_in_its_canonical_form() {
        let of = |value: &str| {
            let mut meta = RequestMetaObject::new();
            meta.set_traceparent(value);
            traceparent(&meta)
        };
        let valid = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        assert_eq!(of(valid).as_deref(), Some(valid));
        assert_eq!(traceparent(&RequestMetaObject::new()), None);
        for junk in [
            "not a traceparent",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01\n{\"x\":1}",
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
        ] {
            assert_eq!(of(junk), None, "{junk:?}");
        }
        // A later version's extra fields are not recorded.
        assert_eq!(
            of("01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-extra").as_deref(),
            Some(valid)
        );
    }
    #[test]
    fn waits_count_per_token_across_sessions_and_stdio_is_exempt() {
        let over_http = |session: &str, token: Option<&str>| Caller {
            session: Arc::from(session),
            token: token.map(Arc::from),
            client: None,
            via: None,
            trace: None,
        };
        assert_eq!(Caller::stdio().wait_key(), None);
        let a = over_http("s1", Some("alice")).wait_key();
        assert_eq!(a.as_deref(), Some("token:alice"));
        assert_eq!(over_http("s2", Some("alice")).wait_key(), a);
        assert_eq!(
            over_http("s1", None).wait_key().as_deref(),
            Some("session:s1")
        );
    }
}
