//! MCP over rmcp: the server handler and the mapping from call outcomes to
//! MCP results.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::approval::Approvals;
use crate::caller::Caller;
use crate::sandbox::CallReport;
use crate::server::app::{App, Approver, Authorized};
use crate::server::call_slots::{CallSlots, StatelessSlots};
use crate::server::client_log::ClientLog;
use crate::server::discover;
use crate::server::reads::Reads;
use crate::tier::Tier;
use crate::tools::{CallOutcome, ToolInfo};

const INSTRUCTIONS: &str = "Proxmox VE: tools that read, and write tools that change the cluster where \
this server's policy allows (some once a person approves; dry_run shows a write's plan). Start with \
pve_list_vms or pve_get_cluster_status; node and vm_type are looked up from a vmid. Lists page with \
next_offset. After a 403, pve_check_permissions names the missing privilege. Errors say what to try next.";

/// The server's instructions: how to start, then the toolsets offered
/// (to a caller without a token of its own) and, with `discover`, how to
/// reach the rest.
fn instructions(app: &App) -> String {
    let view = app.exposure().view(None);
    let sets = view.toolsets(app.tools());
    let mut text = format!("{INSTRUCTIONS} Toolsets offered: {}.", sets.join(", "));
    let others = view.others(app.tools());
    if !others.is_empty() && !view.discover() {
        text.push_str(&format!(
            " Not offered here (an operator enables them): {}.",
            others.join(", ")
        ));
    }
    if view.discover() {
        text.push_str(&format!(
            " The tools are not listed: find them with {} (words of a name or purpose) and run \
             one with {}.",
            discover::SEARCH,
            discover::CALL
        ));
    }
    text
}

/// The MCP server: a thin layer over [`App`].
#[derive(Clone)]
pub struct McpServer {
    app: Arc<App>,
    tools: Arc<Vec<Tool>>,
    /// Over HTTP, the calls this session may run at once.
    call_slots: Option<CallSlots>,
    /// Over HTTP, the calls each token's requests without a session may
    /// run at once, together.
    stateless_slots: Option<Arc<StatelessSlots>>,
    approvals: Option<Arc<Approvals>>,
    /// The logging level the client set.
    client_log: ClientLog,
    /// What `initialize` tells the client: how to start, and the toolsets.
    instructions: Arc<String>,
    /// Long calls as tasks, for clients that declare the extension.
    tasks: Option<Arc<crate::server::tasks::Tasks>>,
}

impl McpServer {
    /// A server for this host.
    pub fn new(app: Arc<App>) -> Self {
        let clusters = app.gate().endpoints().len();
        let tools = app
            .tools()
            .iter()
            .map(|t| to_mcp_tool(t, clusters))
            .collect();
        let instructions = Arc::new(instructions(&app));
        Self {
            instructions,
            app,
            tools: Arc::new(tools),
            call_slots: None,
            stateless_slots: None,
            approvals: None,
            client_log: ClientLog::new(),
            tasks: None,
        }
    }

    /// Runs a waiting call as a task when its request declares the tasks
    /// extension (see [`crate::server::tasks`]).
    pub fn with_tasks(mut self, tasks: Arc<crate::server::tasks::Tasks>) -> Self {
        self.tasks = Some(tasks);
        self
    }

    /// Lets calls the policy marks `require_approval` run once a person
    /// approves them (without it they are refused).
    pub fn with_approvals(mut self, approvals: Arc<Approvals>) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// The handler for a new HTTP session: its own limit on calls at
    /// once, and its own logging level. Requests without a session (rmcp
    /// makes a handler for each) take their slots from `stateless`, shared
    /// per token.
    pub fn for_session(&self, call_limit: usize, stateless: Arc<StatelessSlots>) -> Self {
        let mut server = self.clone();
        server.call_slots = Some(CallSlots::new(call_limit));
        server.stateless_slots = Some(stateless);
        server.client_log = ClientLog::new();
        server
    }
}

/// The MCP form of a tool. Its hints are corrected by the host's tier, so
/// a client is never told a tool that may write is read-only, nor that a
/// destructive one is not.
pub fn to_mcp_tool(tool: &ToolInfo, clusters: usize) -> Tool {
    // The worst call's: a client may call it that way.
    let tier = Tier::worst(tool);
    let mut schema = tool.input_schema.clone();
    if clusters <= 1 {
        // With one cluster there is nothing to choose: `cluster` is still
        // accepted, but not offered to every conversation.
        unadvertise(&mut schema, crate::egress::CLUSTER_ARG);
    }
    let mut out = Tool::new(
        tool.name.clone(),
        tool.description.clone(),
        Arc::new(schema),
    )
    .with_title(tool.title.clone())
    // The title once, at the top: `annotations.title` is the older
    // place for it, and repeating it costs every conversation its
    // bytes.
    .with_annotations(annotations(tool, tier));
    if let Some(schema) = &tool.output_schema {
        out = out.with_raw_output_schema(Arc::new(schema.clone()));
    }
    out
}

