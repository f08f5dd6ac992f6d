//! The MCP route: rmcp's `StreamableHttpService` behind what rmcp does not
//! check itself: that a session is the caller's own, the session limits
//! (in all and per token),
//! 503 while starting or draining, and the count of calls in flight that
//! the shutdown waits for. The guard, the token and the body limit are
//! checked before ([`super::layers`]).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::limits::{InFlight, hold_until_sent};
use super::request_ids::RequestIds;
use super::response::{Body, Reject, text};
use super::sessions::{Sessions, session_id};
use crate::caller::TokenName;
use crate::config::http::HttpSettings;
use crate::server::call_slots::StatelessSlots;
use crate::server::mcp::McpServer;
use crate::server::serving::Serving;

/// How long a client waits before it reconnects a broken SSE stream (the
/// `retry:` field of each stream's priming event).
const SSE_RETRY: Duration = Duration::from_secs(1);

/// How long the messages of a finished request stay for a client that lost
/// its stream and resumes it with `Last-Event-ID`: a few retry intervals.
/// rmcp keeps every finished request's stream for 60 s by default: at
/// 2,000 calls a second, 120,000 answers held for a resume nobody makes.
const RESUME_WINDOW: Duration = Duration::from_secs(5);

type Service = StreamableHttpService<McpServer, Sessions>;

/// The MCP endpoint's state, shared by every connection.
pub struct Mcp {
    max_sessions: usize,
    max_sessions_per_token: usize,
    max_calls_per_session: usize,
    sessions: Arc<Sessions>,
    rmcp_config: StreamableHttpServerConfig,
    /// Set once the component is compiled: until then requests get 503.
    service: OnceLock<Service>,
    /// What the service needs kept alive: the app.
    kept: OnceLock<Serving>,
    /// Serialises session creation, so the session limit is exact.
    init_lock: tokio::sync::Mutex<()>,
    /// Which token opened each session: another token cannot use it.
    owners: Mutex<HashMap<Arc<str>, Option<Arc<str>>>>,
    inflight: Arc<InFlight>,
    /// The JSON-RPC ids each session has in flight.
    request_ids: Arc<RequestIds>,
    draining: AtomicBool,
    shutdown: CancellationToken,
}

impl Mcp {
    /// The endpoint for `settings`, not ready until [`Mcp::set_ready`].
    pub fn new(settings: &HttpSettings) -> Mcp {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(settings.session_idle);
        local.session_config.sse_retry = Some(SSE_RETRY);
        local.session_config.completed_cache_ttl = RESUME_WINDOW;
        let sessions = Sessions::new(local, settings.session_id_prefix.as_deref());
        let shutdown = CancellationToken::new();
        // pve-mcp checks Host and Origin itself (with messages naming the
        // setting), so rmcp's copies of those checks are off. The body limit
        // layer has already read the body within the same limit.
        let rmcp_config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(settings.max_body_bytes)
            .with_sse_retry(Some(SSE_RETRY))
            .with_cancellation_token(shutdown.clone());
        Mcp {
            max_sessions: settings.max_sessions,
            max_sessions_per_token: settings.max_sessions_per_token,
            max_calls_per_session: settings.max_calls_per_session,
            sessions: Arc::new(sessions),
            rmcp_config,
            service: OnceLock::new(),
            kept: OnceLock::new(),
            init_lock: tokio::sync::Mutex::new(()),
            owners: Mutex::new(HashMap::new()),
            inflight: Arc::new(InFlight::default()),
            request_ids: Arc::default(),
            draining: AtomicBool::new(false),
            shutdown,
        }
    }

    /// Starts serving MCP with `serving`'s server.
    pub fn set_ready(&self, serving: Serving) {
        let prototype = serving.server().clone();
        let limit = self.max_calls_per_session;
        // rmcp asks for a server per session (and per stateless request);
        // each session gets its own call slots, and the stateless requests
        // of each token share theirs.
        let stateless = Arc::new(StatelessSlots::new(limit));
        let service = StreamableHttpService::new(
            move || Ok(prototype.for_session(limit, stateless.clone())),
            self.sessions.clone(),
            self.rmcp_config.clone(),
        );
        let _ = self.service.set(service);
        let _ = self.kept.set(serving);
    }

    /// The sessions open now (deleted and expired ones are gone from
    /// rmcp's map).
    pub async fn open_sessions(&self) -> usize {
        self.sessions.local.sessions.read().await.len()
    }

    /// Whether MCP requests are served (the component is compiled).
    pub fn ready(&self) -> bool {
        self.service.get().is_some()
    }

    /// Whether the server is shutting down.
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Refuses new MCP requests from now on.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Requests in flight (each until its response is sent).
    pub fn inflight(&self) -> &InFlight {
        &self.inflight
    }

    /// Ends every session and its open streams (a GET stream never ends on
    /// its own).
    pub fn end_sessions(&self) {
        self.shutdown.cancel();
    }

