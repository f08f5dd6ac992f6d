//! PVE's named parameter formats and Perl's number syntax.

pub(super) fn is_integer(v: &str) -> bool {
    let d = v.strip_prefix(['+', '-']).unwrap_or(v);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
}

/// Perl-style number: `[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?`.
pub(super) fn is_number(v: &str) -> bool {
    let s = v.strip_prefix(['+', '-']).unwrap_or(v);
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((a, b)) => {
            (!a.is_empty() || !b.is_empty())
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|c| c.is_ascii_digit()),
    };
    let exp_ok = exp.is_none_or(is_integer);
    mantissa_ok && exp_ok
}

/// PVE's named formats that the simulator knows; unknown ones pass. Messages
/// keep Perl's trailing newline. `path` is the parameter's name, which
/// property strings prefix their members' errors with.
pub(super) fn check_format(format: &str, v: &str, path: &str) -> Result<(), String> {
    if let Some(base) = format.strip_suffix("-list")
        && known_format(base)
    {
        return split_list(v).try_for_each(|item| check_format(base, item, path));
    }
    if let Some(members) = property_string(format) {
        return check_property_string(members, v, path);
    }
    match format {
        "pve-vmid" => {
            let b = v.as_bytes();
            let ok =
                (3..=9).contains(&b.len()) && b[0] != b'0' && b.iter().all(|c| c.is_ascii_digit());
            ok.then_some(())
                .ok_or_else(|| "value does not look like a valid VM ID\n".to_string())
        }
        "pve-node" => valid_node_name(v)
            .then_some(())
            .ok_or_else(|| "value does not look like a valid node name\n".to_string()),
        "pve-storage-id" => {
            let b = v.to_ascii_lowercase().into_bytes();
            let ok = b.len() >= 2
                && b[0].is_ascii_lowercase()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
            ok.then_some(())
                .ok_or_else(|| format!("storage ID '{v}' contains illegal characters\n"))
        }
        "pve-configid" => {
            // `$CONFIGID_RE = qr/[a-z][a-z0-9_-]+/i`
            let b = v.as_bytes();
            let ok = b.len() >= 2
                && b[0].is_ascii_alphabetic()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-');
            ok.then_some(())
                .ok_or_else(|| format!("invalid configuration ID '{v}'\n"))
        }
        "dns-name" => valid_dns_name(v)
            .then_some(())
            .ok_or_else(|| "value does not look like a valid DNS name\n".to_string()),
        "urlencoded" => v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-%_.!~*'()".contains(&b))
            .then_some(())
            .ok_or_else(|| format!("invalid urlencoded string: {v}\n")),
        "address" => (valid_ip(v) || valid_dns_name(v))
            .then_some(())
            .ok_or_else(|| format!("value does not look like a valid address: {v}\n")),
        "ip" => valid_ip(v)
            .then_some(())
            .ok_or_else(|| "value does not look like a valid IP address\n".to_string()),
        "ipv4" => valid_ipv4(v)
            .then_some(())
            .ok_or_else(|| "value does not look like a valid IPv4 address\n".to_string()),
        "ipv6" => valid_ipv6(v)
            .then_some(())
            .ok_or_else(|| "value does not look like a valid IPv6 address\n".to_string()),
        "CIDRv4" => valid_cidr(v, false)
            .then_some(())
            .ok_or_else(|| "value does not look like a valid IPv4 CIDR network\n".to_string()),
        "CIDRv6" => valid_cidr(v, true)
            .then_some(())
            .ok_or_else(|| "value does not look like a valid IPv6 CIDR network\n".to_string()),
        "pve-ipv4-config" => (matches!(v, "dhcp" | "manual") || valid_cidr(v, false))
            .then_some(())
            .ok_or_else(|| {
                "value does not look like a valid ipv4 network configuration\n".to_string()
            }),
        "pve-ipv6-config" => (matches!(v, "auto" | "dhcp" | "manual") || valid_cidr(v, true))
            .then_some(())
            .ok_or_else(|| {
                "value does not look like a valid ipv6 network configuration\n".to_string()
            }),
        "pve-iface" => valid_iface(v)
            .then_some(())
            .ok_or_else(|| format!("invalid network interface name '{v}'\n")),
        "pve-poolid" => check_poolid(v),
        "pve-replication-job-id" => check_replication_id(v),
        "pve-ha-resource-id" | "pve-ha-resource-or-vm-id" | "pve-ha-node" => {
            crate::ha::check_format(format, v)
        }
        f if f.starts_with("pve-fw-") => crate::firewall::check_format(f, v),
        _ => Ok(()),
    }
}

