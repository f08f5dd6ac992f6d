//! The assembled host: configuration, gate and sandbox, with one entry point
//! for tool calls that the MCP server, `pve-mcp call` and the demo share.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Context;
use rmcp::RoleServer;
use rmcp::service::RequestContext;

use crate::approval::plan::HostPlan;
use crate::approval::{Approvals, Step};
use crate::audit::{AuditDecision, AuditLog};
use crate::caller::Caller;
use crate::config::audit::AuditSettings;
use crate::config::{Cluster, SandboxLimits};
use crate::egress::plan::ApprovedPlan;
use crate::egress::{Access, Binding, EgressLog, Gate, GateEndpoint, credential_tier};
use crate::error::ConfigError;
use crate::exposure::Exposure;
use crate::policy::{self, Decision, Grant};
use crate::route::{ApiRequest, Route};
use crate::sandbox::component::{
    CacheDir, ComponentIdentity, ComponentSource, FirstCompile, LoadedFrom,
};
use crate::sandbox::progress::ReportSender;
use crate::sandbox::{CallReport, CallRequest, Sandbox};
use crate::secret::Redactor;
use crate::server::each_credential::{CHECK_PERMISSIONS, Ran, check_each_credential};
use crate::tier::Tier;
use crate::tools::{CallOutcome, FailureKind, JsonObject, ToolInfo};
use crate::upstream::Upstream;

/// A running host.
pub struct App {
    sandbox: Sandbox,
    component: ComponentIdentity,
    policy: Arc<policy::Engine>,
    next_id: AtomicU64,
    redactor: Redactor,
    audit: Option<AuditLog>,
    exposure: Exposure,
    /// Each bearer token's credential set (`pve_credentials`), by name.
    credential_sets: std::collections::HashMap<Arc<str>, Arc<str>>,
}

/// Who can be asked to approve a call the policy marks `require_approval`:
/// the approval flow, and the MCP request that asks (its client may show a
/// form, or cancel while it waits).
pub struct Approver<'a> {
    /// The approval flow.
    pub approvals: &'a Approvals,
    /// The request being approved.
    pub context: &'a RequestContext<RoleServer>,
    /// A 2026-07-28 client's retry of the call after it was asked inside
    /// the call: its `requestState` and `inputResponses`.
    pub retry: Option<&'a crate::approval::Retry>,
}

/// A call the host decided to run, bound once: the approval plan's dry
/// run and [`App::run`] both take it, so what a person approves and what
/// runs are bound to the same arguments, cluster and routes.
#[derive(Debug)]
pub struct Admitted<'t> {
    /// The tool, as the component declared it.
    pub tool: &'t ToolInfo,
    /// The arguments as the host normalised them (a call's own request:
    /// see [`ApiRequest`]); what the policy judged, the audit records and
    /// the guest gets.
    pub arguments: JsonObject,
    /// Where the gate lets the call go.
    pub binding: Binding,
    /// What the call runs with.
    pub grant: Grant,
    /// `allow`, or `approved` when a person agreed.
    pub decision: AuditDecision,
}

/// What [`App::authorize`] decided about one call.
#[derive(Debug)]
pub enum Authorized<'t> {
    /// Run it.
    Run(Admitted<'t>),
    /// Refused (and recorded): this report is the answer.
    Refused(CallReport),
    /// The client cancelled the call while a person was asked.
    Cancelled,
    /// Ask the person at the client with this form, inside the call (MCP
    /// 2026-07-28): the client retries with the answer.
    InputRequired(rmcp::model::InputRequiredResult),
}

