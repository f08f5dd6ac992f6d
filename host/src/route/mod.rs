//! Argument-bound writes: each tool declares the write requests it may
//! send as routes (a method and a path template, in its WIT descriptor);
//! the host parses them once at load and, for each call, binds them to the
//! call's arguments. The gate then lets out only the writes that match a
//! bound route, so a tool admitted to start VM 105 cannot delete VM 106.
//!
//! One route is different: `{method} /{path}`, the call's own request
//! (`pve_api_request`). The host normalises the call's `method` and `path`
//! before anything else sees them ([`request`]), the policy refuses the
//! [`sensitive`] paths no rule names, and the bound route admits that one
//! request, reads included, and the reads that follow a task it starts.

pub mod destructive;
pub mod params;
mod placeholder;
pub mod request;
pub mod sensitive;

pub use params::{BoundParams, MaySend, Params};
pub use request::ApiRequest;

use std::fmt;

use http::Method;
use serde_json::Value;

use placeholder::{JsonObject, PLACEHOLDERS, is_localhost, pattern};

/// The methods a route may name: the writes, and `GET` for a read the
/// gate guards ([`sensitive::guarded_read`]).
fn route_method(method: &str) -> Option<Method> {
    match method {
        "GET" => Some(Method::GET),
        "POST" => Some(Method::POST),
        "PUT" => Some(Method::PUT),
        "DELETE" => Some(Method::DELETE),
        _ => None,
    }
}

/// One path segment of a route.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// Must be exactly this.
    Literal(String),
    /// `{name}`: the argument `name`, or PVE's pattern for it.
    Arg(&'static str),
}

/// The route that stands for the call's own request, as a component
/// declares it: `{method}` and `/{path}`, the call's arguments.
pub const CALL_REQUEST: (&str, &str) = ("{method}", "/{path}");

/// A write a tool may send, parsed once at load: where it goes, and
/// every parameter it may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    kind: Kind,
    params: Params,
    /// A call may send it at most once.
    once: bool,
    /// It applies only to calls whose argument (first) is this string.
    when: Option<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A method and a path template.
    Template {
        method: Method,
        /// Under `/api2/json`.
        segments: Vec<Segment>,
    },
    /// [`CALL_REQUEST`]: whatever request the call's `method` and `path`
    /// name, once normalised.
    CallRequest,
}

