//! The host's HTTPS client to one Proxmox cluster: pooled keep-alive
//! connections, the cluster's TLS settings, and its credentials.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::config::{Auth, Cluster};
use crate::tls::{self, FingerprintMismatch, TlsMode};

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// A pooled client for one cluster, holding the header that authenticates
/// to it. The header never leaves this type except onto the wire.
pub struct Upstream {
    client: Client<Connector, Full<Bytes>>,
    authorization: HeaderValue,
    timeout: Duration,
}

/// Why an upstream request failed before a response arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamFailure {
    /// No response head within the cluster's timeout.
    Timeout,
    /// The TCP connection was refused.
    Refused(String),
    /// The host name did not resolve.
    Dns(String),
    /// The certificate was not trusted or did not match the pin.
    Tls(String),
    /// Anything else (reset, protocol error, ...).
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
        let Auth::Token { id, secret } = &cluster.auth;
        let mut authorization =
            HeaderValue::try_from(format!("PVEAPIToken={id}={}", secret.expose())).map_err(
                |_| {
                    anyhow::anyhow!(
                        "the API token id or secret has characters not allowed in an HTTP header"
                    )
                },
            )?;
        authorization.set_sensitive(true);
        Ok(Upstream {
            client,
            authorization,
            timeout: cluster.timeout,
        })
    }

    /// Sends a request with the cluster's credentials added.
    pub async fn send(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, UpstreamFailure> {
        request
            .headers_mut()
            .insert(http::header::AUTHORIZATION, self.authorization.clone());
        match tokio::time::timeout(self.timeout, self.client.request(request)).await {
            Err(_) => Err(UpstreamFailure::Timeout),
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(classify(&e)),
        }
    }
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
                std::io::ErrorKind::TimedOut => return UpstreamFailure::Timeout,
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
        rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)
        | rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForNameContext { .. }) => {
            "the server certificate is not valid for this host name (use the name or IP the certificate was issued for, or pin PVE_TLS_FINGERPRINT)".into()
        }
        other => other.to_string(),
    }
}

impl std::fmt::Display for UpstreamFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamFailure::Timeout => f.write_str("timed out waiting for Proxmox"),
            UpstreamFailure::Refused(s) => write!(f, "connection refused: {s}"),
            UpstreamFailure::Dns(s) => write!(f, "host name lookup failed: {s}"),
            UpstreamFailure::Tls(s) => write!(f, "TLS certificate verification failed: {s}"),
            UpstreamFailure::Other(s) => write!(f, "{s}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::Fingerprint;

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
    fn refused_connection_is_recognised() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(matches!(classify(&io), UpstreamFailure::Refused(_)));
    }
}
