//! The host's HTTPS client to one Proxmox cluster: pooled keep-alive
//! connections, the cluster's TLS settings, and its credentials. The
//! cluster's timeout bounds a whole exchange, the response body included.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::config::credentials::{ApiToken, TierTokens};
use crate::config::{Auth, Cluster};
use crate::secret::Secret;
use crate::tier::Tier;
use crate::tls::client::{self as tls, FingerprintMismatch, TlsMode};

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// A pooled client for one cluster, holding what authenticates to it. The
/// credentials never leave this type except onto the wire.
pub struct Upstream {
    client: Client<Connector, Full<Bytes>>,
    /// Every distinct credential; the first is the cluster's own read one.
    credentials: Vec<Credentials>,
    /// The cluster's own credential per tier (read, write, destructive).
    own: Slots,
    /// Each credential set's, by name.
    sets: Vec<(String, Slots)>,
    timeout: Duration,
}

/// Indexes into [`Upstream::credentials`], per tier.
type Slots = [Option<usize>; 3];

enum Credentials {
    /// `Authorization: PVEAPIToken=...`, marked sensitive, and the token's
    /// id.
    Token(HeaderValue, String),
    /// A ticket obtained by logging in, kept and renewed here.
    Ticket(Box<TicketLogin>),
}

/// One of a cluster's credentials, chosen once for a call from its tier
/// and its caller's credential set (see [`Upstream::credential`]). The
/// default is the cluster's own read credential, the least it holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CredentialId(usize);

/// Why a cluster has no credential for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCredential {
    /// The cluster defines no credential set of that name.
    Set,
    /// The set (or the cluster's own credentials) has no token for that
    /// tier, and no fallback gave it one.
    Tier,
}

fn tier_slot(tier: Tier) -> usize {
    match tier {
        Tier::Read => 0,
        Tier::Write => 1,
        Tier::Destructive => 2,
    }
}

