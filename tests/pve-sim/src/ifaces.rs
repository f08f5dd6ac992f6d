//! `/etc/network/interfaces` as PVE reads it
//! (`PVE::Network::Interfaces::__read_etc_network_interfaces`): the
//! stanzas become the entries `GET /nodes/{node}/network` lists, and the
//! pending `interfaces.new` is shown as `diff -b -N -u`'s output.
//!
//! The seed keeps each node's files as text, so the listing follows from
//! them exactly as on a real node. Only the options PVE's GUI writes for
//! bridges, bonds, VLANs and plain NICs are interpreted; the rest are kept
//! as `options`, as PVE does.

use serde_json::{Map, Value};

use crate::state::NodeNetwork;

/// Option names ifupdown2 spells with dashes, mapped to PVE's keys.
const ALTERNATIVES: &[(&str, &str)] = &[
    ("ovs_mtu", "mtu"),
    ("bond-slaves", "slaves"),
    ("bond_slaves", "slaves"),
    ("bond-xmit-hash-policy", "bond_xmit_hash_policy"),
    ("bond-mode", "bond_mode"),
    ("bond-miimon", "bond_miimon"),
    ("bridge-vlan-aware", "bridge_vlan_aware"),
    ("bridge-fd", "bridge_fd"),
    ("bridge-stp", "bridge_stp"),
    ("bridge-ports", "bridge_ports"),
    ("bridge-vids", "bridge_vids"),
];

/// Options copied as they are.
const SIMPLE: &[&str] = &[
    "mtu",
    "ovs_type",
    "ovs_options",
    "ovs_bridge",
    "ovs_bonds",
    "ovs_ports",
    "bridge_fd",
    "bridge_vids",
    "bond_miimon",
    "bond_xmit_hash_policy",
    "bond-primary",
    "bond_mode",
    "link-type",
    "vlan-protocol",
    "vlan-raw-device",
    "vlan-id",
];

/// Whether a line starts a new stanza (and so ends the current one).
fn starts_stanza(line: &str) -> bool {
    let t = line.trim_start();
    ["iface", "mapping", "auto", "source", "source-directory"]
        .iter()
        .any(|k| {
            t.strip_prefix(k)
                .is_some_and(|r| r.starts_with([' ', '\t']))
        })
        || t.starts_with("allow-")
}

/// Appends `value` to a string entry (comments collect one line each).
fn push_str(m: &mut Map<String, Value>, key: &str, value: &str) {
    let old = m.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    m.insert(key.into(), format!("{old}{value}").into());
}