impl Route {
    /// Parses `method` and `path` (under `/api2/json`, e.g.
    /// `/nodes/{node}/qemu/{vmid}/status/start`); the error says what is
    /// wrong, for the message that rejects the component.
    pub fn parse(method: &str, path: &str) -> Result<Route, String> {
        if (method, path) == CALL_REQUEST {
            return Ok(Route {
                kind: Kind::CallRequest,
                params: Params::call_request(),
                once: false,
                when: None,
            });
        }
        if method == CALL_REQUEST.0 || path == CALL_REQUEST.1 {
            return Err(format!(
                "{method} {path}: the call's own request is declared as {} {} together, \
                 with nothing else",
                CALL_REQUEST.0, CALL_REQUEST.1
            ));
        }
        let method = route_method(method).ok_or_else(|| {
            format!("method {method:?} is not a write method (POST, PUT or DELETE) or GET")
        })?;
        let rest = path
            .strip_prefix('/')
            .ok_or_else(|| format!("path {path:?} does not start with /"))?;
        let mut segments = Vec::new();
        for segment in rest.split('/') {
            if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                let (known, _) = PLACEHOLDERS
                    .iter()
                    .find(|(n, _)| *n == name)
                    .ok_or_else(|| {
                        format!(
                            "path {path:?} has the placeholder {{{name}}}, which is not one the host knows a pattern for ({})",
                            PLACEHOLDERS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                        )
                    })?;
                segments.push(Segment::Arg(known));
            } else if segment.is_empty()
                || segment == "."
                || segment == ".."
                || !segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            {
                return Err(format!(
                    "path {path:?} has the segment {segment:?}; a literal segment is letters, digits, '-', '_' or '.'"
                ));
            } else {
                segments.push(Segment::Literal(segment.to_string()));
            }
        }
        Ok(Route {
            kind: Kind::Template { method, segments },
            params: Params::default(),
            once: false,
            when: None,
        })
    }

    /// The route, sent at most once per call when `once`. The call's own
    /// request is one request anyway.
    pub fn sent_once(mut self, once: bool) -> Route {
        self.once = once && !self.is_call_request();
        self
    }

    /// Whether a call may send it at most once.
    pub fn is_once(&self) -> bool {
        self.once
    }

    /// The route, applying only to calls whose `argument` is the string
    /// `value`. The call's own request applies to every call of its tool.
    pub fn applying_when(mut self, argument: String, value: String) -> Route {
        if !self.is_call_request() {
            self.when = Some((argument, value));
        }
        self
    }

    /// The argument and value a call needs for the route to apply, if any.
    pub fn condition(&self) -> Option<(&str, &str)> {
        self.when.as_ref().map(|(a, v)| (a.as_str(), v.as_str()))
    }

    /// Whether the route applies to a call with these `arguments`: it has
    /// no condition, or the call's argument is the string it names.
    pub fn applies(&self, arguments: &JsonObject) -> bool {
        match &self.when {
            None => true,
            Some((argument, value)) => {
                arguments.get(argument).and_then(Value::as_str) == Some(value.as_str())
            }
        }
    }

    /// Whether it is a read the gate guards: a `GET` route.
    pub fn is_guarded_read(&self) -> bool {
        matches!(&self.kind, Kind::Template { method, .. } if *method == Method::GET)
    }

    /// The route carrying `params`. The call's own request keeps its own
    /// (the entries of its `params` argument), whatever is declared. A
    /// parameter whose Proxmox default destroys data is required of every
    /// request that could be that write ([`destructive`]).
    pub fn with_params(mut self, params: Params) -> Route {
        if self.is_call_request() {
            return self;
        }
        self.params = params;
        for d in destructive::DESTRUCTIVE_PARAMS
            .iter()
            .filter(|d| d.required)
        {
            if self.could_send(&d.method, d.tail) {
                self.params = self.params.requiring(d.name);
            }
        }
        self
    }

    /// The parameters its requests may carry.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The methods calls of this route may send beside their reads.
    pub fn methods(&self) -> &[Method] {
        match &self.kind {
            Kind::Template { method, .. } => std::slice::from_ref(method),
            Kind::CallRequest => &[Method::POST, Method::PUT, Method::DELETE],
        }
    }

    /// Whether this is the call's own request ([`CALL_REQUEST`]), whose
    /// `method` and `path` arguments the host normalises and checks before
    /// the call runs.
    pub fn is_call_request(&self) -> bool {
        self.kind == Kind::CallRequest
    }

    /// Whether some call could send `method` with this route to a path
    /// ending in `tail` (`"*"` stands for any one segment). A placeholder
    /// counts as every segment its pattern admits: `{storage}` could be
    /// `resize`, so a component cannot hide a destructive write behind an
    /// argument. The call's own request could be anything.
    pub fn could_send(&self, method: &Method, tail: &[&str]) -> bool {
        let Kind::Template {
            method: own,
            segments,
        } = &self.kind
        else {
            return true;
        };
        if own != method {
            return false;
        }
        let Some(start) = segments.len().checked_sub(tail.len()) else {
            return false;
        };
        segments[start..]
            .iter()
            .zip(tail)
            .all(|(segment, want)| match segment {
                _ if *want == "*" => true,
                Segment::Literal(l) => l == want,
                Segment::Arg(name) => {
                    pattern(name).is_some_and(|p| p.is_match(want)) && !is_localhost(name, want)
                }
            })
    }

    /// Whether some call could send `method` with this route to a path
    /// that starts with `head` (`"*"`: any one segment), as
    /// [`Route::could_send`] judges a path's end.
    pub fn could_send_under(&self, method: &Method, head: &[&str]) -> bool {
        let Kind::Template {
            method: own,
            segments,
        } = &self.kind
        else {
            return true;
        };
        own == method
            && segments.len() >= head.len()
            && segments
                .iter()
                .zip(head)
                .all(|(segment, want)| match segment {
                    _ if *want == "*" => true,
                    Segment::Literal(l) => l == want,
                    Segment::Arg(name) => {
                        pattern(name).is_some_and(|p| p.is_match(want)) && !is_localhost(name, want)
                    }
                })
    }

    /// The route with its placeholders filled from `arguments`, where given.
    /// The call's own request binds to the normalised `method` and `path`
    /// arguments; when they are not (the host normalises them before the
    /// call runs), it admits nothing.
    pub fn bind(&self, arguments: &JsonObject) -> BoundRoute {
        if !self.applies(arguments) {
            return BoundRoute::Inapplicable;
        }
        let params = self.params.bind(arguments);
        let (method, segments) = match &self.kind {
            Kind::Template { method, segments } => (method, segments),
            Kind::CallRequest => {
                return match ApiRequest::from_normalised(arguments) {
                    Some(request) => BoundRoute::Request(request, params),
                    None => BoundRoute::Nothing,
                };
            }
        };
        let segments = segments
            .iter()
            .map(|s| match s {
                Segment::Literal(l) => Bound::Exactly(l.clone()),
                Segment::Arg(name) => match arguments.get(*name) {
                    None | Some(Value::Null) => Bound::Pattern(name),
                    Some(Value::String(s)) => Bound::Given(name, s.clone()),
                    Some(Value::Number(n)) => Bound::Given(name, n.to_string()),
                    // Not a value a path can hold: nothing matches it.
                    Some(_) => Bound::Nothing,
                },
            })
            .collect();
        BoundRoute::Template {
            method: method.clone(),
            segments,
            params,
            once: self.once,
        }
    }
}

