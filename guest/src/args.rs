//! Argument parsing and validation.
//!
//! Every tool validates all of its arguments before it sends any request,
//! so a bad call costs no Proxmox round trip and the agent gets a message
//! that names the field and says how to fix it. The rules mirror the tools'
//! input schemas (and Proxmox's own formats), and the tests check the two
//! agree.

use serde_json::{Map, Value};

use crate::error::{ToolError, quoted};

/// Smallest valid VM/CT id (Proxmox format `pve-vmid`).
pub const VMID_MIN: u64 = 100;
/// Largest valid VM/CT id.
pub const VMID_MAX: u64 = 999_999_999;
/// Longest node name: a host name label.
pub const NODE_MAX_LEN: usize = 63;
/// JSON Schema pattern of a node name (Proxmox format `pve-node`).
pub const NODE_PATTERN: &str = "^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$";

/// How long a shown value may get inside an error message.
const SHOWN_MAX: usize = 64;

/// The two kinds of guest Proxmox runs; also the API path segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VmType {
    /// A QEMU/KVM virtual machine (`/nodes/{node}/qemu/...`).
    Qemu,
    /// An LXC container (`/nodes/{node}/lxc/...`).
    Lxc,
}

impl VmType {
    /// All values, in the order schemas list them.
    pub const ALL: [&'static str; 2] = ["qemu", "lxc"];

    /// Parses Proxmox's spelling, which is also ours.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "qemu" => Some(VmType::Qemu),
            "lxc" => Some(VmType::Lxc),
            _ => None,
        }
    }

    /// `qemu` or `lxc`, as in API paths and `/cluster/resources`.
    pub fn as_str(self) -> &'static str {
        match self {
            VmType::Qemu => "qemu",
            VmType::Lxc => "lxc",
        }
    }

    /// `VM` or `CT`, as Proxmox's own UI labels guests.
    pub fn label(self) -> &'static str {
        match self {
            VmType::Qemu => "VM",
            VmType::Lxc => "CT",
        }
    }
}

/// Whether `s` is a valid Proxmox node name: a host name label of letters,
/// digits and inner hyphens (the same rule as [`NODE_PATTERN`]).
pub fn is_node_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= NODE_MAX_LEN
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// A tool's arguments: a JSON object whose keys have been checked against
/// the tool's declared properties.
#[derive(Debug, Clone, Default)]
pub struct Args {
    map: Map<String, Value>,
}

