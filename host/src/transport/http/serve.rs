//! The Streamable HTTP server, in the order a request meets it: the
//! listener accepts a connection; the connection budget, TLS and the
//! header timeout apply to it ([`super::connections`]); each request then passes
//! the tower stack ([`super::layers`]: a log line, and for the MCP path the
//! `Host`/`Origin` guard, the bearer token and the body limit) to its route:
//! `/healthz`, `/readyz` or MCP ([`super::mcp_route`]). SIGTERM or SIGINT drains it.
//! Once the app is up, the approvals admin endpoint ([`super::admin`])
//! starts beside it on its own listener, and stops after the drain.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tower::{ServiceBuilder, ServiceExt};

use super::admin;
use super::auth::Tokens;
use super::connections::Server;
use super::guard::{self, Guard};
use super::layers;
use super::limits::ConnectionLimits;
use super::mcp_route::Mcp;
use super::response::{Body, HttpService, Reject, text};
use crate::config::http::HttpSettings;
use crate::server::serving::Serving;

/// After the grace period, how long open streams get to close.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Open connections allowed per allowed session (a session's client keeps
/// a GET stream and a few POST connections), plus headroom for probes.
const CONNECTIONS_PER_SESSION: usize = 4;
const SPARE_CONNECTIONS: usize = 64;

/// Where the server listens, as clients reach it.
#[derive(Debug, Clone)]
pub struct Bound {
    /// The bound socket address (with the real port when 0 was asked for).
    pub addr: SocketAddr,
    /// The MCP endpoint's URL.
    pub url: String,
}

/// Serves MCP at `addr` until SIGTERM or SIGINT. `app` (compiling the
/// component) runs while the listener already answers `/healthz`; MCP
/// requests and `/readyz` wait for it. `announce` is told the bound address
/// once listening.
pub async fn run(
    settings: &HttpSettings,
    addr: SocketAddr,
    app: impl Future<Output = anyhow::Result<Serving>> + Send + 'static,
    announce: impl FnOnce(&Bound),
) -> anyhow::Result<()> {
    let tls = settings
        .tls
        .as_ref()
        .map(|tls| TlsAcceptor::from(tls.config()));
    let mut signals = Signals::new().context("listening for SIGTERM and SIGINT")?;
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    let guard = guard_for(settings, bound, tls.is_some());
    announce(&listening(settings, bound, tls.is_some()));

    let mcp = Arc::new(Mcp::new(settings));
    crate::metrics::on_scrape(open_sessions(mcp.clone()));
    let routes = routes(settings, guard, mcp.clone());
    let started = tokio::spawn({
        let mcp = mcp.clone();
        async move {
            let serving = app.await?;
            let admin = admin::start_for(&serving).await?;
            mcp.set_ready(serving);
            anyhow::Ok(admin)
        }
    });
    let server = Server::new(connection_limits(settings), settings.header_timeout, tls);
    let stop = until_signal(started, &mut signals);
    let admin = server
        .accept_until(&listener, |peer| layers::log(peer, routes.clone()), stop)
        .await?;
    drop(listener);
    shut_down(&mcp, server, settings.shutdown_grace).await;
    // Only now: a call still draining may be waiting for a person to
    // approve it through the admin endpoint.
    drop(admin);
    Ok(())
}

/// The connection budget: `max_connections` (by default enough for every
/// session's connections, plus room for probes), and the per-address cap
/// on connections that have not shown a token.
fn connection_limits(settings: &HttpSettings) -> ConnectionLimits {
    ConnectionLimits {
        max_total: settings.max_connections.unwrap_or(
            settings
                .max_sessions
                .saturating_mul(CONNECTIONS_PER_SESSION)
                .saturating_add(SPARE_CONNECTIONS),
        ),
        max_anonymous_per_peer: Some(settings.max_anonymous_connections_per_peer),
    }
}

