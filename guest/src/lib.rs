//! pve-mcp's tool logic, built as a `wasm32-wasip2` component exporting the
//! `pve-tools` world (`wit/pve-tools.wit`).
//!
//! The component reads from and writes to Proxmox VE through
//! `wasi:http/outgoing-handler`. The host's egress gate decides what may
//! leave (a write tool's requests are bound to the routes it declares) and
//! adds the credentials, so nothing here holds a secret or a URL of its
//! own: the base URL comes from each call's `call-context`.
//!
//! This file is only the bindings and the export glue. The logic lives in
//! plain modules that also build and test natively:
//! - [`tools`]: the registry and one module per tool,
//! - [`tool`]: what every tool is made of (descriptor, privileges, typed
//!   answer, argument parsing) and the `read_tool!`/`write_tool!` macros,
//! - [`input`], [`arg`]: arguments → a tool's typed input, validated,
//! - [`task`]: Proxmox UPIDs, task status, outcomes and log lines,
//! - [`api`]: the client (wstd over wasi:http) and envelope decoding,
//!   plus progress reports and the wait limit from the call context,
//! - [`write`](mod@write), [`action`], [`task_wait`]: write requests as Proxmox's
//!   wire wants them, what every write tool shares (reads before writing,
//!   dry runs, plans), and waiting for a task with progress,
//! - [`failure`]: Proxmox and transport errors → actionable messages,
//! - [`resources`], [`resolve`]: guests from `/cluster/resources`, vmid →
//!   node and type,
//! - [`cluster`]: the `cluster` argument every tool takes → which
//!   `call-context` endpoint to use,
//! - [`paging`]: `limit`/`offset` and page facts for list tools,
//! - [`path`], [`json`], [`format`](mod@format), [`fetch`], [`error`]: helpers.
//!
//! The tools' JSON Schemas are derived from their types in tests
//! (`schemas`) and checked in under `guest/schemas/`.

#![warn(missing_docs)]

pub mod action;
pub mod agent;
pub mod agent_tool;
pub mod api;
pub mod arg;
pub mod base64;
pub mod cloudinit;
pub mod cluster;
pub mod error;
pub mod failure;
pub mod fetch;
pub mod firewall;
pub mod format;
pub mod ha;
pub mod input;
pub mod json;
pub mod node_action;
pub mod paging;
pub mod path;
pub mod pools;
pub mod release;
pub mod replication;
pub mod resolve;
pub mod resources;
pub mod route;
#[cfg(test)]
pub mod schemas;
pub mod storages;
pub mod task;
pub mod task_wait;
pub mod tool;
pub mod tools;
pub mod volume;
pub mod write;

mod bindings {
    // The world's wasi imports are mapped onto the `wasip2` crate, which
    // wstd uses too, so the component carries one set of wasi bindings
    // (generated bindings for the same interfaces would be a second copy).
    wit_bindgen::generate!({
        path: "../wit",
        world: "pve-tools",
        with: {
            "wasi:http/outgoing-handler@0.2.12": wasip2::http::outgoing_handler,
            "wasi:http/types@0.2.12": wasip2::http::types,
            "wasi:io/error@0.2.12": wasip2::io::error,
            "wasi:io/poll@0.2.12": wasip2::io::poll,
            "wasi:io/streams@0.2.12": wasip2::io::streams,
            "wasi:clocks/monotonic-clock@0.2.12": wasip2::clocks::monotonic_clock,
            "wasi:clocks/wall-clock@0.2.12": wasip2::clocks::wall_clock,
            "wasi:cli/environment@0.2.12": wasip2::cli::environment,
            "wasi:cli/exit@0.2.12": wasip2::cli::exit,
            "wasi:cli/stdin@0.2.12": wasip2::cli::stdin,
            "wasi:cli/stdout@0.2.12": wasip2::cli::stdout,
            "wasi:cli/stderr@0.2.12": wasip2::cli::stderr,
            "wasi:cli/terminal-input@0.2.12": wasip2::cli::terminal_input,
            "wasi:cli/terminal-output@0.2.12": wasip2::cli::terminal_output,
            "wasi:cli/terminal-stdin@0.2.12": wasip2::cli::terminal_stdin,
            "wasi:cli/terminal-stdout@0.2.12": wasip2::cli::terminal_stdout,
            "wasi:cli/terminal-stderr@0.2.12": wasip2::cli::terminal_stderr,
            "wasi:filesystem/types@0.2.12": wasip2::filesystem::types,
            "wasi:filesystem/preopens@0.2.12": wasip2::filesystem::preopens,
            "wasi:random/random@0.2.12": wasip2::random::random,
            "wasi:random/insecure-seed@0.2.12": wasip2::random::insecure_seed,
        },
    });
}

use bindings::exports::pve_mcp::guest::tools as wit;

/// The exported `tools` interface.
// Natively the export macro is not expanded (its symbol names cannot be
// linked into a native shared library), so the type looks unused there.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Component;

#[cfg(target_arch = "wasm32")]
bindings::export!(Component with_types_in bindings);

