//! Small builders for the tools' JSON Schemas (draft 2020-12, MCP's
//! default dialect).
//!
//! Objects are closed (`additionalProperties: false`) and, for outputs,
//! every property is required: a field that can be unknown is present with
//! `null`, and its schema says so. That keeps the schemas an exact
//! description of what the tools emit, which the tests check.

use serde_json::{Map, Value, json};

use crate::arg::{NODE_MAX_LEN, NODE_PATTERN, VMID_MAX, VMID_MIN, VmType};

/// A closed object whose properties are all required.
pub fn object(description: &str, props: &[(&str, Value)]) -> Value {
    let names: Vec<&str> = props.iter().map(|(n, _)| *n).collect();
    object_with_required(description, props, &names)
}

/// A closed object with the given required properties.
pub fn object_with_required(
    description: &str,
    props: &[(&str, Value)],
    required: &[&str],
) -> Value {
    let properties: Map<String, Value> = props
        .iter()
        .map(|(n, s)| ((*n).to_owned(), s.clone()))
        .collect();
    let mut o = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !description.is_empty() {
        o["description"] = description.into();
    }
    if !required.is_empty() {
        o["required"] = json!(required);
    }
    o
}

/// A tool's input schema: a closed object; the root has no description
/// because the tool's own description covers it.
pub fn input(props: &[(&str, Value)], required: &[&str]) -> Value {
    object_with_required("", props, required)
}

/// The property names of an input schema, which are the arguments the tool
/// accepts, sorted (serde_json's map order depends on its features).
pub fn property_names(schema: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    names.sort_unstable();
    names
}

/// `{"type": ty, "description": ...}`.
pub fn typed(ty: &str, description: &str) -> Value {
    json!({ "type": ty, "description": description })
}

/// A string.
pub fn string(description: &str) -> Value {
    typed("string", description)
}

/// A boolean.
pub fn boolean(description: &str) -> Value {
    typed("boolean", description)
}

/// A value of type `ty` or `null` (unknown or not applicable).
pub fn nullable(ty: &str, description: &str) -> Value {
    json!({ "type": [ty, "null"], "description": description })
}

/// An array of strings.
pub fn strings(description: &str) -> Value {
    json!({ "type": "array", "items": { "type": "string" }, "description": description })
}

/// One of a fixed list of strings.
pub fn enumeration(values: &[&str], description: &str) -> Value {
    json!({ "type": "string", "enum": values, "description": description })
}

/// An integer in `min..=max`.
pub fn integer(min: u64, max: u64, description: &str) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max, "description": description })
}

/// The `vmid` input property.
pub fn vmid() -> Value {
    integer(
        VMID_MIN,
        VMID_MAX,
        "Numeric VM/CT id, e.g. 101 (pve_list_vms lists them).",
    )
}

/// A node-name input property.
pub fn node(description: &str) -> Value {
    json!({
        "type": "string",
        "pattern": NODE_PATTERN,
        "minLength": 1,
        "maxLength": NODE_MAX_LEN,
        "description": description,
    })
}

/// A `vm_type` input property.
pub fn vm_type(description: &str) -> Value {
    enumeration(VmType::ALL, description)
}

/// The output schema of [`crate::resolve::Resolved`].
pub fn resolved() -> Value {
    object(
        "Which of node and vm_type pve-mcp looked up because the call omitted them.",
        &[
            ("node", boolean("true if node was looked up")),
            ("vm_type", boolean("true if vm_type was looked up")),
            (
                "source",
                json!({
                    "type": ["string", "null"],
                    "enum": ["cluster/resources", null],
                    "description": "Where they were looked up; null if nothing was"
                }),
            ),
        ],
    )
}

/// The output properties of [`crate::paging::PageInfo`].
pub fn page_info() -> Vec<(&'static str, Value)> {
    let count = |d: &str| json!({"type": "integer", "minimum": 0, "description": d});
    vec![
        ("total", count("Number of matching items, over all pages")),
        ("returned", count("Number of items in this answer")),
        (
            "omitted",
            count("Matching items not in this answer (total - returned)"),
        ),
        ("offset", count("The offset applied")),
        (
            "limit",
            json!({"type": "integer", "minimum": 1, "description": "The limit applied"}),
        ),
        (
            "next_offset",
            json!({"type": ["integer", "null"], "minimum": 0,
                "description": "Offset of the next page; null if this answer reaches the end"}),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_closed_and_list_required() {
        let o = object("d", &[("a", string("x")), ("b", boolean("y"))]);
        assert_eq!(o["additionalProperties"], false);
        assert_eq!(o["required"], json!(["a", "b"]));
        assert_eq!(property_names(&o), ["a", "b"]);
        let i = input(&[], &[]);
        assert_eq!(
            i,
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }
}
