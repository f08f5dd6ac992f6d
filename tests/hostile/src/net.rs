//! One HTTP exchange over raw `wasi:http`, so every step's exact error is
//! visible (a client library would fold them into one error type).

use serde_json::{Map, Value, json};
use wasip2::clocks::monotonic_clock;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, HeaderError, IncomingBody, IncomingResponse, Method, OutgoingBody,
    OutgoingRequest, Scheme,
};
use wasip2::io::poll::{self, Pollable};
use wasip2::io::streams::{OutputStream, StreamError};

use crate::report::Outcome;

/// How much of a response body is kept for the report.
const BODY_HEAD: usize = 4096;

/// A point in monotonic time after which an attempt gives up, or none.
#[derive(Debug, Clone, Copy)]
pub struct Deadline(Option<u64>);

impl Deadline {
    /// Never give up: the host's own deadline is the only limit.
    pub const NONE: Self = Self(None);

    /// `ms` milliseconds from now, but no later than `cap`.
    pub fn after_ms(ms: u64, cap: Self) -> Self {
        let at = monotonic_clock::now().saturating_add(ms.saturating_mul(1_000_000));
        Self(Some(match cap.0 {
            Some(c) => at.min(c),
            None => at,
        }))
    }

    /// Whether the deadline has passed.
    pub fn passed(self) -> bool {
        self.0.is_some_and(|at| monotonic_clock::now() >= at)
    }

    /// Blocks until `p` is ready (true) or the deadline passes (false).
    pub fn wait(self, p: &Pollable) -> bool {
        let Some(at) = self.0 else {
            p.block();
            return true;
        };
        let timer = monotonic_clock::subscribe_instant(at);
        // Poll both so a stalled host cannot hang the attempt; `p` wins a tie.
        poll::poll(&[p, &timer]).contains(&0)
    }
}

/// What to send.
pub struct Request<'a> {
    /// Method to set.
    pub method: Method,
    /// Scheme as text (`https`, `http`, anything else becomes `other`).
    pub scheme: &'a str,
    /// Authority, set verbatim.
    pub authority: &'a str,
    /// Path and query, set verbatim.
    pub path: &'a str,
    /// Extra headers, appended one by one.
    pub headers: &'a [(&'a str, &'a [u8])],
    /// A body to stream after `handle`; `None` sends no body resource at all
    /// (a GET with a streamed empty body would go out chunked).
    pub body: Option<&'a [u8]>,
    /// When to stop waiting.
    pub deadline: Deadline,
}

/// What came back.
#[derive(Debug)]
pub struct Exchange {
    /// The attempt's outcome.
    pub outcome: Outcome,
    /// Response headers, values as lossy UTF-8 (empty unless `Ok`).
    pub headers: Vec<(String, String)>,
    /// Response body length read (0 unless `Ok`).
    pub body_len: u64,
    /// The first bytes of the body, lossy UTF-8.
    pub body_head: String,
    /// Why reading the body stopped early, if it did.
    pub body_error: Option<String>,
    /// What happened to the request body, when there was one.
    pub upload: Option<Value>,
}

impl Exchange {
    fn failed(outcome: Outcome) -> Self {
        Self {
            outcome,
            headers: Vec::new(),
            body_len: 0,
            body_head: String::new(),
            body_error: None,
            upload: None,
        }
    }

    /// Extra report fields: `upload` when there was a body, and
    /// `body_len`/`body_error` when there was a response.
    pub fn extra(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(u) = &self.upload {
            m.insert("upload".into(), u.clone());
        }
        if matches!(self.outcome, Outcome::Ok(_)) {
            m.insert("body_len".into(), json!(self.body_len));
            if let Some(e) = &self.body_error {
                m.insert("body_error".into(), json!(e));
            }
        }
        m
    }
}

/// Maps a `wasi:http` error code onto the outcome vocabulary.
pub fn code_outcome(code: &ErrorCode) -> Outcome {
    match code {
        ErrorCode::HttpRequestDenied => Outcome::Denied,
        other => Outcome::Error(format!("{other:?}")),
    }
}

/// Maps a header error onto the outcome vocabulary.
pub fn header_outcome(e: &HeaderError) -> Outcome {
    match e {
        HeaderError::Forbidden => Outcome::ForbiddenHeader,
        other => Outcome::Error(format!("{other:?}")),
    }
}

fn scheme(s: &str) -> Scheme {
    match s {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        other => Scheme::Other(other.to_owned()),
    }
}

