//! `/storage`, `/nodes/{node}/storage` and storage content.

use serde_json::{Map, Value};

use super::{Ctx, pbool};
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::state::Storage;

/// The PBS verify job that checked the verified backups.
const VERIFY_UPID: &str =
    "UPID:pbs:000011A2:00F0C3B1:00000002:6B0A5E10:verificationjob:main\\x3av\\x2dnightly:root@pam:";

/// Digest of `storage.cfg` (one for the whole file).
const STORAGE_CFG_DIGEST: &str = "5f0c2d8a91b7e3c4d6a8f0e2b4c6d8e0a2c4e6f8";

fn may_see(ctx: &Ctx<'_>, id: &str) -> bool {
    let path = format!("/storage/{id}");
    ctx.can(&path, "Datastore.Audit") || ctx.can(&path, "Datastore.AllocateSpace")
}

fn enabled_on(s: &Storage, node: &str) -> bool {
    s.nodes.as_ref().is_none_or(|l| l.iter().any(|n| n == node))
}

/// `GET /storage`: the `storage.cfg` entries.
pub(crate) fn config_index(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let ty = ctx.params.get("type");
    let mut list: Vec<&Storage> = c
        .storages
        .iter()
        .filter(|s| ty.is_none_or(|t| t == s.plugintype))
        .filter(|s| may_see(ctx, &s.id))
        .collect();
    list.sort_by(|a, b| a.id.cmp(&b.id));
    let out = list
        .into_iter()
        .map(|s| {
            let mut m = Map::new();
            m.insert("storage".into(), s.id.clone().into());
            m.insert("type".into(), s.plugintype.into());
            m.insert("content".into(), s.content.into());
            m.insert("digest".into(), STORAGE_CFG_DIGEST.into());
            for (k, v) in &s.extra {
                m.insert((*k).into(), (*v).into());
            }
            if s.shared {
                m.insert("shared".into(), 1.into());
            }
            if let Some(nodes) = &s.nodes {
                m.insert("nodes".into(), nodes.join(",").into());
            }
            Value::Object(m)
        })
        .collect();
    Ok(Reply::Data(Value::Array(out)))
}

/// `GET /nodes/{node}/storage`: status per storage on the executing node.
pub(crate) fn node_index(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let p = ctx.params;
    let wanted: Option<Vec<&str>> = p.get("content").map(|v| {
        v.split([',', ';', ' ', '\0'])
            .filter(|s| !s.is_empty())
            .collect()
    });
    let mut list: Vec<&Storage> = c
        .storages
        .iter()
        .filter(|s| enabled_on(s, ctx.node))
        .filter(|s| p.get("storage").is_none_or(|id| id == s.id))
        .filter(|s| {
            wanted
                .as_ref()
                .is_none_or(|w| s.content.split(',').any(|ct| w.contains(&ct)))
        })
        .filter(|s| may_see(ctx, &s.id))
        .collect();
    list.sort_by(|a, b| a.id.cmp(&b.id));
    let out = list
        .into_iter()
        .map(|s| {
            let used = s.used.get(ctx.node).copied().unwrap_or(0);
            let mut m = Map::new();
            m.insert("storage".into(), s.id.clone().into());
            m.insert("type".into(), s.plugintype.into());
            m.insert("content".into(), s.content.into());
            m.insert("active".into(), 1.into());
            m.insert("enabled".into(), 1.into());
            m.insert("shared".into(), pbool(s.shared));
            m.insert("total".into(), s.total.into());
            m.insert("used".into(), used.into());
            m.insert("avail".into(), s.total.saturating_sub(used).into());
            m.insert(
                "used_fraction".into(),
                (used as f64 / s.total.max(1) as f64).into(),
            );
            Value::Object(m)
        })
        .collect();
    Ok(Reply::Data(Value::Array(out)))
}

/// `GET /nodes/{node}/storage/{storage}/content`.
pub(crate) fn content(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let id = ctx.params.path("storage");
    let Some(s) = c.storages.iter().find(|s| s.id == id) else {
        return Err(ApiError::new(
            500,
            format!("storage '{id}' does not exist\n"),
        ));
    };
    if !enabled_on(s, ctx.node) {
        return Err(ApiError::new(
            500,
            format!("storage '{id}' is not available on node '{}'\n", ctx.node),
        ));
    }
    let content = ctx.params.get("content");
    let vmid: Option<u32> = ctx.params.get("vmid").and_then(|v| v.parse().ok());
    let allocate = ctx.can(&format!("/storage/{id}"), "Datastore.Allocate");
    let mut list: Vec<_> = c
        .volumes
        .iter()
        .filter(|v| v.storage == id)
        .filter(|v| v.node.as_deref().is_none_or(|n| n == ctx.node))
        .filter(|v| content.is_none_or(|ct| ct == v.content))
        .filter(|v| vmid.is_none_or(|id| v.vmid == Some(id)))
        // check_volume_access: guest-owned volumes need access to the guest.
        .filter(|v| {
            allocate
                || v.vmid
                    .is_none_or(|id| ctx.can(&format!("/vms/{id}"), "VM.Audit"))
        })
        .collect();
    list.sort_by_key(|v| v.volid.to_ascii_lowercase());
    let out = list
        .into_iter()
        .map(|v| {
            let mut m = Map::new();
            m.insert("volid".into(), v.volid.clone().into());
            m.insert("content".into(), v.content.into());
            m.insert("format".into(), v.format.into());
            m.insert("size".into(), v.size.into());
            if let Some(t) = v.ctime {
                m.insert("ctime".into(), t.into());
            }
            if let Some(id) = v.vmid {
                m.insert("vmid".into(), id.into());
            }
            if let Some(n) = &v.notes {
                m.insert("notes".into(), n.clone().into());
            }
            if v.protected {
                m.insert("protected".into(), 1.into());
            }
            if let Some(st) = v.subtype {
                m.insert("subtype".into(), st.into());
            }
            if let Some(state) = v.verification {
                m.insert(
                    "verification".into(),
                    serde_json::json!({"state": state, "upid": VERIFY_UPID}),
                );
            }
            if let Some(fp) = v.encrypted {
                m.insert("encrypted".into(), fp.into());
            }
            Value::Object(m)
        })
        .collect();
    Ok(Reply::Data(Value::Array(out)))
}
