//! MCP over rmcp: the server handler and the mapping from call outcomes to
//! MCP results.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use crate::app::{App, Grant};
use crate::caller::Caller;
use crate::policy::Decision;
use crate::tools::{CallOutcome, ToolInfo};

const INSTRUCTIONS: &str = "Read-only access to Proxmox VE. Start with pve_list_vms (guests, filterable by node, \
vm_type, status, name or tag) or pve_get_cluster_status (quorum and nodes); then drill into one guest with \
pve_get_vm_status, pve_get_vm_config, pve_list_snapshots, pve_get_vm_metrics or pve_get_vm_ips (node and \
vm_type are looked up from the vmid when omitted). Tasks: pve_list_tasks, pve_get_task_status, \
pve_get_task_log. Lists are bounded: follow next_offset to page. Every tool takes an optional cluster \
(see pve_list_clusters). When a call fails with 403, pve_check_permissions explains which privilege is \
missing. Tool errors say what went wrong and what to try next.";

/// The MCP server: a thin layer over [`App`].
#[derive(Clone)]
pub struct McpServer {
    app: Arc<App>,
    tools: Arc<Vec<Tool>>,
}

impl McpServer {
    /// A server for this host.
    pub fn new(app: Arc<App>) -> Self {
        let tools = app.tools().iter().map(to_mcp_tool).collect();
        Self {
            app,
            tools: Arc::new(tools),
        }
    }

    /// Serves MCP on stdin/stdout until the client closes stdin.
    pub async fn serve_stdio(self) -> anyhow::Result<()> {
        // Pipes (how MCP clients spawn servers) are driven by the I/O
        // reactor; plain stdio would hand every read and write to a blocking
        // thread, ~75 µs per call. Anything else falls back to plain stdio.
        let app = self.app.clone();
        let running = self.serve(rmcp::transport::stdio_pipes()).await?;
        crate::policy::reload::notify_list_changes(
            app.policy().clone(),
            Arc::from(app.tools().to_vec()),
            running.peer().clone(),
        );
        running.waiting().await?;
        Ok(())
    }
}

/// The MCP form of a tool.
pub fn to_mcp_tool(tool: &ToolInfo) -> Tool {
    let mut out = Tool::new(
        tool.name.clone(),
        tool.description.clone(),
        Arc::new(tool.input_schema.clone()),
    )
    .with_title(tool.title.clone())
    .with_annotations(
        ToolAnnotations::with_title(tool.title.clone())
            .read_only(tool.annotations.read_only)
            .destructive(tool.annotations.destructive)
            .idempotent(tool.annotations.idempotent)
            .open_world(tool.annotations.open_world),
    );
    if let Some(schema) = &tool.output_schema {
        out = out.with_raw_output_schema(Arc::new(schema.clone()));
    }
    out
}

/// The MCP result for an outcome; `None` for an unknown tool, which is a
/// protocol error rather than a result.
pub fn to_call_result(outcome: CallOutcome) -> Option<CallToolResult> {
    match outcome {
        CallOutcome::Output {
            structured,
            summary,
            is_error: false,
        } => {
            // The summary reads well in clients that show text only; the JSON
            // block is what the spec asks for next to structuredContent.
            let mut result = CallToolResult::structured(structured);
            result.content.insert(0, ContentBlock::text(summary));
            Some(result)
        }
        CallOutcome::Output { summary, .. } => {
            Some(CallToolResult::error(vec![ContentBlock::text(summary)]))
        }
        CallOutcome::Failed { kind, message } => {
            let text = match kind {
                crate::tools::FailureKind::InvalidArguments => {
                    format!("Invalid arguments: {message}")
                }
                _ => message,
            };
            Some(CallToolResult::error(vec![ContentBlock::text(text)]))
        }
        CallOutcome::UnknownTool(_) => None,
    }
}

fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown tool: {name}"), None)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new("pve-mcp", env!("CARGO_PKG_VERSION"))
                .with_title("Proxmox VE (sandboxed)"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Hidden tools are left out; the policy can change on reload, so
        // this is decided per listing.
        let policy = self.app.policy().policy();
        let visible = self
            .tools
            .iter()
            .zip(self.app.tools())
            .filter(|(_, info)| policy.visible(info))
            .map(|(tool, _)| tool.clone())
            .collect();
        Ok(ListToolsResult::with_all_items(visible))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.app.tool(&request.name) else {
            return Err(unknown_tool(&request.name));
        };
        let caller = Caller::from_context(&context);
        let arguments = request.arguments.unwrap_or_default();
        let report = match self.app.decide(&caller, tool, &arguments).await {
            Decision::Allow {
                rule,
                may_write,
                permit,
            } => {
                let grant = Grant {
                    rule,
                    may_write,
                    permit,
                };
                // Dropping the call future on cancellation drops its store
                // (so the instance) and its in-flight upstream request.
                tokio::select! {
                    report = self.app.run(&caller, &request.name, &arguments, grant) => report,
                    _ = context.ct.cancelled() => {
                        tracing::info!(tool = %request.name, "call cancelled by the client");
                        return Err(ErrorData::internal_error("request cancelled", None));
                    }
                }
            }
            // The approval flow replaces this arm; until then a call that
            // needs a person's approval is refused, saying so.
            decision @ Decision::RequireApproval { .. } => {
                self.app
                    .refuse(&caller, &request.name, &arguments, decision)
                    .await
            }
            decision => {
                self.app
                    .refuse(&caller, &request.name, &arguments, decision)
                    .await
            }
        };
        to_call_result(report.outcome)
            .map(Into::into)
            .ok_or_else(|| unknown_tool(&request.name))
    }
}