/// The `Host` and `Origin` allow-lists: the configured ones, or the
/// defaults for the bound address.
fn guard_for(settings: &HttpSettings, bound: SocketAddr, tls: bool) -> Guard {
    let (default_hosts, default_origins) = guard::defaults(bound, tls);
    let hosts = settings.allowed_hosts.clone().unwrap_or(default_hosts);
    let origins = settings.allowed_origins.clone().unwrap_or(default_origins);
    tracing::debug!(?hosts, ?origins, "Host and Origin allow-lists");
    Guard::new(hosts, origins, tls)
}

/// Logs where the server listens (warning when bearer tokens would cross
/// the network in clear text) and says how clients reach it.
fn listening(settings: &HttpSettings, bound: SocketAddr, tls: bool) -> Bound {
    let scheme = if tls { "https" } else { "http" };
    let host = match bound.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        ip => ip.to_string(),
    };
    let url = format!("{scheme}://{host}:{}{}", bound.port(), settings.path);
    if !bound.ip().is_loopback() && !tls {
        tracing::warn!(
            %bound,
            "serving plain HTTP on a non-loopback address: bearer tokens cross the network in clear text; \
             set http.tls_cert and http.tls_key or put a TLS reverse proxy in front"
        );
    }
    tracing::info!(
        %url,
        auth = !settings.tokens.is_empty(),
        tls,
        "serving MCP over Streamable HTTP"
    );
    Bound { addr: bound, url }
}

/// Refreshes `pve_mcp_sessions` before each scrape.
fn open_sessions(mcp: Arc<Mcp>) -> crate::metrics::Sampler {
    Arc::new(move || {
        let mcp = mcp.clone();
        Box::pin(async move { crate::metrics::sessions(mcp.open_sessions().await) })
    })
}

/// `GET /metrics`: the Prometheus text, or 404 when metrics are off.
async fn metrics_page() -> Response<Body> {
    let Some(page) = crate::metrics::scrape().await else {
        return text(StatusCode::NOT_FOUND, "Not Found: metrics are off\n");
    };
    let mut response = text(StatusCode::OK, page);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
    );
    response
}

/// Serves `GET /metrics` (and nothing else) without a token on `addr`, a
/// loopback address (`[metrics] listen`), until the task is aborted.
pub async fn metrics_listener(addr: SocketAddr) -> anyhow::Result<(SocketAddr, JoinHandle<()>)> {
    // The settings refuse other addresses already; this is the last line.
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "metrics.listen: {addr} is not a loopback address"
    );
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("metrics.listen: cannot listen on {addr}"))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    let routes = tower::service_fn(|request: Request<Incoming>| async move {
        let page = matches!(*request.method(), Method::GET | Method::HEAD);
        Ok::<_, Infallible>(match request.uri().path() {
            "/metrics" if page => metrics_page().await,
            "/metrics" => method_not_allowed(),
            _ => text(StatusCode::NOT_FOUND, "Not Found: see /metrics\n"),
        })
    });
    tracing::info!(address = %bound, "metrics listening (GET /metrics)");
    let limits = ConnectionLimits {
        max_total: 64,
        max_anonymous_per_peer: None,
    };
    let task = tokio::spawn(async move {
        Server::new(limits, Duration::from_secs(10), None)
            .accept_until(
                &listener,
                |peer| layers::log(peer, routes),
                std::future::pending::<()>(),
            )
            .await
    });
    Ok((bound, task))
}