impl Args {
    /// Parses the `arguments` text of a call. `allowed` is the list of
    /// property names of the tool's input schema. An empty text or `null`
    /// counts as `{}`, since clients omit `arguments` for tools without
    /// required parameters.
    pub fn parse(text: &str, allowed: &[&str]) -> Result<Self, ToolError> {
        let value: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(text).map_err(|e| {
                ToolError::InvalidArguments(format!(
                    "arguments are not valid JSON ({e}); send a JSON object such as {}",
                    example_object(allowed)
                ))
            })?
        };
        let map = match value {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "arguments must be a JSON object such as {}, not {}",
                    example_object(allowed),
                    json_kind(&other)
                )));
            }
        };
        let mut unknown: Vec<&String> = map
            .keys()
            .filter(|k| !allowed.contains(&k.as_str()))
            .collect();
        unknown.sort();
        if let Some(key) = unknown.first() {
            let valid = if allowed.is_empty() {
                "this tool takes no arguments".to_owned()
            } else {
                format!("valid arguments are {}", allowed.join(", "))
            };
            let hint = suggestion(key, allowed)
                .map(|s| format!(" (did you mean {s}?)"))
                .unwrap_or_default();
            return Err(ToolError::InvalidArguments(format!(
                "{}: unknown argument{hint}; {valid}",
                shown_key(key)
            )));
        }
        Ok(Args { map })
    }

    /// The value of `key`; `null` counts as absent, because many clients
    /// send `null` for optional parameters they do not use.
    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// The raw value of `key` (`null` counts as absent), for tools that
    /// validate an argument shape `Args` has no reader for.
    pub fn raw(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }

    /// Removes `key` and returns its value; the registry uses it to take
    /// the `cluster` argument out before a tool runs.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key)
    }

    /// An optional integer within `min..=max`. `example` is shown in the
    /// message when the value has the wrong JSON type.
    pub fn integer(
        &self,
        key: &str,
        min: u64,
        max: u64,
        example: u64,
    ) -> Result<Option<u64>, ToolError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let range = || format!("must be an integer between {min} and {max}");
        let n = match v {
            Value::Number(n) => n,
            Value::String(s) => {
                // Agents often quote numbers; say exactly what to change.
                let hint = if s.trim().parse::<u64>().is_ok() {
                    "; send it without quotes"
                } else {
                    ""
                };
                return Err(ToolError::field(
                    key,
                    format!(
                        "must be an integer, e.g. {example}, not a string ({}){hint}",
                        quoted(s, SHOWN_MAX)
                    ),
                ));
            }
            other => {
                return Err(ToolError::field(
                    key,
                    format!(
                        "must be an integer, e.g. {example}, not {}",
                        json_kind(other)
                    ),
                ));
            }
        };
        // JSON Schema counts 101.0 as an integer, so accept it too.
        let int = n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= max as f64)
                .map(|f| f as u64)
        });
        match int {
            Some(i) if (min..=max).contains(&i) => Ok(Some(i)),
            _ => Err(ToolError::field(key, format!("{} (got {n})", range()))),
        }
    }

    /// The required `vmid` argument.
    pub fn vmid(&self) -> Result<u32, ToolError> {
        match self.integer("vmid", VMID_MIN, VMID_MAX, 101)? {
            // VMID_MAX fits in u32, so the cast cannot truncate.
            Some(v) => Ok(v as u32),
            None => Err(ToolError::field(
                "vmid",
                "missing required argument; pass the numeric VM/CT id, e.g. {\"vmid\": 101} \
                 (pve_list_vms lists them)",
            )),
        }
    }

    /// An optional string; `max_len` counts characters.
    pub fn string(&self, key: &str, max_len: usize) -> Result<Option<&str>, ToolError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let Value::String(s) = v else {
            return Err(ToolError::field(
                key,
                format!("must be a string, not {}", json_kind(v)),
            ));
        };
        if s.is_empty() {
            return Err(ToolError::field(key, "must not be empty; omit it instead"));
        }
        let len = s.chars().count();
        if len > max_len {
            return Err(ToolError::field(
                key,
                format!("must be at most {max_len} characters (got {len})"),
            ));
        }
        Ok(Some(s))
    }

    /// An optional string that must be one of `allowed`.
    pub fn one_of(&self, key: &str, allowed: &[&str]) -> Result<Option<&str>, ToolError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let list = allowed
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let must = if allowed.len() == 2 {
            format!(
                "must be {} or {}",
                quoted(allowed[0], 64),
                quoted(allowed[1], 64)
            )
        } else {
            format!("must be one of {list}")
        };
        match v {
            Value::String(s) if allowed.contains(&s.as_str()) => Ok(Some(s)),
            Value::String(s) => Err(ToolError::field(
                key,
                format!("{must} (got {})", quoted(s, SHOWN_MAX)),
            )),
            other => Err(ToolError::field(
                key,
                format!("{must}, not {}", json_kind(other)),
            )),
        }
    }

    /// An optional Proxmox node name.
    pub fn node(&self, key: &str) -> Result<Option<&str>, ToolError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let rule = "letters, digits and '-', e.g. \"pve1\"";
        match v {
            Value::String(s) if is_node_name(s) => Ok(Some(s)),
            Value::String(s) => Err(ToolError::field(
                key,
                format!("{} is not a valid node name ({rule})", quoted(s, SHOWN_MAX)),
            )),
            other => Err(ToolError::field(
                key,
                format!(
                    "must be a node name string ({rule}), not {}",
                    json_kind(other)
                ),
            )),
        }
    }

    /// The optional `vm_type` argument.
    pub fn vm_type(&self) -> Result<Option<VmType>, ToolError> {
        Ok(self
            .one_of("vm_type", &VmType::ALL)?
            .and_then(VmType::parse))
    }
}

