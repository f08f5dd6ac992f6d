//! The Proxmox API as the tools see it: a `GET` or a write that returns the
//! `data` of Proxmox's `{"data": ...}` envelope or an error message for the
//! agent.
//!
//! Tools talk to the [`Pve`] trait, so native tests can run them against
//! fixtures; [`Client`] is the real implementation over `wasi:http` (via
//! wstd). Decoding and error mapping are plain functions, tested natively.

use std::time::Duration;

use serde_json::Value;

use crate::cluster::Endpoint;
use crate::error::ToolError;
use crate::failure::{self, REASON_HEADER, Request};
use crate::path::{API_PREFIX, ApiPath};
use crate::write::WriteRequest;

/// How long a call may wait for Proxmox tasks when the host does not say
/// (it always does: `call-context.wait-limit-secs`); the host's default.
pub const DEFAULT_WAIT_LIMIT: Duration = Duration::from_secs(600);

/// Largest response body we read. `/cluster/resources` for thousands of
/// guests is a few MiB; anything far beyond that is not Proxmox talking,
/// and the component's memory is limited.
pub const MAX_BODY: usize = 32 * 1024 * 1024;

/// Proxmox's answer envelope: `data`, and what some endpoints put beside
/// it.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The answer.
    pub data: Value,
    /// How many items a paged list holds in all.
    pub total: Option<u64>,
    /// A node network's pending changes, as a unified diff of
    /// `/etc/network/interfaces` and `interfaces.new`.
    pub changes: Option<String>,
}

/// Access to one Proxmox VE cluster: reads, and the writes the host's
/// gate admits for the calling tool.
pub trait Pve {
    /// `GET /api2/json{path}`; returns the envelope's `data`.
    fn get(&mut self, path: &ApiPath) -> Result<Value, ToolError>;

    /// Like [`Pve::get`], with what the envelope says beside `data`: the
    /// `total` of paged endpoints (`/nodes/{node}/tasks`,
    /// `.../tasks/{upid}/log`) and the `changes` of a node's network.
    fn get_envelope(&mut self, path: &ApiPath) -> Result<Envelope, ToolError> {
        Ok(Envelope {
            data: self.get(path)?,
            total: None,
            changes: None,
        })
    }

    /// Every cluster the host lets this call reach, default first (names and
    /// base URLs only; the component never holds credentials). Makes no
    /// request.
    fn endpoints(&self) -> &[Endpoint] {
        &[]
    }

    /// The index in [`Pve::endpoints`] of the cluster this client talks to.
    fn selected(&self) -> Option<usize> {
        None
    }

    /// Sends a write (the host's egress gate admits only the calling
    /// tool's declared routes, bound to its arguments); returns the
    /// envelope's `data`: a UPID for a task, `null` for a change made at
    /// once.
    fn send(&mut self, request: &WriteRequest) -> Result<Value, ToolError>;

    /// Waits `duration` without using CPU (between polls of a task).
    fn sleep(&mut self, duration: std::time::Duration);

    /// Time since this client was made, i.e. since the call began.
    fn elapsed(&self) -> std::time::Duration;

    /// Tells the client waiting on this call how far it has got:
    /// `progress` of `total` (when known), with a one-line `message`.
    /// Report on one scale that increases, starting above 0 (percent of
    /// a task log's "NN%" with `total` 100, or seconds waited without a
    /// total). Never fails; the host drops what it cannot forward (see the
    /// WIT `progress` interface: 10 a second, 512-byte messages). The
    /// default (native tests, fakes) drops everything.
    fn report_progress(&mut self, progress: f64, total: Option<f64>, message: &str) {
        let _ = (progress, total, message);
    }

    /// The longest this call may wait for Proxmox tasks; clamp a tool's
    /// `timeout` argument to it. A waiting tool's call is stopped by the
    /// host shortly after its usual deadline plus this.
    fn wait_limit(&self) -> Duration {
        DEFAULT_WAIT_LIMIT
    }
}

/// Decodes a complete response: 2xx with a JSON envelope gives its `data`,
/// anything else an `upstream` error naming the problem.
pub fn decode_response(
    req: Request<'_>,
    status: u16,
    reason_header: Option<&str>,
    body: &[u8],
) -> Result<Value, ToolError> {
    decode_envelope(req, status, reason_header, body).map(|e| e.data)
}

