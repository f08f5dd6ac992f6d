//! Which Proxmox VE release answers: some API shapes differ between
//! majors (PVE 9 replaced HA groups with rules, and wants new pool names
//! to start with a letter).

use crate::api::Pve;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;

/// The major release `GET /version` reports (`9` of `9.1.5`); `None` when
/// it says none that reads as one.
pub fn major(pve: &mut dyn Pve) -> Result<Option<u32>, ToolError> {
    let version = fetch::object(pve, &ApiPath::new("version"))?;
    Ok(pj::text(version.get("release"))
        .or_else(|| pj::text(version.get("version")))
        .and_then(|v| v.split('.').next().and_then(|m| m.parse::<u32>().ok())))
}
