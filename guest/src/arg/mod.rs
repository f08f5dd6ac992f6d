//! Argument types that validate themselves.
//!
//! A tool's input is a `Deserialize` struct whose fields have these types,
//! so a bad value fails while the arguments are read, before any request,
//! and the agent gets a message that says how to fix it. [`crate::input`]
//! prefixes the field's name. The rules mirror Proxmox's own formats and
//! the JSON Schemas derived from these types (`JsonSchema` impls, built in
//! tests only), and the tests check the two agree.
//!
//! `null` counts as absent, because many clients send `null` for optional
//! parameters they do not use: an `Option<T>` field reads it as `None`, a
//! required one says it is missing, a defaulted one takes its default.

use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::Value;

use crate::error::quoted;

pub mod disk;
pub mod guest;
pub mod snapname;
pub mod time;
pub mod url;
pub mod volume;

/// Smallest valid VM/CT id (Proxmox format `pve-vmid`).
pub const VMID_MIN: u64 = 100;
/// Largest valid VM/CT id.
pub const VMID_MAX: u64 = 999_999_999;
/// Longest node name: a host name label.
pub const NODE_MAX_LEN: usize = 63;
/// JSON Schema pattern of a node name (Proxmox format `pve-node`), without
/// `localhost` in any case (see [`is_node_name`]).
pub const NODE_PATTERN: &str =
    "^(?![Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]$)[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$";

/// How long a shown value may get inside an error message.
pub(crate) const SHOWN_MAX: usize = 64;

/// Deserialises an argument through `parse`, which sees the raw JSON value
/// and explains what is wrong with it.
pub fn read<'de, D, T>(d: D, parse: impl FnOnce(&Value) -> Result<T, String>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let v = Value::deserialize(d)?;
    parse(&v).map_err(D::Error::custom)
}

/// Names a JSON value's type for "not a ..." messages.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a fractional number",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An integer within `min..=max`. `example` is shown in the message when
/// the value has the wrong JSON type.
pub fn integer(v: &Value, min: u64, max: u64, example: u64) -> Result<u64, String> {
    let n = match v {
        Value::Number(n) => n,
        Value::String(s) => {
            // Agents often quote numbers; say exactly what to change.
            let hint = if s.trim().parse::<u64>().is_ok() {
                "; send it without quotes"
            } else {
                ""
            };
            return Err(format!(
                "must be an integer, e.g. {example}, not a string ({}){hint}",
                quoted(s, SHOWN_MAX)
            ));
        }
        other => {
            return Err(format!(
                "must be an integer, e.g. {example}, not {}",
                json_kind(other)
            ));
        }
    };
    // JSON Schema counts 102.0 as an integer, but the host binds routes
    // and judges policy conditions on the number as written, where 102.0
    // is not 102: refuse it here, before anything is sent, with the fix.
    let whole = |f: &f64| n.is_f64() && f.fract() == 0.0 && (min as f64..=max as f64).contains(f);
    if let Some(f) = n.as_f64().filter(whole) {
        return Err(format!(
            "must be an integer written without a decimal point: send {} instead of {n}",
            f as u64
        ));
    }
    match n.as_u64() {
        Some(i) if (min..=max).contains(&i) => Ok(i),
        _ => Err(format!(
            "must be an integer between {min} and {max} (got {n})"
        )),
    }
}

/// A non-empty string of at most `max_len` characters.
pub fn string(v: &Value, max_len: usize) -> Result<&str, String> {
    let Value::String(s) = v else {
        return Err(format!("must be a string, not {}", json_kind(v)));
    };
    if s.is_empty() {
        return Err("must not be empty; omit it instead".into());
    }
    let len = s.chars().count();
    if len > max_len {
        return Err(format!("must be at most {max_len} characters (got {len})"));
    }
    Ok(s)
}

/// A string that must be one of `allowed`.
pub fn one_of<'v>(v: &'v Value, allowed: &[&str]) -> Result<&'v str, String> {
    let must = if let [a, b] = allowed {
        format!("must be {} or {}", quoted(a, 64), quoted(b, 64))
    } else {
        let list = allowed
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", ");
        format!("must be one of {list}")
    };
    match v {
        Value::String(s) if allowed.contains(&s.as_str()) => Ok(s),
        Value::String(s) => Err(format!("{must} (got {})", quoted(s, SHOWN_MAX))),
        other => Err(format!("{must}, not {}", json_kind(other))),
    }
}

