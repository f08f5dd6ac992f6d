//! Parameter schemas and their validation, in `PVE::JSONSchema`'s order:
//! type, format, pattern, length, range, enum.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::formats::{check_format, is_integer, is_number};
use crate::params::RawParams;

/// Value type of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    String,
    Integer,
    Number,
    Boolean,
    Array,
    /// Objects, `null`, `oneOf` and anything unknown: not checked.
    Any,
}

/// A schema `pattern`, compiled on first use (most are never needed).
#[derive(Debug)]
pub(crate) struct Pattern {
    source: String,
    compiled: OnceLock<Option<Regex>>,
}

impl Pattern {
    fn new(source: &str) -> Self {
        Pattern {
            source: source.to_string(),
            compiled: OnceLock::new(),
        }
    }

    /// `None` when the Perl regex has no Rust equivalent; such patterns are
    /// not enforced rather than guessed at.
    fn regex(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| {
                // Perl's `(?^:...)` / `(?^i:...)` mean "default flags".
                let body = self.source.replace("(?^", "(?");
                // PVE matches `m/^$pattern$/`; Perl's `$` also allows one
                // trailing newline.
                regex::RegexBuilder::new(&format!("^{body}\n?\\z"))
                    .octal(true)
                    .size_limit(1 << 22)
                    .build()
                    .ok()
            })
            .as_ref()
    }
}

/// A numeric bound, kept with its JSON text for messages (Perl prints `100`,
/// not `100.0`).
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    value: f64,
    text: String,
}

/// One parameter's schema.
#[derive(Debug)]
pub(crate) struct Prop {
    pub ty: Ty,
    pub optional: bool,
    alias: bool,
    format: Option<String>,
    pattern: Option<Pattern>,
    enumeration: Option<Vec<String>>,
    minimum: Option<Bound>,
    maximum: Option<Bound>,
    max_length: Option<usize>,
    min_length: Option<usize>,
    requires: Option<String>,
    items: Option<Box<Prop>>,
}

impl Prop {
    fn of(ty: Ty) -> Self {
        Prop {
            ty,
            optional: false,
            alias: false,
            format: None,
            pattern: None,
            enumeration: None,
            minimum: None,
            maximum: None,
            max_length: None,
            min_length: None,
            requires: None,
            items: None,
        }
    }

    pub fn string() -> Self {
        Prop::of(Ty::String)
    }

    pub fn integer() -> Self {
        Prop::of(Ty::Integer)
    }

    pub fn boolean() -> Self {
        Prop::of(Ty::Boolean)
    }

    pub fn number() -> Self {
        Prop::of(Ty::Number)
    }

    /// `type => 'array'` whose every element must match `items`.
    pub fn array(items: Prop) -> Self {
        let mut p = Prop::of(Ty::Array);
        p.items = Some(Box::new(items));
        p
    }

    /// `maximum`.
    pub fn max(mut self, max: i64) -> Self {
        self.maximum = Some(Bound {
            value: max as f64,
            text: max.to_string(),
        });
        self
    }

    /// A Perl regex the whole value must match.
    pub fn pattern(mut self, re: &str) -> Self {
        self.pattern = Some(Pattern::new(re));
        self
    }

    /// `requires`: another parameter that must be present too.
    pub fn requires(mut self, other: &str) -> Self {
        self.requires = Some(other.to_string());
        self
    }

    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    pub fn format(mut self, f: &str) -> Self {
        self.format = Some(f.to_string());
        self
    }

    pub fn one_of(mut self, values: &[&str]) -> Self {
        self.enumeration = Some(values.iter().map(|s| s.to_string()).collect());
        self
    }

    pub fn range(mut self, min: i64, max: i64) -> Self {
        self.minimum = Some(Bound {
            value: min as f64,
            text: min.to_string(),
        });
        self.maximum = Some(Bound {
            value: max as f64,
            text: max.to_string(),
        });
        self
    }

    pub fn min(mut self, min: i64) -> Self {
        self.minimum = Some(Bound {
            value: min as f64,
            text: min.to_string(),
        });
        self
    }

    /// `minLength`.
    pub fn min_len(mut self, n: usize) -> Self {
        self.min_length = Some(n);
        self
    }

    pub fn max_len(mut self, n: usize) -> Self {
        self.max_length = Some(n);
        self
    }

    /// The `node` path parameter every `/nodes/{node}/...` method has.
    pub fn node() -> Self {
        Prop::string().format("pve-node")
    }

    /// The `vmid` path parameter of guest methods.
    pub fn vmid() -> Self {
        Prop::integer().format("pve-vmid").range(100, 999_999_999)
    }

