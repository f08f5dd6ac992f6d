//! Whether a change to a node's or the cluster's firewall would cut the
//! management network off the API (tcp/8006) or SSH (tcp/22).
//!
//! pve-firewall builds each node's input chain in this order: the node's
//! own rules, then the cluster's, then an ACCEPT of the API, SSH, SPICE
//! and VNC ports from the `management` IP set (the local network when that
//! set is not defined), then the input policy. So a policy never cuts the
//! management network off, but an enabled `in` rule (or a security group
//! it applies) that DROPs or REJECTs what the management network sends to
//! 8006 or 22 does, when it comes before any rule that ACCEPTs it, and
//! only while the firewall is on (the cluster's `enable`, and the node's,
//! which defaults to on).
//!
//! The judgement errs towards a cut: a DROP whose source, destination,
//! interface or source port might match is a cut; an ACCEPT must surely
//! match to save the day. A change is refused for what it newly cuts, on
//! some node, compared with the rules as they are, so a rule that already
//! cuts (and that the agent's own connection evidently survives) does
//! not block every later change.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::api::Pve;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;

use super::Ruleset;

/// The ports guarded, and what they carry.
pub const GUARDED: [(u16, &str); 2] = [
    (8006, "the API and web UI (tcp/8006)"),
    (22, "SSH (tcp/22)"),
];

/// A node's firewall, as far as the guard needs it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeFirewall {
    /// The node's `enable` option (Proxmox's default: on).
    pub enabled: bool,
    /// Its own rules, in order.
    pub rules: Vec<Map<String, Value>>,
}

/// The firewalls that decide what reaches the nodes' management ports.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scene {
    /// The cluster's `enable` option: the firewall's master switch.
    pub cluster_enabled: bool,
    /// The cluster's rules, in order.
    pub cluster_rules: Vec<Map<String, Value>>,
    /// Each node looked at, by name.
    pub nodes: BTreeMap<String, NodeFirewall>,
    /// Security groups' rules, by name.
    pub groups: BTreeMap<String, Vec<Map<String, Value>>>,
    /// The `management` IP set's IPv4 networks; empty when it is not
    /// defined (then Proxmox uses the local network, which we cannot see).
    pub management: Vec<Net>,
}

/// One cut: what a node no longer lets through, and the rule that stops it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cut {
    /// The node.
    pub node: String,
    /// The port.
    pub port: u16,
    /// The rule: "rule 0 of the cluster (in DROP tcp dport 8006)".
    pub by: String,
}

impl Scene {
    /// Reads the cluster's options, rules, groups and `management` set,
    /// and for each of `nodes` its options and rules.
    pub fn read(pve: &mut dyn Pve, nodes: &[String]) -> Result<Scene, ToolError> {
        let cluster = ApiPath::new("cluster").lit("firewall");
        let options = fetch::object(pve, &cluster.clone().lit("options"))?;
        let mut scene = Scene {
            cluster_enabled: pj::flag(options.get("enable")),
            cluster_rules: Ruleset::read(pve, &cluster.clone().lit("rules"))?.rules,
            ..Scene::default()
        };
        for node in nodes {
            let base = ApiPath::new("nodes").seg(node).lit("firewall");
            let options = fetch::object(pve, &base.clone().lit("options"))?;
            scene.nodes.insert(
                node.clone(),
                NodeFirewall {
                    enabled: options.get("enable").is_none_or(|v| pj::flag(Some(v))),
                    rules: Ruleset::read(pve, &base.lit("rules"))?.rules,
                },
            );
        }
        let sets = fetch::list(pve, &cluster.clone().lit("ipset"))?;
        if sets
            .iter()
            .any(|s| pj::text(s.get("name")).as_deref() == Some("management"))
        {
            let members = fetch::list(pve, &cluster.clone().lit("ipset").lit("management"))?;
            scene.management = members
                .iter()
                .filter(|m| !pj::flag(m.get("nomatch")))
                .filter_map(|m| pj::text(m.get("cidr")))
                .filter_map(|c| Net::parse(&c))
                .collect();
        }
        let groups: Vec<String> = scene
            .all_rules()
            .filter(|r| pj::text(r.get("type")).as_deref() == Some("group"))
            .filter_map(|r| pj::text(r.get("action")))
            .collect();
        for group in groups {
            if let std::collections::btree_map::Entry::Vacant(slot) = scene.groups.entry(group) {
                let path = cluster.clone().lit("groups").seg(slot.key());
                slot.insert(Ruleset::read(pve, &path)?.rules);
            }
        }
        Ok(scene)
    }

