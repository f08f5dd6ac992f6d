//! The egress gate: the one place a guest's HTTP request can leave the
//! sandbox. It sits in wasi-http's `send_request` hook, checks every request
//! against the configured endpoints and the call's allowed methods, and adds
//! the credentials only after the check.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue, Method, Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use wasmtime_wasi_http::{
    DEFAULT_FORBIDDEN_HEADERS, Error as HttpError, ForbiddenHeaderFilter, RequestOptions, WasiBody,
    WasiHttpHooks,
};

use crate::endpoint::{Endpoint, check_api_path};
use crate::upstream::{Upstream, UpstreamFailure};

/// The response header that carries Proxmox's HTTP reason phrase (its error
/// message) to the guest, which wasi:http cannot otherwise see.
/// What a call may send: the methods the egress gate lets out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// GET only.
    Read,
    /// The methods the Proxmox API writes with, too.
    Write,
}

impl Access {
    /// Write access when `may_write`, else read-only.
    pub fn writing_if(may_write: bool) -> Access {
        if may_write {
            Access::Write
        } else {
            Access::Read
        }
    }

    /// The methods this access allows.
    pub fn methods(self) -> &'static [Method] {
        match self {
            Access::Read => &[Method::GET],
            Access::Write => &[Method::GET, Method::POST, Method::PUT, Method::DELETE],
        }
    }

    /// Whether `method` may go out.
    pub fn allows(self, method: &Method) -> bool {
        self.methods().contains(method)
    }

    /// `read` or `write`, as the audit log names it.
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

pub const REASON_HEADER: &str = "pve-mcp-reason-phrase";

/// Request bodies above this are refused; Proxmox's own limit is 512 KiB.
const MAX_REQUEST_BODY: usize = 512 << 10;

/// A denied request's body is read (up to these bounds) before the denial
/// is returned: wstd writes the body while it waits for the response, and
/// dropping it early shows the guest "connection reset" instead.
const DRAIN_LIMIT: usize = 1 << 20;
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// One cluster the gate lets requests through to.
pub struct GateEndpoint {
    /// The cluster's configured name.
    pub cluster: String,
    /// Scheme, host and port a request must match exactly.
    pub endpoint: Endpoint,
    /// The pooled, authenticated client for it.
    pub upstream: Upstream,
}

/// The configured endpoints, parsed once and shared by every call.
pub struct Gate {
    endpoints: Vec<GateEndpoint>,
}

/// Why the gate refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denial {
    /// Scheme, host or port is not a configured endpoint.
    #[error("not a configured Proxmox endpoint")]
    Authority,
    /// The path is outside the API or tries to escape it.
    #[error("{0}")]
    Path(String),
    /// The method is not allowed for this call.
    #[error("method not allowed for this call")]
    Method,
    /// A body on a GET, which Proxmox never accepts.
    #[error("a GET request may not carry a body")]
    BodyOnGet,
    /// A body over Proxmox's own 512 KiB limit.
    #[error("request body over 512 KiB")]
    BodyTooLarge,
}

impl Gate {
    /// A gate for these endpoints.
    pub fn new(endpoints: Vec<GateEndpoint>) -> Gate {
        Gate { endpoints }
    }

    /// The endpoints, in configuration order.
    pub fn endpoints(&self) -> &[GateEndpoint] {
        &self.endpoints
    }

    /// Decides one request: the index of the endpoint it goes to, or why
    /// not.
    pub fn check(&self, method: &Method, uri: &http::Uri, access: Access) -> Result<usize, Denial> {
        let index = self
            .endpoints
            .iter()
            .position(|e| e.endpoint.matches(uri))
            .ok_or(Denial::Authority)?;
        check_api_path(uri.path()).map_err(|d| Denial::Path(d.to_string()))?;
        if !access.allows(method) {
            return Err(Denial::Method);
        }
        Ok(index)
    }
}

/// What happened to one request the guest made, for the log and the audit.
#[derive(Debug, Clone)]
pub struct EgressRecord {
    /// HTTP method.
    pub method: String,
    /// Authority as the guest gave it.
    pub authority: String,
    /// Path without the query.
    pub path: String,
    /// The denial, if the gate refused it.
    pub denied: Option<Denial>,
    /// Upstream status, when a response arrived.
    pub status: Option<u16>,
    /// Upstream failure before a response, if any.
    pub failure: Option<UpstreamFailure>,
    /// Time from the hook being called to the response head.
    pub elapsed: Duration,
}

/// The records of one call, shared between its hooks and the caller.
pub type EgressLog = Arc<Mutex<Vec<EgressRecord>>>;

/// The per-call hooks: the gate, the methods this call may use, and where
/// to record what it did.
pub struct CallHooks {
    gate: Arc<Gate>,
    tool: Arc<str>,
    access: Access,
    max_response_bytes: usize,
    log: EgressLog,
}