impl Route {
    /// The route bound to no call, for `pve-mcp egress-proxy`, which sees
    /// requests without their calls: every placeholder admits what PVE's
    /// pattern for it admits, every parameter that carries an argument any
    /// value, and, unless `destructive`, each [destructive
    /// parameter](destructive) only its harmless values.
    pub fn bind_open(&self, destructive: bool) -> BoundRoute {
        // Without calls there is no argument to meet a condition with.
        let unconditional = Route {
            when: None,
            ..self.clone()
        };
        let mut bound = unconditional.bind(&JsonObject::new());
        if let BoundRoute::Template { params, once, .. } = &mut bound {
            // Without calls, nothing is a call's first or second request.
            *once = false;
            *params = self.params.bind_open();
            if !destructive {
                for d in destructive::DESTRUCTIVE_PARAMS {
                    if self.could_send(&d.method, d.tail) {
                        params.restrict(d.name, d.harmless);
                    }
                }
            }
        }
        bound
    }

    /// Whether some call of this route could send the destructive
    /// parameter `d` with a harmful value, whatever its arguments.
    pub fn could_destroy_with(&self, d: &destructive::DestructiveParam) -> bool {
        self.could_send(&d.method, d.tail) && self.params.could_send(d.name).beyond(d.harmless)
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (method, segments) = match &self.kind {
            Kind::Template { method, segments } => (method, segments),
            Kind::CallRequest => {
                return write!(f, "{} /api2/json{}", CALL_REQUEST.0, CALL_REQUEST.1);
            }
        };
        write!(f, "{method} /api2/json")?;
        for s in segments {
            match s {
                Segment::Literal(l) => write!(f, "/{l}")?,
                Segment::Arg(name) => write!(f, "/{{{name}}}")?,
            }
        }
        if let Some((argument, value)) = &self.when {
            write!(f, " ({argument} = {value})")?;
        }
        Ok(())
    }
}

/// The placeholder of a storage volume's id, the one segment that may
/// hold a `/`.
const VOLID: &str = "volid";