/// Names a JSON value's type for "not a ..." messages.
fn json_kind(v: &Value) -> &'static str {
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

/// A small example object for "arguments must be an object" messages.
fn example_object(allowed: &[&str]) -> String {
    if allowed.contains(&"vmid") {
        "{\"vmid\": 101}".to_owned()
    } else {
        "{}".to_owned()
    }
}

/// Shows an unknown key as-is when it is harmless, quoted otherwise.
fn shown_key(key: &str) -> String {
    if !key.is_empty()
        && key.len() <= SHOWN_MAX
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        key.to_owned()
    } else {
        quoted(key, SHOWN_MAX)
    }
}

/// A likely intended argument name for a misspelt or aliased one.
fn suggestion<'a>(key: &str, allowed: &[&'a str]) -> Option<&'a str> {
    let squash = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let k = squash(key);
    let alias = match k.as_str() {
        "type" | "guesttype" | "kind" => Some("vm_type"),
        "id" | "vm" | "guestid" | "ctid" => Some("vmid"),
        "nodename" | "host" => Some("node"),
        _ => None,
    };
    allowed
        .iter()
        .copied()
        .find(|a| squash(a) == k || alias == Some(*a))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOWED: &[&str] = &["vmid", "node", "vm_type", "limit", "name"];

    fn args(text: &str) -> Args {
        Args::parse(text, ALLOWED).expect("valid arguments")
    }

    fn err(r: Result<impl std::fmt::Debug, ToolError>) -> String {
        match r.expect_err("expected an error") {
            ToolError::InvalidArguments(m) => m,
            other => panic!("expected invalid-arguments, got {other:?}"),
        }
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert!(err(Args::parse("[1]", ALLOWED)).contains("must be a JSON object"));
        assert!(err(Args::parse("\"x\"", ALLOWED)).contains("not a string"));
        assert!(err(Args::parse("{", ALLOWED)).contains("not valid JSON"));
        assert!(Args::parse("", ALLOWED).is_ok());
        assert!(Args::parse("null", ALLOWED).is_ok());
        assert!(Args::parse("{}", ALLOWED).is_ok());
    }

    #[test]
    fn unknown_arguments_list_valid_ones() {
        let m = err(Args::parse(r#"{"foo": 1}"#, ALLOWED));
        assert_eq!(
            m,
            "foo: unknown argument; valid arguments are vmid, node, vm_type, limit, name"
        );
        let m = err(Args::parse(r#"{"type": "qemu"}"#, ALLOWED));
        assert!(
            m.starts_with("type: unknown argument (did you mean vm_type?)"),
            "{m}"
        );
        let m = err(Args::parse(r#"{"VMID": 1}"#, ALLOWED));
        assert!(m.contains("did you mean vmid?"), "{m}");
        let m = err(Args::parse(r#"{"a b\n": 1}"#, ALLOWED));
        assert!(m.starts_with("\"a b\\n\": unknown argument"), "{m}");
        let m = err(Args::parse(r#"{"x": 1}"#, &[]));
        assert!(m.ends_with("this tool takes no arguments"), "{m}");
    }

    #[test]
    fn vmid_boundaries() {
        assert_eq!(args(r#"{"vmid": 100}"#).vmid(), Ok(100));
        assert_eq!(args(r#"{"vmid": 999999999}"#).vmid(), Ok(999_999_999));
        assert_eq!(args(r#"{"vmid": 101.0}"#).vmid(), Ok(101));
        assert_eq!(
            err(args(r#"{"vmid": 99}"#).vmid()),
            "vmid: must be an integer between 100 and 999999999 (got 99)"
        );
        assert_eq!(
            err(args(r#"{"vmid": 1000000000}"#).vmid()),
            "vmid: must be an integer between 100 and 999999999 (got 1000000000)"
        );
        assert!(err(args(r#"{"vmid": -5}"#).vmid()).contains("(got -5)"));
        assert!(err(args(r#"{"vmid": 101.5}"#).vmid()).contains("(got 101.5)"));
        assert!(err(args(r#"{"vmid": 1e300}"#).vmid()).contains("between 100"));
    }

    #[test]
    fn vmid_wrong_types_and_missing() {
        assert_eq!(
            err(args(r#"{"vmid": "101"}"#).vmid()),
            "vmid: must be an integer, e.g. 101, not a string (\"101\"); send it without quotes"
        );
        assert_eq!(
            err(args(r#"{"vmid": "web"}"#).vmid()),
            "vmid: must be an integer, e.g. 101, not a string (\"web\")"
        );
        assert!(err(args(r#"{"vmid": true}"#).vmid()).ends_with("not a boolean"));
        assert!(err(args(r#"{"vmid": [101]}"#).vmid()).ends_with("not an array"));
        assert!(err(args("{}").vmid()).starts_with("vmid: missing required argument"));
        assert!(err(args(r#"{"vmid": null}"#).vmid()).starts_with("vmid: missing"));
    }

    #[test]
    fn node_names() {
        assert_eq!(args(r#"{"node": "pve1"}"#).node("node"), Ok(Some("pve1")));
        assert_eq!(args(r#"{"node": "a"}"#).node("node"), Ok(Some("a")));
        assert_eq!(
            args(r#"{"node": "pve-01"}"#).node("node"),
            Ok(Some("pve-01"))
        );
        assert_eq!(args("{}").node("node"), Ok(None));
        assert_eq!(
            err(args(r#"{"node": "pve 1"}"#).node("node")),
            "node: \"pve 1\" is not a valid node name (letters, digits and '-', e.g. \"pve1\")"
        );
        for bad in ["", "-pve", "pve-", "pve.example", "pve/../x", "pve%2F", "ä"] {
            let text = serde_json::json!({ "node": bad }).to_string();
            assert!(
                err(args(&text).node("node")).contains("is not a valid node name"),
                "{bad}"
            );
        }
        let long = "a".repeat(64);
        let text = serde_json::json!({ "node": long }).to_string();
        assert!(err(args(&text).node("node")).contains("not a valid node name"));
        assert!(err(args(r#"{"node": 1}"#).node("node")).ends_with("not a number"));
    }

    #[test]
    fn vm_types() {
        assert_eq!(
            args(r#"{"vm_type": "qemu"}"#).vm_type(),
            Ok(Some(VmType::Qemu))
        );
        assert_eq!(
            args(r#"{"vm_type": "lxc"}"#).vm_type(),
            Ok(Some(VmType::Lxc))
        );
        assert_eq!(args("{}").vm_type(), Ok(None));
        assert_eq!(
            err(args(r#"{"vm_type": "vm"}"#).vm_type()),
            "vm_type: must be \"qemu\" or \"lxc\" (got \"vm\")"
        );
        assert!(err(args(r#"{"vm_type": "QEMU"}"#).vm_type()).contains("(got \"QEMU\")"));
        assert!(err(args(r#"{"vm_type": 1}"#).vm_type()).ends_with("not a number"));
    }

    #[test]
    fn integers_and_strings() {
        let a = args(r#"{"limit": 0}"#);
        assert_eq!(
            err(a.integer("limit", 1, 1000, 100)),
            "limit: must be an integer between 1 and 1000 (got 0)"
        );
        assert_eq!(
            args(r#"{"limit": 1000}"#).integer("limit", 1, 1000, 100),
            Ok(Some(1000))
        );
        assert_eq!(args("{}").integer("limit", 1, 1000, 100), Ok(None));
        assert_eq!(
            args(r#"{"name": "web"}"#).string("name", 8),
            Ok(Some("web"))
        );
        assert!(err(args(r#"{"name": ""}"#).string("name", 8)).contains("must not be empty"));
        assert!(err(args(r#"{"name": "123456789"}"#).string("name", 8)).contains("at most 8"));
        assert!(err(args(r#"{"name": 5}"#).string("name", 8)).contains("must be a string"));
        assert!(
            err(args(r#"{"name": "x"}"#).one_of("name", &["a", "b", "c"]))
                .contains("must be one of \"a\", \"b\", \"c\" (got \"x\")")
        );
    }
}
