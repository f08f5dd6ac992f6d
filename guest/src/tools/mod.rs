//! The tool registry: every tool's descriptor and its entry point.
//!
//! Adding a read tool:
//! 1. Write `tools/<name>.rs` with
//!    - an input struct: `#[derive(Deserialize)]`,
//!      `#[cfg_attr(test, derive(schemars::JsonSchema))]`,
//!      `#[serde(deny_unknown_fields)]`, a doc comment on every field (it
//!      becomes the schema's description) and field types that validate
//!      themselves: [`crate::arg`] (`Vmid`, `NodeName`, `VmType`, `Text`,
//!      `Int`, `Flag`), [`crate::paging`] (`Limit`, `Offset`),
//!      `support` (`Upid`, `Time`, `Timeframe`, ...), or a new one with
//!      `arg::deserialize_from_json!` / `arg::choice!` and its schema in
//!      `arg::fixed_schema!`. `Option<T>` is optional; a
//!      `#[serde(default)]` field's type must read `null` as its default.
//!      Use [`NoArguments`] for none. A tool about one guest declares its
//!      input with `resolve::guest_input!` (`vmid`, `node`,
//!      `vm_type`) and calls `input.wanted().resolve(pve)?`;
//!    - an output struct: `#[derive(Serialize)]` and
//!      `#[cfg_attr(test, derive(schemars::JsonSchema))]`, a doc comment on
//!      every field, `Option<T>` for what may be unknown (written as
//!      `null`; every output field is required), [`crate::json::Tidy`] for
//!      numbers Proxmox gives as floats;
//!    - `fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<Out>, ToolError>`
//!      that calls [`Pve::get`] with an [`crate::path::ApiPath`] and shapes
//!      the `data` with the tolerant readers in [`crate::json`];
//!    - `pub static TOOL: Tool = read_tool! { name, title, description, run }`,
//!      with a description that says when to use it.
//! 2. Add `pub mod <name>;` and `&<name>::TOOL` to [`TOOLS`] below.
//! 3. Run `UPDATE_SCHEMAS=1 cargo test -p pve-mcp-guest`: it writes the
//!    schemas derived from the two structs to `guest/schemas/`, which the
//!    component includes (see `schemas.rs`); commit them.
//!
//! The registry's tests then check the new tool's name, schemas and
//! argument handling; its own file tests its shaping against fixtures and
//! validates the output against its output schema.
//!
//! Arguments are read before the tool runs and before any request
//! ([`crate::input`]): unknown keys are refused with the valid ones
//! listed, then each field's type checks its value.
//!
//! `cluster`: every tool takes an optional `cluster` argument (which
//! configured Proxmox cluster to ask). The checked-in schemas declare it,
//! the registry takes it out of the arguments ([`Tool::parse`]) and
//! `lib.rs` picks the endpoint; it also adds `"cluster": <name>` to every
//! structured output ([`with_cluster`]). A tool never declares, reads or
//! emits `cluster` itself (a test enforces it).
//!
//! Lists: a tool returning a list takes `limit: Limit<DEFAULT, MAX>` and
//! `offset: Offset`, flattens a [`crate::paging::PageInfo`] into its
//! output and uses `paging::paginate` and `PageInfo::describe`.
//! Epoch → ISO-8601 and byte sizes are in [`crate::format`].

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::api::Pve;
use crate::arg;
use crate::cluster;
use crate::error::ToolError;
use crate::input;

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
// Actions and tasks (issue 11).
pub mod api_request;
pub mod backup;
pub mod clone_vm;
pub mod create_guest;
pub mod delete_vm;
pub mod migrate;
pub mod next_vmid;
pub mod power;
pub mod resize_disk;
pub mod set_config;
pub mod snapshots;
pub mod wait_task;

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
    // actions and tasks
    &next_vmid::TOOL,
    &wait_task::TOOL,
    &power::START,
    &power::SHUTDOWN,
    &power::STOP,
    &power::REBOOT,
    &power::SUSPEND,
    &power::RESUME,
    &snapshots::CREATE,
    &snapshots::DELETE,
    &snapshots::ROLLBACK,
    &migrate::TOOL,
    &clone_vm::TOOL,
    &create_guest::QEMU,
    &create_guest::LXC,
    &resize_disk::TOOL,
    &set_config::TOOL,
    &delete_vm::TOOL,
    &backup::BACKUP,
    &backup::RESTORE,
    &api_request::TOOL,
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

    /// A tool that changes something in Proxmox.
    pub const fn write(destructive: bool, idempotent: bool) -> Annotations {
        Annotations {
            read_only: false,
            destructive,
            idempotent,
            open_world: true,
        }
    }
}

