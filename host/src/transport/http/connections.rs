//! Connections, whatever is served on them: accepting (TCP or a unix
//! socket), the connection budget ([`super::limits::ConnectionBudget`]),
//! TLS, the deadline for a first request, and hyper's HTTP/1 and HTTP/2
//! with their own timeouts. These are properties
//! of a connection, not of a request, so they live here rather than in the
//! tower stack ([`super::layers`]) that each request then goes through.
//! `Peer` and `HttpService` live in [`super::response`], which every part of
//! the stack uses, so that the layers need not use this module.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_util::either::Either;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::limits::{ConnectionBudget, ConnectionLimits};
use super::response::{HttpService, Peer};

/// How long a kept-alive HTTP/1 connection may wait for its next request
/// header (hyper counts the idle time in): long enough that clients'
/// pooled connections are not closed under them while they pause. A
/// longer header timeout raises it.
const KEEP_ALIVE_HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How often an HTTP/2 connection is pinged, and how long the answer may
/// take before the connection is closed.
const H2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const H2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where connections come from: a TCP listener or a unix socket.
pub trait Listener: Send + Sync + 'static {
    /// One accepted connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection and who opened it.
    fn next(&self) -> impl Future<Output = std::io::Result<(Self::Io, Peer)>> + Send;
}

impl Listener for TcpListener {
    type Io = TcpStream;
    async fn next(&self) -> std::io::Result<(TcpStream, Peer)> {
        let (stream, peer) = self.accept().await?;
        // Responses are small and interactive: do not wait to fill packets.
        let _ = stream.set_nodelay(true);
        Ok((stream, Peer::Tcp(peer)))
    }
}

impl Listener for UnixListener {
    type Io = UnixStream;
    async fn next(&self) -> std::io::Result<(UnixStream, Peer)> {
        self.accept().await.map(|(stream, _)| (stream, Peer::Unix))
    }
}

/// Serves the connections of one listener, each with a copy of a tower
/// service, within a connection budget.
pub struct Server {
    tls: Option<TlsAcceptor>,
    budget: Arc<ConnectionBudget>,
    header_timeout: Duration,
    graceful: GracefulShutdown,
}

impl Server {
    /// A server keeping its connections within `limits`, closing a new
    /// connection that has not sent a whole request header `header_timeout`
    /// after it was accepted (TLS handshake included), and speaking TLS
    /// when given an acceptor.
    pub fn new(
        limits: ConnectionLimits,
        header_timeout: Duration,
        tls: Option<TlsAcceptor>,
    ) -> Server {
        Server {
            tls,
            budget: ConnectionBudget::new(limits),
            header_timeout,
            graceful: GracefulShutdown::new(),
        }
    }

    /// Accepts connections until `stop` resolves, and returns its value.
    /// Each connection is served in the background by `service(peer)`.
    pub async fn accept_until<L: Listener, S: HttpService<Incoming>, T>(
        &self,
        listener: &L,
        service: impl Fn(Peer) -> S,
        stop: impl Future<Output = T>,
    ) -> T {
        tokio::pin!(stop);
        loop {
            tokio::select! {
                accepted = listener.next() => match accepted {
                    Ok((io, peer)) => self.spawn(io, peer, service(peer)),
                    Err(e) => {
                        // Out of file descriptors and the like: wait, go on.
                        tracing::warn!(error = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                value = &mut stop => return value,
            }
        }
    }

    fn spawn<I, S>(&self, io: I, peer: Peer, service: S)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        S: HttpService<Incoming>,
    {
        let Some(admitted) = self.budget.admit(peer.ip()) else {
            // Closing at once is the cheapest answer to a flood (the budget
            // logs it, at most every few seconds).
            return;
        };
        let tls = self.tls.clone();
        let watcher = self.graceful.watcher();
        let header_timeout = self.header_timeout;
        let deadline = Instant::now() + header_timeout;
        tokio::spawn(async move {
            // The budget may close this connection to make room, at any
            // point until its first request passes the token check.
            let opened = tokio::select! {
                io = first_bytes(io, tls, peer, deadline) => io,
                _ = admitted.closed() => None,
            };
            let Some(io) = opened else {
                return;
            };
            let requested = CancellationToken::new();
            let service = hyper::service::service_fn({
                let (mark, requested) = (admitted.mark(), requested.clone());
                move |mut request: http::Request<Incoming>| {
                    requested.cancel();
                    // The token check marks the connection authenticated.
                    request.extensions_mut().insert(mark.clone());
                    service.clone().oneshot(request)
                }
            });
            let builder = builder(header_timeout);
            let connection = builder.serve_connection(TokioIo::new(io), service);
            // hyper's header timeout starts once it has chosen HTTP/1 or /2,
            // and HTTP/2 has none: a client that keeps the connection
            // without ever completing a request is closed here.
            let no_request = async {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {}
                    _ = requested.cancelled() => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                served = watcher.watch(connection) => {
                    if let Err(e) = served {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                }
                _ = admitted.closed() => {
                    tracing::debug!(%peer, "closed an unauthenticated connection to make room");
                }
                _ = no_request => {
                    tracing::debug!(%peer, "no complete request within the header timeout; closed");
                }
            }
        });
    }

    /// Tells every connection to finish its current request and close;
    /// resolves once all have.
    pub fn shutdown(self) -> impl Future<Output = ()> {
        self.graceful.shutdown()
    }
}

/// The connection once its first bytes have arrived (after the TLS
/// handshake, if any), or `None` when it closes, fails the handshake or
/// stays silent until `deadline`: until a client sends something, hyper
/// cannot tell HTTP/1 from HTTP/2 and no other timeout runs. The bytes are
/// buffered, and read again by hyper.
async fn first_bytes<I>(
    io: I,
    tls: Option<TlsAcceptor>,
    peer: Peer,
    deadline: Instant,
) -> Option<BufReader<Either<I, tokio_rustls::server::TlsStream<I>>>>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let opened = tokio::time::timeout_at(deadline, async {
        let io = match tls {
            None => Either::Left(io),
            Some(acceptor) => Either::Right(acceptor.accept(io).await?),
        };
        let mut io = BufReader::new(io);
        let got = !io.fill_buf().await?.is_empty();
        Ok::<_, std::io::Error>(got.then_some(io))
    });
    match opened.await {
        Ok(Ok(io)) => io,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "the connection failed before its first request");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, "no request within the timeout; closed");
            None
        }
    }
}

/// HTTP/1 and HTTP/2, with the timeouts that keep a stalled client from
/// holding its connection.
fn builder(header_timeout: Duration) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout.max(KEEP_ALIVE_HEADER_TIMEOUT));
    // Without pings an HTTP/2 client that stops answering (or never speaks
    // after the preface) would keep its connection for ever.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(H2_KEEP_ALIVE_INTERVAL))
        .keep_alive_timeout(H2_KEEP_ALIVE_TIMEOUT);
    builder
}