/// The hints that differ from MCP's defaults (not read-only, destructive,
/// not idempotent, open world), corrected by the host's tier, and any that
/// corrects what the component claims; a read-only tool's other hints mean
/// nothing, so only it is sent.
fn annotations(tool: &ToolInfo, tier: Tier) -> ToolAnnotations {
    let claimed = tool.annotations;
    let mut hints = ToolAnnotations::new();
    if claimed.read_only && tier == Tier::Read {
        return hints.read_only(true);
    }
    if claimed.read_only {
        // It claims to be read-only and is not: say so outright.
        hints = hints.read_only(false);
    }
    if tier != Tier::Destructive {
        hints = hints.destructive(false);
    } else if !claimed.destructive {
        hints = hints.destructive(true);
    }
    if claimed.idempotent {
        hints = hints.idempotent(true);
    }
    if !claimed.open_world {
        hints = hints.open_world(false);
    }
    hints
}

/// Takes `name` out of an input schema's properties (and `required`).
fn unadvertise(schema: &mut crate::tools::JsonObject, name: &str) {
    if let Some(serde_json::Value::Object(properties)) = schema.get_mut("properties") {
        properties.remove(name);
    }
    if let Some(serde_json::Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r != name);
    }
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

/// The answer to a call over the session's limit: a tool error the agent
/// can act on.
fn session_busy(limit: usize, stateless: bool) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(busy_text(limit, stateless))])
}

/// Why a request over the call limit was turned away, and what to do.
fn busy_text(limit: usize, stateless: bool) -> String {
    let who = if stateless {
        "this token's requests without a session already run"
    } else {
        "this session already runs"
    };
    format!(
        "Too many calls at once: {who} {limit} (the server's \
         http.max_calls_per_session). Wait for one to finish, then retry."
    )
}

fn cancelled(tool: &str) -> ErrorData {
    tracing::info!(tool, "call cancelled by the client");
    ErrorData::internal_error("request cancelled", None)
}

/// The MCP answer for a finished (or refused) call.
fn result_of(report: CallReport, tool: &str) -> Result<CallToolResponse, ErrorData> {
    to_call_result(report.outcome)
        .map(Into::into)
        .ok_or_else(|| unknown_tool(tool))
}

fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown tool: {name}"), None)
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // logging: see crate::server::client_log
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .enable_completions()
                .enable_prompts()
                .enable_resources()
                .enable_tasks()
                .build(),
        )
        .with_server_info(
            Implementation::new("pve-mcp", env!("CARGO_PKG_VERSION"))
                .with_title("Proxmox VE (sandboxed)"),
        )
        .with_instructions(self.instructions.as_str())
    }

    /// Once a client (over stdio, or one HTTP session) is initialized, it is
    /// told whenever a policy reload changes which tools it may see.
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        crate::policy::reload::notify_list_changes(
            self.app.policy().clone(),
            // Shared: a copy per session held some 1.4 MB of schemas each.
            self.app.tools().clone(),
            context.peer,
        );
    }

    /// A 2026-07-28 client has no session to be told on: it opens
    /// `subscriptions/listen`, and tool list changes are all this server
    /// announces (resources and prompts follow the same reloads, and their
    /// lists are re-read with the tools').
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        let _ = requested;
        Some(
            rmcp::model::SubscriptionFilter::builder()
                .tools_list_changed()
                .build(),
        )
    }

    /// Sends `notifications/tools/list_changed` on the listen stream
    /// whenever a policy reload hides or shows a tool, until the client
    /// closes the stream.
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let mut watch = crate::policy::reload::ListWatch::new(
            self.app.policy().clone(),
            self.app.tools().clone(),
        );
        let wanted = context.accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                changed = watch.changed() => if !changed { return Ok(()) },
                _ = context.cancelled() => return Ok(()),
            }
            if !wanted {
                continue;
            }
            let changed = rmcp::model::ServerNotification::ToolListChangedNotification(
                rmcp::model::ToolListChangedNotification::default(),
            );
            if let Err(e) = context.sink().send(changed).await {
                tracing::debug!("could not tell the listener the tool list changed: {e}");
                return Ok(());
            }
        }
    }

    #[allow(deprecated)] // logging: see crate::server::client_log
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.client_log.set(request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        // Like tools/list: decided per listing and per caller.
        let reads = Reads::new(&self.app, Caller::from_context(&context));
        let listed = crate::server::resources::list(&reads);
        Ok(rmcp::model::ListResourcesResult::with_all_items(listed))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        let reads = Reads::new(&self.app, Caller::from_context(&context));
        let listed = crate::server::resources::templates(&reads);
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            listed,
        ))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let caller = Caller::from_context(&context);
        let _slot = self.read_slot(&caller)?;
        let reads = Reads::new(&self.app, caller);
        tokio::select! {
            read = crate::server::resources::read(&reads, &request.uri) => read.map(Into::into),
            _ = context.ct.cancelled() => Err(cancelled("resources/read")),
        }
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        let caller = Caller::from_context(&context);
        let _slot = self.read_slot(&caller)?;
        let reads = Reads::new(&self.app, caller);
        tokio::select! {
            info = crate::server::completions::complete(&reads, &request) => {
                info.map(rmcp::model::CompleteResult::new)
            }
            _ = context.ct.cancelled() => Err(cancelled("completion/complete")),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        let listed = crate::server::prompts::list();
        Ok(rmcp::model::ListPromptsResult::with_all_items(listed))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let reads = Reads::new(&self.app, Caller::from_context(&context));
        crate::server::prompts::get(&reads, &request).map(Into::into)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Hidden tools are left out; the policy can change on reload, so
        // this is decided per listing.
        // A caller's toolsets follow its token, the same for every request
        // of its session.
        let policy = self.app.policy().policy();
        let caller = Caller::from_context(&context);
        let view = self.app.exposure().view(caller.token.as_deref());
        let mut visible: Vec<Tool> = self
            .tools
            .iter()
            .zip(self.app.tools().iter())
            .filter(|(_, info)| {
                view.lists(info)
                    && policy.visible(info)
                    && self.app.has_credential(&caller, info, &policy)
            })
            .map(|(tool, _)| tool.clone())
            .collect();
        if view.discover() {
            visible.extend(discover::definitions());
        }
        Ok(ListToolsResult::with_all_items(visible))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let caller = Caller::from_context(&context);
        match &self.tasks {
            Some(tasks) => tasks.get(&self.app, &caller, &request.task_id).await,
            None => Err(crate::server::tasks::unknown_task(&request.task_id)),
        }
    }

    async fn update_task(
        &self,
        _request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Err(ErrorData::invalid_params(
            "tasks/update is not used here: pve-mcp's tasks never ask for input (their status \
             is never input_required). Poll tasks/get, or stop one with tasks/cancel.",
            None,
        ))
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = Caller::from_context(&context);
        match &self.tasks {
            Some(tasks) => tasks.cancel(&self.app, &caller, &request.task_id).await,
            None => Err(crate::server::tasks::unknown_task(&request.task_id)),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Traces: a disabled span unless [telemetry] is on.
        let span = crate::telemetry::span::call_span(&request, &context, self.app.redactor());
        if !crate::metrics::enabled() {
            return crate::telemetry::span::traced(span, self.call(request, context)).await;
        }
        let started = std::time::Instant::now();
        let (tool, transport) = (request.name.clone(), transport_of(&context));
        let version = protocol_version(&context);
        let result = crate::telemetry::span::traced(span, self.call(request, context)).await;
        let error = error_type(&result);
        crate::metrics::operation(
            "tools/call",
            &tool,
            error,
            transport,
            version.as_deref(),
            started.elapsed(),
        );
        result
    }
}

impl McpServer {
    /// A call slot for a resource read or a completion: they run tools,
    /// so over HTTP they count against the same limit as `tools/call`.
    fn read_slot(
        &self,
        caller: &Caller,
    ) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, ErrorData> {
        let Some(slots) = self.slots_for(caller) else {
            return Ok(None);
        };
        match slots.try_acquire() {
            Some(slot) => Ok(Some(slot)),
            None => Err(ErrorData::internal_error(
                busy_text(slots.limit(), caller.is_stateless()),
                None,
            )),
        }
    }

    /// The call slots a caller's requests take over HTTP: its session's,
    /// or (without a session) its token's shared ones; none over stdio.
    fn slots_for(&self, caller: &Caller) -> Option<CallSlots> {
        match &self.stateless_slots {
            Some(shared) if caller.is_stateless() => Some(shared.for_session(&caller.session)),
            _ => self.call_slots.clone(),
        }
    }
}

