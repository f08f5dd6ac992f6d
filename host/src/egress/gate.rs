//! The gate's decision: which configured cluster a request goes to, and
//! whether the call may send it there (the cluster it is bound to, the API
//! prefix, its access, and its tool's routes bound to its arguments). The
//! in-process hook and the egress proxy both only ask it.

use http::Method;

use super::access::Access;
use crate::endpoint::{API_PREFIX, Endpoint, check_api_path};
use crate::route::BoundRoute;
use crate::upstream::Upstream;

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
pub struct ClusterIndex(pub(super) usize);

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
    /// A GET of what the gate guards (a guest's files or command output,
    /// a secret: the class named) that no route of the call's tool
    /// declares for these arguments.
    #[error("a guarded read ({0}) this call's tool does not declare for these arguments")]
    GuardedRead(&'static str),
    /// A second request of a route the call may send only once.
    #[error("a request this call may send only once, sent again")]
    Once,
    /// A write the call's routes admit by method and path, with a
    /// parameter they do not: not declared, not the call's argument, sent
    /// twice, or in a body the gate cannot read.
    #[error("its parameters are not what this call may send: {0}")]
    Params(String),
    /// An approved call's write that is not the next one of the plan the
    /// person approved.
    #[error("not the request the approved plan names: {0}")]
    Plan(String),
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

impl Denial {
    /// The reason as `pve_mcp_egress_denials_total` labels it (the audit
    /// log's rule names).
    pub fn metric(&self) -> crate::metrics::Denial {
        use crate::metrics::Denial as M;
        match self {
            Denial::Authority => M::Authority,
            Denial::OtherCluster => M::Cluster,
            Denial::Path(_) => M::Path,
            Denial::Method => M::Method,
            Denial::Route => M::Route,
            Denial::GuardedRead(_) => M::Guarded,
            Denial::Once => M::Once,
            Denial::Params(_) => M::Params,
            Denial::Plan(_) => M::Plan,
            Denial::BodyOnGet => M::BodyOnGet,
            Denial::BodyTooLarge => M::BodyTooLarge,
            Denial::TooManyRequests(_) => M::TooManyRequests,
            Denial::RefusedMore(_) => M::Stopping,
        }
    }
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
        // Reads are any GET under the API but the guarded ones; a write,
        // or a guarded read, must be one the tool declared, bound to this
        // call's arguments. A call whose route is its own request has its
        // reads bound too.
        let api_path = api_path(uri);
        let guarded = guarded_read(method, api_path);
        let bound = *method != Method::GET
            || guarded.is_some()
            || writes.iter().any(BoundRoute::binds_reads);
        if bound && !writes.iter().any(|w| w.admits(method, api_path)) {
            return Err(guarded.map_or(Denial::Route, Denial::GuardedRead));
        }
        Ok(index)
    }

    /// Decides the parameters `sent` of a request [`Gate::check`] let
    /// through: a write, or a guarded read, must carry only what one of
    /// the routes that admit its method and path lets it carry (`answered`:
    /// what the call's earlier writes were answered with). The index of
    /// that route in `writes`; `None` for a read, which carries what it
    /// likes.
    pub fn check_params(
        &self,
        method: &Method,
        uri: &http::Uri,
        sent: &super::sent::Sent,
        writes: &[BoundRoute],
        answered: &crate::route::params::Answered<'_>,
    ) -> Result<Option<usize>, Denial> {
        let api_path = api_path(uri);
        if *method == Method::GET && guarded_read(method, api_path).is_none() {
            return Ok(None);
        }
        let mut refused = None;
        for (i, route) in writes.iter().enumerate() {
            if !route.admits(method, api_path) {
                continue;
            }
            match route.admits_params(sent, answered) {
                Ok(()) => return Ok(Some(i)),
                Err(why) => {
                    refused.get_or_insert(why);
                }
            }
        }
        Err(Denial::Params(
            refused.unwrap_or_else(|| "no route of the call admits it".into()),
        ))
    }

    /// Whether `method` on `uri` is a request the gate guards: a write, or
    /// a [guarded read](guarded_read).
    pub fn guards(method: &Method, uri: &http::Uri) -> bool {
        *method != Method::GET || guarded_read(method, api_path(uri)).is_some()
    }

    /// The name of the configured cluster whose endpoint `uri` is, for the
    /// record of a request (the bound one first, when two share an
    /// endpoint).
    pub(super) fn cluster_of(
        &self,
        uri: &http::Uri,
        bound: Option<ClusterIndex>,
    ) -> Option<String> {
        bound
            .filter(|b| self.endpoints[b.0].endpoint.matches(uri))
            .map(|b| b.0)
            .or_else(|| self.endpoints.iter().position(|e| e.endpoint.matches(uri)))
            .map(|i| self.endpoints[i].cluster.clone())
    }
}

