//! Snapshot names, as PVE's `pve-configid` rule and its reserved names
//! allow them.

use serde_json::Value;

use crate::error::quoted;

/// PVE's `pve-configid` rule for a snapshot name.
pub const SNAPNAME_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_-]+$";

/// Longest snapshot name PVE accepts.
pub const SNAPNAME_MAX: usize = 40;

/// Names PVE keeps for itself: `current` (the live state), `pending`
/// (qemu's pending changes, any case) and `vzdump` (lxc backups).
const RESERVED: &[&str] = &["current", "pending", "vzdump"];

/// A snapshot name: a letter, then letters, digits, `-` or `_`; 2 to 40
/// characters; not a reserved name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapName(pub String);

impl SnapName {
    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let rule = "2 to 40 characters: a letter, then letters, digits, '-' or '_', e.g. \
                    \"pre-upgrade\"";
        let s = match v {
            Value::Null => {
                return Err(format!(
                    "missing required argument; pass a snapshot name ({rule})"
                ));
            }
            Value::String(s) => s,
            other => {
                return Err(format!(
                    "must be a snapshot name string ({rule}), not {}",
                    super::json_kind(other)
                ));
            }
        };
        let b = s.as_bytes();
        let valid = (2..=SNAPNAME_MAX).contains(&b.len())
            && b[0].is_ascii_alphabetic()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_');
        if !valid {
            return Err(format!(
                "{} is not a valid snapshot name ({rule})",
                quoted(s, 64)
            ));
        }
        if RESERVED.iter().any(|r| s.eq_ignore_ascii_case(r)) {
            return Err(format!(
                "{} is reserved by Proxmox (current, pending and vzdump are); choose another \
                 name",
                quoted(s, 64)
            ));
        }
        Ok(SnapName(s.clone()))
    }
}
super::deserialize_from_json!(SnapName);
super::fixed_schema!(
    SnapName,
    serde_json::json!({
        "type": "string", "pattern": SNAPNAME_PATTERN, "minLength": 2, "maxLength": SNAPNAME_MAX,
    })
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_follow_pves_rule_and_reserved_ones_are_refused() {
        for good in ["ab", "pre-upgrade", "A_1", &"a".repeat(40)] {
            assert!(SnapName::from_json(&json!(good)).is_ok(), "{good}");
        }
        for bad in ["a", "1ab", "a b", "a.b", "", &"a".repeat(41)] {
            let e = SnapName::from_json(&json!(bad)).unwrap_err();
            assert!(e.contains("not a valid snapshot name"), "{bad}: {e}");
        }
        for reserved in ["current", "PENDING", "vzdump"] {
            let e = SnapName::from_json(&json!(reserved)).unwrap_err();
            assert!(e.contains("reserved"), "{e}");
        }
    }
}
