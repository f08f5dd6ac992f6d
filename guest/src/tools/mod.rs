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
//!
//! `cluster`: every tool takes an optional `cluster` argument (which
//! configured Proxmox cluster to ask). The registry adds it to each input
//! schema ([`Tool::full_input_schema`]), takes it out of the arguments
//! ([`Tool::parse`]) and `lib.rs` picks the endpoint; it also adds
//! `"cluster": <name>` to every structured output ([`with_cluster`],
//! [`Tool::full_output_schema`]). A tool never declares, reads or emits
//! `cluster` itself (a test enforces it).
//!
//! Lists: a tool returning a list takes `limit`/`offset` and reports
//! `total`/`returned`/`omitted`/`offset`/`limit`/`next_offset` via
//! [`crate::paging`] (`Page::from_args`, `paginate`, `input_properties`,
//! `output_properties`, `PageInfo::insert_into`, `PageInfo::describe`).
//! Epoch → ISO-8601 and byte sizes are in [`crate::format`].

use serde_json::Value;

use crate::api::Pve;
use crate::args::Args;
use crate::cluster;
use crate::error::ToolError;
use crate::schema;

pub mod list_vms;
pub mod vm_status;
// Cluster, nodes, resources, config, storage, backups (batch 1).
pub mod get_cluster_status;
pub mod get_node_metrics;
pub mod get_version;
pub mod get_vm_config;
pub mod list_backups;
pub mod list_clusters;
pub mod list_nodes;
pub mod list_resources;
pub mod list_storage;
// Tasks, snapshots, metrics, IPs, HA and permissions (batch 2).
pub mod check_permissions;
pub mod get_task_log;
pub mod get_task_status;
pub mod get_vm_ips;
pub mod get_vm_metrics;
pub mod list_ha;
pub mod list_snapshots;
pub mod list_tasks;
pub mod support;

/// Every tool the component offers, in the order `list-tools` reports them.
pub static TOOLS: &[&Tool] = &[
    &list_vms::TOOL,
    &vm_status::TOOL,
    // batch 1
    &list_clusters::TOOL,
    &get_version::TOOL,
    &get_cluster_status::TOOL,
    &list_nodes::TOOL,
    &get_node_metrics::TOOL,
    &list_resources::TOOL,
    &get_vm_config::TOOL,
    &list_storage::TOOL,
    &list_backups::TOOL,
    // batch 2
    &get_task_status::TOOL,
    &list_snapshots::TOOL,
    &list_tasks::TOOL,
    &get_task_log::TOOL,
    &get_vm_metrics::TOOL,
    &get_vm_ips::TOOL,
    &list_ha::TOOL,
    &check_permissions::TOOL,
];

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

/// A call's arguments after the registry took out `cluster`.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The `cluster` argument, validated as a string; `None` = default.
    pub cluster: Option<String>,
    /// The tool's own arguments.
    pub args: Args,
}

impl Tool {
    /// The input schema `list-tools` reports: the tool's own plus the
    /// optional `cluster` property every tool accepts.
    pub fn full_input_schema(&self) -> Value {
        let mut s = (self.input_schema)();
        s["properties"][cluster::ARG] = cluster::input_property();
        s
    }

    /// The output schema `list-tools` reports: the tool's own plus the
    /// `cluster` field [`with_cluster`] adds.
    pub fn full_output_schema(&self) -> Value {
        let mut s = (self.output_schema)();
        s["properties"][cluster::ARG] = cluster::output_property();
        match s.get_mut("required").and_then(Value::as_array_mut) {
            Some(r) => r.push(cluster::ARG.into()),
            None => s["required"] = serde_json::json!([cluster::ARG]),
        }
        s
    }

