//! The firewall API (pve-firewall's `PVE::API2::Firewall::Cluster`,
//! `::Host`, `::VM`/`::CT`, `::Rules`, `::Groups`, `::IPSet`,
//! `::Aliases`): rules, options, aliases, IP sets, security groups and
//! references at the cluster, node and guest scope. The model is in
//! [`crate::firewall`].
//!
//! As in PVE: a guest's firewall is its `<vmid>.fw`, whatever node or
//! guest type the path names (neither is checked; only `options` is
//! proxied to the node); a new rule always goes to position 0 and is
//! disabled unless `enable` is given (`create_rule` ignores `pos` and
//! `digest`); `moveto` places a rule before the one at that position;
//! a `digest` that does not match refuses the change with
//! `detected modified configuration - file changed by other user? Try
//! again.`; rule checks answer 400 naming the parameter.

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use super::{Ctx, act::die};
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::firewall::{
    self as fw, Entry, Env, Firewall, FwConf, Lookup, list_with_digest, loaded_rule,
};
use crate::util::{now_secs, split_list};

static EMPTY: LazyLock<FwConf> = LazyLock::new(FwConf::default);

/// What a request addresses, from its (schema-checked) parameters.
#[derive(Debug, Clone)]
enum Scope {
    Cluster,
    Group(String),
    /// The node the call runs on (PVE reads the local `host.fw`).
    Host(String),
    Guest(u32, Env),
}

fn scope(ctx: &Ctx<'_>, env: Env) -> Scope {
    if let Some(g) = ctx.params.get("group") {
        Scope::Group(g.to_string())
    } else if let Some(v) = ctx.params.get("vmid") {
        Scope::Guest(v.parse().unwrap_or(0), env)
    } else if ctx.params.get("node").is_some() {
        Scope::Host(ctx.node.to_string())
    } else {
        Scope::Cluster
    }
}

impl Scope {
    fn env(&self) -> Env {
        match self {
            Scope::Cluster => Env::Cluster,
            Scope::Group(_) => Env::Group,
            Scope::Host(_) => Env::Host,
            Scope::Guest(_, env) => *env,
        }
    }
}

/// The scope's file (security groups live in the cluster's).
fn conf<'a>(f: &'a Firewall, s: &Scope) -> &'a FwConf {
    match s {
        Scope::Cluster | Scope::Group(_) => &f.cluster,
        Scope::Host(node) => f.hosts.get(node).unwrap_or(&EMPTY),
        Scope::Guest(vmid, _) => f.guests.get(vmid).unwrap_or(&EMPTY),
    }
}

fn conf_mut<'a>(f: &'a mut Firewall, s: &Scope) -> &'a mut FwConf {
    match s {
        Scope::Cluster | Scope::Group(_) => &mut f.cluster,
        Scope::Host(node) => f.hosts.entry(node.clone()).or_default(),
        Scope::Guest(vmid, _) => f.guests.entry(*vmid).or_default(),
    }
}

fn lookup<'a>(f: &'a Firewall, s: &Scope) -> Lookup<'a> {
    match s {
        Scope::Cluster | Scope::Group(_) => Lookup {
            cluster: None,
            local: &f.cluster,
        },
        _ => Lookup {
            cluster: Some(&f.cluster),
            local: conf(f, s),
        },
    }
}

/// The rule set as stored, or PVE's error for a missing security group.
fn stored_rules<'a>(f: &'a Firewall, s: &Scope) -> Result<&'a Vec<Entry>, ApiError> {
    match s {
        Scope::Group(g) => f
            .cluster
            .groups
            .get(g)
            .map(|grp| &grp.rules)
            .ok_or_else(|| die(format!("no such security group '{g}'"))),
        _ => Ok(&conf(f, s).rules),
    }
}

/// The rule set as loading the file yields it, and its digest.
fn loaded(f: &Firewall, s: &Scope) -> Result<(Vec<Entry>, String), ApiError> {
    let look = lookup(f, s);
    let rules: Vec<Entry> = stored_rules(f, s)?
        .iter()
        .map(|r| loaded_rule(r, look, s.env()))
        .collect();
    let d = fw::digest(&rules);
    Ok((rules, d))
}