fn token_header(token: &ApiToken) -> anyhow::Result<HeaderValue> {
    let mut header = HeaderValue::try_from(format!(
        "PVEAPIToken={}={}",
        token.id,
        token.secret.expose()
    ))
    .map_err(|_| {
        anyhow::anyhow!("the API token id or secret has characters not allowed in an HTTP header")
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// Adds each tier's token to `credentials` (once per distinct token id)
/// and returns where each tier's is.
fn token_slots(tokens: &TierTokens, credentials: &mut Vec<Credentials>) -> anyhow::Result<Slots> {
    let mut slots = [None; 3];
    for tier in [Tier::Read, Tier::Write, Tier::Destructive] {
        let Some(token) = tokens.get(tier) else {
            continue;
        };
        let known = credentials.iter().position(|c| {
            matches!(c, Credentials::Token(header, id)
                if *id == token.id && header.as_bytes().ends_with(token.secret.expose().as_bytes()))
        });
        slots[tier_slot(tier)] = Some(match known {
            Some(i) => i,
            None => {
                credentials.push(Credentials::Token(token_header(token)?, token.id.clone()));
                credentials.len() - 1
            }
        });
    }
    Ok(slots)
}

struct TicketLogin {
    username: String,
    password: Secret,
    lifetime: Duration,
    login_uri: Uri,
    current: tokio::sync::Mutex<Option<Ticket>>,
}

#[derive(Clone)]
struct Ticket {
    cookie: HeaderValue,
    csrf: HeaderValue,
    obtained: Instant,
}

/// A login answer Proxmox refused; it goes back to the guest as the
/// response to its own request, so the agent sees PVE's status and reason.
type Refusal = Response<UpstreamBody>;

/// A response body from Proxmox that fails with [`BodyTimeout`] once its
/// request's deadline has passed: the cluster's timeout covers the whole
/// exchange, so an upstream that trickles its body (a slow-loris) cannot
/// hold a call past it.
pub struct UpstreamBody {
    inner: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
}

/// The body did not arrive within the cluster's timeout.
#[derive(Debug, thiserror::Error)]
#[error("Proxmox did not finish sending the response within {} s", .0.as_secs())]
pub struct BodyTimeout(pub Duration);

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        // The deadline first: a body that keeps coming, however slowly or
        // however much, still ends with the exchange's time.
        if this.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(BodyTimeout(this.timeout)))));
        }
        Pin::new(&mut this.inner)
            .poll_frame(cx)
            .map(|frame| frame.map(|r| r.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Why an upstream request failed before a response arrived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamFailure {
    /// No response head within the cluster's timeout.
    #[error("timed out waiting for Proxmox")]
    Timeout,
    /// No TCP connection within the cluster's timeout.
    #[error("timed out connecting to Proxmox")]
    ConnectTimeout,
    /// The TCP connection was refused.
    #[error("connection refused: {0}")]
    Refused(String),
    /// The host name did not resolve.
    #[error("host name lookup failed: {0}")]
    Dns(String),
    /// The certificate was not trusted or did not match the pin.
    #[error("TLS certificate verification failed: {0}")]
    Tls(String),
    /// Anything else (reset, protocol error, ...).
    #[error("{0}")]
    Other(String),
}

impl Upstream {
    /// A client for this cluster.
    pub fn new(cluster: &Cluster) -> anyhow::Result<Upstream> {
        if matches!(cluster.tls, TlsMode::Insecure) {
            tracing::warn!(
                cluster = %cluster.name,
                "TLS verification is OFF for {} (PVE_VERIFY_SSL=false): anyone on the network path can read the API token. \
                 Use PVE_TLS_FINGERPRINT or PVE_CA_FILE instead.",
                cluster.endpoint.base_url()
            );
        }
        let tls = tls::client_config(&cluster.tls)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(cluster.timeout));
        http.set_nodelay(true);
        let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls);
        let connector = if cluster.endpoint.https {
            builder.https_only().enable_http1().wrap_connector(http)
        } else {
            builder.https_or_http().enable_http1().wrap_connector(http)
        };
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(16)
            .build(connector);
        let mut credentials = Vec::new();
        let own = match &cluster.auth {
            Auth::Password {
                username,
                password,
                ticket_lifetime,
            } => {
                credentials.push(Credentials::Ticket(Box::new(TicketLogin {
                    username: username.clone(),
                    password: password.clone(),
                    lifetime: *ticket_lifetime,
                    login_uri: format!("{}/api2/json/access/ticket", cluster.endpoint.base_url())
                        .parse()?,
                    current: tokio::sync::Mutex::new(None),
                })));
                [Some(0); 3]
            }
            _ => {
                let tokens = cluster.tier_tokens().unwrap_or_default();
                token_slots(&tokens, &mut credentials)?
            }
        };
        // The default credential (index 0) must be the cluster's own read
        // one: the configuration requires a read token.
        anyhow::ensure!(
            own[0] == Some(0),
            "cluster {} has no read credential",
            cluster.name
        );
        let mut sets = Vec::with_capacity(cluster.credential_sets.len());
        for (name, tokens) in &cluster.credential_sets {
            sets.push((name.clone(), token_slots(tokens, &mut credentials)?));
        }
        Ok(Upstream {
            client,
            credentials,
            own,
            sets,
            timeout: cluster.timeout,
        })
    }

    /// The credential a call of `tier` carries, from the credential set
    /// `set` (a bearer token's `pve_credentials`) or the cluster's own.
    pub fn credential(&self, set: Option<&str>, tier: Tier) -> Result<CredentialId, NoCredential> {
        let slots = match set {
            None => &self.own,
            Some(set) => match self.sets.iter().find(|(name, _)| name == set) {
                Some((_, slots)) => slots,
                None => return Err(NoCredential::Set),
            },
        };
        slots[tier_slot(tier)]
            .map(CredentialId)
            .ok_or(NoCredential::Tier)
    }

    /// The distinct credentials of the set `set` (or the cluster's own),
    /// each with the tiers it serves, in tier order.
    pub fn tiers_of(&self, set: Option<&str>) -> Vec<(CredentialId, Vec<Tier>)> {
        let mut out: Vec<(CredentialId, Vec<Tier>)> = Vec::new();
        for tier in [Tier::Read, Tier::Write, Tier::Destructive] {
            let Ok(id) = self.credential(set, tier) else {
                continue;
            };
            match out.iter_mut().find(|(known, _)| *known == id) {
                Some((_, tiers)) => tiers.push(tier),
                None => out.push((id, vec![tier])),
            }
        }
        out
    }

    /// Who a credential is in Proxmox: its token id, or the user that
    /// logs in. Never the secret.
    pub fn identity(&self, id: CredentialId) -> &str {
        match self.credentials.get(id.0) {
            Some(Credentials::Token(_, token_id)) => token_id,
            Some(Credentials::Ticket(login)) => &login.username,
            None => "",
        }
    }

    /// Every distinct credential the cluster holds, its own first, then
    /// each set's.
    pub fn credentials(&self) -> impl Iterator<Item = CredentialId> + '_ {
        (0..self.credentials.len()).map(CredentialId)
    }

    /// Sends a request with the credential `credential` added (see
    /// [`Upstream::credential`]). With a ticket, it logs in first when
    /// needed, renews a ticket past three quarters of its life, and logs in
    /// again once if Proxmox answers 401.
    pub async fn send(
        &self,
        credential: CredentialId,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<UpstreamBody>, UpstreamFailure> {
        let Some(credentials) = self.credentials.get(credential.0) else {
            return Err(UpstreamFailure::Other(
                "no credential of this cluster was chosen for the call".into(),
            ));
        };
        match credentials {
            Credentials::Token(header, _) => {
                let mut request = request;
                request
                    .headers_mut()
                    .insert(http::header::AUTHORIZATION, header.clone());
                self.round_trip(request).await
            }
            Credentials::Ticket(login) => {
                let (parts, body) = request.into_parts();
                let ticket = match self.ticket(login, false).await? {
                    Ok(t) => t,
                    Err(refusal) => return Ok(refusal),
                };
                let response = self
                    .round_trip(with_ticket(&parts, body.clone(), &ticket))
                    .await?;
                if response.status() != StatusCode::UNAUTHORIZED {
                    return Ok(response);
                }
                tracing::info!(user = %login.username, "Proxmox rejected the ticket; logging in again");
                let ticket = match self.ticket(login, true).await? {
                    Ok(t) => t,
                    Err(refusal) => return Ok(refusal),
                };
                self.round_trip(with_ticket(&parts, body, &ticket)).await
            }
        }
    }

    /// One exchange, its head and its body within the cluster's timeout.
    async fn round_trip(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<UpstreamBody>, UpstreamFailure> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        match tokio::time::timeout_at(deadline, self.client.request(request)).await {
            Err(_) => Err(UpstreamFailure::Timeout),
            Ok(Ok(response)) => Ok(response.map(|inner| UpstreamBody {
                inner,
                deadline: Box::pin(tokio::time::sleep_until(deadline)),
                timeout: self.timeout,
            })),
            Ok(Err(e)) => Err(classify(&e)),
        }
    }

    /// The current ticket, logging in when there is none, when it is past
    /// three quarters of its life, or when `force`d after a 401. Concurrent
    /// calls wait for one login rather than each logging in.
    async fn ticket(
        &self,
        login: &TicketLogin,
        force: bool,
    ) -> Result<Result<Ticket, Refusal>, UpstreamFailure> {
        let mut current = login.current.lock().await;
        if let Some(ticket) = current.as_ref()
            && !force
            && ticket.obtained.elapsed() < login.lifetime * 3 / 4
        {
            return Ok(Ok(ticket.clone()));
        }
        let form = format!(
            "username={}&password={}",
            form_encode(&login.username),
            form_encode(login.password.expose())
        );
        let request = Request::builder()
            .method(Method::POST)
            .uri(login.login_uri.clone())
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(Full::new(Bytes::from(form)))
            .map_err(|e| UpstreamFailure::Other(e.to_string()))?;
        let response = self.round_trip(request).await?;
        if !response.status().is_success() {
            tracing::warn!(user = %login.username, status = %response.status(), "Proxmox login failed");
            *current = None;
            return Ok(Err(response));
        }
        let body = Limited::new(response.into_body(), 256 << 10)
            .collect()
            .await
            .map_err(|e| UpstreamFailure::Other(format!("reading the login answer: {e}")))?
            .to_bytes();
        let ticket = parse_login(&body).map_err(UpstreamFailure::Other)?;
        tracing::debug!(user = %login.username, renewed = current.is_some(), "logged in to Proxmox");
        *current = Some(ticket.clone());
        Ok(Ok(ticket))
    }
}

