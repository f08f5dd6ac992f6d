//! The HA writes: resources added, changed, removed, migrated and
//! relocated; groups and rules created, changed and deleted (pve-ha-
//! manager's `PVE::API2::HA::{Resources,Groups,Rules}`, `PVE::HA::Config`).
//!
//! As in PVE, errors are `die`s (500) with PVE's texts, those raised while
//! the HA domain is locked prefixed with the lock's message (`create
//! resource failed: `, `update resources config failed: `, ...). After
//! every change the simulated CRM ([`crate::ha::converge`]) starts, stops
//! or moves the services it concerns.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::Ctx;
use super::act::die;
use super::ha::{no_rules_before_9, pve9};
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::ha::{self, HaGroup, HaRule, RuleType};
use crate::state::{Cluster, GuestKind, HaResource};
use crate::util::split_list;

const MODIFIED: &str = "detected modified configuration - file changed by other user? Try again.";

fn quorate(c: &Cluster) -> bool {
    c.nodes.iter().filter(|n| n.online).count() * 2 > c.nodes.len()
}

/// `check_cfs_quorum`.
fn check_quorum(c: &Cluster) -> Result<(), ApiError> {
    if quorate(c) {
        Ok(())
    } else {
        Err(die("cluster not ready - no quorum?"))
    }
}

/// A non-empty parameter.
fn param<'a>(ctx: &'a Ctx<'_>, k: &str) -> Option<&'a str> {
    ctx.params.get(k)
}

fn flag_value(v: &str) -> bool {
    v == "1"
}

/// The CRM's round for every service (after a change to groups or rules).
fn converge_all(c: &mut Cluster) {
    let ids: Vec<u32> = c
        .guests
        .values()
        .filter(|g| g.ha.is_some())
        .map(|g| g.vmid)
        .collect();
    for vmid in ids {
        ha::converge(c, vmid);
    }
}

// ------------------------------------------------------------ resources

/// Sets the resource options a create or update passes.
fn set_resource_options(ctx: &Ctx<'_>, h: &mut HaResource, pve9: bool) {
    if let Some(v) = param(ctx, "state") {
        h.state = v.to_string();
        h.state_set = true;
    }
    if let Some(v) = param(ctx, "group") {
        h.group = Some(v.to_string());
    }
    if pve9 && let Some(v) = param(ctx, "failback") {
        h.failback = flag_value(v);
        h.failback_set = true;
    }
    if let Some(v) = param(ctx, "max_restart") {
        h.max_restart = v.parse().ok();
    }
    if let Some(v) = param(ctx, "max_relocate") {
        h.max_relocate = v.parse().ok();
    }
    if let Some(v) = param(ctx, "comment") {
        h.comment = Some(v.to_string());
    }
}

/// `POST /cluster/ha/resources`.
pub(crate) fn resource_create(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    check_quorum(&c)?;
    let (sid, ty, name) = ha::parse_sid(&c, param(ctx, "sid").unwrap_or("")).map_err(die)?;
    if let Some(t) = param(ctx, "type").filter(|t| !t.is_empty())
        && t != ty
    {
        return Err(die("types does not match"));
    }
    let pve9 = pve9(&c);
    if param(ctx, "group").is_some() && pve9 && ha::groups_migrated(&c) {
        return Err(die(
            "invalid parameter 'group': ha groups have been migrated to rules",
        ));
    }
    let kind = match ty.as_str() {
        "vm" => GuestKind::Qemu,
        "ct" => GuestKind::Lxc,
        _ => return Err(die(format!("unknown section type '{ty}'"))),
    };
    let b = name.as_bytes();
    if b.len() < 2 || b[0] == b'0' || !b.iter().all(u8::is_ascii_digit) {
        return Err(die("invalid VMID"));
    }
    let vmid: u32 = name.parse().unwrap_or(0);
    let Some(g) = c.guests.get(&vmid).filter(|g| g.vmid.to_string() == name) else {
        return Err(die(format!("resource '{sid}' does not exist in cluster")));
    };
    if g.kind != kind {
        let what = if kind == GuestKind::Qemu {
            "a VM"
        } else {
            "a container"
        };
        return Err(die(format!(
            "resource '{sid}' - guest with ID {vmid} is not {what}"
        )));
    }
    if g.ha.is_some() {
        return Err(die(format!(
            "create resource failed: resource ID '{sid}' already defined"
        )));
    }
    let mut h = HaResource {
        group: None,
        state: "started".into(),
        failback: true,
        auto_rebalance: false,
        max_restart: None,
        max_relocate: None,
        comment: None,
        state_set: false,
        failback_set: false,
        motion: None,
    };
    set_resource_options(ctx, &mut h, pve9);
    if let Some(g) = c.guests.get_mut(&vmid) {
        g.ha = Some(h);
    }
    c.generation += 1;
    ha::converge(&mut c, vmid);
    Ok(Reply::Data(Value::Null))
}

