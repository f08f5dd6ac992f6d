//! Prometheus metrics: every metric's name, help, type and labels, the
//! registry, and the one-line hooks the rest of the host calls where a
//! call's outcome, an upstream request, an egress refusal, a session or a
//! sandbox slot is decided.
//!
//! Metrics are process-wide: [`enable`] turns them on once (`pve-mcp serve`
//! over HTTP, or with `[metrics] listen`); until then, and in every other
//! command, each hook returns at once without touching anything. [`scrape`]
//! renders the Prometheus text format (0.0.4) through `prometheus-client`.
//!
//! Labels are fixed enums ([`labels`]), the names of the tools the
//! component declares ([`declare_tools`]; any other name is `other`), the
//! configured clusters' names and the MCP protocol versions the server
//! speaks: never arguments, paths, tokens or anything else a client
//! chooses. `docs/deploy.md` lists the metrics with queries and alerts.

pub mod labels;

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use labels::{
    CacheLabels, CallLabels, DenialLabels, LimitLabels, OperationLabels, UpstreamLabels,
    VersionLabels,
};
pub use labels::{
    CacheResult, Denial, MethodClass, Name, Outcome, SandboxLimit, StatusClass, Transport,
};

use crate::tools::{CallOutcome, FailureKind};

/// The MCP semantic conventions' histogram.
pub const OPERATION_DURATION: &str = "mcp_server_operation_duration_seconds";
/// Tool calls by tool and outcome (a counter: `_total` is added).
pub const TOOL_CALLS: &str = "pve_mcp_tool_calls";
/// Calls the sandbox stopped, by limit.
pub const SANDBOX_LIMITS: &str = "pve_mcp_sandbox_limits";
/// Requests sent to Proxmox, by cluster, method class and status class.
pub const UPSTREAM_REQUESTS: &str = "pve_mcp_upstream_requests";
/// Requests the egress gate refused, by reason.
pub const EGRESS_DENIALS: &str = "pve_mcp_egress_denials";
/// Approvals waiting for a person.
pub const APPROVALS_PENDING: &str = "pve_mcp_approvals_pending";
/// How long the oldest pending approval has waited.
pub const APPROVALS_OLDEST: &str = "pve_mcp_approvals_oldest_pending_seconds";
/// Open Streamable HTTP sessions.
pub const SESSIONS: &str = "pve_mcp_sessions";
/// `sandbox.max_concurrent_calls`.
pub const SLOTS: &str = "pve_mcp_sandbox_slots";
/// Sandbox slots held by running calls.
pub const SLOTS_IN_USE: &str = "pve_mcp_sandbox_slots_in_use";
/// Calls waiting for a sandbox slot (or a wait slot).
pub const SLOTS_WAITING: &str = "pve_mcp_sandbox_slots_waiting";
/// Compile cache lookups, by result.
pub const COMPILE_CACHE: &str = "pve_mcp_compile_cache_lookups";
/// The running version (always 1).
pub const BUILD_INFO: &str = "pve_mcp_build_info";

/// The MCP semantic conventions' buckets for
/// `mcp.server.operation.duration`, in seconds.
pub const OPERATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The tool label of a name the component does not declare.
pub const OTHER: &str = "other";

/// A sampler refreshes gauges whose truth lives elsewhere (the approval
/// store, the session map) just before a scrape encodes them.
pub type Sampler = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// How long one sampler may take before a scrape goes on without it.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(2);

fn operation_histogram() -> Histogram {
    Histogram::new(OPERATION_BUCKETS)
}

