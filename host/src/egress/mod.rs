//! The egress gate: the one place a guest's HTTP request can leave the
//! sandbox. It sits in wasi-http's `send_request` hook, checks every request
//! against the one cluster the call was admitted for and the call's allowed
//! methods, and adds the credentials only after the check.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue, Method, Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use wasmtime_wasi_http::{
    DEFAULT_FORBIDDEN_HEADERS, Error as HttpError, ForbiddenHeaderFilter, RequestOptions, WasiBody,
    WasiHttpHooks,
};

use crate::endpoint::{API_PREFIX, Endpoint, check_api_path};
use crate::route::BoundRoute;
use crate::upstream::{BodyTimeout, Upstream, UpstreamBody, UpstreamFailure};

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

/// How many requests the gate may refuse in one call before the call is
/// ended. A correct component is refused at most a handful of times (the
/// hostile suite's widest probe makes about 20 deliberate mistakes); 32
/// leaves room for that and for a tool retrying a few refused requests,
/// while a component looping on refusals (a bug or an attack: each refusal
/// costs the host a log line and an audit record) is stopped at once.
pub const MAX_REFUSALS: usize = 32;

/// What one call may consume upstream, from `[sandbox]`.
#[derive(Debug, Clone, Copy)]
pub struct CallCaps {
    /// Cap on one upstream response body.
    pub max_response_bytes: usize,
    /// Cap on the requests one call may send (`[sandbox] max_requests_per_call`).
    pub max_requests: usize,
}

/// The longest method, authority or path kept in a record, in bytes. The
/// Proxmox API's paths are far shorter; a longer one is cut on a character
/// boundary and ends in [`TRUNCATED`], so the audit shows that it was cut.
pub const MAX_RECORDED_LEN: usize = 512;

/// Ends a value cut to [`MAX_RECORDED_LEN`].
pub const TRUNCATED: &str = "…[truncated]";

// The bookkeeping a call's refusals cost is bounded by a constant, whatever
// the guest sends: at most MAX_REFUSALS records are kept, each holding a
// method, authority and path of at most 512 + 14 bytes (TRUNCATED is 14
// bytes) and a denial of under 100 bytes, so with the record's ~150 bytes
// of fixed fields one kept record is under 2 KiB and the 32 of them plus
// the one summary record under 66 KiB. Every later refusal only increments
// the summary's counter. The audit log turns each record into one line of
// about the same size (and the call record lists method and path again), so
// a call's refusals cost under 200 KiB of host memory and audit log, next to
// the per-call guest memory cap (`memory_mib`, 64 MiB by default).

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

/// The one configured cluster a call may reach: an index into the gate's
/// endpoints, made only by [`Gate::resolve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterIndex(usize);

