//! The approvals admin endpoint: a small HTTP API on a loopback address or
//! a unix socket through which a person lists, approves and denies
//! approvals (`pve-mcp approvals` is its client). It runs on the same
//! connection code ([`super::connections`]) and layers ([`super::layers`]) as
//! MCP: the admin token is checked as MCP's bearer tokens are, the body is
//! limited and each request logged. There is no `Host`/`Origin` guard: the
//! token already keeps a web page out, and a unix socket has no host.
//!
//! ```text
//! GET  /v1/approvals                 200 {"now_ms", "approvals": [..]}
//! GET  /v1/approvals/{id}            200 {"now_ms", "approval": {..}}
//! POST /v1/approvals/{id}/approve    200 {"now_ms", "approval": {..}}
//! POST /v1/approvals/{id}/deny       200 {"now_ms", "approval": {..}}
//! errors: 401 token, 404 unknown id or path, 409 already decided,
//!         410 expired, 503 store unavailable; body {"error": "..."}
//! ```
//!
//! Every approval carries its complete arguments and plan (secrets
//! redacted; see [`crate::approval::redact`]).

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use tower::ServiceBuilder;

use super::auth::Tokens;
use super::connections::{Listener, Server};
use super::layers;
use super::limits::ConnectionLimits;
use super::response::{Body, HttpService, Reject, json};
use crate::approval::client::PREFIX;
use crate::approval::store::{Approval, ApprovalStore, DecideError, Verdict, now_ms};
use crate::config::approvals::AdminAddress;
use crate::config::http::NamedToken;
use crate::error::ConfigError;
use crate::secret::Secret;
use crate::server::serving::Serving;

/// Admin requests carry no body; anything this large is not one of them.
const MAX_BODY_BYTES: usize = 64 << 10;
/// Connections open at once: a person and a few scripts.
const MAX_CONNECTIONS: usize = 64;
/// How long a connection may take to send a request header.
const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A running admin endpoint; dropping it stops it (and removes its socket).
pub struct AdminServer {
    address: AdminAddress,
    task: tokio::task::JoinHandle<()>,
    socket: Option<PathBuf>,
}

impl AdminServer {
    /// Where it listens (with the port the system chose for port 0).
    pub fn address(&self) -> &AdminAddress {
        &self.address
    }
}

impl Drop for AdminServer {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(path) = &self.socket {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Starts the admin endpoint `serving` asks for, if it asks for one.
pub async fn start_for(serving: &Serving) -> Result<Option<AdminServer>, ConfigError> {
    match serving.admin_endpoint() {
        Some(endpoint) => start(&endpoint.address, &endpoint.token, endpoint.store.clone())
            .await
            .map(Some),
        None => Ok(None),
    }
}

/// Binds the endpoint and serves it in the background; an address that
/// cannot be bound is a [`ConfigError`] naming its setting.
pub async fn start(
    address: &AdminAddress,
    token: &Secret,
    store: Arc<dyn ApprovalStore>,
) -> Result<AdminServer, ConfigError> {
    let routes = routes(token, store);
    match address {
        AdminAddress::Tcp(addr) => {
            // Settings refuse other addresses already; this is the last line.
            if !addr.ip().is_loopback() {
                return Err(bind_error(address, "it is not a loopback address".into()));
            }
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| bind_error(address, e.to_string()))?;
            let bound = listener
                .local_addr()
                .map_err(|e| bind_error(address, e.to_string()))?;
            tracing::info!(address = %bound, "approvals admin endpoint listening");
            Ok(AdminServer {
                address: AdminAddress::Tcp(bound),
                task: tokio::spawn(serve(listener, routes)),
                socket: None,
            })
        }
        AdminAddress::Unix(path) => {
            let listener = bind_unix(path).map_err(|problem| bind_error(address, problem))?;
            tracing::info!(socket = %path.display(), "approvals admin endpoint listening");
            Ok(AdminServer {
                address: address.clone(),
                task: tokio::spawn(serve(listener, routes)),
                socket: Some(path.clone()),
            })
        }
    }
}

/// Serves until the task is aborted (when the [`AdminServer`] is dropped).
async fn serve(listener: impl Listener, routes: impl HttpService<Incoming>) {
    let limits = ConnectionLimits {
        max_total: MAX_CONNECTIONS,
        max_anonymous_per_peer: None,
    };
    Server::new(limits, HEADER_TIMEOUT, None)
        .accept_until(
            &listener,
            |peer| layers::log(peer, routes.clone()),
            std::future::pending::<()>(),
        )
        .await
}

fn bind_error(address: &AdminAddress, problem: String) -> ConfigError {
    let key = match address {
        AdminAddress::Tcp(_) => "approvals.admin_listen",
        AdminAddress::Unix(_) => "approvals.admin_socket",
    };
    ConfigError {
        key: key.into(),
        problem: format!("cannot listen on {address} for the approvals admin endpoint: {problem}"),
        fix: "is another pve-mcp serve using it? Give each server its own admin_listen port or admin_socket path in [approvals]".into(),
    }
}

/// Binds a unix socket readable and writable by this user only. A socket
/// file left by a server that is gone is replaced; a live one, or any file
/// that is not a socket, is left alone.
fn bind_unix(path: &Path) -> Result<tokio::net::UnixListener, String> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(format!("{} exists and is not a socket", path.display()));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err("another server is listening on it".into());
        }
        std::fs::remove_file(path).map_err(|e| format!("cannot replace the stale socket: {e}"))?;
    }
    // Connecting needs write permission on the socket; the usual umask
    // already denies it to others between bind and the chmod that makes
    // the mode exact (and every request still needs the token).
    let listener = tokio::net::UnixListener::bind(path).map_err(|e| e.to_string())?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot restrict the socket to this user: {e}"))?;
    Ok(listener)
}