    fn from_json(v: &Value) -> Prop {
        let ty = match v.get("type").and_then(Value::as_str) {
            Some("string") => Ty::String,
            Some("integer") => Ty::Integer,
            Some("number") => Ty::Number,
            Some("boolean") => Ty::Boolean,
            Some("array") => Ty::Array,
            _ => Ty::Any,
        };
        let mut p = Prop::of(if v.get("oneOf").is_some() {
            Ty::Any
        } else {
            ty
        });
        p.optional = truthy(v.get("optional"));
        p.alias = v.get("alias").is_some();
        p.format = v.get("format").and_then(Value::as_str).map(str::to_string);
        p.pattern = v.get("pattern").and_then(Value::as_str).map(Pattern::new);
        p.enumeration = v.get("enum").and_then(Value::as_array).map(|a| {
            a.iter()
                .map(|e| match e {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        });
        p.minimum = v.get("minimum").and_then(bound);
        p.maximum = v.get("maximum").and_then(bound);
        p.max_length = v
            .get("maxLength")
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        p.min_length = v
            .get("minLength")
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        p.requires = v
            .get("requires")
            .and_then(Value::as_str)
            .map(str::to_string);
        p.items = v
            .get("items")
            .filter(|i| i.is_object())
            .map(|i| Box::new(Prop::from_json(i)));
        p
    }
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty() && s != "0",
        _ => false,
    }
}

fn bound(v: &Value) -> Option<Bound> {
    match v {
        Value::Number(n) => Some(Bound {
            value: n.as_f64()?,
            text: n.to_string(),
        }),
        Value::String(s) => Some(Bound {
            value: s.parse().ok()?,
            text: s.clone(),
        }),
        _ => None,
    }
}

/// The parameter schema of one API method.
#[derive(Debug, Default)]
pub(crate) struct MethodSchema {
    props: BTreeMap<String, Prop>,
    /// `net[n]`-style keys: prefix and the schema key.
    indexed: Vec<(String, String)>,
    /// `additionalProperties`; only an explicit false rejects unknown keys.
    additional: Option<bool>,
    /// No `parameters` at all: nothing is checked.
    unchecked: bool,
}

impl MethodSchema {
    /// A method spec that rejects parameters not listed.
    pub fn strict(props: Vec<(&str, Prop)>) -> Self {
        let mut ms = MethodSchema {
            additional: Some(false),
            ..Default::default()
        };
        for (k, p) in props {
            ms.insert(k.to_string(), p);
        }
        ms
    }

    /// A method spec that checks the listed parameters and lets others
    /// through (for methods with dozens of config keys; the official schema,
    /// when loaded, checks them all).
    pub fn lenient(props: Vec<(&str, Prop)>) -> Self {
        let mut ms = MethodSchema::strict(props);
        ms.additional = None;
        ms
    }

    fn insert(&mut self, k: String, p: Prop) {
        if let Some(prefix) = k.strip_suffix("[n]") {
            self.indexed.push((prefix.to_string(), k.clone()));
        }
        self.props.insert(k, p);
    }

    pub(super) fn from_json(info: &Value) -> MethodSchema {
        let Some(params) = info.get("parameters") else {
            return MethodSchema {
                unchecked: true,
                ..Default::default()
            };
        };
        let mut ms = MethodSchema {
            additional: match params.get("additionalProperties") {
                None => None,
                Some(v @ (Value::Number(_) | Value::Bool(_))) => Some(truthy(Some(v))),
                Some(_) => Some(true),
            },
            ..Default::default()
        };
        if let Some(Value::Object(props)) = params.get("properties") {
            for (k, v) in props {
                ms.insert(k.clone(), Prop::from_json(v));
            }
        }
        ms
    }