impl wit::Guest for Component {
    fn list_tools() -> Vec<wit::ToolDescriptor> {
        tools::TOOLS
            .iter()
            .zip(tools::TOOLSETS)
            .map(|(t, toolset)| wit::ToolDescriptor {
                name: t.name.to_owned(),
                title: t.title.to_owned(),
                description: t.description.to_owned(),
                input_schema: t.input_schema.to_owned(),
                output_schema: Some(t.output_schema.to_owned()),
                annotations: wit::Annotations {
                    read_only: t.annotations.read_only,
                    destructive: t.annotations.destructive,
                    idempotent: t.annotations.idempotent,
                    open_world: t.annotations.open_world,
                },
                routes: t.routes.iter().map(wit_route).collect(),
                waits: t.waits,
                privileges: t
                    .privileges
                    .iter()
                    .map(|p| wit::Privilege {
                        path: p.path.to_owned(),
                        any_of: p.any_of.iter().map(|n| (*n).to_owned()).collect(),
                    })
                    .collect(),
                toolset: (*toolset).to_owned(),
                reads: t.reads.iter().map(|r| (*r).to_owned()).collect(),
            })
            .collect()
    }

    fn call_tool(
        ctx: wit::CallContext,
        name: String,
        arguments: String,
    ) -> Result<wit::ToolOutput, wit::ToolError> {
        let tool = tools::find(&name).map_err(into_wit)?;
        // The registry takes `cluster` out of the arguments; it names one
        // of the endpoints, the first being the default. The client sends
        // nothing until a tool asks, and tools validate their arguments
        // before they ask, so bad arguments are reported even if the host
        // sent no endpoint.
        let parsed = tool.parse(&arguments).map_err(into_wit)?;
        let endpoints: Vec<cluster::Endpoint> = ctx
            .endpoints
            .into_iter()
            .map(|e| cluster::Endpoint {
                name: e.name,
                base_url: e.base_url,
            })
            .collect();
        let selected = cluster::select(&endpoints, parsed.cluster.as_deref()).map_err(into_wit)?;
        let name = selected.map(|i| endpoints[i].name.clone());
        let mut client = api::Client::for_call(endpoints, selected)
            .with_wait_limit(std::time::Duration::from_secs(u64::from(
                ctx.wait_limit_secs,
            )))
            .with_progress(report_progress);
        let out = (tool.run)(&mut client, parsed.args).map_err(into_wit)?;
        let out = tool::with_cluster(out, name.as_deref());
        Ok(wit::ToolOutput {
            structured: out.structured.to_string(),
            summary: out.summary,
            is_error: false,
        })
    }
}

/// Sends one progress report to the host (the WIT `progress` import).
/// Natively there is no host: tools run against fakes there, which do not
/// call this. Built with the feature `no-progress-import`, the component
/// drops its reports and so does not import `progress` at all: a build
/// for hosts that link only WASI (the stock wasmtime CLI).
fn report_progress(progress: f64, total: Option<f64>, message: &str) {
    #[cfg(all(target_arch = "wasm32", not(feature = "no-progress-import")))]
    bindings::pve_mcp::guest::progress::report(progress, total, message);
    #[cfg(any(not(target_arch = "wasm32"), feature = "no-progress-import"))]
    let _ = (progress, total, message);
}

fn into_wit(e: error::ToolError) -> wit::ToolError {
    match e {
        error::ToolError::UnknownTool(m) => wit::ToolError::UnknownTool(m),
        error::ToolError::InvalidArguments(m) => wit::ToolError::InvalidArguments(m),
        error::ToolError::Upstream(m) => wit::ToolError::Upstream(m),
        error::ToolError::Precondition(m) => wit::ToolError::Precondition(m),
        error::ToolError::Internal(m) => wit::ToolError::Internal(m),
    }
}

/// A declared route as the WIT `route` record carries it.
fn wit_route(r: &route::Route) -> wit::Route {
    wit::Route {
        method: r.method.to_owned(),
        path: r.path.to_owned(),
        params: r
            .params
            .iter()
            .map(|p| wit::Param {
                name: p.name.to_owned(),
                argument: p.argument.map(str::to_owned),
                otherwise: match p.otherwise {
                    route::Otherwise::Absent => wit::ParamValue::Absent,
                    route::Otherwise::OneOf(values) => {
                        wit::ParamValue::OneOf(values.iter().map(|v| (*v).to_owned()).collect())
                    }
                    route::Otherwise::Free(kind) => wit::ParamValue::Free(match kind {
                        route::Kind::Boolean => wit::ValueKind::Boolean,
                        route::Kind::Integer => wit::ValueKind::Integer,
                        route::Kind::Text(max) => wit::ValueKind::Text(max),
                    }),
                    route::Otherwise::Answered(field) => {
                        wit::ParamValue::Answered(field.to_owned())
                    }
                },
            })
            .collect(),
        entries: r.entries.map(str::to_owned),
        once: r.once,
        when: r.when.map(|(argument, value)| wit::RouteCondition {
            argument: argument.to_owned(),
            value: value.to_owned(),
        }),
    }
}