/// The registry and every metric in it.
pub struct Metrics {
    registry: Registry,
    operation: Family<OperationLabels, Histogram, fn() -> Histogram>,
    calls: Family<CallLabels, Counter>,
    limits: Family<LimitLabels, Counter>,
    upstream: Family<UpstreamLabels, Counter>,
    denials: Family<DenialLabels, Counter>,
    approvals_pending: Gauge,
    approvals_oldest: Gauge<f64, AtomicU64>,
    sessions: Gauge,
    slots: Gauge,
    slots_in_use: Gauge,
    slots_waiting: Gauge,
    cache: Family<CacheLabels, Counter>,
    tools: RwLock<HashSet<Arc<str>>>,
    other: Arc<str>,
    samplers: Mutex<Vec<Sampler>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Every metric, registered and at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let m = Metrics {
            operation: Family::new_with_constructor(operation_histogram as fn() -> Histogram),
            calls: Family::default(),
            limits: Family::default(),
            upstream: Family::default(),
            denials: Family::default(),
            approvals_pending: Gauge::default(),
            approvals_oldest: Gauge::default(),
            sessions: Gauge::default(),
            slots: Gauge::default(),
            slots_in_use: Gauge::default(),
            slots_waiting: Gauge::default(),
            cache: Family::default(),
            tools: RwLock::new(HashSet::new()),
            other: Arc::from(OTHER),
            samplers: Mutex::new(Vec::new()),
            registry: Registry::default(),
        };
        registry.register(
            OPERATION_DURATION,
            "Duration of MCP requests as the server saw them (OpenTelemetry MCP semantic conventions)",
            m.operation.clone(),
        );
        registry.register(
            TOOL_CALLS,
            "Tool calls by tool and outcome",
            m.calls.clone(),
        );
        registry.register(
            SANDBOX_LIMITS,
            "Tool calls the sandbox stopped, by the limit that stopped them",
            m.limits.clone(),
        );
        registry.register(
            UPSTREAM_REQUESTS,
            "Requests sent to Proxmox, by cluster, method class (read, write) and status class",
            m.upstream.clone(),
        );
        registry.register(
            EGRESS_DENIALS,
            "Requests of the tool component the egress gate refused, by reason",
            m.denials.clone(),
        );
        registry.register(
            APPROVALS_PENDING,
            "Approvals waiting for a person",
            m.approvals_pending.clone(),
        );
        registry.register(
            APPROVALS_OLDEST,
            "Seconds the oldest pending approval has waited (0 when none is pending)",
            m.approvals_oldest.clone(),
        );
        registry.register(
            SESSIONS,
            "Open Streamable HTTP sessions",
            m.sessions.clone(),
        );
        registry.register(
            SLOTS,
            "Sandbox slots (sandbox.max_concurrent_calls)",
            m.slots.clone(),
        );
        registry.register(
            SLOTS_IN_USE,
            "Sandbox slots held by running tool calls",
            m.slots_in_use.clone(),
        );
        registry.register(
            SLOTS_WAITING,
            "Tool calls waiting for a sandbox slot",
            m.slots_waiting.clone(),
        );
        registry.register(
            COMPILE_CACHE,
            "Lookups of the compiled component in the compile cache, by result",
            m.cache.clone(),
        );
        let build: Family<VersionLabels, Gauge> = Family::default();
        build
            .get_or_create(&VersionLabels {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        registry.register(BUILD_INFO, "The running pve-mcp's version", build);
        Metrics { registry, ..m }
    }

    /// Names the tools the component declares: only these appear as a
    /// tool label; any other name is `other`.
    pub fn declare_tools<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        if let Ok(mut tools) = self.tools.write() {
            tools.extend(names.into_iter().map(Arc::from));
        }
    }

    /// The label for a tool's name.
    pub fn tool(&self, name: &str) -> Name {
        let known = self
            .tools
            .read()
            .ok()
            .and_then(|tools| tools.get(name).cloned());
        Name(known.unwrap_or_else(|| self.other.clone()))
    }