/// A tool's successful result, as the component returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The structured result; matches the tool's output schema.
    pub structured: Value,
    /// One or two sentences for clients that show only text.
    pub summary: String,
}

/// A tool's typed result: the output struct its schema is derived from.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer<T> {
    /// The structured result.
    pub structured: T,
    /// One or two sentences for clients that show only text.
    pub summary: String,
}

impl<T: Serialize> Answer<T> {
    /// The answer as JSON.
    pub fn into_output(self) -> Result<Output, ToolError> {
        let structured = serde_json::to_value(&self.structured)
            .map_err(|e| ToolError::Internal(format!("could not write the output: {e}")))?;
        Ok(Output {
            structured,
            summary: self.summary,
        })
    }
}

/// One tool: its descriptor and its entry point. Declare one with
/// `read_tool!`.
pub struct Tool {
    /// Unique name, `[A-Za-z0-9_.-]{1,64}`.
    pub name: &'static str,
    /// Short human-readable title.
    pub title: &'static str,
    /// What it does and when an agent should use it.
    pub description: &'static str,
    /// JSON Schema of the arguments object as `list-tools` reports it: the
    /// tool's own plus `cluster`; checked in as `schemas/<name>.input.json`.
    pub input_schema: &'static str,
    /// JSON Schema of [`Output::structured`] as `list-tools` reports it,
    /// `cluster` included; checked in as `schemas/<name>.output.json`.
    pub output_schema: &'static str,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// The writes it may send, as `(method, path under /api2/json)` with
    /// `{argument}` placeholders (see `route` in the WIT); none for a read
    /// tool, whose GETs the host lets out without routes.
    pub routes: &'static [(&'static str, &'static str)],
    /// It may wait for Proxmox tasks (up to [`crate::api::Pve::wait_limit`]),
    /// so the host gives its calls that much longer (WIT `waits`).
    pub waits: bool,
    /// The tool's own argument names (its input struct's fields).
    pub arguments: fn() -> &'static [&'static str],
    /// Reads the arguments into the tool's input and runs it; the
    /// arguments are already checked for unknown keys and `cluster` is out.
    pub run: RunJson,
    /// The schemas derived from the tool's types, which the checked-in ones
    /// must equal.
    #[cfg(test)]
    pub derived: fn() -> crate::schemas::Derived,
}

/// A tool's entry point as the registry calls it: arguments as JSON in,
/// output as JSON out.
pub type RunJson = fn(&mut dyn Pve, Map<String, Value>) -> Result<Output, ToolError>;

/// A tool's `run` function: typed input in, typed answer out.
pub type Run<I, O> = fn(&mut dyn Pve, I) -> Result<Answer<O>, ToolError>;

/// Declares a read-only [`Tool`] from its name, title, description and a
/// [`Run`] function; its schemas are the checked-in files derived from the
/// `run` function's input and output types.
macro_rules! read_tool {
    (
        name: $name:literal,
        title: $title:expr,
        description: $description:expr,
        run: $run:path $(,)?
    ) => {
        $crate::tools::Tool {
            name: $name,
            title: $title,
            description: $description,
            input_schema: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/schemas/",
                $name,
                ".input.json"
            )),
            output_schema: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/schemas/",
                $name,
                ".output.json"
            )),
            annotations: $crate::tools::Annotations::READ_ONLY,
            routes: &[],
            waits: false,
            arguments: || $crate::tools::arguments_of($run),
            run: |pve, args| $crate::tools::run_typed(pve, args, $run),
            #[cfg(test)]
            derived: || $crate::schemas::derive_for($run),
        }
    };
}
pub(crate) use read_tool;

