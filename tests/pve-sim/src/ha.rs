//! The HA stack (pve-ha-manager): its configuration files and a simulated
//! cluster resource manager (CRM) with its local resource managers (LRM).
//!
//! `ha/resources.cfg` is the guests' [`Guest::ha`]; `ha/groups.cfg` and
//! `ha/rules.cfg` are [`HaConfig`]. PVE 9 replaced groups by node-affinity
//! rules: its CRM rewrites every group a resource uses into a rule
//! `ha-group-<group>` once every node runs PVE 9 and is online
//! ([`migrate_groups`]), and until then presents them as such rules on every
//! read ([`full_rules`]) and refuses to write rules.
//!
//! The CRM acts at once where the real one acts within its 10 s round: it
//! starts and stops services as their requested state says, moves them
//! where their rules want them (`select_service_node`), and carries out
//! `migrate`/`relocate` commands. The LRM of the service's node does the
//! work in tasks owned by `root@pam`: `qmigrate`/`vzmigrate`, preceded by
//! `qmshutdown`/`vzshutdown` for an offline move (a relocation, a
//! container, never a live VM migration) and followed by `qmstart`/
//! `vzstart` when the service should run. While a move is under way the
//! service's CRM state is `migrate`/`relocate`.

use std::collections::{BTreeMap, BTreeSet};

use crate::digests::{hex, sha1};
use crate::state::{Cluster, Guest, GuestKind, HaMotion, HaResource, RunState, RunStats};
use crate::work::{self, Spec};

/// `groups.cfg` and `rules.cfg`, each in file order.
#[derive(Debug, Clone, Default)]
pub(crate) struct HaConfig {
    pub groups: Vec<HaGroup>,
    pub rules: Vec<HaRule>,
}

/// An HA group (PVE 8; deprecated in PVE 9).
#[derive(Debug, Clone)]
pub(crate) struct HaGroup {
    pub id: String,
    /// Entries as written: `pve1` or `pve1:2`.
    pub nodes: Vec<String>,
    pub restricted: Option<bool>,
    pub nofailback: Option<bool>,
    pub comment: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleType {
    NodeAffinity,
    ResourceAffinity,
}

impl RuleType {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleType::NodeAffinity => "node-affinity",
            RuleType::ResourceAffinity => "resource-affinity",
        }
    }

    pub fn parse(s: &str) -> Option<RuleType> {
        match s {
            "node-affinity" => Some(RuleType::NodeAffinity),
            "resource-affinity" => Some(RuleType::ResourceAffinity),
            _ => None,
        }
    }
}

/// An HA rule (PVE 9).
#[derive(Debug, Clone)]
pub(crate) struct HaRule {
    pub id: String,
    pub ty: RuleType,
    pub resources: BTreeSet<String>,
    /// Node affinity: node to priority.
    pub nodes: BTreeMap<String, u32>,
    pub strict: Option<bool>,
    /// Resource affinity: `positive` or `negative`.
    pub affinity: Option<String>,
    /// PVE keeps the key only when set (a rule with it is disabled).
    pub disable: bool,
    pub comment: Option<String>,
    /// Position when listed (PVE's `order`).
    pub order: u32,
}

/// The standard cluster's `groups.cfg` (its `rules.cfg` is empty: the
/// groups have not been migrated while `pve3` is down).
pub(crate) fn seed() -> HaConfig {
    HaConfig {
        groups: vec![
            HaGroup {
                id: "prod-ha".into(),
                nodes: vec!["pve1".into(), "pve2".into()],
                restricted: Some(true),
                nofailback: None,
                comment: None,
            },
            HaGroup {
                id: "prefer-pve2".into(),
                nodes: vec!["pve2:2".into(), "pve1:1".into()],
                restricted: None,
                nofailback: Some(true),
                comment: Some("pve2 first; stays where it was moved to".into()),
            },
        ],
        rules: Vec::new(),
    }
}

// ------------------------------------------------------------ identifiers

/// `vm` or `ct`.
pub(crate) fn ha_type(kind: GuestKind) -> &'static str {
    match kind {
        GuestKind::Qemu => "vm",
        GuestKind::Lxc => "ct",
    }
}

/// The guest's service id, `vm:100` / `ct:106`.
pub(crate) fn sid(g: &Guest) -> String {
    format!("{}:{}", ha_type(g.kind), g.vmid)
}

