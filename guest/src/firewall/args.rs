//! The arguments of a firewall rule, each checked against the character
//! set of its Proxmox format (`pve-fw-addr-spec`, `pve-fw-dport-spec`,
//! ...) so a value that could carry something else never reaches a
//! request; Proxmox checks the meaning.

use serde_json::Value;

use crate::arg::{choice, deserialize_from_json, fixed_schema, string};
use crate::error::quoted;

/// Declares a text argument of at most `$max` bytes drawn from `$allowed`
/// (ASCII letters and digits always), with an example for its error.
macro_rules! spec_text {
    ($(#[$meta:meta])* $name:ident, $max:expr, $allowed:expr, $example:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(pub String);

        impl $name {
            /// The value as given.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            fn from_json(v: &Value) -> Result<Self, String> {
                let s = string(v, $max)?;
                if s.bytes().all(|b| b.is_ascii_alphanumeric() || $allowed.contains(&b)) {
                    Ok($name(s.to_owned()))
                } else {
                    Err(format!(
                        "{} has a character this field does not take; e.g. {}",
                        quoted(s, 64),
                        $example
                    ))
                }
            }
        }
        deserialize_from_json!($name);
        fixed_schema!(
            $name,
            serde_json::json!({"type": "string", "minLength": 1, "maxLength": $max})
        );
    };
}

spec_text!(
    /// A source or destination: an address, a CIDR, a range, a list of
    /// them, an alias, or an IP set (`+name`).
    Address,
    512,
    b".:/,+-_!",
    "\"10.0.0.0/24\", \"+management\" or \"10.0.0.5-10.0.0.9\""
);
spec_text!(
    /// Ports: numbers, `a:b` ranges, service names, comma-separated.
    Ports,
    128,
    b":,-",
    "\"22\", \"8000:8100\" or \"80,443\""
);
spec_text!(
    /// An IP protocol by name or number.
    Protocol,
    32,
    b"-",
    "\"tcp\", \"udp\" or \"icmp\""
);
spec_text!(
    /// A network interface: `net0` for a guest, `vmbr0` for a node.
    Iface,
    20,
    b"-_.",
    "\"net0\" or \"vmbr0\""
);
spec_text!(
    /// A standard macro (`SSH`, `HTTPS`, `Ping`).
    Macro,
    128,
    b"",
    "\"SSH\" or \"Ping\""
);
spec_text!(
    /// What a rule does: `ACCEPT`, `DROP`, `REJECT`, or for a `group`
    /// rule the security group's name.
    RuleAction,
    20,
    b"-_",
    "\"ACCEPT\", \"DROP\", \"REJECT\" or a security group's name"
);
spec_text!(
    /// A ruleset's or options' digest, as pve_get_firewall gives it.
    Digest,
    64,
    b"",
    "the digest pve_get_firewall answered"
);

choice! {
    /// A rule's direction, or a security group it applies.
    pub enum RuleType {
        /// Incoming traffic.
        In = "in",
        /// Outgoing traffic.
        Out = "out",
        /// A security group's rules (`action` names the group).
        Group = "group",
    }
}

choice! {
    /// A firewall log level.
    pub enum LogLevel {
        /// Emergency.
        Emerg = "emerg",
        /// Alert.
        Alert = "alert",
        /// Critical.
        Crit = "crit",
        /// Error.
        Err = "err",
        /// Warning.
        Warning = "warning",
        /// Notice.
        Notice = "notice",
        /// Info.
        Info = "info",
        /// Debug.
        Debug = "debug",
        /// No logging.
        Nolog = "nolog",
    }
}

choice! {
    /// A default policy for traffic no rule decides.
    pub enum Policy {
        /// Let it through.
        Accept = "ACCEPT",
        /// Refuse it, telling the sender.
        Reject = "REJECT",
        /// Drop it silently.
        Drop = "DROP",
    }
}

/// The verdicts an `in` or `out` rule may have.
pub const VERDICTS: &[&str] = &["ACCEPT", "DROP", "REJECT"];

/// Checks a rule's `action` against its `type`: a verdict for `in` and
/// `out`, a group's name (checked against the groups there are) for
/// `group`.
pub fn check_action(
    kind: RuleType,
    action: &RuleAction,
    groups: impl FnOnce() -> Result<Vec<String>, crate::error::ToolError>,
) -> Result<(), crate::error::ToolError> {
    use crate::error::ToolError;
    let a = action.as_str();
    match kind {
        RuleType::In | RuleType::Out if !VERDICTS.contains(&a) => Err(ToolError::field(
            "action",
            format!(
                "{} is not ACCEPT, DROP or REJECT, which an {} rule takes (type \"group\" \
                 applies a security group)",
                quoted(a, 32),
                kind.as_str()
            ),
        )),
        RuleType::Group => {
            let names = groups()?;
            if names.iter().any(|g| g == a) {
                Ok(())
            } else {
                Err(ToolError::field(
                    "action",
                    format!(
                        "there is no security group {}; the groups are {} (pve_get_firewall \
                         what=groups)",
                        quoted(a, 32),
                        crate::error::listed(&names)
                    ),
                ))
            }
        }
        _ => Ok(()),
    }
}
