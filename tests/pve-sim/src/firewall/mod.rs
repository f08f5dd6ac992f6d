//! The firewall's configuration files as pve-firewall reads them:
//! `/etc/pve/firewall/cluster.fw` (options, aliases, IP sets, rules and
//! security groups), each node's `host.fw` (options, rules) and each
//! guest's `<vmid>.fw` (options, aliases, IP sets, rules). The API is in
//! `handlers::firewall`.
//!
//! The state holds what a write leaves in the file, normalised as reading
//! it back does ([`reload_rule`], [`reload_option`]); what pve-firewall
//! computes on every load (a rule's `ipversion`, an expired anti-lockout
//! `enable` timestamp) is computed when rendered, and so are the digests:
//! SHA-1 over every entry's sorted `key:value` lines, as
//! `copy_list_with_digest` / `copy_opject_with_digest` do.

mod seed;
mod verify;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::digests::{hex, sha1};

pub(crate) use seed::primary as seed_primary;
pub(crate) use verify::{check_format, verify_rule};

/// One parsed line (a rule, an alias, an IP set member) or an options
/// section: keys in sorted order, numbers where PVE's parser makes them.
pub(crate) type Entry = BTreeMap<String, Value>;

/// `rule_env`: where a rule set lives, which decides what it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Env {
    Cluster,
    Host,
    Vm,
    Ct,
    Group,
}

impl Env {
    pub fn as_str(self) -> &'static str {
        match self {
            Env::Cluster => "cluster",
            Env::Host => "host",
            Env::Vm => "vm",
            Env::Ct => "ct",
            Env::Group => "group",
        }
    }

    /// The rule types allowed (`$rule_env_direction_lookup`).
    fn types(self) -> &'static [&'static str] {
        match self {
            Env::Vm | Env::Ct => &["in", "out", "group"],
            Env::Group => &["in", "out", "forward"],
            Env::Cluster | Env::Host => &["in", "out", "forward", "group"],
        }
    }

    /// Whether rules may name an interface (`-i`), and whether the file
    /// keeps it (`format_rules`' `$allow_iface`).
    pub fn allow_iface(self) -> bool {
        self != Env::Group
    }

    /// The options a `PUT .../options` may set, and whether the parser
    /// reads each back as a number.
    pub fn options(self) -> &'static [(&'static str, bool)] {
        match self {
            Env::Cluster => &[
                ("ebtables", true),
                ("enable", true),
                ("log_ratelimit", false),
                ("policy_forward", false),
                ("policy_in", false),
                ("policy_out", false),
            ],
            Env::Host => &[
                ("enable", true),
                ("log_level_forward", false),
                ("log_level_in", false),
                ("log_level_out", false),
                ("log_nf_conntrack", true),
                ("ndp", true),
                ("nf_conntrack_allow_invalid", true),
                ("nf_conntrack_helpers", false),
                ("nf_conntrack_max", true),
                ("nf_conntrack_tcp_timeout_established", true),
                ("nf_conntrack_tcp_timeout_syn_recv", true),
                ("nftables", true),
                ("nosmurfs", true),
                ("protection_synflood", true),
                ("protection_synflood_burst", true),
                ("protection_synflood_rate", true),
                ("smurf_log_level", false),
                ("tcp_flags_log_level", false),
                ("tcpflags", true),
            ],
            Env::Vm | Env::Ct => &[
                ("dhcp", true),
                ("enable", true),
                ("ipfilter", true),
                ("log_level_in", false),
                ("log_level_out", false),
                ("macfilter", true),
                ("ndp", true),
                ("policy_in", false),
                ("policy_out", false),
                ("radv", true),
            ],
            Env::Group => &[],
        }
    }
}

/// An `[IPSET name] # comment` section; members sorted by `cidr` as the
/// file is written.
#[derive(Debug, Clone, Default)]
pub(crate) struct IpSet {
    pub comment: Option<String>,
    /// `cidr`, `nomatch` (1) and `comment`.
    pub entries: Vec<Entry>,
}

/// A `[group name] # comment` section of `cluster.fw`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Group {
    pub comment: Option<String>,
    pub rules: Vec<Entry>,
}

