//! The listener: connections (plain or TLS), routing (`/healthz`,
//! `/readyz`, the MCP path), the checks in front of rmcp, a log line per
//! request, and the graceful shutdown on SIGTERM or SIGINT.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::auth::Tokens;
use super::guard::{self, Guard};
use super::limits::{InFlight, hold_until_sent};
use super::response::{Body, Reject, text};
use crate::caller::TokenName;
use crate::config::http::HttpSettings;
use crate::server::mcp::McpServer;
use crate::server::serving::Serving;

/// A connection whose first bytes (after the TLS handshake, if any) take
/// longer is dropped: until a client sends something, hyper cannot tell
/// HTTP/1 from HTTP/2 and no other timeout runs, so silent connections
/// would hold their slots for ever.
const FIRST_BYTES_TIMEOUT: Duration = Duration::from_secs(10);
/// A client that takes longer to send its request headers is dropped.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How often an HTTP/2 connection is pinged, and how long the answer may
/// take before the connection is closed.
const H2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const H2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// After the grace period, how long open streams get to close.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
const SESSION_HEADER: &str = "mcp-session-id";
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

type Service = StreamableHttpService<McpServer, LocalSessionManager>;

/// Everything the request handler needs.
struct State {
    path: String,
    guard: Guard,
    tokens: Tokens,
    max_body_bytes: usize,
    max_sessions: usize,
    max_calls_per_session: usize,
    sessions: Arc<LocalSessionManager>,
    rmcp_config: StreamableHttpServerConfig,
    /// Set once the component is compiled: until then MCP requests get 503.
    service: OnceLock<Service>,
    /// What the service needs kept alive (the approvals admin endpoint).
    serving: OnceLock<Serving>,
    /// Serialises session creation, so the session limit is exact.
    init_lock: tokio::sync::Mutex<()>,
    /// Which token opened each session: another token cannot use it.
    owners: Mutex<HashMap<Arc<str>, Option<Arc<str>>>>,
    inflight: Arc<InFlight>,
    draining: AtomicBool,
    shutdown: CancellationToken,
}

impl State {
    fn new(settings: &HttpSettings, bound: SocketAddr, tls: bool) -> anyhow::Result<State> {
        let (default_hosts, default_origins) = guard::defaults(bound, tls);
        let hosts = settings.allowed_hosts.clone().unwrap_or(default_hosts);
        let origins = settings.allowed_origins.clone().unwrap_or(default_origins);
        tracing::debug!(?hosts, ?origins, "Host and Origin allow-lists");
        let guard = Guard::new(hosts, origins, tls);
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(settings.session_idle);
        let shutdown = CancellationToken::new();
        // pve-mcp checks Host and Origin itself (with messages naming the
        // setting), so rmcp's copies of those checks are off.
        let rmcp_config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(settings.max_body_bytes)
            .with_cancellation_token(shutdown.clone());
        Ok(State {
            path: settings.path.clone(),
            guard,
            tokens: Tokens::new(&settings.tokens),
            max_body_bytes: settings.max_body_bytes,
            max_sessions: settings.max_sessions,
            max_calls_per_session: settings.max_calls_per_session,
            sessions: Arc::new(sessions),
            rmcp_config,
            service: OnceLock::new(),
            serving: OnceLock::new(),
            init_lock: tokio::sync::Mutex::new(()),
            owners: Mutex::new(HashMap::new()),
            inflight: Arc::new(InFlight::default()),
            draining: AtomicBool::new(false),
            shutdown,
        })
    }

    fn set_ready(&self, serving: Serving) {
        let prototype = serving.server().clone();
        let limit = self.max_calls_per_session;
        // rmcp asks for a server per session (and per stateless request);
        // each gets its own call slots.
        let service = StreamableHttpService::new(
            move || Ok(prototype.for_session(limit)),
            self.sessions.clone(),
            self.rmcp_config.clone(),
        );
        let _ = self.service.set(service);
        let _ = self.serving.set(serving);
    }

    fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
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
    let state = Arc::new(State::new(settings, bound, tls.is_some())?);
    let scheme = if tls.is_some() { "https" } else { "http" };
    let host = match bound.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        ip => ip.to_string(),
    };
    let url = format!("{scheme}://{host}:{}{}", bound.port(), settings.path);
    if !bound.ip().is_loopback() && tls.is_none() {
        tracing::warn!(
            %bound,
            "serving plain HTTP on a non-loopback address: bearer tokens cross the network in clear text; \
             set http.tls_cert and http.tls_key or put a TLS reverse proxy in front"
        );
    }
    tracing::info!(
        %url,
        auth = state.tokens.enabled(),
        tls = tls.is_some(),
        "serving MCP over Streamable HTTP"
    );
    announce(&Bound { addr: bound, url });

    let (started_tx, mut started_rx) = tokio::sync::oneshot::channel();
    {
        let state = state.clone();
        tokio::spawn(async move {
            let result = app.await.map(|serving| state.set_ready(serving));
            let _ = started_tx.send(result);
        });
    }
    let mut starting = true;
    let graceful = GracefulShutdown::new();
    let connections = Arc::new(tokio::sync::Semaphore::new(
        settings
            .max_sessions
            .saturating_mul(CONNECTIONS_PER_SESSION)
            + SPARE_CONNECTIONS,
    ));
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => match connections.clone().try_acquire_owned() {
                    Ok(permit) => spawn_connection(
                        stream,
                        peer,
                        tls.clone(),
                        state.clone(),
                        graceful.watcher(),
                        permit,
                    ),
                    // Closing at once is the cheapest answer to a flood.
                    Err(_) => tracing::warn!(%peer, "too many open connections; closed a new one"),
                },
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            result = &mut started_rx, if starting => {
                starting = false;
                match result {
                    Ok(Ok(())) => tracing::info!("ready"),
                    Ok(Err(e)) => return Err(e),
                    Err(_) => anyhow::bail!("the start-up task ended without a result"),
                }
            }
            signal = signals.recv() => {
                tracing::info!(signal, "shutting down: no new connections");
                break;
            }
        }
    }
    drop(listener);
    shut_down(&state, graceful, settings.shutdown_grace).await;
    Ok(())
}

/// Lets calls in flight finish (up to `grace`), then ends every session.
async fn shut_down(state: &State, graceful: GracefulShutdown, grace: Duration) {
    state.draining.store(true, Ordering::SeqCst);
    let inflight = state.inflight.count();
    if inflight > 0 {
        tracing::info!(
            inflight,
            grace_secs = grace.as_secs(),
            "waiting for requests in flight"
        );
    }
    // Polling `closing` tells every connection to finish its current
    // request and close.
    let closing = graceful.shutdown();
    tokio::pin!(closing);
    let mut closed = false;
    let drained = tokio::time::timeout(grace, async {
        tokio::select! {
            _ = state.inflight.drained() => {}
            _ = &mut closing => closed = true,
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            unfinished = state.inflight.count(),
            "the grace period is over; ending the requests still running"
        );
    }
    // Ends the sessions and their open streams (a GET stream never ends on
    // its own).
    state.shutdown.cancel();
    if !closed {
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, closing).await;
    }
    tracing::info!("stopped");
}

fn spawn_connection(
    stream: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    state: Arc<State>,
    watcher: Watcher,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    tokio::spawn(async move {
        let _permit = permit;
        let _ = stream.set_nodelay(true);
        match tls {
            None => {
                // Peeking leaves the bytes for hyper.
                let mut first = [0u8; 1];
                match tokio::time::timeout(FIRST_BYTES_TIMEOUT, stream.peek(&mut first)).await {
                    Ok(Ok(n)) if n > 0 => serve_connection(stream, peer, state, watcher).await,
                    Ok(_) => {}
                    Err(_) => tracing::debug!(%peer, "no request within the timeout; closed"),
                }
            }
            Some(acceptor) => {
                // The handshake and the first bytes share the timeout; the
                // buffered bytes are read again by hyper.
                let first = tokio::time::timeout(FIRST_BYTES_TIMEOUT, async {
                    let mut stream = BufReader::new(acceptor.accept(stream).await?);
                    let got = !stream.fill_buf().await?.is_empty();
                    Ok::<_, std::io::Error>(got.then_some(stream))
                });
                match first.await {
                    Ok(Ok(Some(stream))) => serve_connection(stream, peer, state, watcher).await,
                    Ok(Ok(None)) => {}
                    Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                    Err(_) => tracing::debug!(%peer, "TLS handshake or request timed out"),
                }
            }
        }
    });
}