/// The routes: `/healthz` and `/readyz` for probes (which send neither a
/// token nor the `Host` a browser would), the MCP path and `/metrics` (when
/// metrics are on) behind the guard and the token (the MCP path also
/// behind the body limit), and 404 for anything else.
fn routes(settings: &HttpSettings, guard: Guard, mcp: Arc<Mcp>) -> impl HttpService<Incoming> {
    let metrics = ServiceBuilder::new()
        .layer(layers::guard(guard.clone(), Reject::into_response))
        .layer(layers::auth(
            Tokens::new(&settings.tokens),
            Reject::into_response,
        ))
        .service_fn(|_request: Request<Incoming>| async {
            Ok::<_, Infallible>(metrics_page().await)
        });
    let endpoint = ServiceBuilder::new()
        .layer(layers::guard(guard, Reject::into_response))
        .layer(layers::auth(
            Tokens::new(&settings.tokens),
            Reject::into_response,
        ))
        .layer(layers::body_limit(
            settings.max_body_bytes,
            Some("http.max_body_kib"),
            Reject::into_response,
        ))
        .service_fn({
            let mcp = mcp.clone();
            move |request| {
                let mcp = mcp.clone();
                async move { Ok::<_, Infallible>(mcp.serve(request).await) }
            }
        });
    let path: Arc<str> = settings.path.as_str().into();
    tower::service_fn(move |request: Request<Incoming>| {
        let (mcp, endpoint, path) = (mcp.clone(), endpoint.clone(), path.clone());
        let metrics = metrics.clone();
        async move {
            let route = request.uri().path();
            let probe = matches!(*request.method(), Method::GET | Method::HEAD);
            Ok(match route {
                "/healthz" if probe => text(StatusCode::OK, "ok\n"),
                "/readyz" if probe => readiness(&mcp),
                "/healthz" | "/readyz" => method_not_allowed(),
                "/metrics" if probe && crate::metrics::enabled() && route != &*path => {
                    metrics.oneshot(request).await?
                }
                _ if route == &*path => endpoint.oneshot(request).await?,
                _ => text(
                    StatusCode::NOT_FOUND,
                    "Not Found: see /healthz, /readyz and the MCP endpoint\n",
                ),
            })
        }
    })
}

fn readiness(mcp: &Mcp) -> Response<Body> {
    match (mcp.draining(), mcp.ready()) {
        (true, _) => text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n"),
        (false, false) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "starting: compiling the tool component\n",
        ),
        (false, true) => text(StatusCode::OK, "ready\n"),
    }
}

fn method_not_allowed() -> Response<Body> {
    let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
    r.headers_mut().insert(
        http::header::ALLOW,
        http::HeaderValue::from_static("GET, HEAD"),
    );
    r
}

/// Resolves when a signal asks the server to stop, with what the start-up
/// made if it finished by then, or with the error when the start-up
/// (compiling the component and the rest) fails.
async fn until_signal<T>(
    mut started: JoinHandle<anyhow::Result<T>>,
    signals: &mut Signals,
) -> anyhow::Result<Option<T>> {
    let mut made = None;
    loop {
        tokio::select! {
            result = &mut started, if made.is_none() => {
                match result {
                    Ok(Ok(value)) => {
                        tracing::info!("ready");
                        made = Some(value);
                    }
                    Ok(Err(e)) => return Err(e),
                    Err(_) => anyhow::bail!("the start-up task ended without a result"),
                }
            }
            signal = signals.recv() => {
                tracing::info!(signal, "shutting down: no new connections");
                return Ok(made);
            }
        }
    }
}

/// Lets calls in flight finish (up to `grace`), then ends every session.
async fn shut_down(mcp: &Mcp, server: Server, grace: Duration) {
    mcp.start_draining();
    let inflight = mcp.inflight().count();
    if inflight > 0 {
        tracing::info!(
            inflight,
            grace_secs = grace.as_secs(),
            "waiting for requests in flight"
        );
    }
    // Polling `closing` tells every connection to finish its current
    // request and close.
    let closing = server.shutdown();
    tokio::pin!(closing);
    let mut closed = false;
    let drained = tokio::time::timeout(grace, async {
        tokio::select! {
            _ = mcp.inflight().drained() => {}
            _ = &mut closing => closed = true,
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            unfinished = mcp.inflight().count(),
            "the grace period is over; ending the requests still running"
        );
    }
    mcp.end_sessions();
    if !closed {
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, closing).await;
    }
    tracing::info!("stopped");
}

/// SIGTERM and SIGINT (Ctrl-C elsewhere), the signals that stop a server.
pub(crate) struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Starts listening for them.
    pub(crate) fn new() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The next one's name.
    pub(crate) async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}
