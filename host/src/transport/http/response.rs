//! What every part of the HTTP stack shares: the body type, who is at the
//! other end ([`Peer`]), what a service is ([`HttpService`]), and the
//! answers pve-mcp gives itself (before rmcp sees a request, and from the
//! approvals admin API): a status, the headers the status calls for, and a
//! JSON body: for MCP a JSON-RPC error, the shape the official SDKs send and
//! parse for transport-level errors; for the admin API `{"error": ...}`.
//! It uses no other file of the stack, so each of them can use it.

use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use tower::Service;

/// The body type of every response.
pub type Body = BoxBody<Bytes, Infallible>;

/// A service that answers every request for a body of type `B`: what a
/// connection serves, what a layer wraps and what a route is.
pub trait HttpService<B>:
    Service<Request<B>, Response = Response<Body>, Error = Infallible, Future: Send + 'static>
    + Clone
    + Send
    + 'static
{
}

impl<T, B> HttpService<B> for T where
    T: Service<Request<B>, Response = Response<Body>, Error = Infallible, Future: Send + 'static>
        + Clone
        + Send
        + 'static
{
}

/// Who is at the other end of a connection, for the log.
#[derive(Debug, Clone, Copy)]
pub enum Peer {
    /// A TCP client.
    Tcp(SocketAddr),
    /// A client on a unix socket (which has no address worth logging).
    Unix,
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Tcp(addr) => addr.fmt(f),
            Peer::Unix => f.write_str("unix"),
        }
    }
}

impl Peer {
    /// The peer's IP address; `None` on a unix socket.
    pub fn ip(&self) -> Option<std::net::IpAddr> {
        match self {
            Peer::Tcp(addr) => Some(addr.ip()),
            Peer::Unix => None,
        }
    }
}

/// JSON-RPC "server error" range: the transport refused the message.
const TRANSPORT_ERROR: i64 = -32000;

/// A refused request.
#[derive(Debug, Clone)]
pub struct Reject {
    /// The HTTP status.
    pub status: StatusCode,
    /// What happened and what to do; never contains a secret.
    pub message: String,
    /// `WWW-Authenticate` for a 401.
    pub www_authenticate: Option<&'static str>,
    /// `Retry-After` seconds for a 429 or 503.
    pub retry_after: Option<u32>,
}

impl Reject {
    /// A refusal with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Reject {
        Reject {
            status,
            message: message.into(),
            www_authenticate: None,
            retry_after: None,
        }
    }

    /// Asks the client to retry after this many seconds.
    pub fn retry_after(mut self, secs: u32) -> Reject {
        self.retry_after = Some(secs);
        self
    }

    /// The HTTP response, with a JSON-RPC error body (MCP's shape).
    pub fn into_response(self) -> Response<Body> {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": TRANSPORT_ERROR, "message": self.message },
        });
        self.with_body(&body)
    }

    /// The HTTP response, with an `{"error": message}` body (the approvals
    /// admin API's shape).
    pub fn into_error_object(self) -> Response<Body> {
        let body = serde_json::json!({ "error": self.message });
        self.with_body(&body)
    }

    fn with_body(self, body: &serde_json::Value) -> Response<Body> {
        let mut response = json(self.status, body);
        let headers = response.headers_mut();
        if let Some(value) = self.www_authenticate {
            headers.insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static(value),
            );
        }
        if let Some(secs) = self.retry_after {
            headers.insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// A whole body.
pub fn full(text: impl Into<Bytes>) -> Body {
    Full::new(text.into()).boxed()
}

/// A JSON answer.
pub fn json(status: StatusCode, body: &serde_json::Value) -> Response<Body> {
    typed(status, body.to_string(), "application/json")
}

/// A plain-text answer (health checks, unknown paths).
pub fn text(status: StatusCode, text: impl Into<Bytes>) -> Response<Body> {
    typed(status, text, "text/plain; charset=utf-8")
}

fn typed(status: StatusCode, body: impl Into<Bytes>, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reject_is_a_json_rpc_error_with_its_headers() {
        let mut r = Reject::new(StatusCode::SERVICE_UNAVAILABLE, "busy").retry_after(2);
        r.www_authenticate = Some("Bearer");
        let response = r.into_response();
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()["retry-after"], "2");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["code"], -32000);
        assert_eq!(v["error"]["message"], "busy");
        assert!(v["id"].is_null());
    }
}
