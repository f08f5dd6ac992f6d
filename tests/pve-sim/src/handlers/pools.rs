//! Resource pools (pve-manager's `PVE::API2::Pool`, `user.cfg`).
//!
//! Since PVE 8.1 (nested pools, `parent/child`) the pool is a parameter:
//! `GET /pools[?poolid=&type=]`, `POST /pools`, `PUT /pools`, `DELETE
//! /pools?poolid=`; the older `GET`/`PUT`/`DELETE /pools/{poolid}` remain,
//! deprecated (PVE 9.1 still has them). Before 8.1 only those existed and
//! `GET /pools` took no parameters. PVE 9 also wants new pool names to
//! start with a letter.
//!
//! As in PVE: `GET /pools?poolid=` ignores the result of its `Pool.Audit`
//! check (anyone may read a named pool; `GET /pools/{poolid}` checks),
//! errors inside the `user.cfg` lock are 500s prefixed with `create pool
//! failed: ` / `update pools failed: ` / `delete pool failed: ` (even the
//! permission checks on members, which lose their 403 that way), adding a
//! vmid no guest has is accepted, and a delete ignores members that no
//! longer exist.

use serde_json::{Map, Value, json};

use super::cluster::{guest_resource, storage_resource};
use super::{Ctx, act::die};
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::state::{Cluster, Pool};

const NOT_IN_SCHEMA: &str =
    "property is not defined in schema and the schema does not allow additional properties";

/// Whether the node answering runs nested pools (PVE >= 8.1).
fn nested(c: &Cluster) -> bool {
    c.local_release().at_least(8, 1)
}

/// A `501` as for a method that does not exist (PVE < 8.1's `PUT` and
/// `DELETE /pools`).
fn not_implemented(method: &str) -> ApiError {
    ApiError::new(501, format!("Method '{method} /pools' not implemented"))
}

/// `pve-poolid` before nested pools: no `/`.
fn flat_poolid(ctx: &Ctx<'_>) -> Result<(), ApiError> {
    let id = ctx.params.get("poolid").unwrap_or("");
    if id.contains('/') {
        return Err(ApiError::param(
            "poolid",
            format!("invalid format - pool name '{id}' contains invalid characters\n"),
        ));
    }
    Ok(())
}

/// The pool's members as `extract_vm_stats` / `extract_storage_stats`
/// render them: guests (vmid sorted as strings), then storages on the
/// answering node (or the first node the storage is restricted to).
fn members(c: &Cluster, pool: &Pool, ty: Option<&str>) -> Vec<Value> {
    let mut guests: Vec<_> = c
        .guests
        .values()
        .filter(|g| g.pool.as_deref() == Some(&pool.id))
        .filter(|g| ty.is_none_or(|t| t == g.kind.as_str()))
        .collect();
    guests.sort_by_key(|g| g.vmid.to_string());
    let mut out: Vec<Value> = guests
        .into_iter()
        .map(|g| {
            let online = c.node(&g.node).is_some_and(|n| n.online);
            let mut v = guest_resource(g, online);
            if let Some(m) = v.as_object_mut() {
                for k in ["pool", "lock", "tags", "hastate"] {
                    m.remove(k);
                }
            }
            v
        })
        .collect();
    if ty.is_none_or(|t| t == "storage") {
        for id in &pool.storage {
            let Some(s) = c.storages.iter().find(|s| &s.id == id) else {
                continue;
            };
            let node = match &s.nodes {
                Some(list) if !list.contains(&c.local_node) => {
                    list.iter().min().cloned().unwrap_or_default()
                }
                _ => c.local_node.clone(),
            };
            if let Some(n) = c.node(&node) {
                out.push(Value::Object(storage_resource(s, n)));
            }
        }
    }
    out
}

fn pool_info(c: &Cluster, pool: &Pool, ty: Option<&str>, with_id: bool) -> Value {
    let mut m = Map::new();
    m.insert("members".into(), members(c, pool, ty).into());
    if let Some(comment) = &pool.comment {
        m.insert("comment".into(), comment.clone().into());
    }
    if with_id {
        m.insert("poolid".into(), pool.id.clone().into());
    }
    Value::Object(m)
}

