//! `pve-mcp call`: one tool call, as an agent would make it, printed as
//! the MCP result.

use std::process::ExitCode;

use super::exit::{config_failure, failure, usage_failure};
use super::global::Global;
use crate::caller::Caller;
use crate::server::app::App;
use crate::server::mcp::to_call_result;
use crate::tools::CallOutcome;

/// `pve-mcp call` against a configured cluster.
pub async fn run(global: &Global, tool: &str, raw_args: &str) -> ExitCode {
    let args = match parse_args(raw_args) {
        Ok(a) => a,
        Err(e) => return usage_failure(&e),
    };
    match start_configured(global).await {
        Ok(app) => print_call(&app, tool, &args).await,
        Err(code) => code,
    }
}

/// Loads the configuration and the policy and starts the host on them; a
/// failure has been reported and becomes the exit code.
async fn start_configured(global: &Global) -> Result<App, ExitCode> {
    let config = global.load_config().map_err(|e| config_failure(&e))?;
    crate::server::serving::start_app(&global.startup(), &config)
        .await
        .map_err(|e| failure(&e))
}

/// Runs a call and prints its result: the MCP `CallToolResult` as JSON on
/// stdout. Exit code 1 when the call failed.
pub async fn print_call(
    app: &App,
    tool: &str,
    args: &serde_json::Map<String, serde_json::Value>,
) -> ExitCode {
    if !app.has_tool(tool) {
        let names: Vec<&str> = app.tools().iter().map(|t| t.name.as_str()).collect();
        return usage_failure(&format!(
            "no tool named {tool:?}; the tools are: {}",
            names.join(", ")
        ));
    }
    let report = app.call(&Caller::stdio(), tool, args).await;
    let failed = report.outcome.is_error();
    match to_call_result(report.outcome) {
        Some(result) => println!(
            "{}",
            serde_json::to_string_pretty(&result).unwrap_or_default()
        ),
        None => return usage_failure(&format!("the component does not know tool {tool:?}")),
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Parses `--args`, with an error that says how to write it.
pub fn parse_args(raw: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!(
            "--args must be a JSON object, e.g. '{{\"vmid\": 100}}'; got {raw}"
        )),
        Err(e) => Err(format!(
            "--args is not valid JSON ({e}); write it as a JSON object, e.g. '{{\"vmid\": 100}}'"
        )),
    }
}

/// The message an outcome shows a person.
pub fn outcome_text(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::Output { summary, .. } => summary.clone(),
        CallOutcome::UnknownTool(name) => format!("unknown tool {name}"),
        CallOutcome::Failed { message, .. } => message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_errors_show_an_example() {
        assert!(parse_args("[1]").unwrap_err().contains("JSON object"));
        assert!(
            parse_args("{vmid: 1}")
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert_eq!(parse_args(r#"{"vmid": 100}"#).unwrap()["vmid"], 100);
    }
}
