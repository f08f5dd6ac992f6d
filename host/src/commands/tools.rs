//! `pve-mcp tools`: what the component offers, without any cluster.

use std::process::ExitCode;

use super::exit::failure;
use super::global::Global;
use crate::config::SandboxLimits;
use crate::sandbox::component::FirstCompile;
use crate::server::app::App;
use crate::tier::Tier;
use crate::tools::ToolInfo;

use serde_json::Value;

/// How `pve-mcp tools` prints the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A table for a terminal.
    Table,
    /// The MCP tool definitions, with what the host knows of each.
    Json,
    /// Each tool's routes.
    Routes,
    /// The tables the README and docs/actions.md hold.
    Markdown,
    /// Each tool's bytes in `tools/list`, with totals (`--sizes`).
    Sizes,
    /// The same as JSON (`--sizes --json`).
    SizesJson,
}

/// `pve-mcp tools`.
pub async fn run(global: &Global, format: Format) -> ExitCode {
    let app = match start_without_clusters(global).await {
        Ok(app) => app,
        Err(code) => return code,
    };
    if format == Format::Json {
        let tools: Vec<Value> = app.tools().iter().map(described).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&tools).unwrap_or_default()
        );
    } else if format == Format::Sizes || format == Format::SizesJson {
        let sizes = super::sizes::Sizes::of(app.tools());
        match format {
            Format::SizesJson => println!(
                "{}",
                serde_json::to_string_pretty(&sizes.to_json()).unwrap_or_default()
            ),
            _ => print!("{}", sizes.table()),
        }
    } else if format == Format::Markdown {
        print!("{}", markdown(app.tools()));
    } else if format == Format::Routes {
        print!("{}", route_table(app.tools()));
    } else {
        print!("{}", tool_table(&app));
    }
    ExitCode::SUCCESS
}

/// Each tool with the writes it may send, one route per line with every
/// parameter it may carry (`name=<argument>`: the call's argument;
/// `a|b`: one of these; `<kind>`: a value the tool works out); a tool with
/// none sends only GETs.
pub fn route_table(tools: &[ToolInfo]) -> String {
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let mut out = format!("{:width$}  ROUTES\n", "TOOL");
    for tool in tools.iter() {
        let mut routes = tool.routes.iter().map(|r| {
            if r.is_call_request() {
                format!(
                    "{r} (the call's own request, normalised by the host; nothing else)  \
                     params: {}",
                    r.params()
                )
            } else {
                let params = r.params().to_string();
                let params = if params.is_empty() {
                    "none".into()
                } else {
                    params
                };
                let once = if r.is_once() { " (once per call)" } else { "" };
                format!("{r}{once}  params: {params}")
            }
        });
        let first = routes
            .next()
            .unwrap_or_else(|| "- (reads only: GET under /api2/json/, no guarded read)".into());
        out.push_str(&format!("{:width$}  {first}\n", tool.name));
        for route in routes {
            out.push_str(&format!("{:width$}  {route}\n", ""));
        }
    }
    out
}

/// The component alone, for commands that only need its tool list: no
/// cluster, so every request it might make is denied.
pub async fn start_without_clusters(global: &Global) -> Result<App, ExitCode> {
    App::start(
        &[],
        &SandboxLimits::default(),
        &global.component(),
        &global.cache(),
        FirstCompile::Optimised,
    )
    .await
    .map_err(|e| failure(&e))
}

/// A plain-text table of the tools, with the tier the host gives each
/// (what it may send, never only what it claims) and whether it may wait
/// for Proxmox tasks (up to `sandbox.max_wait_secs`).
pub fn tool_table(app: &App) -> String {
    let tools = app.tools();
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let tiers = tools
        .iter()
        .map(|t| tier_text(t).len())
        .max()
        .unwrap_or(4)
        .max(11);
    let sets = tools
        .iter()
        .map(|t| t.toolset.len())
        .max()
        .unwrap_or(7)
        .max(7);
    let mut out = format!(
        "{:width$}  {:sets$}  {:tiers$}  {:5}  {}\n",
        "TOOL", "TOOLSET", "TIER", "WAITS", "WHAT IT DOES"
    );
    for tool in tools.iter() {
        let waits = if tool.waits { "yes" } else { "-" };
        out.push_str(&format!(
            "{:width$}  {:sets$}  {:tiers$}  {waits:5}  {}\n",
            tool.name,
            tool.toolset,
            tier_text(tool),
            tool.title
        ));
    }
    let opt_in: std::collections::BTreeSet<&str> = tools
        .iter()
        .map(|t| t.toolset.as_str())
        .filter(|s| !crate::tools::offered_by_default(s))
        .collect();
    if !opt_in.is_empty() {
        let names: Vec<&str> = opt_in.into_iter().collect();
        out.push_str(&format!(
            "\nOffered only when named (--toolsets default,NAME, or all): {}.\n",
            names.join(", ")
        ));
    }
    out
}