/// Reads one file into PVE's entries by interface name, `lo` included.
pub(crate) fn parse(text: &str, net: &NodeNetwork) -> Vec<(String, Map<String, Value>)> {
    let mut ifaces: Vec<(String, Map<String, Value>)> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut priority = 2u64; // 1 is reserved for lo
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim();
        i += 1;
        if t.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        match words.first().copied() {
            Some("auto" | "allow-auto" | "allow-ovs" | "allow-hotplug") => {
                for name in &words[1..] {
                    entry(&mut ifaces, name).insert("autostart".into(), 1.into());
                }
            }
            Some("iface")
                if words.len() == 2
                    || (words.len() == 4 && matches!(words[2], "inet" | "inet6")) =>
            {
                let family = words.get(2).copied();
                let suffix = family.map(|f| f.trim_start_matches("inet"));
                let d = entry(&mut ifaces, words[1]);
                if !d.contains_key("priority") {
                    d.insert("priority".into(), priority.into());
                    priority += 1;
                }
                let mut fams = d
                    .get("families")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                fams.push(family.map_or(Value::Null, Value::from));
                d.insert("families".into(), fams.into());
                // Per-family keys (method, comments, options) get the
                // family's suffix when merged.
                let mut f = Map::new();
                if let Some(m) = words.get(3) {
                    f.insert("method".into(), (*m).into());
                }
                while i < lines.len() {
                    let l = lines[i].trim_end();
                    if let Some(c) = l.trim_start().strip_prefix('#') {
                        let to = if suffix.is_some() { &mut f } else { &mut *d };
                        push_str(to, "comments", &format!("{}\n", c.trim_end()));
                        i += 1;
                        continue;
                    }
                    if starts_stanza(l) {
                        break;
                    }
                    let Some((id, value)) = l.trim_start().split_once([' ', '\t']) else {
                        break;
                    };
                    let value = value.trim();
                    let id = ALTERNATIVES
                        .iter()
                        .find(|(a, _)| *a == id)
                        .map_or(id, |(_, b)| *b);
                    i += 1;
                    option(d, &mut f, suffix, id, value, l.trim());
                }
                let sfx = suffix.unwrap_or("");
                for (k, v) in f {
                    d.insert(format!("{k}{sfx}"), v);
                }
            }
            _ => {
                if t.chars().any(|c| c.is_alphanumeric() || c == '_') {
                    // `source ...` and the like: kept in file order only.
                    priority += 1;
                }
            }
        }
    }
    for (name, d) in &mut ifaces {
        if net.physical.contains(name) {
            d.insert("exists".into(), 1.into());
        }
        if net.active.contains(name) {
            d.insert("active".into(), 1.into());
        }
    }
    if !ifaces.iter().any(|(n, _)| n == "lo") {
        let mut lo = Map::new();
        lo.insert("priority".into(), 1.into());
        lo.insert("method".into(), "loopback".into());
        lo.insert("autostart".into(), 1.into());
        ifaces.push(("lo".into(), lo));
    }
    let known: Vec<String> = ifaces.iter().map(|(n, _)| n.clone()).collect();
    for (name, d) in &mut ifaces {
        classify(name, d, net, &known);
        addresses(d);
        for k in ["method", "method6"] {
            if !d.contains_key(k) {
                d.insert(k.into(), "manual".into());
            }
        }
        if let Some(Value::String(c6)) = d.remove("comments6") {
            push_str(d, "comments", &c6);
        }
        if !d.contains_key("families") {
            d.insert("families".into(), vec!["inet"].into());
        }
    }
    ifaces.sort_by_key(|(_, d)| d.get("priority").and_then(Value::as_u64).unwrap_or(0));
    ifaces
}

fn entry<'a>(
    ifaces: &'a mut Vec<(String, Map<String, Value>)>,
    name: &str,
) -> &'a mut Map<String, Value> {
    let i = match ifaces.iter().position(|(n, _)| n == name) {
        Some(i) => i,
        None => {
            ifaces.push((name.to_string(), Map::new()));
            ifaces.len() - 1
        }
    };
    &mut ifaces[i].1
}

/// One option line of a stanza.
fn option(
    d: &mut Map<String, Value>,
    f: &mut Map<String, Value>,
    suffix: Option<&str>,
    id: &str,
    value: &str,
    line: &str,
) {
    match id {
        "address" | "netmask" | "broadcast" | "gateway" => {
            let key = match suffix {
                Some(s) => format!("{id}{s}"),
                None if id != "netmask" && value.contains(':') => format!("{id}6"),
                None => id.to_string(),
            };
            d.insert(key, value.into());
        }
        "slaves" | "bridge_ports" => {
            let mut devs: Vec<&str> = value.split_whitespace().filter(|p| *p != "none").collect();
            if value.split_whitespace().any(|p| p == "none") && id == "bridge_ports" {
                d.insert("is_empty_bridge".into(), 1.into());
            }
            devs.sort_unstable();
            devs.dedup();
            d.insert(id.into(), devs.join(" ").into());
        }
        "bridge_stp" => {
            let on = matches!(value.to_ascii_lowercase().as_str(), "on" | "yes");
            d.insert(id.into(), if on { "on" } else { "off" }.into());
        }
        "bridge_vlan_aware" => {
            d.insert(id.into(), 1.into());
        }
        _ if SIMPLE.contains(&id) => {
            d.insert(id.into(), value.into());
        }
        _ => {
            let to = if suffix.is_some() { f } else { d };
            let mut opts = to
                .get("options")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            opts.push(line.into());
            to.insert("options".into(), opts.into());
        }
    }
}

/// `$PHYSICAL_NIC_RE`: `eth\d+`, `en...`, `ib...`.
fn physical_name(name: &str) -> bool {
    let rest = |p: &str| {
        name.strip_prefix(p)
            .filter(|r| !r.is_empty() && !r.contains([':', '.']))
    };
    rest("eth").is_some_and(|r| r.bytes().all(|b| b.is_ascii_digit()))
        || rest("en").is_some()
        || rest("ib").is_some()
}