async fn serve_connection<I>(io: I, peer: SocketAddr, state: Arc<State>, watcher: Watcher)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let state = state.clone();
        async move { Ok::<_, Infallible>(handle(&state, peer, request).await) }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    // Without pings an HTTP/2 client that stops answering (or never speaks
    // after the preface) would keep its connection for ever.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(H2_KEEP_ALIVE_INTERVAL))
        .keep_alive_timeout(H2_KEEP_ALIVE_TIMEOUT);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    if let Err(e) = watcher.watch(connection).await {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// One request, logged with its outcome. The token's name is logged,
/// never the token.
async fn handle(state: &State, peer: SocketAddr, request: Request<Incoming>) -> Response<Body> {
    let started = Instant::now();
    let method = request.method().clone();
    let path: String = request.uri().path().chars().take(200).collect();
    let session_in = header(&request, SESSION_HEADER);
    let (response, token) = route(state, request).await;
    // The client's session header is its own text: bounded in the log.
    let session: Option<String> = session_in
        .or_else(|| {
            response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        })
        .map(|s| s.chars().take(64).collect());
    tracing::info!(
        target: "pve_mcp::http",
        %peer,
        %method,
        path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        session = session.as_deref(),
        token = token.as_ref().map(|t| t.0.as_ref()),
        "http request"
    );
    response
}

fn header<B>(request: &Request<B>, name: &str) -> Option<String> {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

async fn route(state: &State, request: Request<Incoming>) -> (Response<Body>, Option<TokenName>) {
    let path = request.uri().path();
    let probe = matches!(*request.method(), Method::GET | Method::HEAD);
    if path == "/healthz" {
        return match probe {
            true => (text(StatusCode::OK, "ok\n"), None),
            false => (method_not_allowed(), None),
        };
    }
    if path == "/readyz" {
        return match (probe, state.draining(), state.service.get().is_some()) {
            (false, _, _) => (method_not_allowed(), None),
            (true, true, _) => (
                text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n"),
                None,
            ),
            (true, false, false) => (
                text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "starting: compiling the tool component\n",
                ),
                None,
            ),
            (true, false, true) => (text(StatusCode::OK, "ready\n"), None),
        };
    }
    if path != state.path {
        return (
            text(
                StatusCode::NOT_FOUND,
                "Not Found: see /healthz, /readyz and the MCP endpoint\n",
            ),
            None,
        );
    }
    mcp(state, request).await
}

fn method_not_allowed() -> Response<Body> {
    let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
    r.headers_mut().insert(
        http::header::ALLOW,
        http::HeaderValue::from_static("GET, HEAD"),
    );
    r
}

/// The MCP endpoint: checks, then rmcp.
async fn mcp(state: &State, request: Request<Incoming>) -> (Response<Body>, Option<TokenName>) {
    if let Err(reject) = state.guard.check(request.uri(), request.headers()) {
        return (reject.into_response(), None);
    }
    let token = match state.tokens.authenticate(request.headers()) {
        Ok(token) => token,
        Err(reject) => return (reject.into_response(), None),
    };
    let response = serve_mcp(state, request, token.clone()).await;
    (response, token)
}

async fn serve_mcp(
    state: &State,
    mut request: Request<Incoming>,
    token: Option<TokenName>,
) -> Response<Body> {
    if state.draining() {
        return Reject::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: the server is shutting down",
        )
        .retry_after(1)
        .into_response();
    }
    let Some(service) = state.service.get() else {
        return Reject::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: the server is starting (compiling the tool component)",
        )
        .retry_after(1)
        .into_response();
    };
    let owner = token.as_ref().map(|t| t.0.clone());
    let session = header(&request, SESSION_HEADER);
    if let Some(id) = &session {
        let opened_by = state
            .owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id.as_str())
            .cloned();
        match opened_by {
            // A session id this server never issued. rmcp serves a request
            // carrying 2026-07-28 `_meta` statelessly whatever its session
            // header says, and the header names the caller's session for
            // rate limits, the audit log and approvals: a made-up one must
            // not get that far.
            None => {
                tracing::debug!(
                    token = owner.as_deref(),
                    "a request named a session this server did not issue"
                );
                return text(StatusCode::NOT_FOUND, "Not Found: Session not found");
            }
            // Another token's session: as far as this caller knows, it
            // does not exist.
            Some(opener) if opener != owner => {
                tracing::warn!(
                    token = owner.as_deref(),
                    "a request used a session opened with another token"
                );
                return text(StatusCode::NOT_FOUND, "Not Found: Session not found");
            }
            Some(_) => {}
        }
    }
    if let Some(token) = token {
        request.extensions_mut().insert(token);
    }
    let is_post = request.method() == Method::POST;
    let is_delete = request.method() == Method::DELETE;
    let inflight = is_post.then(|| state.inflight.enter());
    let response = if is_post && session.is_none() {
        post_without_session(state, service, request, owner).await
    } else {
        service.handle(request).await
    };
    let mut response = response;
    if is_delete && response.status().is_success() {
        // rmcp answers 202; the official SDKs expect 200 (or 204) and log
        // anything else as a failed termination.
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        if let Some(id) = &session {
            state
                .owners
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(id.as_str());
        }
    }
    match inflight {
        Some(guard) => response.map(|body| hold_until_sent(body, guard)),
        None => response,
    }
}

