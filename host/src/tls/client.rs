//! TLS to Proxmox: public roots, the cluster's own CA, a pinned certificate
//! fingerprint, or (loudly) no verification.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};

/// How the host verifies a cluster's certificate.
#[derive(Clone)]
pub enum TlsMode {
    /// Public web PKI roots plus the system's roots.
    WebPki,
    /// Only this CA (PEM), e.g. the cluster's `pve-root-ca.pem`.
    CaPem(Vec<u8>),
    /// Exactly this end-entity certificate; the chain is not checked.
    Fingerprint(Fingerprint),
    /// No verification at all (`PVE_VERIFY_SSL=false`).
    Insecure,
}

impl fmt::Debug for TlsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsMode::WebPki => f.write_str("WebPki"),
            TlsMode::CaPem(_) => f.write_str("CaPem"),
            TlsMode::Fingerprint(fp) => write!(f, "Fingerprint({fp})"),
            TlsMode::Insecure => f.write_str("Insecure"),
        }
    }
}

/// A SHA-256 certificate fingerprint.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// Parses `AA:BB:...` as Proxmox shows it; case and separators (`:`,
    /// spaces) are forgiven, the length is not.
    pub fn parse(text: &str) -> Result<Fingerprint, String> {
        let hex: String = text
            .trim()
            .trim_start_matches("sha256:")
            .chars()
            .filter(|c| !matches!(c, ':' | ' ' | '-'))
            .collect();
        // Every character checked before any is sliced: a multi-byte one
        // would otherwise split at a byte that is not a character boundary.
        if let Some(c) = hex.chars().find(|c| !c.is_ascii_hexdigit()) {
            return Err(format!(
                "{c:?} is not a hexadecimal digit; a SHA-256 fingerprint is 64 hex digits, optionally in pairs separated by ':'"
            ));
        }
        if hex.len() != 64 {
            return Err(format!(
                "a SHA-256 fingerprint has 32 bytes (64 hex digits); got {} hex digits",
                hex.len()
            ));
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|_| format!("{:?} is not hexadecimal", &hex[2 * i..2 * i + 2]))?;
        }
        Ok(Fingerprint(out))
    }

    /// The fingerprint of a DER certificate.
    pub fn of(der: &[u8]) -> Fingerprint {
        Fingerprint(Sha256::digest(der).into())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02X}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Checks that a PEM holds at least one certificate.
pub fn parse_ca_pem(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("not a PEM certificate file ({e})"))?;
    if certs.is_empty() {
        return Err("no certificate found in the file".into());
    }
    Ok(certs)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls client configuration for a mode.
pub fn client_config(mode: &TlsMode) -> anyhow::Result<ClientConfig> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let config = match mode {
        TlsMode::WebPki => {
            let mut roots = RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            // System roots matter for clusters behind an internal CA that the
            // OS already trusts; unreadable ones are skipped.
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        TlsMode::CaPem(pem) => {
            let mut roots = RootCertStore::empty();
            for cert in parse_ca_pem(pem).map_err(anyhow::Error::msg)? {
                roots.add(cert)?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        TlsMode::Fingerprint(fp) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PinnedVerifier {
                expected: Some(*fp),
                algorithms: provider.signature_verification_algorithms,
            }))
            .with_no_client_auth(),
        TlsMode::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PinnedVerifier {
                expected: None,
                algorithms: provider.signature_verification_algorithms,
            }))
            .with_no_client_auth(),
    };
    Ok(config)
}

/// The error a pin mismatch carries; its text reaches the agent and the log.
#[derive(Debug, thiserror::Error)]
#[error("certificate fingerprint mismatch: expected {expected}, server presented {seen}")]
pub struct FingerprintMismatch {
    /// The configured fingerprint.
    pub expected: Fingerprint,
    /// What the server presented.
    pub seen: Fingerprint,
}

/// Accepts exactly one end-entity certificate, by SHA-256 of its DER, or
/// (with no pin, for `PVE_VERIFY_SSL=false`) any certificate. Either way the
/// handshake signature is still verified, so a server must hold the key of
/// the certificate it shows.
#[derive(Debug)]
struct PinnedVerifier {
    expected: Option<Fingerprint>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(expected) = self.expected else {
            return Ok(ServerCertVerified::assertion());
        };
        let seen = Fingerprint::of(end_entity);
        if seen == expected {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Other(rustls::OtherError(Arc::new(
                    FingerprintMismatch { expected, seen },
                ))),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PVE_STYLE: &str = "80:D4:F2:DF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:77:99:69:F5";

    #[test]
    fn fingerprint_round_trips_in_pve_format() {
        let fp = Fingerprint::parse(PVE_STYLE).unwrap();
        assert_eq!(fp.to_string(), PVE_STYLE);
        let lower = Fingerprint::parse(&PVE_STYLE.to_lowercase().replace(':', "")).unwrap();
        assert_eq!(fp, lower);
    }

    #[test]
    fn fingerprint_errors_say_what_is_wrong() {
        assert!(
            Fingerprint::parse("80:D4")
                .unwrap_err()
                .contains("64 hex digits")
        );
        let bad = PVE_STYLE.replace("80", "ZZ");
        assert!(
            Fingerprint::parse(&bad)
                .unwrap_err()
                .contains("'Z' is not a hexadecimal digit")
        );
        // Found by fuzz_config_environment: 64 bytes of multi-byte
        // characters used to panic on a slice inside a character.
        let wide = "a\u{10000}\u{800}\u{800}!0\u{a1}!".to_string() + &"a".repeat(48);
        assert!(
            Fingerprint::parse(&wide)
                .unwrap_err()
                .contains("is not a hexadecimal digit"),
            "{wide:?}"
        );
    }

    #[test]
    fn fingerprint_of_hashes_der() {
        // SHA-256 of the empty input, a fixed known value.
        assert_eq!(
            Fingerprint::of(b"").to_string(),
            "E3:B0:C4:42:98:FC:1C:14:9A:FB:F4:C8:99:6F:B9:24:27:AE:41:E4:64:9B:93:4C:A4:95:99:1B:78:52:B8:55"
        );
    }

    #[test]
    fn mismatch_message_names_both_fingerprints() {
        let m = FingerprintMismatch {
            expected: Fingerprint::parse(PVE_STYLE).unwrap(),
            seen: Fingerprint::of(b""),
        };
        let text = m.to_string();
        assert!(
            text.contains(PVE_STYLE) && text.contains("E3:B0:C4"),
            "{text}"
        );
    }

    #[test]
    fn ca_pem_must_hold_a_certificate() {
        assert!(parse_ca_pem(b"not pem").is_err());
        assert!(parse_ca_pem(b"").is_err());
    }

    #[test]
    fn every_mode_builds() {
        for mode in [
            TlsMode::WebPki,
            TlsMode::Fingerprint(Fingerprint::of(b"x")),
            TlsMode::Insecure,
        ] {
            client_config(&mode).unwrap();
        }
    }
}