    /// One MCP request: its method, tool, how it ended, transport, version
    /// and duration.
    pub fn operation(
        &self,
        method: &'static str,
        tool: &str,
        error_type: &'static str,
        transport: Transport,
        version: Option<&str>,
        elapsed: Duration,
    ) {
        let labels = OperationLabels {
            mcp_method_name: method,
            gen_ai_tool_name: self.tool(tool),
            error_type,
            network_transport: transport,
            mcp_protocol_version: labels::protocol_version(version),
        };
        self.operation
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// A tool call ended this way.
    pub fn tool_call(&self, tool: &str, outcome: Outcome) {
        let labels = CallLabels {
            tool: self.tool(tool),
            outcome,
        };
        self.calls.get_or_create(&labels).inc();
    }

    /// The sandbox stopped a call.
    pub fn sandbox_limit(&self, kind: SandboxLimit) {
        self.limits.get_or_create(&LimitLabels { kind }).inc();
    }

    /// A request went to a configured cluster's Proxmox and got `status`
    /// (`None`: no answer).
    pub fn upstream_request(&self, cluster: Option<&str>, method: &str, status: Option<u16>) {
        let labels = UpstreamLabels {
            cluster: Name(Arc::from(cluster.unwrap_or(""))),
            method_class: MethodClass::of(method),
            status: StatusClass::of(status),
        };
        self.upstream.get_or_create(&labels).inc();
    }

    /// The egress gate refused a request.
    pub fn egress_denied(&self, reason: Denial) {
        self.denials.get_or_create(&DenialLabels { reason }).inc();
    }

    /// The approvals pending now, and how long the oldest has waited.
    pub fn approvals_pending(&self, count: usize, oldest: Duration) {
        self.approvals_pending.set(count as i64);
        self.approvals_oldest.set(oldest.as_secs_f64());
    }

    /// The open Streamable HTTP sessions now.
    pub fn sessions(&self, count: usize) {
        self.sessions.set(count as i64);
    }

    /// `sandbox.max_concurrent_calls`.
    pub fn sandbox_slots(&self, capacity: usize) {
        self.slots.set(capacity as i64);
    }

    /// A call starts waiting for a slot, until the guard is dropped.
    pub fn slot_waiting(&self) -> Held<'_> {
        self.slots_waiting.inc();
        Held(Some(&self.slots_waiting))
    }

    /// A call holds a slot, until the guard is dropped.
    pub fn slot_in_use(&self) -> Held<'_> {
        self.slots_in_use.inc();
        Held(Some(&self.slots_in_use))
    }

    /// The compile cache was looked up.
    pub fn compile_cache(&self, result: CacheResult) {
        self.cache.get_or_create(&CacheLabels { result }).inc();
    }

    /// Runs `sampler` before every scrape.
    pub fn on_scrape(&self, sampler: Sampler) {
        if let Ok(mut samplers) = self.samplers.lock() {
            samplers.push(sampler);
        }
    }

    /// Refreshes the sampled gauges, then renders every metric.
    pub async fn scrape(&self) -> String {
        let samplers = self.samplers.lock().map(|s| s.clone()).unwrap_or_default();
        for sampler in samplers {
            if tokio::time::timeout(SAMPLE_TIMEOUT, sampler())
                .await
                .is_err()
            {
                tracing::debug!("a metrics sampler took too long; its gauges are as last sampled");
            }
        }
        self.render()
    }

    /// Every metric in the Prometheus text format, as it stands.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(16 << 10);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

/// A gauge held up while a call waits for or holds a slot; dropping it
/// lets the gauge down. Holds nothing when metrics are off.
#[must_use = "the gauge goes down when this is dropped"]
pub struct Held<'a>(Option<&'a Gauge>);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(gauge) = self.0 {
            gauge.dec();
        }
    }
}

/// The `Content-Type` of [`scrape`]'s text.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

static GLOBAL: OnceLock<Metrics> = OnceLock::new();

/// Turns metrics on for this process (once; later calls change nothing).
pub fn enable() -> &'static Metrics {
    GLOBAL.get_or_init(Metrics::new)
}

/// Whether metrics are on.
pub fn enabled() -> bool {
    GLOBAL.get().is_some()
}

fn on() -> Option<&'static Metrics> {
    GLOBAL.get()
}

/// Renders every metric, after refreshing the sampled gauges; `None` when
/// metrics are off.
pub async fn scrape() -> Option<String> {
    Some(on()?.scrape().await)
}

/// See [`Metrics::declare_tools`].
pub fn declare_tools<'a>(names: impl IntoIterator<Item = &'a str>) {
    if let Some(m) = on() {
        m.declare_tools(names);
    }
}

/// See [`Metrics::operation`].
pub fn operation(
    method: &'static str,
    tool: &str,
    error_type: &'static str,
    transport: Transport,
    version: Option<&str>,
    elapsed: Duration,
) {
    if let Some(m) = on() {
        m.operation(method, tool, error_type, transport, version, elapsed);
    }
}

/// See [`Metrics::tool_call`].
pub fn tool_call(tool: &str, outcome: Outcome) {
    if let Some(m) = on() {
        m.tool_call(tool, outcome);
    }
}