/// `GET /pools`: the pools the caller may audit, or one pool's
/// configuration with `poolid` (PVE >= 8.1).
pub(crate) fn index(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let poolid = ctx.params.get("poolid").filter(|p| !p.is_empty());
    if !nested(&c) {
        let mut errors = std::collections::BTreeMap::new();
        for k in ["poolid", "type"] {
            if ctx.params.get(k).is_some() {
                errors.insert(k.to_string(), NOT_IN_SCHEMA.to_string());
            }
        }
        if !errors.is_empty() {
            return Err(ApiError::params(errors));
        }
    }
    if let Some(id) = poolid {
        let pool = c
            .pool(id)
            .ok_or_else(|| die(format!("pool '{id}' does not exist")))?;
        let info = pool_info(&c, pool, ctx.params.get("type"), true);
        return Ok(Reply::Data(json!([info])));
    }
    let mut pools: Vec<&Pool> = c.pools.iter().collect();
    pools.sort_by(|a, b| a.id.cmp(&b.id));
    let list = pools
        .into_iter()
        .filter(|p| ctx.can(&format!("/pool/{}", p.id), "Pool.Audit"))
        .map(|p| {
            let mut m = Map::new();
            m.insert("poolid".into(), p.id.clone().into());
            if let Some(comment) = &p.comment {
                m.insert("comment".into(), comment.clone().into());
            }
            Value::Object(m)
        })
        .collect();
    Ok(Reply::Data(Value::Array(list)))
}

/// `GET /pools/{poolid}` (deprecated since 8.1): the one pool, `poolid`
/// included from 8.1 on.
pub(crate) fn read(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let id = ctx.params.path("poolid");
    let pool = c
        .pool(id)
        .ok_or_else(|| die(format!("pool '{id}' does not exist")))?;
    Ok(Reply::Data(pool_info(
        &c,
        pool,
        ctx.params.get("type"),
        nested(&c),
    )))
}

/// `POST /pools`.
pub(crate) fn create(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let id = ctx.params.get("poolid").unwrap_or("").to_string();
    let fail = |m: String| die(format!("create pool failed: {m}"));
    if !nested(&c) {
        flat_poolid(ctx)?;
    }
    if c.pool(&id).is_some() {
        return Err(fail(format!("pool '{id}' already exists")));
    }
    let leaf = match id.rsplit_once('/') {
        Some((parent, leaf)) => {
            if c.pool(parent).is_none() {
                return Err(fail(format!(
                    "parent '{parent}' of pool '{id}' does not exist"
                )));
            }
            leaf
        }
        None => id.as_str(),
    };
    let letter = leaf.starts_with(|ch: char| ch.is_ascii_alphabetic());
    if c.local_release().major() >= 9 && !letter {
        return Err(fail("pool name must start with a letter".into()));
    }
    let comment = ctx.params.get("comment").filter(|s| !s.is_empty());
    c.pools.push(Pool::new(&id, comment));
    c.generation += 1;
    Ok(Reply::Data(Value::Null))
}

/// `PUT /pools` (PVE >= 8.1).
pub(crate) fn update(ctx: &Ctx<'_>) -> HandlerResult {
    if !nested(&ctx.cluster()) {
        return Err(not_implemented("PUT"));
    }
    update_pool(ctx)
}

/// `PUT /pools/{poolid}`.
pub(crate) fn update_deprecated(ctx: &Ctx<'_>) -> HandlerResult {
    update_pool(ctx)
}