/// Like [`decode_response`], also returning what the envelope says
/// beside `data`.
pub fn decode_envelope(
    req: Request<'_>,
    status: u16,
    reason_header: Option<&str>,
    body: &[u8],
) -> Result<Envelope, ToolError> {
    if !(200..300).contains(&status) {
        return Err(failure::http_error(req, status, reason_header, body));
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        failure::bad_body(
            req,
            status,
            &format!("the body is not valid JSON ({e})"),
            body,
        )
    })?;
    match value {
        Value::Object(mut envelope) => match envelope.remove("data") {
            Some(data) => Ok(Envelope {
                data,
                total: crate::json::uint(envelope.get("total")),
                changes: crate::json::text(envelope.get("changes")),
            }),
            None => Err(failure::bad_body(
                req,
                status,
                "the JSON has no \"data\" field",
                body,
            )),
        },
        _ => Err(failure::bad_body(
            req,
            status,
            "the JSON is not a {\"data\": ...} object",
            body,
        )),
    }
}

/// The real client: requests go out through `wasi:http/outgoing-handler`,
/// where the host's egress gate checks them and adds the credentials.
#[derive(Debug, Clone)]
pub struct Client {
    base_url: Option<String>,
    endpoints: Vec<Endpoint>,
    selected: Option<usize>,
    started: std::time::Instant,
    wait_limit: Duration,
    progress: ReportProgress,
}

/// Where a [`Client`] sends progress reports: the host's `progress` import,
/// which the bindings in `lib.rs` own (so this module does not reach up
/// into them).
pub type ReportProgress = fn(progress: f64, total: Option<f64>, message: &str);

impl Client {
    /// A client for one endpoint's base URL, e.g. `https://pve1:8006`;
    /// `None` if the host passed no endpoint, which fails at the first
    /// request. Nothing is sent until the first [`Pve::get`].
    pub fn new(base_url: Option<&str>) -> Self {
        Client {
            base_url: base_url.map(|b| b.trim_end_matches('/').to_owned()),
            endpoints: Vec::new(),
            selected: None,
            started: std::time::Instant::now(),
            wait_limit: DEFAULT_WAIT_LIMIT,
            progress: |_, _, _| {},
        }
    }

    /// A client for `endpoints[selected]` that also knows the other
    /// endpoints (for `pve_list_clusters`); `selected` comes from
    /// [`crate::cluster::select`].
    pub fn for_call(endpoints: Vec<Endpoint>, selected: Option<usize>) -> Self {
        let base_url = selected
            .and_then(|i| endpoints.get(i))
            .map(|e| e.base_url.as_str());
        Client {
            base_url: base_url.map(|b| b.trim_end_matches('/').to_owned()),
            selected: selected.filter(|i| *i < endpoints.len()),
            endpoints,
            started: std::time::Instant::now(),
            wait_limit: DEFAULT_WAIT_LIMIT,
            progress: |_, _, _| {},
        }
    }

    /// The same client, sending its progress reports to `report`; without
    /// it they are dropped.
    pub fn with_progress(mut self, report: ReportProgress) -> Self {
        self.progress = report;
        self
    }

    /// The same client, allowed to wait `limit` for Proxmox tasks (the
    /// call context's `wait-limit-secs`).
    pub fn with_wait_limit(mut self, limit: Duration) -> Self {
        self.wait_limit = limit;
        self
    }

    /// The full URL for an API path, if there is an endpoint.
    pub fn url(&self, path: &ApiPath) -> Option<String> {
        Some(format!("{}{}", self.base_url.as_deref()?, path.full()))
    }
}

impl Pve for Client {
    fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    fn selected(&self) -> Option<usize> {
        self.selected
    }

    fn report_progress(&mut self, progress: f64, total: Option<f64>, message: &str) {
        (self.progress)(progress, total, message);
    }

    fn wait_limit(&self) -> Duration {
        self.wait_limit
    }

    fn get(&mut self, path: &ApiPath) -> Result<Value, ToolError> {
        self.get_envelope(path).map(|e| e.data)
    }

    fn get_envelope(&mut self, path: &ApiPath) -> Result<Envelope, ToolError> {
        self.exchange("GET", &path.to_path_and_query(), None)
    }

    fn send(&mut self, request: &WriteRequest) -> Result<Value, ToolError> {
        self.exchange(request.method.as_str(), &request.target(), request.body())
            .map(|e| e.data)
    }

    fn sleep(&mut self, duration: std::time::Duration) {
        // The timer registers with the reactor, which exists only inside
        // `block_on`: it must be made there.
        let duration = wstd::time::Duration::from(duration);
        wstd::runtime::block_on(async move { wstd::task::sleep(duration).await });
    }

    fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }
}

