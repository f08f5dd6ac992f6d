//! A write request as Proxmox's wire wants it.
//!
//! pveproxy has rules a generic HTTP client gets wrong (see the shared
//! reference's "wire rules"): a `DELETE` with a body is answered 501, so its
//! parameters go in the query string; a boolean must be `1`/`0` (the form
//! value `true` is a 400); and a chunked body is a 501, so a body is sent
//! whole, with its length. Each tool names its parameters with Proxmox's
//! exact spelling (`forceStop`, `target-storage`, `hostname`), never a
//! derived one.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::path::ApiPath;

/// Characters a form value keeps as they are (RFC 3986 "unreserved").
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The methods a write uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub enum Method {
    /// Creates or starts something; parameters in the body.
    #[serde(rename = "POST")]
    Post,
    /// Changes something; parameters in the body.
    #[serde(rename = "PUT")]
    Put,
    /// Removes something; parameters in the query string.
    #[serde(rename = "DELETE")]
    Delete,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }
}

/// One parameter value, typed so that it is encoded the way Proxmox reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// Text, sent as is (form-encoded).
    Text(String),
    /// An integer.
    Int(i64),
    /// A boolean, sent as `1` or `0`.
    Bool(bool),
}

impl Param {
    /// The value as it goes on the wire.
    pub fn wire(&self) -> String {
        match self {
            Param::Text(s) => s.clone(),
            Param::Int(n) => n.to_string(),
            Param::Bool(b) => if *b { "1" } else { "0" }.to_owned(),
        }
    }

    fn json(&self) -> Value {
        match self {
            Param::Text(s) => s.clone().into(),
            Param::Int(n) => (*n).into(),
            Param::Bool(b) => u8::from(*b).into(),
        }
    }
}

/// A write to send: method, path and parameters in Proxmox's spelling.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteRequest {
    /// The method.
    pub method: Method,
    /// Where, below `/api2/json`.
    pub path: ApiPath,
    /// The parameters, in the order they are sent; names as Proxmox spells
    /// them.
    pub params: Vec<(String, Param)>,
}

impl WriteRequest {
    /// A request without parameters.
    pub fn new(method: Method, path: ApiPath) -> Self {
        WriteRequest {
            method,
            path,
            params: Vec::new(),
        }
    }

    /// Adds a parameter.
    pub fn param(mut self, name: &str, value: Param) -> Self {
        self.params.push((name.to_owned(), value));
        self
    }

    /// Adds a text parameter when there is one.
    pub fn text(self, name: &str, value: Option<&str>) -> Self {
        match value {
            Some(v) => self.param(name, Param::Text(v.to_owned())),
            None => self,
        }
    }

    /// Adds an integer parameter when there is one.
    pub fn int(self, name: &str, value: Option<i64>) -> Self {
        match value {
            Some(v) => self.param(name, Param::Int(v)),
            None => self,
        }
    }

    /// Adds a boolean parameter when it is set (Proxmox's defaults are
    /// all `0`, so `false` is sent only when given).
    pub fn flag(self, name: &str, value: Option<bool>) -> Self {
        match value {
            Some(v) => self.param(name, Param::Bool(v)),
            None => self,
        }
    }

    /// The parameters form-encoded: `a=1&b=x%20y`.
    pub fn form(&self) -> String {
        let mut out = String::new();
        for (name, value) in &self.params {
            if !out.is_empty() {
                out.push('&');
            }
            out.extend(utf8_percent_encode(name, FORM));
            out.push('=');
            out.extend(utf8_percent_encode(&value.wire(), FORM));
        }
        out
    }

    /// The path and query the request goes to, below `/api2/json`: a
    /// `DELETE` carries its parameters here, never in a body.
    pub fn target(&self) -> String {
        let base = self.path.to_path_and_query();
        if self.method != Method::Delete || self.params.is_empty() {
            return base;
        }
        let joiner = if base.contains('?') { '&' } else { '?' };
        format!("{base}{joiner}{}", self.form())
    }

    /// The form body a `POST` or `PUT` sends; `None` for a `DELETE`.
    pub fn body(&self) -> Option<String> {
        (self.method != Method::Delete).then(|| self.form())
    }

    /// The request as a plan shows it; a parameter sent more than once
    /// (`command=df&command=-h`) as the list of its values, in order.
    pub fn planned(&self) -> PlannedRequest {
        let mut params = Map::new();
        for (k, v) in &self.params {
            match params.get_mut(k) {
                None => {
                    params.insert(k.clone(), v.json());
                }
                // A value is never a list itself (`Param::json`).
                Some(Value::Array(values)) => values.push(v.json()),
                Some(first) => *first = Value::Array(vec![first.take(), v.json()]),
            }
        }
        PlannedRequest {
            method: self.method,
            path: self.path.full(),
            params,
        }
    }
}

/// One request of a plan, as a person approving it reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct PlannedRequest {
    /// POST, PUT or DELETE.
    pub method: Method,
    /// The full API path, e.g. /api2/json/nodes/pve1/qemu/100/status/start
    pub path: String,
    /// The parameters exactly as sent (booleans as 1/0); in the query string for a
    /// DELETE, in the body otherwise; one sent more than once as the list of
    /// its values
    pub params: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path() -> ApiPath {
        ApiPath::new("nodes").seg("pve1").lit("qemu").id(100u32)
    }

    #[test]
    fn booleans_are_one_and_zero_and_text_is_encoded() {
        let r = WriteRequest::new(Method::Post, path().lit("snapshot"))
            .text("snapname", Some("pre-up"))
            .text("description", Some("a b&c=d"))
            .flag("vmstate", Some(true))
            .flag("absent", None)
            .int("timeout", Some(30));
        assert_eq!(
            r.body().unwrap(),
            "snapname=pre-up&description=a%20b%26c%3Dd&vmstate=1&timeout=30"
        );
        assert_eq!(r.target(), "/nodes/pve1/qemu/100/snapshot");
        assert_eq!(
            r.planned().params,
            json!({"snapname": "pre-up", "description": "a b&c=d", "vmstate": 1, "timeout": 30})
                .as_object()
                .unwrap()
                .clone()
        );
        assert_eq!(r.planned().path, "/api2/json/nodes/pve1/qemu/100/snapshot");
    }

    #[test]
    fn a_repeated_parameter_is_sent_in_order_and_planned_as_a_list() {
        let r = WriteRequest::new(Method::Post, path().lit("agent").lit("exec"))
            .text("command", Some("df"))
            .text("command", Some("-h"))
            .text("command", Some("/"));
        assert_eq!(r.body().unwrap(), "command=df&command=-h&command=%2F");
        assert_eq!(r.planned().params["command"], json!(["df", "-h", "/"]));
    }

    #[test]
    fn a_delete_carries_its_parameters_in_the_query_and_has_no_body() {
        let r = WriteRequest::new(Method::Delete, path())
            .flag("purge", Some(true))
            .flag("destroy-unreferenced-disks", Some(false));
        assert_eq!(r.body(), None);
        assert_eq!(
            r.target(),
            "/nodes/pve1/qemu/100?purge=1&destroy-unreferenced-disks=0"
        );
        let bare = WriteRequest::new(Method::Delete, path());
        assert_eq!(bare.target(), "/nodes/pve1/qemu/100");
    }
}