/// Writes the rule set back (as the file will read), bumping the state.
fn save_rules(c: &mut crate::state::Cluster, s: &Scope, rules: Vec<Entry>) {
    let allow_iface = s.env().allow_iface();
    let rules: Vec<Entry> = rules
        .iter()
        .map(|r| fw::reload_rule(r, allow_iface))
        .collect();
    match s {
        Scope::Group(g) => {
            if let Some(grp) = c.firewall.cluster.groups.get_mut(g) {
                grp.rules = rules;
            }
        }
        _ => conf_mut(&mut c.firewall, s).rules = rules,
    }
    c.generation += 1;
}

/// `PVE::Tools::assert_if_modified`.
fn assert_if_modified(current: &str, given: Option<&str>) -> Result<(), ApiError> {
    match given {
        Some(d) if !d.is_empty() && d != "0" && d != current => Err(die(
            "detected modified configuration - file changed by other user? Try again.",
        )),
        _ => Ok(()),
    }
}

fn object(e: Entry) -> Map<String, Value> {
    e.into_iter().collect()
}

fn data(list: Vec<Map<String, Value>>) -> HandlerResult {
    Ok(Reply::Data(Value::Array(
        list.into_iter().map(Value::Object).collect(),
    )))
}

/// The `pos` path parameter (schema-checked: digits), saturating.
fn position(ctx: &Ctx<'_>, key: &str) -> Option<usize> {
    ctx.params
        .get(key)
        .map(|p| p.trim_start_matches('+').parse().unwrap_or(usize::MAX))
}

fn no_rule(ctx: &Ctx<'_>) -> ApiError {
    die(format!(
        "no rule at position {}",
        ctx.params.get("pos").unwrap_or("")
    ))
}

/// Raises `verify_rule`'s first complaint.
fn verify(rule: &mut Entry, look: Lookup<'_>, env: Env) -> Result<(), ApiError> {
    let (_, problems) = fw::verify_rule(rule, look, env);
    match problems.into_iter().next() {
        None => Ok(()),
        Some(p) if p.fatal => Err(die(p.msg)),
        Some(p) => Err(ApiError::param(&p.param, p.msg)),
    }
}

/// The rule parameters (`$rule_properties`).
const RULE_KEYS: &[&str] = &[
    "pos",
    "digest",
    "type",
    "action",
    "macro",
    "iface",
    "source",
    "dest",
    "proto",
    "enable",
    "log",
    "sport",
    "dport",
    "comment",
    "icmp-type",
];

/// `copy_rule_data`: given values replace, `""` and `-` remove. (`pos`
/// and `digest` end up in the rule too, and vanish when it is written.)
fn copy_rule_data(rule: &mut Entry, ctx: &Ctx<'_>) {
    for k in RULE_KEYS {
        let Some(v) = ctx.params.get(k) else {
            continue;
        };
        if v.is_empty() || v == "-" {
            rule.remove(*k);
        } else {
            rule.insert(k.to_string(), Value::from(v));
        }
    }
}

// ----- Rules -----

/// `GET .../rules` and `GET /cluster/firewall/groups/{group}`.
pub(crate) fn rules(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let s = scope(ctx, Env::Vm);
    let (rules, d) = loaded(&c.firewall, &s)?;
    let list = rules
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let mut m = object(r);
            m.insert("digest".into(), d.clone().into());
            m.insert("pos".into(), i.into());
            m
        })
        .collect();
    data(list)
}

/// `GET .../rules/{pos}`.
pub(crate) fn rule(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let s = scope(ctx, Env::Vm);
    let (rules, d) = loaded(&c.firewall, &s)?;
    let pos = position(ctx, "pos").unwrap_or(0);
    let r = rules.get(pos).cloned().ok_or_else(|| no_rule(ctx))?;
    let mut m = object(r);
    m.insert("digest".into(), d.into());
    m.insert("pos".into(), pos.into());
    Ok(Reply::Data(Value::Object(m)))
}

/// `POST .../rules` (a container's with `ct`).
fn create(ctx: &Ctx<'_>, env: Env) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let s = scope(ctx, env);
    let mut rules = stored_rules(&c.firewall, &s)?.clone();
    let mut rule = Entry::new();
    copy_rule_data(&mut rule, ctx);
    verify(&mut rule, lookup(&c.firewall, &s), env)?;
    if ctx.params.get("enable").is_none() {
        rule.insert("enable".into(), Value::from(0));
    }
    rules.insert(0, rule);
    save_rules(&mut c, &s, rules);
    Ok(Reply::Data(Value::Null))
}

pub(crate) fn create_rule(ctx: &Ctx<'_>) -> HandlerResult {
    create(ctx, scope(ctx, Env::Vm).env())
}