/// Declares a [`Tool`] that writes: like `read_tool!`, plus its
/// annotations and the routes it may write (method, path template with
/// `{argument}` placeholders), which the host binds to each call's
/// arguments and holds it to.
macro_rules! write_tool {
    (
        name: $name:literal,
        title: $title:expr,
        description: $description:expr,
        annotations: $annotations:expr,
        routes: $routes:expr,
        run: $run:path $(,)?
    ) => {
        $crate::tools::Tool {
            annotations: $annotations,
            routes: $routes,
            // Every write tool can wait for the task it starts (`wait`).
            waits: true,
            ..$crate::tools::read_tool! {
                name: $name,
                title: $title,
                description: $description,
                run: $run,
            }
        }
    };
}
pub(crate) use write_tool;

/// The argument names of a [`Run`] function's input.
pub fn arguments_of<I: DeserializeOwned, O>(_: Run<I, O>) -> &'static [&'static str] {
    input::fields::<I>()
}

/// Reads `args` into `run`'s input, runs it and writes its answer as JSON.
pub fn run_typed<I: DeserializeOwned, O: Serialize>(
    pve: &mut dyn Pve,
    args: Map<String, Value>,
    run: Run<I, O>,
) -> Result<Output, ToolError> {
    let input = input::typed::<I>(args)?;
    run(pve, input)?.into_output()
}

/// The input of a tool without arguments of its own.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// A call's arguments after the registry took out `cluster`.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The `cluster` argument, validated as a string; `None` = default.
    pub cluster: Option<String>,
    /// The tool's own arguments, not yet read into its input.
    pub args: Map<String, Value>,
}

impl Tool {
    /// Parses `arguments`, rejecting keys the tool does not declare, and
    /// takes out (and type-checks) `cluster`. No request.
    pub fn parse(&self, arguments: &str) -> Result<Parsed, ToolError> {
        let mut allowed = (self.arguments)().to_vec();
        allowed.push(cluster::ARG);
        allowed.sort_unstable();
        let mut args = input::object(arguments, &allowed)?;
        let cluster = match args.remove(cluster::ARG) {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                arg::string(&v, cluster::NAME_MAX)
                    .map_err(|m| ToolError::field(cluster::ARG, m))?
                    .to_owned(),
            ),
        };
        Ok(Parsed { cluster, args })
    }

    /// Parses `arguments` and runs the tool against `pve`; `cluster` is
    /// accepted and ignored here (lib.rs uses it to choose `pve`).
    pub fn call(&self, pve: &mut dyn Pve, arguments: &str) -> Result<Output, ToolError> {
        let parsed = self.parse(arguments)?;
        (self.run)(pve, parsed.args)
    }
}