impl App {
    /// Builds the gate for these clusters and loads the component. With no
    /// clusters the tools can be listed but every request is denied.
    pub async fn start(
        clusters: &[Cluster],
        limits: &SandboxLimits,
        component: &ComponentSource,
        cache: &CacheDir,
        first: FirstCompile,
    ) -> anyhow::Result<App> {
        let started = Instant::now();
        let mut endpoints = Vec::with_capacity(clusters.len());
        let mut secrets = Vec::new();
        for cluster in clusters {
            endpoints.push(GateEndpoint {
                cluster: cluster.name.clone(),
                endpoint: cluster.endpoint.clone(),
                upstream: Upstream::new(cluster).with_context(|| {
                    format!("setting up the connection to cluster {}", cluster.name)
                })?,
            });
            secrets.extend(cluster.secrets());
        }
        let wasm = match component {
            ComponentSource::Embedded => {
                std::borrow::Cow::Borrowed(crate::sandbox::component::GUEST_WASM)
            }
            ComponentSource::File(path) => std::borrow::Cow::Owned(
                std::fs::read(path)
                    .with_context(|| format!("reading the component {}", path.display()))?,
            ),
        };
        let redactor = Redactor::new(secrets);
        let identity = ComponentIdentity::of(component, &wasm);
        let sandbox = Sandbox::new(
            &wasm,
            Gate::new(endpoints),
            limits.clone(),
            redactor.clone(),
            cache,
            first,
        )
        .await
        .with_context(|| match component {
            ComponentSource::Embedded => "loading the embedded tool component".to_string(),
            ComponentSource::File(p) => format!("loading the component {}", p.display()),
        })?;
        let compiler = match sandbox.loaded_from() {
            LoadedFrom::Quick => "winch",
            LoadedFrom::Cache | LoadedFrom::Compiled => "cranelift",
        };
        tracing::info!(
            tools = sandbox.tools().len(),
            compiled = sandbox.loaded_from() != LoadedFrom::Cache,
            compiler = %compiler,
            ms = started.elapsed().as_millis() as u64,
            "component ready"
        );
        Ok(App {
            sandbox,
            component: identity,
            policy: Arc::new(policy::Engine::default()),
            next_id: AtomicU64::new(1),
            redactor,
            audit: None,
            exposure: Exposure::all(),
            credential_sets: Default::default(),
        })
    }

    /// Turns on the audit log these settings describe (nothing when they
    /// leave it off): its first record names the component that runs, and
    /// every call from then on is recorded.
    pub async fn enable_audit(&mut self, settings: &AuditSettings) -> Result<(), ConfigError> {
        self.audit = AuditLog::open(settings, self.redactor.clone())?;
        if let Some(log) = &self.audit {
            log.server_start(&self.component).await;
        }
        Ok(())
    }

    /// Which component runs.
    pub fn component(&self) -> &ComponentIdentity {
        &self.component
    }

    /// What scrubs the host's secrets out of text, e.g. a span's arguments.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The egress gate, which the egress proxy shares with the sandbox.
    pub fn gate(&self) -> Arc<Gate> {
        self.sandbox.gate().clone()
    }

    /// The largest answer from Proxmox a call may read, in bytes.
    pub fn max_response_bytes(&self) -> usize {
        self.sandbox.max_response_bytes()
    }

    /// Records a step in a task's life (see [`crate::server::tasks`]).
    pub async fn audit_task(&self, event: crate::audit::record::TaskEventRecord) {
        if let Some(log) = &self.audit {
            log.task_event(event).await;
        }
    }

    /// Records one request the egress proxy decided (it has no tool call:
    /// see [`crate::audit::AuditLog::proxied`]).
    pub async fn audit_proxied(&self, id: &str, request: crate::egress::EgressRecord) {
        if let Some(log) = &self.audit {
            log.proxied(id, request).await;
        }
    }

    /// Puts this policy engine in charge (the default is read-only).
    pub fn with_policy(mut self, engine: Arc<policy::Engine>) -> App {
        self.policy = engine;
        self
    }

    /// Offers each caller only these toolsets (the default is every tool).
    pub fn with_exposure(mut self, exposure: Exposure) -> App {
        self.exposure = exposure;
        self
    }

    /// Which tools each caller is offered.
    pub fn exposure(&self) -> &Exposure {
        &self.exposure
    }

    /// Lets each named bearer token's calls carry its own credential set
    /// (`[http.tokens.NAME] pve_credentials`).
    pub fn with_credential_sets(
        mut self,
        sets: impl IntoIterator<Item = (Arc<str>, Arc<str>)>,
    ) -> App {
        self.credential_sets = sets.into_iter().collect();
        self
    }

    /// The credential set the caller's calls carry, if its token names one.
    pub fn credential_set(&self, caller: &Caller) -> Option<&str> {
        let token = caller.token.as_ref()?;
        self.credential_sets.get(token).map(|s| &**s)
    }

    /// Whether some cluster holds the credential a call of `tool` by this
    /// caller would carry (its tier, read when the policy lets it only
    /// read): a tool whose tier has no credential is not listed. With no
    /// cluster at all every tool is listed (and every request refused).
    pub fn has_credential(
        &self,
        caller: &Caller,
        tool: &ToolInfo,
        policy: &policy::Policy,
    ) -> bool {
        let gate = self.sandbox.gate();
        let tier = credential_tier(policy.effective(tool).access, Tier::of(tool));
        gate.endpoints().is_empty() || gate.serves(self.credential_set(caller), tier)
    }