    /// Parses `arguments`, rejecting keys the full input schema does not
    /// declare, and takes out (and type-checks) `cluster`. No request.
    pub fn parse(&self, arguments: &str) -> Result<Parsed, ToolError> {
        let input = self.full_input_schema();
        let mut args = Args::parse(arguments, &schema::property_names(&input))?;
        let cluster = args
            .string(cluster::ARG, cluster::NAME_MAX)?
            .map(str::to_owned);
        args.remove(cluster::ARG);
        Ok(Parsed { cluster, args })
    }

    /// Parses `arguments` and runs the tool against `pve`; `cluster` is
    /// accepted and ignored here (lib.rs uses it to choose `pve`).
    pub fn call(&self, pve: &mut dyn Pve, arguments: &str) -> Result<Output, ToolError> {
        let parsed = self.parse(arguments)?;
        (self.run)(pve, &parsed.args)
    }
}

/// Adds `"cluster": name` to a tool's structured output, as
/// [`Tool::full_output_schema`] declares.
pub fn with_cluster(mut out: Output, name: Option<&str>) -> Output {
    if let Value::Object(o) = &mut out.structured {
        o.insert(cluster::ARG.to_owned(), name.into());
    }
    out
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
    use super::{Output, Tool, with_cluster};

    /// Fails the test unless `out.structured` validates against the tool's
    /// output schema, and, with the registry's `cluster` field added,
    /// against the full output schema `list-tools` reports.
    pub fn assert_valid_output(tool: &Tool, out: &Output) {
        check(tool.name, &(tool.output_schema)(), &out.structured);
        let full = with_cluster(out.clone(), Some("default"));
        check(tool.name, &tool.full_output_schema(), &full.structured);
    }

    fn check(name: &str, schema: &serde_json::Value, value: &serde_json::Value) {
        let validator = jsonschema::draft202012::new(schema).expect("output schema compiles");
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}\n{value}");
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

    #[test]
    fn cluster_is_accepted_checked_and_stripped() {
        for tool in TOOLS {
            let full = tool.full_input_schema();
            assert_eq!(full["properties"]["cluster"]["type"], "string");
            assert!(
                !full["required"]
                    .as_array()
                    .is_some_and(|r| r.contains(&"cluster".into()))
            );
            let p = tool.parse(r#"{"cluster": "lab"}"#).unwrap();
            assert_eq!(p.cluster.as_deref(), Some("lab"));
            // The tool's own arguments no longer carry it.
            assert_eq!(p.args.raw("cluster"), None);
            let p = tool.parse(r#"{"cluster": null}"#).unwrap();
            assert_eq!(p.cluster, None);
            for bad in [r#"{"cluster": 1}"#, r#"{"cluster": ""}"#] {
                let e = tool.parse(bad).unwrap_err();
                assert!(e.message().starts_with("cluster: "), "{}: {e}", tool.name);
            }
            let out_schema = tool.full_output_schema();
            assert!(
                out_schema["required"]
                    .as_array()
                    .unwrap()
                    .contains(&"cluster".into())
            );
        }
    }

    #[test]
    fn with_cluster_adds_the_name() {
        let out = Output {
            structured: serde_json::json!({"a": 1}),
            summary: String::new(),
        };
        let out = with_cluster(out, Some("lab"));
        assert_eq!(
            out.structured,
            serde_json::json!({"a": 1, "cluster": "lab"})
        );
    }

    /// Every schema is a JSON Schema with an object root, closed, with a
    /// description on every property, and compiles as draft 2020-12.
    #[test]
    fn schemas_are_well_formed() {
        for tool in TOOLS {
            // The registry owns `cluster`; a tool must not declare it.
            for own in [(tool.input_schema)(), (tool.output_schema)()] {
                assert!(
                    own["properties"].get(cluster::ARG).is_none(),
                    "{} declares cluster itself",
                    tool.name
                );
            }
            for (kind, schema) in [
                ("input", (tool.input_schema)()),
                ("output", (tool.output_schema)()),
                ("full input", tool.full_input_schema()),
                ("full output", tool.full_output_schema()),
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
