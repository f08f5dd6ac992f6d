//! Which storages of a node take a kind of content (`images`, `rootdir`,
//! `backup`, `iso`, `vztmpl`, ...): what a tool that puts a volume on a
//! storage checks before sending anything, since Proxmox would otherwise
//! refuse it only after starting a task, or not at all.

use crate::api::Pve;
use crate::error::{ToolError, listed, quoted};
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;

/// The enabled storages on `node` that take `content`, by name.
pub fn taking(pve: &mut dyn Pve, node: &str, content: &str) -> Result<Vec<String>, ToolError> {
    let path = ApiPath::new("nodes")
        .seg(node)
        .lit("storage")
        .query("content", content);
    Ok(fetch::list(pve, &path)?
        .iter()
        .filter(|s| pj::flag(s.get("enabled")) || s.get("enabled").is_none())
        .filter_map(|s| pj::text(s.get("storage")))
        .collect())
}

/// Refuses `storage` (the argument `field`) unless it takes `content` on
/// `node`, naming the ones that do; `what` says the content in words
/// (`backups`, `VM disks`).
pub fn require(
    pve: &mut dyn Pve,
    field: &str,
    node: &str,
    storage: &str,
    content: &str,
    what: &str,
) -> Result<(), ToolError> {
    let storages = taking(pve, node, content)?;
    if storages.iter().any(|s| s == storage) {
        return Ok(());
    }
    Err(ToolError::field(
        field,
        format!(
            "{} does not take {what} ({content}) on node {node}; the storages there that do \
             are {}",
            quoted(storage, 64),
            listed(&storages)
        ),
    ))
}

/// Whether `storage` on `node` holds `volid` among its `content` volumes.
pub fn holds(
    pve: &mut dyn Pve,
    node: &str,
    storage: &str,
    content: &str,
    volid: &str,
) -> Result<bool, ToolError> {
    let path = ApiPath::new("nodes")
        .seg(node)
        .lit("storage")
        .seg(storage)
        .lit("content")
        .query("content", content);
    Ok(fetch::list(pve, &path)?
        .iter()
        .any(|e| pj::text(e.get("volid")).as_deref() == Some(volid)))
}
