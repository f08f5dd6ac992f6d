//! The tool registry: every tool's descriptor and its entry point.
//!
//! Adding a read tool:
//! 1. Write `tools/<name>.rs` with a `pub static TOOL: Tool`: name, title,
//!    a description that says when to use it, `input_schema` and
//!    `output_schema` built with [`crate::schema`], and a `run` that
//!    validates every argument through [`Args`] first, then calls
//!    [`Pve::get`] with an [`crate::path::ApiPath`] and shapes the `data`
//!    with the tolerant readers in [`crate::json`]. A tool about one guest
//!    takes [`crate::resolve::target_properties`] and calls
//!    `Wanted::from_args(args)?.resolve(pve)?`.
//! 2. Add `pub mod <name>;` and `&<name>::TOOL` to [`TOOLS`] below.
//!
//! The registry's tests then check the new tool's name, schemas and
//! argument handling; its own file tests its shaping against fixtures and
//! validates the output against its output schema.
//!
//! Arguments are checked against the input schema's property names here,
//! before the tool runs, so each tool only validates values.

use serde_json::Value;

use crate::api::Pve;
use crate::args::Args;
use crate::error::ToolError;
use crate::schema;

pub mod list_vms;
pub mod vm_status;

/// Every tool the component offers, in the order `list-tools` reports them.
pub static TOOLS: &[&Tool] = &[&list_vms::TOOL, &vm_status::TOOL];

/// Behaviour hints, mirroring the WIT `annotations` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// Changes nothing.
    pub read_only: bool,
    /// May destroy data.
    pub destructive: bool,
    /// Repeating the call has no further effect.
    pub idempotent: bool,
    /// Talks to systems outside the host.
    pub open_world: bool,
}

impl Annotations {
    /// A tool that only reads from Proxmox.
    pub const READ_ONLY: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: true,
    };
}

/// A tool's successful result.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The structured result; matches the tool's output schema.
    pub structured: Value,
    /// One or two sentences for clients that show only text.
    pub summary: String,
}

/// One tool: its descriptor and its entry point.
pub struct Tool {
    /// Unique name, `[A-Za-z0-9_.-]{1,64}`.
    pub name: &'static str,
    /// Short human-readable title.
    pub title: &'static str,
    /// What it does and when an agent should use it.
    pub description: &'static str,
    /// Builds the JSON Schema of the arguments object.
    pub input_schema: fn() -> Value,
    /// Builds the JSON Schema of [`Output::structured`].
    pub output_schema: fn() -> Value,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// Runs the tool on arguments already checked for unknown keys.
    pub run: fn(&mut dyn Pve, &Args) -> Result<Output, ToolError>,
}

impl Tool {
    /// Parses `arguments` (rejecting keys the input schema does not
    /// declare) and runs the tool.
    pub fn call(&self, pve: &mut dyn Pve, arguments: &str) -> Result<Output, ToolError> {
        let input = (self.input_schema)();
        let args = Args::parse(arguments, &schema::property_names(&input))?;
        (self.run)(pve, &args)
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The tool called `name`.
pub fn find(name: &str) -> Result<&'static Tool, ToolError> {
    TOOLS
        .iter()
        .copied()
        .find(|t| t.name == name)
        .ok_or_else(|| ToolError::UnknownTool(name.to_owned()))
}

/// Helpers for the tools' own tests.
#[cfg(test)]
pub mod testing {
    use super::{Output, Tool};

    /// Fails the test unless `out.structured` validates against the tool's
    /// output schema.
    pub fn assert_valid_output(tool: &Tool, out: &Output) {
        let schema = (tool.output_schema)();
        let validator = jsonschema::draft202012::new(&schema).expect("output schema compiles");
        let errors: Vec<String> = validator
            .iter_errors(&out.structured)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(
            errors.is_empty(),
            "{}: {errors:#?}\n{}",
            tool.name,
            out.structured
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;

    #[test]
    fn names_are_unique_and_well_formed() {
        let mut names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        for n in &names {
            assert!(
                (1..=64).contains(&n.len())
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)),
                "{n}"
            );
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len());
    }

    #[test]
    fn unknown_tool() {
        assert_eq!(
            find("nope").unwrap_err(),
            ToolError::UnknownTool("nope".into())
        );
        assert_eq!(find("pve_list_vms").unwrap().name, "pve_list_vms");
    }

    #[test]
    fn arguments_are_checked_before_any_request() {
        for tool in TOOLS {
            // An empty fake panics on any request.
            let mut pve = FakePve::default();
            let e = tool.call(&mut pve, r#"{"bogus": 1}"#).unwrap_err();
            assert!(
                matches!(e, ToolError::InvalidArguments(_)),
                "{}: {e:?}",
                tool.name
            );
            assert!(e.message().starts_with("bogus: unknown argument"), "{e}");
            let e = tool.call(&mut pve, "[]").unwrap_err();
            assert!(
                matches!(e, ToolError::InvalidArguments(_)),
                "{}: {e:?}",
                tool.name
            );
            assert!(pve.requests.is_empty());
        }
    }

    /// Every schema is a JSON Schema with an object root, closed, with a
    /// description on every property, and compiles as draft 2020-12.
    #[test]
    fn schemas_are_well_formed() {
        for tool in TOOLS {
            for (kind, schema) in [
                ("input", (tool.input_schema)()),
                ("output", (tool.output_schema)()),
            ] {
                let text = serde_json::to_string(&schema).unwrap();
                let reparsed: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(reparsed["type"], "object", "{} {kind}", tool.name);
                assert!(
                    jsonschema::draft202012::meta::is_valid(&schema),
                    "{} {kind} schema is not valid 2020-12",
                    tool.name
                );
                jsonschema::draft202012::new(&schema).expect("schema compiles");
                check_closed_and_described(&schema, &format!("{} {kind}", tool.name));
            }
            assert!(!tool.title.is_empty() && tool.description.len() > 40);
            assert_eq!(tool.annotations, Annotations::READ_ONLY);
        }
    }

    fn check_closed_and_described(schema: &Value, at: &str) {
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            assert_eq!(schema["additionalProperties"], false, "{at} is not closed");
            for (name, prop) in props {
                assert!(
                    prop.get("description")
                        .and_then(Value::as_str)
                        .is_some_and(|d| !d.is_empty()),
                    "{at}.{name} has no description"
                );
                check_closed_and_described(prop, &format!("{at}.{name}"));
            }
        }
        if let Some(items) = schema.get("items") {
            check_closed_and_described(items, &format!("{at}[]"));
        }
    }
}
