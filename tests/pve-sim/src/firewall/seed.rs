//! The standard cluster's firewall (tabulated in the crate documentation):
//! a cluster firewall that drops incoming traffic but for the management
//! network, so a careless rule change can lock the admins out.

use super::{Entry, Firewall, FwConf, Group, IpSet, entry};

fn options(pairs: &[(&str, &str)]) -> Entry {
    entry(pairs)
        .into_iter()
        .map(|(k, v)| {
            let v = match v.as_str().and_then(|s| s.parse::<i64>().ok()) {
                Some(n) => serde_json::Value::from(n),
                None => v,
            };
            (k, v)
        })
        .collect()
}

fn ipset(comment: &str, members: &[&[(&str, &str)]]) -> IpSet {
    let mut entries: Vec<Entry> = members.iter().map(|m| entry(m)).collect();
    entries.sort_by_key(|e| e.get("cidr").map(super::text));
    IpSet {
        comment: Some(comment.into()),
        entries,
    }
}

fn alias(name: &str, cidr: &str, comment: &str) -> (String, Entry) {
    (
        name.to_lowercase(),
        entry(&[
            ("name", name),
            ("cidr", cidr),
            ("ipversion", "4"),
            ("comment", comment),
        ]),
    )
}

/// `cluster.fw`, `pve1`'s `host.fw` and VM 100's `100.fw`.
pub(crate) fn primary() -> Firewall {
    let cluster = FwConf {
        options: options(&[
            ("enable", "1"),
            ("policy_in", "DROP"),
            ("policy_out", "ACCEPT"),
        ]),
        aliases: [
            alias("jumphost", "10.0.0.5", "Bastion host"),
            alias("monitoring", "10.0.0.109", "Prometheus (CT 109)"),
        ]
        .into_iter()
        .collect(),
        ipsets: [(
            "management".to_string(),
            ipset(
                "Admin workstations and cluster nodes",
                &[
                    &[("cidr", "10.0.0.0/24"), ("comment", "Admin VLAN")],
                    &[("cidr", "192.0.2.0/24"), ("comment", "Cluster nodes")],
                    &[
                        ("cidr", "10.0.0.66"),
                        ("nomatch", "1"),
                        ("comment", "Quarantined laptop"),
                    ],
                ],
            ),
        )]
        .into_iter()
        .collect(),
        rules: vec![
            entry(&[
                ("type", "in"),
                ("action", "ACCEPT"),
                ("enable", "1"),
                ("source", "+management"),
                ("proto", "tcp"),
                ("dport", "8006"),
                ("comment", "Web UI and API from management"),
            ]),
            entry(&[
                ("type", "in"),
                ("action", "ACCEPT"),
                ("enable", "1"),
                ("source", "+management"),
                ("proto", "tcp"),
                ("dport", "22"),
                ("comment", "SSH from management"),
            ]),
            entry(&[
                ("type", "in"),
                ("action", "ACCEPT"),
                ("macro", "Ping"),
                ("enable", "1"),
                ("comment", "Allow ping"),
            ]),
            entry(&[
                ("type", "in"),
                ("action", "ACCEPT"),
                ("enable", "0"),
                ("source", "monitoring"),
                ("proto", "tcp"),
                ("dport", "9100"),
                ("comment", "Node exporter (not rolled out yet)"),
            ]),
        ],
        groups: [(
            "webserver".to_string(),
            Group {
                comment: Some("HTTP and HTTPS".into()),
                rules: vec![
                    entry(&[
                        ("type", "in"),
                        ("action", "ACCEPT"),
                        ("enable", "1"),
                        ("proto", "tcp"),
                        ("dport", "80"),
                        ("comment", "HTTP"),
                    ]),
                    entry(&[
                        ("type", "in"),
                        ("action", "ACCEPT"),
                        ("enable", "1"),
                        ("proto", "tcp"),
                        ("dport", "443"),
                        ("comment", "HTTPS"),
                    ]),
                ],
            },
        )]
        .into_iter()
        .collect(),
    };
    let pve1 = FwConf {
        options: options(&[
            ("enable", "1"),
            ("log_level_in", "nolog"),
            ("log_level_out", "nolog"),
            ("ndp", "1"),
            ("nosmurfs", "1"),
            ("tcpflags", "1"),
        ]),
        rules: vec![
            entry(&[
                ("type", "in"),
                ("action", "ACCEPT"),
                ("enable", "1"),
                ("iface", "vmbr0"),
                ("source", "192.0.2.0/24"),
                ("proto", "tcp"),
                ("dport", "3128"),
                ("comment", "SPICE proxy from the cluster network"),
            ]),
            entry(&[
                ("type", "in"),
                ("action", "ACCEPT"),
                ("enable", "1"),
                ("source", "+management"),
                ("proto", "udp"),
                ("dport", "161"),
                ("comment", "SNMP from management"),
            ]),
            entry(&[
                ("type", "out"),
                ("action", "REJECT"),
                ("enable", "1"),
                ("proto", "tcp"),
                ("dport", "25"),
                ("log", "warning"),
                ("comment", "No direct mail from the host"),
            ]),
        ],
        ..FwConf::default()
    };
    let vm100 = FwConf {
        options: options(&[
            ("dhcp", "1"),
            ("enable", "1"),
            ("ipfilter", "1"),
            ("log_level_in", "nolog"),
            ("policy_in", "DROP"),
            ("policy_out", "ACCEPT"),
        ]),
        aliases: [alias("db-primary", "10.0.0.101", "VM 101")]
            .into_iter()
            .collect(),
        ipsets: [(
            "ipfilter-net0".to_string(),
            ipset("Addresses net0 may send from", &[&[("cidr", "10.0.0.100")]]),
        )]
        .into_iter()
        .collect(),
        rules: vec![
            entry(&[
                ("type", "group"),
                ("action", "webserver"),
                ("enable", "1"),
                ("iface", "net0"),
                ("comment", "Public web traffic"),
            ]),
            entry(&[
                ("type", "in"),
                ("action", "ACCEPT"),
                ("enable", "1"),
                ("source", "+management"),
                ("proto", "tcp"),
                ("dport", "22"),
                ("comment", "SSH from management"),
            ]),
            entry(&[
                ("type", "out"),
                ("action", "ACCEPT"),
                ("enable", "1"),
                ("dest", "db-primary"),
                ("proto", "tcp"),
                ("dport", "5432"),
                ("comment", "PostgreSQL on db-primary"),
            ]),
        ],
        ..FwConf::default()
    };
    Firewall {
        cluster,
        hosts: [("pve1".to_string(), pve1)].into_iter().collect(),
        guests: [(100, vm100)].into_iter().collect(),
    }
}
