//! The component's tool descriptors, checked once at load and turned into
//! the host's [`ToolInfo`]: a name that MCP allows and no other tool has,
//! schemas that parse, routes the host can bind.

use super::bindings::exports::pve_mcp::guest::tools as guest;
use crate::route::Route;
use crate::route::params::{Otherwise, ParamRule, Params, ValueKind};
use crate::tools::{Annotations, Privilege, ToolInfo, parse_schema, valid_tool_name};

/// The component's tools, validated, in the order it lists them.
pub fn tool_infos(descriptors: Vec<guest::ToolDescriptor>) -> anyhow::Result<Vec<ToolInfo>> {
    let mut tools: Vec<ToolInfo> = Vec::with_capacity(descriptors.len());
    for d in descriptors {
        if !valid_tool_name(&d.name) {
            anyhow::bail!(
                "the component declares a tool with an invalid name {:?} (1-64 of A-Z a-z 0-9 _ - .)",
                d.name
            );
        }
        if d.name == crate::tools::SEARCH_TOOL || d.name == crate::tools::CALL_TOOL {
            anyhow::bail!(
                "the component declares tool {}, a name the host keeps for its discovery pair",
                d.name
            );
        }
        if tools.iter().any(|t| t.name == d.name) {
            anyhow::bail!("the component declares tool {} twice", d.name);
        }
        if !crate::tools::valid_toolset(&d.toolset) || d.toolset == crate::tools::DISCOVER {
            anyhow::bail!(
                "the component puts tool {} in the toolset {:?}, which is not 1-32 of a-z 0-9 - \
                 starting with a letter, or is the host's own `discover`",
                d.name,
                d.toolset
            );
        }
        tools.push(tool_info(d)?);
    }
    Ok(tools)
}

fn tool_info(d: guest::ToolDescriptor) -> anyhow::Result<ToolInfo> {
    Ok(ToolInfo {
        input_schema: parse_schema(&d.name, "input schema", &d.input_schema)?,
        output_schema: d
            .output_schema
            .as_deref()
            .map(|s| parse_schema(&d.name, "output schema", s))
            .transpose()?,
        annotations: Annotations {
            read_only: d.annotations.read_only,
            destructive: d.annotations.destructive,
            idempotent: d.annotations.idempotent,
            open_world: d.annotations.open_world,
        },
        routes: d
            .routes
            .into_iter()
            .map(route)
            .collect::<Result<_, _>>()
            .map_err(|problem| {
                anyhow::anyhow!(
                    "tool {:?} declares a route the host refuses: {problem}",
                    d.name
                )
            })?,
        waits: d.waits,
        reads: d.reads,
        privileges: d
            .privileges
            .into_iter()
            .map(|p| Privilege {
                path: p.path,
                any_of: p.any_of,
            })
            .collect(),
        toolset: d.toolset,
        name: d.name,
        title: d.title,
        description: d.description,
    })
}

/// A declared route, its parameters included.
fn route(r: guest::Route) -> Result<Route, String> {
    let route = Route::parse(&r.method, &r.path)?;
    let rules = r
        .params
        .into_iter()
        .map(|p| ParamRule {
            name: p.name,
            argument: p.argument,
            otherwise: match p.otherwise {
                guest::ParamValue::Absent => Otherwise::Absent,
                guest::ParamValue::OneOf(values) => Otherwise::OneOf(values),
                guest::ParamValue::Free(kind) => Otherwise::Free(match kind {
                    guest::ValueKind::Boolean => ValueKind::Boolean,
                    guest::ValueKind::Integer => ValueKind::Integer,
                    guest::ValueKind::Text(max) => ValueKind::Text(max),
                }),
                guest::ParamValue::Answered(field) => Otherwise::Answered(field),
            },
        })
        .collect();
    let params = Params::parse(rules, r.entries)
        .map_err(|problem| format!("{} {}: {problem}", r.method, r.path))?;
    let route = route.with_params(params).sent_once(r.once);
    Ok(match r.when {
        Some(c) if c.argument.is_empty() || c.value.is_empty() => {
            return Err(format!(
                "{} {}: its condition names no argument or no value",
                r.method, r.path
            ));
        }
        Some(c) => route.applying_when(c.argument, c.value),
        None => route,
    })
}
