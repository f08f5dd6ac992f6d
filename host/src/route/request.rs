//! The call's own request (`pve_api_request`): its `method` and `path`
//! arguments normalised by the host before the policy, the audit log or
//! the component sees them, so each judges the request Proxmox will route.
//!
//! pveproxy `uri_unescape`s the whole path before routing, so `%2F` is a
//! real `/` there and `%2E%2E` a real `..`. The normalised path is the
//! decoded one, refused when decoding could change its shape: an encoded
//! `/` or `\`, a `%` left after one decode (double encoding), a `.` or
//! `..` or empty segment, control characters, spaces, `?` and `#` (the
//! query belongs in `params`), a scheme or host, and any `/api2/<format>`
//! but `/api2/json`. What is left is printable ASCII that means the same
//! to the policy, the gate and Proxmox.

use std::fmt;

use http::Method;
use serde_json::Value;

use super::placeholder::{JsonObject, is_localhost, pattern};
use crate::endpoint::percent_decode;

/// The argument that names the method.
pub const METHOD_ARG: &str = "method";
/// The argument that names the path.
pub const PATH_ARG: &str = "path";
/// The argument whose entries are the request's parameters.
pub const PARAMS_ARG: &str = "params";

/// Longest path accepted, in bytes (as given, before decoding).
const PATH_MAX: usize = 1024;
/// Most segments in a path; PVE's deepest has under 12.
const SEGMENTS_MAX: usize = 32;

/// A normalised request: the method, and the path below `/api2/json` as
/// decoded segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRequest {
    method: Method,
    segments: Vec<String>,
}

/// Why a call's `method` or `path` cannot be sent: the argument, and what
/// is wrong with it and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRequest {
    /// `method` or `path`.
    pub field: &'static str,
    /// What is wrong, and the fix.
    pub problem: String,
}

impl fmt::Display for BadRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

impl ApiRequest {
    /// Normalises the call's `method` (upper case; `GET` when left out)
    /// and `path` (decoded, `/`-led, without `/api2/json`) in `arguments`,
    /// and returns the request they name.
    pub fn normalise(arguments: &mut JsonObject) -> Result<ApiRequest, BadRequest> {
        let method = match arguments.get(METHOD_ARG) {
            None | Some(Value::Null) => Method::GET,
            Some(Value::String(m)) => parse_method(&m.to_ascii_uppercase()).ok_or_else(|| {
                bad(
                    METHOD_ARG,
                    format!(
                        "{} is not a method the Proxmox API takes; use GET, POST, PUT or DELETE",
                        shown(m)
                    ),
                )
            })?,
            Some(_) => {
                return Err(bad(
                    METHOD_ARG,
                    "must be a string: GET, POST, PUT or DELETE".into(),
                ));
            }
        };
        let segments = match arguments.get(PATH_ARG) {
            Some(Value::String(path)) => {
                normalise_path(path).map_err(|problem| bad(PATH_ARG, problem))?
            }
            None | Some(Value::Null) => {
                return Err(bad(
                    PATH_ARG,
                    "missing required argument; pass an API path, e.g. \"/nodes/pve1/qemu\"".into(),
                ));
            }
            Some(_) => {
                return Err(bad(
                    PATH_ARG,
                    "must be a string, e.g. \"/nodes/pve1/qemu\"".into(),
                ));
            }
        };
        let request = ApiRequest { method, segments };
        arguments.insert(METHOD_ARG.into(), request.method.as_str().into());
        arguments.insert(PATH_ARG.into(), request.path().into());
        Ok(request)
    }

    /// The request `arguments` name when [`ApiRequest::normalise`] has
    /// already normalised them; `None` when they are not normalised.
    pub fn from_normalised(arguments: &JsonObject) -> Option<ApiRequest> {
        let method = parse_method(arguments.get(METHOD_ARG)?.as_str()?)?;
        let path = arguments.get(PATH_ARG)?.as_str()?;
        let request = ApiRequest {
            method,
            segments: normalise_path(path).ok()?,
        };
        (request.path() == path).then_some(request)
    }

    /// The method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// Whether it only reads.
    pub fn is_read(&self) -> bool {
        self.method == Method::GET
    }

    /// The decoded segments below `/api2/json`.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// `/nodes/pve1/qemu`: the path below `/api2/json`.
    pub fn path(&self) -> String {
        self.segments.iter().fold(String::new(), |mut path, s| {
            path.push('/');
            path.push_str(s);
            path
        })
    }

