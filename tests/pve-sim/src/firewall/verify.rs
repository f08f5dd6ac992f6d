//! pve-firewall's checks: `verify_rule` and the `pve-fw-*` parameter
//! formats, with the names it knows from `/etc/protocols`, `/etc/services`
//! (Debian's netbase), its ICMP types and its macros.

use std::net::{Ipv4Addr, Ipv6Addr};

use serde_json::Value;

use super::{Entry, Env, Lookup, text, truthy};

/// One complaint of `verify_rule`, in the order PVE finds them. The API
/// raises the first: a parameter error (400), or with `fatal` a plain
/// `die` (500, e.g. an alias whose IP version clashes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub param: String,
    pub msg: String,
    pub fatal: bool,
}

/// `[A-Za-z][A-Za-z0-9\-\_]+`: security group, IP set and alias names.
pub(crate) fn valid_name(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2
        && b[0].is_ascii_alphabetic()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
}

/// `(dc/|guest/)?<alias>`: the scope prefix and the name.
fn alias_ref(s: &str) -> Option<(&str, &str)> {
    let (scope, name) = if let Some(n) = s.strip_prefix("dc/") {
        ("dc/", n)
    } else if let Some(n) = s.strip_prefix("guest/") {
        ("guest/", n)
    } else {
        ("", s)
    };
    valid_name(name).then_some((scope, name))
}

