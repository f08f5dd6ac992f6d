//! Sending an admitted request to Proxmox and handing the answer back to
//! the guest: the reason phrase in a header wasi:http can carry, the body
//! capped, and upstream failures mapped to the wasi:http errors that say
//! what happened.

use http::{HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use wasmtime_wasi_http::{Error as HttpError, WasiBody};

use crate::upstream::{BodyTimeout, Upstream, UpstreamBody, UpstreamFailure};

/// The response header that carries Proxmox's HTTP reason phrase (its error
/// message) to the guest, which wasi:http cannot otherwise see.
pub const REASON_HEADER: &str = "pve-mcp-reason-phrase";

/// Sends an allowed request upstream, with the response body capped.
pub async fn forward(
    upstream: &Upstream,
    request: Request<Full<bytes::Bytes>>,
    max_response: usize,
) -> Result<Response<WasiBody>, (UpstreamFailure, HttpError)> {
    let response = upstream.send(request).await.map_err(|failure| {
        let error = match &failure {
            UpstreamFailure::Timeout => HttpError::HttpResponseTimeout,
            UpstreamFailure::ConnectTimeout => HttpError::ConnectionTimeout,
            UpstreamFailure::Refused(_) => HttpError::ConnectionRefused,
            UpstreamFailure::Dns(text) => HttpError::DnsError {
                rcode: Some(text.clone()),
                info_code: None,
            },
            // wasi:http's TLS error codes carry no text; the message (which
            // names both fingerprints on a pin mismatch) is what the agent
            // needs, so it travels as an internal error with a payload.
            UpstreamFailure::Tls(_) => HttpError::InternalError(Some(failure.to_string())),
            UpstreamFailure::Other(text) => HttpError::InternalError(Some(text.clone())),
        };
        (failure, error)
    })?;
    Ok(into_guest_response(response, max_response))
}

/// Proxmox's reason phrase (its error message), which `wasi:http` cannot
/// carry, as the value of [`REASON_HEADER`].
pub fn reason_header<B>(response: &Response<B>) -> Option<HeaderValue> {
    response
        .extensions()
        .get::<hyper::ext::ReasonPhrase>()
        .and_then(|r| HeaderValue::from_bytes(r.as_bytes()).ok())
}

fn into_guest_response(
    response: Response<UpstreamBody>,
    max_response: usize,
) -> Response<WasiBody> {
    let reason = reason_header(&response);
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(REASON_HEADER);
    if let Some(reason) = reason {
        parts.headers.insert(REASON_HEADER, reason);
    }
    let body = Limited::new(body, max_response)
        .map_err(move |e| body_failure(e, max_response))
        .boxed_unsync();
    Response::from_parts(parts, body)
}

/// The wasi-http error for a response body that failed part-way, as
/// precise as the guest needs to tell the agent what happened: too big,
/// too slow, or cut off. (wasi-http's default for a hyper error is
/// `HTTP-protocol-error`, which reads as a malformed response.)
fn body_failure(e: Box<dyn std::error::Error + Send + Sync>, max_response: usize) -> HttpError {
    if e.is::<http_body_util::LengthLimitError>() {
        return HttpError::HttpResponseBodySize(Some(max_response as u64));
    }
    if e.is::<BodyTimeout>() {
        return HttpError::ConnectionReadTimeout;
    }
    match e.downcast::<hyper::Error>() {
        Ok(hyper_error) if cut_off(&hyper_error) => HttpError::ConnectionTerminated,
        Ok(hyper_error) => HttpError::Hyper(*hyper_error),
        Err(other) => HttpError::InternalError(Some(other.to_string())),
    }
}

/// Whether the connection ended before the body did: closed early, or
/// reset.
fn cut_off(e: &hyper::Error) -> bool {
    if e.is_incomplete_message() {
        return true;
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            );
        }
        cause = c.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_body_cut_short_by_the_deadline_or_the_cap_says_which() {
        let slow = body_failure(Box::new(BodyTimeout(Duration::from_secs(2))), 16);
        assert!(matches!(slow, HttpError::ConnectionReadTimeout), "{slow:?}");
        let other = body_failure("something else".into(), 16);
        assert!(
            matches!(other, HttpError::InternalError(Some(_))),
            "{other:?}"
        );
    }
}
