//! `pve-mcp egress-proxy`: the egress gate as a loopback HTTP proxy, for a
//! tool component hosted by someone else (Node.js through jco, the stock
//! wasmtime CLI, a gateway). That host points the component's endpoint
//! `base-url` here; the component sends plain HTTP to loopback, and the
//! proxy does what pve-mcp's own host does at the sandbox's edge: the gate
//! (the configured cluster, `/api2/json/`, the methods), the credentials
//! (added only after the check), TLS to Proxmox with the CA file or pin,
//! the reason phrase in `pve-mcp-reason-phrase`, and an audit record per
//! request. The component never holds the Proxmox token.
//!
//! A request's path says which cluster and, when the proxy has a token,
//! carries it: `[/token/TOKEN][/cluster/NAME]/api2/json/...`. The token is
//! a path prefix because a component sets no credentials of its own, and
//! a foreign host passes only the base URL: it grants what this proxy's
//! policy allows and nothing more, and is never the Proxmox token.
//!
//! What the proxy lets out, with no tool call to bind to: any `GET` under
//! `/api2/json/` (as for a read tool), and a write only when it fits a
//! route template of a tool the policy allows to write outright (`action =
//! "allow"`, not `require_approval`: there is nobody to ask), with each
//! placeholder held to PVE's own pattern. The call's own request
//! (`pve_api_request`) cannot be bound without its call, so its writes are
//! never let out here.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use http::{HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use tokio::net::TcpListener;

use super::http::auth::Tokens;
use super::http::connections::Server;
use super::http::limits::ConnectionLimits;
use super::http::response::{Body, text};
use super::http::serve::Signals;
use crate::config::http::NamedToken;
use crate::egress::{
    Access, Binding, ClusterIndex, Denial, EgressRecord, Gate, REASON_HEADER, admit_body,
    admit_head, admit_params,
};
use crate::policy::Action;
use crate::route::BoundRoute;
use crate::secret::Secret;
use crate::server::app::App;
use crate::tier::Tier;

/// How long a client may take to send its request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections open at once (a component makes one request at a time).
const MAX_CONNECTIONS: usize = 256;

/// What the proxy needs to run.
pub struct ProxySettings {
    /// A loopback address to listen on.
    pub listen: SocketAddr,
    /// The token a request's path must carry, if any.
    pub token: Option<Secret>,
}

/// The proxy's state, shared by its connections.
struct Proxy {
    app: Arc<App>,
    gate: Arc<Gate>,
    /// The writes the policy lets out without a call to bind to: no
    /// cluster, no plan, and each route bound open.
    writes: Binding,
    /// The proxy's token, when it has one.
    token: Option<Tokens>,
    max_response: usize,
    next_id: AtomicU64,
}

/// Serves the proxy until SIGTERM or SIGINT; `announce` is told the base
/// URL a component's endpoint should name.
pub async fn run(
    app: Arc<App>,
    settings: ProxySettings,
    announce: impl FnOnce(&str),
) -> anyhow::Result<()> {
    if !settings.listen.ip().is_loopback() {
        anyhow::bail!(
            "egress-proxy listens on loopback only, and {} is not: its callers reach Proxmox \
             with this host's credentials; use 127.0.0.1:PORT",
            settings.listen
        );
    }
    let listener = TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("cannot listen on {}", settings.listen))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    let mut signals = Signals::new().context("listening for SIGTERM and SIGINT")?;
    let proxy = Arc::new(Proxy {
        gate: app.gate(),
        writes: Binding {
            writes: writes_allowed(&app),
            ..Binding::default()
        },
        token: settings.token.map(|secret| {
            Tokens::new(&[NamedToken {
                name: "egress-proxy".into(),
                secret,
                toolsets: None,
                read_only: false,
                pve_credentials: None,
            }])
        }),
        max_response: app.max_response_bytes(),
        app,
        next_id: AtomicU64::new(1),
    });
    let base = format!("http://{bound}");
    tracing::info!(
        %base,
        token = proxy.token.is_some(),
        writes = proxy.writes.writes.len(),
        "egress proxy ready"
    );
    announce(&base);
    let server = Server::new(
        ConnectionLimits {
            max_total: MAX_CONNECTIONS,
            max_anonymous_per_peer: None,
        },
        HEADER_TIMEOUT,
        None,
    );
    let service = {
        let proxy = proxy.clone();
        tower::service_fn(move |request: Request<Incoming>| {
            let proxy = proxy.clone();
            async move { Ok::<_, Infallible>(proxy.serve(request).await) }
        })
    };
    server
        .accept_until(
            &listener,
            // Not the HTTP request log: the path carries the proxy's
            // token. Each request is logged once decided, without it.
            |_peer| service.clone(),
            async move {
                let signal = signals.recv().await;
                tracing::info!("{signal}: the egress proxy stops");
            },
        )
        .await;
    Ok(())
}

