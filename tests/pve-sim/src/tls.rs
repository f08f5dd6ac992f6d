//! Certificates laid out like PVE's: a cluster CA (`pve-root-ca.pem`) and a
//! node certificate signed by it (`pve-ssl.pem`).

use std::sync::Arc;

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};

pub(crate) struct TlsMaterial {
    pub ca_pem: String,
    pub fingerprint: String,
    pub config: Arc<rustls::ServerConfig>,
    /// Per-run secret for ticket and CSRF signatures, derived from the fresh
    /// CA key so no extra randomness source is needed.
    pub secret: [u8; 32],
}

pub(crate) fn generate() -> anyhow::Result<TlsMaterial> {
    let ca_key = KeyPair::generate().context("generating CA key")?;
    let mut ca = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "Proxmox Virtual Environment");
    dn.push(
        DnType::OrganizationalUnitName,
        "0b6c6ef6-2b5e-4a5b-9a51-3f0c2d7e8a41",
    );
    dn.push(DnType::OrganizationName, "PVE Cluster Manager CA");
    ca.distinguished_name = dn;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).context("self-signing CA")?;
    let secret: [u8; 32] = Sha256::digest(ca_key.serialize_der()).into();
    let issuer = Issuer::new(ca, ca_key);

    let leaf_key = KeyPair::generate().context("generating node key")?;
    let mut leaf = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationalUnitName, "PVE Cluster Node");
    dn.push(DnType::OrganizationName, "Proxmox Virtual Environment");
    dn.push(DnType::CommonName, "pve1.demo-cluster.invalid");
    leaf.distinguished_name = dn;
    leaf.subject_alt_names = vec![
        SanType::DnsName("localhost".try_into()?),
        SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])),
        SanType::DnsName("pve1".try_into()?),
        SanType::DnsName("pve1.demo-cluster.invalid".try_into()?),
    ];
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyAgreement,
    ];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.use_authority_key_identifier_extension = true;
    let leaf_cert = leaf
        .signed_by(&leaf_key, &issuer)
        .context("signing node certificate")?;

    let leaf_der: CertificateDer<'static> = leaf_cert.der().clone();
    let fingerprint = fingerprint(&leaf_der);
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(vec![leaf_der], key_der)
        .context("TLS server certificate")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];

    Ok(TlsMaterial {
        ca_pem: ca_cert.pem(),
        fingerprint,
        config: Arc::new(config),
        secret,
    })
}

/// Upper-case SHA-256 hex pairs joined by `:`, the format of PVE's
/// `ssl_fingerprint`.
pub(crate) fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}