/// Members of the property-string formats the simulator checks: name,
/// member format and the member it `requires`.
type Members = &'static [(&'static str, &'static str, Option<&'static str>)];

fn property_string(format: &str) -> Option<Members> {
    match format {
        // qemu-server's `pve-qm-ipconfig`.
        "pve-qm-ipconfig" => Some(&[
            ("ip", "pve-ipv4-config", None),
            ("gw", "ipv4", Some("ip")),
            ("ip6", "pve-ipv6-config", None),
            ("gw6", "ipv6", Some("ip6")),
        ]),
        _ => None,
    }
}

/// `parse_property_string`: `key=value` members separated by commas. Its
/// structural errors come alone; member errors are collected and raised as
/// `format error` with one `<path>.<member>: <error>` line each.
fn check_property_string(members: Members, v: &str, path: &str) -> Result<(), String> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for part in v.split(',') {
        if part.trim().is_empty() {
            continue;
        }
        let Some((k, val)) = part
            .split_once('=')
            .filter(|(k, val)| !k.is_empty() && !val.is_empty())
        else {
            return Err(if part.contains('=') {
                "missing key in comma-separated list property\n".to_string()
            } else {
                "value without key, but schema does not define a default key\n".to_string()
            });
        };
        if seen.iter().any(|(s, _)| *s == k) {
            return Err(format!(
                "duplicate key in comma-separated list property: {k}\n"
            ));
        }
        if !members.iter().any(|(m, _, _)| *m == k) {
            return Err(format!(
                "invalid key in comma-separated list property: {k}\n"
            ));
        }
        seen.push((k, val));
    }
    let mut errors = std::collections::BTreeMap::new();
    for (k, val) in &seen {
        let Some((_, format, requires)) = members.iter().find(|(m, _, _)| m == k) else {
            continue;
        };
        if let Err(e) = check_format(format, val, path) {
            errors.insert(format!("{path}.{k}"), format!("invalid format - {e}"));
        }
        if let Some(req) = requires
            && !seen.iter().any(|(s, _)| s == req)
        {
            errors.insert(
                format!("{path}.{req}"),
                format!("missing property required by '{path}.{k}'\n"),
            );
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    let mut msg = "format error\n".to_string();
    for (k, e) in errors {
        msg.push_str(&format!("{k}: {}\n", e.trim_end()));
    }
    Err(msg)
}

/// `$IPV4RE`: four decimal octets (leading zeros allowed, as in Perl's
/// pattern).
pub(crate) fn valid_ipv4(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            (1..=3).contains(&p.len())
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

pub(crate) fn valid_ipv6(v: &str) -> bool {
    v.parse::<std::net::Ipv6Addr>().is_ok()
}

fn valid_ip(v: &str) -> bool {
    valid_ipv4(v) || valid_ipv6(v)
}

/// `CIDRv4` (prefix 8..=32) or `CIDRv6` (prefix 8..=128).
pub(crate) fn valid_cidr(v: &str, v6: bool) -> bool {
    let Some((addr, bits)) = v.split_once('/') else {
        return false;
    };
    let max = if v6 { 128 } else { 32 };
    let bits_ok = !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|n| n > 7 && n <= max);
    bits_ok
        && if v6 {
            valid_ipv6(addr)
        } else {
            valid_ipv4(addr)
        }
}

/// pve-access-control's `verify_poolname` (nested pools, PVE >= 8.1).
fn check_poolid(v: &str) -> Result<(), String> {
    if v.split('/').count() > 3 {
        return Err(format!(
            "pool name '{v}' nested too deeply (max levels = 3)\n"
        ));
    }
    let part = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    };
    if v.split('/').all(part) {
        Ok(())
    } else {
        Err(format!("pool name '{v}' contains invalid characters\n"))
    }
}