/// Why the gate refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denial {
    /// Scheme, host or port is not a configured endpoint.
    #[error("not a configured Proxmox endpoint")]
    Authority,
    /// A configured endpoint, but not the cluster this call was admitted
    /// for (its `cluster` argument, or the default).
    #[error("not the cluster this call was admitted for")]
    OtherCluster,
    /// The path is outside the API or tries to escape it.
    #[error("{0}")]
    Path(String),
    /// The method is not allowed for this call.
    #[error("method not allowed for this call")]
    Method,
    /// A request the call's method allows, but not this one: no route of
    /// its tool, bound to its arguments, admits it.
    #[error("not a request this call's tool declares for these arguments")]
    Route,
    /// A body on a GET, which Proxmox never accepts.
    #[error("a GET request may not carry a body")]
    BodyOnGet,
    /// A body over Proxmox's own 512 KiB limit.
    #[error("request body over 512 KiB")]
    BodyTooLarge,
    /// The call already sent as many requests as it may (the number).
    #[error("over the limit of {0} requests in one call")]
    TooManyRequests(usize),
    /// Not one request: the summary that ends a call's refusals once
    /// [`MAX_REFUSALS`] were kept, counting the refused requests after them.
    #[error("and {0} more refused")]
    RefusedMore(usize),
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

    /// The cluster a call names in its `cluster` argument, by the rule the
    /// component applies (the exact name, else the one name equal ignoring
    /// case), or the first when it names none. `None` when that names no
    /// configured cluster (the component then refuses the argument) or none
    /// is configured: such a call may reach no cluster at all.
    pub fn resolve(&self, wanted: Option<&serde_json::Value>) -> Option<ClusterIndex> {
        let names = || self.endpoints.iter().map(|e| e.cluster.as_str());
        let index = match wanted {
            None | Some(serde_json::Value::Null) => (!self.endpoints.is_empty()).then_some(0),
            Some(serde_json::Value::String(wanted)) => {
                names().position(|n| n == wanted).or_else(|| {
                    let mut folded = names()
                        .enumerate()
                        .filter(|(_, n)| n.eq_ignore_ascii_case(wanted));
                    match (folded.next(), folded.next()) {
                        (Some((i, _)), None) => Some(i),
                        _ => None,
                    }
                })
            }
            Some(_) => None,
        };
        index.map(ClusterIndex)
    }

    /// The configured name of a resolved cluster.
    pub fn cluster_name(&self, cluster: ClusterIndex) -> &str {
        &self.endpoints[cluster.0].cluster
    }

    /// A resolved cluster's endpoint.
    pub fn endpoint(&self, cluster: ClusterIndex) -> &GateEndpoint {
        &self.endpoints[cluster.0]
    }

    /// Decides one request of a call bound to `bound`: the endpoint it goes
    /// to, or why not. A request to another configured cluster is refused
    /// like one to an unknown host, so a call admitted for one cluster
    /// cannot read or write another.
    pub fn check(
        &self,
        method: &Method,
        uri: &http::Uri,
        access: Access,
        bound: Option<ClusterIndex>,
        writes: &[BoundRoute],
    ) -> Result<ClusterIndex, Denial> {
        let index = match bound {
            Some(b) if self.endpoints[b.0].endpoint.matches(uri) => b,
            _ if self.endpoints.iter().any(|e| e.endpoint.matches(uri)) => {
                return Err(Denial::OtherCluster);
            }
            _ => return Err(Denial::Authority),
        };
        check_api_path(uri.path()).map_err(|d| Denial::Path(d.to_string()))?;
        if !access.allows(method) {
            return Err(Denial::Method);
        }
        // Reads are any GET under the API; a write must be one the tool
        // declared, bound to this call's arguments. A call whose route is
        // its own request has its reads bound too.
        if *method != Method::GET || writes.iter().any(BoundRoute::binds_reads) {
            // From the `/` that ends the prefix: `/nodes/...`.
            let api_path = uri.path().get(API_PREFIX.len() - 1..).unwrap_or_default();
            if !writes.iter().any(|w| w.admits(method, api_path)) {
                return Err(Denial::Route);
            }
        }
        Ok(index)
    }

    /// The name of the configured cluster whose endpoint `uri` is, for the
    /// record of a request (the bound one first, when two share an
    /// endpoint).
    fn cluster_of(&self, uri: &http::Uri, bound: Option<ClusterIndex>) -> Option<String> {
        bound
            .filter(|b| self.endpoints[b.0].endpoint.matches(uri))
            .map(|b| b.0)
            .or_else(|| self.endpoints.iter().position(|e| e.endpoint.matches(uri)))
            .map(|i| self.endpoints[i].cluster.clone())
    }
}

/// What happened to one request the guest made, for the log and the audit.
#[derive(Debug, Clone)]
pub struct EgressRecord {
    /// The configured cluster whose endpoint the request was for, if any.
    pub cluster: Option<String>,
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

/// The records of one call, shared between its hooks and the caller. At
/// most [`MAX_REFUSALS`] denied requests are recorded one by one; past them
/// one record whose denial is [`Denial::RefusedMore`] counts the rest.
pub type EgressLog = Arc<Mutex<Vec<EgressRecord>>>;

/// How many requests a call has sent and had refused, and the signal that
/// ends the call when either is too many. Shared by the call's hooks
/// (including their in-flight futures) and the sandbox that runs the call.
#[derive(Debug)]
pub struct CallBudget {
    max_requests: usize,
    refused: AtomicUsize,
    sent: AtomicUsize,
    stop: tokio::sync::Notify,
}

impl CallBudget {
    /// A budget of `max_requests` requests and [`MAX_REFUSALS`] refusals.
    pub fn new(max_requests: usize) -> Self {
        Self {
            max_requests,
            refused: AtomicUsize::new(0),
            sent: AtomicUsize::new(0),
            stop: tokio::sync::Notify::new(),
        }
    }

    /// Whether the call has had more than [`MAX_REFUSALS`] requests refused
    /// or tried to send more than its request cap, and must end: every
    /// later request fails at once.
    pub fn exhausted(&self) -> bool {
        self.refused.load(Ordering::Relaxed) > MAX_REFUSALS || self.over_requests()
    }

