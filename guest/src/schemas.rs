//! The tools' JSON Schemas (draft 2020-12, MCP's default dialect), derived
//! from their input and output types with schemars, doc comments as
//! descriptions.
//!
//! The component does not carry schemars: deriving the schemas at run time
//! made it 1.43 MB instead of 1.03 MB, which every cold start pays for
//! text that never changes. The schemas are derived here, in native tests,
//! and checked in under `guest/schemas/`, which the component includes as
//! text. A test here fails when a type changed and its schema file did
//! not; regenerate them with `UPDATE_SCHEMAS=1 cargo test -p pve-mcp-guest`.
//!
//! Objects are closed (`additionalProperties: false`; inputs through
//! `#[serde(deny_unknown_fields)]`) and, for outputs, every property is
//! required: a field that can be unknown is present with `null`, and its
//! schema says so. That keeps the schemas an exact description of what the
//! tools emit, which the tests check.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::cluster;

/// A tool's own schemas, without the registry's `cluster`: exact, with
/// every rule the guest checks, every field's description, and outputs
/// closed with every property required. The tests hold the tools to these.
/// What `list-tools` reports is their advertised form ([`Derived::listed_input`],
/// [`Derived::listed_output`]), which every client pays for in every
/// conversation: only what helps a model choose and call well.
#[derive(Debug, Clone)]
pub struct Derived {
    /// Of the arguments object.
    pub input: Value,
    /// Of the structured output.
    pub output: Value,
}

/// What `cluster` says in every tool's input schema.
pub const CLUSTER: &str = "Cluster name; default: the first";

/// Input keywords left out of the advertised schemas: patterns, length
/// bounds and property-name rules cost bytes in every conversation and
/// help no model choose; the guest checks each of them before any request
/// and names the field and the fix when one fails.
const GUEST_ONLY_INPUT: &[&str] = &[
    "pattern",
    "minLength",
    "maxLength",
    "maxProperties",
    "propertyNames",
];

/// The properties whose bounds a model needs to choose well (guest ids and
/// page sizes); every other property's `minimum` and `maximum` are the
/// guest's to check, and `offset` needs no default to be understood.
const ADVERTISED_BOUNDS: &[&str] = &["vmid", "newid", "source_vmid", "limit"];

impl Derived {
    /// The input schema `list-tools` reports: the tool's own plus the
    /// optional `cluster` property every tool accepts, without the
    /// arguments accepted but not advertised (`confirm`) and without the
    /// guest-only rules ([`GUEST_ONLY_INPUT`]).
    pub fn listed_input(&self) -> Value {
        let mut s = self.input.clone();
        if let Some(props) = s["properties"].as_object_mut() {
            for hidden in crate::action::UNADVERTISED {
                props.remove(*hidden);
            }
        }
        s["properties"][cluster::ARG] = json!({"type": "string", "description": CLUSTER});
        advertise_input(&mut s);
        if let Some(props) = s["properties"].as_object_mut() {
            for (name, prop) in props.iter_mut() {
                if !ADVERTISED_BOUNDS.contains(&name.as_str())
                    && let Some(p) = prop.as_object_mut()
                {
                    p.remove("minimum");
                    p.remove("maximum");
                }
            }
            if let Some(offset) = props.get_mut("offset").and_then(Value::as_object_mut) {
                offset.remove("default");
            }
        }
        // The guest refuses an unknown argument itself, naming the valid
        // ones (and the one meant): closing the object only costs bytes.
        if let Some(top) = s.as_object_mut() {
            top.remove("additionalProperties");
        }
        s
    }

    /// The exact output schema of what a call answers: the tool's own plus
    /// the `cluster` field the registry adds to every answer
    /// (`tool::with_cluster`). The tools' tests validate against it.
    pub fn full_output(&self) -> Value {
        let mut s = self.output.clone();
        s["properties"][cluster::ARG] = json!({
            "type": ["string", "null"],
            "description": "The configured cluster this answer is from; null if none is configured",
        });
        match s.get_mut("required").and_then(Value::as_array_mut) {
            Some(r) => r.push(cluster::ARG.into()),
            None => s["required"] = json!([cluster::ARG]),
        }
        s
    }

