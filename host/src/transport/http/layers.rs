//! The tower layers a request passes before a route's service: the
//! `Host`/`Origin` guard, bearer tokens and the body limit, and around all
//! of them a log line per request. A layer that refuses a request answers
//! it itself, worded the way its server words errors ([`Render`]), so the
//! service behind sees only requests that passed.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tower::{Layer, Service, ServiceExt};

use super::auth::Tokens;
use super::guard::Guard;
use super::limits::ConnectionMark;
use super::response::{Body, HttpService, Peer, Reject};
use super::sessions::session_id;
use crate::caller::TokenName;

/// How a server words a refusal: MCP answers with a JSON-RPC error, the
/// approvals admin API with `{"error": ...}`.
pub type Render = fn(Reject) -> Response<Body>;

/// The future every layer returns.
pub type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// What one layer does with a request: answer it itself, or hand it (or
/// what it made of it) to the service behind.
pub trait Step<B, S>: Clone {
    /// Handles `request`, with a copy of the service behind.
    fn step(&self, inner: S, request: Request<B>) -> Answer;
}

/// A [`Step`] as a tower layer.
#[derive(Clone)]
pub struct StepLayer<T>(T);

impl<S, T: Clone> Layer<S> for StepLayer<T> {
    type Service = Stepped<S, T>;
    fn layer(&self, inner: S) -> Stepped<S, T> {
        Stepped {
            inner,
            step: self.0.clone(),
        }
    }
}

/// The service a [`StepLayer`] makes.
#[derive(Clone)]
pub struct Stepped<S, T> {
    inner: S,
    step: T,
}

impl<S, T, B> Service<Request<B>> for Stepped<S, T>
where
    T: Step<B, S>,
    S: Clone,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    /// Always ready: a step waits for the service behind (`oneshot`) only
    /// once it hands a request on, which a refused request never is.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Answer {
        self.step.step(self.inner.clone(), request)
    }
}

fn answer(response: Response<Body>) -> Answer {
    Box::pin(std::future::ready(Ok(response)))
}

/// Refuses a request whose `Host` or `Origin` is not allowed.
pub fn guard(guard: Guard, render: Render) -> StepLayer<GuardStep> {
    StepLayer(GuardStep {
        guard: Arc::new(guard),
        render,
    })
}

/// The step of [`guard`].
#[derive(Clone)]
pub struct GuardStep {
    guard: Arc<Guard>,
    render: Render,
}

impl<B: Send + 'static, S: HttpService<B>> Step<B, S> for GuardStep {
    fn step(&self, inner: S, request: Request<B>) -> Answer {
        match self.guard.check(request.uri(), request.headers()) {
            Ok(()) => Box::pin(inner.oneshot(request)),
            Err(reject) => answer((self.render)(reject)),
        }
    }
}

/// Lets through only requests with one of `tokens` (everyone, unnamed,
/// when there are none), and passes the token's name on: to the service in
/// the request's extensions (the audit log names the caller by it) and to
/// [`log`] in the response's.
pub fn auth(tokens: Tokens, render: Render) -> StepLayer<AuthStep> {
    StepLayer(AuthStep { tokens, render })
}

/// The step of [`auth`].
#[derive(Clone)]
pub struct AuthStep {
    tokens: Tokens,
    render: Render,
}

impl<B: Send + 'static, S: HttpService<B>> Step<B, S> for AuthStep {
    fn step(&self, inner: S, mut request: Request<B>) -> Answer {
        let token = match self.tokens.authenticate(request.headers()) {
            Ok(token) => token,
            Err(reject) => return answer((self.render)(reject)),
        };
        if let Some(token) = &token {
            request.extensions_mut().insert(token.clone());
        }
        // A connection that has shown a token keeps its place in the
        // connection budget.
        if let Some(connection) = request.extensions().get::<ConnectionMark>() {
            connection.authenticated();
        }
        let response = inner.oneshot(request);
        Box::pin(async move {
            let mut response = response.await?;
            if let Some(token) = token {
                response.extensions_mut().insert(token);
            }
            Ok(response)
        })
    }
}

/// Reads the request body whole, up to `max_bytes`, and hands it on as
/// bytes; a larger body gets 413 (naming `setting`, if there is one that
/// raises the limit) without being read further. Every body these servers
/// accept is one JSON message, which is read whole anyway.
pub fn body_limit(
    max_bytes: usize,
    setting: Option<&'static str>,
    render: Render,
) -> StepLayer<BodyLimitStep> {
    StepLayer(BodyLimitStep {
        max_bytes,
        setting,
        render,
    })
}

/// The step of [`body_limit`].
#[derive(Clone)]
pub struct BodyLimitStep {
    max_bytes: usize,
    setting: Option<&'static str>,
    render: Render,
}