/// The admin token, then the body limit, then the routes over the store.
fn routes(token: &Secret, store: Arc<dyn ApprovalStore>) -> impl HttpService<Incoming> {
    let tokens = Tokens::new(&[NamedToken {
        name: "admin".into(),
        secret: token.clone(),
        toolsets: None,
        read_only: false,
        pve_credentials: None,
    }]);
    ServiceBuilder::new()
        .layer(layers::auth(tokens, refuse))
        .layer(layers::body_limit(MAX_BODY_BYTES, None, refuse))
        .service_fn(move |request| {
            let store = store.clone();
            async move { Ok::<_, Infallible>(route(store.as_ref(), request).await) }
        })
}

/// A refusal in the admin API's shape; a refused token is told where the
/// right one is set.
fn refuse(mut reject: Reject) -> Response<Body> {
    if reject.status == StatusCode::UNAUTHORIZED {
        tracing::warn!("admin request refused: missing or wrong admin token");
        reject.message = "the admin token is missing or wrong: send `Authorization: Bearer TOKEN` with the server's admin token (PVE_MCP_ADMIN_TOKEN, or admin_token / admin_token_file in [approvals])".into();
    }
    reject.into_error_object()
}

fn error(status: StatusCode, message: impl Into<String>) -> Response<Body> {
    Reject::new(status, message).into_error_object()
}

/// An approval as the endpoint shows it: with its state as of now.
fn shown(approval: &Approval, now: u64) -> Approval {
    Approval {
        state: approval.state_at(now),
        ..approval.clone()
    }
}