/// Declares an enum whose values are fixed strings (Proxmox's spellings):
/// it reads with a message that lists the choices, writes as its string,
/// and its JSON Schema is a string `enum` in declaration order.
macro_rules! choice {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in schema order.
            pub const ALL: &'static [&'static str] = &[$($text),+];

            /// The value as Proxmox spells it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }

            /// Parses Proxmox's spelling.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::arg::read(d, |v| {
                    $crate::arg::one_of(v, Self::ALL)
                        .map(|s| Self::parse(s).expect("one_of checked it"))
                })
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        #[cfg(test)]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "enum": Self::ALL})
            }
        }
    };
}
pub(crate) use choice;

/// Implements `Deserialize` through the type's `from_json`.
macro_rules! deserialize_from_json {
    ($($t:ty),+) => {$(
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::arg::read(d, Self::from_json)
            }
        }
    )+};
}
pub(crate) use deserialize_from_json;

/// Implements `JsonSchema` (tests only) as a fixed schema.
macro_rules! fixed_schema {
    ($t:ty, $schema:expr) => {
        #[cfg(test)]
        impl schemars::JsonSchema for $t {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($t).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::Schema::try_from($schema).expect("an object schema")
            }
        }
    };
}
pub(crate) use fixed_schema;

choice! {
    /// The two kinds of guest Proxmox runs; also the API path segment.
    pub enum VmType {
        /// A QEMU/KVM virtual machine (`/nodes/{node}/qemu/...`).
        Qemu = "qemu",
        /// An LXC container (`/nodes/{node}/lxc/...`).
        Lxc = "lxc",
    }
}

impl VmType {
    /// `VM` or `CT`, as Proxmox's own UI labels guests.
    pub fn label(self) -> &'static str {
        match self {
            VmType::Qemu => "VM",
            VmType::Lxc => "CT",
        }
    }
}

/// A VM/CT id, `100..=999999999`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Vmid(pub u32);

impl Vmid {
    fn from_json(v: &Value) -> Result<Self, String> {
        if v.is_null() {
            return Err(
                "missing required argument; pass the numeric VM/CT id, e.g. {\"vmid\": 101} \
                 (pve_list_vms lists them)"
                    .into(),
            );
        }
        // VMID_MAX fits in u32, so the cast cannot truncate.
        integer(v, VMID_MIN, VMID_MAX, 101).map(|n| Vmid(n as u32))
    }
}
deserialize_from_json!(Vmid);
fixed_schema!(
    Vmid,
    serde_json::json!({"type": "integer", "minimum": VMID_MIN, "maximum": VMID_MAX})
);

/// Whether `s` is a valid Proxmox node name: a host name label of letters,
/// digits and inner hyphens, and not `localhost`, which Proxmox reads as
/// whichever node answers (the same rule as [`NODE_PATTERN`]).
pub fn is_node_name(s: &str) -> bool {
    let b = s.as_bytes();
    !s.eq_ignore_ascii_case("localhost")
        && !b.is_empty()
        && b.len() <= NODE_MAX_LEN
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// A Proxmox node name (format `pve-node`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeName(pub String);

impl NodeName {
    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let rule = "letters, digits and '-', e.g. \"pve1\"";
        match v {
            // Proxmox reads "localhost" as whichever node answers, so a
            // policy condition on `node` could not tell which node it is.
            Value::String(s) if s.eq_ignore_ascii_case("localhost") => Err(
                "\"localhost\" is not accepted as a node name: Proxmox takes it to mean \
                 whichever node answers the request; name the node, e.g. from pve_list_nodes"
                    .into(),
            ),
            Value::String(s) if is_node_name(s) => Ok(NodeName(s.clone())),
            Value::String(s) => Err(format!(
                "{} is not a valid node name ({rule})",
                quoted(s, SHOWN_MAX)
            )),
            Value::Null => Err(
                "missing required argument; pass a node name, e.g. {\"node\": \"pve1\"} \
                 (pve_list_nodes lists them)"
                    .into(),
            ),
            other => Err(format!(
                "must be a node name string ({rule}), not {}",
                json_kind(other)
            )),
        }
    }
}
deserialize_from_json!(NodeName);
fixed_schema!(
    NodeName,
    serde_json::json!({
        "type": "string", "pattern": NODE_PATTERN, "minLength": 1, "maxLength": NODE_MAX_LEN,
    })
);

/// A non-empty string of at most `MAX` characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<const MAX: usize>(pub String);

impl<const MAX: usize> Text<MAX> {
    /// The text as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de, const MAX: usize> Deserialize<'de> for Text<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read(d, |v| string(v, MAX).map(|s| Text(s.to_owned())))
    }
}