pub(crate) fn create_ct_rule(ctx: &Ctx<'_>) -> HandlerResult {
    create(ctx, Env::Ct)
}

/// `PUT .../rules/{pos}`: `moveto` (when it differs from `pos`) moves
/// the rule and ignores the rest; otherwise the values are copied,
/// `delete` removes keys, and the rule is checked again.
fn update(ctx: &Ctx<'_>, env: Env) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let s = scope(ctx, env);
    let (_, d) = loaded(&c.firewall, &s)?;
    assert_if_modified(&d, ctx.params.get("digest"))?;
    let mut rules = stored_rules(&c.firewall, &s)?.clone();
    let pos = position(ctx, "pos").unwrap_or(0);
    if pos >= rules.len() {
        return Err(no_rule(ctx));
    }
    match position(ctx, "moveto").filter(|m| *m != pos) {
        Some(moveto) => {
            let rule = rules[pos].clone();
            let mut moved = Vec::with_capacity(rules.len());
            for (i, r) in rules.iter().enumerate() {
                if i == pos {
                    continue;
                }
                if i == moveto {
                    moved.push(rule.clone());
                }
                moved.push(r.clone());
            }
            if moveto >= rules.len() {
                moved.push(rule);
            }
            rules = moved;
        }
        None => {
            let rule = &mut rules[pos];
            copy_rule_data(rule, ctx);
            if let Some(list) = ctx.params.get("delete") {
                for opt in split_list(list) {
                    if !RULE_KEYS.contains(&opt.as_str()) {
                        return Err(ApiError::param(
                            "delete",
                            format!("no such property ('{opt}')"),
                        ));
                    }
                    if opt == "type" || opt == "action" {
                        return Err(ApiError::param(
                            "delete",
                            format!("unable to delete required property '{opt}'"),
                        ));
                    }
                    rule.remove(&opt);
                }
            }
            verify(rule, lookup(&c.firewall, &s), env)?;
        }
    }
    save_rules(&mut c, &s, rules);
    Ok(Reply::Data(Value::Null))
}

pub(crate) fn update_rule(ctx: &Ctx<'_>) -> HandlerResult {
    update(ctx, scope(ctx, Env::Vm).env())
}

pub(crate) fn update_ct_rule(ctx: &Ctx<'_>) -> HandlerResult {
    update(ctx, Env::Ct)
}

/// `DELETE .../rules/{pos}`.
pub(crate) fn delete_rule(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let s = scope(ctx, Env::Vm);
    let (_, d) = loaded(&c.firewall, &s)?;
    assert_if_modified(&d, ctx.params.get("digest"))?;
    let mut rules = stored_rules(&c.firewall, &s)?.clone();
    let pos = position(ctx, "pos").unwrap_or(0);
    if pos >= rules.len() {
        return Err(no_rule(ctx));
    }
    rules.remove(pos);
    save_rules(&mut c, &s, rules);
    Ok(Reply::Data(Value::Null))
}

// ----- Options -----

/// `GET .../options`: the options and their digest.
pub(crate) fn options(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let s = scope(ctx, Env::Vm);
    let o = fw::options_view(conf(&c.firewall, &s), s.env(), now_secs());
    let d = fw::digest([&o]);
    let mut m = object(o);
    m.insert("digest".into(), d.into());
    Ok(Reply::Data(Value::Object(m)))
}

/// `PUT .../options`: digest, then `delete`, then the values. The
/// cluster's `enable` above 1 becomes the current time (the anti-lockout
/// call: it reads as 0 after 60 s unless set again); node and guest
/// `enable` become 0/1.
pub(crate) fn set_options(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let s = scope(ctx, Env::Vm);
    let env = s.env();
    let now = now_secs();
    let mut opts = fw::options_view(conf(&c.firewall, &s), env, now);
    assert_if_modified(&fw::digest([&opts]), ctx.params.get("digest"))?;
    let known = env.options();
    if let Some(list) = ctx.params.get("delete") {
        for opt in split_list(list) {
            if !known.iter().any(|(k, _)| *k == opt) {
                return Err(ApiError::param("delete", format!("no such option '{opt}'")));
            }
            opts.remove(&opt);
        }
    }
    for (k, _) in known {
        let Some(v) = ctx.params.get(k) else {
            continue;
        };
        let v = match (*k, env) {
            ("enable", Env::Cluster) if v.parse::<u64>().is_ok_and(|n| n > 1) => now.to_string(),
            ("enable", Env::Cluster) => v.to_string(),
            ("enable", _) => if fw::truthy(Some(&Value::from(v))) {
                "1"
            } else {
                "0"
            }
            .to_string(),
            _ => v.to_string(),
        };
        match fw::reload_option(env, k, &v) {
            Some(val) => opts.insert(k.to_string(), val),
            None => opts.remove(*k),
        };
    }
    conf_mut(&mut c.firewall, &s).options = opts;
    c.generation += 1;
    Ok(Reply::Data(Value::Null))
}