impl Client {
    /// Sends one request to `/api2/json{target}` and decodes the answer. A
    /// body is a form, sent whole with its length: pveproxy answers a
    /// chunked body with 501.
    fn exchange(
        &mut self,
        method: &'static str,
        target: &str,
        body: Option<String>,
    ) -> Result<Envelope, ToolError> {
        let Some(base_url) = self.base_url.as_deref() else {
            return Err(ToolError::Internal(
                "the host passed no Proxmox endpoint in the call context; it must pass at \
                 least one"
                    .to_owned(),
            ));
        };
        let full = format!("{API_PREFIX}{target}");
        let url = format!("{base_url}{full}");
        let req = Request {
            method,
            target: &full,
            base_url,
        };
        let builder = wstd::http::Request::builder()
            .method(method)
            .uri(url.as_str())
            .header("accept", "application/json");
        let built = match body {
            None => builder.body(wstd::http::Body::empty()),
            Some(form) => builder
                .header("content-type", "application/x-www-form-urlencoded")
                .header("content-length", form.len().to_string())
                .body(wstd::http::Body::from(form)),
        };
        let request = built.map_err(|e| {
            ToolError::Internal(format!(
                "cannot build a request from the endpoint base URL {base_url:?}: {e}; \
                 the host should pass a URL like https://pve1.example:8006"
            ))
        })?;
        // Each call runs its own short event loop; tools are synchronous
        // and make their requests one after another.
        wstd::runtime::block_on(async move {
            let response = wstd::http::Client::new()
                .send(request)
                .await
                .map_err(|e| send_error(req, &e))?;
            let status = response.status().as_u16();
            let reason = response
                .headers()
                .get(REASON_HEADER)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let body = read_body(response.into_body(), req).await?;
            decode_envelope(req, status, reason.as_deref(), &body)
        })
    }
}

/// Maps a failed `send`: wstd passes the host's typed `ErrorCode` through
/// `anyhow`, so it can be recovered by downcasting; anything else is an
/// error wstd raised itself while building or sending the request.
fn send_error(req: Request<'_>, e: &wstd::http::Error) -> ToolError {
    if let Some(code) = e.downcast_ref::<wstd::http::ErrorCode>() {
        return failure::transport_error(req, code);
    }
    if let Some(h) = e.downcast_ref::<wstd::http::error::HeaderError>() {
        return ToolError::Internal(format!(
            "the host refused a request header pve-mcp set ({h:?}) [{} {}]",
            req.method, req.target
        ));
    }
    // wstd reports a failure to write the (empty) request body as an io
    // error string; treat it like a broken connection.
    failure::body_read_error(req, &format!("{e:#}"))
}