/// `PUT /cluster/ha/resources/{sid}`.
pub(crate) fn resource_update(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let (sid, _, _) = ha::parse_sid(&c, ctx.params.path("sid")).map_err(die)?;
    let pve9 = pve9(&c);
    if let Some(group) = param(ctx, "group").filter(|g| !g.is_empty()) {
        if pve9 && ha::groups_migrated(&c) {
            return Err(die(
                "invalid parameter 'group': ha groups have been migrated to rules",
            ));
        }
        if !c.ha.groups.iter().any(|g| g.id == group) {
            return Err(die(format!("HA group '{group}' does not exist")));
        }
    }
    let fail = |m: String| die(format!("update resources config failed: {m}"));
    if let Some(d) = param(ctx, "digest").filter(|d| !d.is_empty())
        && d != ha::resources_digest(&c)
    {
        return Err(fail(MODIFIED.into()));
    }
    let Some((vmid, mut h)) = ha::guest_of(&c, &sid).and_then(|g| Some((g.vmid, g.ha.clone()?)))
    else {
        return Err(fail(format!("no such resource '{sid}'")));
    };
    set_resource_options(ctx, &mut h, pve9);
    for k in split_list(param(ctx, "delete").unwrap_or("")) {
        match k.as_str() {
            "comment" => h.comment = None,
            "group" => h.group = None,
            "max_restart" => h.max_restart = None,
            "max_relocate" => h.max_relocate = None,
            "state" => {
                h.state = "started".into();
                h.state_set = false;
            }
            "failback" if pve9 => {
                h.failback = true;
                h.failback_set = false;
            }
            _ => return Err(fail(format!("no such option '{k}'"))),
        }
    }
    if let Some(g) = c.guests.get_mut(&vmid) {
        g.ha = Some(h);
    }
    c.generation += 1;
    ha::converge(&mut c, vmid);
    Ok(Reply::Data(Value::Null))
}

/// `DELETE /cluster/ha/resources/{sid}`: the service leaves HA (the guest
/// keeps running); PVE 9 with `purge` (default) also leaves the rules,
/// which go when it was their last resource.
pub(crate) fn resource_delete(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let (sid, _, _) = ha::parse_sid(&c, ctx.params.path("sid")).map_err(die)?;
    let purge = pve9(&c) && param(ctx, "purge") != Some("0");
    let Some(vmid) = ha::guest_of(&c, &sid)
        .filter(|g| g.ha.is_some())
        .map(|g| g.vmid)
    else {
        return Err(die(format!(
            "cannot delete service '{sid}', not HA managed!"
        )));
    };
    if let Some(g) = c.guests.get_mut(&vmid) {
        g.ha = None;
    }
    if purge {
        for r in &mut c.ha.rules {
            r.resources.remove(&sid);
        }
        c.ha.rules.retain(|r| !r.resources.is_empty());
    }
    c.generation += 1;
    Ok(Reply::Data(Value::Null))
}

/// `POST .../migrate` and `.../relocate`: queues the command for the CRM.
/// PVE checks only that HA manages the service; the CRM then ignores a
/// command to a node that is not online (or unknown), to the node the
/// service is on, or against a negative resource affinity. PVE 9 answers
/// what the move involves, PVE 8 `null`.
fn motion(ctx: &Ctx<'_>, cmd: &'static str) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let (sid, _, _) = ha::parse_sid(&c, ctx.params.path("sid")).map_err(die)?;
    let node = param(ctx, "node").unwrap_or("").to_string();
    let managed = ha::guest_of(&c, &sid)
        .and_then(|g| g.ha.as_ref())
        .is_some_and(|h| h.state != "ignored");
    if !managed {
        return Err(die(format!("resource '{sid}' is not HA managed")));
    }
    let answer = if pve9(&c) {
        let (comigrated, blocking) = ha::motion_info(&c, &sid);
        let mut a = json!({"sid": sid, "requested-node": node});
        if !comigrated.is_empty() {
            a["comigrated-resources"] = json!(comigrated);
        }
        if let Some(b) = blocking.get(&node) {
            a["blocking-resources"] = b
                .iter()
                .map(|s| json!({"sid": s, "cause": "resource-affinity"}))
                .collect();
        }
        a
    } else {
        Value::Null
    };
    ha::request_motion(&mut c, &sid, cmd, &node);
    Ok(Reply::Data(answer))
}

