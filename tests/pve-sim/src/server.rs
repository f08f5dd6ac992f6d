//! HTTPS server and the request pipeline, in PVE's order:
//! method/transfer checks, URI split, authentication, body, routing, token
//! and permission checks, proxying to the target node, parameter
//! verification, handler. Injected faults ([`crate::faults`]) act on the
//! connections it accepts and on the answers it sends.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use crate::auth::{self, Credentials, TicketKey};
use crate::errors::{ApiError, Reply};
use crate::faults::{self, Answer, ConnControl, ConnIo, Payload, ResetSwitch};
use crate::handlers::{self, Ctx};
use crate::log::RequestLog;
use crate::params::{self, Params, RawParams};
use crate::perms::{self, Identity, Perm};
use crate::router::{RouteMatch, Router};
use crate::schema::{Lookup, Schema};
use crate::state::Cluster;
use crate::util::{lock, pct_decode, read};
use crate::{AuthSeen, Fault, FaultKind, LoggedRequest, SimConfig, seed, tls};

/// PVE's POST size limit.
const MAX_BODY: usize = 512 * 1024;

/// State shared by the accept loop, connections and the public handle.
pub(crate) struct Shared {
    pub cfg: SimConfig,
    pub cluster: RwLock<Cluster>,
    pub log: RequestLog,
    pub violations: Mutex<Vec<String>>,
    pub latency: Mutex<Duration>,
    pub faults: Mutex<Vec<Fault>>,
    pub schema: Option<Schema>,
    pub router: Router,
    pub secret: [u8; 32],
    pub fingerprint: String,
    /// Successful `POST /access/ticket` calls.
    pub logins: std::sync::atomic::AtomicUsize,
    /// Tells the accept loop about connection faults.
    pub conn_control: watch::Sender<ConnControl>,
    /// What the certificate faults present.
    pub bad_certs: tls::BadCertificates,
}

pub(crate) struct Started {
    pub shared: Arc<Shared>,
    pub addr: SocketAddr,
    pub ca_pem: String,
    pub fingerprint: String,
    pub shutdown_tx: watch::Sender<bool>,
    pub task: JoinHandle<()>,
}