    /// Whether the gate lets `method` on `api_path` (below `/api2/json`,
    /// as sent) out for this call: this request, and, when it writes, the
    /// GETs that follow a task it may have started
    /// (`/nodes/{node}/tasks/{upid}/status` and `/log`). Each sent segment
    /// is decoded once, as pveproxy does, and must equal the normalised
    /// one, so an encoding cannot make it another.
    pub fn admits(&self, method: &Method, api_path: &str) -> bool {
        let Some(sent) = decoded_segments(api_path) else {
            return false;
        };
        if *method == self.method && sent == self.segments {
            return true;
        }
        *method == Method::GET && !self.is_read() && is_task_read(&sent)
    }
}

impl fmt::Display for ApiRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} /api2/json{}", self.method, self.path())
    }
}

fn bad(field: &'static str, problem: String) -> BadRequest {
    BadRequest { field, problem }
}

/// An argument's or a request's text for a message: quoted (escaped as a
/// Rust string), and cut to 64 characters.
pub(crate) fn shown(text: &str) -> String {
    let (head, more) = cut(text, 64);
    format!("{head:?}{more}")
}

/// The first `max` characters of `text`, and `…` when that cut some off
/// (else nothing): for a message that must stay bounded.
pub(crate) fn cut(text: &str, max: usize) -> (&str, &'static str) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (&text[..end], "…"),
        None => (text, ""),
    }
}

fn parse_method(method: &str) -> Option<Method> {
    match method {
        "GET" => Some(Method::GET),
        "POST" => Some(Method::POST),
        "PUT" => Some(Method::PUT),
        "DELETE" => Some(Method::DELETE),
        _ => None,
    }
}

/// The decoded segments of a path as given in the `path` argument; the
/// error says what is wrong and how to write it instead.
fn normalise_path(raw: &str) -> Result<Vec<String>, String> {
    let example = "e.g. \"/nodes/pve1/qemu/100/status/current\"";
    if raw.len() > PATH_MAX {
        return Err(format!("is over {PATH_MAX} bytes"));
    }
    if raw.contains("://") || raw.starts_with("//") {
        return Err(format!(
            "{} names a server; give only the path below /api2/json, {example} (pve-mcp \
             sends it to the configured cluster)",
            shown(raw)
        ));
    }
    if let Some(c) = raw.chars().find(|c| matches!(c, '?' | '#')) {
        return Err(format!(
            "{} has {c:?}; give the path alone and the query parameters in params, e.g. \
             {{\"path\": \"/cluster/resources\", \"params\": {{\"type\": \"vm\"}}}}",
            shown(raw)
        ));
    }
    let with_slash = if raw.starts_with('/') {
        raw.to_owned()
    } else {
        format!("/{raw}")
    };
    let rest = match with_slash.strip_prefix("/api2/") {
        Some("json") => "",
        Some(after) => after.strip_prefix("json/").ok_or_else(|| {
            format!(
                "{} is under /api2/ but not /api2/json/; pve-mcp speaks only the JSON API, \
                 {example}",
                shown(raw)
            )
        })?,
        None => &with_slash[1..],
    };
    // A base URL ending in /api2/json joined with a full path: said as
    // such, not left for the gate to refuse as an unknown route.
    let prefixed = with_slash.starts_with("/api2/");
    if prefixed && (rest == "api2" || rest.starts_with("api2/")) {
        return Err(format!(
            "{} has the API prefix /api2/json twice; give it once, or only the path below it, \
             {example}",
            shown(raw)
        ));
    }
    // One trailing slash is how people type a directory; Proxmox routes
    // it as the path without it.
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() {
        return Err(format!("names no API path; {example}"));
    }
    let mut segments = Vec::new();
    for segment in rest.split('/') {
        let decoded = percent_decode(segment)
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| {
                format!(
                    "{} has a malformed %-escape in {}; a % must start a %XX escape of UTF-8",
                    shown(raw),
                    shown(segment)
                )
            })?;
        if decoded.is_empty() || decoded == "." || decoded == ".." {
            return Err(format!(
                "{} has an empty, \".\" or \"..\" segment (encoded or not); name the resource \
                 directly, {example}",
                shown(raw)
            ));
        }
        if decoded.contains(['/', '\\']) {
            return Err(format!(
                "{} has an encoded '/' or '\\' in {}, which Proxmox would read as a path \
                 separator; write each segment separately",
                shown(raw),
                shown(segment)
            ));
        }
        if decoded.contains('%') {
            return Err(format!(
                "{} is encoded twice ({} still has a '%' after decoding); encode it once, or \
                 not at all",
                shown(raw),
                shown(segment)
            ));
        }
        if let Some(c) = decoded.chars().find(|c| !c.is_ascii_graphic()) {
            return Err(format!(
                "{} has the character {c:?} (decoded) in a segment; Proxmox paths are \
                 printable ASCII without spaces",
                shown(raw)
            ));
        }
        if decoded.contains(['?', '#']) {
            return Err(format!(
                "{} has an encoded '?' or '#'; query parameters go in params",
                shown(raw)
            ));
        }
        segments.push(decoded);
        if segments.len() > SEGMENTS_MAX {
            return Err(format!("has more than {SEGMENTS_MAX} segments"));
        }
    }
    Ok(segments)
}

