//! The one admission of a request at the egress edge, shared by the
//! in-process wasi:http hook and `pve-mcp egress-proxy`, so both keep the
//! same record, apply the same gate decision and the same body rules.

use bytes::Bytes;
use http::{Method, Uri};
use http_body_util::{BodyExt, Limited};

use super::access::Access;
use super::binding::Binding;
use super::gate::{ClusterIndex, Denial, Gate};
use super::record::EgressRecord;
use super::sent;
use crate::endpoint::API_PREFIX;
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

/// Reads the parameters of a request the gate guards (a write's query
/// and its form or JSON `body`; a guarded read's query), records them in
/// `record`, and decides them against the call's `binding`: each one
/// declared by a route that admits the request, with a value bound to the
/// call's arguments or to what its earlier writes were answered with; a
/// once-only route not sent before; and, for a call a person approved,
/// the request the plan names next. Other reads pass with what they carry.
pub fn admit_params(
    gate: &Gate,
    record: &mut EgressRecord,
    head: &http::request::Parts,
    body: &[u8],
    binding: &Binding,
) -> Result<(), Denial> {
    let method = &head.method;
    if !Gate::guards(method, &head.uri) {
        return Ok(());
    }
    let content_type = head.headers.get(http::header::CONTENT_TYPE);
    let params =
        sent::read(method, head.uri.query(), content_type, body).map_err(Denial::Params)?;
    let api_path = head
        .uri
        .path()
        .get(API_PREFIX.len() - 1..)
        .unwrap_or_default();
    record.params = Some(sent::recorded(api_path, &params));
    let answered = |field: &str, value: &str| binding.history.answered(field, value);
    let admitted = gate.check_params(method, &head.uri, &params, &binding.writes, &answered)?;
    // A plan holds the writes; the reads between them are the call's own.
    if let Some(plan) = binding.plan.as_deref().filter(|_| *method != Method::GET) {
        plan.admit(method, api_path, &params)
            .map_err(Denial::Plan)?;
    }
    if let Some(index) = admitted
        && binding.writes[index].is_once()
        && !binding.history.send_once(index)
    {
        return Err(Denial::Once);
    }
    Ok(())
}