/// One firewall config file. A missing file reads as an empty one.
#[derive(Debug, Clone, Default)]
pub(crate) struct FwConf {
    pub options: Entry,
    /// Rules in file order (position 0 first), without `ipversion`.
    pub rules: Vec<Entry>,
    /// By lower-case name: `name`, `cidr`, `ipversion`, `comment`.
    pub aliases: BTreeMap<String, Entry>,
    /// By name (lower case, as the parser keys them).
    pub ipsets: BTreeMap<String, IpSet>,
    /// Security groups (`cluster.fw` only), by lower-case name.
    pub groups: BTreeMap<String, Group>,
}

/// Every firewall config file of the cluster.
#[derive(Debug, Clone, Default)]
pub(crate) struct Firewall {
    pub cluster: FwConf,
    /// Each node's `host.fw`.
    pub hosts: BTreeMap<String, FwConf>,
    /// Each guest's `<vmid>.fw` (shared by the qemu and lxc paths).
    pub guests: BTreeMap<u32, FwConf>,
}

/// Where verification resolves IP sets and aliases: the cluster's file
/// (PVE's `$cluster_conf`; `None` for the cluster's own rules and
/// security groups, which PVE loads as `$fw_conf`) and the rules' own
/// file.
#[derive(Clone, Copy)]
pub(crate) struct Lookup<'a> {
    pub cluster: Option<&'a FwConf>,
    pub local: &'a FwConf,
}

/// Perl's truth of a scalar: not undef, `""` or `"0"`.
pub(crate) fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty() && s != "0",
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::Bool(b)) => *b,
        Some(_) => true,
    }
}

/// A value as Perl prints it.
pub(crate) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `copy_list_with_digest`'s SHA-1: every entry's keys in sorted order as
/// `key:value\n`.
pub(crate) fn digest<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> String {
    let mut buf = String::new();
    for e in entries {
        for (k, v) in e {
            if v.is_null() || v.is_object() || v.is_array() {
                continue;
            }
            buf.push_str(k);
            buf.push(':');
            buf.push_str(&text(v));
            buf.push('\n');
        }
    }
    hex(&sha1(buf.as_bytes()))
}

/// The entries as JSON objects, each with the list's `digest`.
pub(crate) fn list_with_digest(entries: &[Entry]) -> (Vec<Map<String, Value>>, String) {
    let d = digest(entries);
    let list = entries
        .iter()
        .map(|e| {
            let mut m: Map<String, Value> = e.clone().into_iter().collect();
            m.insert("digest".into(), d.clone().into());
            m
        })
        .collect();
    (list, d)
}

/// An entry from `(key, value)` pairs as the config parser types them:
/// `enable`, `ipversion` and `nomatch` numbers, the rest strings.
pub(crate) fn entry(pairs: &[(&str, &str)]) -> Entry {
    pairs
        .iter()
        .map(|(k, v)| {
            let value = match (*k, v.parse::<i64>()) {
                ("enable" | "ipversion" | "nomatch", Ok(n)) => Value::from(n),
                _ => Value::from(*v),
            };
            (k.to_string(), value)
        })
        .collect()
}

/// A rule as writing the file (`format_rules`) and parsing it again
/// (`parse_fw_rule`) leave it: `enable` 0 or 1, only the keys the file
/// keeps (a `group` rule keeps its interface and comment only), empty and
/// `"0"` values gone, the comment trimmed. `ipversion` is computed on
/// load, so it is not stored.
pub(crate) fn reload_rule(rule: &Entry, allow_iface: bool) -> Entry {
    let get = |k: &str| rule.get(k).filter(|v| truthy(Some(v))).cloned();
    let mut out = Entry::new();
    let ty = rule.get("type").map(text).unwrap_or_default();
    let enabled = rule.get("enable").is_none_or(|v| truthy(Some(v)));
    out.insert("enable".into(), Value::from(u8::from(enabled)));
    out.insert("type".into(), Value::from(ty.to_lowercase()));
    if let Some(a) = rule.get("action") {
        out.insert("action".into(), a.clone());
    }
    if matches!(ty.as_str(), "in" | "out" | "forward")
        && let Some(m) = get("macro")
    {
        out.insert("macro".into(), m);
    }
    if allow_iface && let Some(i) = get("iface") {
        out.insert("iface".into(), i);
    }
    if ty != "group" {
        for k in ["source", "dest", "proto", "dport", "sport", "log"] {
            if let Some(v) = get(k) {
                out.insert(k.into(), v);
            }
        }
        if let Some(t) = rule.get("icmp-type").filter(|v| !text(v).is_empty()) {
            out.insert("icmp-type".into(), t.clone());
        }
    }
    if let Some(c) = get("comment") {
        let c = text(&c).trim().to_string();
        if !c.is_empty() {
            out.insert("comment".into(), Value::from(c));
        }
    }
    out
}