pub(crate) async fn start(cfg: SimConfig, port: u16) -> anyhow::Result<Started> {
    let schema = match cfg.schema_path.clone() {
        Some(p) => Some(tokio::task::spawn_blocking(move || Schema::load(&p)).await??),
        None => None,
    };
    let material = tls::generate()?;
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let mut cluster = seed::build_flavor(&cfg.scenario, &cfg.cluster, cfg.shapes);
    cluster.pve8_nodes.extend(cfg.pve8_nodes.iter().cloned());
    if let Some(v) = &cfg.pve_version {
        cluster.release = crate::release::Release::new(v);
    }
    let shared = Arc::new(Shared {
        cluster: RwLock::new(cluster),
        cfg,
        log: RequestLog::default(),
        violations: Mutex::new(Vec::new()),
        latency: Mutex::new(Duration::ZERO),
        faults: Mutex::new(Vec::new()),
        schema,
        router: Router::new(handlers::routes()),
        secret: material.secret,
        fingerprint: material.fingerprint.clone(),
        logins: std::sync::atomic::AtomicUsize::new(0),
        conn_control: watch::Sender::new(ConnControl::default()),
        bad_certs: material.bad,
    });
    let (shutdown_tx, rx) = watch::channel(false);
    let acceptor = TlsAcceptor::from(material.config);
    // Subscribed here, not in the task: a fault added before the task first
    // runs must still reach it.
    let control = shared.conn_control.subscribe();
    let task = tokio::spawn(accept_loop(listener, acceptor, shared.clone(), rx, control));
    tracing::debug!(%addr, "pve-sim listening");
    Ok(Started {
        shared,
        addr,
        ca_pem: material.ca_pem,
        fingerprint: material.fingerprint,
        shutdown_tx,
        task,
    })
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    mut control: watch::Receiver<ConnControl>,
) {
    let addr = listener.local_addr().ok();
    let mut listener = Some(listener);
    let mut generation = 0;
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            // Also fires when the sender is gone (last handle dropped).
            _ = shutdown.changed() => break,
            res = accept(listener.as_ref()) => match res {
                Ok((tcp, _)) => {
                    let _ = tcp.set_nodelay(true);
                    conns.spawn(serve_conn(tcp, acceptor.clone(), shared.clone()));
                }
                Err(e) => {
                    // E.g. EMFILE: back off instead of spinning.
                    tracing::debug!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Ok(()) = control.changed() => {
                let now = *control.borrow_and_update();
                if now.generation != generation {
                    // A new connection fault: the next request must meet
                    // it, not ride a connection made before.
                    generation = now.generation;
                    conns.abort_all();
                }
                if now.refuse {
                    listener = None;
                } else if listener.is_none() && let Some(addr) = addr {
                    listener = listen_again(addr).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

/// The next connection, or never while not listening.
async fn accept(listener: Option<&TcpListener>) -> std::io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Binds the port again after a `RefuseConnections` fault; tokio sets
/// `SO_REUSEADDR`, so only another process taking the port in between
/// stops it.
async fn listen_again(addr: SocketAddr) -> Option<TcpListener> {
    for _ in 0..100 {
        match TcpListener::bind(addr).await {
            Ok(l) => return Some(l),
            Err(e) => {
                tracing::debug!("listening again on {addr}: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    tracing::warn!("could not listen on {addr} again after refusing connections");
    None
}

async fn serve_conn(tcp: TcpStream, acceptor: TlsAcceptor, shared: Arc<Shared>) {
    let acceptor = match faults::take_for_handshake(&shared) {
        Some(FaultKind::ExpiredCertificate) => TlsAcceptor::from(shared.bad_certs.expired.clone()),
        Some(FaultKind::UntrustedCertificate) => {
            TlsAcceptor::from(shared.bad_certs.untrusted.clone())
        }
        Some(FaultKind::WrongNameCertificate) => {
            TlsAcceptor::from(shared.bad_certs.wrong_name.clone())
        }
        _ => acceptor,
    };
    let reset = ResetSwitch::default();
    let io = ConnIo::new(tcp, reset.clone());
    let tls = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(io)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!("TLS handshake failed: {e}");
            return;
        }
        Err(_) => return,
    };
    let svc = service_fn(move |req| {
        let shared = shared.clone();
        let reset = reset.clone();
        async move { Ok::<_, Infallible>(handle(shared, req, reset).await) }
    });
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30))
        // PVE allows 64 header lines of 8 KiB in total and silently drops
        // anything bigger; answering 431 is kinder and still a rejection.
        .max_headers(64)
        .max_header_size(16 * 1024);
    if let Err(e) = builder.serve_connection(TokioIo::new(tls), svc).await {
        tracing::debug!("connection ended: {e}");
    }
}

/// Response body that records in the request log when all of it has been
/// handed to the connection, so a vanished client (or a fault that cuts the
/// body short) leaves `completed == false`.
pub(crate) struct TrackedBody {
    payload: Payload,
    on_done: Option<(Arc<Shared>, u64)>,
}

impl Body for TrackedBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let next = self.payload.poll_next(cx);
        if matches!(next, Poll::Ready(Some(Ok(_)) | None))
            && self.payload.is_end_stream()
            && let Some((shared, id)) = self.on_done.take()
        {
            shared.log.set_completed(id);
        }
        next.map(|frame| frame.map(|r| r.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.payload.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.payload.size_hint()
    }
}

async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    reset: ResetSwitch,
) -> Response<TrackedBody> {
    let entry = LoggedRequest {
        method: req.method().as_str().to_string(),
        path: req.uri().path().to_string(),
        query: req.uri().query().unwrap_or("").to_string(),
        auth: AuthSeen::None,
        headers: req
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        status: 0,
        completed: false,
        params: BTreeMap::new(),
    };
    let id = shared.log.begin(entry);
    let mut fault = None;
    let (status, reason, body, is_json) = match process(&shared, id, req, &mut fault).await {
        Ok(reply) => (200, None, Some(reply.into_body()), true),
        Err(e) => {
            let body = e.body_json(shared.cfg.message_in_body);
            let is_json = body.is_some();
            (e.status, Some(e.reason()), body, is_json)
        }
    };
    let answer = match fault {
        Some(kind) => faults::shape(kind, status, body, is_json, &reset),
        None => Answer {
            status,
            body: Payload::whole(body.unwrap_or_default()),
            content_type: is_json.then_some("application/json;charset=UTF-8"),
        },
    };
    let status = answer.status;
    shared.log.set_status(id, status);
    let has_body = !answer.body.is_end_stream();
    if !has_body {
        shared.log.set_completed(id);
    }
    let mut resp = Response::new(TrackedBody {
        payload: answer.body,
        on_done: has_body.then(|| (shared.clone(), id)),
    });
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(reason) = reason.filter(|r| !r.is_empty())
        && let Ok(rp) = hyper::ext::ReasonPhrase::try_from(reason.into_bytes())
    {
        resp.extensions_mut().insert(rp);
    }
    let h = resp.headers_mut();
    let date = httpdate::fmt_http_date(SystemTime::now());
    if let Ok(v) = HeaderValue::from_str(&date) {
        h.insert(header::EXPIRES, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=0"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    h.insert(
        header::SERVER,
        HeaderValue::from_static("pve-api-daemon/3.0"),
    );
    if let Some(content_type) = answer.content_type {
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    if status >= 400 {
        // pveproxy drops keep-alive after any error response.
        h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// `^/api2/+([a-z][a-z0-9]+)(/.*)?$` on the decoded path.
fn split_abs_uri(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix("/api2")?;
    let rest = rest.trim_start_matches('/');
    if rest.len() == path.len() - "/api2".len() {
        return None;
    }
    let end = rest.find('/').unwrap_or(rest.len());
    let (format, rel) = rest.split_at(end);
    let f = format.as_bytes();
    let format_ok = f.len() >= 2
        && f[0].is_ascii_lowercase()
        && f[1..]
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !format_ok || rel.contains('\n') {
        return None;
    }
    let rel = if rel.is_empty() { "/" } else { rel };
    Some((format.to_string(), rel.to_string()))
}

/// The error a [`FaultKind::Status`] fault answers with, if it has a status.
fn status_fault(f: Fault) -> Result<(), ApiError> {
    let s = f.status;
    match s {
        0 => Ok(()),
        401 | 595.. => Err(ApiError::bare(s, f.reason)),
        _ => Err(ApiError::new(
            s,
            format!("{}\n", f.reason.trim_end_matches('\n')),
        )),
    }
}

fn header_str(req: &Request<Incoming>, name: header::HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Answers a request; a request fault that breaks the answer rather than
/// replacing it is left in `fault` for [`handle`] to apply.
async fn process(
    shared: &Arc<Shared>,
    id: u64,
    req: Request<Incoming>,
    fault: &mut Option<FaultKind>,
) -> Result<Reply, ApiError> {
    let latency = *lock(&shared.latency);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let method = req.method().as_str().to_string();
    if !matches!(method.as_str(), "GET" | "POST" | "PUT" | "DELETE") {
        return Err(ApiError::bare(
            501,
            format!("method '{method}' not available"),
        ));
    }
    if let Some(te) = header_str(&req, header::TRANSFER_ENCODING) {
        return Err(if te.eq_ignore_ascii_case("chunked") {
            ApiError::bare(501, "chunked transfer encoding not supported")
        } else {
            ApiError::bare(501, format!("Unknown transfer encoding '{te}'"))
        });
    }
    let path = pct_decode(req.uri().path());
    if !path.starts_with("/api2") {
        return Err(ApiError::bare(501, format!("no such file '{path}'\n")));
    }
    let Some((format, rel)) = split_abs_uri(&path) else {
        return Err(ApiError::bare(501, "no such uri"));
    };

    let auth = {
        let creds = Credentials {
            method: &method,
            rel_path: &rel,
            cookie: header_str(&req, header::COOKIE),
            authorization: header_str(&req, header::AUTHORIZATION),
            csrf: req
                .headers()
                .get("CSRFPreventionToken")
                .and_then(|v| v.to_str().ok()),
        };
        let key = TicketKey {
            secret: &shared.secret,
            lifetime: shared.cfg.ticket_lifetime,
        };
        auth::authenticate(&creds, &read(&shared.cluster), key)
    };
    shared.log.set_auth(id, auth.seen.clone());

    if let Some(f) = faults::take_for_request(shared, &rel, &auth.seen) {
        if let Some(d) = f.delay {
            tokio::time::sleep(d).await;
        }
        match f.kind {
            FaultKind::Status => status_fault(f)?,
            FaultKind::ExpireTickets => return Err(ApiError::unauthorized(auth::AUTH_FAILED)),
            kind => *fault = Some(kind),
        }
    }

    let ident = auth.result?;
    if let Some(i) = &ident {
        tracing::debug!(user = %i.userid, token = ?i.tokenid, "{method} {rel}");
    }

    let raw = read_params(req, &method).await?;
    shared.log.set_params(id, &raw);
    if format != "json" {
        return Err(ApiError::bare(
            501,
            format!("no formatter for uri {rel}, {format}"),
        ));
    }
    let segments = content_fragment(
        rel.split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    );

    let schema_errors = validate_with_schema(shared, &method, &rel, &segments, &raw);

    let RouteMatch::Found(route, path_params) = shared.router.find(&method, &segments) else {
        return Err(ApiError::new(
            501,
            format!("Method '{method} {rel}' not implemented"),
        ));
    };
    params::check_path_conflicts(&raw, &path_params)?;
    if auth.api_token && !route.allowtoken {
        return Err(ApiError::new(
            403,
            format!("URI '{rel}' not available with API token, need proper ticket.\n"),
        ));
    }
    let p = Params::new(&raw, &path_params);
    // Every node on the way checks with its own release's rules: the one
    // that received the call, then the one it is proxied to.
    let (local, local_pve8) = {
        let c = read(&shared.cluster);
        (c.local_node.clone(), c.is_pve8(&c.local_node))
    };
    check_permission(route.perm_on(local_pve8), ident.as_ref(), &p)?;

    let (node, node_pve8) = {
        let c = read(&shared.cluster);
        let node = match route.proxyto {
            Some(param) => resolve_node(&c, p.path(param))?,
            None => c.local_node.clone(),
        };
        let pve8 = c.is_pve8(&node);
        (node, pve8)
    };
    if node != local {
        check_permission(route.perm_on(node_pve8), ident.as_ref(), &p)?;
    }

    let mut all = raw.clone();
    for (k, v) in &path_params {
        all.insert(k.clone(), vec![v.clone()]);
    }
    let errors = match (route.pve8_spec().filter(|_| node_pve8), schema_errors) {
        (Some(spec), _) => spec.validate(&all),
        (None, Some(e)) => e,
        (None, None) => route.spec.validate(&all),
    };
    if !errors.is_empty() {
        return Err(ApiError::params(errors));
    }

    let ctx = Ctx {
        shared,
        ident: ident.as_ref(),
        params: &p,
        node: &node,
    };
    match std::panic::catch_unwind(AssertUnwindSafe(|| (route.handler)(&ctx))) {
        Ok(result) => result,
        Err(_) => Err(ApiError::new(500, "internal simulator error\n")),
    }
}

/// pve-storage registers `{storage}/content` with an empty
/// `fragmentDelimiter`: everything after `content/` is one `{volume}`,
/// slashes included (volids such as `local:backup/vzdump-...`).
fn content_fragment(mut segments: Vec<String>) -> Vec<String> {
    let is_content = segments.len() > 6
        && segments[0] == "nodes"
        && segments[2] == "storage"
        && segments[4] == "content";
    if is_content {
        let volume = segments[5..].join("/");
        segments.truncate(5);
        segments.push(volume);
    }
    segments
}

/// Reads the body the way PVE does: none allowed for GET/DELETE, at most
/// 512 KiB, form-urlencoded (also when untyped) or JSON.
async fn read_params(req: Request<Incoming>, method: &str) -> Result<RawParams, ApiError> {
    let query = params::parse_urlencoded(req.uri().query().unwrap_or(""));
    let declared = header_str(&req, header::CONTENT_LENGTH)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    if declared == 0 {
        return Ok(params::merge(RawParams::new(), query));
    }
    if method != "POST" && method != "PUT" {
        return Err(ApiError::bare(
            501,
            format!("Unexpected content for method '{method}'"),
        ));
    }
    if declared > MAX_BODY as u64 {
        return Err(ApiError::bare(501, "for data too large"));
    }
    let ctype = header_str(&req, header::CONTENT_TYPE).map(|c| {
        c.split([';', ','])
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    });
    let ctype_raw = header_str(&req, header::CONTENT_TYPE)
        .unwrap_or("")
        .to_string();
    let body = Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|_| ApiError::bare(501, "for data too large"))?
        .to_bytes();
    let body_params = match ctype.as_deref() {
        None | Some("") | Some("application/x-www-form-urlencoded") => {
            params::parse_urlencoded(&String::from_utf8_lossy(&body))
        }
        Some("application/json") => params::parse_json_body(&body)?,
        Some(_) => {
            return Err(ApiError::bare(
                506,
                format!("upload 'Content-Type '{ctype_raw}' not implemented"),
            ));
        }
    };
    Ok(params::merge(body_params, query))
}

/// With a schema loaded: records what the real API would reject and returns
/// the parameter errors to answer with (`None` without a schema).
fn validate_with_schema(
    shared: &Shared,
    method: &str,
    rel: &str,
    segments: &[String],
    raw: &RawParams,
) -> Option<BTreeMap<String, String>> {
    let schema = shared.schema.as_ref()?;
    let describe = |detail: String| format!("{method} {rel}: {detail}");
    let violation = match schema.lookup(method, segments) {
        Lookup::NoPath => Some(describe("no such path in the API schema".into())),
        Lookup::NoMethod => Some(describe(format!(
            "method {method} not defined for this path"
        ))),
        Lookup::Found(ms, caps) => {
            let mut all = raw.clone();
            let conflict = caps
                .iter()
                .find(|(k, v)| all.get(k).is_some_and(|x| x.join("\0") != *v));
            if let Some((k, _)) = conflict {
                lock(&shared.violations).push(describe(format!(
                    "{k}: duplicate parameter (already defined in URI) with conflicting values!"
                )));
            }
            for (k, v) in caps {
                all.insert(k, vec![v]);
            }
            let errors = ms.validate(&all);
            if !errors.is_empty() {
                let detail = errors
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", v.trim_end()))
                    .collect::<Vec<_>>()
                    .join("; ");
                lock(&shared.violations).push(describe(detail));
            }
            return Some(errors);
        }
    };
    if let Some(v) = violation {
        lock(&shared.violations).push(v);
    }
    Some(BTreeMap::new())
}

fn check_permission(perm: Perm, ident: Option<&Identity>, p: &Params) -> Result<(), ApiError> {
    if matches!(perm, Perm::World) {
        return Ok(());
    }
    // Routes that need a user are never reached unauthenticated, since the
    // auth step only waives credentials for world-accessible calls.
    let Some(ident) = ident else {
        return Err(ApiError::unauthorized("No ticket"));
    };
    perms::check(perm, ident, |name| p.get(name).unwrap_or("").to_string())
        .map_err(|(path, privs)| ApiError::perm(&path, &privs))
}

/// Where PVE would execute a `proxyto => 'node'` call.
fn resolve_node(c: &Cluster, node: &str) -> Result<String, ApiError> {
    if node == "localhost" || node == c.local_node {
        return Ok(c.local_node.clone());
    }
    match c.node(node) {
        Some(n) if n.online => Ok(n.name.clone()),
        // The proxy's connection attempt fails; AnyEvent::HTTP reports it
        // as a 59x pseudo-status with no body.
        Some(_) => Err(ApiError::bare(595, "Connection refused")),
        None => Err(ApiError::new(
            500,
            format!(
                "hostname lookup '{node}' failed - failed to get address info for: {node}: \
                 Name or service not known\n"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_volumes_take_the_rest_of_the_path() {
        let segs = |p: &str| p.split('/').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            content_fragment(segs(
                "nodes/pve1/storage/local/content/local:backup/x.vma.zst"
            )),
            segs("nodes/pve1/storage/local/content")
                .into_iter()
                .chain(["local:backup/x.vma.zst".to_string()])
                .collect::<Vec<_>>()
        );
        let short = segs("nodes/pve1/storage/local/content/local:iso");
        assert_eq!(content_fragment(short.clone()), short);
    }

    #[test]
    fn split_abs_uri_like_pve() {
        assert_eq!(
            split_abs_uri("/api2/json/version"),
            Some(("json".into(), "/version".into()))
        );
        assert_eq!(
            split_abs_uri("/api2//json"),
            Some(("json".into(), "/".into()))
        );
        assert_eq!(split_abs_uri("/api2"), None);
        assert_eq!(split_abs_uri("/api2json/x"), None);
        assert_eq!(split_abs_uri("/api2/JSON/x"), None);
        assert_eq!(
            split_abs_uri("/api2/extjs/nodes"),
            Some(("extjs".into(), "/nodes".into()))
        );
    }
}
