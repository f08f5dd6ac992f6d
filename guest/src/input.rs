//! A call's `arguments` text → a tool's typed input.
//!
//! Every tool reads all of its arguments before it sends any request, so a
//! bad call costs no Proxmox round trip. Reading is in two steps:
//! [`object`] parses the text and rejects unknown keys (naming the likely
//! intended one and listing the valid ones, which serde's own message does
//! not), then [`typed`] deserialises the tool's input struct, whose field
//! types ([`crate::arg`]) validate their values; this module puts the
//! field's name in front of their messages.

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::arg::{SHOWN_MAX, json_kind};
use crate::error::{ToolError, quoted};

/// Arguments no tool takes, with why and what to use instead: a password
/// in a tool call stays in the client's transcript, its logs and the
/// model provider's, where no one can take it back.
const REFUSED: &[(&str, &str)] = &[
    (
        "password",
        "a password in a tool call stays in transcripts and logs; give a container SSH keys \
         (ssh_public_keys) and a VM cloud-init keys (sshkeys) instead",
    ),
    (
        "cipassword",
        "a password in a tool call stays in transcripts and logs; give the VM SSH keys \
         (sshkeys) instead",
    ),
];

/// Parses the `arguments` text of a call into an object whose keys are all
/// in `allowed` (sorted, as they are listed in the message). An empty text
/// or `null` counts as `{}`, since clients omit `arguments` for tools
/// without required parameters.
pub fn object(text: &str, allowed: &[&str]) -> Result<Map<String, Value>, ToolError> {
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
    if let Some((key, why)) = unknown
        .iter()
        .find_map(|k| REFUSED.iter().find(|(name, _)| *name == k.as_str()))
    {
        return Err(ToolError::InvalidArguments(format!(
            "{key}: not taken: {why}"
        )));
    }
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
    Ok(map)
}

/// Deserialises `T` from arguments [`object`] checked. Every field of `T`
/// is visited, absent ones as `null`, so that a missing required field is
/// reported by its type with the fix, like any other bad value; hence a
/// `#[serde(default)]` field's type must read `null` as its default.
pub fn typed<T: DeserializeOwned>(mut args: Map<String, Value>) -> Result<T, ToolError> {
    for field in fields::<T>() {
        args.entry(*field).or_insert(Value::Null);
    }
    T::deserialize(Arguments(args)).map_err(|e| ToolError::InvalidArguments(e.0))
}

/// The argument names of input struct `T`: the field list serde's derive
/// passes to `deserialize_struct`, read once per call instead of building
/// the schema.
///
/// # Panics
/// If `T` is not a plain struct (e.g. it uses `#[serde(flatten)]`, which
/// hides the list); the registry's tests call this for every tool.
pub fn fields<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut probe = FieldProbe(None);
    let _ = T::deserialize(&mut probe);
    probe
        .0
        .expect("a tool's input must be a plain struct without #[serde(flatten)]")
}

/// Why the arguments do not fit; the message already names the field.
#[derive(Debug)]
struct ArgError(String);

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgError {}

impl de::Error for ArgError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        ArgError(msg.to_string())
    }
}

/// The arguments object as a serde deserializer that remembers which field
/// it is reading.
struct Arguments(Map<String, Value>);

impl<'de> de::Deserializer<'de> for Arguments {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        visitor.visit_map(Fields {
            entries: self.0.into_iter(),
            pending: None,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct Fields {
    entries: serde_json::map::IntoIter,
    pending: Option<(String, Value)>,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ArgError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        let name: StrDeserializer<'_, ArgError> = key.as_str().into_deserializer();
        let k = seed.deserialize(name)?;
        self.pending = Some((key, value));
        Ok(Some(k))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ArgError> {
        let (key, value) = self.pending.take().expect("serde asks for a key first");
        seed.deserialize(value)
            .map_err(|e| ArgError(format!("{key}: {e}")))
    }
}

/// A deserializer that records the field list of the struct asked for and
/// fails everything else.
struct FieldProbe(Option<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for &mut FieldProbe {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ArgError> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, ArgError> {
        self.0 = Some(fields);
        Err(de::Error::custom("fields recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
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
    use crate::arg::{NodeName, Vmid};
    use serde::Deserialize;

    const ALLOWED: &[&str] = &["limit", "name", "node", "vm_type", "vmid"];

    fn err<T: std::fmt::Debug>(r: Result<T, ToolError>) -> String {
        match r.expect_err("expected an error") {
            ToolError::InvalidArguments(m) => m,
            other => panic!("expected invalid-arguments, got {other:?}"),
        }
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert!(err(object("[1]", ALLOWED)).contains("must be a JSON object"));
        assert!(err(object("\"x\"", ALLOWED)).contains("not a string"));
        assert!(err(object("{", ALLOWED)).contains("not valid JSON"));
        assert!(object("", ALLOWED).is_ok());
        assert!(object("null", ALLOWED).is_ok());
        assert!(object("{}", ALLOWED).is_ok());
    }

    #[test]
    fn unknown_arguments_list_valid_ones() {
        let m = err(object(r#"{"foo": 1}"#, ALLOWED));
        assert_eq!(
            m,
            "foo: unknown argument; valid arguments are limit, name, node, vm_type, vmid"
        );
        let m = err(object(r#"{"type": "qemu"}"#, ALLOWED));
        assert!(
            m.starts_with("type: unknown argument (did you mean vm_type?)"),
            "{m}"
        );
        let m = err(object(r#"{"VMID": 1}"#, ALLOWED));
        assert!(m.contains("did you mean vmid?"), "{m}");
        let m = err(object(r#"{"a b\n": 1}"#, ALLOWED));
        assert!(m.starts_with("\"a b\\n\": unknown argument"), "{m}");
        let m = err(object(r#"{"x": 1}"#, &[]));
        assert!(m.ends_with("this tool takes no arguments"), "{m}");
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Probe {
        vmid: Vmid,
        node: Option<NodeName>,
    }

    fn probe(text: &str) -> Result<Probe, ToolError> {
        typed(object(text, &["node", "vmid"])?)
    }

    #[test]
    fn typed_inputs_name_the_field() {
        assert_eq!(fields::<Probe>(), ["vmid", "node"]);
        assert_eq!(
            probe(r#"{"vmid": 101, "node": null}"#),
            Ok(Probe {
                vmid: Vmid(101),
                node: None
            })
        );
        assert_eq!(
            err(probe(r#"{"vmid": 99}"#)),
            "vmid: must be an integer between 100 and 999999999 (got 99)"
        );
        assert!(err(probe("{}")).starts_with("vmid: missing required argument"));
        assert!(err(probe(r#"{"vmid": null}"#)).starts_with("vmid: missing"));
        assert!(
            err(probe(r#"{"vmid": 100, "node": "a b"}"#))
                .starts_with("node: \"a b\" is not a valid node name")
        );
    }
}