/// An option as the file's parser reads it back (`parse_*fw_option`), or
/// `None` when it would not parse (the parser skips the line).
pub(crate) fn reload_option(env: Env, key: &str, value: &str) -> Option<Value> {
    let numeric = env
        .options()
        .iter()
        .find(|(k, _)| *k == key)
        .is_some_and(|(_, n)| *n);
    let v = value.trim();
    if numeric {
        return v.parse::<i64>().ok().map(Value::from);
    }
    if v.is_empty() && !key.contains("log_level") {
        return None;
    }
    if v.contains(char::is_whitespace) {
        return None;
    }
    let v = if key.starts_with("policy_") {
        v.to_uppercase()
    } else if key.contains("log_level") || key == "nf_conntrack_helpers" {
        v.to_lowercase()
    } else {
        v.to_string()
    };
    Some(Value::from(v))
}

/// The options as loading the file yields them: the cluster's `enable`
/// set to a timestamp by the anti-lockout call reads as 0 once it is more
/// than 60 seconds old.
pub(crate) fn options_view(conf: &FwConf, env: Env, now: u64) -> Entry {
    let mut o = conf.options.clone();
    if env == Env::Cluster
        && let Some(e) = o.get_mut("enable")
        && let Some(n) = e.as_i64()
        && n > 1
        && (now as i64) - n > 60
    {
        *e = Value::from(0);
    }
    o
}

/// A rule as loading it yields it: the stored one and its `ipversion`
/// (from its addresses, aliases and protocol).
pub(crate) fn loaded_rule(rule: &Entry, look: Lookup<'_>, env: Env) -> Entry {
    let mut r = rule.clone();
    let (ipversion, _) = verify_rule(&mut r, look, env);
    if let Some(v) = ipversion {
        r.insert("ipversion".into(), Value::from(v));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_follow_copy_list_with_digest() {
        // SHA-1 of nothing.
        assert_eq!(digest([]), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        let e = entry(&[("cidr", "10.0.0.0/24"), ("comment", "x")]);
        assert_eq!(digest([&e]), hex(&sha1(b"cidr:10.0.0.0/24\ncomment:x\n")));
        let (list, d) = list_with_digest(std::slice::from_ref(&e));
        assert_eq!(list[0]["digest"], d);
    }

    #[test]
    fn rules_reload_like_the_file() {
        let r = entry(&[
            ("type", "group"),
            ("action", "webserver"),
            ("source", "10.0.0.1"),
            ("iface", "net0"),
            ("comment", "  web "),
            ("pos", "3"),
        ]);
        let back = reload_rule(&r, true);
        assert_eq!(
            back,
            entry(&[
                ("type", "group"),
                ("action", "webserver"),
                ("enable", "1"),
                ("iface", "net0"),
                ("comment", "web"),
            ])
        );
        let r = entry(&[("type", "in"), ("action", "ACCEPT"), ("enable", "0")]);
        assert_eq!(reload_rule(&r, false)["enable"], 0);
        assert_eq!(
            reload_option(Env::Vm, "policy_in", "drop"),
            Some(Value::from("DROP"))
        );
        assert_eq!(
            reload_option(Env::Host, "nf_conntrack_max", "65536"),
            Some(Value::from(65536))
        );
    }
}