/// The entry's `type`, with the bridge defaults PVE fills in.
fn classify(name: &str, d: &mut Map<String, Value>, net: &NodeNetwork, known: &[String]) {
    let exists_of =
        |raw: &str| known.iter().any(|k| k == raw) && net.physical.iter().any(|p| p == raw);
    let ty = if d.contains_key("bridge_ports") || d.remove("is_empty_bridge").is_some() {
        if !d.contains_key("bridge_stp") {
            d.insert("bridge_stp".into(), "off".into());
        }
        if !d.contains_key("bridge_fd") && d["bridge_stp"] == "off" {
            d.insert("bridge_fd".into(), 0.into());
        }
        "bridge"
    } else if name
        .strip_prefix("bond")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    {
        "bond"
    } else if let Some((raw, _)) = name.split_once(':') {
        d.insert("exists".into(), u8::from(exists_of(raw)).into());
        "alias"
    } else if let Some((raw, id)) = name.split_once('.') {
        if !d.contains_key("vlan-raw-device") {
            d.insert("vlan-raw-device".into(), raw.into());
        }
        if let Ok(id) = id.parse::<u32>() {
            d.insert("vlan-id".into(), id.into());
        }
        d.insert("exists".into(), u8::from(exists_of(raw)).into());
        "vlan"
    } else if let Some(raw) = d.get("vlan-raw-device").and_then(Value::as_str) {
        let exists = exists_of(raw);
        d.insert("exists".into(), u8::from(exists).into());
        "vlan"
    } else if net.physical.iter().any(|p| p == name) || physical_name(name) {
        "eth"
    } else if name == "lo" {
        "loopback"
    } else {
        "unknown"
    };
    d.insert("type".into(), ty.into());
}

/// `address`/`netmask` to `cidr` (and the IPv6 pair to `cidr6`).
fn addresses(d: &mut Map<String, Value>) {
    for sfx in ["", "6"] {
        let Some(addr) = d
            .get(&format!("address{sfx}"))
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            continue;
        };
        let host_bits = if sfx.is_empty() { "32" } else { "128" };
        let cidr = if let Some((base, bits)) = addr.split_once('/') {
            d.insert(format!("address{sfx}"), base.into());
            d.insert(format!("netmask{sfx}"), bits.into());
            addr.clone()
        } else if let Some(bits) = d
            .get(&format!("netmask{sfx}"))
            .and_then(Value::as_str)
            .and_then(mask_bits)
        {
            if sfx.is_empty() {
                d.insert("netmask".into(), bits.to_string().into());
            }
            format!("{addr}/{bits}")
        } else {
            format!("{addr}/{host_bits}")
        };
        d.insert(format!("cidr{sfx}"), cidr.into());
    }
}

/// Prefix length of a netmask written as bits or dotted quad.
fn mask_bits(mask: &str) -> Option<u32> {
    if let Ok(n) = mask.parse::<u32>() {
        return Some(n);
    }
    let octets: Vec<u8> = mask.split('.').filter_map(|o| o.parse().ok()).collect();
    let v = u32::from_be_bytes(octets.try_into().ok()?);
    (v.leading_ones() + v.trailing_zeros() == 32).then(|| v.leading_ones())
}