/// `PVE::HA::Config::parse_sid`: `(sid, type, name)`; a bare number is the
/// guest with that vmid.
pub(crate) fn parse_sid(c: &Cluster, s: &str) -> Result<(String, String, String), String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let g = s.parse::<u32>().ok().and_then(|id| c.guests.get(&id));
        return match g {
            Some(g) => Ok((sid(g), ha_type(g.kind).to_string(), s.to_string())),
            None => Err(format!(
                "unable to detect SID from VMID - VM/CT {s} does not exist"
            )),
        };
    }
    match s.rsplit_once(':') {
        Some((t, n)) if !t.is_empty() && !n.is_empty() && !s.contains(char::is_whitespace) => {
            Ok((s.to_string(), t.to_string(), n.to_string()))
        }
        _ => Err(format!("unable to parse service id '{s}'")),
    }
}

/// The guest a service id names (its type must match the guest's).
pub(crate) fn guest_of<'c>(c: &'c Cluster, sid: &str) -> Option<&'c Guest> {
    let (ty, name) = sid.split_once(':')?;
    let g = c.guests.get(&name.parse::<u32>().ok()?)?;
    (ha_type(g.kind) == ty && name == g.vmid.to_string()).then_some(g)
}

/// `parse_node_priority`: `pve1:2` is `("pve1", 2)`, `pve1` priority 0.
pub(crate) fn parse_node_entry(s: &str) -> Option<(String, u32)> {
    let (node, prio) = match s.split_once(':') {
        Some((n, p)) => (n, p.parse().ok()?),
        None => (s, 0),
    };
    let b = node.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-');
    ok.then(|| (node.to_string(), prio))
}

/// pve-ha-manager's parameter formats (`PVE::HA::Tools`): `pve-ha-resource-id`
/// (`^[a-z]+:\S+$`), `pve-ha-resource-or-vm-id` (that or digits) and
/// `pve-ha-node` (`node[:prio]`). Messages keep Perl's newline.
pub(crate) fn check_format(format: &str, v: &str) -> Result<(), String> {
    if format == "pve-ha-node" {
        return parse_node_entry(v)
            .map(|_| ())
            .ok_or_else(|| "value does not look like a valid ha node\n".to_string());
    }
    let typed = v.split_once(':').is_some_and(|(t, name)| {
        !t.is_empty()
            && t.bytes().all(|b| b.is_ascii_lowercase())
            && !name.is_empty()
            && !name.contains(char::is_whitespace)
    });
    let digits = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
    if typed || (digits && format == "pve-ha-resource-or-vm-id") {
        Ok(())
    } else {
        Err("value does not look like a valid ha resource id\n".to_string())
    }
}

