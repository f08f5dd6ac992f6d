//! What every tool is made of: its descriptor ([`Tool`], declared with
//! `read_tool!` or `write_tool!`), its typed result ([`Answer`],
//! [`Output`]) and how the registry reads a call's arguments into its input
//! ([`Tool::parse`]).
//!
//! Every tool file imports this module and none imports the registry
//! (`tools/mod.rs`), so a tool depends on the floor below it and never on
//! its siblings.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::api::Pve;
use crate::arg;
use crate::cluster;
use crate::error::ToolError;
use crate::input;

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
/// `read_tool!` or `write_tool!`.
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
    /// The writes it may send, whole: method, path under `/api2/json` with
    /// `{argument}` placeholders, and every parameter (see `route` in the
    /// WIT); none for a read tool, whose GETs the host lets out without
    /// routes.
    pub routes: &'static [crate::route::Route],
    /// The GET endpoints a read tool asks, as path templates under
    /// `/api2/json` with `{argument}` placeholders (WIT `reads`): for
    /// people and docs only, as the host lets any GET out; empty for a
    /// write tool, whose routes say what it sends.
    pub reads: &'static [&'static str],
    /// The Proxmox privileges its requests need (WIT `privileges`), read
    /// from the API schema's `permissions` of each endpoint it calls.
    /// Hosts show them and `pve_check_permissions` checks them; Proxmox
    /// decides, so they are never a security decision of their own.
    pub privileges: &'static [Privilege],
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

/// A Proxmox privilege a tool needs on an ACL path, mirroring the WIT
/// `privilege` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Privilege {
    /// ACL path with `{argument}` placeholders (`/vms/{vmid}`,
    /// `/nodes/{node}`, `/storage/{storage}`, `/`).
    pub path: &'static str,
    /// Privilege names, any one of which suffices (Proxmox renamed some
    /// between releases: `VM.GuestAgent.Audit` on PVE 9 is `VM.Monitor` on
    /// PVE 8).
    pub any_of: &'static [&'static str],
}

/// A tool's entry point as the registry calls it: arguments as JSON in,
/// output as JSON out.
pub type RunJson = fn(&mut dyn Pve, Map<String, Value>) -> Result<Output, ToolError>;

/// A tool's `run` function: typed input in, typed answer out.
pub type Run<I, O> = fn(&mut dyn Pve, I) -> Result<Answer<O>, ToolError>;

/// Declares a read-only [`Tool`] from its name, title, description, the
/// privileges it needs (`"/acl/path/{argument}": "Priv.Name"`, with
/// `"A" | "B"` where either suffices) and a [`Run`] function; its schemas
/// are the checked-in files derived from the `run` function's input and
/// output types.
macro_rules! read_tool {
    (
        name: $name:literal,
        title: $title:expr,
        description: $description:expr,
        reads: [$($read:literal),* $(,)?],
        privileges: [$($path:literal : $($privilege:literal)|+),* $(,)?],
        run: $run:path $(,)?
    ) => {
        $crate::tool::Tool {
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
            annotations: $crate::tool::Annotations::READ_ONLY,
            routes: &[],
            reads: &[$($read),*],
            privileges: &[$($crate::tool::Privilege {
                path: $path,
                any_of: &[$($privilege),+],
            }),*],
            waits: false,
            arguments: || $crate::tool::arguments_of($run),
            run: |pve, args| $crate::tool::run_typed(pve, args, $run),
            #[cfg(test)]
            derived: || $crate::tool::derived_for($run),
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
        privileges: [$($path:literal : $($privilege:literal)|+),* $(,)?],
        run: $run:path $(,)?
    ) => {
        $crate::tool::Tool {
            annotations: $annotations,
            routes: $routes,
            // Every write tool can wait for the task it starts (`wait`).
            waits: true,
            ..$crate::tool::read_tool! {
                name: $name,
                title: $title,
                description: $description,
                // A write tool's reads are those of its flow (the guest's
                // status or config first), not its own: its routes say
                // what it sends.
                reads: [],
                privileges: [$($path : $($privilege)|+),*],
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

/// The schemas of a [`Run`] function's input and output types.
#[cfg(test)]
pub fn derived_for<I: schemars::JsonSchema, O: schemars::JsonSchema>(
    _: Run<I, O>,
) -> crate::schemas::Derived {
    crate::schemas::derive::<I, O>()
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

/// Helpers for the tools' own tests.
#[cfg(test)]
pub mod testing {
    use super::{Output, Tool, with_cluster};

    /// Fails the test unless `out.structured` validates against the tool's
    /// exact output schema, and, with the registry's `cluster` field added,
    /// against the exact full one and the one `list-tools` reports.
    pub fn assert_valid_output(tool: &Tool, out: &Output) {
        let derived = (tool.derived)();
        check(tool.name, &derived.output, &out.structured);
        let full = with_cluster(out.clone(), Some("default"));
        check(tool.name, &derived.full_output(), &full.structured);
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
}