/// Adds `"cluster": name` to a tool's structured output, as its output
/// schema declares.
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
        check(tool.name, &(tool.derived)().output, &out.structured);
        let full = with_cluster(out.clone(), Some("default"));
        let listed = serde_json::from_str(tool.output_schema).expect("checked-in schema is JSON");
        check(tool.name, &listed, &full.structured);
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

    /// The schemas `list-tools` reports, parsed.
    fn listed(tool: &Tool) -> (Value, Value) {
        let parse = |text| serde_json::from_str(text).expect("checked-in schema is JSON");
        (parse(tool.input_schema), parse(tool.output_schema))
    }

    #[test]
    fn cluster_is_accepted_checked_and_stripped() {
        for tool in TOOLS {
            let (input, output) = listed(tool);
            assert_eq!(input["properties"]["cluster"]["type"], "string");
            assert!(
                !input["required"]
                    .as_array()
                    .is_some_and(|r| r.contains(&"cluster".into()))
            );
            let p = tool.parse(r#"{"cluster": "lab"}"#).unwrap();
            assert_eq!(p.cluster.as_deref(), Some("lab"));
            // The tool's own arguments no longer carry it.
            assert_eq!(p.args.get("cluster"), None);
            let p = tool.parse(r#"{"cluster": null}"#).unwrap();
            assert_eq!(p.cluster, None);
            for bad in [r#"{"cluster": 1}"#, r#"{"cluster": ""}"#] {
                let e = tool.parse(bad).unwrap_err();
                assert!(e.message().starts_with("cluster: "), "{}: {e}", tool.name);
            }
            assert!(
                output["required"]
                    .as_array()
                    .unwrap()
                    .contains(&"cluster".into())
            );
        }
    }

    /// The arguments the registry accepts are the input schema's
    /// properties, and each of them is read by the tool's input type.
    #[test]
    fn arguments_are_the_input_schema_properties() {
        for tool in TOOLS {
            let (input, _) = listed(tool);
            let mut declared: Vec<&str> = input["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .filter(|k| *k != cluster::ARG)
                .collect();
            declared.sort_unstable();
            let mut accepted = (tool.arguments)().to_vec();
            accepted.sort_unstable();
            assert_eq!(accepted, declared, "{}", tool.name);
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
            let derived = (tool.derived)();
            // The registry owns `cluster`; a tool must not declare it.
            for own in [&derived.input, &derived.output] {
                assert!(
                    own["properties"].get(cluster::ARG).is_none(),
                    "{} declares cluster itself",
                    tool.name
                );
            }
            let (input, output) = listed(tool);
            for (kind, schema) in [
                ("input", &derived.input),
                ("output", &derived.output),
                ("listed input", &input),
                ("listed output", &output),
            ] {
                assert_eq!(schema["type"], "object", "{} {kind}", tool.name);
                assert!(
                    jsonschema::draft202012::meta::is_valid(schema),
                    "{} {kind} schema is not valid 2020-12",
                    tool.name
                );
                jsonschema::draft202012::new(schema).expect("schema compiles");
                check_closed_and_described(schema, &format!("{} {kind}", tool.name));
            }
            assert!(!tool.title.is_empty() && tool.description.len() > 40);
            // A tool that declares no writes is a read tool, and one that
            // declares writes says so; the host holds each to its routes.
            if tool.routes.is_empty() {
                assert_eq!(tool.annotations, Annotations::READ_ONLY, "{}", tool.name);
            } else {
                assert!(!tool.annotations.read_only, "{}", tool.name);
                for (method, path) in tool.routes {
                    // The one route that is the call's own request
                    // (`pve_api_request`), which the host binds exactly.
                    if (*method, *path) == ("{method}", "/{path}") {
                        assert!(tool.annotations.destructive, "{}", tool.name);
                        continue;
                    }
                    assert!(["POST", "PUT", "DELETE"].contains(method), "{}", tool.name);
                    assert!(path.starts_with("/nodes/{node}/"), "{}: {path}", tool.name);
                }
            }
        }
    }

    /// Agents see only the input schema: it must refuse unknown arguments
    /// and say what every argument is for.
    #[test]
    fn input_schemas_are_closed_and_describe_every_argument() {
        for tool in TOOLS {
            let (input, _) = listed(tool);
            assert_eq!(input["additionalProperties"], false, "{}", tool.name);
            for (name, prop) in input["properties"].as_object().unwrap() {
                let description = prop["description"].as_str().unwrap_or_default();
                assert!(description.len() > 10, "{}.{name}: {prop}", tool.name);
            }
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
        for key in ["anyOf", "oneOf"] {
            for alternative in schema[key].as_array().into_iter().flatten() {
                check_closed_and_described(alternative, at);
            }
        }
    }
}
