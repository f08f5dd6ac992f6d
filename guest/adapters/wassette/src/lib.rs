//! pve-mcp's tools as wassette sees tools: a component that imports
//! `pve-mcp:guest/tools` (the tool component's export, `wit/pve-tools.wit`)
//! and exports one root-level function per tool, with typed parameters,
//! plus `pve-call(name, arguments-json)`. Composed with the WASI-only
//! build of the tool component (`compose.sh`), it is
//! `dist/pve_tools_wassette.wasm`: see docs/hosting.md.
//!
//! Its WIT (`wit/world.wit`), the exports' glue (`src/generated.rs`) and
//! the descriptions wassette shows (`package-docs.json`) are generated from
//! the tool registry by `tests/generate.rs`; `UPDATE_WIT=1 cargo test -p
//! pve-mcp-wassette` rewrites them, and the test fails while they are stale.
//!
//! The call's endpoint comes from the environment wassette grants:
//! `PVE_MCP_PROXY_URL`, the base URL of `pve-mcp egress-proxy` (with its
//! token as a path prefix, `http://127.0.0.1:8007/token/TOKEN`), never the
//! Proxmox token, which only the proxy holds. `PVE_MCP_WAIT_LIMIT_SECS`
//! (default 60) is the longest a call waits for a Proxmox task.
//!
//! wassette shows a WIT `err` as a successful call (`isError: false`), so
//! every error text starts with `ERROR:` and names the tool and why.

// Natively nothing calls the exports (the export macro is expanded only for
// wasm32), so the glue looks unused there.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

// A tool's typed export takes one parameter per argument.
#[allow(clippy::too_many_arguments)]
mod bindings {
    wit_bindgen::generate!({
        path: ["../../../wit", "wit"],
        world: "pve-mcp:wassette/pve-wassette",
        // The imported interface comes from the tool component's own WIT.
        generate_all,
    });
}

#[allow(clippy::too_many_arguments)]
#[rustfmt::skip]
mod generated;

use bindings::pve_mcp::guest::tools;
use serde_json::{Map, Value};

/// The environment variable with the egress proxy's base URL.
pub const PROXY_URL_VAR: &str = "PVE_MCP_PROXY_URL";
/// The environment variable with the longest task wait, in seconds.
pub const WAIT_LIMIT_VAR: &str = "PVE_MCP_WAIT_LIMIT_SECS";
const DEFAULT_WAIT_LIMIT_SECS: u32 = 60;

// Natively the export macro is not expanded (its symbols cannot be linked
// into a native library), so the type looks unused there.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Component;

#[cfg(target_arch = "wasm32")]
bindings::export!(Component with_types_in bindings);

/// A tool's arguments object, built from the typed parameters: an absent
/// optional parameter is left out.
#[derive(Default)]
struct Args {
    map: Map<String, Value>,
    bad: Option<String>,
}

impl Args {
    fn new() -> Args {
        Args::default()
    }

    fn put(&mut self, key: &str, value: impl Into<Value>) {
        self.map.insert(key.to_owned(), value.into());
    }

    fn opt<T: Into<Value>>(&mut self, key: &str, value: Option<T>) {
        if let Some(value) = value {
            self.put(key, value);
        }
    }

    /// A parameter passed as JSON text (an object, an array, a free-form
    /// value): parsed here so a mistake names the parameter.
    fn json(&mut self, key: &str, text: String) {
        match serde_json::from_str::<Value>(&text) {
            Ok(value) => self.put(key, value),
            Err(e) => {
                self.bad.get_or_insert(format!(
                    "`{}` must be JSON text ({e}): {text}",
                    key.replace('_', "-")
                ));
            }
        }
    }

    fn opt_json(&mut self, key: &str, text: Option<String>) {
        if let Some(text) = text {
            self.json(key, text);
        }
    }

    /// A parameter that is an integer or a string (`since`: epoch seconds
    /// or ISO-8601): digits go as a number, anything else as a string.
    fn int_or_string(&mut self, key: &str, text: String) {
        match text.trim().parse::<i64>() {
            Ok(n) => self.put(key, n),
            Err(_) => self.put(key, text),
        }
    }

    fn opt_int_or_string(&mut self, key: &str, text: Option<String>) {
        if let Some(text) = text {
            self.int_or_string(key, text);
        }
    }

