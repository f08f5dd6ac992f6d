//! The HA reads: `/cluster/ha/status/current`, `/cluster/ha/resources[/
//! {sid}]`, `/cluster/ha/groups[/{group}]` and `/cluster/ha/rules[/{rule}]`
//! (pve-ha-manager's `PVE::API2::HA::{Status,Resources,Groups,Rules}`).
//! The writes are in `ha_write`; the configuration and the CRM in
//! [`crate::ha`].

use serde_json::{Map, Value, json};

use super::{Ctx, act::die, pbool};
use crate::Shapes;
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::ha::{self, HaRule};
use crate::shapes;
use crate::state::{Cluster, Guest};
use crate::util::{ctime, now_secs};

/// A JSON boolean in PVE 9's shape, else Perl's 0/1.
fn flag(real: bool, b: bool) -> Value {
    if real { Value::Bool(b) } else { pbool(b) }
}

/// Whether the node answering runs PVE 9 (rules, `failback`, `purge`).
pub(crate) fn pve9(c: &Cluster) -> bool {
    c.local_release().major() >= 9
}

/// PVE 8 has no `/cluster/ha/rules`: `501` as for any unknown method.
pub(crate) fn no_rules_before_9(c: &Cluster, method: &str, path: &str) -> Result<(), ApiError> {
    if pve9(c) {
        Ok(())
    } else {
        Err(ApiError::new(
            501,
            format!("Method '{method} {path}' not implemented"),
        ))
    }
}

pub(crate) fn status_current(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let now = now_secs();
    // PVE 9 sends these flags as JSON booleans, older releases as 0/1.
    let real = c.shapes == Shapes::Real;
    let quorate = c.nodes.iter().filter(|n| n.online).count() * 2 > c.nodes.len();
    let mut out = vec![json!({
        "id": "quorum",
        "type": "quorum",
        "node": c.local_node,
        "status": if quorate { "OK".to_string() } else { format!("No quorum on node '{}'!", c.local_node) },
        "quorate": flag(real, quorate),
    })];
    let mut managed: Vec<&Guest> = c.guests.values().filter(|g| g.ha.is_some()).collect();
    if !c.clustered || managed.is_empty() {
        return Ok(Reply::Data(Value::Array(out)));
    }
    let master = &c.local_node;
    out.push(json!({
        "id": "master",
        "type": "master",
        "node": master,
        "status": format!("{master} (active, {})", ctime(now - 4)),
        "timestamp": now - 4,
    }));
    if real {
        // PVE 9.2: whether the CRM's watchdog is armed; no node.
        out.push(json!({
            "id": "fencing",
            "type": "fencing",
            "armed-state": "armed",
            "status": shapes::FENCING_STATUS,
        }));
    }
    let mut nodes: Vec<_> = c.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    for n in nodes {
        let active = managed.iter().any(|g| g.node == n.name);
        let (status, ts) = if !n.online {
            let ts = now - 86_400 - 3_217;
            (
                format!("{} (old timestamp - dead?, {})", n.name, ctime(ts)),
                ts,
            )
        } else if active {
            (format!("{} (active, {})", n.name, ctime(now - 7)), now - 7)
        } else {
            (format!("{} (idle, {})", n.name, ctime(now - 7)), now - 7)
        };
        out.push(json!({
            "id": format!("lrm:{}", n.name),
            "type": "lrm",
            "node": n.name,
            "status": status,
            "timestamp": ts,
        }));
    }
    // The CRM's services sorted by sid, then those it does not track
    // (`ignored`).
    managed.sort_by_key(|g| (ha::crm_state(&c, g).is_none(), ha::sid(g)));
    for g in managed {
        let Some(h) = &g.ha else { continue };
        let sid = ha::sid(g);
        let state = ha::verbose_state(&c, g);
        let mut e = json!({
            "id": format!("service:{sid}"),
            "type": "service",
            "sid": sid,
            "node": g.node,
            "state": state,
            "status": format!("{sid} ({}, {state})", g.node),
            "request_state": ha::request(h),
            "max_restart": h.max_restart.unwrap_or(1),
            "max_relocate": h.max_relocate.unwrap_or(1),
        });
        if let Some(crm) = ha::crm_state(&c, g) {
            e["crm_state"] = crm.into();
        }
        if pve9(&c) {
            e["failback"] = flag(real, h.failback);
        }
        if real {
            e["auto-rebalance"] = h.auto_rebalance.into();
        }
        if let Some(grp) = &h.group {
            e["group"] = grp.clone().into();
        }
        if let Some(comment) = &h.comment {
            e["comment"] = comment.clone().into();
        }
        out.push(e);
    }
    Ok(Reply::Data(Value::Array(out)))
}

/// One service's `resources.cfg` entry as the API copies it: the keys the
/// file holds, `sid`, `type` and the file's `digest`.
fn resource_entry(c: &Cluster, g: &Guest, digest: &str) -> Option<Value> {
    let h = g.ha.as_ref()?;
    let mut m = Map::new();
    m.insert("sid".into(), ha::sid(g).into());
    m.insert("type".into(), ha::ha_type(g.kind).into());
    m.insert("digest".into(), digest.into());
    // PVE 9 leaves `group` out once the groups are migrated.
    let hide_group = pve9(c) && ha::groups_migrated(c);
    for (k, v) in ha::resource_keys(h, pve9(c)) {
        let value: Value = match k {
            "comment" | "group" | "state" => v.into(),
            _ => v.parse::<u64>().map(Value::from).unwrap_or(v.into()),
        };
        if k == "group" && hide_group {
            continue;
        }
        m.insert(k.into(), value);
    }
    Some(Value::Object(m))
}