    fn all_rules(&self) -> impl Iterator<Item = &Map<String, Value>> {
        self.cluster_rules
            .iter()
            .chain(self.nodes.values().flat_map(|n| n.rules.iter()))
    }

    /// What the scene cuts off, node by node.
    pub fn cuts(&self) -> Vec<Cut> {
        let mut cuts = Vec::new();
        for (name, node) in &self.nodes {
            if !self.cluster_enabled || !node.enabled {
                continue;
            }
            let chain = node
                .rules
                .iter()
                .enumerate()
                .map(|(i, r)| (format!("rule {i} of node {name}"), r))
                .chain(
                    self.cluster_rules
                        .iter()
                        .enumerate()
                        .map(|(i, r)| (format!("rule {i} of the cluster"), r)),
                );
            for (port, _) in GUARDED {
                if let Some(by) = self.first_verdict(chain.clone(), port) {
                    cuts.push(Cut {
                        node: name.clone(),
                        port,
                        by,
                    });
                }
            }
        }
        cuts
    }

    /// The rule that drops what the management network sends to `port`,
    /// if one does before anything surely accepts it.
    fn first_verdict<'a>(
        &self,
        chain: impl Iterator<Item = (String, &'a Map<String, Value>)>,
        port: u16,
    ) -> Option<String> {
        for (origin, rule) in chain {
            if !enabled(rule) {
                continue;
            }
            let kind = pj::text(rule.get("type")).unwrap_or_default();
            let action = pj::text(rule.get("action")).unwrap_or_default();
            match kind.as_str() {
                "in" => match (verdict(&action), self.matches(rule, port)) {
                    (Verdict::Stop, Match::Surely | Match::Maybe) => {
                        return Some(format!("{origin} ({})", super::describe(rule)));
                    }
                    (Verdict::Pass, Match::Surely) => return None,
                    _ => {}
                },
                "group" => {
                    for (i, inner) in self.groups.get(&action).into_iter().flatten().enumerate() {
                        if !enabled(inner) || pj::text(inner.get("type")).as_deref() != Some("in") {
                            continue;
                        }
                        let inner_action = pj::text(inner.get("action")).unwrap_or_default();
                        match (verdict(&inner_action), self.matches(inner, port)) {
                            (Verdict::Stop, Match::Surely | Match::Maybe) => {
                                return Some(format!(
                                    "{origin} (group {action}), its rule {i} ({})",
                                    super::describe(inner)
                                ));
                            }
                            (Verdict::Pass, Match::Surely) => return None,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// Whether `rule` matches tcp traffic from the management network to
    /// `port`.
    fn matches(&self, rule: &Map<String, Value>, port: u16) -> Match {
        let text = |k: &str| pj::text(rule.get(k)).filter(|s| !s.is_empty());
        let mut m = Match::Surely;
        if let Some(proto) = text("proto")
            && !matches!(proto.to_ascii_lowercase().as_str(), "tcp" | "6")
        {
            return Match::Never;
        }
        if let Some(mac) = text("macro") {
            // Only SSH's macro names a guarded port; the others never do.
            if !(mac.eq_ignore_ascii_case("ssh") && port == 22) {
                return Match::Never;
            }
        }
        if let Some(dport) = text("dport") {
            m = m.min(ports_match(&dport, port));
        }
        for k in ["sport", "dest", "iface"] {
            if text(k).is_some() {
                m = m.min(Match::Maybe);
            }
        }
        if let Some(source) = text("source") {
            m = m.min(self.source_match(&source));
        }
        m
    }

    fn source_match(&self, source: &str) -> Match {
        let set = source.trim_start_matches("+dc/").trim_start_matches('+');
        if source.starts_with('+') && set == "management" {
            return Match::Surely;
        }
        let nets: Option<Vec<Net>> = source.split(',').map(Net::parse).collect();
        match nets {
            Some(nets) if !self.management.is_empty() => {
                if self
                    .management
                    .iter()
                    .all(|m| nets.iter().any(|n| n.contains(m)))
                {
                    Match::Surely
                } else if self
                    .management
                    .iter()
                    .any(|m| nets.iter().any(|n| n.overlaps(m)))
                {
                    Match::Maybe
                } else {
                    Match::Never
                }
            }
            // An alias, another set, a range, or an unknown management
            // network: it may match.
            _ => Match::Maybe,
        }
    }
}

/// What a change newly cuts: the cuts of `after` that `before` lacks.
pub fn new_cuts(before: &Scene, after: &Scene) -> Vec<Cut> {
    let old: Vec<(String, u16)> = before
        .cuts()
        .into_iter()
        .map(|c| (c.node, c.port))
        .collect();
    after
        .cuts()
        .into_iter()
        .filter(|c| !old.contains(&(c.node.clone(), c.port)))
        .collect()
}

/// The cuts in words: "the API and web UI (tcp/8006) on pve1 by rule 0 of
/// the cluster (in DROP tcp dport 8006)".
pub fn describe(cuts: &[Cut]) -> String {
    cuts.iter()
        .map(|c| {
            let what = GUARDED
                .iter()
                .find(|(p, _)| *p == c.port)
                .map_or("a management port", |(_, w)| w);
            format!("{what} on {} by {}", c.node, c.by)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Refuses a change that newly cuts the management network off, unless
/// the call allows it; then the words of the warning the plan carries.
pub fn guard(before: &Scene, after: &Scene, allow: bool) -> Result<Option<String>, ToolError> {
    let cuts = new_cuts(before, after);
    if cuts.is_empty() {
        return Ok(None);
    }
    let what = describe(&cuts);
    if allow {
        return Ok(Some(format!(
            "WARNING: this cuts the management network off {what}"
        )));
    }
    Err(ToolError::Precondition(format!(
        "this change would cut the management network off {what}. Nothing was sent. Put a rule \
         that ACCEPTs tcp from +management to that port above it, or, if you mean to cut it, \
         call again with allow_lockout: true."
    )))
}

fn enabled(rule: &Map<String, Value>) -> bool {
    rule.get("enable").is_none_or(|v| pj::flag(Some(v)))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Stop,
    Pass,
    Other,
}

fn verdict(action: &str) -> Verdict {
    match action {
        "DROP" | "REJECT" => Verdict::Stop,
        "ACCEPT" => Verdict::Pass,
        _ => Verdict::Other,
    }
}

/// How surely a rule matches: ordered so that `min` combines conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Match {
    Never,
    Maybe,
    Surely,
}

/// Whether a `dport` list (`22`, `8000:8100`, `ssh,https`) holds `port`.
fn ports_match(spec: &str, port: u16) -> Match {
    let mut unknown = false;
    for item in spec.split(',') {
        let (lo, hi) = item.split_once(':').unwrap_or((item, item));
        match (service(lo), service(hi)) {
            (Some(lo), Some(hi)) if lo <= port && port <= hi => return Match::Surely,
            (Some(_), Some(_)) => {}
            _ => unknown = true,
        }
    }
    if unknown { Match::Maybe } else { Match::Never }
}

/// A port by number or by the service names that matter here.
fn service(s: &str) -> Option<u16> {
    match s {
        "ssh" => Some(22),
        "http" => Some(80),
        "https" => Some(443),
        _ => s.parse().ok(),
    }
}

/// An IPv4 network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    addr: u32,
    prefix: u8,
}

impl Net {
    /// `10.0.0.0/24` or `10.0.0.5`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Net> {
        let (ip, prefix) = match s.split_once('/') {
            Some((ip, p)) => (ip, p.parse::<u8>().ok().filter(|p| *p <= 32)?),
            None => (s, 32),
        };
        let ip: std::net::Ipv4Addr = ip.parse().ok()?;
        Some(Net {
            addr: u32::from(ip) & mask(prefix),
            prefix,
        })
    }

    fn contains(&self, other: &Net) -> bool {
        self.prefix <= other.prefix && other.addr & mask(self.prefix) == self.addr
    }

    fn overlaps(&self, other: &Net) -> bool {
        self.contains(other) || other.contains(self)
    }
}

fn mask(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn scene(cluster: Vec<Value>, node: Vec<Value>) -> Scene {
        Scene {
            cluster_enabled: true,
            cluster_rules: cluster.into_iter().map(rule).collect(),
            nodes: [(
                "pve1".to_string(),
                NodeFirewall {
                    enabled: true,
                    rules: node.into_iter().map(rule).collect(),
                },
            )]
            .into(),
            groups: BTreeMap::new(),
            management: vec![Net::parse("10.0.0.0/24").unwrap()],
        }
    }

    #[test]
    fn a_drop_before_any_accept_cuts_and_an_accept_above_it_saves() {
        let drop =
            json!({"type": "in", "action": "DROP", "proto": "tcp", "dport": "8006", "enable": 1});
        let cut = scene(vec![drop.clone()], vec![]).cuts();
        assert_eq!(cut.len(), 1);
        assert_eq!(cut[0].port, 8006);
        assert!(
            cut[0].by.starts_with("rule 0 of the cluster"),
            "{:?}",
            cut[0]
        );
        // The node's rules come first.
        let accept =
            json!({"type": "in", "action": "ACCEPT", "source": "+management", "enable": 1});
        assert!(scene(vec![drop.clone()], vec![accept]).cuts().is_empty());
        // Disabled, another protocol, another network, firewall off.
        let off = json!({"type": "in", "action": "DROP", "dport": "8006", "enable": 0});
        assert!(scene(vec![off], vec![]).cuts().is_empty());
        let udp = json!({"type": "in", "action": "DROP", "proto": "udp", "enable": 1});
        assert!(scene(vec![udp], vec![]).cuts().is_empty());
        let elsewhere =
            json!({"type": "in", "action": "DROP", "source": "192.168.9.0/24", "enable": 1});
        assert!(scene(vec![elsewhere], vec![]).cuts().is_empty());
        let mut disabled = scene(vec![drop], vec![]);
        disabled.cluster_enabled = false;
        assert!(disabled.cuts().is_empty());
    }

    #[test]
    fn doubt_counts_as_a_cut_and_macros_and_ranges_are_read() {
        let by_alias = json!({"type": "in", "action": "REJECT", "source": "office", "enable": 1});
        assert_eq!(scene(vec![by_alias], vec![]).cuts().len(), 2);
        let ssh = json!({"type": "in", "action": "DROP", "macro": "SSH", "enable": 1});
        let cuts = scene(vec![ssh], vec![]).cuts();
        assert_eq!(cuts.iter().map(|c| c.port).collect::<Vec<_>>(), vec![22]);
        let range = json!({"type": "in", "action": "DROP", "dport": "8000:8100", "enable": 1});
        assert_eq!(scene(vec![range], vec![]).cuts()[0].port, 8006);
        // An ACCEPT that may not match does not save.
        let unsure = json!({"type": "in", "action": "ACCEPT", "iface": "vmbr1", "enable": 1});
        let drop = json!({"type": "in", "action": "DROP", "enable": 1});
        assert_eq!(scene(vec![unsure, drop], vec![]).cuts().len(), 2);
    }

    #[test]
    fn a_group_rule_is_judged_by_its_rules() {
        let mut s = scene(
            vec![json!({"type": "group", "action": "lockdown", "enable": 1})],
            vec![],
        );
        s.groups.insert(
            "lockdown".into(),
            vec![rule(
                json!({"type": "in", "action": "DROP", "dport": "22", "enable": 1}),
            )],
        );
        let cuts = s.cuts();
        assert_eq!(cuts.len(), 1);
        assert!(cuts[0].by.contains("group lockdown"), "{:?}", cuts[0]);
    }

    #[test]
    fn only_new_cuts_are_refused_and_allow_lockout_turns_them_into_a_warning() {
        let before = scene(vec![], vec![]);
        let after = scene(
            vec![json!({"type": "in", "action": "DROP", "dport": "22", "enable": 1})],
            vec![],
        );
        let refused = guard(&before, &after, false).unwrap_err();
        assert!(
            refused.message().contains("SSH (tcp/22) on pve1"),
            "{refused:?}"
        );
        assert!(refused.message().contains("allow_lockout: true"));
        let warning = guard(&before, &after, true).unwrap().unwrap();
        assert!(warning.starts_with("WARNING"), "{warning}");
        assert_eq!(guard(&after, &after, false).unwrap(), None);
    }

    #[test]
    fn networks_contain_and_overlap() {
        let a = Net::parse("10.0.0.0/16").unwrap();
        let b = Net::parse("10.0.3.4").unwrap();
        assert!(a.contains(&b) && !b.contains(&a) && b.overlaps(&a));
        assert_eq!(Net::parse("10.0.0.0/33"), None);
        assert_eq!(Net::parse("fe80::1"), None);
        assert_eq!(ports_match("ssh,https", 22), Match::Surely);
        assert_eq!(ports_match("80,443", 22), Match::Never);
        assert_eq!(ports_match("web", 22), Match::Maybe);
    }
}
