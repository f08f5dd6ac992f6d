//! The one admission of a request at the egress edge, shared by the
//! in-process wasi:http hook and `pve-mcp egress-proxy`, so both keep the
//! same record, apply the same gate decision and the same body rules.

use bytes::Bytes;
use http::{Method, Uri};
use http_body_util::{BodyExt, Limited};

use super::access::Access;
use super::gate::{ClusterIndex, Denial, Gate};
use super::record::EgressRecord;
use crate::route::BoundRoute;

/// Request bodies above this are refused; Proxmox's own limit is 512 KiB.
pub const MAX_REQUEST_BODY: usize = 512 << 10;

/// Decides a request's head for a call with this `access`, bound to
/// `cluster` and, for writes, to `writes`: its record (before any decision)
/// and the cluster it may go to, or why not. Synchronous, so a refusal is
/// on record before anything else of the request is read.
pub fn admit_head(
    gate: &Gate,
    method: &Method,
    uri: &Uri,
    access: Access,
    cluster: Option<ClusterIndex>,
    writes: &[BoundRoute],
) -> (EgressRecord, Result<ClusterIndex, Denial>) {
    let record = EgressRecord::of(gate, method, uri, cluster);
    let verdict = gate.check(method, uri, access, cluster, writes);
    (record, verdict)
}

/// Reads an admitted request's body whole (buffered: a streamed GET body
/// races hyper's keep-alive reuse, and the checks need it whole), refusing
/// one over [`MAX_REQUEST_BODY`] and any body on a GET, which Proxmox never
/// accepts.
pub async fn admit_body<B>(method: &Method, body: B) -> Result<Bytes, Denial>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let body = match Limited::new(body, MAX_REQUEST_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Err(Denial::BodyTooLarge),
    };
    if *method == Method::GET && !body.is_empty() {
        return Err(Denial::BodyOnGet);
    }
    Ok(body)
}