pub(crate) fn resource_migrate(ctx: &Ctx<'_>) -> HandlerResult {
    motion(ctx, "migrate")
}

pub(crate) fn resource_relocate(ctx: &Ctx<'_>) -> HandlerResult {
    motion(ctx, "relocate")
}

// ------------------------------------------------------------ groups

fn groups_gone(c: &Cluster, what: &str) -> Result<(), ApiError> {
    if pve9(c) && ha::groups_migrated(c) {
        Err(die(format!(
            "cannot {what} group: ha groups have been migrated to rules"
        )))
    } else {
        Ok(())
    }
}

/// `decode_value`: the valid entries, each once, in the order given.
fn node_entries(v: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in split_list(v) {
        if ha::parse_node_entry(&e).is_some() && !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

fn set_group_options(ctx: &Ctx<'_>, g: &mut HaGroup) {
    if let Some(v) = param(ctx, "nodes") {
        g.nodes = node_entries(v);
    }
    if let Some(v) = param(ctx, "restricted") {
        g.restricted = Some(flag_value(v));
    }
    if let Some(v) = param(ctx, "nofailback") {
        g.nofailback = Some(flag_value(v));
    }
    if let Some(v) = param(ctx, "comment") {
        g.comment = Some(v.to_string());
    }
}

/// `POST /cluster/ha/groups` (PVE 8, and PVE 9 until the migration).
pub(crate) fn group_create(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    groups_gone(&c, "create")?;
    check_quorum(&c)?;
    if let Some(t) = param(ctx, "type").filter(|t| !t.is_empty())
        && t != "group"
    {
        return Err(die("types does not match"));
    }
    let id = param(ctx, "group").unwrap_or("").to_string();
    if c.ha.groups.iter().any(|g| g.id == id) {
        return Err(die(format!(
            "create ha group failed: ha group ID '{id}' already defined"
        )));
    }
    let mut g = HaGroup {
        id,
        nodes: Vec::new(),
        restricted: None,
        nofailback: None,
        comment: None,
    };
    set_group_options(ctx, &mut g);
    c.ha.groups.push(g);
    c.generation += 1;
    Ok(Reply::Data(Value::Null))
}

/// `PUT /cluster/ha/groups/{group}`.
pub(crate) fn group_update(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    groups_gone(&c, "update")?;
    let fail = |m: String| die(format!("update ha group failed: {m}"));
    if let Some(d) = param(ctx, "digest").filter(|d| !d.is_empty())
        && d != ha::groups_digest(&c)
    {
        return Err(fail(MODIFIED.into()));
    }
    let id = ctx.params.path("group");
    let Some(idx) = c.ha.groups.iter().position(|g| g.id == id) else {
        return Err(fail(format!("no such ha group '{id}'")));
    };
    let mut g = c.ha.groups[idx].clone();
    set_group_options(ctx, &mut g);
    for k in split_list(param(ctx, "delete").unwrap_or("")) {
        match k.as_str() {
            "comment" => g.comment = None,
            "restricted" => g.restricted = None,
            "nofailback" => g.nofailback = None,
            "nodes" => return Err(fail(format!("unable to delete required option '{k}'"))),
            _ => return Err(fail(format!("no such option '{k}'"))),
        }
    }
    c.ha.groups[idx] = g;
    c.generation += 1;
    converge_all(&mut c);
    Ok(Reply::Data(Value::Null))
}

/// `DELETE /cluster/ha/groups/{group}`: refused while a resource uses it.
pub(crate) fn group_delete(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    groups_gone(&c, "delete")?;
    let id = ctx.params.path("group").to_string();
    if let Some(g) = c
        .guests
        .values()
        .find(|g| g.ha.as_ref().and_then(|h| h.group.as_deref()) == Some(id.as_str()))
    {
        return Err(die(format!(
            "delete ha group failed: ha group is used by service '{}'",
            ha::sid(g)
        )));
    }
    c.ha.groups.retain(|g| g.id != id);
    c.generation += 1;
    Ok(Reply::Data(Value::Null))
}

// ------------------------------------------------------------ rules

fn rules_not_migrated(c: &Cluster, what: &str) -> Result<(), ApiError> {
    if ha::groups_migrated(c) {
        Ok(())
    } else {
        Err(die(format!(
            "cannot {what} ha rule: ha groups have not been migrated yet"
        )))
    }
}

/// The options a rule type has.
fn rule_options(ty: RuleType) -> &'static [&'static str] {
    match ty {
        RuleType::NodeAffinity => &["resources", "nodes", "strict", "disable", "comment"],
        RuleType::ResourceAffinity => &["resources", "affinity", "disable", "comment"],
    }
}

/// `check_config`: only the type's own options.
fn check_rule_options(ctx: &Ctx<'_>, ty: RuleType) -> Result<(), ApiError> {
    let opts = rule_options(ty);
    for k in [
        "resources",
        "nodes",
        "strict",
        "affinity",
        "disable",
        "comment",
    ] {
        if param(ctx, k).is_some() && !opts.contains(&k) {
            return Err(die(format!("unexpected property '{k}'")));
        }
    }
    Ok(())
}

fn set_rule_options(ctx: &Ctx<'_>, r: &mut HaRule) {
    if let Some(v) = param(ctx, "resources") {
        r.resources = split_list(v).into_iter().collect();
    }
    if let Some(v) = param(ctx, "nodes") {
        r.nodes = split_list(v)
            .iter()
            .filter_map(|e| ha::parse_node_entry(e))
            .collect();
    }
    if let Some(v) = param(ctx, "strict") {
        r.strict = Some(flag_value(v));
    }
    if let Some(v) = param(ctx, "affinity") {
        r.affinity = Some(v.to_string());
    }
    // PVE drops `disable=0`: only a set key disables.
    if param(ctx, "disable").is_some_and(flag_value) {
        r.disable = true;
    }
    if let Some(v) = param(ctx, "comment") {
        r.comment = Some(v.to_string());
    }
}

/// `$assert_valid_resources_param` and `$assert_valid_nodes_param`.
fn check_rule_members(c: &Cluster, r: &HaRule, resources: bool, nodes: bool) -> Result<(), String> {
    if resources {
        if r.resources.is_empty() {
            return Err("no resources were specified".into());
        }
        let unmanaged: Vec<&str> = r
            .resources
            .iter()
            .filter(|s| ha::guest_of(c, s).is_none_or(|g| g.ha.is_none()))
            .map(String::as_str)
            .collect();
        if !unmanaged.is_empty() {
            return Err(format!(
                "cannot use unmanaged resource(s) {}.",
                unmanaged.join(", ")
            ));
        }
    }
    if nodes {
        if r.nodes.is_empty() {
            return Err("no nodes were specified".into());
        }
        let unknown: Vec<&str> = r
            .nodes
            .keys()
            .filter(|n| c.node(n).is_none())
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(format!(
                "cannot use non-existent node(s) {}.",
                unknown.join(", ")
            ));
        }
    }
    Ok(())
}

