//! End-to-end tests over real HTTPS: a hyper client that trusts only the
//! simulator's CA talks to a running simulator.

mod agent;
mod auth;
mod calls;
mod cloudinit;
mod disk_moves;
mod disks_ceph;
mod endpoints;
mod faults;
mod firewall;
mod ha;
mod network;
mod node_health;
mod pools;
mod reads;
mod replication;
mod shapes;
mod storage_writes;
mod transport;
mod writes;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::state::{GuestKind, RunState};
use crate::tokens::*;
use crate::*;

pub(super) const ADMIN: &str = "PVEAPIToken=root@pam!mcp=5d3b1f2e-8c4a-4e6f-9b7d-0a1c2e3f4a5b";
pub(super) const AUDITOR: &str = "PVEAPIToken=auditor@pve!mcp=9e8d7c6b-5a49-4382-a716-f5e4d3c2b1a0";

pub(super) struct Resp {
    pub status: u16,
    pub reason: Option<String>,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn data(&self) -> Value {
        assert_eq!(
            self.status, 200,
            "reason {:?} body {:?}",
            self.reason, self.body
        );
        self.json()["data"].clone()
    }
}

pub(super) fn connector(sim: &Simulator) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_slice(sim.ca_pem().as_bytes()).expect("CA PEM");
    roots.add(ca).expect("add CA");
    let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    TlsConnector::from(Arc::new(cfg))
}

pub(super) async fn tls_stream(sim: &Simulator, host: &str) -> TlsStream<TcpStream> {
    let tcp = TcpStream::connect(("127.0.0.1", sim.port()))
        .await
        .expect("connect");
    let name = ServerName::try_from(host.to_string()).expect("server name");
    connector(sim)
        .connect(name, tcp)
        .await
        .expect("TLS handshake verifies against the CA")
}

pub(super) async fn send(
    sim: &Simulator,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, &[u8])>,
) -> Resp {
    let tls = tls_stream(sim, "localhost").await;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("http handshake");
    tokio::spawn(conn);
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let payload = match body {
        Some((ctype, bytes)) => {
            b = b.header("content-type", ctype);
            Bytes::copy_from_slice(bytes)
        }
        None => Bytes::new(),
    };
    let req = b.body(Full::new(payload)).expect("request");
    let resp = sender.send_request(req).await.expect("response");
    let reason = resp
        .extensions()
        .get::<hyper::ext::ReasonPhrase>()
        .map(|r| String::from_utf8_lossy(r.as_bytes()).into_owned());
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    Resp {
        status,
        reason,
        headers,
        body,
    }
}

pub(super) async fn get(sim: &Simulator, path: &str, auth: &str) -> Resp {
    send(sim, "GET", path, &[("authorization", auth)], None).await
}

pub(super) async fn start() -> Simulator {
    Simulator::start(SimConfig::default()).await.expect("start")
}

/// The PVE API schema; without it the validating tests skip, or fail
/// under CI.
pub(super) use crate::testing::schema_if_present as schema_path;

pub(super) fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}
