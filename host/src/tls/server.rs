//! TLS for the MCP endpoint itself: a PEM certificate chain and key,
//! rustls with the ring provider the host already uses for Proxmox.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::ConfigError;

/// The certificate and key the MCP endpoint serves TLS with.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// Where they were configured, for error messages.
    pub cert_key: String,
    /// Where the key was configured, for error messages.
    pub key_key: String,
}

/// The endpoint's TLS, built once when the configuration is read, so a bad
/// file stops the start and serving never reads the files again.
#[derive(Clone)]
pub struct ServerTls {
    config: Arc<ServerConfig>,
    /// For Debug: which certificate, never the key.
    cert: PathBuf,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert", &self.cert)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Reads and checks the files: a bad one is an error naming its key.
    pub fn load(files: &TlsFiles) -> Result<ServerTls, ConfigError> {
        Ok(ServerTls {
            config: server_config(files)?,
            cert: files.cert.clone(),
        })
    }

    /// The rustls configuration to accept connections with.
    pub fn config(&self) -> Arc<ServerConfig> {
        self.config.clone()
    }
}

/// The rustls server configuration for these files; a bad file is a
/// configuration error naming its key. Private: only [`ServerTls::load`]
/// reads the files, once.
fn server_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, ConfigError> {
    let cert_err = |problem: String| ConfigError {
        key: files.cert_key.clone(),
        problem,
        fix: "point it at a PEM file with the server certificate first, then its intermediates"
            .into(),
    };
    let key_err = |problem: String| ConfigError {
        key: files.key_key.clone(),
        problem,
        fix: "point it at the PEM private key (PKCS#8, PKCS#1 or SEC1) of the certificate".into(),
    };
    let cert_pem = std::fs::read(&files.cert)
        .map_err(|e| cert_err(format!("cannot read {}: {e}", files.cert.display())))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| {
            cert_err(format!(
                "{}: not a PEM certificate ({e})",
                files.cert.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(cert_err(format!(
            "{}: no certificate in the file",
            files.cert.display()
        )));
    }
    let key_pem = std::fs::read(&files.key)
        .map_err(|e| key_err(format!("cannot read {}: {e}", files.key.display())))?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        key_err(format!(
            "{}: no private key found ({e})",
            files.key.display()
        ))
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| cert_err(format!("TLS setup failed: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| key_err(format!("the key does not fit the certificate: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &std::path::Path, cert: &str, key: &str) -> TlsFiles {
        std::fs::write(dir.join("c.pem"), cert).unwrap();
        std::fs::write(dir.join("k.pem"), key).unwrap();
        TlsFiles {
            cert: dir.join("c.pem"),
            key: dir.join("k.pem"),
            cert_key: "MCP_TLS_CERT".into(),
            key_key: "MCP_TLS_KEY".into(),
        }
    }

    #[test]
    fn a_generated_pair_loads_and_mismatches_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let a = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let b = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let ok = files(dir.path(), &a.cert.pem(), &a.signing_key.serialize_pem());
        let tls = ServerTls::load(&ok).unwrap();
        let shown = format!("{tls:?}");
        assert!(
            shown.contains("c.pem") && !shown.contains("PRIVATE"),
            "{shown}"
        );
        let mismatch = files(dir.path(), &a.cert.pem(), &b.signing_key.serialize_pem());
        assert_eq!(server_config(&mismatch).unwrap_err().key, "MCP_TLS_KEY");
        let garbage = files(dir.path(), "nope", &a.signing_key.serialize_pem());
        assert_eq!(server_config(&garbage).unwrap_err().key, "MCP_TLS_CERT");
    }
}