/// A call the host refused before it ran, as its audit decision names it
/// (`deny`, `rate-limited`, `not-offered`, ...). `not-approved` is counted
/// by the approval flow, which knows pending from denied.
pub fn call_refused(tool: &str, decision: &str) {
    let outcome = match decision {
        "not-approved" => return,
        "rate-limited" => Outcome::RateLimited,
        "not-offered" => Outcome::NotOffered,
        "invalid-arguments" => Outcome::InvalidArguments,
        _ => Outcome::PolicyRefused,
    };
    tool_call(tool, outcome);
}

/// A call that ran (or was refused as it started) ended with `outcome`.
pub fn call_finished(tool: &str, outcome: &CallOutcome) {
    tool_call(tool, outcome_of(outcome));
}

/// The [`Outcome`] of a finished call.
pub fn outcome_of(outcome: &CallOutcome) -> Outcome {
    match outcome {
        CallOutcome::Output {
            is_error: false, ..
        } => Outcome::Ok,
        CallOutcome::Output { is_error: true, .. } => Outcome::ToolError,
        CallOutcome::UnknownTool(_) => Outcome::InvalidArguments,
        CallOutcome::Failed { kind, .. } => match kind {
            FailureKind::InvalidArguments => Outcome::InvalidArguments,
            FailureKind::Upstream => Outcome::UpstreamError,
            FailureKind::Precondition => Outcome::ToolError,
            FailureKind::Internal => Outcome::InternalError,
            FailureKind::Sandbox => Outcome::SandboxLimit,
            FailureKind::Policy => Outcome::PolicyRefused,
            FailureKind::Busy => Outcome::Busy,
        },
    }
}

/// `error.type` of an MCP request's result: `tool_error` for `isError`,
/// the JSON-RPC code of a protocol error (from a fixed set; `_OTHER`
/// otherwise), empty for success.
pub fn error_type(is_error: bool, jsonrpc_code: Option<i32>) -> &'static str {
    match jsonrpc_code {
        None if is_error => "tool_error",
        None => "",
        Some(-32700) => "-32700",
        Some(-32600) => "-32600",
        Some(-32601) => "-32601",
        Some(-32602) => "-32602",
        Some(-32603) => "-32603",
        Some(-32002) => "-32002",
        Some(-32000) => "-32000",
        Some(_) => "_OTHER",
    }
}

/// See [`Metrics::sandbox_limit`].
pub fn sandbox_limit(kind: SandboxLimit) {
    if let Some(m) = on() {
        m.sandbox_limit(kind);
    }
}

/// See [`Metrics::upstream_request`].
pub fn upstream_request(cluster: Option<&str>, method: &str, status: Option<u16>) {
    if let Some(m) = on() {
        m.upstream_request(cluster, method, status);
    }
}

/// See [`Metrics::egress_denied`].
pub fn egress_denied(reason: Denial) {
    if let Some(m) = on() {
        m.egress_denied(reason);
    }
}

/// See [`Metrics::approvals_pending`].
pub fn approvals_pending(count: usize, oldest: Duration) {
    if let Some(m) = on() {
        m.approvals_pending(count, oldest);
    }
}

/// See [`Metrics::sessions`].
pub fn sessions(count: usize) {
    if let Some(m) = on() {
        m.sessions(count);
    }
}

/// See [`Metrics::sandbox_slots`].
pub fn sandbox_slots(capacity: usize) {
    if let Some(m) = on() {
        m.sandbox_slots(capacity);
    }
}

/// See [`Metrics::slot_waiting`].
pub fn slot_waiting() -> Held<'static> {
    match on() {
        Some(m) => m.slot_waiting(),
        None => Held(None),
    }
}

/// See [`Metrics::slot_in_use`].
pub fn slot_in_use() -> Held<'static> {
    match on() {
        Some(m) => m.slot_in_use(),
        None => Held(None),
    }
}

/// See [`Metrics::compile_cache`].
pub fn compile_cache(result: CacheResult) {
    if let Some(m) = on() {
        m.compile_cache(result);
    }
}

/// See [`Metrics::on_scrape`].
pub fn on_scrape(sampler: Sampler) {
    if let Some(m) = on() {
        m.on_scrape(sampler);
    }
}

#[cfg(test)]
mod tests;
