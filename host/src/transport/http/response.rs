//! The answers pve-mcp gives itself (before rmcp sees a request): a status,
//! the headers the status calls for, and a JSON-RPC error body, the shape
//! the official SDKs send and parse for transport-level errors.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::BoxBody};

/// The body type of every response.
pub type Body = BoxBody<Bytes, Infallible>;

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

    /// The HTTP response.
    pub fn into_response(self) -> Response<Body> {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": TRANSPORT_ERROR, "message": self.message },
        });
        let mut response = Response::new(full(body.to_string()));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
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

/// A plain-text answer (health checks, unknown paths).
pub fn text(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
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