/// The route templates of every tool the policy lets write without asking
/// anyone, bound to no arguments: each placeholder admits what PVE's
/// pattern for it admits, and each parameter that carries an argument any
/// value, but a destructive parameter only its harmless values unless the
/// policy lets the tool's destructive calls run too.
fn writes_allowed(app: &App) -> Vec<BoundRoute> {
    let policy = app.policy().policy();
    let runs =
        |e: &crate::policy::Effective<'_>| e.action == Action::Allow && e.access == Access::Write;
    app.tools()
        .iter()
        .filter(|tool| runs(&policy.effective(tool)))
        .flat_map(|tool| {
            let destructive = runs(&policy.effective_at(tool, Tier::Destructive));
            tool.routes
                .iter()
                .filter(|route| !route.is_call_request())
                .map(move |route| route.bind_open(destructive))
        })
        .collect()
}

/// Where a request goes: the cluster, and the path and query under it.
struct Target<'a> {
    cluster: Option<&'a str>,
    rest: &'a str,
}

/// Splits `[/token/T][/cluster/NAME]REST`; `None` when the token is
/// missing or wrong (a constant-time comparison).
fn target<'a>(path_and_query: &'a str, token: Option<&Tokens>) -> Option<Target<'a>> {
    let mut rest = path_and_query;
    if let Some(token) = token {
        let after = rest.strip_prefix("/token/")?;
        let (given, tail) = after.split_at(after.find('/').unwrap_or(after.len()));
        token.identify(given)?;
        rest = tail;
    }
    let cluster = match rest.strip_prefix("/cluster/") {
        Some(after) => {
            let (name, tail) = after.split_at(after.find('/').unwrap_or(after.len()));
            rest = tail;
            Some(name)
        }
        None => None,
    };
    Some(Target { cluster, rest })
}

impl Proxy {
    async fn serve(&self, request: Request<Incoming>) -> Response<Body> {
        let started = Instant::now();
        let path_and_query = request
            .uri()
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default();
        let Some(target) = target(&path_and_query, self.token.as_ref()) else {
            // No record: nothing was asked of Proxmox, and a wrong token
            // must not fill the audit log.
            tracing::warn!("egress proxy: a request without the proxy's token was refused");
            return text(
                StatusCode::UNAUTHORIZED,
                "this egress proxy needs its token: the component's base-url must be \
                 http://HOST:PORT/token/TOKEN\n",
            );
        };
        let Some(cluster) = self.gate.resolve(
            target
                .cluster
                .map(|c| serde_json::Value::String(c.to_owned()))
                .as_ref(),
        ) else {
            return text(
                StatusCode::NOT_FOUND,
                "no such cluster: name one this proxy is configured for in /cluster/NAME, or \
                 leave it out for the default\n",
            );
        };
        let uri = match self.upstream_uri(cluster, target.rest) {
            Some(uri) => uri,
            None => {
                return text(
                    StatusCode::BAD_REQUEST,
                    "the path must be /api2/json/... after the optional /token/T and /cluster/NAME\n",
                );
            }
        };
        let method = request.method().clone();
        // A component that sends JSON says so; anything else is the form
        // Proxmox takes by default.
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .filter(|v| v.as_bytes().starts_with(b"application/json"))
            .cloned()
            .unwrap_or(HeaderValue::from_static(
                "application/x-www-form-urlencoded",
            ));
        // Without a call to bind to, a request's method is its access:
        // the writes it may send are the policy's (see `writes_allowed`).
        let access = Access::writing_if(method != Method::GET);
        let (mut record, verdict) = admit_head(
            &self.gate,
            &method,
            &uri,
            access,
            Some(cluster),
            &self.writes.writes,
        );
        if let Err(denial) = verdict {
            return self.refuse(record, denial, started).await;
        }
        let (mut head, body) = request.into_parts();
        let body = match admit_body(&method, body).await {
            Ok(body) => body,
            Err(denial) => return self.refuse(record, denial, started).await,
        };
        // Judged as Proxmox will read it: on the upstream URI, with the
        // content type the proxy sends.
        head.uri = uri.clone();
        head.headers
            .insert(http::header::CONTENT_TYPE, content_type.clone());
        if let Err(denial) = admit_params(&self.gate, &mut record, &head, &body, &self.writes) {
            return self.refuse(record, denial, started).await;
        }
        // Without a call there is no tier to grant: a read carries the
        // cluster's read credential, a write its write one (never the
        // destructive one: see docs/hosting.md).
        let tier = if method == Method::GET {
            Tier::Read
        } else {
            Tier::Write
        };
        let credential = match self.gate.credential(cluster, None, tier) {
            Ok(credential) => credential,
            Err(why) => return text(StatusCode::FORBIDDEN, format!("{why}\n")),
        };
        let mut upstream = Request::builder().method(method).uri(uri);
        if let Some(headers) = upstream.headers_mut() {
            headers.insert(
                http::header::ACCEPT,
                HeaderValue::from_static("application/json"),
            );
            if !body.is_empty() {
                headers.insert(http::header::CONTENT_TYPE, content_type);
            }
        }
        let Ok(upstream) = upstream.body(Full::new(body)) else {
            return text(StatusCode::BAD_REQUEST, "the request cannot be forwarded\n");
        };
        let endpoint = self.gate.endpoint(cluster);
        let answer = match endpoint.upstream.send(credential, upstream).await {
            Ok(response) => {
                let reason = crate::egress::reason_header(&response);
                let (parts, body) = response.into_parts();
                match Limited::new(body, self.max_response).collect().await {
                    Ok(bytes) => {
                        record.status = Some(parts.status.as_u16());
                        let mut answer = Response::new(Full::new(bytes.to_bytes()).boxed());
                        *answer.status_mut() = parts.status;
                        for name in [http::header::CONTENT_TYPE] {
                            if let Some(value) = parts.headers.get(&name) {
                                answer.headers_mut().insert(name, value.clone());
                            }
                        }
                        if let Some(reason) = reason {
                            answer.headers_mut().insert(REASON_HEADER, reason);
                        }
                        answer
                    }
                    Err(e) => {
                        record.failure = Some(crate::upstream::UpstreamFailure::Other(format!(
                            "the answer could not be read whole (over {} bytes, or cut off): {e}",
                            self.max_response
                        )));
                        text(
                            StatusCode::BAD_GATEWAY,
                            "Proxmox's answer could not be read whole\n",
                        )
                    }
                }
            }
            Err(failure) => {
                let answer = text(StatusCode::BAD_GATEWAY, format!("{failure}\n"));
                record.failure = Some(failure);
                answer
            }
        };
        record.elapsed = started.elapsed();
        tracing::info!(
            target: "pve_mcp::egress_proxy",
            cluster = record.cluster.as_deref(),
            method = %record.method,
            path = %record.path,
            status = record.status,
            ms = record.elapsed.as_millis() as u64,
            "proxied request"
        );
        self.audit(record).await;
        answer
    }