/// `pve_verify_iface`: `[a-z][a-z0-9_]{1,20}([:\.]\d+)?`, any case.
fn valid_iface(v: &str) -> bool {
    let (base, suffix) = match v.find([':', '.']) {
        Some(i) => (&v[..i], Some(&v[i + 1..])),
        None => (v, None),
    };
    let b = base.as_bytes();
    (2..=21).contains(&b.len())
        && b[0].is_ascii_alphabetic()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && suffix.is_none_or(|s| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
}

/// The `pve-fw-*` formats (and `pve-fw-conntrack-helper`): `Err` carries
/// the message after `invalid format - `, with Perl's newline.
pub(crate) fn check_format(format: &str, v: &str) -> Result<(), String> {
    match format {
        "pve-fw-addr-spec" => parse_address_list(v).map(|_| ()),
        "pve-fw-dport-spec" => parse_ports(v, true),
        "pve-fw-sport-spec" => parse_ports(v, false),
        "pve-fw-protocol-spec" => {
            if v.is_empty() || protocol_known(v) {
                Ok(())
            } else {
                Err(format!("unknown protocol '{v}'\n"))
            }
        }
        "pve-fw-icmp-type-spec" => {
            if v.is_empty() || ICMP_TYPES.contains(&v) || ICMPV6_TYPES.contains(&v) {
                Ok(())
            } else {
                Err(format!("invalid icmp-type value '{v}'\n"))
            }
        }
        "pve-fw-conntrack-helper" => {
            let items: Vec<&str> = perl_split_comma(v);
            if items.join(",") != v {
                return Err("extraneous commas in list\n".into());
            }
            match items.iter().find(|h| !CONNTRACK_HELPERS.contains(h)) {
                Some(h) => Err(format!("unknown helper {h}\n")),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// Perl's `split(/,/, $s)`: trailing empty fields dropped.
fn perl_split_comma(s: &str) -> Vec<&str> {
    let mut items: Vec<&str> = s.split(',').collect();
    while items.last().is_some_and(|x| x.is_empty()) {
        items.pop();
    }
    items
}

/// `parse_address_list`: an IP set reference, an alias, or a comma list of
/// addresses, networks or one range, all of one IP version (returned).
pub(crate) fn parse_address_list(s: &str) -> Result<Option<u8>, String> {
    if let Some(rest) = s.strip_prefix('+')
        && !rest.is_empty()
        && !rest.contains(char::is_whitespace)
    {
        if s.chars().count() > 65 {
            return Err("ipset name too long\n".into());
        }
        return Ok(None);
    }
    if alias_ref(s).is_some() {
        if s.chars().count() > 64 {
            return Err("alias name too long\n".into());
        }
        return Ok(None);
    }
    let elements = perl_split_comma(s);
    if elements.join(",") != s {
        return Err("extraneous commas in list\n".into());
    }
    let mut version = None;
    let mut range = false;
    for elem in &elements {
        let v = ip_version(elem).map_err(|e| format!("invalid IP address: {e}\n"))?;
        range |= elem.contains('-');
        if version.is_some_and(|x| x != v) {
            return Err(format!(
                "detected mixed ipv4/ipv6 addresses in address list '{s}'\n"
            ));
        }
        version = Some(v);
    }
    if range && elements.len() > 1 {
        return Err("you can't use a range in a list\n".into());
    }
    Ok(version)
}

/// What `Net::IP->new` accepts: an address, a network whose host bits are
/// zero, or a range `a-b`; its version. The errors paraphrase Net::IP's.
fn ip_version(elem: &str) -> Result<u8, String> {
    if let Some((a, b)) = elem.split_once('-') {
        let (a, b) = (a.trim(), b.trim());
        let (va, vb) = (address(a)?, address(b)?);
        if va.0 != vb.0 {
            return Err(format!(
                "Begin and end addresses of {elem} differ in version"
            ));
        }
        if va.1 > vb.1 {
            return Err(format!("Begin address is greater than End address {elem}"));
        }
        return Ok(va.0);
    }
    let (ip, len) = match elem.split_once('/') {
        Some((ip, len)) => (ip, Some(len)),
        None => (elem, None),
    };
    let (version, bits) = address(ip)?;
    if let Some(len) = len {
        let width = if version == 4 { 32 } else { 128 };
        let n: u32 = len
            .parse()
            .ok()
            .filter(|n| *n <= width)
            .ok_or_else(|| format!("Invalid prefix length /{len}"))?;
        let host = if n == 0 {
            u128::MAX
        } else {
            (1u128 << (width - n)) - 1
        };
        if bits & host != 0 {
            let bin = if version == 4 {
                format!("{bits:032b}")
            } else {
                format!("{bits:0128b}")
            };
            return Err(format!("Invalid prefix {bin}/{n}"));
        }
    }
    Ok(version)
}

/// An IPv4 (Net::IP pads missing quads) or IPv6 address: its version and
/// value.
fn address(ip: &str) -> Result<(u8, u128), String> {
    if ip.contains(':') {
        return ip
            .parse::<Ipv6Addr>()
            .map(|a| (6, u128::from(a)))
            .map_err(|_| format!("Invalid IP address {ip}"));
    }
    if ip.is_empty() || !ip.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!("Cannot determine IP version for {ip}"));
    }
    let quads: Vec<&str> = ip.split('.').collect();
    if quads.len() > 4 {
        return Err(format!("More than 4 octets in IP address {ip}"));
    }
    let mut out = [0u8; 4];
    for (i, q) in quads.iter().enumerate() {
        if q.is_empty() {
            return Err(format!("Empty quad in IP address {ip}"));
        }
        out[i] = q
            .parse::<u8>()
            .map_err(|_| format!("Invalid quad in IP address {ip} - {q}"))?;
    }
    Ok((4, u128::from(u32::from(Ipv4Addr::from(out)))))
}

/// `parse_port_name_number_or_range`: numbers, `a:b` ranges and service
/// names (ICMP type names too when `dport` is set), at most 15 numbers.
pub(crate) fn parse_ports(s: &str, dport: bool) -> Result<(), String> {
    let items = perl_split_comma(s);
    if items.join(",") != s {
        return Err("extraneous commas in list\n".into());
    }
    let port = |p: &str| -> Result<(), String> {
        match p.parse::<u64>() {
            Ok(n) if n <= 65535 => Ok(()),
            _ => Err(format!("invalid port '{p}'\n")),
        }
    };
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let mut count = 0;
    let mut icmp = false;
    for item in &items {
        if let Some((a, b)) = item.split_once(':')
            && digits(a)
            && digits(b)
        {
            count += 2;
            port(a)?;
            port(b)?;
            if a.parse::<u64>().ok() > b.parse::<u64>().ok() {
                return Err(format!(
                    "backwards range '{a}:{b}' not allowed, did you mean '{b}:{a}'?\n"
                ));
            }
        } else if digits(item) {
            count += 1;
            port(item)?;
        } else if dport && (ICMP_TYPES.contains(item) || ICMPV6_TYPES.contains(item)) {
            icmp = true;
        } else if !SERVICES.contains(item) {
            return Err(format!("invalid port '{item}'\n"));
        }
    }
    if icmp && count > 0 {
        return Err("ICMP ports not allowed in port range\n".into());
    }
    if count > 15 {
        return Err("too many entries in port list (> 15 numbers)\n".into());
    }
    Ok(())
}

fn protocol_known(p: &str) -> bool {
    p == "icmpv6" || PROTOCOLS.iter().any(|(name, id)| *name == p || *id == p)
}

fn is_icmp(p: &str) -> bool {
    matches!(p, "icmp" | "icmpv6" | "ipv6-icmp")
}

/// `$PROTOCOLS_WITH_PORTS`.
fn has_ports(p: &str) -> bool {
    matches!(
        p,
        "udp" | "17" | "udplite" | "136" | "tcp" | "6" | "dccp" | "33" | "sctp" | "132"
    )
}

/// Records a parameter error (`$add_error`, which chomps the message).
fn add(problems: &mut Vec<Problem>, param: &str, msg: String) {
    problems.push(Problem {
        param: param.into(),
        msg: msg.trim_end_matches('\n').to_string(),
        fatal: false,
    });
}

/// The macro's preferred spelling (macro names are case-insensitive).
fn macro_name(m: &str) -> Option<&'static str> {
    MACROS.iter().copied().find(|x| x.eq_ignore_ascii_case(m))
}

/// `verify_rule`: normalises the macro's spelling, and returns the rule's
/// IP version and every problem in the order PVE meets them (the API
/// raises the first; loading a file keeps the rule). Macro expansion is
/// not checked.
pub(crate) fn verify_rule(
    rule: &mut Entry,
    look: Lookup<'_>,
    env: Env,
) -> (Option<u8>, Vec<Problem>) {
    let mut problems = Vec::new();
    let val = |rule: &Entry, k: &str| -> Option<String> {
        rule.get(k).filter(|v| truthy(Some(v))).map(text)
    };
    let mut ipversion: Option<u8> = None;
    // `$set_ip_version`: the error it dies with on a clash.
    let mut set_ip = |v: Option<u8>| -> Result<(), String> {
        if let Some(v) = v {
            if ipversion.is_some_and(|x| x != v) {
                return Err("detected mixed ipv4/ipv6 addresses in rule".into());
            }
            ipversion = Some(v);
        }
        Ok(())
    };

    let ty = val(rule, "type");
    let action = val(rule, "action");
    if ty.is_none() {
        add(&mut problems, "type", "missing property".into());
    }
    if action.is_none() {
        add(&mut problems, "action", "missing property".into());
    }
    if let Some(ty) = &ty {
        if !env.types().contains(&ty.as_str()) {
            add(
                &mut problems,
                "type",
                format!("invalid rule type '{ty}' for rule_env '{}'", env.as_str()),
            );
        }
        match ty.as_str() {
            "in" | "out" | "forward" => {
                if ty == "forward" && action.as_deref() == Some("REJECT") {
                    add(
                        &mut problems,
                        "action",
                        "cannot define REJECT rules on forward chain".into(),
                    );
                }
                if let Some(a) = &action
                    && !matches!(a.as_str(), "ACCEPT" | "DROP" | "REJECT")
                {
                    add(&mut problems, "action", format!("unknown action '{a}'"));
                }
            }
            "group" => {
                if env == Env::Group {
                    add(&mut problems, "type", "security groups not allowed".into());
                }
                if let Some(a) = &action
                    && !valid_name(a)
                {
                    add(
                        &mut problems,
                        "action",
                        "invalid characters in security group name".into(),
                    );
                }
            }
            other => add(
                &mut problems,
                "type",
                format!("unknown rule type '{other}'"),
            ),
        }
    }

    if let Some(iface) = val(rule, "iface") {
        if !env.allow_iface() {
            add(
                &mut problems,
                "type",
                "parameter -i not allowed for this rule type".into(),
            );
        }
        if !valid_iface(&iface) {
            add(
                &mut problems,
                "iface",
                format!("invalid network interface name '{iface}'"),
            );
        }
        let net = iface
            .strip_prefix("net")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if matches!(env, Env::Vm | Env::Ct) && !net {
            add(
                &mut problems,
                "iface",
                "value does not match the regex pattern 'net\\d+'".into(),
            );
        }
    }

    if let Some(m) = val(rule, "macro") {
        match macro_name(&m) {
            Some(preferred) => {
                rule.insert("macro".into(), Value::from(preferred));
            }
            None => add(&mut problems, "macro", format!("unknown macro '{m}'")),
        }
    }

    let proto = val(rule, "proto");
    let mut icmp = false;
    if let Some(p) = &proto {
        if !protocol_known(p) {
            add(&mut problems, "proto", format!("unknown protocol '{p}'"));
        }
        let v = match p.as_str() {
            "icmp" => Some(4),
            "icmpv6" | "ipv6-icmp" => Some(6),
            _ => None,
        };
        if let Err(e) = set_ip(v) {
            add(&mut problems, "proto", e);
        }
        icmp = is_icmp(p);
    }
    let p = proto.clone().unwrap_or_default();
    let dport = val(rule, "dport");
    if let Some(d) = &dport {
        if let Err(e) = parse_ports(d, icmp) {
            add(&mut problems, "dport", e);
        }
        if proto.is_none() {
            add(
                &mut problems,
                "proto",
                "missing property - 'dport' requires this property".into(),
            );
        }
        if !has_ports(&p) && !icmp {
            add(
                &mut problems,
                "dport",
                format!("protocol '{p}' does not support ports"),
            );
        }
    }
    if let Some(t) = val(rule, "icmp-type") {
        if !icmp {
            add(
                &mut problems,
                "proto",
                "missing property - 'icmp-type' requires this property".into(),
            );
        }
        if dport.is_some() {
            add(
                &mut problems,
                "icmp-type",
                "'icmp-type' cannot be specified together with 'dport'".into(),
            );
        }
        if p == "icmp" && !ICMP_TYPES.contains(&t.as_str()) {
            add(
                &mut problems,
                "icmp-type",
                format!("invalid icmp-type '{t}' for proto 'icmp'"),
            );
        } else if (p == "icmpv6" || p == "ipv6-icmp") && !ICMPV6_TYPES.contains(&t.as_str()) {
            add(
                &mut problems,
                "icmp-type",
                format!("invalid icmp-type '{t}' for proto '{p}'"),
            );
        }
    }
    if let Some(s) = val(rule, "sport") {
        if let Err(e) = parse_ports(&s, false) {
            add(&mut problems, "sport", e);
        }
        if proto.is_none() {
            add(
                &mut problems,
                "proto",
                "missing property - 'sport' requires this property".into(),
            );
        }
        if !has_ports(&p) {
            add(
                &mut problems,
                "sport",
                format!("protocol '{p}' does not support ports"),
            );
        }
    }

    for key in ["source", "dest"] {
        let Some(value) = val(rule, key) else {
            continue;
        };
        match parse_address_list(&value) {
            Ok(v) => {
                if let Err(e) = set_ip(v) {
                    add(&mut problems, key, e);
                }
            }
            Err(e) => add(&mut problems, key, e),
        }
        // `$check_ipset_or_alias_property`.
        if let Some(rest) = value.strip_prefix('+') {
            let name = rest
                .strip_prefix("guest/")
                .or_else(|| rest.strip_prefix("dc/"))
                .or_else(|| rest.strip_prefix("sdn/"))
                .unwrap_or(rest);
            if valid_name(name) {
                let known = look.cluster.is_some_and(|c| c.ipsets.contains_key(name))
                    || look.local.ipsets.contains_key(name);
                if !known {
                    add(&mut problems, key, format!("no such ipset '{name}'"));
                }
            } else {
                add(&mut problems, key, format!("invalid ipset name '{value}'"));
            }
        } else if let Some((scope, name)) = alias_ref(&value) {
            let alias = name.to_lowercase();
            let known = look.cluster.is_some_and(|c| c.aliases.contains_key(&alias))
                || look.local.aliases.contains_key(&alias);
            if !known {
                add(&mut problems, key, format!("no such alias '{value}'"));
            }
            let mut e = None;
            if scope != "dc/" {
                e = look.local.aliases.get(&alias);
            }
            if scope != "guest/" && e.is_none() {
                e = look.cluster.and_then(|c| c.aliases.get(&alias));
            }
            let v = e
                .and_then(|e| e.get("ipversion"))
                .and_then(Value::as_u64)
                .and_then(|v| u8::try_from(v).ok());
            if let Err(msg) = set_ip(v) {
                problems.push(Problem {
                    param: key.into(),
                    msg,
                    fatal: true,
                });
            }
        }
    }
    (ipversion, problems)
}

const CONNTRACK_HELPERS: &[&str] = &[
    "amanda",
    "ftp",
    "irc",
    "netbios-ns",
    "pptp",
    "sane",
    "sip",
    "snmp",
    "tftp",
];

/// pve-firewall's macros (`$pve_fw_macros` and the IPv6-only ones).
const MACROS: &[&str] = &[
    "Amanda",
    "Auth",
    "BGP",
    "BitTorrent",
    "BitTorrent32",
    "CVS",
    "Ceph",
    "Citrix",
    "DAAP",
    "DCC",
    "DHCPfwd",
    "DHCPv6",
    "DNS",
    "Distcc",
    "FTP",
    "Finger",
    "GNUnet",
    "GRE",
    "Git",
    "HKP",
    "HTTP",
    "HTTPS",
    "ICPV2",
    "ICQ",
    "IMAP",
    "IMAPS",
    "IPIP",
    "IPsec",
    "IPsecah",
    "IPsecnat",
    "IRC",
    "Jetdirect",
    "L2TP",
    "LDAP",
    "LDAPS",
    "MDNS",
    "MSNP",
    "MSSQL",
    "Mail",
    "Munin",
    "MySQL",
    "NNTP",
    "NNTPS",
    "NTP",
    "NeighborDiscovery",
    "OSPF",
    "OpenVPN",
    "PCA",
    "PMG",
    "POP3",
    "POP3S",
    "PPtP",
    "Ping",
    "PostgreSQL",
    "Printer",
    "RDP",
    "RIP",
    "RNDC",
    "Razor",
    "Rdate",
    "Rsync",
    "SANE",
    "SMB",
    "SMBswat",
    "SMTP",
    "SMTPS",
    "SNMP",
    "SPAMD",
    "SPICEproxy",
    "SSH",
    "SVN",
    "SixXS",
    "Squid",
    "Submission",
    "Syslog",
    "TFTP",
    "Telnet",
    "Telnets",
    "Time",
    "Trcrt",
    "VNC",
    "VNCL",
    "Web",
    "Webcache",
    "Webmin",
    "Whois",
];

/// `/etc/protocols` (Debian netbase): name and number.
const PROTOCOLS: &[(&str, &str)] = &[
    ("ip", "0"),
    ("hopopt", "0"),
    ("icmp", "1"),
    ("igmp", "2"),
    ("ggp", "3"),
    ("ipencap", "4"),
    ("st", "5"),
    ("tcp", "6"),
    ("egp", "8"),
    ("igp", "9"),
    ("pup", "12"),
    ("udp", "17"),
    ("hmp", "20"),
    ("xns-idp", "22"),
    ("rdp", "27"),
    ("iso-tp4", "29"),
    ("dccp", "33"),
    ("xtp", "36"),
    ("ddp", "37"),
    ("idpr-cmtp", "38"),
    ("ipv6", "41"),
    ("ipv6-route", "43"),
    ("ipv6-frag", "44"),
    ("idrp", "45"),
    ("rsvp", "46"),
    ("gre", "47"),
    ("esp", "50"),
    ("ah", "51"),
    ("skip", "57"),
    ("ipv6-icmp", "58"),
    ("ipv6-nonxt", "59"),
    ("ipv6-opts", "60"),
    ("rspf", "73"),
    ("vmtp", "81"),
    ("eigrp", "88"),
    ("ospf", "89"),
    ("ax.25", "93"),
    ("ipip", "94"),
    ("etherip", "97"),
    ("encap", "98"),
    ("pim", "103"),
    ("ipcomp", "108"),
    ("vrrp", "112"),
    ("l2tp", "115"),
    ("isis", "124"),
    ("sctp", "132"),
    ("fc", "133"),
    ("mobility-header", "135"),
    ("udplite", "136"),
    ("mpls-in-ip", "137"),
    ("manet", "138"),
    ("hip", "139"),
    ("shim6", "140"),
    ("wesp", "141"),
    ("rohc", "142"),
    ("ethernet", "143"),
    ("mptcp", "262"),
];

/// pve-firewall's ICMP type names.
const ICMP_TYPES: &[&str] = &[
    "any",
    "echo-reply",
    "destination-unreachable",
    "network-unreachable",
    "host-unreachable",
    "protocol-unreachable",
    "port-unreachable",
    "fragmentation-needed",
    "source-route-failed",
    "network-unknown",
    "host-unknown",
    "network-prohibited",
    "host-prohibited",
    "TOS-network-unreachable",
    "TOS-host-unreachable",
    "communication-prohibited",
    "host-precedence-violation",
    "precedence-cutoff",
    "source-quench",
    "redirect",
    "network-redirect",
    "host-redirect",
    "TOS-network-redirect",
    "TOS-host-redirect",
    "echo-request",
    "router-advertisement",
    "router-solicitation",
    "time-exceeded",
    "ttl-zero-during-transit",
    "ttl-zero-during-reassembly",
    "parameter-problem",
    "ip-header-bad",
    "required-option-missing",
    "timestamp-request",
    "timestamp-reply",
    "address-mask-request",
    "address-mask-reply",
];

/// pve-firewall's ICMPv6 type names.
const ICMPV6_TYPES: &[&str] = &[
    "destination-unreachable",
    "no-route",
    "communication-prohibited",
    "beyond-scope",
    "address-unreachable",
    "port-unreachable",
    "failed-policy",
    "reject-route",
    "packet-too-big",
    "time-exceeded",
    "ttl-zero-during-transit",
    "ttl-zero-during-reassembly",
    "parameter-problem",
    "bad-header",
    "unknown-header-type",
    "unknown-option",
    "echo-request",
    "echo-reply",
    "router-solicitation",
    "router-advertisement",
    "neighbor-solicitation",
    "neighbour-solicitation",
    "neighbor-advertisement",
    "neighbour-advertisement",
    "redirect",
];

/// Service names of `/etc/services` (Debian netbase) with a tcp, udp or
/// sctp port.
const SERVICES: &[&str] = &[
    "tcpmux",
    "echo",
    "discard",
    "systat",
    "daytime",
    "netstat",
    "qotd",
    "chargen",
    "ftp-data",
    "ftp",
    "fsp",
    "ssh",
    "telnet",
    "smtp",
    "time",
    "whois",
    "tacacs",
    "domain",
    "bootps",
    "bootpc",
    "tftp",
    "gopher",
    "finger",
    "http",
    "kerberos",
    "iso-tsap",
    "acr-nema",
    "pop3",
    "sunrpc",
    "auth",
    "nntp",
    "ntp",
    "epmap",
    "netbios-ns",
    "netbios-dgm",
    "netbios-ssn",
    "imap2",
    "snmp",
    "snmp-trap",
    "cmip-man",
    "cmip-agent",
    "mailq",
    "xdmcp",
    "bgp",
    "smux",
    "qmtp",
    "z3950",
    "ipx",
    "ptp-event",
    "ptp-general",
    "pawserv",
    "zserv",
    "rpc2portmap",
    "codaauth2",
    "clearcase",
    "ldap",
    "svrloc",
    "https",
    "snpp",
    "microsoft-ds",
    "kpasswd",
    "submissions",
    "saft",
    "isakmp",
    "rtsp",
    "nqs",
    "asf-rmcp",
    "qmqp",
    "ipp",
    "ldp",
    "exec",
    "biff",
    "login",
    "who",
    "shell",
    "syslog",
    "printer",
    "talk",
    "ntalk",
    "route",
    "gdomap",
    "uucp",
    "klogin",
    "kshell",
    "dhcpv6-client",
    "dhcpv6-server",
    "afpovertcp",
    "nntps",
    "submission",
    "ldaps",
    "tinc",
    "silc",
    "kerberos-adm",
    "domain-s",
    "rsync",
    "ftps-data",
    "ftps",
    "telnets",
    "imaps",
    "pop3s",
    "socks",
    "proofd",
    "rootd",
    "openvpn",
    "rmiregistry",
    "lotusnote",
    "ms-sql-s",
    "ms-sql-m",
    "ingreslock",
    "datametrics",
    "sa-msg-port",
    "kermit",
    "groupwise",
    "l2f",
    "radius",
    "radius-acct",
    "cisco-sccp",
    "nfs",
    "gnunet",
    "rtcm-sc104",
    "gsigatekeeper",
    "gris",
    "cvspserver",
    "venus",
    "venus-se",
    "codasrv",
    "codasrv-se",
    "mon",
    "dict",
    "f5-globalsite",
    "gsiftp",
    "gpsd",
    "gds-db",
    "icpv2",
    "isns",
    "iscsi-target",
    "mysql",
    "ms-wbt-server",
    "nut",
    "distcc",
    "daap",
    "svn",
    "suucp",
    "sysrqd",
    "sieve",
    "epmd",
    "remctl",
    "f5-iquery",
    "ntske",
    "ipsec-nat-t",
    "iax",
    "mtn",
    "radmin-port",
    "sip",
    "sip-tls",
    "xmpp-client",
    "xmpp-server",
    "cfengine",
    "mdns",
    "postgresql",
    "freeciv",
    "amqps",
    "amqp",
    "x11",
    "x11-1",
    "x11-2",
    "x11-3",
    "x11-4",
    "x11-5",
    "x11-6",
    "x11-7",
    "gnutella-svc",
    "gnutella-rtr",
    "redis",
    "sge-qmaster",
    "sge-execd",
    "mysql-proxy",
    "babel",
    "ircs-u",
    "bbs",
    "afs3-fileserver",
    "afs3-callback",
    "afs3-prserver",
    "afs3-vlserver",
    "afs3-kaserver",
    "afs3-volser",
    "afs3-bos",
    "afs3-update",
    "afs3-rmtsys",
    "font-service",
    "http-alt",
    "puppet",
    "bacula-dir",
    "bacula-fd",
    "bacula-sd",
    "xmms2",
    "nbd",
    "zabbix-agent",
    "zabbix-trapper",
    "amanda",
    "dicom",
    "hkp",
    "db-lsp",
    "dcap",
    "gsidcap",
    "wnn6",
    "kerberos4",
    "kerberos-master",
    "passwd-server",
    "krb-prop",
    "zephyr-srv",
    "zephyr-clt",
    "zephyr-hm",
    "iprop",
    "supfilesrv",
    "supfiledbg",
    "poppassd",
    "moira-db",
    "moira-update",
    "moira-ureg",
    "spamd",
    "skkserv",
    "predict",
    "rmtcfg",
    "xtel",
    "xtelw",
    "zebrasrv",
    "zebra",
    "ripd",
    "ripngd",
    "ospfd",
    "bgpd",
    "ospf6d",
    "ospfapi",
    "isisd",
    "fax",
    "hylafax",
    "munin",
    "rplay",
    "nrpe",
    "nsca",
    "canna",
    "syslog-tls",
    "sane-port",
    "ircd",
    "zope-ftp",
    "tproxy",
    "omniorb",
    "clc-build-daemon",
    "xinetd",
    "git",
    "zope",
    "webmin",
    "kamanda",
    "amandaidx",
    "amidxtape",
    "sgi-cmsd",
    "sgi-crsd",
    "sgi-gcd",
    "sgi-cad",
    "binkp",
    "asp",
    "csync2",
    "dircproxy",
    "tfido",
    "fido",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_like_net_ip() {
        assert_eq!(parse_address_list("10.0.0.0/24"), Ok(Some(4)));
        assert_eq!(parse_address_list("10.0.0.1-10.0.0.9"), Ok(Some(4)));
        assert_eq!(parse_address_list("fd00::/64,fd01::1"), Ok(Some(6)));
        assert_eq!(parse_address_list("+management"), Ok(None));
        assert_eq!(parse_address_list("dc/jumphost"), Ok(None));
        assert_eq!(parse_address_list(""), Ok(None));
        assert!(
            parse_address_list("10.0.0.5/24")
                .unwrap_err()
                .contains("Invalid prefix")
        );
        assert_eq!(
            parse_address_list("10.0.0.300").unwrap_err(),
            "invalid IP address: Invalid quad in IP address 10.0.0.300 - 300\n"
        );
        assert_eq!(
            parse_address_list("10.0.0.1,fd00::1").unwrap_err(),
            "detected mixed ipv4/ipv6 addresses in address list '10.0.0.1,fd00::1'\n"
        );
        assert_eq!(
            parse_address_list("10.0.0.1,").unwrap_err(),
            "extraneous commas in list\n"
        );
        assert_eq!(
            parse_address_list("10.0.0.1-10.0.0.9,10.0.1.1").unwrap_err(),
            "you can't use a range in a list\n"
        );
    }

    #[test]
    fn ports_and_protocols() {
        assert!(parse_ports("22,80:90,https", false).is_ok());
        assert!(parse_ports("echo-request", true).is_ok());
        assert_eq!(
            parse_ports("echo-request", false),
            Err("invalid port 'echo-request'\n".into())
        );
        assert_eq!(
            parse_ports("90:80", false),
            Err("backwards range '90:80' not allowed, did you mean '80:90'?\n".into())
        );
        assert_eq!(
            parse_ports("70000", false),
            Err("invalid port '70000'\n".into())
        );
        assert!(check_format("pve-fw-protocol-spec", "tcp").is_ok());
        assert!(check_format("pve-fw-protocol-spec", "6").is_ok());
        assert!(check_format("pve-fw-protocol-spec", "icmpv6").is_ok());
        assert_eq!(
            check_format("pve-fw-protocol-spec", "tcpx"),
            Err("unknown protocol 'tcpx'\n".into())
        );
        assert_eq!(macro_name("ssh"), Some("SSH"));
    }
}