async fn route(store: &dyn ApprovalStore, request: Request<Bytes>) -> Response<Body> {
    let path = request.uri().path().trim_end_matches('/');
    let method = request.method();
    let now = now_ms();
    if path == PREFIX {
        if method != Method::GET {
            return error(StatusCode::METHOD_NOT_ALLOWED, format!("use GET {PREFIX}"));
        }
        return match store.list(now).await {
            Ok(all) => {
                let all: Vec<Approval> = all.iter().map(|a| shown(a, now)).collect();
                json(StatusCode::OK, &json!({ "now_ms": now, "approvals": all }))
            }
            Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        };
    }
    if method == Method::GET
        && let Some(id) = path
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.strip_prefix('/'))
            .filter(|id| !id.is_empty() && !id.contains('/'))
    {
        return match store.list(now).await {
            Ok(all) => match all.iter().find(|a| a.id == id) {
                Some(approval) => json(
                    StatusCode::OK,
                    &json!({ "now_ms": now, "approval": shown(approval, now) }),
                ),
                None => error(
                    StatusCode::NOT_FOUND,
                    DecideError::Unknown(id.to_string()).to_string(),
                ),
            },
            Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        };
    }
    let Some((id, verdict)) = path
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(id, action)| match action {
            "approve" => Some((id, Verdict::Approve)),
            "deny" => Some((id, Verdict::Deny)),
            _ => None,
        })
    else {
        return error(
            StatusCode::NOT_FOUND,
            format!(
                "no such route; use GET {PREFIX}, GET {PREFIX}/ID or POST {PREFIX}/ID/approve|deny"
            ),
        );
    };
    if method != Method::POST {
        return error(StatusCode::METHOD_NOT_ALLOWED, "use POST");
    }
    match store.decide(id, verdict, now).await {
        Ok(approval) => {
            tracing::info!(approval = %approval.id, tool = %approval.tool, caller = %approval.caller, decision = %approval.state, "approval decided by a person");
            json(
                StatusCode::OK,
                &json!({ "now_ms": now, "approval": shown(&approval, now) }),
            )
        }
        Err(e) => {
            let status = match &e {
                DecideError::Unknown(_) => StatusCode::NOT_FOUND,
                DecideError::Expired(_) => StatusCode::GONE,
                DecideError::AlreadyDecided(_) => StatusCode::CONFLICT,
                DecideError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            };
            error(status, e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::client::{AdminClient, ClientError};
    use crate::approval::store::{Check, MemoryApprovals, Request, State, StoreLimits};
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const TOKEN: &str = "test-admin-token-0123456789";

    async fn pending(store: &MemoryApprovals, hash: &str) -> String {
        let request = Request {
            caller: "session:stdio".into(),
            tool: "pve_list_vms".into(),
            arguments_hash: hash.into(),
            arguments: format!(r#"{{"description":"{}"}}"#, "d".repeat(2048)),
            plan: Some(format!("PUT /x {}", "p".repeat(2048))),
        };
        match store
            .check_or_request(&request, &crate::approval::store::new_id(), now_ms())
            .await
            .unwrap()
        {
            Check::Pending { approval, .. } => approval.id,
            other => panic!("{other:?}"),
        }
    }

    fn client(server: &AdminServer, token: &str) -> AdminClient {
        AdminClient::new(
            server.address().clone(),
            Secret::new(token),
            "PVE_MCP_ADMIN_TOKEN".into(),
        )
    }

    async fn exercise(address: AdminAddress) {
        let store = Arc::new(MemoryApprovals::new(StoreLimits::with_ttl(
            Duration::from_secs(60),
        )));
        let server = start(&address, &Secret::new(TOKEN), store.clone())
            .await
            .unwrap();
        let first = pending(&store, "sha256:1").await;
        let second = pending(&store, "sha256:2").await;
        let admin = client(&server, TOKEN);

        let (_, all) = admin.list().await.unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|a| a.state == State::Pending));

        // One approval, and every one in the list, complete.
        let (_, one) = admin.get(&first).await.unwrap();
        assert_eq!(one.id, first);
        assert_eq!(one.arguments.len(), 2048 + r#"{"description":""}"#.len());
        assert_eq!(one.plan.as_deref().map(str::len), Some(2048 + 7));
        assert!(all.iter().all(|a| a.arguments == one.arguments));
        let unknown = admin.get("ap-ffffffffffffffff").await.unwrap_err();
        assert!(
            unknown.to_string().contains("no approval has the id"),
            "{unknown}"
        );

        let (_, approved) = admin.decide(&first, Verdict::Approve).await.unwrap();
        assert_eq!(approved.state, State::Approved);
        let (_, denied) = admin.decide(&second, Verdict::Deny).await.unwrap();
        assert_eq!(denied.state, State::Denied);

        let again = admin.decide(&second, Verdict::Approve).await.unwrap_err();
        assert!(again.to_string().contains("already denied"), "{again}");
        let unknown = admin
            .decide("ap-ffffffffffffffff", Verdict::Approve)
            .await
            .unwrap_err();
        assert!(
            unknown.to_string().contains("no approval has the id"),
            "{unknown}"
        );
        let bad = admin.decide("../../x", Verdict::Approve).await.unwrap_err();
        assert!(matches!(bad, ClientError::BadId(_)), "{bad}");

        let wrong = client(&server, "not-the-admin-token-at-all");
        let refused = wrong.list().await.unwrap_err();
        assert!(matches!(refused, ClientError::Refused(_)), "{refused}");
        assert!(
            refused.to_string().contains("refused the admin token"),
            "{refused}"
        );
        assert!(
            !refused.to_string().contains("not-the-admin-token"),
            "{refused}"
        );
        assert!(!refused.to_string().contains(TOKEN), "{refused}");
        let refused = wrong.decide(&first, Verdict::Deny).await.unwrap_err();
        assert!(matches!(refused, ClientError::Refused(_)));
        // The wrong token changed nothing.
        let (_, all) = admin.list().await.unwrap();
        assert_eq!(
            all.iter().find(|a| a.id == first).unwrap().state,
            State::Approved
        );
    }

    #[tokio::test]
    async fn tcp_endpoint_lists_decides_and_checks_the_token() {
        exercise(AdminAddress::Tcp("127.0.0.1:0".parse().unwrap())).await;
    }

    #[tokio::test]
    async fn unix_endpoint_is_private_and_replaces_a_stale_socket() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("admin.sock");
        // A stale socket left by a server that is gone.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        exercise(AdminAddress::Unix(path.clone())).await;
        assert!(
            !path.exists(),
            "the socket is removed when the server stops"
        );

        let store = Arc::new(MemoryApprovals::new(StoreLimits::with_ttl(
            Duration::from_secs(60),
        )));
        let server = start(
            &AdminAddress::Unix(path.clone()),
            &Secret::new(TOKEN),
            store.clone(),
        )
        .await
        .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A live one is not taken over.
        let err = start(
            &AdminAddress::Unix(path.clone()),
            &Secret::new(TOKEN),
            store.clone(),
        )
        .await
        .err()
        .unwrap();
        assert_eq!(err.key, "approvals.admin_socket");
        assert!(err.problem.contains("another server"), "{err}");
        drop(server);
        // Nor is a file that is not a socket.
        std::fs::write(&path, "data").unwrap();
        let err = start(
            &AdminAddress::Unix(path.clone()),
            &Secret::new(TOKEN),
            store,
        )
        .await
        .err()
        .unwrap();
        assert!(err.problem.contains("not a socket"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "data");
    }

    #[tokio::test]
    async fn a_taken_port_and_a_non_loopback_address_are_refused_at_start() {
        let store = Arc::new(MemoryApprovals::new(StoreLimits::with_ttl(
            Duration::from_secs(60),
        )));
        let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = AdminAddress::Tcp(taken.local_addr().unwrap());
        let err = start(&address, &Secret::new(TOKEN), store.clone())
            .await
            .err()
            .unwrap();
        assert_eq!(err.key, "approvals.admin_listen");
        assert!(err.fix.contains("another pve-mcp serve"), "{err}");
        let err = start(
            &AdminAddress::Tcp("0.0.0.0:0".parse().unwrap()),
            &Secret::new(TOKEN),
            store,
        )
        .await
        .err()
        .unwrap();
        assert!(err.problem.contains("loopback"), "{err}");
    }

    /// The admin token is checked by [`Tokens`], as MCP's are: the scheme
    /// in any case, and a constant-time comparison of digests.
    #[tokio::test]
    async fn the_bearer_scheme_is_case_insensitive_and_refusals_are_json() {
        let store = Arc::new(MemoryApprovals::new(StoreLimits::with_ttl(
            Duration::from_secs(60),
        )));
        let server = start(
            &AdminAddress::Tcp("127.0.0.1:0".parse().unwrap()),
            &Secret::new(TOKEN),
            store,
        )
        .await
        .unwrap();
        let AdminAddress::Tcp(addr) = server.address().clone() else {
            unreachable!()
        };
        let get = |authorization: String| async move {
            let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let request = format!(
                "GET {PREFIX} HTTP/1.1\r\nHost: x\r\nAuthorization: {authorization}\r\nConnection: close\r\n\r\n"
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.unwrap();
            answer
        };
        for scheme in ["Bearer", "bearer", "BEARER"] {
            let answer = get(format!("{scheme} {TOKEN}")).await;
            assert!(answer.starts_with("HTTP/1.1 200"), "{scheme}: {answer}");
            assert!(answer.contains("\"approvals\":[]"), "{answer}");
        }
        let answer = get(format!("bearer {TOKEN}x")).await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
        let body = answer.split("\r\n\r\n").nth(1).unwrap();
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("PVE_MCP_ADMIN_TOKEN"),
            "{body}"
        );
    }
}