/// `$assert_feasibility`: PVE's `Rule '<id>' is invalid.` exception (400
/// with `errors`), which the HA domain lock turns into its text.
fn check_feasible(c: &Cluster, rules: &[HaRule], id: &str) -> Result<(), String> {
    let mut full = rules.to_vec();
    for (i, r) in full.iter_mut().enumerate() {
        r.order = i as u32 + 1;
    }
    let errors = ha::rule_errors(&full, c.nodes.len());
    let Some(e) = errors.get(id) else {
        return Ok(());
    };
    let mut msg = format!("400 Rule '{id}' is invalid.\n");
    for (opt, msgs) in e {
        msg.push_str(&format!("{opt}: {}\n", msgs.join(", ")));
    }
    Err(msg.trim_end().to_string())
}

/// `POST /cluster/ha/rules` (PVE 9, once the groups are migrated).
pub(crate) fn rule_create(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    no_rules_before_9(&c, "POST", "/cluster/ha/rules")?;
    check_quorum(&c)?;
    rules_not_migrated(&c, "create")?;
    let ty = RuleType::parse(param(ctx, "type").unwrap_or(""))
        .ok_or_else(|| die("unknown section type ''"))?;
    check_rule_options(ctx, ty)?;
    let required = match ty {
        RuleType::NodeAffinity => "nodes",
        RuleType::ResourceAffinity => "affinity",
    };
    if param(ctx, required).is_none() {
        return Err(die(format!(
            "missing value for required option '{required}'"
        )));
    }
    let id = param(ctx, "rule").unwrap_or("").to_string();
    let fail = |m: String| die(format!("create ha rule failed: {m}"));
    if c.ha.rules.iter().any(|r| r.id == id) {
        return Err(fail(format!("HA rule '{id}' already defined")));
    }
    let mut r = HaRule {
        id: id.clone(),
        ty,
        resources: BTreeSet::new(),
        nodes: BTreeMap::new(),
        strict: None,
        affinity: None,
        disable: false,
        comment: None,
        order: 0,
    };
    set_rule_options(ctx, &mut r);
    check_rule_members(&c, &r, true, ty == RuleType::NodeAffinity).map_err(fail)?;
    // `get_next_ordinal` gives the lowest order plus one, and the file is
    // written sorted by order: a new rule lands second.
    let mut rules = c.ha.rules.clone();
    let at = rules.len().min(2);
    rules.insert(at, r);
    check_feasible(&c, &rules, &id).map_err(fail)?;
    c.ha.rules = rules;
    c.generation += 1;
    converge_all(&mut c);
    Ok(Reply::Data(Value::Null))
}