impl BodyLimitStep {
    fn too_large(&self) -> Response<Body> {
        let mut message = format!(
            "Payload Too Large: the request body is over {} KiB",
            self.max_bytes >> 10
        );
        if let Some(setting) = self.setting {
            message.push_str(&format!(" ({setting})"));
        }
        (self.render)(Reject::new(StatusCode::PAYLOAD_TOO_LARGE, message))
    }
}

impl<B, S> Step<B, S> for BodyLimitStep
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S: HttpService<Bytes>,
{
    fn step(&self, inner: S, request: Request<B>) -> Answer {
        // A declared length over the limit is refused before any is read.
        let declared = request
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_bytes as u64) {
            return answer(self.too_large());
        }
        let this = self.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            match Limited::new(body, this.max_bytes).collect().await {
                Ok(body) => {
                    inner
                        .oneshot(Request::from_parts(parts, body.to_bytes()))
                        .await
                }
                Err(e) if e.is::<LengthLimitError>() => Ok(this.too_large()),
                Err(_) => Ok((this.render)(Reject::new(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: the request body could not be read",
                ))),
            }
        })
    }
}

/// Logs a line per request of a connection from `peer` with its outcome:
/// the method and path, the status, the time taken, the MCP session and
/// the token's name (never the token).
pub fn log<S>(peer: Peer, inner: S) -> Stepped<S, LogStep> {
    StepLayer(LogStep { peer }).layer(inner)
}

/// The step of [`log`].
#[derive(Clone)]
pub struct LogStep {
    peer: Peer,
}

impl<B: Send + 'static, S: HttpService<B>> Step<B, S> for LogStep {
    fn step(&self, inner: S, request: Request<B>) -> Answer {
        let started = Instant::now();
        let peer = self.peer;
        let method = request.method().clone();
        let path: String = request.uri().path().chars().take(200).collect();
        let session_in = session_id(request.headers());
        let response = inner.oneshot(request);
        Box::pin(async move {
            let response = response.await?;
            // The client's session header is its own text: bounded in the log.
            let session: Option<String> = session_in
                .or_else(|| session_id(response.headers()))
                .map(|s| s.chars().take(64).collect());
            tracing::info!(
                target: "pve_mcp::http",
                %peer,
                %method,
                path,
                status = response.status().as_u16(),
                ms = started.elapsed().as_millis() as u64,
                session = session.as_deref(),
                token = response.extensions().get::<TokenName>().map(|t| t.0.as_ref()),
                "http request"
            );
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::http::NamedToken;
    use crate::secret::Secret;
    use http_body_util::Full;
    use tower::ServiceBuilder;

    /// A stack of auth and body limit over a service that echoes the body
    /// and the caller's token name.
    async fn send(request: Request<Full<Bytes>>) -> Response<Body> {
        let tokens = Tokens::new(&[NamedToken {
            name: "ci".into(),
            secret: Secret::new("cccccccccccccccccccccccc"),
            toolsets: None,
            read_only: false,
            pve_credentials: None,
        }]);
        ServiceBuilder::new()
            .layer(auth(tokens, Reject::into_response))
            .layer(body_limit(
                1024,
                Some("http.max_body_kib"),
                Reject::into_response,
            ))
            .service_fn(|request: Request<Bytes>| async move {
                let who = request.extensions().get::<TokenName>().unwrap().0.clone();
                let text = format!("{who}:{}", String::from_utf8_lossy(request.body()));
                Ok::<_, Infallible>(super::super::response::text(StatusCode::OK, text))
            })
            .oneshot(request)
            .await
            .unwrap()
    }

    async fn body(response: Response<Body>) -> String {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn the_token_reaches_the_service_and_the_response() {
        let request = Request::post("/x")
            .header("authorization", "Bearer cccccccccccccccccccccccc")
            .body(Full::new(Bytes::from("hi")))
            .unwrap();
        let response = send(request).await;
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.extensions().get::<TokenName>(),
            Some(&TokenName("ci".into()))
        );
        assert_eq!(body(response).await, "ci:hi");
    }

    #[tokio::test]
    async fn a_refused_token_or_a_large_body_never_reaches_the_service() {
        let request = Request::post("/x")
            .header("authorization", "Bearer nope")
            .body(Full::new(Bytes::from("hi")))
            .unwrap();
        assert_eq!(send(request).await.status(), 401);
        // Declared too large, and too large without a declared length
        // (`Full` reports its exact size, so the header is the only signal
        // for the first; the second is caught while reading).
        let big = "x".repeat(2048);
        let request = Request::post("/x")
            .header("authorization", "Bearer cccccccccccccccccccccccc")
            .header("content-length", "2048")
            .body(Full::new(Bytes::from(big.clone())))
            .unwrap();
        let response = send(request).await;
        assert_eq!(response.status(), 413);
        assert!(body(response).await.contains("http.max_body_kib"));
        let request = Request::post("/x")
            .header("authorization", "Bearer cccccccccccccccccccccccc")
            .body(Full::new(Bytes::from(big)))
            .unwrap();
        assert_eq!(send(request).await.status(), 413);
    }
}
