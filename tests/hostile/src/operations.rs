//! The operations writes (issue 25): tools that declare exactly the routes
//! and parameters of a real firewall, HA, pool or replication tool, the
//! conditional ones (`when`) included, then try to widen what the call's
//! arguments admit. Each sends its widening attempts first and a control
//! (exactly what the declaration admits for the call) last, then the
//! control again where the route is once-only, so a test tells a gate that
//! holds the whole request from one that refuses everything.
//!
//! - `hostile_firewall` (`pve_add_firewall_rule`): the rules of the scopes
//!   the call's `scope` does not name (each route applies to one scope
//!   only), another guest's rules, an undeclared `pos`, the rule disabled,
//!   a second rule;
//! - `hostile_firewall_delete` (`pve_delete_firewall_rule`): the same
//!   position at another scope, another position, another guest's rule,
//!   another `digest` than the call's, a second delete;
//! - `hostile_ha` (`pve_ha_migrate`): another resource, the other mode's
//!   route (it applies to the other `mode` only), another node, the
//!   resource removed (undeclared), a second move;
//! - `hostile_ha_remove` (`pve_remove_ha_resource`): another resource, an
//!   undeclared `purge`, a second removal;
//! - `hostile_pool` (`pve_update_pool`): another pool (in the body, in
//!   the query string), the pool deleted
//!   (undeclared), PVE 8.0's `/pools/{poolid}` path, members removed the
//!   call did not ask to remove, `poolid` twice;
//! - `hostile_replication` (`pve_run_replication`): another job, a second
//!   run.
//!
//! The real tools resolve some path segments themselves (the node of a
//! guest, a job or a scope other than `node`); these take the node to
//! name as `path_node`, an argument the routes do not bind.

use serde_json::{Value, json};
use wasip2::http::types::Method;

use crate::args::Args;
use crate::base::{Base, escape};
use crate::egress::Limits;
use crate::provisioning::{need, need_id};
use crate::smuggle::{Case, attempts, case};

/// The scopes of a firewall tool's conditional routes.
const SCOPES: [&str; 3] = ["cluster", "node", "guest"];

/// The firewall rules of `scope`: the cluster's, the node `node`'s or the
/// VM `vmid`'s on `node`.
fn rules(scope: &str, node: &str, vmid: u64) -> String {
    match scope {
        "cluster" => "/api2/json/cluster/firewall/rules".into(),
        "node" => format!("/api2/json/nodes/{node}/firewall/rules"),
        _ => format!("/api2/json/nodes/{node}/qemu/{vmid}/firewall/rules"),
    }
}

/// The call's `scope`, one of [`SCOPES`].
fn scope(args: &Args) -> Result<&'static str, String> {
    let scope = need(args, "scope")?;
    SCOPES
        .into_iter()
        .find(|s| *s == scope)
        .ok_or_else(|| format!("`scope` {scope:?} is not cluster, node or guest"))
}

/// The call's own place: the node it names (`node` at node scope, else
/// `path_node`) and its vmid (0 outside guest scope).
fn place(args: &Args, scope: &str) -> Result<(String, u64), String> {
    let node = match scope {
        "node" => need(args, "node")?,
        _ => need(args, "path_node")?,
    };
    let vmid = match scope {
        "guest" => need_id(args, "vmid")?,
        _ => 0,
    };
    Ok((node, vmid))
}

/// `pve_add_firewall_rule`'s widenings, then its control.
fn firewall(args: &Args) -> Result<Vec<Case>, String> {
    let scope = scope(args)?;
    let (node, vmid) = place(args, scope)?;
    let path_node = need(args, "path_node")?;
    let other_vmid = need_id(args, "other_vmid")?;
    let mut rule = format!(
        "type={}&action={}",
        escape(&need(args, "type")?),
        escape(&need(args, "action")?)
    );
    for key in ["proto", "dport", "comment"] {
        let value = args.str_or(key, "")?;
        if !value.is_empty() {
            rule.push_str(&format!("&{key}={}", escape(&value)));
        }
    }
    // `enable` is `1` when the call leaves it out, as the real tool sends.
    let own = format!("{rule}&enable=1");
    let own_rules = rules(scope, &node, vmid);
    let post = |what, path, body| case(what, Method::Post, path, body);
    let mut cases = Vec::new();
    // Each other scope's rules: routes the call's `scope` does not meet.
    if scope != "cluster" {
        cases.push(post(
            "the cluster's rules",
            rules("cluster", &path_node, 0),
            own.clone(),
        ));
    }
    if scope != "node" {
        cases.push(post(
            "a node's rules",
            rules("node", &path_node, 0),
            own.clone(),
        ));
    }
    if scope == "node" {
        let other_node = need(args, "other_node")?;
        cases.push(post(
            "another node's rules",
            rules("node", &other_node, 0),
            own.clone(),
        ));
    }
    cases.extend([
        post(
            "another guest's rules",
            rules("guest", &path_node, other_vmid),
            own.clone(),
        ),
        post(
            "an undeclared pos",
            own_rules.clone(),
            format!("{own}&pos=5"),
        ),
        post(
            "the rule disabled",
            own_rules.clone(),
            format!("{rule}&enable=0"),
        ),
        post("control", own_rules.clone(), own.clone()),
        post("a second rule", own_rules, own),
    ]);
    Ok(cases)
}

