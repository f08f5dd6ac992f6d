//! Sending an admitted request to Proxmox and handing the answer back to
//! the guest: the reason phrase in a header wasi:http can carry, the body
//! capped, and upstream failures mapped to the wasi:http errors that say
//! what happened.

use http::{HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use wasmtime_wasi_http::{Error as HttpError, WasiBody};

use crate::upstream::{BodyTimeout, CredentialId, Upstream, UpstreamFailure};

/// The response header that carries Proxmox's HTTP reason phrase (its error
/// message) to the guest, which wasi:http cannot otherwise see.
pub const REASON_HEADER: &str = "pve-mcp-reason-phrase";

/// Sends an allowed request upstream with the call's `credential`, with
/// the response body capped.
pub async fn forward(
    upstream: &Upstream,
    credential: CredentialId,
    request: Request<Full<bytes::Bytes>>,
    max_response: usize,
) -> Result<Response<WasiBody>, (UpstreamFailure, HttpError)> {
    let response = upstream
        .send(credential, request)
        .await
        .map_err(|failure| {
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

fn into_guest_response<B>(response: Response<B>, max_response: usize) -> Response<WasiBody>
where
    B: hyper::body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let reason = reason_header(&response);
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(REASON_HEADER);
    if let Some(reason) = reason {
        parts.headers.insert(REASON_HEADER, reason);
    }
    // A body that says up front it is over the cap fails on its first
    // bytes, not after the cap's worth of them: the guest then never
    // buffers a large part of an answer it cannot use.
    let declared = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let limit = match declared {
        Some(length) if length > max_response as u64 => 0,
        _ => max_response,
    };
    let body = Limited::new(body, limit)
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

    /// What the guest reads of a body of `len` bytes, with or without its
    /// `Content-Length`, under a cap of 16 bytes.
    async fn read_capped(len: usize, declared: bool) -> Result<usize, HttpError> {
        read_declared(len, declared.then_some(len)).await
    }

    /// The same with this `Content-Length`, true or not.
    async fn read_declared(len: usize, declared: Option<usize>) -> Result<usize, HttpError> {
        let mut response = Response::new(Full::new(bytes::Bytes::from(vec![b'x'; len])));
        if let Some(declared) = declared {
            response
                .headers_mut()
                .insert(http::header::CONTENT_LENGTH, declared.into());
        }
        let body = into_guest_response(response, 16).into_body();
        body.collect().await.map(|b| b.to_bytes().len())
    }

    #[tokio::test]
    async fn a_body_over_the_cap_fails_and_one_that_says_so_fails_at_once() {
        assert_eq!(read_capped(16, true).await.unwrap(), 16);
        assert_eq!(read_capped(10, false).await.unwrap(), 10);
        // Streamed past the cap, or declared over it: the same error, which
        // names the cap (not the 0 a declared body is read with).
        for declared in [false, true] {
            let e = read_capped(17, declared).await.unwrap_err();
            assert!(
                matches!(e, HttpError::HttpResponseBodySize(Some(16))),
                "{declared}: {e:?}"
            );
        }
        // Its first bytes are refused already: the cap's worth is never
        // handed on.
        let e = read_declared(8, Some(1 << 30)).await.unwrap_err();
        assert!(
            matches!(e, HttpError::HttpResponseBodySize(Some(16))),
            "{e:?}"
        );
    }

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