    /// One MCP request that passed the guard, the token and the body limit.
    pub async fn serve(&self, request: Request<Bytes>) -> Response<Body> {
        if self.draining() {
            return Reject::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: the server is shutting down",
            )
            .retry_after(1)
            .into_response();
        }
        let Some(service) = self.service.get() else {
            return Reject::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: the server is starting (compiling the tool component)",
            )
            .retry_after(1)
            .into_response();
        };
        let owner = request.extensions().get::<TokenName>().map(|t| t.0.clone());
        let session = session_id(request.headers());
        if let Some(id) = &session {
            let opened_by = self
                .owners
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(id.as_str())
                .cloned();
            match opened_by {
                // Another replica's session: the load balancer sends a
                // session's requests to the replica that opened it, and
                // here only when that one is down. Its sessions died with
                // it: say so, so a person reading the error knows why.
                None if !self.sessions.is_ours(id) => {
                    tracing::debug!(
                        token = owner.as_deref(),
                        "a request named a session another replica issued"
                    );
                    return Reject::new(
                        StatusCode::NOT_FOUND,
                        format!(
                            "Not Found: Session not found: it was opened on another replica (this one issues \
                             ids starting {:?}), which has stopped or restarted, and its sessions ended with it; \
                             start a new session (initialize)",
                            self.sessions.prefix().unwrap_or_default()
                        ),
                    )
                    .into_response();
                }
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
        let is_post = request.method() == Method::POST;
        let is_delete = request.method() == Method::DELETE;
        let ids = match (&session, is_post) {
            (Some(id), true) => match self.request_ids.take(id, request.body()) {
                Ok(guard) => Some(guard),
                Err(reused) => {
                    tracing::debug!(
                        token = owner.as_deref(),
                        "a request reused the id of a request in flight in its session"
                    );
                    return Reject::new(
                        StatusCode::BAD_REQUEST,
                        format!(
                            "Bad Request: the JSON-RPC id {reused} is already used by a request still in flight \
                             in this session, and MCP forbids reusing an id within a session; send it with a new id"
                        ),
                    )
                    .into_response();
                }
            },
            _ => None,
        };
        let inflight = is_post.then(|| self.inflight.enter());
        let mut response = if is_post && session.is_none() {
            self.post_without_session(service, request, owner).await
        } else {
            service.handle(request.map(Full::new)).await
        };
        if is_delete && response.status().is_success() {
            // rmcp answers 202; the official SDKs expect 200 (or 204) and log
            // anything else as a failed termination.
            if response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::OK;
            }
            if let Some(id) = &session {
                self.owners
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(id.as_str());
            }
        }
        match inflight {
            Some(guard) => response.map(|body| hold_until_sent(body, (guard, ids))),
            None => response,
        }
    }

    /// A POST without a session is an `initialize` (which opens a session,
    /// if the limit allows) or a stateless request.
    async fn post_without_session(
        &self,
        service: &Service,
        request: Request<Bytes>,
        owner: Option<Arc<str>>,
    ) -> Response<Body> {
        let is_initialize = serde_json::from_slice::<serde_json::Value>(request.body())
            .ok()
            .is_some_and(|v| v.get("method").and_then(|m| m.as_str()) == Some("initialize"));
        let request = request.map(Full::new);
        if !is_initialize {
            return service.handle(request).await;
        }
        let _one_at_a_time = self.init_lock.lock().await;
        let live: HashSet<Arc<str>> = self
            .sessions
            .local
            .sessions
            .read()
            .await
            .keys()
            .cloned()
            .collect();
        if live.len() >= self.max_sessions {
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
        if let Some(token) = &owner
            && let Some(refusal) = self.over_token_quota(token, &live)
        {
            return refusal;
        }
        let response = service.handle(request).await;
        if let Some(id) = session_id(response.headers()) {
            // A panic elsewhere (a poisoned lock) must not skip the record:
            // each change to the map is one call, so it is never half-done.
            let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
            // Forget sessions that ended (DELETE, idle expiry) on the way.
            owners.retain(|id, _| live.contains(id));
            owners.insert(Arc::from(id), owner);
        }
        response
    }

    /// The refusal for a new session when `token` already holds
    /// `max_sessions_per_token` of the `live` ones, or `None` when it may
    /// open another. Sessions that were deleted or expired are not live,
    /// so ending one frees its place.
    fn over_token_quota(
        &self,
        token: &Arc<str>,
        live: &HashSet<Arc<str>>,
    ) -> Option<Response<Body>> {
        let held = self
            .owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(id, owner)| owner.as_ref() == Some(token) && live.contains(*id))
            .count();
        if held < self.max_sessions_per_token {
            return None;
        }
        tracing::warn!(
            token = %token,
            sessions = held,
            "refused a new session: the token holds as many as one token may"
        );
        Some(
            Reject::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "Too Many Requests: the token {token:?} already holds {held} open sessions, the most one \
                     token may (http.max_sessions_per_token, env MCP_MAX_SESSIONS_PER_TOKEN). End one \
                     (DELETE with its Mcp-Session-Id) or let it expire, give each agent its own token, or \
                     raise the limit"
                ),
            )
            .retry_after(5)
            .into_response(),
        )
    }
}
