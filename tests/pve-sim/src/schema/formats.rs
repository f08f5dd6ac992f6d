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
/// keep Perl's trailing newline.
pub(super) fn check_format(format: &str, v: &str) -> Result<(), String> {
    if let Some(base) = format.strip_suffix("-list")
        && known_format(base)
    {
        return split_list(v).try_for_each(|item| check_format(base, item));
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
        _ => Ok(()),
    }
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
        "pve-vmid" | "pve-node" | "pve-storage-id" | "pve-configid" | "dns-name"
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
    fn numbers_like_perl() {
        for ok in ["1", "-1", "1.5", "1.", ".5", "1e3", "+2E-1"] {
            assert!(is_number(ok), "{ok}");
        }
        for bad in ["", ".", "e3", "1e", "a", "1.2.3", "0x1"] {
            assert!(!is_number(bad), "{bad}");
        }
    }
}