#[cfg(test)]
impl<const MAX: usize> schemars::JsonSchema for Text<MAX> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Text{MAX}").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "minLength": 1, "maxLength": MAX})
    }
}

/// An integer in `MIN..=MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int<const MIN: u64, const MAX: u64>(pub u64);

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Int<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read(d, |v| integer(v, MIN, MAX, MIN).map(Int))
    }
}

#[cfg(test)]
impl<const MIN: u64, const MAX: u64> schemars::JsonSchema for Int<MIN, MAX> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Int{MIN}to{MAX}").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "integer", "minimum": MIN, "maximum": MAX})
    }
}

/// A boolean that is `false` when absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flag(pub bool);

impl Flag {
    fn from_json(v: &Value) -> Result<Self, String> {
        match v {
            Value::Null => Ok(Flag(false)),
            Value::Bool(b) => Ok(Flag(*b)),
            Value::String(s) if s == "true" || s == "false" => {
                Err(format!("must be a boolean; send {s} without quotes"))
            }
            _ => Err("must be true or false".into()),
        }
    }
}
deserialize_from_json!(Flag);
fixed_schema!(Flag, serde_json::json!({"type": "boolean"}));

/// Longest storage id.
pub const STORAGE_MAX: usize = 100;
/// JSON Schema pattern of a storage id (`pve-storage-id`).
pub const STORAGE_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9]$";

/// Whether `s` is a valid Proxmox storage id.
pub fn is_storage_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2
        && b.len() <= STORAGE_MAX
        && b[0].is_ascii_alphabetic()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(c))
}

/// A Proxmox storage id (format `pve-storage-id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageId(pub String);

impl StorageId {
    /// The id as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        if v.is_null() {
            return Err(
                "missing required argument; pass a storage id, e.g. {\"storage\": \"local\"}"
                    .into(),
            );
        }
        let s = string(v, STORAGE_MAX)?;
        if !is_storage_id(s) {
            return Err(format!(
                "{} is not a valid storage id (a letter, then letters, digits, '-', '_' or '.'), \
                 e.g. \"local\"",
                quoted(s, 64)
            ));
        }
        Ok(StorageId(s.to_owned()))
    }
}
deserialize_from_json!(StorageId);
fixed_schema!(
    StorageId,
    serde_json::json!({"type": "string", "minLength": 2, "maxLength": STORAGE_MAX, "pattern": STORAGE_PATTERN})
);

/// JSON Schema pattern of a DNS name (PVE's `dns-name` format): labels of
/// letters, digits and inner hyphens, joined by dots.
pub const DNS_NAME_PATTERN: &str =
    "^([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?\\.)*[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$";

/// A guest name or container hostname (format `dns-name`): Proxmox
/// rejects `_` and spaces in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsName(pub String);

