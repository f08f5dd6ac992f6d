//! Error and success outcomes of a request, shaped like PVE's.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::Value;

/// How PVE renders an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorBody {
    /// The API formatter's `{"data":null[,"message"][,"errors"]}`.
    Formatted,
    /// Only a status line: errors raised by the HTTP layer (auth, transport,
    /// proxy) never reach the formatter.
    Empty,
}

/// A failed request. `message` is what PVE's code raised, including the
/// trailing newline Perl's `die "...\n"` leaves where PVE has one; the reason
/// phrase is its first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: u16,
    pub message: String,
    pub errors: Option<BTreeMap<String, String>>,
    pub body: ErrorBody,
}

impl ApiError {
    /// An error from a handler or the REST layer, with a formatted body.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            errors: None,
            body: ErrorBody::Formatted,
        }
    }

    /// An error from the HTTP layer: status line only.
    pub fn bare(status: u16, message: impl Into<String>) -> Self {
        ApiError {
            body: ErrorBody::Empty,
            ..ApiError::new(status, message)
        }
    }

    /// `401` as PVE's auth handler answers: empty body.
    pub fn unauthorized(message: &str) -> Self {
        ApiError::bare(401, message)
    }

    /// `400 Parameter verification failed.` with per-field messages.
    pub fn params(errors: BTreeMap<String, String>) -> Self {
        ApiError {
            errors: Some(errors),
            ..ApiError::new(400, "Parameter verification failed.\n")
        }
    }

    /// A single-field parameter error (`raise_param_exc`).
    pub fn param(field: &str, msg: impl Into<String>) -> Self {
        let mut m = BTreeMap::new();
        m.insert(field.to_string(), msg.into());
        ApiError::params(m)
    }

    /// `403 Permission check failed (<path>, <privs>)`.
    pub fn perm(path: &str, privs: &str) -> Self {
        ApiError::new(403, format!("Permission check failed ({path}, {privs})\n"))
    }

    /// `500` with PVE's message for a missing guest config file.
    pub fn no_config(node: &str, dir: &str, vmid: &str) -> Self {
        ApiError::new(
            500,
            format!("Configuration file 'nodes/{node}/{dir}/{vmid}.conf' does not exist\n"),
        )
    }

    /// The reason phrase: first line of the message, with bytes that may not
    /// appear in a status line replaced.
    pub fn reason(&self) -> String {
        reason_phrase(&self.message)
    }

    /// The JSON body, or `None` for status-line-only errors.
    pub fn body_json(&self, message_in_body: bool) -> Option<Bytes> {
        if self.body == ErrorBody::Empty {
            return None;
        }
        let mut obj = serde_json::Map::new();
        obj.insert("data".into(), Value::Null);
        if message_in_body {
            obj.insert("message".into(), Value::String(self.message.clone()));
        }
        if let Some(errors) = &self.errors {
            let e = errors
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            obj.insert("errors".into(), Value::Object(e));
        }
        Some(Bytes::from(Value::Object(obj).to_string()))
    }
}

/// First line of `msg`, limited to bytes allowed in an HTTP reason phrase
/// (HTAB, SP, VCHAR, obs-text).
pub(crate) fn reason_phrase(msg: &str) -> String {
    let first = msg.split('\n').next().unwrap_or("");
    first
        .chars()
        .map(|c| if c == '\t' || !c.is_control() { c } else { ' ' })
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// A successful handler result.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// `{"data": value}`.
    Data(Value),
    /// `{"data": <raw>}` where `raw` is already-serialised JSON (used for big
    /// cached lists).
    RawData(Bytes),
    /// `{"data": value, "total": n}`; PVE sets `total` only when truthy.
    DataTotal(Value, u64),
    /// `{"data": value, ...}` with further top-level keys, as a handler's
    /// `set_result_attrib` adds them (the network list's `changes`).
    DataWith(Value, serde_json::Map<String, Value>),
    /// The body exactly as given: what a handler streams from a program's
    /// output (`download => {fh => ...}`), e.g. nothing when the program
    /// failed.
    Raw(Bytes),
}

impl Reply {
    pub fn into_body(self) -> Bytes {
        match self {
            Reply::Data(v) => {
                let mut obj = serde_json::Map::new();
                obj.insert("data".into(), v);
                Bytes::from(Value::Object(obj).to_string())
            }
            Reply::DataTotal(v, total) => {
                let mut obj = serde_json::Map::new();
                obj.insert("data".into(), v);
                if total > 0 {
                    obj.insert("total".into(), total.into());
                }
                Bytes::from(Value::Object(obj).to_string())
            }
            Reply::DataWith(v, attrs) => {
                let mut obj = serde_json::Map::new();
                obj.insert("data".into(), v);
                obj.extend(attrs);
                Bytes::from(Value::Object(obj).to_string())
            }
            Reply::Raw(body) => body,
            Reply::RawData(raw) => {
                let mut out = Vec::with_capacity(raw.len() + 10);
                out.extend_from_slice(b"{\"data\":");
                out.extend_from_slice(&raw);
                out.push(b'}');
                Bytes::from(out)
            }
        }
    }
}

pub(crate) type HandlerResult = Result<Reply, ApiError>;
