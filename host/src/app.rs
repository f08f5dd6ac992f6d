//! The assembled host: configuration, gate and sandbox, with one entry point
//! for tool calls that the MCP server, `pve-mcp call` and the demo share.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Context;

use crate::audit::{AuditDecision, AuditLog, AuditSettings};
use crate::caller::Caller;
use crate::component::{CacheDir, LoadedFrom};
use crate::config::{Cluster, ConfigError, SandboxLimits};
use crate::egress::{Gate, GateEndpoint};
use crate::sandbox::{CallReport, CallRequest, Sandbox};
use crate::secret::Redactor;
use crate::tools::{CallOutcome, ToolInfo};
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
    next_id: AtomicU64,
    redactor: Redactor,
    audit: Option<AuditLog>,
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

    /// The component's tools.
    pub fn tools(&self) -> &[ToolInfo] {
        self.sandbox.tools()
    }

    /// Whether the tool exists.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools().iter().any(|t| t.name == name)
    }

    /// Runs one tool call for this caller and logs it.
    pub async fn call(
        &self,
        caller: &Caller,
        tool: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> CallReport {
        let id = format!("call-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        // The policy engine's decision goes here; without one, all is allowed.
        let decision = AuditDecision::no_policy();
        let mut audit = self
            .audit
            .as_ref()
            .map(|log| log.begin(&id, caller, tool, arguments, &decision));
        let started = Instant::now();
        let report = match audit.as_mut().and_then(|a| a.refusal()) {
            Some(refused) => refused,
            None => {
                let arguments = serde_json::Value::Object(arguments.clone()).to_string();
                self.sandbox
                    .call(CallRequest {
                        tool,
                        arguments: &arguments,
                        request_id: &id,
                    })
                    .await
            }
        };
        let report = match audit {
            Some(audit) => audit.finish(report).await,
            None => report,
        };
        let outcome = match &report.outcome {
            CallOutcome::Output {
                is_error: false, ..
            } => "ok",
            CallOutcome::Output { is_error: true, .. } => "tool-error",
            CallOutcome::UnknownTool(_) => "unknown-tool",
            CallOutcome::Failed { kind, .. } => kind.as_str(),
        };
        tracing::info!(
            id,
            session = %caller.session,
            token = caller.token.as_deref(),
            tool,
            outcome,
            upstream_requests = report.egress.len(),
            denied = report.egress.iter().filter(|r| r.denied.is_some()).count(),
            ms = started.elapsed().as_millis() as u64,
            "tool call"
        );
        report
    }
}
