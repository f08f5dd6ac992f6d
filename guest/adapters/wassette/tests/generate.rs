//! Generates the adapter's WIT (`wit/world.wit`), the exports' glue
//! (`src/generated.rs`) and the descriptions wassette shows
//! (`package-docs.json`) from the tool component's registry: every tool's
//! name, description and input schema. The checked-in files must equal what
//! this generates; `UPDATE_WIT=1 cargo test -p pve-mcp-wassette` rewrites
//! them (`just generate` does too).

use std::fmt::Write as _;
use std::path::Path;

use pve_mcp_guest::tools::TOOLS;
use serde_json::{Map, Value, json};

/// The world name wassette reads descriptions under: a composed component
/// decodes to `root:component`'s world `root`.
const DOCS_WORLD: &str = "root";

/// How a parameter travels: its WIT type, and how the glue puts it in the
/// arguments object.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    String,
    Integer,
    Number,
    Boolean,
    /// Integer or string (`since`): digits go as a number.
    IntOrString,
    /// An object, an array or anything else: JSON text.
    Json,
}

impl Kind {
    fn of(schema: &Value) -> Kind {
        match &schema["type"] {
            Value::String(t) => match t.as_str() {
                "string" => Kind::String,
                "integer" => Kind::Integer,
                "number" => Kind::Number,
                "boolean" => Kind::Boolean,
                _ => Kind::Json,
            },
            Value::Array(types) => {
                let mut types: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
                types.retain(|t| *t != "null");
                match types.as_slice() {
                    ["string"] => Kind::String,
                    ["integer"] => Kind::Integer,
                    ["number"] => Kind::Number,
                    ["boolean"] => Kind::Boolean,
                    ["integer", "string"] | ["string", "integer"] => Kind::IntOrString,
                    _ => Kind::Json,
                }
            }
            _ => Kind::Json,
        }
    }

    fn wit(self) -> &'static str {
        match self {
            Kind::String | Kind::IntOrString | Kind::Json => "string",
            Kind::Integer => "s64",
            Kind::Number => "f64",
            Kind::Boolean => "bool",
        }
    }

    fn rust(self) -> &'static str {
        match self {
            Kind::String | Kind::IntOrString | Kind::Json => "String",
            Kind::Integer => "i64",
            Kind::Number => "f64",
            Kind::Boolean => "bool",
        }
    }
}

struct Param {
    /// The tool's argument name, `vm_type`.
    name: String,
    kind: Kind,
    required: bool,
    schema: Value,
}

impl Param {
    /// The WIT name: kebab-case, `%`-escaped when a WIT keyword.
    fn wit_name(&self) -> String {
        wit_ident(&self.name.replace('_', "-"))
    }

    /// The name wassette shows (and an agent sends).
    fn shown(&self) -> String {
        self.name.replace('_', "-")
    }

    fn rust_name(&self) -> String {
        format!("p_{}", self.name)
    }

    fn wit_type(&self) -> String {
        if self.required {
            self.kind.wit().to_owned()
        } else {
            format!("option<{}>", self.kind.wit())
        }
    }

    fn rust_type(&self) -> String {
        if self.required {
            self.kind.rust().to_owned()
        } else {
            format!("Option<{}>", self.kind.rust())
        }
    }

    /// One line of the function's docs about this parameter.
    fn doc(&self) -> String {
        let mut line = format!("- `{}`", self.shown());
        let mut notes = Vec::new();
        notes.push(if self.required {
            "required"
        } else {
            "optional, null to leave out"
        });
        match self.kind {
            Kind::Json => notes.push("JSON text"),
            Kind::IntOrString => notes.push("epoch seconds or text"),
            _ => {}
        }
        let _ = write!(line, " ({})", notes.join(", "));
        if let Some(d) = self.schema["description"].as_str() {
            let _ = write!(line, ": {}", shown_names(d));
        }
        if let Some(values) = self.schema["enum"].as_array() {
            let values: Vec<String> = values.iter().map(Value::to_string).collect();
            let _ = write!(line, "; one of {}", values.join(", "));
        }
        if let Some(items) = self.schema["items"]["enum"].as_array() {
            let values: Vec<String> = items.iter().map(Value::to_string).collect();
            let _ = write!(line, "; a JSON array of {}", values.join(", "));
        }
        let min = &self.schema["minimum"];
        let max = &self.schema["maximum"];
        match (min.is_null(), max.is_null()) {
            (false, false) => {
                let _ = write!(line, "; {min} to {max}");
            }
            (false, true) => {
                let _ = write!(line, "; at least {min}");
            }
            (true, false) => {
                let _ = write!(line, "; at most {max}");
            }
            (true, true) => {}
        }
        if !self.schema["default"].is_null() {
            let _ = write!(line, "; default {}", self.schema["default"]);
        }
        line
    }
}