impl CallHooks {
    /// Hooks for one call of `tool`.
    pub fn new(
        gate: Arc<Gate>,
        tool: &str,
        access: Access,
        max_response_bytes: usize,
        log: EgressLog,
    ) -> Self {
        Self {
            gate,
            tool: tool.into(),
            access,
            max_response_bytes,
            log,
        }
    }
}

/// Headers the guest may not set: the credentials are the host's alone.
fn is_forbidden(name: &HeaderName) -> bool {
    DEFAULT_FORBIDDEN_HEADERS.contains(name)
        || name == http::header::AUTHORIZATION
        || name == http::header::COOKIE
        || name == http::header::PROXY_AUTHORIZATION
        || name.as_str().eq_ignore_ascii_case("csrfpreventiontoken")
}

type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;
type SendFuture =
    Box<dyn Future<Output = Result<(Response<WasiBody>, IoFuture), HttpError>> + Send>;

impl WasiHttpHooks for CallHooks {
    fn forbidden_header_filter(&mut self) -> ForbiddenHeaderFilter {
        Arc::new(is_forbidden)
    }

    fn send_request(
        &mut self,
        request: Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        let started = Instant::now();
        let mut record = EgressRecord {
            method: request.method().to_string(),
            authority: request
                .uri()
                .authority()
                .map(|a| a.to_string())
                .unwrap_or_default(),
            path: request.uri().path().to_string(),
            denied: None,
            status: None,
            failure: None,
            elapsed: Duration::ZERO,
        };
        let decision = self
            .gate
            .check(request.method(), request.uri(), self.access);
        let log = self.log.clone();
        let tool = self.tool.clone();
        match decision {
            Err(denial) => {
                deny(&log, &tool, record, denial);
                Box::new(async move {
                    drain(request.into_body()).await;
                    Err(HttpError::HttpRequestDenied)
                })
            }
            Ok(index) => {
                let gate = self.gate.clone();
                let max_response = self.max_response_bytes;
                Box::new(async move {
                    let endpoint = &gate.endpoints[index];
                    // Buffered: a streamed GET body races hyper's keep-alive
                    // reuse, and the size and GET checks need it whole.
                    let (parts, body) = request.into_parts();
                    let body = match Limited::new(body, MAX_REQUEST_BODY).collect().await {
                        Ok(collected) => Some(collected.to_bytes()),
                        Err(_) => None,
                    };
                    let denial = match &body {
                        None => Some(Denial::BodyTooLarge),
                        Some(b) if parts.method == Method::GET && !b.is_empty() => {
                            Some(Denial::BodyOnGet)
                        }
                        Some(_) => None,
                    };
                    if let Some(denial) = denial {
                        deny(&log, &tool, record, denial);
                        return Err(HttpError::HttpRequestDenied);
                    }
                    let request = Request::from_parts(parts, Full::new(body.unwrap_or_default()));
                    // Recorded as it leaves (no status yet) and completed
                    // when the answer comes: a call cancelled while this
                    // waits still shows that the request was sent.
                    let slot = push(&log, record.clone());
                    let result = forward(&endpoint.upstream, request, max_response).await;
                    record.elapsed = started.elapsed();
                    match &result {
                        Ok(response) => record.status = Some(response.status().as_u16()),
                        Err((failure, _)) => record.failure = Some(failure.clone()),
                    }
                    tracing::debug!(
                        tool = %tool,
                        cluster = %endpoint.cluster,
                        method = %record.method,
                        path = %record.path,
                        status = ?record.status,
                        ms = record.elapsed.as_millis() as u64,
                        "upstream request"
                    );
                    if let Some(failure) = &record.failure {
                        tracing::warn!(tool = %tool, cluster = %endpoint.cluster, path = %record.path, "upstream failed: {failure}");
                    }
                    complete(&log, slot, record);
                    let response = result.map_err(|(_, e)| e)?;
                    Ok((response, Box::new(async { Ok(()) }) as IoFuture))
                })
            }
        }
    }
}

/// Logs and records a refused request.
fn deny(log: &EgressLog, tool: &str, mut record: EgressRecord, denial: Denial) {
    tracing::warn!(
        tool,
        method = %record.method,
        authority = %record.authority,
        path = %record.path,
        reason = %denial,
        "egress denied"
    );
    record.denied = Some(denial);
    let _ = push(log, record);
}

/// Appends a record; returns its index, for [`complete`].
fn push(log: &EgressLog, record: EgressRecord) -> Option<usize> {
    let mut records = log.lock().ok()?;
    records.push(record);
    Some(records.len() - 1)
}

/// Replaces the record `push` put at `slot` with its finished form.
fn complete(log: &EgressLog, slot: Option<usize>, record: EgressRecord) {
    if let (Some(slot), Ok(mut records)) = (slot, log.lock())
        && let Some(entry) = records.get_mut(slot)
    {
        *entry = record;
    }
}