    /// The output schema `list-tools` reports: [`Derived::full_output`]'s
    /// structure (properties, types, `null`, enums, nesting) without its
    /// descriptions, `required` lists, closing `additionalProperties:
    /// false` and numeric bounds. Every property listed is always present
    /// (with `null` when unknown), which the docs say once instead of
    /// every object repeating its property names.
    pub fn listed_output(&self) -> Value {
        let mut s = self.full_output();
        advertise_output(&mut s);
        s
    }
}

/// Takes [`GUEST_ONLY_INPUT`] out of an input schema, at every depth.
fn advertise_input(schema: &mut Value) {
    match schema {
        Value::Object(o) => {
            for key in GUEST_ONLY_INPUT {
                o.remove(*key);
            }
            for (key, sub) in o.iter_mut() {
                // A property named like a keyword is a property, not a rule.
                if key == "properties" {
                    if let Value::Object(props) = sub {
                        props.values_mut().for_each(advertise_input);
                    }
                } else {
                    advertise_input(sub);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(advertise_input),
        _ => {}
    }
}

/// Reduces an output schema to its structure (see [`Derived::listed_output`]):
/// a `oneOf` of plain constants becomes an `enum`.
fn advertise_output(schema: &mut Value) {
    match schema {
        Value::Object(o) => {
            for key in ["description", "required", "minimum", "maximum"] {
                o.remove(key);
            }
            if o.get("additionalProperties") == Some(&Value::Bool(false)) {
                o.remove("additionalProperties");
            }
            let constants: Option<Vec<Value>> =
                o.get("oneOf").and_then(Value::as_array).and_then(|alts| {
                    alts.iter()
                        .map(|a| {
                            (a.get("type") == Some(&"string".into()))
                                .then(|| a.get("const").cloned())
                                .flatten()
                        })
                        .collect()
                });
            if let Some(values) = constants {
                o.remove("oneOf");
                o.insert("type".into(), "string".into());
                o.insert("enum".into(), Value::Array(values));
            }
            for (key, sub) in o.iter_mut() {
                if key == "properties" {
                    if let Value::Object(props) = sub {
                        props.values_mut().for_each(advertise_output);
                    }
                } else {
                    advertise_output(sub);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(advertise_output),
        _ => {}
    }
}

/// The schemas of a tool's input type `I` and output type `O`.
pub fn derive<I: JsonSchema, O: JsonSchema>() -> Derived {
    Derived {
        input: derive_one::<I>(SchemaSettings::draft2020_12().for_deserialize(), false),
        output: derive_one::<O>(SchemaSettings::draft2020_12().for_serialize(), true),
    }
}

fn derive_one<T: JsonSchema>(settings: SchemaSettings, output: bool) -> Value {
    let settings = settings.with(|s| {
        // Inline: some MCP clients do not resolve `$ref`.
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(root) = &mut schema {
        // The tool's own title and description cover the root.
        root.remove("title");
        root.remove("description");
    }
    tidy(&mut schema, output);
    schema
}

/// Makes a derived schema what the tools promise and no longer: doc
/// comments become one-line descriptions, Rust's integer `format`s go
/// (they mean nothing to a client), output objects are closed with every
/// property required and enum tags described, and an optional input is its
/// plain type: it may be
/// omitted, and saying it may also be `null` (which reads as omitted)
/// would only complicate the schema agents read.
fn tidy(schema: &mut Value, output: bool) {
    let Value::Object(o) = schema else {
        return;
    };
    o.remove("format");
    if !output {
        if let Some(Value::Array(types)) = o.get_mut("type") {
            types.retain(|t| t != "null");
            if let [only] = &types[..] {
                let only = only.clone();
                o.insert("type".into(), only);
            }
        }
        if let Some(Value::Array(values)) = o.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
    }
    if let Some(Value::String(d)) = o.get_mut("description") {
        *d = d.split('\n').map(str::trim).collect::<Vec<_>>().join(" ");
    }
    if output && let Some(Value::Object(props)) = o.get_mut("properties") {
        // The tag of an internally tagged enum (`#[serde(tag = ...)]`) is
        // the only property without a doc comment to come from.
        for tag in props.values_mut().filter(|p| p.get("const").is_some()) {
            if let Value::Object(tag) = tag {
                tag.entry("description")
                    .or_insert("Record kind; the other fields depend on it".into());
            }
        }
        let names: Vec<Value> = props.keys().map(|k| Value::from(k.as_str())).collect();
        o.insert("required".into(), Value::Array(names));
        o.insert("additionalProperties".into(), false.into());
    }
    for key in [
        "properties",
        "items",
        "anyOf",
        "oneOf",
        "additionalProperties",
    ] {
        match o.get_mut(key) {
            Some(Value::Object(props)) if key == "properties" => {
                props.values_mut().for_each(|p| tidy(p, output));
            }
            Some(Value::Array(alternatives)) => {
                alternatives.iter_mut().for_each(|a| tidy(a, output));
            }
            Some(sub @ Value::Object(_)) => tidy(sub, output),
            _ => {}
        }
    }
}

/// The checked-in text of a schema: compact, since the component carries
/// it and whitespace would be a third of it (`jq . <file>` shows it laid
/// out).
pub fn text(schema: &Value) -> String {
    let mut t = serde_json::to_string(schema).expect("a schema serialises");
    t.push('\n');
    t
}

mod tests {
    use super::*;

    /// An output struct as the tools write them.
    #[derive(serde::Serialize, JsonSchema)]
    struct Sample {
        /// A count, given on
        /// two lines.
        count: u64,
        /// Unknown when null.
        name: Option<String>,
        /// Nested objects are closed too.
        inner: Vec<Inner>,
    }

    /// One inner item.
    #[derive(serde::Serialize, JsonSchema)]
    struct Inner {
        /// Whether it is.
        flag: bool,
    }

    #[test]
    fn outputs_are_closed_required_and_tidy() {
        let s = derive_one::<Sample>(SchemaSettings::draft2020_12().for_serialize(), true);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "count": {"type": "integer", "minimum": 0, "description": "A count, given on two lines."},
                    "name": {"type": ["string", "null"], "description": "Unknown when null."},
                    "inner": {
                        "type": "array",
                        "description": "Nested objects are closed too.",
                        "items": {
                            "type": "object",
                            "description": "One inner item.",
                            "properties": {"flag": {"type": "boolean", "description": "Whether it is."}},
                            "required": ["flag"],
                            "additionalProperties": false,
                        },
                    },
                },
                "required": ["count", "inner", "name"],
                "additionalProperties": false,
            })
        );
    }

    #[test]
    fn advertised_forms_keep_structure_and_drop_guest_only_rules() {
        let mut input = json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "pattern": "^a$", "minLength": 1, "maxLength": 9, "description": "A property named like a keyword."},
                "vmid": {"type": "integer", "minimum": 100, "maximum": 999, "description": "Kept."},
                "params": {"type": "object", "maxProperties": 5, "propertyNames": {"pattern": "^x$"}},
            },
            "additionalProperties": false,
        });
        advertise_input(&mut input);
        assert_eq!(
            input,
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "A property named like a keyword."},
                    "vmid": {"type": "integer", "minimum": 100, "maximum": 999, "description": "Kept."},
                    "params": {"type": "object"},
                },
                "additionalProperties": false,
            })
        );
        let derived = Derived {
            input: json!({"type": "object", "properties": {}}),
            output: derive_one::<Sample>(SchemaSettings::draft2020_12().for_serialize(), true),
        };
        assert_eq!(
            derived.listed_output(),
            json!({
                "type": "object",
                "properties": {
                    "count": {"type": "integer"},
                    "name": {"type": ["string", "null"]},
                    "inner": {"type": "array", "items": {"type": "object", "properties": {"flag": {"type": "boolean"}}}},
                    "cluster": {"type": ["string", "null"]},
                },
            })
        );
        let mut methods = json!({"oneOf": [
            {"const": "POST", "type": "string", "description": "Creates."},
            {"const": "PUT", "type": "string", "description": "Changes."},
        ]});
        advertise_output(&mut methods);
        assert_eq!(methods, json!({"type": "string", "enum": ["POST", "PUT"]}));
    }
}