/// `text` with every tool named as wassette shows it (`pve-list-vms`).
fn shown_names(text: &str) -> String {
    let mut text = text.to_owned();
    // Longest first, so no name is replaced inside a longer one.
    let mut names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    for name in names {
        text = text.replace(name, &name.replace('_', "-"));
    }
    text
}

const WIT_KEYWORDS: &[&str] = &[
    "as",
    "async",
    "bool",
    "borrow",
    "char",
    "constructor",
    "enum",
    "error-context",
    "export",
    "f32",
    "f64",
    "flags",
    "float32",
    "float64",
    "from",
    "func",
    "future",
    "import",
    "include",
    "interface",
    "list",
    "option",
    "own",
    "package",
    "record",
    "resource",
    "result",
    "s16",
    "s32",
    "s64",
    "s8",
    "static",
    "stream",
    "string",
    "tuple",
    "type",
    "u16",
    "u32",
    "u64",
    "u8",
    "use",
    "variant",
    "with",
    "world",
];

fn wit_ident(name: &str) -> String {
    if WIT_KEYWORDS.contains(&name) {
        format!("%{name}")
    } else {
        name.to_owned()
    }
}

struct ToolSpec {
    name: &'static str,
    export: String,
    docs: String,
    params: Vec<Param>,
}

fn specs() -> Vec<ToolSpec> {
    TOOLS
        .iter()
        .map(|tool| {
            let schema: Value = serde_json::from_str(tool.input_schema).expect("input schema");
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let empty = Map::new();
            let properties = schema["properties"].as_object().unwrap_or(&empty);
            let mut params: Vec<Param> = properties
                .iter()
                .map(|(name, p)| Param {
                    name: name.clone(),
                    kind: Kind::of(p),
                    required: required.contains(&name.as_str()),
                    schema: p.clone(),
                })
                .collect();
            // Required ones first; each group in name order.
            params.sort_by(|a, b| b.required.cmp(&a.required).then(a.name.cmp(&b.name)));
            let description = shown_names(tool.description);
            let mut docs = format!("{}: {description}", tool.title);
            if !params.is_empty() {
                docs.push_str("\n\nParameters (send every one; null leaves an optional one out):");
                for p in &params {
                    docs.push('\n');
                    docs.push_str(&p.doc());
                }
            }
            docs.push_str(
                "\n\nReturns the tool's answer as JSON text in `ok`. A failure comes back in `err`, \
                 as text starting with `ERROR:` that says why: read it even when the call is not \
                 marked as an error.",
            );
            ToolSpec {
                name: tool.name,
                export: tool.name.replace('_', "-"),
                docs,
                params,
            }
        })
        .collect()
}

const CALL_DOCS: &str = "Calls any pve-mcp tool by name (`pve_list_vms` or `pve-list-vms`) with \
its arguments as a JSON object in text, e.g. `{\"vmid\": 100}` (`{}` for none), as the typed \
tools do. For arguments the typed tools cannot express. Returns the tool's answer as JSON text in \
`ok`; a failure comes back in `err`, as text starting with `ERROR:`.";

fn wit_docs(out: &mut String, docs: &str) {
    for line in docs.lines() {
        if line.is_empty() {
            out.push_str("    ///\n");
        } else {
            let _ = writeln!(out, "    /// {line}");
        }
    }
}