/// One segment of a bound route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bound {
    /// A literal segment.
    Exactly(String),
    /// The call gave the argument: this value, which must also fit PVE's
    /// pattern for it.
    Given(&'static str, String),
    /// The call left it out: any segment PVE's pattern for it admits.
    Pattern(&'static str),
    /// An argument no path can hold: matches nothing.
    Nothing,
}

/// A route bound to one call's arguments: what the gate admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundRoute {
    /// A template's write.
    Template {
        /// The write method.
        method: Method,
        /// The path, bound.
        segments: Vec<Bound>,
        /// The parameters, bound.
        params: BoundParams,
        /// A call may send it at most once.
        once: bool,
    },
    /// The call's own request, and the reads that follow a task it starts;
    /// its parameters are the entries of its `params` argument.
    Request(ApiRequest, BoundParams),
    /// Nothing at all, reads included: a call's own request its
    /// arguments do not name.
    Nothing,
    /// Nothing this call may send: a route whose condition the call does
    /// not meet. Its reads are not held to it.
    Inapplicable,
}

impl BoundRoute {
    /// Whether the gate must hold the call's reads to this route too: the
    /// call's own request admits only itself.
    pub fn binds_reads(&self) -> bool {
        matches!(self, BoundRoute::Request(..) | BoundRoute::Nothing)
    }

    /// Whether `method` on `api_path` (the path after `/api2/json`, as
    /// sent, still percent-encoded) is this write. Each segment is
    /// compared decoded once, as pveproxy reads it (a UPID's `:` travels
    /// as `%3A`); a path that does not decode, or a segment that decodes
    /// to a `\`, `.` or `..`, or to a `/` outside a volume id, matches
    /// nothing.
    pub fn admits(&self, method: &Method, api_path: &str) -> bool {
        let (own, segments) = match self {
            BoundRoute::Template {
                method, segments, ..
            } => (method, segments),
            BoundRoute::Request(request, _) => return request.admits(method, api_path),
            BoundRoute::Nothing | BoundRoute::Inapplicable => return false,
        };
        if method != own {
            return false;
        }
        let Some(decoded) = request::decoded_segments(api_path) else {
            return false;
        };
        if decoded
            .iter()
            .any(|s| s.contains('\\') || s == "." || s == "..")
        {
            return false;
        }
        let mut sent = decoded.iter().map(String::as_str);
        for bound in segments {
            let Some(segment) = sent.next() else {
                return false;
            };
            // A volume id holds `/` (`local:iso/x.iso`), sent as `%2F`;
            // its pattern admits only components that start with a letter
            // or digit, so never `.` or `..`. Any other segment with one
            // would be read as two.
            let volume = matches!(bound, Bound::Given(VOLID, _) | Bound::Pattern(VOLID));
            if segment.contains('/') && !volume {
                return false;
            }
            let fits = |name: &str, s: &str| {
                pattern(name).is_some_and(|p| p.is_match(s)) && !is_localhost(name, s)
            };
            let ok = match bound {
                Bound::Exactly(l) => segment == l,
                Bound::Given(name, value) => segment == value && fits(name, segment),
                Bound::Pattern(name) => fits(name, segment),
                Bound::Nothing => false,
            };
            if !ok {
                return false;
            }
        }
        sent.next().is_none()
    }

    /// Whether a write it [admits](BoundRoute::admits) may carry the
    /// parameters `sent`; the error says which parameter may not, and why.
    /// The reads a call's own request admits (its task's status and log)
    /// are not held to its parameters.
    pub fn admits_params(
        &self,
        sent: &[(String, String)],
        answered: &params::Answered<'_>,
    ) -> Result<(), String> {
        match self {
            BoundRoute::Template { params, .. } | BoundRoute::Request(_, params) => {
                params.admits(sent, answered)
            }
            BoundRoute::Nothing | BoundRoute::Inapplicable => Err("no request is admitted".into()),
        }
    }

    /// Whether a call may send it at most once.
    pub fn is_once(&self) -> bool {
        matches!(self, BoundRoute::Template { once: true, .. })
    }

    /// The parameters a call bound to this route may send with a value the
    /// tool chooses (see [`BoundParams::chosen_by_the_tool`]).
    pub fn chosen_by_the_tool(&self) -> Vec<&str> {
        match self {
            BoundRoute::Template { params, .. } | BoundRoute::Request(_, params) => {
                params.chosen_by_the_tool().collect()
            }
            BoundRoute::Nothing | BoundRoute::Inapplicable => Vec::new(),
        }
    }