/// Sends `req` and reads the whole response.
pub fn send(req: &Request<'_>) -> Exchange {
    let fields = Fields::new();
    for (name, value) in req.headers {
        if let Err(e) = fields.append(name, value) {
            return Exchange::failed(header_outcome(&e));
        }
    }
    let out = OutgoingRequest::new(fields);
    if out.set_method(&req.method).is_err() {
        return Exchange::failed(Outcome::Rejected("set-method refused".into()));
    }
    if out.set_scheme(Some(&scheme(req.scheme))).is_err() {
        return Exchange::failed(Outcome::Rejected("set-scheme refused".into()));
    }
    if out.set_authority(Some(req.authority)).is_err() {
        return Exchange::failed(Outcome::Rejected("set-authority refused".into()));
    }
    if out.set_path_with_query(Some(req.path)).is_err() {
        return Exchange::failed(Outcome::Rejected("set-path-with-query refused".into()));
    }
    let body = match req.body {
        Some(_) => match out.body() {
            Ok(b) => Some(b),
            Err(()) => {
                return Exchange::failed(Outcome::Error("outgoing-request.body refused".into()));
            }
        },
        None => None,
    };

    let handled = outgoing_handler::handle(out, None);
    // Stream the body even if `handle` already failed: the point of these
    // attempts is to see how the host treats a body it will not send.
    let upload = match (body, req.body) {
        (Some(b), Some(data)) => Some(upload(b, data, req.deadline)),
        _ => None,
    };
    let future = match handled {
        Ok(f) => f,
        Err(code) => {
            let mut x = Exchange::failed(code_outcome(&code));
            x.upload = upload;
            return x;
        }
    };

    let ready = {
        let p = future.subscribe();
        req.deadline.wait(&p)
    };
    let result = if ready { future.get() } else { None };
    let mut x = match result {
        None => Exchange::failed(Outcome::Timeout("no response before the deadline".into())),
        Some(Err(())) => Exchange::failed(Outcome::Error("response already taken".into())),
        Some(Ok(Err(code))) => Exchange::failed(code_outcome(&code)),
        Some(Ok(Ok(resp))) => read_response(&resp, req.deadline),
    };
    x.upload = upload;
    x
}

fn read_response(resp: &IncomingResponse, deadline: Deadline) -> Exchange {
    let mut x = Exchange::failed(Outcome::Ok(resp.status()));
    x.headers = {
        let h = resp.headers();
        h.entries()
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
            .collect()
    };
    let Ok(body) = resp.consume() else {
        x.body_error = Some("incoming-response.consume refused".into());
        return x;
    };
    let mut head = Vec::new();
    if let Ok(stream) = body.stream() {
        loop {
            match stream.read(64 * 1024) {
                Ok(chunk) if chunk.is_empty() => {
                    let p = stream.subscribe();
                    if !deadline.wait(&p) {
                        x.body_error = Some("body not finished before the deadline".into());
                        break;
                    }
                }
                Ok(chunk) => {
                    x.body_len += chunk.len() as u64;
                    let room = BODY_HEAD.saturating_sub(head.len());
                    head.extend_from_slice(&chunk[..room.min(chunk.len())]);
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    x.body_error = Some(e.to_debug_string());
                    break;
                }
            }
        }
    } else {
        x.body_error = Some("incoming-body.stream refused".into());
    }
    drop(IncomingBody::finish(body));
    x.body_head = String::from_utf8_lossy(&head).into_owned();
    x
}

/// Writes `data` into the request body without ever blocking past the
/// deadline (a host that neither sends nor drains the body would otherwise
/// hang the guest), then finishes it. Reports how far it got.
fn upload(body: OutgoingBody, data: &[u8], deadline: Deadline) -> Value {
    let mut written = 0usize;
    let write = match body.write() {
        Err(()) => Err("outgoing-body.write refused".to_owned()),
        Ok(stream) => write_all(&stream, data, &mut written, deadline),
    };
    let finish = match OutgoingBody::finish(body, None) {
        Ok(()) => json!("ok"),
        Err(code) => json!(format!("{code:?}")),
    };
    json!({
        "outcome": if write.is_ok() { "ok" } else { "error" },
        "error": write.err(),
        "bytes_written": written,
        "bytes_total": data.len(),
        "finish": finish,
    })
}

fn write_all(
    stream: &OutputStream,
    data: &[u8],
    written: &mut usize,
    deadline: Deadline,
) -> Result<(), String> {
    while *written < data.len() {
        let n = stream.check_write().map_err(stream_error)?;
        if n == 0 {
            if !deadline.wait(&stream.subscribe()) {
                return Err("stalled: host took no more body before the deadline".into());
            }
            continue;
        }
        let n = usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(data.len() - *written);
        stream
            .write(&data[*written..*written + n])
            .map_err(stream_error)?;
        *written += n;
    }
    stream.flush().map_err(stream_error)?;
    // A flush is done when the stream can take writes again.
    while stream.check_write().map_err(stream_error)? == 0 {
        if !deadline.wait(&stream.subscribe()) {
            return Err("stalled: flush not done before the deadline".into());
        }
    }
    Ok(())
}

fn stream_error(e: StreamError) -> String {
    match e {
        StreamError::Closed => "closed".into(),
        StreamError::LastOperationFailed(e) => e.to_debug_string(),
    }
}