fn split_list(v: &str) -> Vec<&str> {
    if v.contains('\0') {
        v.split('\0').collect()
    } else {
        v.split(|ch: char| ch == ',' || ch == ';' || ch.is_whitespace())
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// `check_perm_modify`: `Permissions.Modify`, or the object's own
/// allocate privilege.
fn may_modify(ctx: &Ctx<'_>, path: &str, alt: &str) -> Result<(), String> {
    if ctx.can(path, "Permissions.Modify") || ctx.can(path, alt) {
        Ok(())
    } else {
        Err(format!(
            "Permission check failed ({path}, Permissions.Modify|{alt})"
        ))
    }
}

/// `update_pool`: every change or none (the config is written at the end).
fn update_pool(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let id = ctx.params.get("poolid").unwrap_or("").to_string();
    let fail = |m: String| die(format!("update pools failed: {m}"));
    let Some(idx) = c.pools.iter().position(|p| p.id == id) else {
        return Err(fail(format!("pool '{id}' does not exist")));
    };
    let delete = ctx.params.get("delete") == Some("1");
    let allow_move = ctx.params.get("allow-move") == Some("1");
    let mut pool = c.pools[idx].clone();
    if let Some(comment) = ctx.params.get("comment") {
        pool.comment = Some(comment.to_string());
    }
    // Guest memberships to set: vmid -> new pool (None: removed).
    let mut moves: Vec<(u32, Option<String>)> = Vec::new();
    let mut orphans_left: Vec<(String, u32)> = Vec::new();
    let member_of = |c: &Cluster, moves: &[(u32, Option<String>)], vmid: u32| {
        if let Some((_, p)) = moves.iter().rev().find(|(v, _)| *v == vmid) {
            return p.clone();
        }
        match c.guests.get(&vmid) {
            Some(g) => g.pool.clone(),
            None => c
                .pools
                .iter()
                .find(|p| p.orphans.contains(&vmid))
                .map(|p| p.id.clone()),
        }
    };
    for v in split_list(ctx.params.get("vms").unwrap_or("")) {
        let vmid: u32 = v.parse().unwrap_or(0);
        may_modify(ctx, &format!("/vms/{vmid}"), "VM.Allocate").map_err(fail)?;
        let current = member_of(&c, &moves, vmid);
        if delete {
            if current.as_deref() != Some(id.as_str()) {
                return Err(fail(format!("VM {vmid} is not a pool member")));
            }
            moves.push((vmid, None));
        } else {
            if current.as_deref() == Some(id.as_str()) {
                return Err(fail(format!("VM {vmid} is already a pool member")));
            }
            if let Some(other) = current {
                if !allow_move {
                    return Err(fail(format!(
                        "VM {vmid} belongs already to pool '{other}' and 'allow-move' is not set"
                    )));
                }
                let path = format!("/pool/{other}");
                if !ctx.can(&path, "Pool.Allocate") {
                    return Err(fail(format!(
                        "Permission check failed ({path}, Pool.Allocate)"
                    )));
                }
                orphans_left.push((other, vmid));
            }
            moves.push((vmid, Some(id.clone())));
        }
    }
    for s in split_list(ctx.params.get("storage").unwrap_or("")) {
        may_modify(ctx, &format!("/storage/{s}"), "Datastore.Allocate").map_err(fail)?;
        let has = pool.storage.iter().any(|x| x == s);
        if delete {
            if !has {
                return Err(fail(format!("Storage '{s}' is not a pool member")));
            }
            pool.storage.retain(|x| x != s);
        } else {
            if has {
                return Err(fail(format!("Storage '{s}' is already a pool member")));
            }
            pool.storage.push(s.to_string());
            pool.storage.sort();
        }
    }
    // Write user.cfg.
    c.pools[idx] = pool;
    for (other, vmid) in orphans_left {
        if let Some(p) = c.pools.iter_mut().find(|p| p.id == other) {
            p.orphans.remove(&vmid);
        }
    }
    for (vmid, to) in moves {
        if let Some(g) = c.guests.get_mut(&vmid) {
            g.pool = to;
        } else {
            let p = &mut c.pools[idx];
            match to {
                Some(_) => p.orphans.insert(vmid),
                None => p.orphans.remove(&vmid),
            };
        }
    }
    c.generation += 1;
    Ok(Reply::Data(Value::Null))
}

/// `DELETE /pools?poolid=` (PVE >= 8.1).
pub(crate) fn delete(ctx: &Ctx<'_>) -> HandlerResult {
    if !nested(&ctx.cluster()) {
        return Err(not_implemented("DELETE"));
    }
    delete_pool(ctx)
}

/// `DELETE /pools/{poolid}`.
pub(crate) fn delete_deprecated(ctx: &Ctx<'_>) -> HandlerResult {
    delete_pool(ctx)
}

/// `delete_pool`: only an empty pool (sub-pools, then existing guests,
/// then existing storages).
fn delete_pool(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let id = ctx.params.get("poolid").unwrap_or("").to_string();
    let fail = |m: String| die(format!("delete pool failed: {m}"));
    let Some(pool) = c.pool(&id) else {
        return Err(fail(format!("pool '{id}' does not exist")));
    };
    let prefix = format!("{id}/");
    let mut subpools: Vec<&str> = c
        .pools
        .iter()
        .map(|p| p.id.as_str())
        .filter(|p| p.strip_prefix(&prefix).is_some_and(|r| !r.contains('/')))
        .collect();
    subpools.sort_unstable();
    if let Some(sub) = subpools.first() {
        return Err(fail(format!(
            "pool '{id}' is not empty (contains pool '{sub}')"
        )));
    }
    let mut vms: Vec<String> = c
        .guests
        .values()
        .filter(|g| g.pool.as_deref() == Some(id.as_str()))
        .map(|g| g.vmid.to_string())
        .collect();
    vms.sort();
    if let Some(vmid) = vms.first() {
        return Err(fail(format!(
            "pool '{id}' is not empty (contains VM {vmid})"
        )));
    }
    if let Some(s) = pool
        .storage
        .iter()
        .find(|s| c.storages.iter().any(|x| &x.id == *s))
    {
        return Err(fail(format!(
            "pool '{id}' is not empty (contains storage '{s}')"
        )));
    }
    c.pools.retain(|p| p.id != id);
    c.generation += 1;
    Ok(Reply::Data(Value::Null))
}