/// pve-guest-common's `parse_replication_job_id`: `<guest>-<jobnum>`.
fn check_replication_id(v: &str) -> Result<(), String> {
    let msg = format!("invalid replication job id '{v}'");
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match v.split_once('-') {
        Some((g, j)) if digits(g) && digits(j) => {
            if g.trim_start_matches('0').len() < 3 {
                Err(format!("{msg} (guest IDs < 100 are reserved)\n"))
            } else {
                Ok(())
            }
        }
        _ => Err(format!("{msg}\n")),
    }
}

/// `pve_verify_iface`: `^[a-z][a-z0-9_]{1,20}([:\.]\d+)?$`, case-insensitive.
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

/// `pve_verify_dns_name`: dot-separated labels of letters, digits and
/// inner hyphens.
fn valid_dns_name(v: &str) -> bool {
    !v.is_empty()
        && v.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        })
}

fn known_format(f: &str) -> bool {
    matches!(
        f,
        "pve-vmid"
            | "pve-node"
            | "pve-storage-id"
            | "pve-configid"
            | "dns-name"
            | "address"
            | "ip"
            | "ipv4"
            | "ipv6"
            | "pve-iface"
            | "pve-poolid"
            | "pve-ha-resource-id"
            | "pve-ha-node"
    )
}

/// `PVE::Tools::split_list`: NUL-separated if there is a NUL, otherwise on
/// commas, semicolons and whitespace.
fn split_list(v: &str) -> Box<dyn Iterator<Item = &str> + '_> {
    if v.contains('\0') {
        Box::new(v.split('\0'))
    } else {
        Box::new(
            v.split(|c: char| c == ',' || c == ';' || c.is_whitespace())
                .filter(|s| !s.is_empty()),
        )
    }
}

/// `^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`
fn valid_node_name(v: &str) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipconfig_like_parse_property_string() {
        let check = |v: &str| check_format("pve-qm-ipconfig", v, "ipconfig0");
        for ok in [
            "ip=dhcp",
            "ip=10.0.0.5/24,gw=10.0.0.1",
            "ip6=auto",
            "ip=dhcp,ip6=2001:db8::5/64,gw6=2001:db8::1",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            check("ip=10.0.0.5"),
            Err(
                "format error\nipconfig0.ip: invalid format - value does not look like a valid \
                 ipv4 network configuration\n"
                    .to_string()
            )
        );
        assert_eq!(
            check("gw=10.0.0.1"),
            Err(
                "format error\nipconfig0.ip: missing property required by 'ipconfig0.gw'\n"
                    .to_string()
            )
        );
        assert_eq!(
            check("foo=1"),
            Err("invalid key in comma-separated list property: foo\n".to_string())
        );
        assert_eq!(
            check("dhcp"),
            Err("value without key, but schema does not define a default key\n".to_string())
        );
        assert!(check_format("urlencoded", "ssh-ed25519%20AAAA", "sshkeys").is_ok());
        assert_eq!(
            check_format("urlencoded", "ssh-ed25519 AAAA", "sshkeys"),
            Err("invalid urlencoded string: ssh-ed25519 AAAA\n".to_string())
        );
        assert!(check_format("address-list", "1.1.1.1 dns.example.com", "n").is_ok());
        assert!(check_format("pve-iface", "vmbr0", "iface").is_ok());
        assert!(check_format("pve-iface", "0vmbr", "iface").is_err());
    }

    #[test]
    fn numbers_like_perl() {
        for ok in ["1", "-1", "1.5", "1.", ".5", "1e3", "+2E-1"] {
            assert!(is_number(ok), "{ok}");
        }
        for bad in ["", ".", "e3", "1e", "a", "1.2.3", "0x1"] {
            assert!(!is_number(bad), "{bad}");
        }
    }
}