    fn prop_for(&self, key: &str) -> Option<&Prop> {
        if let Some(p) = self.props.get(key) {
            return Some(p);
        }
        self.indexed.iter().find_map(|(prefix, k)| {
            let rest = key.strip_prefix(prefix.as_str())?;
            (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
                .then(|| self.props.get(k))
                .flatten()
        })
    }

    /// Checks parameters (path parameters included) and returns PVE's
    /// per-field messages; empty means valid.
    pub fn validate(&self, params: &RawParams) -> BTreeMap<String, String> {
        let mut errors = BTreeMap::new();
        if self.unchecked {
            return errors;
        }
        for (key, values) in params {
            let Some(prop) = self.prop_for(key) else {
                if self.additional == Some(false) {
                    errors.insert(
                        key.clone(),
                        "property is not defined in schema and the schema does not allow \
                         additional properties"
                            .to_string(),
                    );
                }
                continue;
            };
            if let Some(req) = &prop.requires
                && !params.contains_key(req)
            {
                errors.insert(
                    req.clone(),
                    format!("missing property - '{key}' requires this property"),
                );
            }
            let result = if prop.ty == Ty::Array {
                match &prop.items {
                    Some(items) => values.iter().try_for_each(|v| check_value(key, items, v)),
                    None => Ok(()),
                }
            } else {
                check_value(key, prop, &values.join("\0"))
            };
            if let Err(msg) = result {
                errors.insert(key.clone(), msg);
            }
        }
        for (key, prop) in &self.props {
            if key.ends_with("[n]") || params.contains_key(key) {
                continue;
            }
            if !prop.optional && !prop.alias && prop.ty != Ty::Boolean {
                errors.insert(
                    key.clone(),
                    "property is missing and it is not optional".to_string(),
                );
            }
        }
        errors
    }
}

fn check_value(key: &str, p: &Prop, v: &str) -> Result<(), String> {
    let type_ok = match p.ty {
        Ty::String | Ty::Any | Ty::Array => true,
        Ty::Boolean => v == "0" || v == "1",
        Ty::Integer => is_integer(v),
        Ty::Number => is_number(v),
    };
    if !type_ok {
        let t = match p.ty {
            Ty::Boolean => "boolean",
            Ty::Integer => "integer",
            _ => "number",
        };
        return Err(format!("type check ('{t}') failed - got '{v}'"));
    }
    if let Some(f) = &p.format
        && let Err(msg) = check_format(f, v, key)
    {
        return Err(format!("invalid format - {msg}"));
    }
    if let Some(pat) = &p.pattern
        && let Some(re) = pat.regex()
        && !re.is_match(v)
    {
        return Err("value does not match the regex pattern".to_string());
    }
    let len = v.chars().count();
    if let Some(max) = p.max_length
        && len > max
    {
        return Err(format!("value may only be {max} characters long"));
    }
    if let Some(min) = p.min_length
        && len < min
    {
        return Err(format!("value must be at least {min} characters long"));
    }
    if is_number(v)
        && let Ok(n) = v.parse::<f64>()
    {
        if let Some(min) = &p.minimum
            && n < min.value
        {
            return Err(format!("value must have a minimum value of {}", min.text));
        }
        if let Some(max) = &p.maximum
            && n > max.value
        {
            return Err(format!("value must have a maximum value of {}", max.text));
        }
    }
    if let Some(values) = &p.enumeration
        && !values.iter().any(|e| e == v)
    {
        return Err(format!(
            "value '{v}' does not have a value in the enumeration '{}'",
            values.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, &str)]) -> RawParams {
        let mut m = RawParams::new();
        for (k, v) in pairs {
            m.entry(k.to_string()).or_default().push(v.to_string());
        }
        m
    }

    #[test]
    fn vmid_format_checked_before_range() {
        let ms = MethodSchema::strict(vec![("vmid", Prop::vmid()), ("node", Prop::node())]);
        let e = ms.validate(&raw(&[("vmid", "99"), ("node", "pve1")]));
        assert_eq!(
            e["vmid"],
            "invalid format - value does not look like a valid VM ID\n"
        );
        let e = ms.validate(&raw(&[("vmid", "abc"), ("node", "pve_1")]));
        assert_eq!(e["vmid"], "type check ('integer') failed - got 'abc'");
        assert_eq!(
            e["node"],
            "invalid format - value does not look like a valid node name\n"
        );
        assert!(
            ms.validate(&raw(&[("vmid", "100"), ("node", "pve1")]))
                .is_empty()
        );
    }

    #[test]
    fn enum_unknown_missing_and_boolean() {
        let ms = MethodSchema::strict(vec![
            ("type", Prop::string().one_of(&["vm", "node"]).optional()),
            ("need", Prop::string()),
            ("flag", Prop::boolean()),
        ]);
        let e = ms.validate(&raw(&[("type", "bogus"), ("x", "1"), ("flag", "true")]));
        assert_eq!(
            e["type"],
            "value 'bogus' does not have a value in the enumeration 'vm, node'"
        );
        assert!(e["x"].starts_with("property is not defined in schema"));
        assert_eq!(e["need"], "property is missing and it is not optional");
        assert_eq!(e["flag"], "type check ('boolean') failed - got 'true'");
    }

    #[test]
    fn perl_patterns_translate() {
        let p = Pattern::new("(?^i:[a-z0-9_][a-z0-9_\\-\\+\\.]*)");
        let re = p.regex().expect("compiles");
        assert!(re.is_match("Prod-1"));
        assert!(!re.is_match("a b"));
        let alt = Pattern::new("/dev/parport\\d+|/dev/usb/lp\\d+");
        assert!(alt.regex().unwrap().is_match("/dev/usb/lp0"));
        assert!(Pattern::new("(unclosed").regex().is_none());
    }

    #[test]
    fn indexed_props_and_lists() {
        let mut ms = MethodSchema::strict(vec![]);
        ms.insert("net[n]".into(), Prop::string());
        ms.insert(
            "vms".into(),
            Prop::string().format("pve-vmid-list").optional(),
        );
        assert!(ms.validate(&raw(&[("net0", "virtio")])).is_empty());
        let e = ms.validate(&raw(&[("netx", "1"), ("vms", "100,1")]));
        assert!(e.contains_key("netx"));
        assert_eq!(
            e["vms"],
            "invalid format - value does not look like a valid VM ID\n"
        );
    }
}