/// `PUT /cluster/ha/rules/{rule}`.
pub(crate) fn rule_update(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let id = ctx.params.path("rule").to_string();
    no_rules_before_9(&c, "PUT", &format!("/cluster/ha/rules/{id}"))?;
    rules_not_migrated(&c, "update")?;
    let fail = |m: String| die(format!("update HA rules failed: {m}"));
    if let Some(d) = param(ctx, "digest").filter(|d| !d.is_empty())
        && d != ha::rules_digest(&c)
    {
        return Err(fail(MODIFIED.into()));
    }
    let Some(idx) = c.ha.rules.iter().position(|r| r.id == id) else {
        return Err(fail(format!("HA rule '{id}' does not exist")));
    };
    let mut r = c.ha.rules[idx].clone();
    if param(ctx, "type").is_some_and(|t| t != r.ty.as_str()) {
        return Err(fail("unexpected property 'type'".into()));
    }
    check_rule_options(ctx, r.ty).map_err(|e| fail(e.message.trim_end().to_string()))?;
    // `disable=0` is dropped before the options are applied.
    set_rule_options(ctx, &mut r);
    check_rule_members(
        &c,
        &r,
        param(ctx, "resources").is_some(),
        param(ctx, "nodes").is_some(),
    )
    .map_err(fail)?;
    for k in split_list(param(ctx, "delete").unwrap_or("")) {
        let opts = rule_options(r.ty);
        if !opts.contains(&k.as_str()) {
            return Err(fail(format!("no such option '{k}'")));
        }
        if matches!(k.as_str(), "resources" | "nodes" | "affinity") {
            return Err(fail(format!("unable to delete required option '{k}'")));
        }
        if param(ctx, &k).is_some_and(|v| k != "disable" || flag_value(v)) {
            return Err(fail(format!(
                "cannot set and delete property '{k}' at the same time!"
            )));
        }
        match k.as_str() {
            "comment" => r.comment = None,
            "strict" => r.strict = None,
            _ => r.disable = false,
        }
    }
    let mut rules = c.ha.rules.clone();
    rules[idx] = r;
    check_feasible(&c, &rules, &id).map_err(fail)?;
    c.ha.rules = rules;
    c.generation += 1;
    converge_all(&mut c);
    Ok(Reply::Data(Value::Null))
}

/// `DELETE /cluster/ha/rules/{rule}` (no error for a rule that is not
/// there, as in PVE).
pub(crate) fn rule_delete(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let id = ctx.params.path("rule").to_string();
    no_rules_before_9(&c, "DELETE", &format!("/cluster/ha/rules/{id}"))?;
    c.ha.rules.retain(|r| r.id != id);
    c.generation += 1;
    converge_all(&mut c);
    Ok(Reply::Data(Value::Null))
}
