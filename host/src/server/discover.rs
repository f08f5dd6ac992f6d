//! The discovery pair, listed instead of the catalog when the toolset
//! `discover` is enabled: `pve_search_tools` finds the tools a caller is
//! offered by the words of their name, title and description, and
//! `pve_call_tool` runs one by name. A call through `pve_call_tool` is the
//! named tool's call in every respect (its policy rule, rate limit,
//! approval, tier, routes and audit record, which names both); the pair
//! itself reads nothing from Proxmox.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::exposure::View;
use crate::policy::Policy;
use crate::tier::Tier;
use crate::tools::{JsonObject, ToolInfo};

/// Finds tools.
pub const SEARCH: &str = crate::tools::SEARCH_TOOL;
/// Runs one.
pub const CALL: &str = crate::tools::CALL_TOOL;

/// Most tools one search answers with.
const LIMIT_MAX: u64 = 50;
/// Answered when the search gives no `limit`.
const LIMIT_DEFAULT: u64 = 10;
/// Longest query, in bytes.
const QUERY_MAX: usize = 200;

fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

/// The pair's MCP definitions.
pub fn definitions() -> Vec<Tool> {
    let search = Tool::new(
        SEARCH,
        "Find this server's Proxmox tools by words of their name, title or description (all \
         must match; none lists all). Returns each tool's name, title, description, tier, \
         toolset and inputSchema; run one with pve_call_tool.",
        schema(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to match, e.g. \"snapshot\""},
                "toolset": {"type": "string", "description": "Only this toolset"},
                "limit": {"type": "integer", "minimum": 1, "maximum": LIMIT_MAX,
                          "description": "Most tools returned (default 10)"}
            },
            "additionalProperties": false
        })),
    )
    .with_title("Find tools")
    .with_annotations(
        ToolAnnotations::with_title("Find tools")
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    );
    let call = Tool::new(
        CALL,
        "Run a tool pve_search_tools found, by name, with its arguments. It runs as that tool: \
         its policy, approvals, limits and result.",
        schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool, e.g. pve_list_vms"},
                "arguments": {"type": "object", "description": "Its arguments"}
            },
            "required": ["name"],
            "additionalProperties": false
        })),
    )
    .with_title("Run a tool")
    .with_annotations(
        ToolAnnotations::with_title("Run a tool")
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(true),
    );
    vec![search, call]
}

/// An invalid-arguments answer naming the field and the fix.
fn invalid(field: &str, problem: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "Invalid arguments: {field}: {problem}"
    ))])
}

/// `pve_search_tools`: the tools `view` offers, `policy` lists and the
/// caller has a credential for (`usable`) that match `arguments`.
pub fn search(
    tools: &[ToolInfo],
    view: View<'_>,
    policy: &Policy,
    usable: impl Fn(&ToolInfo) -> bool,
    arguments: &JsonObject,
) -> CallToolResult {
    if let Some(key) = arguments
        .keys()
        .find(|k| !["query", "toolset", "limit"].contains(&k.as_str()))
    {
        return invalid(
            key,
            "unknown argument; valid arguments are limit, query, toolset",
        );
    }
    let query = match arguments.get("query") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(q)) if q.len() <= QUERY_MAX => q.to_lowercase(),
        Some(Value::String(_)) => {
            return invalid(
                "query",
                &format!("is over {QUERY_MAX} bytes; use a few words"),
            );
        }
        Some(_) => return invalid("query", "must be a string of words, e.g. \"snapshot\""),
    };
    let toolset = match arguments.get("toolset") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return invalid("toolset", "must be a toolset's name, e.g. \"guests\""),
    };
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => LIMIT_DEFAULT,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=LIMIT_MAX).contains(&n) => n,
            _ => {
                return invalid(
                    "limit",
                    &format!("must be an integer from 1 to {LIMIT_MAX}"),
                );
            }
        },
    };
    let words: Vec<&str> = query.split_whitespace().collect();
    let found: Vec<&ToolInfo> = tools
        .iter()
        .filter(|t| view.offers(t).is_ok() && policy.visible(t) && usable(t))
        .filter(|t| toolset.is_none_or(|s| t.toolset == s))
        .filter(|t| {
            let text = format!("{} {} {}", t.name, t.title, t.description).to_lowercase();
            words.iter().all(|w| text.contains(w))
        })
        .collect();
    let shown: Vec<Value> = found
        .iter()
        .take(limit as usize)
        .map(|t| {
            json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "tier": Tier::of(t).as_str(),
                "toolset": t.toolset,
                "inputSchema": t.input_schema,
            })
        })
        .collect();
    let summary = match found.len() {
        0 => "No tool matches; try fewer words, or none to list them all.".to_string(),
        n => format!(
            "{n} tool(s) match; {} shown. Run one with pve_call_tool {{\"name\": ..., \"arguments\": {{...}}}}.",
            shown.len()
        ),
    };
    let mut result = CallToolResult::structured(json!({
        "tools": shown,
        "total": found.len(),
        "toolsets": view.toolsets(tools),
    }));
    result.content.insert(0, ContentBlock::text(summary));
    result
}

/// `pve_call_tool`'s target: the tool's name and its arguments, or the
/// answer that says what is wrong with them.
pub fn target(arguments: &JsonObject) -> Result<(String, JsonObject), CallToolResult> {
    if let Some(key) = arguments.keys().find(|k| *k != "name" && *k != "arguments") {
        return Err(invalid(
            key,
            "unknown argument; valid arguments are arguments, name",
        ));
    }
    let name = match arguments.get("name") {
        Some(Value::String(n)) if n != SEARCH && n != CALL => n.clone(),
        Some(Value::String(n)) => {
            return Err(invalid(
                "name",
                &format!("{n} is this pair's own; name a tool it finds"),
            ));
        }
        _ => {
            return Err(invalid(
                "name",
                "missing or not a string; pass a tool's name from pve_search_tools",
            ));
        }
    };
    let args = match arguments.get("arguments") {
        None | Some(Value::Null) => JsonObject::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            return Err(invalid(
                "arguments",
                "must be an object of the tool's arguments",
            ));
        }
    };
    Ok((name, args))
}

/// The answer when `pve_call_tool` names no tool of this server.
pub fn no_such_tool(name: &str) -> CallToolResult {
    let shown: String = name.chars().take(64).collect();
    CallToolResult::error(vec![ContentBlock::text(format!(
        "No tool is named {shown:?}; pve_search_tools finds the tools this server offers."
    ))])
}