/// `network.transport`: `tcp` for a request that came over HTTP.
fn transport_of(context: &RequestContext<RoleServer>) -> crate::metrics::Transport {
    match context.extensions.get::<http::request::Parts>() {
        Some(_) => crate::metrics::Transport::Tcp,
        None => crate::metrics::Transport::Pipe,
    }
}

/// The negotiated protocol version, or (a request without a session)
/// the one its `MCP-Protocol-Version` header names.
fn protocol_version(context: &RequestContext<RoleServer>) -> Option<String> {
    if let Some(info) = context.peer.peer_info() {
        return Some(info.protocol_version.as_str().to_string());
    }
    let parts = context.extensions.get::<http::request::Parts>()?;
    let header = parts.headers.get("mcp-protocol-version")?;
    header.to_str().ok().map(str::to_string)
}

/// `error.type` of a `tools/call`'s answer.
fn error_type(result: &Result<CallToolResponse, ErrorData>) -> &'static str {
    match result {
        Ok(CallToolResponse::Complete(r)) => {
            crate::metrics::error_type(r.is_error == Some(true), None)
        }
        Ok(_) => "",
        Err(e) => crate::metrics::error_type(true, Some(e.code.0)),
    }
}

impl McpServer {
    /// `tools/call`, measured by [`ServerHandler::call_tool`].
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut caller = Caller::from_context(&context);
        let view = self.app.exposure().view(caller.token.as_deref());
        // A 2026-07-28 client's retry after it was asked inside the call.
        let retry = request
            .request_state
            .clone()
            .map(|state| crate::approval::Retry {
                state,
                responses: request.input_responses.clone(),
            });
        let (name, arguments) = match request.name.as_ref() {
            discover::SEARCH if view.discover() => {
                let arguments = request.arguments.unwrap_or_default();
                let policy = self.app.policy().policy();
                let usable = |t: &ToolInfo| self.app.has_credential(&caller, t, &policy);
                let found = discover::search(self.app.tools(), view, &policy, usable, &arguments);
                return Ok(found.into());
            }
            discover::CALL if view.discover() => {
                match discover::target(&request.arguments.unwrap_or_default()) {
                    Ok(target) => {
                        caller.via = Some(discover::CALL);
                        target
                    }
                    Err(answer) => return Ok(answer.into()),
                }
            }
            _ => (
                request.name.to_string(),
                request.arguments.unwrap_or_default(),
            ),
        };
        let Some(tool) = self.app.tool(&name) else {
            if caller.via.is_some() {
                return Ok(discover::no_such_tool(&name).into());
            }
            return Err(unknown_tool(&name));
        };
        let _slot = match self.slots_for(&caller) {
            Some(slots) => match slots.try_acquire() {
                Some(slot) => Some(slot),
                None => {
                    crate::metrics::tool_call(&name, crate::metrics::Outcome::Busy);
                    return Ok(session_busy(slots.limit(), caller.is_stateless()).into());
                }
            },
            None => None,
        };
        let approver = self.approvals.as_deref().map(|approvals| Approver {
            approvals,
            context: &context,
            retry: retry.as_ref(),
        });
        let call = match self.app.authorize(&caller, tool, arguments, approver).await {
            Authorized::Run(call) => call,
            Authorized::Refused(report) => return result_of(report, &name),
            Authorized::Cancelled => return Err(cancelled(&name)),
            Authorized::InputRequired(result) => return Ok(result.into()),
        };
        let mut _slot = _slot;
        let call = match &self.tasks {
            Some(tasks)
                if crate::server::tasks::wanted(&context)
                    && call.tool.call_waits(&call.arguments) =>
            {
                // A session's peer hears when the task ends; a request
                // without one has nobody listening after its answer.
                let peer = (!caller.is_stateless()).then(|| context.peer.clone());
                match tasks
                    .start(&self.app, &caller, call, &mut _slot, peer)
                    .await
                {
                    Ok(handle) => return Ok(CallToolResponse::Task(handle)),
                    Err(call) => call,
                }
            }
            _ => call,
        };
        // Dropping the call future on cancellation drops its store (so the
        // instance) and its in-flight upstream request.
        let call = crate::server::progress::track(&context, &name, |progress| {
            self.app.run(&caller, call, progress)
        });
        let report = tokio::select! {
            report = call => report,
            _ = context.ct.cancelled() => return Err(cancelled(&name)),
        };
        self.client_log
            .call_finished(&context.peer, &name, &report)
            .await;
        result_of(report, &name)
    }
}