/// Rebuilds a request with the ticket cookie and, for writes, the CSRF
/// token Proxmox requires with a ticket.
fn with_ticket(
    parts: &http::request::Parts,
    body: Full<Bytes>,
    ticket: &Ticket,
) -> Request<Full<Bytes>> {
    let mut request = Request::new(body);
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.headers_mut() = parts.headers.clone();
    request
        .headers_mut()
        .insert(http::header::COOKIE, ticket.cookie.clone());
    if parts.method != Method::GET && parts.method != Method::HEAD {
        request
            .headers_mut()
            .insert("csrfpreventiontoken", ticket.csrf.clone());
    }
    request
}

fn form_encode(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn parse_login(body: &[u8]) -> Result<Ticket, String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("Proxmox's login answer is not JSON: {e}"))?;
    let data = &value["data"];
    let (Some(ticket), Some(csrf)) = (
        data["ticket"].as_str(),
        data["CSRFPreventionToken"].as_str(),
    ) else {
        return Err(
            "Proxmox's login answer has no ticket (is two-factor authentication on for this user? use an API token)"
                .into(),
        );
    };
    let mut cookie = HeaderValue::try_from(format!("PVEAuthCookie={}", form_encode(ticket)))
        .map_err(|_| "Proxmox's ticket is not a valid header value".to_string())?;
    cookie.set_sensitive(true);
    let mut csrf = HeaderValue::try_from(csrf)
        .map_err(|_| "Proxmox's CSRF token is not a valid header value".to_string())?;
    csrf.set_sensitive(true);
    Ok(Ticket {
        cookie,
        csrf,
        obtained: Instant::now(),
    })
}

