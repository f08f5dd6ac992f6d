//! The client side of the admin endpoint, used by `pve-mcp approvals`.

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};

use super::redact::MAX_SHOWN;
use super::store::{Approval, MAX_RECORDS, Millis, Verdict};
use crate::config::approvals::AdminAddress;
use crate::secret::Secret;

/// The path prefix of every admin route (the transport layer serves them;
/// the routes are listed there).
pub const PREFIX: &str = "/v1/approvals";
/// How long one admin request may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read: every approval the store keeps
/// ([`MAX_RECORDS`]), each with its complete arguments and plan (at most
/// [`MAX_SHOWN`] bytes each, up to twice that once escaped as JSON), and
/// room for the rest of the record.
const MAX_BODY: usize = MAX_RECORDS * (2 * 2 * MAX_SHOWN + (4 << 10));

/// Why an admin request failed, worded for the person at the terminal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// Nothing answered at the address.
    #[error("{0}")]
    Unreachable(String),
    /// The endpoint refused the token.
    #[error("{0}")]
    Refused(String),
    /// The endpoint answered with an error (unknown id, expired, ...).
    #[error("{0}")]
    Api(String),
    /// The argument cannot be an approval id.
    #[error("{0}")]
    BadId(String),
}

/// A connection's worth of admin requests.
pub struct AdminClient {
    address: AdminAddress,
    token: Secret,
    token_key: String,
}

#[derive(Deserialize)]
struct ListReply {
    now_ms: Millis,
    approvals: Vec<Approval>,
}

#[derive(Deserialize)]
struct DecideReply {
    now_ms: Millis,
    approval: Approval,
}

#[derive(Deserialize)]
struct ErrorReply {
    error: String,
}

impl AdminClient {
    /// A client for the endpoint at `address`, sending `token` (read from
    /// the setting `token_key`, named when the token is refused).
    pub fn new(address: AdminAddress, token: Secret, token_key: String) -> AdminClient {
        AdminClient {
            address,
            token,
            token_key,
        }
    }

    /// Every kept approval, and the server's clock.
    pub async fn list(&self) -> Result<(Millis, Vec<Approval>), ClientError> {
        let body = self.request(Method::GET, PREFIX.to_string()).await?;
        let reply: ListReply = serde_json::from_slice(&body).map_err(|e| self.garbled(e))?;
        Ok((reply.now_ms, reply.approvals))
    }

    /// One approval, complete.
    pub async fn get(&self, id: &str) -> Result<(Millis, Approval), ClientError> {
        check_id(id)?;
        let body = self.request(Method::GET, format!("{PREFIX}/{id}")).await?;
        let reply: DecideReply = serde_json::from_slice(&body).map_err(|e| self.garbled(e))?;
        Ok((reply.now_ms, reply.approval))
    }

    /// Approves or denies one approval.
    pub async fn decide(
        &self,
        id: &str,
        verdict: Verdict,
    ) -> Result<(Millis, Approval), ClientError> {
        check_id(id)?;
        let action = match verdict {
            Verdict::Approve => "approve",
            Verdict::Deny => "deny",
        };
        let body = self
            .request(Method::POST, format!("{PREFIX}/{id}/{action}"))
            .await?;
        let reply: DecideReply = serde_json::from_slice(&body).map_err(|e| self.garbled(e))?;
        Ok((reply.now_ms, reply.approval))
    }

    fn garbled(&self, e: serde_json::Error) -> ClientError {
        ClientError::Api(format!(
            "the admin endpoint at {} gave an answer pve-mcp cannot read ({e}); is it a pve-mcp server of the same version?",
            self.address
        ))
    }

    async fn request(&self, method: Method, path: String) -> Result<Bytes, ClientError> {
        let exchange = async {
            match &self.address {
                AdminAddress::Tcp(addr) => {
                    let stream = tokio::net::TcpStream::connect(addr)
                        .await
                        .map_err(|e| self.unreachable(e))?;
                    self.exchange(stream, method, &path).await
                }
                AdminAddress::Unix(socket) => {
                    let stream = tokio::net::UnixStream::connect(socket)
                        .await
                        .map_err(|e| self.unreachable(e))?;
                    self.exchange(stream, method, &path).await
                }
            }
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::Unreachable(format!(
                    "the admin endpoint at {} did not answer within {} s",
                    self.address,
                    TIMEOUT.as_secs()
                )))
            })
    }

    fn unreachable(&self, e: std::io::Error) -> ClientError {
        ClientError::Unreachable(format!(
            "cannot reach the approvals admin endpoint at {}: {e}. Is `pve-mcp serve` running with the same [approvals] settings (admin_listen / admin_socket)?",
            self.address
        ))
    }

    async fn exchange<S>(&self, stream: S, method: Method, path: &str) -> Result<Bytes, ClientError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let io_error = |e: hyper::Error| {
            ClientError::Unreachable(format!(
                "the admin endpoint at {} broke off the request: {e}",
                self.address
            ))
        };
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(io_error)?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut authorization = http::HeaderValue::try_from(format!(
            "Bearer {}",
            self.token.expose()
        ))
        .map_err(|_| {
            ClientError::Refused(format!(
                "the admin token from {} cannot be sent in a header; it must be printable text",
                self.token_key
            ))
        })?;
        authorization.set_sensitive(true);
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(http::header::HOST, "localhost")
            .header(http::header::AUTHORIZATION, authorization)
            .body(Full::new(Bytes::new()))
            .map_err(|e| ClientError::BadId(format!("cannot build the request: {e}")))?;
        let response = sender.send_request(request).await.map_err(io_error)?;
        let status = response.status();
        let body = http_body_util::Limited::new(response.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| {
                ClientError::Unreachable(format!("reading the answer from {}: {e}", self.address))
            })?
            .to_bytes();
        if status.is_success() {
            return Ok(body);
        }
        let message = serde_json::from_slice::<ErrorReply>(&body)
            .map(|r| r.error)
            .unwrap_or_else(|_| String::from_utf8_lossy(&body).chars().take(300).collect());
        Err(match status {
            StatusCode::UNAUTHORIZED => ClientError::Refused(format!(
                "the admin endpoint at {} refused the admin token from {}: it is not the token the server was started with. Use the same PVE_MCP_ADMIN_TOKEN (or admin_token / admin_token_file in [approvals]) as the server.",
                self.address, self.token_key
            )),
            _ => ClientError::Api(message),
        })
    }
}

/// Refuses what cannot be an approval id before it goes into a path.
fn check_id(id: &str) -> Result<(), ClientError> {
    if id.is_empty()
        || id.len() > 64
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ClientError::BadId(format!(
            "{id:?} is not an approval id; they look like ap-0123456789abcdef (see `pve-mcp approvals list`)"
        )));
    }
    Ok(())
}