    /// The call's request cap.
    pub fn max_requests(&self) -> usize {
        self.max_requests
    }

    /// Whether the call tried to send more than its request cap.
    pub fn over_requests(&self) -> bool {
        self.sent.load(Ordering::Relaxed) > self.max_requests
    }

    /// Resolves once the call is [`exhausted`](CallBudget::exhausted), so the
    /// sandbox can drop a guest that is waiting on the host.
    pub async fn exhausted_signal(&self) {
        let notified = self.stop.notified();
        if self.exhausted() {
            return;
        }
        notified.await;
    }

    /// Counts one refusal; returns how many there have been, this one
    /// included. The caller records it, then calls
    /// [`signal_if_exhausted`](CallBudget::signal_if_exhausted).
    fn count_one(&self) -> usize {
        self.refused.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Wakes the sandbox if the call must end.
    fn signal_if_exhausted(&self) {
        if self.exhausted() {
            self.stop.notify_waiters();
        }
    }
}

/// The per-call hooks: the gate, the cluster and methods this call may
/// use, and where to record what it did.
pub struct CallHooks {
    gate: Arc<Gate>,
    tool: Arc<str>,
    access: Access,
    cluster: Option<ClusterIndex>,
    writes: Vec<BoundRoute>,
    max_response_bytes: usize,
    log: EgressLog,
    budget: Arc<CallBudget>,
}

impl CallHooks {
    /// Hooks for one call of `tool`, bound to `cluster` (none: every
    /// request is refused) and, for writes, to `writes`.
    pub fn new(
        gate: Arc<Gate>,
        tool: &str,
        access: Access,
        cluster: Option<ClusterIndex>,
        writes: Vec<BoundRoute>,
        caps: CallCaps,
        log: EgressLog,
    ) -> Self {
        Self {
            gate,
            tool: tool.into(),
            access,
            cluster,
            writes,
            max_response_bytes: caps.max_response_bytes,
            log,
            budget: Arc::new(CallBudget::new(caps.max_requests)),
        }
    }