/// `diff -b -N -u old new` as PVE shows pending changes (`None` when the
/// files do not differ). Hunks carry three lines of context.
pub(crate) fn unified_diff(old: (&str, u64, &str), new: (&str, u64, &str)) -> Option<String> {
    let a: Vec<&str> = old.2.lines().collect();
    let b: Vec<&str> = new.2.lines().collect();
    // -b: runs of blanks compare equal.
    let norm = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let (na, nb): (Vec<String>, Vec<String>) = (
        a.iter().map(|l| norm(l)).collect(),
        b.iter().map(|l| norm(l)).collect(),
    );
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if na[i] == nb[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    // (old index, new index, mark) per line of the edit script.
    let mut ops: Vec<(usize, usize, char)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && na[i] == nb[j] {
            ops.push((i, j, ' '));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push((i, j, '-'));
            i += 1;
        } else {
            ops.push((i, j, '+'));
            j += 1;
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].2 != ' ').collect();
    if changed.is_empty() {
        return None;
    }
    let stamp = |t: u64| {
        let (y, mo, d, h, mi, s) = crate::util::civil(t);
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.000000000 +0000")
    };
    let mut out = format!(
        "--- {}\t{}\n+++ {}\t{}\n",
        old.0,
        stamp(old.1),
        new.0,
        stamp(new.1)
    );
    let mut k = 0;
    while k < changed.len() {
        let mut end = k;
        while end + 1 < changed.len() && changed[end + 1] - changed[end] <= 7 {
            end += 1;
        }
        let from = changed[k].saturating_sub(3);
        let to = (changed[end] + 3).min(ops.len() - 1);
        let hunk = &ops[from..=to];
        let a_len = hunk.iter().filter(|o| o.2 != '+').count();
        let b_len = hunk.iter().filter(|o| o.2 != '-').count();
        let range = |start: usize, len: usize| match len {
            0 => format!("{start},0"),
            1 => format!("{}", start + 1),
            _ => format!("{},{len}", start + 1),
        };
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(hunk[0].0, a_len),
            range(hunk[0].1, b_len)
        ));
        for &(oi, nj, mark) in hunk {
            let text = if mark == '+' { b[nj] } else { a[oi] };
            out.push_str(&format!("{mark}{text}\n"));
        }
        k = end + 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net() -> NodeNetwork {
        NodeNetwork {
            applied: String::new(),
            pending: None,
            mtimes: (0, 0),
            physical: vec!["eno1".into(), "eno2".into()],
            active: vec!["eno1".into(), "vmbr0".into()],
        }
    }

    #[test]
    fn stanzas_become_entries() {
        let text = "auto lo\niface lo inet loopback\n\niface eno1 inet manual\n\n\
                    auto vmbr0\niface vmbr0 inet static\n\taddress 192.0.2.11/24\n\tgateway 192.0.2.1\n\
                    \tbridge-ports eno1\n\tbridge-stp off\n\tbridge-fd 0\n#uplink\n\n\
                    iface vmbr1 inet manual\n\tbridge-ports none\n\tbridge-vlan-aware yes\n\
                    \tbridge-vids 2-4094\n\nauto eno2.50\niface eno2.50 inet static\n\
                    \taddress 10.50.0.2\n\tnetmask 255.255.255.0\n";
        let l = parse(text, &net());
        let names: Vec<&str> = l.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["lo", "eno1", "vmbr0", "vmbr1", "eno2.50"]);
        let v = &l[2].1;
        assert_eq!(v["type"], "bridge");
        assert_eq!(
            (&v["address"], &v["netmask"], &v["cidr"]),
            (&"192.0.2.11".into(), &"24".into(), &"192.0.2.11/24".into())
        );
        assert_eq!(v["comments"], "uplink\n");
        assert_eq!((&v["active"], &v["autostart"]), (&1.into(), &1.into()));
        assert_eq!(v["families"], serde_json::json!(["inet"]));
        assert_eq!(v["method6"], "manual");
        let b = &l[3].1;
        assert_eq!(
            (&b["bridge_ports"], &b["bridge_fd"]),
            (&"".into(), &0.into())
        );
        assert_eq!(b["bridge_vlan_aware"], 1);
        assert!(b.get("active").is_none());
        assert_eq!(l[1].1["type"], "eth");
        assert_eq!(l[1].1["exists"], 1);
        let vlan = &l[4].1;
        assert_eq!(vlan["type"], "vlan");
        assert_eq!(vlan["vlan-id"], 50);
        assert_eq!(vlan["cidr"], "10.50.0.2/24");
    }

    #[test]
    fn diff_like_gnu() {
        let a = "a\nb\nc\nd\ne\nf\n";
        let b = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let d = unified_diff(("/x", 0, a), ("/x.new", 60, b)).unwrap();
        assert_eq!(
            d,
            "--- /x\t1970-01-01 00:00:00.000000000 +0000\n\
             +++ /x.new\t1970-01-01 00:01:00.000000000 +0000\n\
             @@ -4,3 +4,5 @@\n d\n e\n f\n+g\n+h\n"
        );
        assert!(unified_diff(("/x", 0, a), ("/y", 0, "a\nb\nc\nd\ne\nf\n")).is_none());
        let d = unified_diff(("/x", 0, "a\n"), ("/y", 0, "b\n")).unwrap();
        assert!(d.ends_with("@@ -1 +1 @@\n-a\n+b\n"), "{d}");
    }
}