/// A rule's `nodes` as PVE encodes them: sorted, `:prio` when not 0.
pub(crate) fn encode_nodes(nodes: &BTreeMap<String, u32>) -> String {
    nodes
        .iter()
        .map(|(n, p)| {
            if *p == 0 {
                n.clone()
            } else {
                format!("{n}:{p}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

pub(crate) fn encode_resources(r: &BTreeSet<String>) -> String {
    r.iter().cloned().collect::<Vec<_>>().join(",")
}

// ------------------------------------------------------------ the files

/// The requested state the CRM works with (`enabled` is `started`).
pub(crate) fn request(ha: &HaResource) -> &str {
    match ha.state.as_str() {
        "enabled" => "started",
        s => s,
    }
}

fn bit(b: bool) -> u8 {
    u8::from(b)
}

/// The keys `resources.cfg` holds for a service, in key order.
pub(crate) fn resource_keys(ha: &HaResource, pve9: bool) -> Vec<(&'static str, String)> {
    let mut kv = Vec::new();
    if let Some(c) = &ha.comment {
        kv.push(("comment", c.clone()));
    }
    if pve9 && (ha.failback_set || !ha.failback) {
        kv.push(("failback", bit(ha.failback).to_string()));
    }
    if let Some(g) = &ha.group {
        kv.push(("group", g.clone()));
    }
    if let Some(n) = ha.max_relocate {
        kv.push(("max_relocate", n.to_string()));
    }
    if let Some(n) = ha.max_restart {
        kv.push(("max_restart", n.to_string()));
    }
    if ha.state_set || ha.state != "started" {
        kv.push(("state", ha.state.clone()));
    }
    kv
}

fn section(header: String, kv: &[(&str, String)]) -> String {
    let mut s = header;
    for (k, v) in kv {
        s.push_str(&format!("\t{k} {v}\n"));
    }
    s
}

fn digest_of(sections: Vec<String>) -> String {
    hex(&sha1(sections.join("\n").as_bytes()))
}

/// SHA-1 of `resources.cfg` (PVE's section config digest).
pub(crate) fn resources_digest(c: &Cluster) -> String {
    let pve9 = c.local_release().major() >= 9;
    digest_of(
        c.guests
            .values()
            .filter_map(|g| {
                let ha = g.ha.as_ref()?;
                Some(section(
                    format!("{}: {}\n", ha_type(g.kind), g.vmid),
                    &resource_keys(ha, pve9),
                ))
            })
            .collect(),
    )
}

/// The keys `groups.cfg` holds for a group.
pub(crate) fn group_keys(g: &HaGroup) -> Vec<(&'static str, String)> {
    let mut kv = Vec::new();
    if let Some(c) = &g.comment {
        kv.push(("comment", c.clone()));
    }
    if let Some(b) = g.nofailback {
        kv.push(("nofailback", bit(b).to_string()));
    }
    kv.push(("nodes", g.nodes.join(",")));
    if let Some(b) = g.restricted {
        kv.push(("restricted", bit(b).to_string()));
    }
    kv
}

pub(crate) fn groups_digest(c: &Cluster) -> String {
    digest_of(
        c.ha.groups
            .iter()
            .map(|g| section(format!("group: {}\n", g.id), &group_keys(g)))
            .collect(),
    )
}

/// The keys a rule has (`rules.cfg`, and the API's answer).
pub(crate) fn rule_keys(r: &HaRule) -> Vec<(&'static str, String)> {
    let mut kv = Vec::new();
    if let Some(a) = &r.affinity {
        kv.push(("affinity", a.clone()));
    }
    if let Some(c) = &r.comment {
        kv.push(("comment", c.clone()));
    }
    if r.disable {
        kv.push(("disable", "1".to_string()));
    }
    if r.ty == RuleType::NodeAffinity {
        kv.push(("nodes", encode_nodes(&r.nodes)));
    }
    kv.push(("resources", encode_resources(&r.resources)));
    if let Some(s) = r.strict {
        kv.push(("strict", bit(s).to_string()));
    }
    kv
}

pub(crate) fn rules_digest(c: &Cluster) -> String {
    digest_of(
        c.ha.rules
            .iter()
            .map(|r| section(format!("{}: {}\n", r.ty.as_str(), r.id), &rule_keys(r)))
            .collect(),
    )
}

/// PVE 9 considers the groups migrated once `groups.cfg` has none.
pub(crate) fn groups_migrated(c: &Cluster) -> bool {
    c.ha.groups.is_empty()
}

// ------------------------------------------------------------ rules

/// `get_next_ordinal`: the *lowest* order plus one (PVE's own quirk: a new
/// rule sorts second).
fn next_ordinal(rules: &[HaRule]) -> u32 {
    rules.iter().map(|r| r.order).min().unwrap_or(0) + 1
}

/// `rules.cfg` as read: orders are the file positions.
fn file_rules(c: &Cluster) -> Vec<HaRule> {
    let mut rules = c.ha.rules.clone();
    for (i, r) in rules.iter_mut().enumerate() {
        r.order = i as u32 + 1;
    }
    rules
}

/// `migrate_groups_to_rules`: a node-affinity rule `ha-group-<group>` per
/// existing group some resource uses, added to `rules`.
fn add_group_rules(c: &Cluster, rules: &mut Vec<HaRule>) {
    let mut used: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for g in c.guests.values() {
        if let Some(group) = g.ha.as_ref().and_then(|h| h.group.as_deref()) {
            used.entry(group).or_default().insert(sid(g));
        }
    }
    for (group, resources) in used {
        let Some(grp) = c.ha.groups.iter().find(|x| x.id == group) else {
            continue;
        };
        let order = next_ordinal(rules);
        rules.push(HaRule {
            id: format!("ha-group-{group}"),
            ty: RuleType::NodeAffinity,
            resources,
            nodes: grp
                .nodes
                .iter()
                .filter_map(|e| parse_node_entry(e))
                .collect(),
            strict: grp.restricted,
            affinity: None,
            disable: false,
            comment: Some(
                grp.comment
                    .clone()
                    .unwrap_or_else(|| format!("Generated from HA group '{group}'.")),
            ),
            order,
        });
    }
}

/// The rules as the rules API and the CRM see them: `rules.cfg` plus the
/// groups not migrated yet, sorted by `order`.
pub(crate) fn full_rules(c: &Cluster) -> Vec<HaRule> {
    let mut rules = file_rules(c);
    add_group_rules(c, &mut rules);
    rules.sort_by_key(|r| r.order);
    rules
}

/// Rule id to option to messages: the feasibility checks PVE runs on the
/// enabled rules (a resource in two node-affinity rules, a resource-affinity
/// rule with fewer than two resources, a negative one with more resources
/// than nodes).
pub(crate) fn rule_errors(
    rules: &[HaRule],
    node_count: usize,
) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut errors: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut push = |rule: &str, msg: String| {
        errors
            .entry(rule.to_string())
            .or_default()
            .entry("resources".to_string())
            .or_default()
            .push(msg);
    };
    let enabled: Vec<&HaRule> = rules.iter().filter(|r| !r.disable).collect();
    let mut by_sid: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in enabled.iter().filter(|r| r.ty == RuleType::NodeAffinity) {
        for s in &r.resources {
            by_sid.entry(s).or_default().push(&r.id);
        }
    }
    let mut conflicts: Vec<(&str, &str)> = by_sid
        .iter()
        .filter(|(_, ids)| ids.len() > 1)
        .flat_map(|(s, ids)| ids.iter().map(move |id| (*id, *s)))
        .collect();
    conflicts.sort_unstable();
    for (id, s) in conflicts {
        push(
            id,
            format!("resource '{s}' is already used in another node affinity rule"),
        );
    }
    let mut ra: Vec<&&HaRule> = enabled
        .iter()
        .filter(|r| r.ty == RuleType::ResourceAffinity)
        .collect();
    ra.sort_by(|a, b| a.id.cmp(&b.id));
    for r in &ra {
        if r.resources.len() < 2 {
            push(
                &r.id,
                "rule is ineffective as there are less than two resources".into(),
            );
        }
    }
    for r in &ra {
        if r.affinity.as_deref() == Some("negative") && r.resources.len() > node_count {
            push(
                &r.id,
                "rule defines more resources than available nodes".into(),
            );
        }
    }
    errors
}

/// The rules the CRM applies: enabled and feasible.
fn active_rules(c: &Cluster) -> Vec<HaRule> {
    let rules = full_rules(c);
    let errors = rule_errors(&rules, c.nodes.len());
    rules
        .into_iter()
        .filter(|r| !r.disable && !errors.contains_key(&r.id))
        .collect()
}

/// The services `sid` shares a resource-affinity rule with: positive
/// (`together`) or negative.
pub(crate) fn affinity_partners(rules: &[HaRule], sid: &str, positive: bool) -> BTreeSet<String> {
    let want = if positive { "positive" } else { "negative" };
    rules
        .iter()
        .filter(|r| {
            r.ty == RuleType::ResourceAffinity
                && !r.disable
                && r.affinity.as_deref() == Some(want)
                && r.resources.contains(sid)
        })
        .flat_map(|r| r.resources.iter().filter(|s| *s != sid).cloned())
        .collect()
}

/// Whether the CRM tracks the service (configured and not `ignored`).
fn tracked(g: &Guest) -> bool {
    g.ha.as_ref().is_some_and(|h| h.state != "ignored")
}

/// `get_resource_motion_info`: the services that would move along
/// (positive affinity) and, per online node, those blocking a move there
/// (negative affinity), for the PVE 9 answer of migrate/relocate.
pub(crate) fn motion_info(c: &Cluster, sid: &str) -> (Vec<String>, BTreeMap<String, Vec<String>>) {
    let mut comigrated = Vec::new();
    let mut blocking: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if !guest_of(c, sid).is_some_and(tracked) {
        return (comigrated, blocking);
    }
    let rules = active_rules(c);
    for other in affinity_partners(&rules, sid, true) {
        if guest_of(c, &other).is_some_and(tracked) {
            comigrated.push(other);
        }
    }
    for n in c.nodes.iter().filter(|n| n.online) {
        for other in affinity_partners(&rules, sid, false) {
            let Some(g) = guest_of(c, &other).filter(|g| tracked(g)) else {
                continue;
            };
            let target = g.ha.as_ref().and_then(|h| h.motion.as_ref());
            if g.node != n.name || target.is_some_and(|m| m.target != n.name) {
                continue;
            }
            blocking.entry(n.name.clone()).or_default().push(other);
        }
    }
    (comigrated, blocking)
}

// ------------------------------------------------------------ the CRM

fn online(c: &Cluster, node: &str) -> bool {
    c.node(node).is_some_and(|n| n.online)
}

/// The service's state in the CRM's `manager_status` (`None`: the CRM does
/// not track it, `ignored`).
pub(crate) fn crm_state(c: &Cluster, g: &Guest) -> Option<&'static str> {
    let ha = g.ha.as_ref()?;
    if ha.state == "ignored" {
        return None;
    }
    if !online(c, &g.node) {
        return Some("fence");
    }
    if let Some(m) = &ha.motion {
        return Some(m.cmd);
    }
    Some(match request(ha) {
        "started" => "started",
        _ if g.is_running() => "request_stop",
        _ => "stopped",
    })
}

/// `get_verbose_service_state`: what `status/current` calls `state`.
pub(crate) fn verbose_state(c: &Cluster, g: &Guest) -> String {
    let Some(ha) = &g.ha else {
        return "deleting".into();
    };
    match crm_state(c, g) {
        None => "ignored".into(),
        Some("started") if !g.is_running() => "starting".into(),
        Some("stopped") if request(ha) == "disabled" => "disabled".into(),
        Some(s) => s.into(),
    }
}

/// The failback the CRM uses: a group's `nofailback` wins while groups
/// exist (`migrate_groups_to_resources`).
fn effective_failback(c: &Cluster, ha: &HaResource) -> bool {
    if let Some(group) = &ha.group
        && let Some(g) = c.ha.groups.iter().find(|g| &g.id == group)
    {
        return g.nofailback != Some(true);
    }
    ha.failback
}

/// Where a service is, or is heading to.
fn places(g: &Guest) -> Vec<&str> {
    let mut v = vec![g.node.as_str()];
    if let Some(m) = g.ha.as_ref().and_then(|h| h.motion.as_ref()) {
        v.push(&m.target);
    }
    v
}

/// `select_service_node` (`none` preference, basic scheduler: fewest HA
/// services, then name): the node the service should run on.
fn select_node(c: &Cluster, g: &Guest) -> Option<String> {
    let ha = g.ha.as_ref()?;
    let sid = sid(g);
    let rules = active_rules(c);
    let online_nodes: BTreeSet<String> = c
        .nodes
        .iter()
        .filter(|n| n.online)
        .map(|n| n.name.clone())
        .collect();
    let rule = rules
        .iter()
        .find(|r| r.ty == RuleType::NodeAffinity && r.resources.contains(&sid));
    let prio: BTreeMap<String, i64> = match rule {
        None => online_nodes.iter().map(|n| (n.clone(), 0)).collect(),
        Some(r) => {
            let mut m: BTreeMap<String, i64> = r
                .nodes
                .iter()
                .filter(|(n, _)| online_nodes.contains(*n))
                .map(|(n, p)| (n.clone(), i64::from(*p)))
                .collect();
            if r.strict != Some(true) {
                for n in &online_nodes {
                    m.entry(n.clone()).or_insert(-1);
                }
            }
            m
        }
    };
    let allowed: BTreeSet<String> = prio.keys().cloned().collect();
    let top = prio.values().max().copied()?;
    let mut pri: BTreeSet<String> = prio
        .iter()
        .filter(|(_, p)| **p == top)
        .map(|(n, _)| n.clone())
        .collect();
    let mut separate = BTreeSet::new();
    for other in affinity_partners(&rules, &sid, false) {
        if let Some(o) = guest_of(c, &other).filter(|o| tracked(o)) {
            separate.extend(places(o).into_iter().map(str::to_string));
        }
    }
    // Positive partners count where they are heading (PVE #6801).
    let mut together: BTreeMap<String, usize> = BTreeMap::new();
    for other in affinity_partners(&rules, &sid, true) {
        if let Some(o) = guest_of(c, &other).filter(|o| tracked(o))
            && let Some(p) = places(o).last()
        {
            *together.entry(p.to_string()).or_default() += 1;
        }
    }
    let current = g.node.clone();
    let affinity_ok = together.contains_key(&current) || !separate.contains(&current);
    if !effective_failback(c, ha) && allowed.contains(&current) && affinity_ok {
        return Some(current);
    }
    pri.retain(|n| !separate.contains(n));
    together.retain(|n, _| pri.contains(n));
    // The most populated node, the first by name among equals.
    let mut majority: Option<(&String, usize)> = None;
    for (n, k) in &together {
        if majority.is_none_or(|(_, best)| *k > best) {
            majority = Some((n, *k));
        }
    }
    if let Some((m, _)) = majority {
        pri = BTreeSet::from([m.clone()]);
    }
    if pri.contains(&current) {
        return Some(current);
    }
    let load = |n: &str| {
        c.guests
            .values()
            .filter(|o| tracked(o) && o.vmid != g.vmid && places(o).contains(&n))
            .count()
    };
    pri.into_iter().min_by_key(|n| (load(n), n.clone()))
}

/// The CRM's round for one service: start or stop it as requested, else
/// move it where its rules want it.
pub(crate) fn converge(c: &mut Cluster, vmid: u32) {
    let Some(g) = c.guests.get(&vmid) else {
        return;
    };
    let Some(ha) = &g.ha else {
        return;
    };
    if ha.state == "ignored" || ha.motion.is_some() || !online(c, &g.node) {
        return;
    }
    if work::flocked(c, vmid) {
        // The LRM is at it already.
        return;
    }
    let started = request(ha) == "started";
    if started && !g.is_running() {
        lrm_power(c, vmid, true);
    } else if !started && g.is_running() {
        lrm_power(c, vmid, false);
    } else if started
        && let Some(node) = select_node(c, g)
        && node != g.node
    {
        let cmd = if g.kind == GuestKind::Qemu {
            "migrate"
        } else {
            "relocate"
        };
        start_motion(c, vmid, cmd, &node);
    }
}

/// Whether the CRM takes a `migrate`/`relocate` command for the service:
/// tracked, on an online node, not moving already, to another online node.
/// (PVE only logs why not: `crm command error - node not online`, `ignore
/// crm command - service already on target node`.)
fn takes_command(c: &Cluster, g: &Guest, target: &str) -> bool {
    tracked(g)
        && online(c, &g.node)
        && g.ha.as_ref().is_some_and(|h| h.motion.is_none())
        && online(c, target)
        && g.node != target
}

/// A `migrate`/`relocate` command for `sid`, as the CRM carries it out: not
/// at all when it cannot (see [`takes_command`]) or when a service in
/// negative affinity is on (or heading to) the target; else the service
/// and those in positive affinity with it move.
pub(crate) fn request_motion(c: &mut Cluster, sid: &str, cmd: &'static str, target: &str) {
    let Some(g) = guest_of(c, sid) else {
        return;
    };
    if !takes_command(c, g, target) {
        return;
    }
    let vmid = g.vmid;
    let rules = active_rules(c);
    for other in affinity_partners(&rules, sid, false) {
        if guest_of(c, &other).is_some_and(|o| tracked(o) && places(o).contains(&target)) {
            return;
        }
    }
    start_motion(c, vmid, cmd, target);
    for other in affinity_partners(&rules, sid, true) {
        let Some(o) = guest_of(c, &other) else {
            continue;
        };
        if takes_command(c, o, target) {
            let v = o.vmid;
            start_motion(c, v, cmd, target);
        }
    }
}

fn word(kind: GuestKind) -> &'static str {
    match kind {
        GuestKind::Qemu => "VM",
        GuestKind::Lxc => "CT",
    }
}

fn lock_error(g: &Guest) -> Option<String> {
    g.lock
        .as_ref()
        .map(|l| format!("{} is locked ({l})", word(g.kind)))
}

fn start_guest(g: &mut Guest) {
    let mem = g.maxmem() / 4;
    crate::seed::running(g, 0, 0.012, mem);
}

fn stop_guest(g: &mut Guest) {
    g.run = RunState::Stopped;
    g.stats = RunStats::default();
}

fn end_motion(c: &mut Cluster, vmid: u32) {
    if let Some(ha) = c.guests.get_mut(&vmid).and_then(|g| g.ha.as_mut()) {
        ha.motion = None;
    }
    c.generation += 1;
}

/// The LRM starting (`qmstart`/`vzstart`) or shutting down the service.
fn lrm_power(c: &mut Cluster, vmid: u32, start: bool) {
    let Some(g) = c.guests.get(&vmid) else {
        return;
    };
    let ty = match (g.kind, start) {
        (GuestKind::Qemu, true) => "qmstart",
        (GuestKind::Qemu, false) => "qmshutdown",
        (GuestKind::Lxc, true) => "vzstart",
        (GuestKind::Lxc, false) => "vzshutdown",
    };
    let mut spec = Spec::new(&g.node, ty, vmid.to_string(), "root@pam").flock(vmid);
    if let Some(err) = lock_error(g).filter(|_| g.lock.as_deref() != Some("suspended") || !start) {
        spec = spec.fail(err);
    } else if start && g.template {
        spec = spec.fail(format!(
            "you can't start a {} if it's a template",
            if g.kind == GuestKind::Qemu {
                "vm"
            } else {
                "CT"
            }
        ));
    } else {
        spec = spec.effect(move |c: &mut Cluster| {
            if let Some(g) = c.guests.get_mut(&vmid) {
                if start {
                    if g.lock.as_deref() == Some("suspended") {
                        g.lock = None;
                    }
                    start_guest(g);
                } else {
                    stop_guest(g);
                }
            }
            converge(c, vmid);
        });
    }
    work::spawn(c, spec);
}

/// The CRM switching the service to `migrate`/`relocate`, and the LRM
/// moving it: live for a running VM's `migrate`, else shut down first.
fn start_motion(c: &mut Cluster, vmid: u32, cmd: &'static str, target: &str) {
    let Some(g) = c.guests.get_mut(&vmid) else {
        return;
    };
    let Some(ha) = g.ha.as_mut() else {
        return;
    };
    ha.motion = Some(HaMotion {
        cmd,
        target: target.to_string(),
    });
    let running = g.is_running();
    let live = cmd == "migrate" && g.kind == GuestKind::Qemu && running;
    c.generation += 1;
    if running && !live {
        shutdown_then_migrate(c, vmid, target.to_string());
    } else {
        migrate_task(c, vmid, target.to_string(), live);
    }
}

fn shutdown_then_migrate(c: &mut Cluster, vmid: u32, target: String) {
    let Some(g) = c.guests.get(&vmid) else {
        return;
    };
    let ty = match g.kind {
        GuestKind::Qemu => "qmshutdown",
        GuestKind::Lxc => "vzshutdown",
    };
    let spec = Spec::new(&g.node, ty, vmid.to_string(), "root@pam").flock(vmid);
    let spec = match lock_error(g) {
        Some(err) => spec
            .fail(err)
            .always(move |c: &mut Cluster| end_motion(c, vmid)),
        None => spec
            .effect(move |c: &mut Cluster| {
                if let Some(g) = c.guests.get_mut(&vmid) {
                    stop_guest(g);
                }
                migrate_task(c, vmid, target, false);
            })
            .undo(move |c: &mut Cluster| end_motion(c, vmid)),
    };
    work::spawn(c, spec);
}

/// The LRM's `qmigrate`/`vzmigrate` (HA migrates with local disks).
fn migrate_task(c: &mut Cluster, vmid: u32, target: String, live: bool) {
    let Some(g) = c.guests.get(&vmid) else {
        return;
    };
    let ty = match g.kind {
        GuestKind::Qemu => "qmigrate",
        GuestKind::Lxc => "vzmigrate",
    };
    let w = word(g.kind);
    let ip = c.node(&target).map(|n| n.ip.clone()).unwrap_or_default();
    let mut spec = Spec::new(&g.node, ty, vmid.to_string(), "root@pam");
    if let Some(err) = lock_error(g) {
        let spec = spec
            .fail(err)
            .always(move |c: &mut Cluster| end_motion(c, vmid));
        work::spawn(c, spec);
        return;
    }
    let t = |s: u64, m: String| format!("{} {m}", work::stamp(s));
    spec.line(
        0.0,
        t(
            0,
            format!("starting migration of {w} {vmid} to node '{target}' ({ip})"),
        ),
    );
    let disks: Vec<String> = c
        .volumes
        .iter()
        .filter(|v| {
            v.vmid == Some(vmid) && v.node.is_some() && matches!(v.content, "images" | "rootdir")
        })
        .map(|v| v.volid.clone())
        .collect();
    for d in &disks {
        spec.line(0.05, t(0, format!("found local disk '{d}' (attached)")));
    }
    if live {
        spec.line(
            0.2,
            t(2, format!("starting VM {vmid} on remote node '{target}'")),
        );
        spec.line(
            0.5,
            t(
                4,
                format!("starting online/live migration on unix:/run/qemu-server/{vmid}.migrate"),
            ),
        );
        spec.line(0.8, t(9, "migration status: completed".into()));
    } else {
        for d in &disks {
            spec.line(0.3, t(1, format!("copying local disk images ({d})")));
        }
    }
    spec.line(
        0.99,
        t(
            10,
            "migration finished successfully (duration 00:00:10)".into(),
        ),
    );
    let spec = spec
        .lock(vmid, "migrate")
        .effect(move |c: &mut Cluster| {
            move_guest(c, vmid, &target, live);
            end_motion(c, vmid);
            converge(c, vmid);
        })
        .undo(move |c: &mut Cluster| end_motion(c, vmid));
    work::spawn(c, spec);
}

/// The guest and its local disks now live on `target`.
fn move_guest(c: &mut Cluster, vmid: u32, target: &str, keep_running: bool) {
    let Some(g) = c.guests.get_mut(&vmid) else {
        return;
    };
    g.node = target.to_string();
    if !keep_running {
        stop_guest(g);
    }
    for v in &mut c.volumes {
        if v.vmid == Some(vmid) && v.node.is_some() && matches!(v.content, "images" | "rootdir") {
            v.node = Some(target.to_string());
        }
    }
}

/// What PVE 9's CRM does once every node runs PVE 9 and is online
/// (`migrate_group_persistently`): the groups resources use become
/// node-affinity rules `ha-group-<group>` in `rules.cfg`, those resources
/// lose `group` (and get `failback 0` where the group had `nofailback`),
/// and `groups.cfg` goes. `false` when there is nothing to migrate or the
/// cluster runs PVE 8.
pub(crate) fn migrate_groups(c: &mut Cluster) -> bool {
    if c.local_release().major() < 9 || groups_migrated(c) {
        return false;
    }
    let mut rules = file_rules(c);
    add_group_rules(c, &mut rules);
    rules.sort_by_key(|r| r.order);
    c.ha.rules = rules;
    let nofailback: BTreeSet<String> =
        c.ha.groups
            .iter()
            .filter(|g| g.nofailback == Some(true))
            .map(|g| g.id.clone())
            .collect();
    for g in c.guests.values_mut() {
        let Some(ha) = g.ha.as_mut() else {
            continue;
        };
        let Some(group) = ha.group.take() else {
            continue;
        };
        if nofailback.contains(&group) {
            ha.failback = false;
            ha.failback_set = true;
        }
    }
    c.ha.groups.clear();
    c.generation += 1;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_entries_and_their_encoding() {
        assert_eq!(parse_node_entry("pve1:2"), Some(("pve1".into(), 2)));
        assert_eq!(parse_node_entry("pve1"), Some(("pve1".into(), 0)));
        assert_eq!(parse_node_entry("pve_1"), None);
        assert_eq!(parse_node_entry("pve1:x"), None);
        let nodes = BTreeMap::from([("pve2".to_string(), 1), ("pve1".to_string(), 0)]);
        assert_eq!(encode_nodes(&nodes), "pve1,pve2:1");
    }

    #[test]
    fn groups_show_as_rules_until_migrated() {
        let mut c = crate::seed::build(&crate::Scenario::Standard);
        let rules = full_rules(&c);
        assert_eq!(rules.len(), 1);
        let r = &rules[0];
        assert_eq!(
            (r.id.as_str(), encode_resources(&r.resources), r.strict),
            ("ha-group-prod-ha", "vm:100,vm:103".to_string(), Some(true))
        );
        assert_eq!(
            r.comment.as_deref(),
            Some("Generated from HA group 'prod-ha'.")
        );
        assert!(c.ha.rules.is_empty() && !groups_migrated(&c));
        assert!(migrate_groups(&mut c));
        assert!(groups_migrated(&c) && c.ha.rules.len() == 1);
        assert!(c.guests[&100].ha.as_ref().unwrap().group.is_none());
        assert!(!migrate_groups(&mut c));
    }

    #[test]
    fn sids_parse_like_pve() {
        let c = crate::seed::build(&crate::Scenario::Standard);
        assert_eq!(
            parse_sid(&c, "106").unwrap(),
            ("ct:106".into(), "ct".into(), "106".into())
        );
        assert_eq!(
            parse_sid(&c, "999").unwrap_err(),
            "unable to detect SID from VMID - VM/CT 999 does not exist"
        );
        assert_eq!(parse_sid(&c, "vm:100").unwrap().1, "vm");
        assert!(guest_of(&c, "vm:106").is_none() && guest_of(&c, "ct:106").is_some());
    }
}
