//! `/access/ticket`: ticket login and renewal.

use serde_json::{Value, json};

use super::Ctx;
use crate::auth::{
    TicketKey, capabilities, issue_csrf, issue_ticket, user_identity, verify_ticket,
};
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::perms::Acl;

/// PVE's dummy GET (for formatters that render a login page).
pub(crate) fn get_ticket(_ctx: &Ctx<'_>) -> HandlerResult {
    Ok(Reply::Data(Value::Null))
}

/// Logs in with a password, or renews with a still-valid ticket passed as
/// the password.
pub(crate) fn create_ticket(ctx: &Ctx<'_>) -> HandlerResult {
    let fail = || ApiError::new(401, "authentication failure\n");
    let mut username = ctx.params.path("username").to_string();
    if !username.contains('@')
        && let Some(realm) = ctx.params.get("realm")
    {
        username = format!("{username}@{realm}");
    }
    let password = ctx.params.path("password");
    let c = ctx.cluster();
    let user = c
        .users
        .iter()
        .find(|u| u.userid == username)
        .ok_or_else(fail)?;
    let key = TicketKey {
        secret: &ctx.shared.secret,
        lifetime: ctx.shared.cfg.ticket_lifetime,
    };
    let by_password = user.password.as_deref() == Some(password);
    let by_ticket = password.starts_with("PVE:")
        && verify_ticket(password, key).as_deref() == Some(user.userid.as_str());
    if !by_password && !by_ticket {
        return Err(fail());
    }
    let ident = user_identity(&user.userid, &c).ok_or_else(fail)?;
    ctx.shared
        .logins
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let mut data = json!({
        "username": user.userid,
        "ticket": issue_ticket(&user.userid, &ctx.shared.secret),
        "CSRFPreventionToken": issue_csrf(&user.userid, &ctx.shared.secret),
        "cap": capabilities(&ident.acl),
    });
    // A standalone node has no cluster name.
    if c.clustered {
        data["clustername"] = c.name.clone().into();
    }
    Ok(Reply::Data(data))
}

/// Every privilege PVE 9 knows (what `root@pam` holds everywhere).
const ALL_PRIVS: &[&str] = &[
    "Datastore.Allocate",
    "Datastore.AllocateSpace",
    "Datastore.AllocateTemplate",
    "Datastore.Audit",
    "Group.Allocate",
    "Mapping.Audit",
    "Mapping.Modify",
    "Mapping.Use",
    "Permissions.Modify",
    "Pool.Allocate",
    "Pool.Audit",
    "Realm.Allocate",
    "Realm.AllocateUser",
    "SDN.Allocate",
    "SDN.Audit",
    "SDN.Use",
    "Sys.AccessNetwork",
    "Sys.Audit",
    "Sys.Console",
    "Sys.Incoming",
    "Sys.Modify",
    "Sys.PowerMgmt",
    "Sys.Syslog",
    "User.Modify",
    "VM.Allocate",
    "VM.Audit",
    "VM.Backup",
    "VM.Clone",
    "VM.Config.CDROM",
    "VM.Config.CPU",
    "VM.Config.Cloudinit",
    "VM.Config.Disk",
    "VM.Config.HWType",
    "VM.Config.Memory",
    "VM.Config.Network",
    "VM.Config.Options",
    "VM.Console",
    "VM.GuestAgent.Audit",
    "VM.GuestAgent.FileRead",
    "VM.GuestAgent.FileSystemMgmt",
    "VM.GuestAgent.FileWrite",
    "VM.GuestAgent.Unrestricted",
    "VM.Migrate",
    "VM.PowerMgmt",
    "VM.Replicate",
    "VM.Snapshot",
    "VM.Snapshot.Rollback",
];

/// Paths PVE always evaluates for the permission dump.
const BASE_PATHS: &[&str] = &[
    "/",
    "/access",
    "/access/groups",
    "/mapping",
    "/nodes",
    "/pool",
    "/sdn",
    "/storage",
    "/vms",
];

fn privs_at(acl: &Acl, path: &str) -> serde_json::Map<String, Value> {
    ALL_PRIVS
        .iter()
        .filter(|p| acl.has(path, p))
        .map(|p| (p.to_string(), Value::from(1)))
        .collect()
}

/// `GET /access/permissions[?path=&userid=]`.
pub(crate) fn permissions(ctx: &Ctx<'_>) -> HandlerResult {
    let Some(me) = ctx.ident else {
        return Err(ApiError::unauthorized("No ticket"));
    };
    let my_id = match &me.tokenid {
        Some(t) => format!("{}!{t}", me.userid),
        None => me.userid.clone(),
    };
    let c = ctx.cluster();
    let acl = match ctx.params.get("userid").filter(|u| *u != my_id) {
        None => me.acl.clone(),
        Some(other) => {
            let own_token =
                me.tokenid.is_none() && other.split_once('!').is_some_and(|(u, _)| u == me.userid);
            if !own_token && !me.can("/access", "Sys.Audit") {
                return Err(ApiError::perm("/access", "Sys.Audit"));
            }
            let found = if other.contains('!') {
                c.tokens
                    .iter()
                    .find(|t| t.full_id == other)
                    .map(|t| t.acl.clone())
            } else {
                c.users
                    .iter()
                    .find(|u| u.userid == other)
                    .map(|u| u.acl.clone())
            };
            found.ok_or_else(|| ApiError::new(500, format!("no such user ('{other}')\n")))?
        }
    };
    let mut out = serde_json::Map::new();
    if let Some(path) = ctx.params.get("path") {
        out.insert(path.to_string(), Value::Object(privs_at(&acl, path)));
        return Ok(Reply::Data(Value::Object(out)));
    }
    let mut paths: Vec<String> = BASE_PATHS.iter().map(|p| p.to_string()).collect();
    if let Acl::Entries(entries) = &acl {
        paths.extend(entries.iter().map(|e| e.path.clone()));
    }
    for p in paths {
        let privs = privs_at(&acl, &p);
        if !privs.is_empty() {
            out.insert(p, Value::Object(privs));
        }
    }
    Ok(Reply::Data(Value::Object(out)))
}