impl DnsName {
    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let s = string(v, 255)?;
        let label_ok = |l: &str| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        };
        if !s.split('.').all(label_ok) {
            return Err(format!(
                "{} is not a valid DNS name (letters, digits and '-', in labels joined by '.'; \
                 no '_' or spaces), e.g. \"web-02\"",
                quoted(s, 64)
            ));
        }
        Ok(DnsName(s.to_owned()))
    }
}
deserialize_from_json!(DnsName);
fixed_schema!(
    DnsName,
    serde_json::json!({"type": "string", "minLength": 1, "maxLength": 255, "pattern": DNS_NAME_PATTERN})
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err<T: std::fmt::Debug>(r: Result<T, String>) -> String {
        r.expect_err("expected an error")
    }

    fn vmid(v: Value) -> Result<Vmid, String> {
        Vmid::from_json(&v)
    }

    fn node(v: Value) -> Result<NodeName, String> {
        NodeName::from_json(&v)
    }

    #[test]
    fn vmid_boundaries() {
        assert_eq!(vmid(json!(100)), Ok(Vmid(100)));
        assert_eq!(vmid(json!(999_999_999)), Ok(Vmid(999_999_999)));
        // The finding of issue 21: 102.0 reached the gate before.
        assert!(err(vmid(json!(102.0))).contains("send 102 instead of 102.0"));
        assert_eq!(
            err(vmid(json!(99))),
            "must be an integer between 100 and 999999999 (got 99)"
        );
        assert_eq!(
            err(vmid(json!(1_000_000_000u64))),
            "must be an integer between 100 and 999999999 (got 1000000000)"
        );
        assert!(err(vmid(json!(-5))).contains("(got -5)"));
        assert!(err(vmid(json!(101.5))).contains("(got 101.5)"));
        assert!(err(vmid(json!(1e300))).contains("between 100"));
    }

    #[test]
    fn vmid_wrong_types_and_missing() {
        assert_eq!(
            err(vmid(json!("101"))),
            "must be an integer, e.g. 101, not a string (\"101\"); send it without quotes"
        );
        assert_eq!(
            err(vmid(json!("web"))),
            "must be an integer, e.g. 101, not a string (\"web\")"
        );
        assert!(err(vmid(json!(true))).ends_with("not a boolean"));
        assert!(err(vmid(json!([101]))).ends_with("not an array"));
        assert!(err(vmid(Value::Null)).starts_with("missing required argument"));
    }

    #[test]
    fn node_names() {
        assert_eq!(node(json!("pve1")), Ok(NodeName("pve1".into())));
        assert_eq!(node(json!("a")).unwrap().as_str(), "a");
        assert_eq!(node(json!("pve-01")).unwrap().as_str(), "pve-01");
        assert_eq!(
            err(node(json!("pve 1"))),
            "\"pve 1\" is not a valid node name (letters, digits and '-', e.g. \"pve1\")"
        );
        for bad in ["", "-pve", "pve-", "pve.example", "pve/../x", "pve%2F", "ä"] {
            assert!(
                err(node(json!(bad))).contains("is not a valid node name"),
                "{bad}"
            );
        }
        assert!(err(node(json!("a".repeat(64)))).contains("not a valid node name"));
        assert!(err(node(json!(1))).ends_with("not a number"));
        assert!(err(node(Value::Null)).starts_with("missing required argument"));
    }

    #[test]
    fn localhost_is_not_a_node_name() {
        // Proxmox reads "localhost" as whichever node answers, so a policy
        // on `node` could not tell which node a call is for.
        for name in ["localhost", "LocalHost", "LOCALHOST"] {
            let e = err(node(json!(name)));
            assert!(
                e.contains("\"localhost\"")
                    && e.contains("name the node, e.g. from pve_list_nodes"),
                "{e}"
            );
        }
        assert_eq!(node(json!("localhost1")).unwrap().as_str(), "localhost1");
        // The schema agents see says the same (`task` tests the UPID).
        let schema =
            jsonschema::validator_for(&json!({"type": "string", "pattern": NODE_PATTERN})).unwrap();
        for name in ["localhost", "LocalHost"] {
            assert!(!schema.is_valid(&json!(name)), "{name}");
        }
        assert!(schema.is_valid(&json!("localhost1")) && schema.is_valid(&json!("pve1")));
    }

    #[test]
    fn vm_types() {
        let vm_type = |v: Value| serde_json::from_value::<VmType>(v).map_err(|e| e.to_string());
        assert_eq!(vm_type(json!("qemu")), Ok(VmType::Qemu));
        assert_eq!(vm_type(json!("lxc")), Ok(VmType::Lxc));
        assert_eq!(
            err(vm_type(json!("vm"))),
            "must be \"qemu\" or \"lxc\" (got \"vm\")"
        );
        assert!(err(vm_type(json!("QEMU"))).contains("(got \"QEMU\")"));
        assert!(err(vm_type(json!(1))).ends_with("not a number"));
        assert_eq!(serde_json::to_value(VmType::Lxc).unwrap(), "lxc");
    }

    #[test]
    fn integers_strings_and_flags() {
        assert_eq!(
            err(integer(&json!(0), 1, 1000, 100)),
            "must be an integer between 1 and 1000 (got 0)"
        );
        assert_eq!(integer(&json!(1000), 1, 1000, 100), Ok(1000));
        assert_eq!(
            err(integer(&json!(102.0), 1, 1000, 100)),
            "must be an integer written without a decimal point: send 102 instead of 102.0"
        );
        assert!(err(integer(&json!(102.5), 1, 1000, 100)).contains("between 1 and 1000"));
        assert_eq!(string(&json!("web"), 8), Ok("web"));
        assert!(err(string(&json!(""), 8)).contains("must not be empty"));
        assert!(err(string(&json!("123456789"), 8)).contains("at most 8"));
        assert!(err(string(&json!(5), 8)).contains("must be a string"));
        assert!(
            err(one_of(&json!("x"), &["a", "b", "c"]))
                .contains("must be one of \"a\", \"b\", \"c\" (got \"x\")")
        );
        assert_eq!(Flag::from_json(&Value::Null), Ok(Flag(false)));
        assert_eq!(Flag::from_json(&json!(true)), Ok(Flag(true)));
        assert_eq!(
            err(Flag::from_json(&json!("true"))),
            "must be a boolean; send true without quotes"
        );
        assert_eq!(err(Flag::from_json(&json!(1))), "must be true or false");
    }
}