    /// What a call bound to this route may send as the parameter `name`.
    pub fn may_send(&self, name: &str) -> MaySend {
        match self {
            BoundRoute::Template { params, .. } | BoundRoute::Request(_, params) => {
                params.may_send(name)
            }
            BoundRoute::Nothing | BoundRoute::Inapplicable => MaySend::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> JsonObject {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn every_builtin_pattern_compiles() {
        for (name, _) in PLACEHOLDERS {
            assert!(pattern(name).is_some(), "{name}");
        }
    }

    #[test]
    fn a_bound_route_admits_its_own_write_and_nothing_else() {
        let start = Route::parse("POST", "/nodes/{node}/{vm_type}/{vmid}/status/start").unwrap();
        assert_eq!(
            start.to_string(),
            "POST /api2/json/nodes/{node}/{vm_type}/{vmid}/status/start"
        );
        // vmid given, node and vm_type resolved by the tool.
        let bound = start.bind(&args(json!({"vmid": 105})));
        let post = |p: &str| bound.admits(&Method::POST, p);
        assert!(post("/nodes/pve1/qemu/105/status/start"));
        assert!(post("/nodes/pve-2/lxc/105/status/start"));
        for other in [
            "/nodes/pve1/qemu/106/status/start",
            "/nodes/pve1/qemu/105/status/stop",
            "/nodes/pve1/qemu/105",
            "/nodes/pve1/qemu/105/status/start/x",
            "/nodes/pve1/openvz/105/status/start",
            "/nodes/localhost/qemu/105/status/start",
            "/nodes/LOCALHOST/qemu/105/status/start",
            "/nodes/pve1%2F..%2Fqemu/qemu/105/status/start",
            "/nodes/pve1/qemu/105%2F..%2F106/status/start",
            "/nodes/pve1/qemu/0105/status/start",
            "/nodes//qemu/105/status/start",
        ] {
            assert!(!post(other), "{other}");
        }
        assert!(!bound.admits(&Method::DELETE, "/nodes/pve1/qemu/105/status/start"));
        // Given values are bound exactly, and must fit the pattern too.
        let bound = start.bind(&args(
            json!({"vmid": 105, "node": "pve1", "vm_type": "lxc"}),
        ));
        assert!(bound.admits(&Method::POST, "/nodes/pve1/lxc/105/status/start"));
        assert!(!bound.admits(&Method::POST, "/nodes/pve2/lxc/105/status/start"));
        assert!(!bound.admits(&Method::POST, "/nodes/pve1/qemu/105/status/start"));
        let bad = start.bind(&args(json!({"vmid": 105, "node": "a%2Fb"})));
        assert!(!bad.admits(&Method::POST, "/nodes/a%2Fb/qemu/105/status/start"));
        let object = start.bind(&args(json!({"vmid": {"x": 1}})));
        assert!(!object.admits(&Method::POST, "/nodes/pve1/qemu/105/status/start"));
    }

    /// A UPID's `:` (and its `@` and `!`) travel escaped; the segment is
    /// compared as pveproxy decodes it, still bound to the call's UPID.
    #[test]
    fn an_escaped_segment_is_compared_decoded() {
        let stop = Route::parse("DELETE", "/nodes/{node}/tasks/{upid}").unwrap();
        let upid = "UPID:pve1:00041A00:10BE6D64:6B130741:qmstart:104:root@pam!mcp:";
        let escaped = |u: &str| {
            u.replace(':', "%3A")
                .replace('@', "%40")
                .replace('!', "%21")
        };
        let bound = stop.bind(&args(json!({ "upid": upid })));
        let delete = |p: String| bound.admits(&Method::DELETE, &p);
        assert!(delete(format!("/nodes/pve1/tasks/{}", escaped(upid))));
        assert!(delete(format!("/nodes/pve1/tasks/{upid}")));
        let other = upid.replace("104", "108");
        for path in [
            format!("/nodes/pve1/tasks/{}", escaped(&other)),
            format!("/nodes/pve1/tasks/{}%2F..", escaped(upid)),
            format!("/nodes/pve1/tasks/{}/x", escaped(upid)),
            format!("/nodes/pve1/tasks/%2E%2E/{}", escaped(upid)),
            format!("/nodes/pve1/tasks/{}%ZZ", escaped(upid)),
        ] {
            assert!(!delete(path.clone()), "{path}");
        }
    }

    /// A volume id's `/` travels as `%2F`: admitted in the volume segment
    /// bound to the call's argument, never elsewhere, never as `..`.
    #[test]
    fn a_volume_segment_holds_its_slashes_and_only_its_own() {
        let delete =
            Route::parse("DELETE", "/nodes/{node}/storage/{storage}/content/{volid}").unwrap();
        let volid = "local:iso/debian-12.iso";
        let bound = delete.bind(&args(
            json!({"node": "pve1", "storage": "local", "volid": volid}),
        ));
        let sends = |p: &str| bound.admits(&Method::DELETE, p);
        assert!(sends(
            "/nodes/pve1/storage/local/content/local%3Aiso%2Fdebian-12.iso"
        ));
        for path in [
            "/nodes/pve1/storage/local/content/local%3Aiso%2Fother.iso",
            "/nodes/pve1/storage/local/content/local%3Aiso/debian-12.iso",
            "/nodes/pve1/storage/nfs/content/local%3Aiso%2Fdebian-12.iso",
            "/nodes/pve1%2Fx/storage/local/content/local%3Aiso%2Fdebian-12.iso",
        ] {
            assert!(!sends(path), "{path}");
        }
        for sneaky in [
            "local:iso/../../x",
            "local:iso/./x",
            "local:iso//x",
            "local:iso\\x",
        ] {
            let bound = delete.bind(&args(
                json!({"node": "pve1", "storage": "local", "volid": sneaky}),
            ));
            let path = format!(
                "/nodes/pve1/storage/local/content/{}",
                sneaky
                    .replace(':', "%3A")
                    .replace('/', "%2F")
                    .replace('\\', "%5C")
            );
            assert!(!bound.admits(&Method::DELETE, &path), "{sneaky}");
        }
    }

    #[test]
    fn the_calls_own_request_binds_to_its_normalised_arguments() {
        let route = Route::parse("{method}", "/{path}").unwrap();
        assert!(route.is_call_request());
        assert_eq!(route.to_string(), "{method} /api2/json/{path}");
        let bound = route.bind(&args(
            json!({"method": "DELETE", "path": "/nodes/pve1/qemu/100"}),
        ));
        assert!(bound.binds_reads());
        assert!(bound.admits(&Method::DELETE, "/nodes/pve1/qemu/100"));
        assert!(!bound.admits(&Method::DELETE, "/nodes/pve1/qemu/101"));
        assert!(!bound.admits(&Method::GET, "/version"));
        // Arguments the host did not normalise bind nothing at all.
        let raw = route.bind(&args(
            json!({"method": "delete", "path": "nodes/pve1/qemu/100"}),
        ));
        assert_eq!(raw, BoundRoute::Nothing);
        assert!(raw.binds_reads());
        assert!(!raw.admits(&Method::GET, "/version"));
    }

    #[test]
    fn routes_that_could_match_anything_are_refused_at_load() {
        for (method, path, says) in [
            ("HEAD", "/nodes/{node}", "not a write method"),
            ("PATCH", "/nodes/{node}", "not a write method"),
            ("POST", "nodes/{node}", "does not start with /"),
            ("POST", "/nodes/{anything}", "{anything}"),
            ("POST", "/nodes/../access", "segment \"..\""),
            ("POST", "/nodes//x", "segment \"\""),
            ("POST", "/nodes/a%2Fb", "segment \"a%2Fb\""),
            ("POST", "/nodes/{node}x", "segment"),
            ("{method}", "/nodes/{node}", "together"),
            ("POST", "/{path}", "together"),
        ] {
            let e = Route::parse(method, path).unwrap_err();
            assert!(e.contains(says), "{method} {path}: {e}");
        }
    }
}
