//! `hostile_stop` (issue 24): a component that may stop one task tries
//! to stop another, then its own (the control), then its own again. The
//! route names the call's `upid` and is declared once-only, so only the
//! control may reach Proxmox.

use serde_json::{Value, json};

use crate::args::Args;
use crate::base::Base;
use crate::egress::Limits;

/// Runs `hostile_stop` with `args` (`upid`, `other`, optional `node`).
pub fn run(base: &Base, limits: &Limits, args: &Args) -> Result<Value, String> {
    let upid = args.str_or("upid", "")?;
    let other = args.str_or("other", "")?;
    let node = match args.str_or("node", "")? {
        n if n.is_empty() => upid.split(':').nth(1).unwrap_or("pve1").to_owned(),
        n => n,
    };
    let stop = |upid: &str| {
        let escaped: String = upid
            .replace(':', "%3A")
            .replace('@', "%40")
            .replace('!', "%21");
        format!("/api2/json/nodes/{node}/tasks/{escaped}")
    };
    let delete = || crate::routes::method("DELETE");
    let attempts = crate::routes::attempts(
        base,
        limits,
        vec![
            ("another task", delete(), stop(&other)),
            ("control", delete(), stop(&upid)),
            ("a second stop", delete(), stop(&upid)),
        ],
    );
    Ok(json!({ "attempts": attempts }))
}
