//! Certificates laid out like PVE's: a cluster CA (`pve-root-ca.pem`) and a
//! node certificate signed by it (`pve-ssl.pem`); and the bad certificates
//! the certificate faults present.

use std::sync::Arc;

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, date_time_ymd,
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
    /// What the certificate faults present.
    pub bad: BadCertificates,
}

/// Server configurations with a bad certificate each, for the certificate
/// faults ([`crate::FaultKind`]).
pub(crate) struct BadCertificates {
    /// The cluster CA's, for the right names, expired on 2020-01-01.
    pub expired: Arc<rustls::ServerConfig>,
    /// For the right names, from a CA of its own that nobody trusts.
    pub untrusted: Arc<rustls::ServerConfig>,
    /// The cluster CA's, for `other-host.invalid` only.
    pub wrong_name: Arc<rustls::ServerConfig>,
}

/// The names the node certificate is issued for, as PVE clients use them.
fn node_names() -> anyhow::Result<Vec<SanType>> {
    Ok(vec![
        SanType::DnsName("localhost".try_into()?),
        SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])),
        SanType::DnsName("pve1".try_into()?),
        SanType::DnsName("pve1.demo-cluster.invalid".try_into()?),
    ])
}

pub(crate) fn generate() -> anyhow::Result<TlsMaterial> {
    let (ca_key, ca) = ca_params("0b6c6ef6-2b5e-4a5b-9a51-3f0c2d7e8a41")?;
    let ca_cert = ca.self_signed(&ca_key).context("self-signing CA")?;
    let secret: [u8; 32] = Sha256::digest(ca_key.serialize_der()).into();
    let issuer = Issuer::new(ca, ca_key);
    let (leaf_cert, leaf_key) = leaf(&issuer, node_names()?, None)?;
    let leaf_der: CertificateDer<'static> = leaf_cert.der().clone();
    let fingerprint = fingerprint(&leaf_der);
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));

    let config = server_config(leaf_der, key_der)?;
    let bad = bad_certificates(&issuer)?;

    Ok(TlsMaterial {
        ca_pem: ca_cert.pem(),
        fingerprint,
        config,
        secret,
        bad,
    })
}

/// A cluster CA's key and parameters; `unit` tells two CAs apart.
fn ca_params(unit: &str) -> anyhow::Result<(KeyPair, CertificateParams)> {
    let ca_key = KeyPair::generate().context("generating CA key")?;
    let mut ca = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "Proxmox Virtual Environment");
    dn.push(DnType::OrganizationalUnitName, unit);
    dn.push(DnType::OrganizationName, "PVE Cluster Manager CA");
    ca.distinguished_name = dn;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok((ca_key, ca))
}

/// A node certificate for `names`, signed by `issuer`; `validity` (not
/// before, not after) overrides rcgen's far-reaching default.
fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    names: Vec<SanType>,
    validity: Option<(Ymd, Ymd)>,
) -> anyhow::Result<(rcgen::Certificate, KeyPair)> {
    let leaf_key = KeyPair::generate().context("generating node key")?;
    let mut leaf = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationalUnitName, "PVE Cluster Node");
    dn.push(DnType::OrganizationName, "Proxmox Virtual Environment");
    dn.push(DnType::CommonName, "pve1.demo-cluster.invalid");
    leaf.distinguished_name = dn;
    leaf.subject_alt_names = names;
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyAgreement,
    ];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.use_authority_key_identifier_extension = true;
    if let Some((from, to)) = validity {
        leaf.not_before = date_time_ymd(from.0, from.1, from.2);
        leaf.not_after = date_time_ymd(to.0, to.1, to.2);
    }
    let cert = leaf
        .signed_by(&leaf_key, issuer)
        .context("signing node certificate")?;
    Ok((cert, leaf_key))
}

/// A date as (year, month, day).
type Ymd = (i32, u8, u8);

fn server_config(
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .context("TLS server certificate")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn bad_certificates(cluster_ca: &Issuer<'_, KeyPair>) -> anyhow::Result<BadCertificates> {
    let config = |(cert, key): (rcgen::Certificate, KeyPair)| {
        server_config(
            cert.der().clone(),
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    };
    let expired = config(leaf(
        cluster_ca,
        node_names()?,
        Some(((2019, 1, 1), (2020, 1, 1))),
    )?)?;
    let (other_key, other_ca) = ca_params("a-machine-in-the-middle")?;
    let other_ca = Issuer::new(other_ca, other_key);
    let untrusted = config(leaf(&other_ca, node_names()?, None)?)?;
    let wrong_name = config(leaf(
        cluster_ca,
        vec![SanType::DnsName("other-host.invalid".try_into()?)],
        None,
    )?)?;
    Ok(BadCertificates {
        expired,
        untrusted,
        wrong_name,
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