/// Finds the most specific cause in an error chain: a pin mismatch or other
/// certificate problem, a refused connection, a DNS failure.
fn classify(err: &(dyn std::error::Error + 'static)) -> UpstreamFailure {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut saw_dns = false;
    while let Some(e) = cause {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return UpstreamFailure::Tls(describe_tls(tls));
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if let Some(tls) = io
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            {
                return UpstreamFailure::Tls(describe_tls(tls));
            }
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    return UpstreamFailure::Refused(io.to_string());
                }
                // The connector's own timeout: no connection at all.
                std::io::ErrorKind::TimedOut => return UpstreamFailure::ConnectTimeout,
                _ => {}
            }
        }
        saw_dns |= e.to_string().starts_with("dns error");
        cause = e.source();
    }
    let text = chain_text(err);
    if saw_dns {
        UpstreamFailure::Dns(text)
    } else {
        UpstreamFailure::Other(text)
    }
}

fn chain_text(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut cause = err.source();
    while let Some(e) = cause {
        let s = e.to_string();
        if !parts.last().is_some_and(|last| last.contains(&s)) {
            parts.push(s);
        }
        cause = e.source();
    }
    parts.join(": ")
}

fn describe_tls(err: &rustls::Error) -> String {
    if let rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)) = err
        && let Some(mismatch) = other.0.downcast_ref::<FingerprintMismatch>()
    {
        return mismatch.to_string();
    }
    match err {
        rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer) => {
            "the server certificate is signed by an unknown CA (Proxmox uses its own cluster CA: set PVE_CA_FILE to /etc/pve/pve-root-ca.pem, or pin PVE_TLS_FINGERPRINT)".into()
        }
        rustls::Error::InvalidCertificate(
            rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. },
        ) => {
            "the server certificate has expired (renew it on the Proxmox node: pvecm updatecerts --force renews the cluster-signed one, pvenode cert set installs your own; and check that both machines' clocks are right)".into()
        }
        rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidYet
            | rustls::CertificateError::NotValidYetContext { .. },
        ) => {
            "the server certificate is not valid yet (check that both machines' clocks are right)".into()
        }
        rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)
        | rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForNameContext { .. }) => {
            "the server certificate is not valid for this host name (use the name or IP the certificate was issued for, or pin PVE_TLS_FINGERPRINT)".into()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::client::Fingerprint;

    #[test]
    fn tls_mismatch_is_described_with_both_fingerprints() {
        let mismatch = FingerprintMismatch {
            expected: Fingerprint::of(b"a"),
            seen: Fingerprint::of(b"b"),
        };
        let err = rustls::Error::InvalidCertificate(rustls::CertificateError::Other(
            rustls::OtherError(std::sync::Arc::new(mismatch)),
        ));
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, err);
        match classify(&io) {
            UpstreamFailure::Tls(text) => {
                assert!(text.contains(&Fingerprint::of(b"a").to_string()), "{text}");
                assert!(text.contains(&Fingerprint::of(b"b").to_string()), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_expired_certificate_says_to_renew_it() {
        let err = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
        match classify(&std::io::Error::new(std::io::ErrorKind::InvalidData, err)) {
            UpstreamFailure::Tls(text) => {
                assert!(text.contains("expired") && text.contains("renew"), "{text}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_connect_timeout_is_not_a_response_timeout() {
        let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out");
        assert_eq!(classify(&io), UpstreamFailure::ConnectTimeout);
    }

    #[test]
    fn refused_connection_is_recognised() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(matches!(classify(&io), UpstreamFailure::Refused(_)));
    }
}

#[cfg(test)]
mod ticket_tests {
    use super::*;

    fn ticket() -> Ticket {
        parse_login(br#"{"data":{"ticket":"PVE:root@pam:64E10CBA::c2ln+/=","CSRFPreventionToken":"64E10CBA:abc"}}"#).unwrap()
    }

    #[test]
    fn login_answer_becomes_a_sensitive_cookie_and_csrf_token() {
        let t = ticket();
        assert_eq!(
            t.cookie.to_str().unwrap(),
            "PVEAuthCookie=PVE%3Aroot%40pam%3A64E10CBA%3A%3Ac2ln%2B%2F%3D"
        );
        assert!(t.cookie.is_sensitive() && t.csrf.is_sensitive());
        let err = parse_login(br#"{"data":{"NeedTFA":1}}"#).err().unwrap();
        assert!(err.contains("two-factor"), "{err}");
    }

    #[test]
    fn writes_carry_the_csrf_token_and_reads_do_not() {
        let t = ticket();
        for (method, csrf) in [
            (Method::GET, false),
            (Method::POST, true),
            (Method::DELETE, true),
        ] {
            let (parts, body) = Request::builder()
                .method(method.clone())
                .uri("https://pve:8006/api2/json/version")
                .body(Full::new(Bytes::new()))
                .unwrap()
                .into_parts();
            let request = with_ticket(&parts, body, &t);
            assert_eq!(request.headers().get(http::header::COOKIE), Some(&t.cookie));
            assert_eq!(
                request.headers().contains_key("csrfpreventiontoken"),
                csrf,
                "{method}"
            );
        }
    }
}