    /// The call's request and refusal counts, which the sandbox watches to
    /// end a call that sent too many requests or had too many refused.
    pub fn budget(&self) -> Arc<CallBudget> {
        self.budget.clone()
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
        let log = self.log.clone();
        let tool = self.tool.clone();
        let budget = self.budget.clone();
        // A call past its budget is being stopped: nothing more goes out,
        // and the request is not even looked at (nor its body read).
        if budget.exhausted() {
            deny_more(&log, &tool, &budget);
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        let mut record = EgressRecord {
            cluster: self.gate.cluster_of(request.uri(), self.cluster),
            method: bounded(request.method().as_str()),
            authority: bounded(
                request
                    .uri()
                    .authority()
                    .map(|a| a.as_str())
                    .unwrap_or_default(),
            ),
            path: bounded(request.uri().path()),
            denied: None,
            status: None,
            failure: None,
            elapsed: Duration::ZERO,
        };
        let decision = self.gate.check(
            request.method(),
            request.uri(),
            self.access,
            self.cluster,
            &self.writes,
        );
        match decision {
            Err(denial) => {
                deny(&log, &tool, &budget, record, denial);
                Box::new(async move {
                    if !budget.exhausted() {
                        drain(request.into_body()).await;
                    }
                    Err(HttpError::HttpRequestDenied)
                })
            }
            Ok(index) => {
                let gate = self.gate.clone();
                let max_response = self.max_response_bytes;
                Box::new(async move {
                    let endpoint = &gate.endpoints[index.0];
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
                        deny(&log, &tool, &budget, record, denial);
                        return Err(HttpError::HttpRequestDenied);
                    }
                    // Refused too often while the body was read: stopping.
                    if budget.exhausted() {
                        deny_more(&log, &tool, &budget);
                        return Err(HttpError::HttpRequestDenied);
                    }
                    if !admit(&log, &tool, &budget, &record) {
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

/// `value`, cut to [`MAX_RECORDED_LEN`] bytes (on a character boundary,
/// with [`TRUNCATED`] after it) when longer.
fn bounded(value: &str) -> String {
    if value.len() <= MAX_RECORDED_LEN {
        return value.to_string();
    }
    let mut end = MAX_RECORDED_LEN;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{TRUNCATED}", &value[..end])
}

/// Logs and records a refused request: the first [`MAX_REFUSALS`] each get
/// a record and a log line, the rest only the summary's count.
fn deny(log: &EgressLog, tool: &str, budget: &CallBudget, record: EgressRecord, denial: Denial) {
    // Counted and entered under the log's lock, and only then signalled:
    // the sandbox reads the log (under that lock) once it sees the call
    // exhausted, so the record that exhausted it is always there, even
    // though the hook runs on another task that the stop then aborts.
    if let Ok(mut records) = log.lock() {
        enter_denial(&mut records, tool, budget, record, denial);
    }
    budget.signal_if_exhausted();
}

/// Counts a refusal and enters its record (or, past [`MAX_REFUSALS`], its
/// count in the summary). The caller holds the log's lock.
fn enter_denial(
    records: &mut Vec<EgressRecord>,
    tool: &str,
    budget: &CallBudget,
    mut record: EgressRecord,
    denial: Denial,
) {
    let n = budget.count_one();
    if n > MAX_REFUSALS {
        return summarise(records, tool, n);
    }
    tracing::warn!(
        tool,
        method = %record.method,
        authority = %record.authority,
        path = %record.path,
        reason = %denial,
        "egress denied"
    );
    record.denied = Some(denial);
    records.push(record);
}

/// Counts a request refused unseen because the call is being stopped.
/// A call stopped at its request cap may have had few refusals before: the
/// cap's own record says why it stopped, and these requests enter the
/// summary only once the refusals pass [`MAX_REFUSALS`] too.
fn deny_more(log: &EgressLog, tool: &str, budget: &CallBudget) {
    if let Ok(mut records) = log.lock() {
        let n = budget.count_one();
        if n > MAX_REFUSALS {
            summarise(&mut records, tool, n);
        }
    }
    budget.signal_if_exhausted();
}

/// Counts a request about to leave: `true` while the call is within its
/// request cap; past it, the request is refused (and recorded, and the
/// call stopped) instead. Counted under the log's lock, like a refusal.
fn admit(log: &EgressLog, tool: &str, budget: &CallBudget, record: &EgressRecord) -> bool {
    let Ok(mut records) = log.lock() else {
        return false;
    };
    let n = budget.sent.fetch_add(1, Ordering::Relaxed) + 1;
    let max = budget.max_requests;
    if n <= max {
        return true;
    }
    if n == max + 1 {
        tracing::warn!(
            tool,
            "a call tried to send more than {max} requests; stopping the call"
        );
    }
    enter_denial(
        &mut records,
        tool,
        budget,
        record.clone(),
        Denial::TooManyRequests(max),
    );
    drop(records);
    budget.signal_if_exhausted();
    false
}

/// Enters refusal `n` (past [`MAX_REFUSALS`]) in the call's summary record,
/// adding that record (and one log line) the first time.
fn summarise(records: &mut Vec<EgressRecord>, tool: &str, n: usize) {
    let more = n.saturating_sub(MAX_REFUSALS);
    // Past the cap nothing new is entered but this summary (a request
    // already in flight may still finish its own record), so the search
    // from the end is short.
    let summary = records.iter_mut().rev().find_map(|r| match &mut r.denied {
        Some(Denial::RefusedMore(count)) => Some(count),
        _ => None,
    });
    match summary {
        // Counts race between threads; the largest is the total so far.
        Some(count) => *count = (*count).max(more),
        None => {
            tracing::warn!(
                tool,
                "egress denied {n} requests in one call, over the limit of {MAX_REFUSALS}; stopping the call"
            );
            records.push(EgressRecord {
                cluster: None,
                method: String::new(),
                authority: String::new(),
                path: String::new(),
                denied: Some(Denial::RefusedMore(more)),
                status: None,
                failure: None,
                elapsed: Duration::ZERO,
            });
        }
    }
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
        // Bound to the cluster each URL is for: what a call's own cluster
        // looks like.
        let bound = |u: &str| {
            let uri: http::Uri = u.parse().unwrap();
            gate.cluster_of(&uri, None)
                .and_then(|name| gate.resolve(Some(&serde_json::Value::String(name))))
        };
        let check =
            |m: Method, u: &str| gate.check(&m, &u.parse().unwrap(), Access::Read, bound(u), &[]);
        assert_eq!(
            check(Method::GET, "https://10.0.0.1:8006/api2/json/version"),
            Ok(ClusterIndex(0))
        );
        assert_eq!(
            check(Method::GET, "https://PVE-B:8006/api2/json/nodes"),
            Ok(ClusterIndex(1))
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
                    Access::Read,
                    Some(ClusterIndex(0)),
                    &[]
                ),
                Err(Denial::Method)
            );
        }
        assert!(!Access::Write.allows(&Method::PATCH));
        assert!(Access::Write.allows(&Method::DELETE));
    }

    #[test]
    fn a_write_must_match_a_bound_route() {
        let gate = Gate::new(vec![endpoint("a", "https://10.0.0.1:8006")]);
        let start =
            crate::route::Route::parse("POST", "/nodes/{node}/qemu/{vmid}/status/start").unwrap();
        let args = serde_json::json!({"vmid": 105});
        let writes = [start.bind(args.as_object().unwrap())];
        let bound = gate.resolve(None);
        let check = |m: Method, path: &str, access| {
            let uri = format!("https://10.0.0.1:8006/api2/json{path}")
                .parse()
                .unwrap();
            gate.check(&m, &uri, access, bound, &writes)
        };
        let start = "/nodes/pve1/qemu/105/status/start";
        assert_eq!(
            check(Method::POST, start, Access::Write),
            bound.ok_or(Denial::Route)
        );
        // Only with write access, and only that write; reads stay open.
        assert_eq!(
            check(Method::POST, start, Access::Read),
            Err(Denial::Method)
        );
        assert_eq!(
            check(
                Method::POST,
                "/nodes/pve1/qemu/106/status/start",
                Access::Write
            ),
            Err(Denial::Route)
        );
        assert_eq!(
            check(Method::DELETE, "/nodes/pve1/qemu/105", Access::Write),
            Err(Denial::Route)
        );
        assert_eq!(
            check(
                Method::GET,
                "/nodes/pve1/qemu/106/status/current",
                Access::Write
            ),
            bound.ok_or(Denial::Route)
        );
        // No routes: a call allowed to write still writes nothing.
        let uri = format!("https://10.0.0.1:8006/api2/json{start}")
            .parse()
            .unwrap();
        assert_eq!(
            gate.check(&Method::POST, &uri, Access::Write, bound, &[]),
            Err(Denial::Route)
        );
    }

    #[test]
    fn a_call_reaches_only_the_cluster_it_is_bound_to() {
        let gate = Gate::new(vec![
            endpoint("prod", "https://10.0.0.1:8006"),
            endpoint("dev", "https://pve-b:8006"),
            endpoint("Dev2", "https://pve-c:8006"),
        ]);
        let name = |c: Option<ClusterIndex>| c.map(|c| gate.cluster_name(c).to_string());
        let resolve = |v: serde_json::Value| name(gate.resolve(Some(&v)));
        // The component's rule: exact, else the one equal ignoring case,
        // else the default when none is named.
        assert_eq!(name(gate.resolve(None)), Some("prod".into()));
        assert_eq!(resolve(serde_json::Value::Null), Some("prod".into()));
        assert_eq!(resolve("dev".into()), Some("dev".into()));
        assert_eq!(resolve("DEV2".into()), Some("Dev2".into()));
        assert_eq!(resolve("staging".into()), None);
        assert_eq!(resolve(7.into()), None);
        assert_eq!(Gate::new(Vec::new()).resolve(None), None);

        let dev = gate.resolve(Some(&"dev".into()));
        let check = |u: &str, bound| {
            gate.check(&Method::GET, &u.parse().unwrap(), Access::Read, bound, &[])
        };
        assert_eq!(
            check("https://pve-b:8006/api2/json/nodes", dev),
            dev.ok_or(Denial::Authority)
        );
        // Another configured cluster is refused as firmly as a stranger.
        assert_eq!(
            check("https://10.0.0.1:8006/api2/json/nodes", dev),
            Err(Denial::OtherCluster)
        );
        assert_eq!(
            check("https://203.0.113.9:8006/api2/json/nodes", dev),
            Err(Denial::Authority)
        );
        // A call bound to nothing reaches nothing.
        assert_eq!(
            check("https://pve-b:8006/api2/json/nodes", None),
            Err(Denial::OtherCluster)
        );
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;

    #[test]
    fn long_values_are_cut_on_a_character_boundary_with_a_marker() {
        assert_eq!(bounded("/api2/json/version"), "/api2/json/version");
        let exact = "a".repeat(MAX_RECORDED_LEN);
        assert_eq!(bounded(&exact), exact);
        let long = format!("/api2/json/{}", "a".repeat(100_000));
        let cut = bounded(&long);
        assert_eq!(cut.len(), MAX_RECORDED_LEN + TRUNCATED.len());
        assert!(cut.starts_with("/api2/json/aaa") && cut.ends_with(TRUNCATED));
        // "€" is 3 bytes: 512 falls inside one, so the cut is at 510.
        let wide = "€".repeat(1000);
        assert_eq!(bounded(&wide), format!("{}{TRUNCATED}", "€".repeat(170)));
    }

    /// A GET to a host that is not the configured endpoint, with a long
    /// path: refused by the gate.
    fn refused_request() -> Request<WasiBody> {
        let uri = format!("https://203.0.113.7:8006/api2/json/{}", "a".repeat(10_000));
        let body = http_body_util::Empty::<bytes::Bytes>::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        Request::get(uri).body(body).unwrap()
    }

    #[tokio::test]
    async fn refusals_past_the_cap_end_the_call_and_are_only_counted() {
        let gate = Arc::new(Gate::new(Vec::new()));
        let log = EgressLog::default();
        let mut hooks = CallHooks::new(
            gate,
            "t",
            Access::Read,
            None,
            Vec::new(),
            CallCaps {
                max_response_bytes: 1 << 20,
                max_requests: crate::config::DEFAULT_MAX_REQUESTS_PER_CALL,
            },
            log.clone(),
        );
        let refusals = hooks.budget();
        for i in 0..1000 {
            let sent = hooks.send_request(refused_request(), None, Box::new(async { Ok(()) }));
            assert!(matches!(
                Box::into_pin(sent).await,
                Err(HttpError::HttpRequestDenied)
            ));
            assert_eq!(refusals.exhausted(), i >= MAX_REFUSALS, "after {i}");
        }
        // The sandbox's wait for the signal ends at once.
        tokio::time::timeout(Duration::from_secs(1), refusals.exhausted_signal())
            .await
            .expect("the stop signal");
        let records = log.lock().unwrap();
        assert_eq!(records.len(), MAX_REFUSALS + 1);
        for r in &records[..MAX_REFUSALS] {
            assert_eq!(r.denied, Some(Denial::Authority));
            assert_eq!(r.path.len(), MAX_RECORDED_LEN + TRUNCATED.len());
            assert!(r.path.ends_with(TRUNCATED));
        }
        assert_eq!(
            records[MAX_REFUSALS].denied,
            Some(Denial::RefusedMore(1000 - MAX_REFUSALS))
        );
    }

    /// Found by the e2e flood: requests after a call hit its request cap
    /// were summarised as refusals past MAX_REFUSALS when there had been
    /// fewer, and the count underflowed (a panic in debug builds, in the
    /// task running the call, which then never answered).
    #[test]
    fn requests_after_the_request_cap_are_refused_without_underflow() {
        let log = EgressLog::default();
        let budget = CallBudget::new(2);
        let record = EgressRecord {
            cluster: None,
            method: "GET".into(),
            authority: "pve1:8006".into(),
            path: "/api2/json/version".into(),
            denied: None,
            status: None,
            failure: None,
            elapsed: Duration::ZERO,
        };
        assert!(admit(&log, "t", &budget, &record));
        assert!(admit(&log, "t", &budget, &record));
        assert!(!admit(&log, "t", &budget, &record));
        assert!(budget.exhausted() && budget.over_requests());
        for _ in 0..(MAX_REFUSALS + 5) {
            deny_more(&log, "t", &budget);
        }
        let records = log.lock().unwrap();
        let denials: Vec<_> = records.iter().filter_map(|r| r.denied.clone()).collect();
        assert_eq!(
            denials,
            vec![Denial::TooManyRequests(2), Denial::RefusedMore(6)],
            "{records:?}"
        );
    }

    #[tokio::test]
    async fn the_stop_signal_waits_until_the_cap_is_passed() {
        let refusals = Arc::new(CallBudget::new(
            crate::config::DEFAULT_MAX_REQUESTS_PER_CALL,
        ));
        for _ in 0..MAX_REFUSALS {
            refusals.count_one();
            refusals.signal_if_exhausted();
        }
        let waiting = tokio::spawn({
            let refusals = refusals.clone();
            async move { refusals.exhausted_signal().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        refusals.count_one();
        refusals.signal_if_exhausted();
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("woken")
            .unwrap();
    }
}