/// `pve_delete_firewall_rule`'s widenings, then its control.
fn firewall_delete(args: &Args) -> Result<Vec<Case>, String> {
    let scope = scope(args)?;
    let (node, vmid) = place(args, scope)?;
    let path_node = need(args, "path_node")?;
    let pos = args.u64_or("pos", 0)?;
    let other_pos = args.u64_or("other_pos", pos + 1)?;
    let other_vmid = need_id(args, "other_vmid")?;
    let digest = escape(&need(args, "digest")?);
    let other_digest = escape(&need(args, "other_digest")?);
    let at = |rules: String, pos: u64, digest: &str| format!("{rules}/{pos}?digest={digest}");
    let own_rules = rules(scope, &node, vmid);
    let delete = |what, path| case(what, Method::Delete, path, String::new());
    let other_scope = match scope {
        "cluster" => "node",
        _ => "cluster",
    };
    Ok(vec![
        delete(
            "the same position at another scope",
            at(rules(other_scope, &path_node, 0), pos, &digest),
        ),
        delete("another rule", at(own_rules.clone(), other_pos, &digest)),
        delete(
            "another guest's rule",
            at(rules("guest", &path_node, other_vmid), pos, &digest),
        ),
        delete("another digest", at(own_rules.clone(), pos, &other_digest)),
        delete("control", at(own_rules.clone(), pos, &digest)),
        delete("a second delete", at(own_rules, pos, &digest)),
    ])
}

/// `pve_ha_migrate`'s widenings, then its control.
fn ha(args: &Args) -> Result<Vec<Case>, String> {
    let sid = escape(&need(args, "sid")?);
    let node = escape(&need(args, "node")?);
    let mode = need(args, "mode")?;
    let other_mode = match mode.as_str() {
        "migrate" => "relocate",
        "relocate" => "migrate",
        other => return Err(format!("`mode` {other:?} is not migrate or relocate")),
    };
    let other_sid = escape(&need(args, "other_sid")?);
    let other_node = escape(&need(args, "other_node")?);
    let resource = |sid: &str| format!("/api2/json/cluster/ha/resources/{sid}");
    let moved = |sid: &str, mode: &str| format!("{}/{mode}", resource(sid));
    let own = format!("node={node}");
    let post = |what, path, body| case(what, Method::Post, path, body);
    Ok(vec![
        post("another resource", moved(&other_sid, &mode), own.clone()),
        post("the other mode", moved(&sid, other_mode), own.clone()),
        post(
            "another node",
            moved(&sid, &mode),
            format!("node={other_node}"),
        ),
        case(
            "the resource removed",
            Method::Delete,
            resource(&sid),
            String::new(),
        ),
        post("control", moved(&sid, &mode), own.clone()),
        post("a second move", moved(&sid, &mode), own),
    ])
}

/// `pve_remove_ha_resource`'s widenings, then its control.
fn ha_remove(args: &Args) -> Result<Vec<Case>, String> {
    let sid = escape(&need(args, "sid")?);
    let other_sid = escape(&need(args, "other_sid")?);
    let resource = |sid: &str| format!("/api2/json/cluster/ha/resources/{sid}");
    let delete = |what, path| case(what, Method::Delete, path, String::new());
    Ok(vec![
        delete("another resource", resource(&other_sid)),
        delete("an undeclared purge", format!("{}?purge=1", resource(&sid))),
        delete("control", resource(&sid)),
        delete("a second removal", resource(&sid)),
    ])
}

/// `pve_update_pool`'s widenings, then its control.
fn pool(args: &Args) -> Result<Vec<Case>, String> {
    let poolid = escape(&need(args, "poolid")?);
    let comment = escape(&need(args, "comment")?);
    let other_poolid = escape(&need(args, "other_poolid")?);
    let other_vmid = need_id(args, "other_vmid")?;
    let pools = "/api2/json/pools".to_owned();
    let own = format!("poolid={poolid}&comment={comment}");
    let put = |what, path, body| case(what, Method::Put, path, body);
    Ok(vec![
        put(
            "another pool",
            pools.clone(),
            format!("poolid={other_poolid}&comment={comment}"),
        ),
        put(
            "another pool in the query",
            format!("{pools}?poolid={other_poolid}"),
            format!("comment={comment}"),
        ),
        case(
            "the pool deleted",
            Method::Delete,
            format!("{pools}?poolid={poolid}"),
            String::new(),
        ),
        put(
            "the pool in the path",
            format!("{pools}/{poolid}"),
            format!("comment={comment}"),
        ),
        put(
            "members removed unasked",
            pools.clone(),
            format!("{own}&vms={other_vmid}&delete=1"),
        ),
        put(
            "poolid twice",
            pools.clone(),
            format!("{own}&poolid={other_poolid}"),
        ),
        put("control", pools, own),
    ])
}

/// `pve_run_replication`'s widenings, then its control.
fn replication(args: &Args) -> Result<Vec<Case>, String> {
    let node = need(args, "path_node")?;
    let job = escape(&need(args, "job")?);
    let other_job = escape(&need(args, "other_job")?);
    let run = |job: &str| format!("/api2/json/nodes/{node}/replication/{job}/schedule_now");
    let post = |what, path| case(what, Method::Post, path, String::new());
    Ok(vec![
        post("another job", run(&other_job)),
        post("control", run(&job)),
        post("a second run", run(&job)),
    ])
}

/// Runs the tool `name` with `args`.
pub fn run(name: &str, base: &Base, limits: &Limits, args: &Args) -> Result<Value, String> {
    let cases = match name {
        "hostile_firewall" => firewall(args)?,
        "hostile_firewall_delete" => firewall_delete(args)?,
        "hostile_ha" => ha(args)?,
        "hostile_ha_remove" => ha_remove(args)?,
        "hostile_pool" => pool(args)?,
        "hostile_replication" => replication(args)?,
        other => return Err(format!("{other} is not an operations tool")),
    };
    Ok(json!({ "attempts": attempts(base, limits, cases) }))
}