    /// The policy engine.
    pub fn policy(&self) -> &Arc<policy::Engine> {
        &self.policy
    }

    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.sandbox.tool(name)
    }

    /// The component's tools (shared: clone the `Arc`, not the tools).
    pub fn tools(&self) -> &Arc<[ToolInfo]> {
        self.sandbox.tools()
    }

    /// Whether the tool exists.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools().iter().any(|t| t.name == name)
    }

    /// Decides one call and runs it if the policy allows; a call that
    /// needs a person's approval is refused (there is no approval flow
    /// here: `pve-mcp call` and the demo have no one to ask).
    pub async fn call(&self, caller: &Caller, tool: &str, arguments: &JsonObject) -> CallReport {
        let Some(info) = self.tool(tool) else {
            return CallReport {
                outcome: CallOutcome::UnknownTool(tool.to_string()),
                egress: Vec::new(),
            };
        };
        match self.authorize(caller, info, arguments.clone(), None).await {
            Authorized::Run(call) => self.run(caller, call, None).await,
            Authorized::Refused(report) => report,
            // Only an approver's client can cancel, and there is none.
            Authorized::Cancelled => {
                CallReport::refused(format!("{tool} was cancelled before it ran"))
            }
            // Only an approver's client is asked inside a call.
            Authorized::InputRequired(_) => CallReport::refused(format!(
                "{tool} needs a person's approval; nobody is asked here"
            )),
        }
    }

    /// The one place a call is authorized: the host normalises what it
    /// judges itself (a call's own request: see [`ApiRequest`]), the policy
    /// decides and, when it asks for a person's approval, the `approver`
    /// (if any) is asked. A refusal is logged and audited here, with its
    /// rate-limit units given back. The call is bound here, once.
    pub async fn authorize<'t>(
        &self,
        caller: &Caller,
        tool: &'t ToolInfo,
        mut arguments: JsonObject,
        approver: Option<Approver<'_>>,
    ) -> Authorized<'t> {
        // Before anything else: a tool the caller is not offered is not
        // there for it, whatever the policy would say.
        if let Err(why) = self.exposure.view(caller.token.as_deref()).offers(tool) {
            tracing::info!(
                session = %caller.session,
                tool = %tool.name,
                outcome = "not_offered",
                "tool call refused: {why}"
            );
            let report = CallReport::refused(format!(
                "{why}. Nothing was sent; use a tool this server offers (tools/list)."
            ));
            return Authorized::Refused(
                self.record(
                    caller,
                    &tool.name,
                    &arguments,
                    &AuditDecision::not_offered(),
                    report,
                )
                .await,
            );
        }
        if tool.routes.iter().any(Route::is_call_request)
            && let Err(bad) = ApiRequest::normalise(&mut arguments)
        {
            tracing::info!(
                session = %caller.session,
                tool = %tool.name,
                outcome = "invalid_arguments",
                field = bad.field,
                "tool call refused: its request cannot be sent"
            );
            let report = CallReport {
                outcome: CallOutcome::Failed {
                    kind: FailureKind::InvalidArguments,
                    message: format!("{bad}. Nothing was sent."),
                },
                egress: Vec::new(),
            };
            let decision = AuditDecision::invalid_arguments(bad.field);
            return Authorized::Refused(
                self.record(caller, &tool.name, &arguments, &decision, report)
                    .await,
            );
        }
        let gate = self.sandbox.gate();
        let mut binding = gate.bind(&tool.routes, &arguments);
        let decided = self
            .policy
            .decide(caller, tool, &gate.as_bound(&binding, &arguments))
            .await;
        // The credential of the call's granted tier, from its caller's set;
        // the dry run of an approval plan carries the read one.
        let mut dry_credential = binding.credential;
        if let (Decision::Allow(grant) | Decision::RequireApproval(grant), Some(cluster)) =
            (&decided, binding.cluster)
        {
            let set = self.credential_set(caller);
            let tier = credential_tier(
                grant.access,
                Tier::of_call(tool, &gate.as_bound(&binding, &arguments)),
            );
            let chosen = gate
                .credential(cluster, set, tier)
                .and_then(|id| Ok((id, gate.credential(cluster, set, Tier::Read)?)));
            match chosen {
                Ok((id, read)) => {
                    binding.credential = id;
                    dry_credential = read;
                }
                Err(why) => {
                    if let Decision::Allow(grant) | Decision::RequireApproval(grant) = decided {
                        grant.permit.rollback().await;
                    }
                    tracing::info!(
                        session = %caller.session,
                        token = caller.token.as_deref(),
                        tool = %tool.name,
                        outcome = "no_credential",
                        "tool call refused: {why}"
                    );
                    let decision = AuditDecision {
                        decision: "no-credential".into(),
                        rule: format!("credentials.{tier}"),
                        approver: None,
                    };
                    let report = CallReport::refused(format!("{} was not run: {why}", tool.name));
                    return Authorized::Refused(
                        self.record(caller, &tool.name, &arguments, &decision, report)
                            .await,
                    );
                }
            }
        }
        let (
            grant,
            Approver {
                approvals,
                context,
                retry,
            },
        ) = match decided {
            Decision::Allow(grant) => {
                let decision = AuditDecision::allowed(&grant.rule);
                return Authorized::Run(Admitted {
                    tool,
                    arguments,
                    binding,
                    grant,
                    decision,
                });
            }
            Decision::RequireApproval(grant) => match approver {
                Some(approver) => (grant, approver),
                None => {
                    let refused = Decision::RequireApproval(grant);
                    let report = self.refuse(caller, &tool.name, &arguments, refused).await;
                    return Authorized::Refused(report);
                }
            },
            refused => {
                let report = self.refuse(caller, &tool.name, &arguments, refused).await;
                return Authorized::Refused(report);
            }
        };
        let rule = grant.rule.clone();
        let dry = Binding {
            credential: dry_credential,
            ..binding.clone()
        };
        let plan = match self.plan(tool, &arguments, &dry).await {
            Ok(plan) => plan,
            Err(refusal) => {
                grant.permit.rollback().await;
                let decision = AuditDecision::plan_refused(&rule);
                let report = CallReport::refused(refusal);
                return Authorized::Refused(
                    self.record(caller, &tool.name, &arguments, &decision, report)
                        .await,
                );
            }
        };
        let text = plan.as_ref().map(|p| p.text.clone());
        match approvals
            .gate(context, caller, &tool.name, &arguments, grant, text, retry)
            .await
        {
            Step::Approved(grant, by) => Authorized::Run(Admitted {
                decision: AuditDecision::approved(&grant.rule, by),
                tool,
                arguments,
                // The approved call is held to the plan the person saw.
                binding: Binding {
                    plan: plan.map(|p| Arc::new(ApprovedPlan::new(p.writes))),
                    ..binding
                },
                grant,
            }),
            Step::Refused(text) => {
                let decision = AuditDecision::not_approved(&rule);
                let report = CallReport::refused(text);
                Authorized::Refused(
                    self.record(caller, &tool.name, &arguments, &decision, report)
                        .await,
                )
            }
            Step::Cancelled => Authorized::Cancelled,
            Step::InputRequired(result) => Authorized::InputRequired(result),
        }
    }

    /// The report of a call the policy refused (its units, if any, given
    /// back), logged and audited like any call.
    async fn refuse(
        &self,
        caller: &Caller,
        tool: &str,
        arguments: &JsonObject,
        decision: Decision,
    ) -> CallReport {
        let text = decision.refusal_text().unwrap_or_default();
        tracing::info!(
            session = %caller.session,
            token = caller.token.as_deref(),
            tool,
            outcome = "policy",
            decision = decision.kind(),
            rule = %decision.rule(),
            "tool call refused by policy"
        );
        let audited = AuditDecision::from(&decision);
        match decision {
            Decision::Allow(grant) | Decision::RequireApproval(grant) => {
                grant.permit.rollback().await
            }
            Decision::Deny { .. } | Decision::RateLimited { .. } => {}
        }
        self.record(caller, tool, arguments, &audited, CallReport::refused(text))
            .await
    }

    /// Writes the audit record of a call that did not run.
    async fn record(
        &self,
        caller: &Caller,
        tool: &str,
        arguments: &JsonObject,
        decision: &AuditDecision,
        report: CallReport,
    ) -> CallReport {
        crate::metrics::call_refused(tool, &decision.decision);
        match &self.audit {
            Some(log) => {
                log.begin(&self.next_call_id(), caller, tool, arguments, decision)
                    .finish(report)
                    .await
            }
            None => report,
        }
    }

    fn next_call_id(&self) -> String {
        format!("call-{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// What a call of a tool that writes would send, for the person asked
    /// to approve it: the host's record of the writes its dry run plans
    /// (`dry_run: true`, with the gate holding it to `GET`, so nothing can
    /// be written), each checked by the gate as it would check the real
    /// request; `None` for a tool that declares no writes. A plan with a
    /// write the gate would refuse is refused here, before anyone is asked.
    async fn plan(
        &self,
        tool: &ToolInfo,
        arguments: &JsonObject,
        binding: &Binding,
    ) -> Result<Option<HostPlan>, String> {
        // A guarded read has no plan to hold (no dry run either): its
        // route binds it to the arguments the person approves.
        if tool.routes.iter().all(|r| r.is_guarded_read()) {
            return Ok(None);
        }
        let mut dry = arguments.clone();
        dry.insert("dry_run".into(), serde_json::Value::Bool(true));
        let text = serde_json::Value::Object(dry).to_string();
        let id = format!("{}-plan", self.next_call_id());
        let report = self
            .sandbox
            .call(CallRequest {
                tool,
                arguments: &text,
                request_id: &id,
                // Read access sends no write whatever the routes say; a
                // call's own request binds its reads too.
                access: Access::Read,
                binding: binding.clone(),
                progress: None,
                // A dry run never waits: it takes no wait slot.
                waits: false,
                waiter: None,
            })
            .await;
        let gate = self.sandbox.gate();
        let plan =
            crate::approval::plan::host_plan(&report.outcome, gate, binding).map_err(|why| {
                format!(
                    "{} was not run and no approval was asked: its dry run plans a request the \
                     egress gate would refuse ({why}). Nothing was sent.",
                    tool.name
                )
            })?;
        Ok(Some(plan))
    }

    /// Runs one authorized call and logs it, recording `decision` in the
    /// audit log. Its rate-limit units are given back when Proxmox was
    /// never reached or did not answer (see `proxmox_failed`). The guest's
    /// progress reports go to `progress`, if given.
    pub async fn run(
        &self,
        caller: &Caller,
        call: Admitted<'_>,
        progress: Option<ReportSender>,
    ) -> CallReport {
        self.run_observed(caller, call, progress, EgressLog::default())
            .await
    }

    /// [`App::run`], recording the call's requests in `egress` as they
    /// leave (and in its audit record), so its caller can watch them: a
    /// task learns there which Proxmox task the call waits for.
    pub async fn run_observed(
        &self,
        caller: &Caller,
        call: Admitted<'_>,
        progress: Option<ReportSender>,
        egress: EgressLog,
    ) -> CallReport {
        let Admitted {
            tool: info,
            arguments,
            binding,
            grant,
            decision,
        } = call;
        let tool = info.name.as_str();
        let arguments = &arguments;
        let decision = &decision;
        let id = self.next_call_id();
        let mut audit = self
            .audit
            .as_ref()
            .map(|log| log.begin(&id, caller, tool, arguments, decision));
        // Who the call is in Proxmox: the token id its requests carry.
        let pve_token = binding.cluster.map(|c| {
            self.sandbox
                .gate()
                .identity(c, binding.credential)
                .to_owned()
        });
        if let (Some(audit), Some(pve_token)) = (audit.as_mut(), &pve_token) {
            audit.set_pve_token(pve_token);
        }
        let started = Instant::now();
        // Write-ahead: the call-start record is on disk before the guest
        // can send anything, or (failing closed) the guest never runs.
        let refusal = match audit.as_mut() {
            Some(audit) => audit.start(grant.access).await,
            None => None,
        };
        let report = match refusal {
            Some(refused) => {
                // It never ran: its rate-limit units are given back.
                if !grant.permit.is_empty() {
                    grant.permit.rollback().await;
                }
                refused
            }
            None => {
                let waits = info.call_waits(arguments);
                // A map of JSON values always serialises.
                let arguments = serde_json::to_string(arguments).unwrap_or_default();
                if let Some(audit) = audit.as_mut() {
                    audit.record_into(egress.clone());
                }
                let again = (info.name == CHECK_PERMISSIONS).then(|| binding.clone());
                let report = self
                    .sandbox
                    .call_recording(
                        CallRequest {
                            tool: info,
                            arguments: &arguments,
                            request_id: &id,
                            access: grant.access,
                            binding,
                            progress,
                            waits,
                            waiter: caller.wait_key(),
                        },
                        egress,
                    )
                    .await;
                // It checks each of the caller's credentials, not only its own.
                let report = match again {
                    Some(binding) => {
                        let ran = Ran {
                            tool: info,
                            arguments: &arguments,
                            id: &id,
                            binding,
                            set: self.credential_set(caller),
                        };
                        check_each_credential(&self.sandbox, ran, report).await
                    }
                    None => report,
                };
                if (proxmox_failed(&report) || turned_away(&report)) && !grant.permit.is_empty() {
                    grant.permit.rollback().await;
                }
                report
            }
        };
        let report = match audit {
            Some(audit) => audit.finish(report).await,
            None => report,
        };
        crate::metrics::call_finished(tool, &report.outcome);
        let outcome = crate::audit::outcome_name(&report.outcome);
        tracing::info!(
            id,
            session = %caller.session,
            token = caller.token.as_deref(),
            tool,
            outcome,
            rule = %grant.rule,
            may_write = grant.access == Access::Write,
            pve_token = pve_token.as_deref(),
            traceparent = caller.trace.as_deref(),
            upstream_requests = report.egress.len(),
            denied = report.egress.iter().filter(|r| r.denied.is_some()).count(),
            ms = started.elapsed().as_millis() as u64,
            "tool call"
        );
        report
    }
}

/// Whether a call failed because Proxmox was never reached or did not
/// answer, so its rate-limit units are given back: the guest says so, it
/// sent only reads, the gate let every request through, and each got no
/// answer (connect failure, timeout) or PVE's own 595/596, which its proxy
/// sends when the node it forwards to does not answer. Any other status,
/// 5xx included, is an answer from Proxmox and counts: PVE answers client
/// mistakes such as a guest on the wrong node with a 500, so refunding
/// those would let an agent loop on bad calls past its limit.
fn proxmox_failed(report: &CallReport) -> bool {
    let said_upstream = matches!(
        report.outcome,
        CallOutcome::Failed {
            kind: FailureKind::Upstream,
            ..
        }
    );
    said_upstream
        && report
            .egress
            .iter()
            .all(|r| r.denied.is_none() && r.method == "GET" && r.status.is_none_or(is_no_answer))
}

/// Whether the sandbox turned the call away before it ran (a wait beyond
/// its caller's share, [`FailureKind::Busy`]): it cost Proxmox nothing, so
/// its rate-limit units are given back like a policy refusal's.
fn turned_away(report: &CallReport) -> bool {
    matches!(
        report.outcome,
        CallOutcome::Failed {
            kind: FailureKind::Busy,
            ..
        }
    ) && report.egress.is_empty()
}

/// PVE's proxy statuses for "the node did not answer": 595 (no connection
/// to it) and 596 (the connection broke before an answer).
fn is_no_answer(status: u16) -> bool {
    matches!(status, 595 | 596)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::egress::{Denial, EgressRecord};

    /// A call the guest says failed upstream, after one GET with `status`.
    fn upstream_failure(status: Option<u16>, denied: Option<Denial>) -> CallReport {
        CallReport {
            outcome: CallOutcome::Failed {
                kind: FailureKind::Upstream,
                message: "Proxmox failed".into(),
            },
            egress: vec![EgressRecord {
                cluster: None,
                method: "GET".into(),
                authority: "pve.example:8006".into(),
                path: "/api2/json/version".into(),
                params: None,
                answer: None,
                denied,
                status,
                failure: None,
                elapsed: Duration::ZERO,
            }],
        }
    }

    #[test]
    fn units_come_back_only_when_proxmox_gave_no_answer() {
        // No answer at all (connect failure, timeout) or PVE's proxy saying
        // the node did not answer (595, 596): Proxmox never did the work.
        for status in [None, Some(595), Some(596)] {
            assert!(
                proxmox_failed(&upstream_failure(status, None)),
                "{status:?} gives the unit back"
            );
        }
        // Any answer from Proxmox, 5xx included, is Proxmox doing its work:
        // its "does not exist" for a wrong node comes as a 500.
        for status in [200, 400, 403, 404, 500, 501, 502, 503, 599] {
            assert!(
                !proxmox_failed(&upstream_failure(Some(status), None)),
                "{status} keeps the unit"
            );
        }
        // A request the gate refused counts too.
        assert!(!proxmox_failed(&upstream_failure(
            None,
            Some(Denial::Authority)
        )));
    }
}