// ----- Aliases, IP sets, groups, references -----

/// `GET .../aliases`: sorted by name, with `ipversion`.
pub(crate) fn aliases(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let s = scope(ctx, Env::Vm);
    let list: Vec<Entry> = conf(&c.firewall, &s).aliases.values().cloned().collect();
    data(list_with_digest(&list).0)
}

fn named(key: &str, name: &str, comment: Option<&String>) -> Entry {
    let mut e = Entry::new();
    e.insert(key.into(), Value::from(name));
    if let Some(cm) = comment.filter(|cm| !cm.is_empty()) {
        e.insert("comment".into(), Value::from(cm.as_str()));
    }
    e
}

/// `GET .../ipset`: the sets' names and comments.
pub(crate) fn ipsets(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let s = scope(ctx, Env::Vm);
    let list: Vec<Entry> = conf(&c.firewall, &s)
        .ipsets
        .iter()
        .map(|(name, set)| named("name", name, set.comment.as_ref()))
        .collect();
    data(list_with_digest(&list).0)
}

/// `GET .../ipset/{name}`: the members (`cidr`, `nomatch`, `comment`).
pub(crate) fn ipset(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let s = scope(ctx, Env::Vm);
    let name = ctx.params.path("name");
    let set = conf(&c.firewall, &s)
        .ipsets
        .get(name)
        .ok_or_else(|| die(format!("no such IPSet '{name}'")))?;
    data(list_with_digest(&set.entries).0)
}

/// `GET /cluster/firewall/groups`.
pub(crate) fn groups(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let list: Vec<Entry> = c
        .firewall
        .cluster
        .groups
        .iter()
        .map(|(name, g)| named("group", name, g.comment.as_ref()))
        .collect();
    data(list_with_digest(&list).0)
}

/// `collect_refs`: IP sets, then aliases (sorted by name here; PVE's
/// follow its hash order).
fn collect_refs(conf: &FwConf, ty: Option<&str>, scope: &str) -> Vec<Value> {
    let mut out = Vec::new();
    if ty.is_none_or(|t| t == "ipset") {
        for (name, set) in &conf.ipsets {
            let mut m =
                json!({"type": "ipset", "name": name, "ref": format!("+{name}"), "scope": scope});
            if let Some(cm) = set.comment.as_ref().filter(|c| !c.is_empty()) {
                m["comment"] = cm.clone().into();
            }
            out.push(m);
        }
    }
    if ty.is_none_or(|t| t == "alias") {
        for (name, a) in &conf.aliases {
            let mut m = json!({"type": "alias", "name": name, "ref": name, "scope": scope});
            if let Some(cm) = a.get("comment").filter(|v| fw::truthy(Some(v))) {
                m["comment"] = cm.clone();
            }
            out.push(m);
        }
    }
    out
}

/// `GET .../refs`: what `source`/`dest` may name: the cluster's (`dc`)
/// and, for a guest, its own (`guest`). No SDN IP sets (`sdn`) exist.
pub(crate) fn refs(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let s = scope(ctx, Env::Vm);
    let ty = ctx.params.get("type");
    let mut list = collect_refs(&c.firewall.cluster, ty, "dc");
    if let Scope::Guest(..) = s {
        list.extend(collect_refs(conf(&c.firewall, &s), ty, "guest"));
    }
    Ok(Reply::Data(Value::Array(list)))
}

/// The directory indexes.
pub(crate) fn index(ctx: &Ctx<'_>) -> HandlerResult {
    let names: &[&str] = match scope(ctx, Env::Vm) {
        Scope::Guest(..) => &["rules", "aliases", "ipset", "refs", "options"],
        Scope::Host(_) => &["rules", "options", "log"],
        _ => &[
            "aliases", "rules", "options", "groups", "ipset", "macros", "refs",
        ],
    };
    Ok(Reply::Data(Value::Array(
        names.iter().map(|n| json!({ "name": n })).collect(),
    )))
}