/// The path below `/api2/json`, from the `/` that ends the prefix:
/// `/nodes/...`, still percent-encoded.
fn api_path(uri: &http::Uri) -> &str {
    uri.path().get(API_PREFIX.len() - 1..).unwrap_or_default()
}

/// The sensitive class whose reads a GET of `api_path` falls in, if any
/// (each segment decoded once, as pveproxy reads it).
fn guarded_read(method: &Method, api_path: &str) -> Option<&'static str> {
    if *method != Method::GET {
        return None;
    }
    // Undecodable reaches no endpoint, but is held like a guarded read
    // rather than judged by a reading the gate cannot make.
    let Some(segments) = crate::route::request::decoded_segments(api_path) else {
        return Some("a path the gate cannot decode");
    };
    crate::route::sensitive::guarded_read(&segments).map(|c| c.name)
}

#[cfg(test)]
mod tests {
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
            credential_sets: Vec::new(),
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

    #[test]
    fn a_guarded_read_leaves_only_through_a_route_that_declares_it() {
        let gate = Gate::new(vec![endpoint("a", "https://10.0.0.1:8006")]);
        let bound = gate.resolve(None);
        let uri = |p: &str| -> http::Uri {
            format!("https://10.0.0.1:8006/api2/json{p}")
                .parse()
                .unwrap()
        };
        let read = |p: &str, writes: &[BoundRoute]| {
            gate.check(&Method::GET, &uri(p), Access::Write, bound, writes)
        };
        let file = "/nodes/pve1/qemu/100/agent/file-read";
        // Any tool's GET of a guest's file, or its encoded spelling, is
        // refused without a route for it; an ordinary read is not.
        for path in [
            file,
            "/nodes/pve1/qemu/100/agent/file%2Dread",
            "/nodes/pve1/qemu/100/agent/exec-status",
            "/nodes/pve1/qemu/100/cloudinit/dump",
            "/nodes/pve1/journal",
        ] {
            assert!(
                matches!(read(path, &[]), Err(Denial::GuardedRead(_))),
                "{path}"
            );
        }
        assert_eq!(
            read("/nodes/pve1/qemu/100/agent/get-osinfo", &[]),
            Ok(ClusterIndex(0))
        );
        let route = crate::route::Route::parse("GET", "/nodes/{node}/qemu/{vmid}/agent/file-read")
            .unwrap()
            .with_params(
                crate::route::Params::parse(
                    vec![crate::route::params::ParamRule {
                        name: "file".into(),
                        argument: Some("path".into()),
                        otherwise: crate::route::params::Otherwise::Absent,
                    }],
                    None,
                )
                .unwrap(),
            );
        let args = serde_json::json!({"vmid": 100, "path": "/var/log/syslog"});
        let writes = [route.bind(args.as_object().unwrap())];
        assert_eq!(read(file, &writes), Ok(ClusterIndex(0)));
        assert!(matches!(
            read("/nodes/pve1/qemu/101/agent/file-read", &writes),
            Err(Denial::GuardedRead(_))
        ));
        // Its query is held to the route like a write's body.
        let params = |file: &str| vec![("file".to_string(), file.to_string())];
        let nothing = crate::route::params::nothing_answered;
        assert_eq!(
            gate.check_params(
                &Method::GET,
                &uri(file),
                &params("/var/log/syslog"),
                &writes,
                &nothing
            ),
            Ok(Some(0))
        );
        assert!(matches!(
            gate.check_params(
                &Method::GET,
                &uri(file),
                &params("/etc/shadow"),
                &writes,
                &nothing
            ),
            Err(Denial::Params(_))
        ));
        // An ordinary read carries what it likes.
        let osinfo = uri("/nodes/pve1/qemu/100/agent/get-osinfo");
        assert_eq!(
            gate.check_params(&Method::GET, &osinfo, &params("x"), &writes, &nothing),
            Ok(None)
        );
    }
}