    /// The URI the request goes to: the cluster's endpoint and `rest`,
    /// which must be under `/api2/json/`.
    fn upstream_uri(&self, cluster: ClusterIndex, rest: &str) -> Option<Uri> {
        if !rest.starts_with(crate::endpoint::API_PREFIX) {
            return None;
        }
        let base = self.gate.endpoint(cluster).endpoint.base_url();
        format!("{base}{rest}").parse().ok()
    }

    async fn refuse(
        &self,
        mut record: EgressRecord,
        denial: Denial,
        started: Instant,
    ) -> Response<Body> {
        let message = format!("refused by the egress proxy: {denial}\n");
        tracing::warn!(method = %record.method, path = %record.path, "egress proxy refused a request: {denial}");
        record.denied = Some(denial);
        record.elapsed = started.elapsed();
        self.audit(record).await;
        text(StatusCode::FORBIDDEN, message)
    }

    async fn audit(&self, record: EgressRecord) {
        let id = format!("proxy-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        self.app.audit_proxied(&id, record).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Tokens {
        Tokens::new(&[NamedToken {
            name: "egress-proxy".into(),
            secret: Secret::new("0123456789abcdef"),
            toolsets: None,
            read_only: false,
            pve_credentials: None,
        }])
    }

    fn split<'a>(path: &'a str, token: Option<&Tokens>) -> Option<(Option<&'a str>, &'a str)> {
        target(path, token).map(|t| (t.cluster, t.rest))
    }

    #[test]
    fn the_path_names_the_token_then_the_cluster_then_the_api_path() {
        assert_eq!(
            split("/api2/json/version?x=1", None),
            Some((None, "/api2/json/version?x=1"))
        );
        assert_eq!(
            split("/cluster/lab/api2/json/version", None),
            Some((Some("lab"), "/api2/json/version"))
        );
        let t = tokens();
        assert_eq!(
            split("/token/0123456789abcdef/cluster/lab/api2/json/x", Some(&t)),
            Some((Some("lab"), "/api2/json/x"))
        );
        for refused in [
            "/api2/json/version",
            "/token/0123456789abcdeX/api2/json/version",
            "/token/0123456789abcdef0/api2/json/version",
            "/token//api2/json/version",
            "/token/0123456789abcdef",
        ] {
            let got = split(refused, Some(&t));
            assert!(
                got.is_none() || got.is_some_and(|(_, rest)| rest.is_empty()),
                "{refused}: {got:?}"
            );
        }
    }
}