pub(crate) fn resources(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let ty = ctx.params.get("type");
    let digest = ha::resources_digest(&c);
    let hide_group = pve9(&c) && ha::groups_migrated(&c);
    let out = c
        .guests
        .values()
        .filter(|g| ty.is_none_or(|t| t == ha::ha_type(g.kind)))
        .filter_map(|g| {
            let mut e = resource_entry(&c, g, &digest)?;
            if let Some(group) = g.ha.as_ref().and_then(|h| h.group.as_ref())
                && !hide_group
                && !c.ha.groups.iter().any(|x| &x.id == group)
            {
                e["errors"] = json!({"group": format!("group '{group}' does not exist")});
            }
            Some(e)
        })
        .collect();
    Ok(Reply::Data(Value::Array(out)))
}

/// `GET /cluster/ha/resources/{sid}`.
pub(crate) fn resource(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let (sid, _, _) = ha::parse_sid(&c, ctx.params.path("sid")).map_err(die)?;
    let g = ha::guest_of(&c, &sid)
        .filter(|g| g.ha.is_some())
        .ok_or_else(|| die(format!("no such resource '{sid}'")))?;
    let digest = ha::resources_digest(&c);
    Ok(Reply::Data(
        resource_entry(&c, g, &digest).unwrap_or(Value::Null),
    ))
}

// ------------------------------------------------------------ groups

fn group_entry(g: &ha::HaGroup, digest: &str) -> Value {
    let mut m = Map::new();
    m.insert("group".into(), g.id.clone().into());
    m.insert("type".into(), "group".into());
    m.insert("digest".into(), digest.into());
    for (k, v) in ha::group_keys(g) {
        let value: Value = match k {
            "restricted" | "nofailback" => v.parse::<u8>().map(Value::from).unwrap_or(v.into()),
            _ => v.into(),
        };
        m.insert(k.into(), value);
    }
    Value::Object(m)
}

/// `GET /cluster/ha/groups`; PVE 9 refuses once the groups are migrated.
pub(crate) fn groups(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    if pve9(&c) && ha::groups_migrated(&c) {
        return Err(die(
            "cannot index groups: ha groups have been migrated to rules",
        ));
    }
    let digest = ha::groups_digest(&c);
    let mut groups: Vec<&ha::HaGroup> = c.ha.groups.iter().collect();
    groups.sort_by(|a, b| a.id.cmp(&b.id));
    let out = groups
        .into_iter()
        .map(|g| group_entry(g, &digest))
        .collect();
    Ok(Reply::Data(Value::Array(out)))
}

/// `GET /cluster/ha/groups/{group}`.
pub(crate) fn group(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    if pve9(&c) && ha::groups_migrated(&c) {
        return Err(die(
            "cannot read group: ha groups have been migrated to rules",
        ));
    }
    let id = ctx.params.path("group");
    let g =
        c.ha.groups
            .iter()
            .find(|g| g.id == id)
            .ok_or_else(|| die(format!("no such ha group '{id}'")))?;
    Ok(Reply::Data(group_entry(g, &ha::groups_digest(&c))))
}

// ------------------------------------------------------------ rules

fn rule_entry(r: &HaRule, digest: &str, errors: Option<&Value>) -> Value {
    let mut m = Map::new();
    m.insert("rule".into(), r.id.clone().into());
    m.insert("type".into(), r.ty.as_str().into());
    m.insert("digest".into(), digest.into());
    m.insert("order".into(), r.order.into());
    for (k, v) in ha::rule_keys(r) {
        let value: Value = match k {
            "strict" | "disable" => v.parse::<u8>().map(Value::from).unwrap_or(v.into()),
            _ => v.into(),
        };
        m.insert(k.into(), value);
    }
    if let Some(e) = errors {
        m.insert("errors".into(), e.clone());
    }
    Value::Object(m)
}

/// The rules with their feasibility errors, as the API lists them.
fn rules_with_errors(c: &Cluster) -> Vec<(HaRule, Option<Value>)> {
    let rules = ha::full_rules(c);
    let errors = ha::rule_errors(&rules, c.nodes.len());
    rules
        .into_iter()
        .map(|r| {
            let e = errors.get(&r.id).map(|e| json!(e));
            (r, e)
        })
        .collect()
}

/// `GET /cluster/ha/rules` (PVE 9): every rule, groups not migrated yet
/// included as `ha-group-<group>`, sorted by `order`.
pub(crate) fn rules(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    no_rules_before_9(&c, "GET", "/cluster/ha/rules")?;
    let ty = ctx.params.get("type");
    let resource = ctx.params.get("resource");
    let digest = ha::rules_digest(&c);
    let out = rules_with_errors(&c)
        .into_iter()
        .filter(|(r, _)| ty.is_none_or(|t| t == r.ty.as_str()))
        .filter(|(r, _)| resource.is_none_or(|s| r.resources.contains(s)))
        .map(|(r, e)| rule_entry(&r, &digest, e.as_ref()))
        .collect();
    Ok(Reply::Data(Value::Array(out)))
}

/// `GET /cluster/ha/rules/{rule}` (PVE 9).
pub(crate) fn rule(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let id = ctx.params.path("rule");
    no_rules_before_9(&c, "GET", &format!("/cluster/ha/rules/{id}"))?;
    let digest = ha::rules_digest(&c);
    rules_with_errors(&c)
        .into_iter()
        .find(|(r, _)| r.id == id)
        .map(|(r, e)| Reply::Data(rule_entry(&r, &digest, e.as_ref())))
        .ok_or_else(|| die(format!("no such ha rule '{id}'")))
}
