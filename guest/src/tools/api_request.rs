//! `pve_api_request`: one request to any Proxmox API path, the reference
//! server's escape hatch, made safe by the host rather than here.
//!
//! The component sends exactly the request the call names and nothing
//! else: no reads before, no second request (a task it starts may be
//! followed with `wait`, through the task's own status and log, which are
//! GETs of other paths and so need the tool's `wait` to be honoured by the
//! host's gate). The host decides everything else: it normalises `method`
//! and `path` before the call runs, refuses sensitive paths no policy rule
//! names, treats a `GET` as a read and anything else as a destructive
//! write, and binds the gate to this one request (its route is the call's
//! own `{method}` and `{path}`; see the WIT `route` record).
//!
//! Here the path is checked again in its normalised form (a host that
//! does not normalise gets a clear refusal for anything encoded), the
//! parameters are encoded by Proxmox's wire rules (booleans as `1`/`0`,
//! GET and DELETE in the query string, POST and PUT in a form body), and
//! secrets in the answer (console tickets, passwords, a new token's
//! value) are replaced before the agent sees them.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::task;
use crate::route::Route;
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::action::{self, TaskReport, action_input};
use crate::api::Pve;
use crate::arg::{self, choice, deserialize_from_json, fixed_schema};
use crate::error::{ToolError, quoted};
use crate::path::{API_PREFIX, ApiPath};
use crate::write::{Method, Param, WriteRequest};

choice! {
    /// The methods the Proxmox API takes.
    pub enum HttpMethod {
        /// Reads.
        Get = "GET",
        /// Creates or starts something.
        Post = "POST",
        /// Changes something.
        Put = "PUT",
        /// Removes something.
        Delete = "DELETE",
    }
}

impl HttpMethod {
    /// The write method, or `None` for a GET.
    fn write(self) -> Option<Method> {
        match self {
            HttpMethod::Get => None,
            HttpMethod::Post => Some(Method::Post),
            HttpMethod::Put => Some(Method::Put),
            HttpMethod::Delete => Some(Method::Delete),
        }
    }
}

/// Longest path accepted, in bytes.
const PATH_MAX: usize = 1024;
/// Most segments in a path (PVE's deepest is under 12).
const SEGMENTS_MAX: usize = 32;
/// Most parameters in one request.
const PARAMS_MAX: usize = 200;
/// Longest parameter value, in bytes: pveproxy's whole POST body limit.
const VALUE_MAX: usize = 512 * 1024;

/// A path below `/api2/json`, as the host normalised it: segments of
/// printable ASCII without `/ \ % ? #` or spaces, none `.` or `..`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPath(Vec<String>);

impl RequestPath {
    fn from_json(v: &Value) -> Result<Self, String> {
        if v.is_null() {
            return Err(
                "missing required argument; pass an API path, e.g. {\"path\": \"/nodes/pve1/qemu\"}"
                    .into(),
            );
        }
        let raw = arg::string(v, PATH_MAX)?;
        let rest = raw.strip_prefix(API_PREFIX).unwrap_or(raw);
        let Some(rest) = rest.strip_prefix('/') else {
            return Err(format!(
                "{} must start with '/', e.g. \"/nodes/pve1/qemu\"",
                quoted(raw, 64)
            ));
        };
        let segments: Vec<String> = rest.split('/').map(str::to_owned).collect();
        if segments.len() > SEGMENTS_MAX {
            return Err(format!("has more than {SEGMENTS_MAX} segments"));
        }
        for segment in &segments {
            if segment.is_empty() || segment == "." || segment == ".." {
                return Err(format!(
                    "{} has an empty, '.' or '..' segment; name the resource directly",
                    quoted(raw, 64)
                ));
            }
            if let Some(c) = segment
                .chars()
                .find(|c| !c.is_ascii_graphic() || "\\%?#".contains(*c))
            {
                return Err(format!(
                    "{} has the character {} in a segment; give the path decoded, without a \
                     query (parameters go in params)",
                    quoted(raw, 64),
                    quoted(&c.to_string(), 8)
                ));
            }
        }
        Ok(RequestPath(segments))
    }

    /// The path for the wire, each segment percent-encoded.
    fn api_path(&self) -> ApiPath {
        self.0
            .iter()
            .fold(ApiPath::root(), |path, segment| path.seg(segment))
    }

    /// Whether a segment is `name`.
    fn has_segment(&self, name: &str) -> bool {
        self.0.iter().any(|s| s == name)
    }
}
deserialize_from_json!(RequestPath);
fixed_schema!(
    RequestPath,
    serde_json::json!({
        "type": "string", "minLength": 2, "maxLength": PATH_MAX, "pattern": "^(/api2/json)?/[^?#]+$",
    })
);