    fn call(self, name: &str) -> Result<String, String> {
        if let Some(bad) = self.bad {
            return Err(format!(
                "ERROR: {} failed: invalid arguments: {bad}",
                export_name(name)
            ));
        }
        call(name, &Value::Object(self.map).to_string())
    }
}

/// `pve_list_vms` -> `pve-list-vms`, the name wassette shows.
fn export_name(tool: &str) -> String {
    tool.replace('_', "-")
}

/// The call context from the environment wassette grants.
fn context() -> Result<tools::CallContext, String> {
    let base = std::env::var(PROXY_URL_VAR).ok().filter(|v| !v.is_empty());
    let Some(base) = base else {
        return Err(format!(
            "{PROXY_URL_VAR} is not set: run `pve-mcp egress-proxy` and give this component its \
             URL (`wassette permission grant environment-variable <component> {PROXY_URL_VAR}`, \
             with the variable set in wassette's environment)"
        ));
    };
    let wait_limit_secs = std::env::var(WAIT_LIMIT_VAR)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_WAIT_LIMIT_SECS);
    Ok(tools::CallContext {
        endpoints: vec![tools::Endpoint {
            name: "default".to_owned(),
            base_url: base.trim_end_matches('/').to_owned(),
        }],
        request_id: "wassette".to_owned(),
        wait_limit_secs,
    })
}

/// Runs `tool` with `arguments` (a JSON object as text): its structured
/// answer as JSON text, or an error text that says it failed and why.
fn call(tool: &str, arguments: &str) -> Result<String, String> {
    let shown = export_name(tool);
    let ctx = context().map_err(|e| format!("ERROR: {shown} failed: {e}"))?;
    let base = ctx.endpoints[0].base_url.clone();
    match tools::call_tool(&ctx, tool, arguments) {
        Ok(out) if !out.is_error => Ok(out.structured),
        Ok(out) => Err(redact(
            format!("ERROR: {shown} failed: {}\n{}", out.summary, out.structured),
            &base,
        )),
        Err(e) => Err(redact(
            format!("ERROR: {shown} failed: {}", describe(e)),
            &base,
        )),
    }
}

/// `text` with the egress proxy's token (a path segment after `/token/`
/// in the base URL) left out, as an error message may quote the URL.
fn redact(text: String, base: &str) -> String {
    let Some(at) = base.find("/token/") else {
        return text;
    };
    let rest = &base[at + "/token/".len()..];
    let after = rest.find('/').map_or("", |i| &rest[i..]);
    let shown = format!("{}/token/<redacted>{after}", &base[..at]);
    text.replace(base, &shown)
}

fn describe(e: tools::ToolError) -> String {
    match e {
        tools::ToolError::UnknownTool(name) => format!("no tool named {name:?}"),
        tools::ToolError::InvalidArguments(m) => format!("invalid arguments: {m}"),
        tools::ToolError::Upstream(m) => format!("the Proxmox API failed: {m}"),
        tools::ToolError::Precondition(m) => {
            format!("not possible in the current state (nothing was written): {m}")
        }
        tools::ToolError::Internal(m) => format!("internal error in the tool component: {m}"),
    }
}

/// `pve-call`: any tool by its pve-mcp name (`pve_list_vms`) with its
/// arguments as a JSON object in text.
fn call_by_name(name: String, arguments_json: String) -> Result<String, String> {
    let tool = name.replace('-', "_");
    let arguments = if arguments_json.trim().is_empty() {
        "{}".to_owned()
    } else {
        arguments_json
    };
    call(&tool, &arguments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxy_token_is_left_out_of_error_texts() {
        let base = "http://127.0.0.1:8007/token/abcdefghijklmnop1234";
        let text = format!("ERROR: the request to {base} was refused");
        assert_eq!(
            redact(text, base),
            "ERROR: the request to http://127.0.0.1:8007/token/<redacted> was refused"
        );
        let base = "http://127.0.0.1:8007/token/abcdefghijklmnop1234/cluster/lab";
        assert_eq!(
            redact(format!("at {base}/api2/json"), base),
            "at http://127.0.0.1:8007/token/<redacted>/cluster/lab/api2/json"
        );
        assert_eq!(redact("x".into(), "http://127.0.0.1:8007"), "x");
    }

    #[test]
    fn export_names_are_kebab_case() {
        assert_eq!(export_name("pve_list_vms"), "pve-list-vms");
    }
}