async fn drain(body: WasiBody) {
    let limited = Limited::new(body, DRAIN_LIMIT);
    let _ = tokio::time::timeout(DRAIN_TIME, limited.collect()).await;
}

/// Sends an allowed request upstream, with the response body capped.
async fn forward(
    upstream: &Upstream,
    request: Request<Full<bytes::Bytes>>,
    max_response: usize,
) -> Result<Response<WasiBody>, (UpstreamFailure, HttpError)> {
    let response = upstream.send(request).await.map_err(|failure| {
        let error = match &failure {
            UpstreamFailure::Timeout => HttpError::ConnectionTimeout,
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

fn into_guest_response(
    response: Response<hyper::body::Incoming>,
    max_response: usize,
) -> Response<WasiBody> {
    let reason = response
        .extensions()
        .get::<hyper::ext::ReasonPhrase>()
        .and_then(|r| HeaderValue::from_bytes(r.as_bytes()).ok());
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(REASON_HEADER);
    if let Some(reason) = reason {
        parts.headers.insert(REASON_HEADER, reason);
    }
    let body = Limited::new(body, max_response)
        .map_err(move |e| match e.downcast::<hyper::Error>() {
            Ok(hyper_error) => HttpError::Hyper(*hyper_error),
            Err(_) => HttpError::HttpResponseBodySize(Some(max_response as u64)),
        })
        .boxed_unsync();
    Response::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers_are_forbidden_to_the_guest() {
        for name in [
            "authorization",
            "cookie",
            "csrfpreventiontoken",
            "CSRFPreventionToken",
            "proxy-authorization",
            "host",
        ] {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            assert!(is_forbidden(&name), "{name}");
        }
        assert!(!is_forbidden(&HeaderName::from_static("accept")));
    }
}

#[cfg(test)]
mod gate_tests {
    use std::time::Duration;

    use super::*;
    use crate::config::{Auth, Cluster};
    use crate::secret::Secret;
    use crate::tls::client::TlsMode;

    fn endpoint(name: &str, url: &str) -> GateEndpoint {
        let cluster = Cluster {
            name: name.into(),
            endpoint: Endpoint::parse(url, false).unwrap(),
            auth: Auth::Token {
                id: "root@pam!t".into(),
                secret: Secret::new("secret-value"),
            },
            tls: TlsMode::Fingerprint(crate::tls::client::Fingerprint::of(b"x")),
            timeout: Duration::from_secs(5),
        };
        GateEndpoint {
            cluster: name.into(),
            endpoint: cluster.endpoint.clone(),
            upstream: Upstream::new(&cluster).unwrap(),
        }
    }

    #[test]
    fn gate_routes_to_the_matching_endpoint_and_denies_the_rest() {
        let gate = Gate::new(vec![
            endpoint("a", "https://10.0.0.1:8006"),
            endpoint("b", "https://pve-b:8006"),
        ]);
        let check = |m: Method, u: &str| gate.check(&m, &u.parse().unwrap(), Access::Read);
        assert_eq!(
            check(Method::GET, "https://10.0.0.1:8006/api2/json/version"),
            Ok(0)
        );
        assert_eq!(
            check(Method::GET, "https://PVE-B:8006/api2/json/nodes"),
            Ok(1)
        );
        assert_eq!(
            check(Method::POST, "https://10.0.0.1:8006/api2/json/version"),
            Err(Denial::Method)
        );
        assert_eq!(
            check(Method::DELETE, "https://pve-b:8006/api2/json/nodes/x"),
            Err(Denial::Method)
        );
        assert_eq!(
            check(Method::GET, "https://10.0.0.1:8007/api2/json/version"),
            Err(Denial::Authority)
        );
        assert_eq!(
            check(Method::GET, "http://10.0.0.1:8006/api2/json/version"),
            Err(Denial::Authority)
        );
        assert_eq!(
            check(Method::GET, "https://10.0.0.2:8006/api2/json/version"),
            Err(Denial::Authority)
        );
        assert!(matches!(
            check(Method::GET, "https://10.0.0.1:8006/api2/extjs/version"),
            Err(Denial::Path(_))
        ));
        assert!(matches!(
            check(Method::GET, "https://10.0.0.1:8006/api2/json/%2e%2e/x"),
            Err(Denial::Path(_))
        ));
        // A method outside the allowed set is denied even for a valid target.
        for method in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
            assert_eq!(
                gate.check(
                    &method,
                    &"https://10.0.0.1:8006/api2/json/version".parse().unwrap(),
                    Access::Read
                ),
                Err(Denial::Method)
            );
        }
        assert!(!Access::Write.allows(&Method::PATCH));
        assert!(Access::Write.allows(&Method::DELETE));
    }
}
