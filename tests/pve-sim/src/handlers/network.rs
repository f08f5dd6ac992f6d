//! `GET /nodes/{node}/network` and `GET /nodes/{node}/network/{iface}`
//! (pve-manager's `PVE::API2::Network`): the node's interfaces as
//! `/etc/network/interfaces.new` (when there are pending changes) or
//! `/etc/network/interfaces` define them, `lo` left out; the list answer
//! carries the pending changes as a diff in a top-level `changes`, next to
//! `data`, as `set_result_attrib` puts it.

use serde_json::{Map, Value};

use super::Ctx;
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::ifaces;
use crate::state::NodeNetwork;

/// The interfaces as the node reads them (pending file first).
fn current(net: &NodeNetwork) -> Vec<(String, Map<String, Value>)> {
    ifaces::parse(net.pending.as_deref().unwrap_or(&net.applied), net)
}

fn is_bridge(d: &Map<String, Value>) -> bool {
    matches!(
        d.get("type").and_then(Value::as_str),
        Some("bridge" | "OVSBridge")
    )
}

/// `GET /nodes/{node}/network[?type=...]`. Bridges show only to callers
/// with `SDN.Audit` or `SDN.Use` on the `localnetwork` zone's bridge.
pub(crate) fn index(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let Some(net) = c.networks.get(ctx.node) else {
        return Ok(Reply::Data(Value::Array(Vec::new())));
    };
    let filter = ctx.params.get("type");
    let out: Vec<Value> = current(net)
        .into_iter()
        .filter(|(name, _)| name != "lo")
        .filter(|(_, d)| match filter {
            None | Some("include_sdn") => true,
            Some("any_bridge" | "any_local_bridge") => is_bridge(d),
            Some(t) => d.get("type").and_then(Value::as_str) == Some(t),
        })
        .filter(|(name, d)| {
            let path = format!("/sdn/zones/localnetwork/{name}");
            !is_bridge(d) || ctx.can(&path, "SDN.Audit") || ctx.can(&path, "SDN.Use")
        })
        .map(|(name, mut d)| {
            d.insert("iface".into(), name.into());
            Value::Object(d)
        })
        .collect();
    let changes = net.pending.as_deref().and_then(|new| {
        ifaces::unified_diff(
            ("/etc/network/interfaces", net.mtimes.0, &net.applied),
            ("/etc/network/interfaces.new", net.mtimes.1, new),
        )
    });
    let data = Value::Array(out);
    Ok(match changes {
        Some(diff) => {
            let mut attrs = Map::new();
            attrs.insert("changes".into(), diff.into());
            Reply::DataWith(data, attrs)
        }
        None => Reply::Data(data),
    })
}

/// `GET /nodes/{node}/network/{iface}`: one entry, without `iface`.
pub(crate) fn iface(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let name = ctx.params.path("iface");
    let found = c
        .networks
        .get(ctx.node)
        .and_then(|net| current(net).into_iter().find(|(n, _)| n == name));
    match found {
        Some((_, d)) => Ok(Reply::Data(Value::Object(d))),
        None => Err(ApiError::param("iface", "interface does not exist")),
    }
}
