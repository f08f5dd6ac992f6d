//! `/access/ticket`: ticket login and renewal.

use serde_json::{Value, json};

use super::Ctx;
use crate::auth::{
    TicketKey, capabilities, issue_csrf, issue_ticket, user_identity, verify_ticket,
};
use crate::errors::{ApiError, HandlerResult, Reply};

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
    Ok(Reply::Data(json!({
        "username": user.userid,
        "ticket": issue_ticket(&user.userid, &ctx.shared.secret),
        "CSRFPreventionToken": issue_csrf(&user.userid, &ctx.shared.secret),
        "clustername": c.name,
        "cap": capabilities(&ident.acl),
    })))
}