/// A POST without a session is an `initialize` (which opens a session, if
/// the limit allows) or a stateless request. The body is read here, within
/// the size limit, to tell which.
async fn post_without_session(
    state: &State,
    service: &Service,
    request: Request<Incoming>,
    owner: Option<Arc<str>>,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let bytes: Bytes = match Limited::new(body, state.max_body_bytes).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Reject::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "Payload Too Large: the request body is over {} KiB (http.max_body_kib)",
                    state.max_body_bytes >> 10
                ),
            )
            .into_response();
        }
        Err(_) => {
            return Reject::new(
                StatusCode::BAD_REQUEST,
                "Bad Request: the request body could not be read",
            )
            .into_response();
        }
    };
    let is_initialize = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .is_some_and(|v| v.get("method").and_then(|m| m.as_str()) == Some("initialize"));
    let request = Request::from_parts(parts, Full::new(bytes));
    if !is_initialize {
        return service.handle(request).await;
    }
    let _one_at_a_time = state.init_lock.lock().await;
    let live: HashSet<Arc<str>> = state
        .sessions
        .sessions
        .read()
        .await
        .keys()
        .cloned()
        .collect();
    if live.len() >= state.max_sessions {
        tracing::warn!(
            sessions = live.len(),
            "refused a new session: the limit is reached"
        );
        return Reject::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "Service Unavailable: {} sessions are open, the most this server allows \
                 (http.max_sessions); retry later",
                live.len()
            ),
        )
        .retry_after(5)
        .into_response();
    }
    let response = service.handle(request).await;
    let new_session = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(Arc::<str>::from);
    if let Some(id) = new_session {
        // A panic elsewhere (a poisoned lock) must not skip the record:
        // each change to the map is one call, so it is never half-done.
        let mut owners = state.owners.lock().unwrap_or_else(PoisonError::into_inner);
        // Forget sessions that ended (DELETE, idle expiry) on the way.
        owners.retain(|id, _| live.contains(id));
        owners.insert(id, owner);
    }
    response
}

/// SIGTERM and SIGINT.
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
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

    async fn recv(&mut self) -> &'static str {
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
