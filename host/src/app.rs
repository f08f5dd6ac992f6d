//! The assembled host: configuration, gate and sandbox, with one entry point
//! for tool calls that the MCP server, `pve-mcp call` and the demo share.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Context;

use crate::audit::{AuditDecision, AuditLog, AuditSettings};
use crate::caller::Caller;
use crate::component::{CacheDir, LoadedFrom};
use crate::config::{Cluster, ConfigError, SandboxLimits};
use crate::egress::{Gate, GateEndpoint};
use crate::policy::{self, Decision, Permit};
use crate::sandbox::{CallReport, CallRequest, Sandbox};
use crate::secret::Redactor;
use crate::tools::{CallOutcome, FailureKind, ToolInfo};
use crate::upstream::Upstream;

/// Which component to run.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    /// The one built from `guest/` and embedded in this binary.
    Embedded,
    /// Another build of a component implementing the same world.
    File(PathBuf),
}

/// A running host.
pub struct App {
    sandbox: Sandbox,
    policy: Arc<policy::Engine>,
    next_id: AtomicU64,
    redactor: Redactor,
    audit: Option<AuditLog>,
}

/// What an allowed call runs with: the rule that allowed it, whether it
/// may write, and its rate-limit units (given back if it fails upstream).
#[derive(Debug)]
pub struct Grant {
    /// The rule that allowed the call.
    pub rule: String,
    /// Whether the egress gate lets non-GET methods out.
    pub may_write: bool,
    /// The call's rate-limit units.
    pub permit: Permit,
}