/// The segments of a path as sent, each decoded once; `None` when one
/// cannot be (a malformed escape, or not UTF-8).
pub(crate) fn decoded_segments(api_path: &str) -> Option<Vec<String>> {
    api_path
        .strip_prefix('/')?
        .split('/')
        .map(|s| String::from_utf8(percent_decode(s)?).ok())
        .collect()
}

/// `/nodes/{node}/tasks/{upid}/status` or `/log`, with PVE's patterns.
fn is_task_read(segments: &[String]) -> bool {
    let fits = |name: &str, s: &str| {
        pattern(name).is_some_and(|p| p.is_match(s)) && !is_localhost(name, s)
    };
    match segments {
        [nodes, node, tasks, upid, last] => {
            nodes == "nodes"
                && tasks == "tasks"
                && matches!(last.as_str(), "status" | "log")
                && fits("node", node)
                && fits("upid", upid)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn normalised(args: Value) -> Result<(ApiRequest, JsonObject), BadRequest> {
        let mut args = args.as_object().cloned().unwrap_or_default();
        ApiRequest::normalise(&mut args).map(|r| (r, args))
    }

    #[test]
    fn paths_are_decoded_prefixed_and_upper_cased() {
        for (method, path, want) in [
            (None, "/nodes/pve1/qemu", "GET /api2/json/nodes/pve1/qemu"),
            (
                Some("get"),
                "nodes/pve1/qemu/",
                "GET /api2/json/nodes/pve1/qemu",
            ),
            (
                Some("Post"),
                "/api2/json/nodes/pve1/qemu/100/status/start",
                "POST /api2/json/nodes/pve1/qemu/100/status/start",
            ),
            (
                Some("DELETE"),
                "/nodes/pve1/storage/local/content/local:backup",
                "DELETE /api2/json/nodes/pve1/storage/local/content/local:backup",
            ),
            (
                None,
                "/nodes/pve1/tasks/UPID%3Apve1%3A0000A1B2%3A00C0FFEE%3A6500AA00%3Aqmstart%3A100%3Aroot%40pam%3A/status",
                "GET /api2/json/nodes/pve1/tasks/UPID:pve1:0000A1B2:00C0FFEE:6500AA00:qmstart:100:root@pam:/status",
            ),
        ] {
            let (request, args) = normalised(json!({"method": method, "path": path})).unwrap();
            assert_eq!(request.to_string(), want);
            // The arguments now say exactly that, and read back the same.
            assert_eq!(args[METHOD_ARG], request.method().as_str());
            assert_eq!(args[PATH_ARG], request.path());
            assert_eq!(ApiRequest::from_normalised(&args), Some(request));
        }
    }

    #[test]
    fn every_path_that_could_mean_another_is_refused() {
        for (path, says) in [
            ("https://pve.example:8006/api2/json/nodes", "names a server"),
            ("//evil/api2/json/nodes", "names a server"),
            ("/nodes?type=vm", "query parameters in params"),
            ("/nodes#x", "query parameters in params"),
            ("/api2/extjs/nodes", "not /api2/json/"),
            ("/", "names no API path"),
            ("/api2/json/", "names no API path"),
            ("/api2/json", "names no API path"),
            ("/api2/json/api2/json/nodes", "prefix /api2/json twice"),
            ("api2/json/api2/json/nodes/pve1", "prefix /api2/json twice"),
            ("/api2/json/api2/extjs/nodes", "prefix /api2/json twice"),
            ("/nodes/../access/users", "\"..\" segment"),
            ("/nodes/./pve1", "\"..\" segment"),
            ("/nodes/%2e%2e/access", "\"..\" segment"),
            ("/nodes/%2E/x", "\"..\" segment"),
            ("/nodes//pve1", "empty"),
            ("/nodes/pve1%2F..%2F..%2Faccess", "encoded '/'"),
            ("/nodes/pve1%5Cx", "encoded '/' or '\\'"),
            ("/nodes/%252e%252e/access", "encoded twice"),
            ("/nodes/%25", "encoded twice"),
            ("/nodes/%zz", "malformed %-escape"),
            ("/nodes/%FF", "malformed %-escape"),
            ("/nodes/a%20b", "' '"),
            ("/nodes/a\u{7f}", "'\\u{7f}'"),
            ("/nodes/a%0Ab", "'\\n'"),
            ("/nodes/é", "'é'"),
            ("/nodes/a%3Fb", "encoded '?'"),
        ] {
            let e = normalised(json!({"path": path})).unwrap_err();
            assert_eq!(e.field, PATH_ARG, "{path}");
            assert!(e.problem.contains(says), "{path}: {e}");
        }
        let long = format!("/{}", "a/".repeat(40));
        assert!(normalised(json!({"path": long})).is_err());
        for (args, field, says) in [
            (json!({}), PATH_ARG, "missing required argument"),
            (json!({"path": 5}), PATH_ARG, "must be a string"),
            (
                json!({"path": "/x", "method": "PATCH"}),
                METHOD_ARG,
                "\"PATCH\"",
            ),
            (
                json!({"path": "/x", "method": 1}),
                METHOD_ARG,
                "must be a string",
            ),
        ] {
            let e = normalised(args.clone()).unwrap_err();
            assert_eq!(
                (e.field, e.problem.contains(says)),
                (field, true),
                "{args}: {e}"
            );
        }
    }

    #[test]
    fn arguments_not_normalised_bind_nothing() {
        for args in [
            json!({"method": "get", "path": "/nodes"}),
            json!({"method": "GET", "path": "nodes"}),
            json!({"method": "GET", "path": "/nodes/"}),
            json!({"method": "GET", "path": "/nodes/a%3Ab"}),
            json!({"path": "/nodes"}),
        ] {
            assert_eq!(
                ApiRequest::from_normalised(args.as_object().unwrap()),
                None,
                "{args}"
            );
        }
    }

    #[test]
    fn a_request_admits_itself_and_the_reads_of_its_task() {
        let (start, _) =
            normalised(json!({"method": "POST", "path": "/nodes/pve1/qemu/100/status/start"}))
                .unwrap();
        assert!(start.admits(&Method::POST, "/nodes/pve1/qemu/100/status/start"));
        // Encoded alike, or not at all: the same request.
        assert!(start.admits(&Method::POST, "/nodes/pve%31/qemu/100/status/start"));
        for (method, path) in [
            (Method::GET, "/nodes/pve1/qemu/100/status/start"),
            (Method::DELETE, "/nodes/pve1/qemu/100/status/start"),
            (Method::POST, "/nodes/pve1/qemu/101/status/start"),
            (Method::POST, "/nodes/pve1/qemu/100/status/start/x"),
            (Method::POST, "/nodes/pve1/qemu/100%2Fstatus%2Fstart"),
            (Method::POST, "/nodes/pve1/qemu/100/status/%2E%2E/start"),
            (Method::POST, "/nodes/pve1/qemu/100/status/start%00"),
            (Method::GET, "/nodes/pve1/qemu/100/status/current"),
        ] {
            assert!(!start.admits(&method, path), "{method} {path}");
        }
        let upid = "UPID%3Apve1%3A0000A1B2%3A00C0FFEE%3A6500AA00%3Aqmstart%3A100%3Aroot%40pam%3A";
        for last in ["status", "log"] {
            let task = format!("/nodes/pve1/tasks/{upid}/{last}");
            assert!(start.admits(&Method::GET, &task), "{task}");
            assert!(!start.admits(&Method::DELETE, &task), "{task}");
        }
        assert!(!start.admits(
            &Method::GET,
            &format!("/nodes/localhost/tasks/{upid}/status")
        ));
        assert!(!start.admits(&Method::GET, "/nodes/pve1/tasks/UPID%3Ax/status"));
        // A read admits itself alone: there is no task to follow.
        let (read, _) = normalised(json!({"path": "/version"})).unwrap();
        assert!(read.admits(&Method::GET, "/version"));
        assert!(!read.admits(&Method::GET, &format!("/nodes/pve1/tasks/{upid}/status")));
        assert!(!read.admits(&Method::GET, "/cluster/resources"));
    }
}