/// Reads the whole body, up to [`MAX_BODY`] bytes.
async fn read_body(body: wstd::http::Body, req: Request<'_>) -> Result<Vec<u8>, ToolError> {
    use wstd::http::BodyExt;
    let mut body = body.into_boxed_body();
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| match e.downcast_ref::<wstd::http::ErrorCode>() {
            Some(code) => failure::transport_error(req, code),
            None => failure::body_read_error(req, &format!("{e:#}")),
        })?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > MAX_BODY {
                return Err(ToolError::Upstream(format!(
                    "Proxmox's response is larger than {} MiB, more than pve-mcp reads. Narrow \
                     the request. [{} {}]",
                    MAX_BODY / (1024 * 1024),
                    req.method,
                    req.target
                )));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

/// A [`Pve`] that answers from fixtures and records the paths asked for;
/// for unit tests of tools.
#[cfg(test)]
pub mod fake {
    use super::*;
    use std::collections::HashMap;

    /// Answers by path-and-query; unknown paths fail the test.
    #[derive(Default)]
    pub struct FakePve {
        /// Canned results by path with query, e.g. `/cluster/resources?type=vm`.
        pub answers: HashMap<String, Result<Value, ToolError>>,
        /// Every path requested, in order.
        pub requests: Vec<String>,
        /// What [`Pve::endpoints`] reports.
        pub endpoints: Vec<Endpoint>,
        /// Envelope `total`s by path with query, for [`Pve::get_envelope`].
        pub totals: HashMap<String, u64>,
        /// Envelope `changes` by path with query, for [`Pve::get_envelope`].
        pub changes: HashMap<String, String>,
        /// Canned answers to writes by `METHOD target`, e.g.
        /// `POST /nodes/pve1/qemu/100/status/start`.
        pub write_answers: HashMap<String, Result<Value, ToolError>>,
        /// Every write sent, as `METHOD target body`.
        pub writes: Vec<String>,
        /// The fake clock, advanced only by [`Pve::sleep`].
        pub clock: std::time::Duration,
    }

    impl FakePve {
        /// Adds a canned `data` value for a path.
        pub fn with(mut self, path: &str, data: Value) -> Self {
            self.answers.insert(path.to_owned(), Ok(data));
            self
        }

        /// Adds a canned `data` value and envelope `total` for a path.
        pub fn with_total(mut self, path: &str, data: Value, total: u64) -> Self {
            self.totals.insert(path.to_owned(), total);
            self.with(path, data)
        }

        /// Adds a canned `data` value and envelope `changes` for a path.
        pub fn with_changes(mut self, path: &str, data: Value, changes: &str) -> Self {
            self.changes.insert(path.to_owned(), changes.to_owned());
            self.with(path, data)
        }

        /// Adds a canned error for a path.
        pub fn failing(mut self, path: &str, e: ToolError) -> Self {
            self.answers.insert(path.to_owned(), Err(e));
            self
        }

        /// Adds a canned answer to a write, keyed `METHOD target`.
        pub fn answering(mut self, write: &str, data: Value) -> Self {
            self.write_answers.insert(write.to_owned(), Ok(data));
            self
        }
    }

    impl Pve for FakePve {
        fn endpoints(&self) -> &[Endpoint] {
            &self.endpoints
        }

        fn selected(&self) -> Option<usize> {
            (!self.endpoints.is_empty()).then_some(0)
        }

        fn get(&mut self, path: &ApiPath) -> Result<Value, ToolError> {
            let key = path.to_path_and_query();
            self.requests.push(key.clone());
            self.answers
                .get(&key)
                .cloned()
                .unwrap_or_else(|| panic!("unexpected request {key}"))
        }

        fn get_envelope(&mut self, path: &ApiPath) -> Result<Envelope, ToolError> {
            let key = path.to_path_and_query();
            let total = self.totals.get(&key).copied();
            let changes = self.changes.get(&key).cloned();
            Ok(Envelope {
                data: self.get(path)?,
                total,
                changes,
            })
        }

        fn send(&mut self, request: &WriteRequest) -> Result<Value, ToolError> {
            let key = format!("{} {}", request.method.as_str(), request.target());
            self.writes
                .push(format!("{key} {}", request.body().unwrap_or_default()));
            self.write_answers
                .get(&key)
                .cloned()
                .unwrap_or_else(|| panic!("unexpected write {key}"))
        }

        fn sleep(&mut self, duration: std::time::Duration) {
            self.clock += duration;
        }

        fn elapsed(&self) -> std::time::Duration {
            self.clock
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const REQ: Request<'static> = Request {
        method: "GET",
        target: "/api2/json/version",
        base_url: "https://pve1:8006",
    };

    #[test]
    fn envelope_data_is_returned() {
        let v = decode_response(REQ, 200, None, br#"{"data":{"version":"8.4.1"}}"#).unwrap();
        assert_eq!(v, json!({"version": "8.4.1"}));
        let v = decode_response(REQ, 200, None, br#"{"data":null}"#).unwrap();
        assert_eq!(v, Value::Null);
        let e = decode_envelope(REQ, 200, None, br#"{"data":[],"total":42}"#).unwrap();
        assert_eq!((e.data, e.total, e.changes), (json!([]), Some(42), None));
        let e = decode_envelope(REQ, 200, None, br#"{"data":[],"changes":"--- a\n"}"#).unwrap();
        assert_eq!((e.total, e.changes.as_deref()), (None, Some("--- a\n")));
    }

    #[test]
    fn bad_bodies_are_upstream_errors() {
        for body in [&b"<html>hi</html>"[..], b"", b"[1,2]", br#"{"success":1}"#] {
            let e = decode_response(REQ, 200, None, body).unwrap_err();
            assert!(matches!(e, ToolError::Upstream(_)), "{e:?}");
        }
        let e = decode_response(REQ, 200, None, b"<html>").unwrap_err();
        assert!(e.message().contains("not valid JSON"), "{e}");
    }

    #[test]
    fn error_statuses_are_mapped() {
        let e = decode_response(REQ, 401, Some("Authentication failed!"), b"").unwrap_err();
        assert!(e.message().starts_with("Authentication failed"), "{e}");
    }

    #[test]
    fn urls_join_base_prefix_and_path() {
        let c = Client::new(Some("https://pve1.example:8006/"));
        let p = ApiPath::new("cluster").lit("resources").query("type", "vm");
        assert_eq!(
            c.url(&p).as_deref(),
            Some("https://pve1.example:8006/api2/json/cluster/resources?type=vm")
        );
        assert_eq!(Client::new(None).url(&p), None);
    }

    #[test]
    fn the_wait_limit_is_the_hosts() {
        let c = Client::for_call(Vec::new(), None);
        assert_eq!(c.wait_limit(), DEFAULT_WAIT_LIMIT);
        let c = c.with_wait_limit(Duration::from_secs(42));
        assert_eq!(c.wait_limit(), Duration::from_secs(42));
    }
}