fn generate_wit(specs: &[ToolSpec]) -> String {
    let mut out = String::from(
        "// GENERATED by guest/adapters/wassette/tests/generate.rs from the tool registry;\n\
         // do not edit. `UPDATE_WIT=1 cargo test -p pve-mcp-wassette` rewrites it.\n\n\
         /// pve-mcp's tools as root-level functions, for wassette: one per tool, with typed\n\
         /// parameters, plus `pve-call`. Composed with the tool component, which exports\n\
         /// `pve-mcp:guest/tools`.\n\
         package pve-mcp:wassette@0.1.0;\n\n\
         world pve-wassette {\n    import pve-mcp:guest/tools@0.5.0;\n\n",
    );
    for spec in specs {
        wit_docs(&mut out, &spec.docs);
        let params: Vec<String> = spec
            .params
            .iter()
            .map(|p| format!("{}: {}", p.wit_name(), p.wit_type()))
            .collect();
        let _ = writeln!(
            out,
            "    export {}: func({}) -> result<string, string>;\n",
            spec.export,
            params.join(", ")
        );
    }
    wit_docs(&mut out, CALL_DOCS);
    out.push_str("    export pve-call: func(name: string, arguments-json: string) -> result<string, string>;\n}\n");
    out
}

fn generate_rust(specs: &[ToolSpec]) -> String {
    let mut out = String::from(
        "// GENERATED by tests/generate.rs from the tool registry; do not edit.\n\
         // `UPDATE_WIT=1 cargo test -p pve-mcp-wassette` rewrites it.\n\n\
         //! The exports: each typed tool builds its arguments object and calls the tool.\n\n\
         impl crate::bindings::Guest for crate::Component {\n",
    );
    for spec in specs {
        let params: Vec<String> = spec
            .params
            .iter()
            .map(|p| format!("{}: {}", p.rust_name(), p.rust_type()))
            .collect();
        let _ = writeln!(
            out,
            "    fn {}({}) -> Result<String, String> {{",
            spec.export.replace('-', "_"),
            params.join(", ")
        );
        if spec.params.is_empty() {
            out.push_str("        let a = crate::Args::new();\n");
        } else {
            out.push_str("        let mut a = crate::Args::new();\n");
        }
        for p in &spec.params {
            let method = match (p.kind, p.required) {
                (Kind::Json, true) => "json",
                (Kind::Json, false) => "opt_json",
                (Kind::IntOrString, true) => "int_or_string",
                (Kind::IntOrString, false) => "opt_int_or_string",
                (_, true) => "put",
                (_, false) => "opt",
            };
            let _ = writeln!(out, "        a.{method}({:?}, {});", p.name, p.rust_name());
        }
        let _ = writeln!(out, "        a.call({:?})\n    }}\n", spec.name);
    }
    out.push_str(
        "    fn pve_call(name: String, arguments_json: String) -> Result<String, String> {\n        \
         crate::call_by_name(name, arguments_json)\n    }\n}\n",
    );
    out
}

fn generate_docs(specs: &[ToolSpec]) -> String {
    let mut funcs = Map::new();
    for spec in specs {
        funcs.insert(spec.export.clone(), json!({ "docs": spec.docs }));
    }
    funcs.insert("pve-call".into(), json!({ "docs": CALL_DOCS }));
    let docs = json!({ "worlds": { DOCS_WORLD: { "func_exports": funcs } } });
    let mut text = serde_json::to_string_pretty(&docs).expect("docs serialise");
    text.push('\n');
    text
}

#[test]
fn checked_in_wit_glue_and_docs_are_current() {
    let specs = specs();
    assert!(specs.len() >= 40, "{} tools", specs.len());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var_os("UPDATE_WIT").is_some();
    let mut stale = Vec::new();
    for (file, want) in [
        ("wit/world.wit", generate_wit(&specs)),
        ("src/generated.rs", generate_rust(&specs)),
        ("package-docs.json", generate_docs(&specs)),
    ] {
        let path = root.join(file);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(want.as_str()) {
            continue;
        }
        if update {
            std::fs::write(&path, want).expect("writing a generated file");
        }
        stale.push(file);
    }
    assert!(
        update || stale.is_empty(),
        "guest/adapters/wassette/{} out of date with the tool registry; regenerate with \
         `UPDATE_WIT=1 cargo test -p pve-mcp-wassette` and commit the result",
        stale.join(", guest/adapters/wassette/")
    );
}

#[test]
fn every_tool_has_an_export_and_no_name_collides() {
    let specs = specs();
    let mut names: Vec<&str> = specs.iter().map(|s| s.export.as_str()).collect();
    names.push("pve-call");
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count, "two tools share an export name");
    for spec in &specs {
        for p in &spec.params {
            let shown = p.shown();
            assert!(
                shown.split('-').all(|seg| seg
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_lowercase())
                    && seg
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())),
                "{}: `{}` is not a WIT name",
                spec.name,
                p.name
            );
        }
    }
}