/// The request's parameters, in Proxmox's names.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params(Vec<(String, Param)>);

impl Params {
    fn from_json(v: &Value) -> Result<Self, String> {
        let map = match v {
            Value::Null => return Ok(Params::default()),
            Value::Object(map) => map,
            other => {
                return Err(format!(
                    "must be an object of parameter names to values, not {}, e.g. \
                     {{\"params\": {{\"type\": \"vm\"}}}}",
                    arg::json_kind(other)
                ));
            }
        };
        if map.len() > PARAMS_MAX {
            return Err(format!("has more than {PARAMS_MAX} parameters"));
        }
        let mut params = Vec::with_capacity(map.len());
        for (name, value) in map {
            let shown = quoted(name, 64);
            let valid_name = name.len() <= 128
                && name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !valid_name {
                return Err(format!(
                    "{shown} is not a Proxmox parameter name (a letter, then letters, digits, \
                     '-' or '_')"
                ));
            }
            let param = match value {
                // Proxmox has no null: leaving the parameter out is the way.
                Value::Null => continue,
                Value::Bool(b) => Param::Bool(*b),
                Value::Number(n) => match n.as_i64() {
                    Some(i) => Param::Int(i),
                    None => Param::Text(n.to_string()),
                },
                Value::String(s) if s.len() > VALUE_MAX => {
                    return Err(format!(
                        "{shown} is over {VALUE_MAX} bytes, Proxmox's limit for a whole request"
                    ));
                }
                Value::String(s) => Param::Text(s.clone()),
                Value::Array(_) | Value::Object(_) => {
                    return Err(format!(
                        "{shown} is {}; Proxmox takes a string, a number or a boolean (a list \
                         is one comma-separated string, e.g. \"net0,ide2\")",
                        arg::json_kind(value)
                    ));
                }
            };
            params.push((name.clone(), param));
        }
        Ok(Params(params))
    }
}
deserialize_from_json!(Params);
fixed_schema!(
    Params,
    serde_json::json!({
        "type": "object",
        "maxProperties": PARAMS_MAX,
        "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_-]*$", "maxLength": 128},
        "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
    })
);

action_input! {
    new:
    /// The request.
    pub struct Input {
        /// GET (default) reads; POST, PUT and DELETE write (destructive tier)
        pub method: Option<HttpMethod>,
        /// API path below /api2/json, e.g. /nodes/pve1/qemu/100/status/current; no query string
        pub path: RequestPath,
        /// Parameters in Proxmox's names, e.g. {"type": "vm"}; null leaves one out
        pub params: Option<Params>,
    }
}

/// What was sent, and what Proxmox answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ApiResponse {
    /// GET, POST, PUT or DELETE
    pub method: HttpMethod,
    /// The full API path, e.g. /api2/json/nodes/pve1/qemu
    pub path: String,
    /// The parameters as sent (booleans as 1/0): in the query string for GET and DELETE, in
    /// the body for POST and PUT
    pub params: Map<String, Value>,
    /// true: a dry run; nothing was sent
    pub dry_run: bool,
    /// Whether the request was sent to Proxmox
    pub sent: bool,
    /// Proxmox's answer (its data field); null on a dry run, and for a write Proxmox
    /// finished at once
    pub data: Value,
    /// Where pve-mcp replaced a secret in data with "[redacted]", e.g. data.ticket
    pub redacted: Vec<String>,
    /// The task the request started (a write whose answer is a UPID); null otherwise
    pub task: Option<TaskReport>,
}

/// `pve_api_request`.
pub static TOOL: Tool = write_tool! {
    name: "pve_api_request",
    title: "Send any Proxmox API request",
    description: "Send one request to any Proxmox API path, for what no other tool covers (prefer \
        those: they check state first). Every write counts as destructive; sensitive paths are \
        refused unless the policy names them. Returns Proxmox's data.",
    annotations: Annotations::write(true, false),
    // The call's own method and path, which the host normalises and binds
    // the gate to: this tool can send that one request and nothing else.
    routes: &[Route::CALL_REQUEST],
    privileges: [],
    run: run,
};