impl App {
    /// Builds the gate for these clusters and loads the component. With no
    /// clusters the tools can be listed but every request is denied.
    pub async fn start(
        clusters: &[Cluster],
        limits: &SandboxLimits,
        component: &ComponentSource,
        cache: &CacheDir,
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
            secrets.extend(cluster.auth.secrets());
        }
        let wasm = match component {
            ComponentSource::Embedded => std::borrow::Cow::Borrowed(crate::GUEST_WASM),
            ComponentSource::File(path) => std::borrow::Cow::Owned(
                std::fs::read(path)
                    .with_context(|| format!("reading the component {}", path.display()))?,
            ),
        };
        let redactor = Redactor::new(secrets);
        let sandbox = Sandbox::new(
            &wasm,
            Gate::new(endpoints),
            limits.clone(),
            redactor.clone(),
            cache,
        )
        .await
        .with_context(|| match component {
            ComponentSource::Embedded => "loading the embedded tool component".to_string(),
            ComponentSource::File(p) => format!("loading the component {}", p.display()),
        })?;
        tracing::info!(
            tools = sandbox.tools().len(),
            compiled = matches!(sandbox.loaded_from(), LoadedFrom::Compiled),
            ms = started.elapsed().as_millis() as u64,
            "component ready"
        );
        Ok(App {
            sandbox,
            policy: Arc::new(policy::Engine::default()),
            next_id: AtomicU64::new(1),
            redactor,
            audit: None,
        })
    }

    /// Turns on the audit log these settings describe (nothing when they
    /// leave it off); every call from then on is recorded.
    pub fn enable_audit(&mut self, settings: &AuditSettings) -> Result<(), ConfigError> {
        self.audit = AuditLog::open(settings, self.redactor.clone())?;
        Ok(())
    }

    /// Puts this policy engine in charge (the default is read-only).
    pub fn with_policy(mut self, engine: Arc<policy::Engine>) -> App {
        self.policy = engine;
        self
    }

    /// The policy engine.
    pub fn policy(&self) -> &Arc<policy::Engine> {
        &self.policy
    }

    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.tools().iter().find(|t| t.name == name)
    }

    /// The component's tools.
    pub fn tools(&self) -> &[ToolInfo] {
        self.sandbox.tools()
    }

    /// Whether the tool exists.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools().iter().any(|t| t.name == name)
    }

    /// Decides one call and runs it if the policy allows; a call that
    /// needs a person's approval is refused (there is no approval flow
    /// here: `pve-mcp call` and the demo have no one to ask).
    pub async fn call(
        &self,
        caller: &Caller,
        tool: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> CallReport {
        let Some(info) = self.tool(tool) else {
            return CallReport {
                outcome: CallOutcome::UnknownTool(tool.to_string()),
                egress: Vec::new(),
            };
        };
        match self.policy.decide(caller, info, arguments).await {
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
                self.run(caller, tool, arguments, grant).await
            }
            refused => self.refuse(caller, tool, arguments, refused).await,
        }
    }

    /// Asks the policy about one call.
    pub async fn decide(
        &self,
        caller: &Caller,
        tool: &ToolInfo,
        arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> Decision {
        self.policy.decide(caller, tool, arguments).await
    }

    /// The report of a refused call (its units, if any, given back), logged
    /// and audited like any call.
    pub async fn refuse(
        &self,
        caller: &Caller,
        tool: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
        decision: Decision,
    ) -> CallReport {
        let audit = self.audit.as_ref().map(|log| {
            let id = format!("call-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
            log.begin(
                &id,
                caller,
                tool,
                arguments,
                &AuditDecision::from(&decision),
            )
        });
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
        match decision {
            Decision::Allow { permit, .. } | Decision::RequireApproval { permit, .. } => {
                permit.rollback().await
            }
            Decision::Deny { .. } | Decision::RateLimited { .. } => {}
        }
        let report = CallReport::refused(text);
        match audit {
            Some(audit) => audit.finish(report).await,
            None => report,
        }
    }

    /// A call refused outside the policy engine (e.g. a person declined to
    /// approve it), recorded in the audit log with this decision; the agent
    /// sees `text`.
    pub async fn refuse_recorded(
        &self,
        caller: &Caller,
        tool: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
        decision: &AuditDecision,
        text: String,
    ) -> CallReport {
        let report = CallReport::refused(text);
        match &self.audit {
            Some(log) => {
                let id = format!("call-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
                log.begin(&id, caller, tool, arguments, decision)
                    .finish(report)
                    .await
            }
            None => report,
        }
    }

    /// Runs one allowed call and logs it. Its rate-limit units are given
    /// back when it fails upstream (Proxmox never did the work).
    pub async fn run(
        &self,
        caller: &Caller,
        tool: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
        grant: Grant,
    ) -> CallReport {
        let decision = AuditDecision::allowed(&grant.rule);
        self.run_recorded(caller, tool, arguments, grant, &decision)
            .await
    }

    /// [`App::run`], recording this decision in the audit log instead of
    /// `allow` (e.g. [`AuditDecision::approved`] after a person approved).
    pub async fn run_recorded(
        &self,
        caller: &Caller,
        tool: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
        grant: Grant,
        decision: &AuditDecision,
    ) -> CallReport {
        let id = format!("call-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let mut audit = self
            .audit
            .as_ref()
            .map(|log| log.begin(&id, caller, tool, arguments, decision));
        let started = Instant::now();
        let report = match audit.as_mut().and_then(|a| a.refusal()) {
            Some(refused) => {
                // It never ran: its rate-limit units are given back.
                if !grant.permit.is_empty() {
                    grant.permit.rollback().await;
                }
                refused
            }
            None => {
                let arguments = serde_json::Value::Object(arguments.clone()).to_string();
                let report = self
                    .sandbox
                    .call(CallRequest {
                        tool,
                        arguments: &arguments,
                        request_id: &id,
                        allowed_methods: policy::allowed_methods(grant.may_write),
                    })
                    .await;
                if proxmox_failed(&report) && !grant.permit.is_empty() {
                    grant.permit.rollback().await;
                }
                report
            }
        };
        let report = match audit {
            Some(audit) => audit.finish(report).await,
            None => report,
        };
        let outcome = crate::audit::outcome_name(&report.outcome);
        tracing::info!(
            id,
            session = %caller.session,
            token = caller.token.as_deref(),
            tool,
            outcome,
            rule = %grant.rule,
            may_write = grant.may_write,
            upstream_requests = report.egress.len(),
            denied = report.egress.iter().filter(|r| r.denied.is_some()).count(),
            ms = started.elapsed().as_millis() as u64,
            "tool call"
        );
        report
    }
}

/// Whether a call failed because Proxmox (or the way to it) did, so its
/// rate-limit units are given back: the guest says so, it sent only reads,
/// the gate let every request through, and none got an answer Proxmox
/// stands by (only no answer, or a 5xx). A 4xx is Proxmox doing its work on
/// a bad request and counts, or an agent could loop on errors for free.
fn proxmox_failed(report: &CallReport) -> bool {
    let said_upstream = matches!(
        report.outcome,
        CallOutcome::Failed {
            kind: FailureKind::Upstream,
            ..
        }
    );
    said_upstream
        && report.egress.iter().all(|r| {
            r.denied.is_none() && r.method == "GET" && r.status.is_none_or(|status| status >= 500)
        })
}