/// A tool's MCP definition, as `tools/list` gives it, plus what the host
/// knows of it: the `tier` it gives the tool, its `toolset` and whether
/// that is offered by `default`, whether it `waits` for
/// Proxmox tasks, its `routes`, and the `privileges` and `reads` it
/// declares.
pub fn described(tool: &ToolInfo) -> Value {
    let mut out =
        serde_json::to_value(crate::server::mcp::to_mcp_tool(tool, 1)).unwrap_or_default();
    if let Value::Object(o) = &mut out {
        o.insert("tier".into(), Tier::of(tool).as_str().into());
        o.insert("toolset".into(), tool.toolset.clone().into());
        o.insert(
            "default".into(),
            crate::tools::offered_by_default(&tool.toolset).into(),
        );
        // What can make a call of it destructive, when its own tier is not.
        o.insert("destructive_with".into(), raised(tool).into());
        o.insert("waits".into(), tool.waits.into());
        let routes: Vec<String> = tool.routes.iter().map(|r| r.to_string()).collect();
        o.insert("routes".into(), routes.into());
        let params: Vec<String> = tool.routes.iter().map(|r| r.params().to_string()).collect();
        o.insert("route_params".into(), params.into());
        let privileges = serde_json::to_value(&tool.privileges).unwrap_or_default();
        o.insert("privileges".into(), privileges);
        o.insert("reads".into(), tool.reads.clone().into());
    }
    out
}

/// The arguments every write tool takes, which the tables leave out.
const SHARED_ARGUMENTS: &[&str] = &["cluster", "dry_run", "wait", "wait_timeout", "confirm"];

/// The tool tables of the README and docs/actions.md: the read tools, with
/// the GETs they declare, then the tools that write, with what they may
/// send and their tier; each with its own arguments and the privileges it
/// declares. Generated, so the docs cannot drift from the component: a test
/// fails when they differ.
pub fn markdown(tools: &[ToolInfo]) -> String {
    let (reads, writes): (Vec<&ToolInfo>, Vec<&ToolInfo>) =
        tools.iter().partition(|t| Tier::of(t) == Tier::Read);
    let mut out = String::from(
        "Read tools (the default policy runs these; those of an opt-in toolset once it is \
         offered):\n\n",
    );
    out.push_str(
        "| tool | toolset | answers | arguments | reads | privileges |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for tool in reads {
        let asks: Vec<String> = tool
            .reads
            .iter()
            .map(|r| format!("`GET {}`", cell(r)))
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            tool.name,
            toolset_cell(tool),
            cell(&tool.title),
            arguments(tool),
            if asks.is_empty() {
                "nothing from Proxmox".to_string()
            } else {
                asks.join("<br>")
            },
            privileges(tool),
        ));
    }
    out.push_str("\nTools that write (each needs its own policy rule):\n\n");
    out.push_str(
        "| tool | toolset | does | arguments | sends | privileges | tier |\n| --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for tool in writes {
        let sends: Vec<String> = tool
            .routes
            .iter()
            .map(|r| {
                if r.is_call_request() {
                    "the call's own request".to_string()
                } else {
                    format!("`{}`", r.to_string().replacen("/api2/json", "", 1))
                }
            })
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            tool.name,
            toolset_cell(tool),
            cell(&tool.title),
            arguments(tool),
            sends.join("<br>"),
            privileges(tool),
            tier_text(tool),
        ));
    }
    out
}

/// A tool's toolset, marked when a server offers it only when named.
fn toolset_cell(tool: &ToolInfo) -> String {
    if crate::tools::offered_by_default(&tool.toolset) {
        format!("`{}`", tool.toolset)
    } else {
        format!("`{}` (opt-in)", tool.toolset)
    }
}

/// The arguments whose values can make a call of a write tool
/// destructive (empty when its own tier already is).
fn raised(tool: &ToolInfo) -> Vec<String> {
    match Tier::of(tool) {
        Tier::Write => crate::tier::raised_by(tool),
        _ => Vec::new(),
    }
}

/// The tool's tier, and what raises a call of it: `write; destructive
/// with prune`.
fn tier_text(tool: &ToolInfo) -> String {
    let raised = raised(tool);
    match raised.is_empty() {
        true => Tier::of(tool).as_str().to_string(),
        false => format!("write; destructive with {}", raised.join(", ")),
    }
}

/// The tool's own arguments, required ones first and in bold.
fn arguments(tool: &ToolInfo) -> String {
    let required: Vec<&str> = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<(bool, &str)> = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|n| !SHARED_ARGUMENTS.contains(n))
        .map(|n| (!required.contains(&n), n))
        .collect();
    names.sort();
    let shown: Vec<String> = names
        .iter()
        .map(|(optional, n)| match optional {
            false => format!("**`{n}`**"),
            true => format!("`{n}`"),
        })
        .collect();
    if shown.is_empty() {
        "-".into()
    } else {
        shown.join(", ")
    }
}

fn privileges(tool: &ToolInfo) -> String {
    if tool.privileges.is_empty() {
        return "none".into();
    }
    let shown: Vec<String> = tool
        .privileges
        .iter()
        .map(|p| {
            let names: Vec<String> = p.any_of.iter().map(|n| format!("`{}`", cell(n))).collect();
            format!("{} on `{}`", names.join(" or "), cell(&p.path))
        })
        .collect();
    shown.join("; ")
}

/// Text made safe for one table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