/// The answer keys that carry secrets: console and VNC tickets, the
/// passwords a spice or termproxy answer holds, a login's CSRF token.
const SECRET_KEYS: &[&str] = &["ticket", "password", "CSRFPreventionToken"];

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ApiResponse>, ToolError> {
    let execution = input.execution();
    let method = input.method.unwrap_or(HttpMethod::Get);
    let params = input.params.unwrap_or_default().0;
    let mut out = ApiResponse {
        method,
        path: String::new(),
        params: Map::new(),
        dry_run: execution.dry_run,
        sent: false,
        data: Value::Null,
        redacted: Vec::new(),
        task: None,
    };
    let line;
    let data = match method.write() {
        None => {
            let path = params
                .iter()
                .fold(input.path.api_path(), |path, (name, value)| {
                    path.query(name, &value.wire())
                });
            out.path = format!("{API_PREFIX}{}", input.path.api_path().path());
            out.params = params
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.wire())))
                .collect();
            line = format!("GET {}", out.path);
            if execution.dry_run {
                return Ok(dry_run(out, &line));
            }
            pve.get(&path)?
        }
        Some(write) => {
            let request = WriteRequest {
                method: write,
                path: input.path.api_path(),
                params,
            };
            let planned = request.planned();
            out.path = planned.path;
            out.params = planned.params;
            line = format!("{} {}", write.as_str(), out.path);
            if execution.dry_run {
                return Ok(dry_run(out, &line));
            }
            pve.send(&request)?
        }
    };
    out.sent = true;
    let token_path = input.path.has_segment("token");
    out.data = redact(data, "data", token_path, &mut out.redacted);
    let upid = (method != HttpMethod::Get)
        .then(|| out.data.as_str().and_then(|s| task::parse_upid(s).ok()))
        .flatten();
    let mut summary = match upid {
        Some(upid) => {
            let task = action::follow(pve, &upid, execution);
            let summary = action::task_summary(&line, "as the request asks", &task);
            out.task = Some(task);
            summary
        }
        None if method == HttpMethod::Get => format!("GET {}: {}.", out.path, shape(&out.data)),
        None => format!("Sent {line}; Proxmox made the change at once."),
    };
    if !out.redacted.is_empty() {
        summary.push_str(&format!(
            " Secrets in the answer were replaced with \"[redacted]\": {}.",
            crate::error::listed(&out.redacted)
        ));
    }
    Ok(Answer {
        summary,
        structured: out,
    })
}

fn dry_run(out: ApiResponse, line: &str) -> Answer<ApiResponse> {
    let params = if out.params.is_empty() {
        "no parameters".to_owned()
    } else {
        Value::Object(out.params.clone()).to_string()
    };
    Answer {
        summary: format!("Dry run, nothing was sent. Would send {line} with {params}."),
        structured: out,
    }
}

/// "a list of 3 items", "an object with 5 fields", "\"text\"".
fn shape(data: &Value) -> String {
    match data {
        Value::Array(items) => format!("a list of {} items", items.len()),
        Value::Object(map) => format!("an object with {} fields", map.len()),
        Value::Null => "no data".into(),
        other => quoted(&other.to_string(), 200),
    }
}

/// `data` with every secret replaced by `"[redacted]"`, noting where; a
/// token's `value` is a secret under a path with a `token` segment.
fn redact(data: Value, at: &str, token_path: bool, redacted: &mut Vec<String>) -> Value {
    match data {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| {
                    let here = format!("{at}.{key}");
                    let secret =
                        SECRET_KEYS.contains(&key.as_str()) || (token_path && key == "value");
                    let value = if secret && !value.is_null() {
                        redacted.push(here);
                        Value::String("[redacted]".into())
                    } else {
                        redact(value, &here, token_path, redacted)
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| redact(v, &format!("{at}[{i}]"), token_path, redacted))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    fn call(pve: &mut FakePve, args: Value) -> Result<crate::tool::Output, ToolError> {
        let out = TOOL.call(pve, &args.to_string())?;
        assert_valid_output(&TOOL, &out);
        Ok(out)
    }

    #[test]
    fn a_get_sends_its_params_in_the_query_and_returns_the_data() {
        let mut pve = FakePve::default().with(
            "/cluster/resources?full=1&type=vm",
            json!([{"vmid": 100}, {"vmid": 101}]),
        );
        let out = call(
            &mut pve,
            json!({"path": "/api2/json/cluster/resources", "params": {"type": "vm", "full": true, "x": null}}),
        )
        .unwrap();
        assert_eq!(pve.requests, ["/cluster/resources?full=1&type=vm"]);
        assert!(pve.writes.is_empty());
        assert_eq!(out.structured["data"][1]["vmid"], 101);
        assert_eq!(out.structured["path"], "/api2/json/cluster/resources");
        assert_eq!(out.structured["params"], json!({"type": "vm", "full": "1"}));
        assert!(out.summary.contains("a list of 2 items"), "{}", out.summary);
    }

    #[test]
    fn a_delete_sends_its_params_in_the_query_and_a_post_in_the_body() {
        let upid = "UPID:pve1:0000A1B2:00C0FFEE:6500AA00:qmdestroy:100:root@pam!mcp:";
        let mut pve =
            FakePve::default().answering("DELETE /nodes/pve1/qemu/100?purge=1", json!(upid));
        let out = call(
            &mut pve,
            json!({"method": "DELETE", "path": "/nodes/pve1/qemu/100", "params": {"purge": true}}),
        )
        .unwrap();
        assert_eq!(pve.writes, ["DELETE /nodes/pve1/qemu/100?purge=1 "]);
        assert_eq!(out.structured["task"]["type"], "qmdestroy");
        assert_eq!(out.structured["sent"], true);

        let mut pve = FakePve::default().answering("PUT /nodes/pve1/qemu/100/config", Value::Null);
        let out = call(
            &mut pve,
            json!({"method": "PUT", "path": "/nodes/pve1/qemu/100/config", "params": {"onboot": false, "cores": 2, "cpulimit": 1.5}}),
        )
        .unwrap();
        assert_eq!(
            pve.writes,
            ["PUT /nodes/pve1/qemu/100/config cores=2&cpulimit=1.5&onboot=0"]
        );
        assert!(out.summary.contains("at once"), "{}", out.summary);
    }

    #[test]
    fn a_dry_run_sends_nothing_and_shows_the_request() {
        let mut pve = FakePve::default();
        let out = call(
            &mut pve,
            json!({"method": "POST", "path": "/nodes/pve1/qemu/100/status/start", "dry_run": true}),
        )
        .unwrap();
        assert!(pve.requests.is_empty() && pve.writes.is_empty());
        assert_eq!(out.structured["sent"], false);
        assert_eq!(
            out.structured["path"],
            "/api2/json/nodes/pve1/qemu/100/status/start"
        );
        assert!(out.summary.starts_with("Dry run"), "{}", out.summary);
    }

    #[test]
    fn segments_are_encoded_for_the_wire() {
        let upid = "UPID:pve1:0000A1B2:00C0FFEE:6500AA00:qmstart:100:root@pam!mcp:";
        let mut pve = FakePve::default().with(
            "/nodes/pve1/tasks/UPID%3Apve1%3A0000A1B2%3A00C0FFEE%3A6500AA00%3Aqmstart%3A100%3Aroot%40pam%21mcp%3A/status",
            json!({"status": "stopped", "exitstatus": "OK"}),
        );
        let path = format!("/nodes/pve1/tasks/{upid}/status");
        call(&mut pve, json!({"path": path})).unwrap();
        assert_eq!(pve.requests.len(), 1);
    }

    #[test]
    fn secrets_in_the_answer_are_redacted() {
        let mut pve = FakePve::default().answering(
            "POST /nodes/pve1/qemu/100/vncproxy",
            json!({"ticket": "PVEVNC:abc", "port": "5900", "user": "root@pam"}),
        );
        let out = call(
            &mut pve,
            json!({"method": "POST", "path": "/nodes/pve1/qemu/100/vncproxy"}),
        )
        .unwrap();
        assert_eq!(out.structured["data"]["ticket"], "[redacted]");
        assert_eq!(out.structured["data"]["port"], "5900");
        assert_eq!(out.structured["redacted"], json!(["data.ticket"]));
        assert!(!out.summary.contains("PVEVNC"));

        let mut pve = FakePve::default().answering(
            "POST /access/users/a%40pve/token/t",
            json!({"full-tokenid": "a@pve!t", "value": "0000-1111"}),
        );
        let out = call(
            &mut pve,
            json!({"method": "POST", "path": "/access/users/a@pve/token/t"}),
        )
        .unwrap();
        assert_eq!(out.structured["data"]["value"], "[redacted]");
    }

    #[test]
    fn bad_paths_and_params_name_the_field_and_send_nothing() {
        for (args, says) in [
            (json!({}), "path: missing required argument"),
            (json!({"path": "nodes"}), "must start with '/'"),
            (json!({"path": "/nodes/../access"}), "'..' segment"),
            (json!({"path": "/nodes//x"}), "empty"),
            (json!({"path": "/nodes/a%2Fb"}), "character \"%\""),
            (json!({"path": "/nodes?x=1"}), "character \"?\""),
            (json!({"path": "/nodes/a b"}), "character \" \""),
            (
                json!({"path": "/nodes", "method": "PATCH"}),
                "method: must be one of",
            ),
            (
                json!({"path": "/nodes", "params": [1]}),
                "params: must be an object",
            ),
            (
                json!({"path": "/nodes", "params": {"delete": ["a", "b"]}}),
                "comma-separated",
            ),
            (
                json!({"path": "/nodes", "params": {"a=b": 1}}),
                "not a Proxmox parameter name",
            ),
        ] {
            let mut pve = FakePve::default();
            let e = call(&mut pve, args.clone()).unwrap_err();
            assert!(
                matches!(e, ToolError::InvalidArguments(_)) && e.message().contains(says),
                "{args}: {e}"
            );
            assert!(pve.requests.is_empty() && pve.writes.is_empty());
        }
    }
}
