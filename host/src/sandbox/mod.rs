//! The sandbox: one engine, the component compiled and pre-instantiated
//! once, and a fresh store and instance for every call, under a memory cap,
//! an epoch deadline and a wall-clock timeout (longer for a tool that
//! waits for Proxmox tasks), with the call's progress import.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use arc_swap::ArcSwap;
use tokio::sync::Semaphore;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{
    Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter, Store, Strategy,
    Trap, UpdateDeadline,
};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

pub mod component;
mod contain;
pub mod guest_log;
pub mod progress;

use crate::config::SandboxLimits;
use crate::egress::Access;
use crate::egress::{
    CallCaps, CallHooks, ClusterIndex, EgressLog, EgressRecord, Gate, MAX_REFUSALS,
};
use crate::route::{BoundRoute, Route};
use crate::secret::Redactor;
use crate::tools::{
    Annotations, CallOutcome, FailureKind, ToolInfo, parse_schema, valid_tool_name,
};
use component::{CacheDir, FirstCompile, LoadedFrom};
use contain::Contained;
use guest_log::CappedPipe;
use progress::{ProgressSink, ReportSender};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "pve-tools",
        exports: { default: async },
        with: {
            "wasi:http": wasmtime_wasi_http::p2::bindings::http,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:cli": wasmtime_wasi::p2::bindings::cli,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
            "wasi:filesystem": wasmtime_wasi::p2::bindings::filesystem,
            "wasi:random": wasmtime_wasi::p2::bindings::random,
        },
    });
}

use bindings::exports::pve_mcp::guest::tools as guest;

/// The argument every tool of the component takes to name the cluster it
/// talks to (see `call-context` in the WIT); the call is bound to it.
pub const CLUSTER_ARG: &str = "cluster";

/// How often the epoch advances; deadlines are counted in these ticks.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Everything a call's store holds. Dropped with the store at the end of the
/// call, so nothing survives from one call to the next.
struct CallState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
    hooks: CallHooks,
    limits: Limits,
    progress: ProgressSink,
}

impl bindings::pve_mcp::guest::progress::Host for CallState {
    fn report(&mut self, progress: f64, total: Option<f64>, message: String) {
        self.progress.report(progress, total, &message);
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// The memory cap, remembering whether the guest hit it, so a trap can be
/// reported as "memory limit" rather than as a crash; and the guest's
/// running time, so a call that may wait long cannot compute long.
struct Limits {
    memory_bytes: usize,
    hit_memory: bool,
    /// Wasm running time allowed to a call that may wait: the sandbox
    /// timeout, however long it may wait (other calls' deadline is that).
    max_busy: Duration,
    /// Wasm running time so far, sampled at epoch ticks.
    busy: Duration,
    /// When the epoch callback last ran.
    last_tick: Option<Instant>,
    hit_busy: bool,
}

impl Limits {
    /// Counts one epoch tick of the guest's time. The callback runs once a
    /// tick while the guest executes, and once when it resumes after
    /// waiting on the host; only the gap since a tick just before is
    /// running time. Whether the budget is spent.
    fn tick(&mut self, now: Instant) -> bool {
        if let Some(last) = self.last_tick {
            let gap = now.saturating_duration_since(last);
            if gap < EPOCH_TICK * 2 {
                self.busy += gap;
            }
        }
        self.last_tick = Some(now);
        self.hit_busy = self.busy > self.max_busy;
        self.hit_busy
    }
}

const MAX_TABLE_ELEMENTS: usize = 100_000;
const MAX_INSTANCES: usize = 64;

impl ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            self.hit_memory = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }
}

/// The loaded component and everything needed to run calls in it.
pub struct Sandbox {
    /// The compiled component calls run in. Replaced once, when a quick
    /// start's Winch code gives way to Cranelift's; a call keeps the code
    /// it started with.
    code: Arc<ArcSwap<Code>>,
    tools: Arc<[ToolInfo]>,
    gate: Arc<Gate>,
    limits: SandboxLimits,
    slots: Semaphore,
    /// Held, besides a slot, by calls of tools that wait, so they can never
    /// take every slot: see [`wait_slots`].
    wait_slots: Semaphore,
    /// The tools whose descriptor says they wait for Proxmox tasks.
    waiting: Box<[String]>,
    redactor: Redactor,
    loaded_from: LoadedFrom,
}

/// A component compiled for an engine, linked and pre-instantiated, with
/// the thread that advances that engine's epoch.
struct Code {
    engine: Engine,
    pre: bindings::PveToolsPre<CallState>,
    _ticker: EpochTicker,
}

impl Code {
    fn link(engine: Engine, component: &Component) -> anyhow::Result<Code> {
        let mut linker: Linker<CallState> = Linker::new(&engine);
        // Full WASI p2 is linked so any component built by Rust's std
        // instantiates; the WasiCtx below grants no env, args, preopens or
        // network, so the interfaces are there but open nothing.
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        bindings::pve_mcp::guest::progress::add_to_linker::<
            CallState,
            wasmtime::component::HasSelf<CallState>,
        >(&mut linker, |state| state)?;
        let pre = linker
            .instantiate_pre(component)
            .map_err(anyhow::Error::from)
            .context(
                "the component does not fit this host: it needs imports pve-mcp does not provide",
            )?;
        let pre = bindings::PveToolsPre::new(pre)
            .map_err(anyhow::Error::from)
            .context("the component does not implement the pve-mcp:guest/pve-tools world")?;
        let ticker = EpochTicker::start(engine.clone()).context("starting the epoch thread")?;
        Ok(Code {
            engine,
            pre,
            _ticker: ticker,
        })
    }
}

/// What one call asks for.
pub struct CallRequest<'a> {
    /// Tool name.
    pub tool: &'a str,
    /// Arguments, a JSON object as text.
    pub arguments: &'a str,
    /// Correlation id for logs.
    pub request_id: &'a str,
    /// The methods the egress gate lets this call send, decided by the
    /// policy (GET only unless the call may write).
    pub access: Access,
    /// The one cluster the egress gate lets this call reach, from
    /// [`Sandbox::cluster_for`] on its arguments; `None` reaches none.
    pub cluster: Option<ClusterIndex>,
    /// The writes the gate lets this call send (when `access` is write):
    /// its tool's routes bound to its arguments, from
    /// [`Sandbox::writes_for`].
    pub writes: Vec<BoundRoute>,
    /// Where the guest's progress reports go, when someone asked for
    /// them; without it they are dropped.
    pub progress: Option<ReportSender>,
}

/// A call's outcome plus what it did on the network.
#[derive(Debug)]
pub struct CallReport {
    /// What the agent sees.
    pub outcome: CallOutcome,
    /// Every request the guest tried, allowed or denied.
    pub egress: Vec<EgressRecord>,
}

impl CallReport {
    /// The report of a call the policy refused: the guest never ran.
    pub fn refused(message: String) -> CallReport {
        CallReport {
            outcome: CallOutcome::Failed {
                kind: FailureKind::Policy,
                message,
            },
            egress: Vec::new(),
        }
    }
}

impl Sandbox {
    /// Builds the engine, compiles (or loads) the component, links it, and
    /// reads its tool list once.
    pub async fn new(
        wasm: &[u8],
        gate: Gate,
        limits: SandboxLimits,
        redactor: Redactor,
        cache: &CacheDir,
        first: FirstCompile,
    ) -> anyhow::Result<Sandbox> {
        let (engine, component, loaded_from, optimise) = compile(wasm, &limits, cache, first)?;
        let code = Arc::new(ArcSwap::from_pointee(Code::link(engine, &component)?));
        let mut sandbox = Sandbox {
            code: code.clone(),
            tools: Arc::from(Vec::new()),
            gate: Arc::new(gate),
            slots: Semaphore::new(limits.max_concurrent_calls),
            wait_slots: Semaphore::new(wait_slots(limits.max_concurrent_calls)),
            waiting: Box::new([]),
            limits,
            redactor,
            loaded_from,
        };
        let (tools, waiting) = sandbox.read_tools().await?;
        sandbox.tools = tools.into();
        sandbox.waiting = waiting.into();
        // Only now, so that Cranelift does not take the cores the start
        // itself needs. Its code replaces Winch's for the calls after.
        if let Some(Optimise { engine }) = optimise {
            let install =
                move |engine: Engine, component: Component| match Code::link(engine, &component) {
                    Ok(optimised) => {
                        code.store(Arc::new(optimised));
                        tracing::info!("calls now run the component as Cranelift compiled it");
                    }
                    Err(e) => tracing::warn!("keeping Winch's code: {e:#}"),
                };
            component::optimise_in_background(engine, wasm.to_vec(), cache.clone(), install);
        }
        Ok(sandbox)
    }

    /// Whether the component declared that `tool` waits for Proxmox tasks
    /// (its calls get [`SandboxLimits::max_wait`] more time).
    pub fn waits(&self, tool: &str) -> bool {
        self.waiting.iter().any(|t| t == tool)
    }

    /// How long a call of `tool` may run: the sandbox timeout, plus the
    /// wait limit for a tool that waits.
    pub fn time_limit(&self, tool: &str) -> Duration {
        if self.waits(tool) {
            self.limits.timeout + self.limits.max_wait
        } else {
            self.limits.timeout
        }
    }

    /// The component's tools, as validated at load; shared, as their
    /// parsed schemas are large (about 1.4 MB for the built-in component).
    pub fn tools(&self) -> &Arc<[ToolInfo]> {
        &self.tools
    }

    /// Whether the compiled component came from the cache.
    pub fn loaded_from(&self) -> LoadedFrom {
        self.loaded_from
    }

    /// The gate, for listing endpoints and for the egress proxy.
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// The largest answer from Proxmox a call may read, in bytes.
    pub fn max_response_bytes(&self) -> usize {
        self.limits.max_response_bytes
    }

    fn new_store(
        &self,
        code: &Code,
        request: &CallRequest<'_>,
        egress: EgressLog,
        log: &CappedPipe,
    ) -> Store<CallState> {
        let wasi = WasiCtxBuilder::new()
            .stdout(log.clone())
            .stderr(log.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let state = CallState {
            wasi,
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            hooks: CallHooks::new(
                self.gate.clone(),
                request.tool,
                request.access,
                request.cluster,
                request.writes.clone(),
                CallCaps {
                    max_response_bytes: self.limits.max_response_bytes,
                    max_requests: self.limits.max_requests_per_call,
                },
                egress,
            ),
            limits: Limits {
                memory_bytes: self.limits.memory_bytes,
                hit_memory: false,
                max_busy: match self.waits(request.tool) {
                    true => self.limits.timeout,
                    false => Duration::MAX,
                },
                busy: Duration::ZERO,
                last_tick: None,
                hit_busy: false,
            },
            progress: ProgressSink::new(request.progress.clone(), self.redactor.clone()),
        };
        let mut store = Store::new(&code.engine, state);
        store.limiter(|s| &mut s.limits);
        // Checked every tick: the guest is interrupted (a trap) when its
        // time is up, when it has run (not waited) for longer than the
        // sandbox timeout, and within a tick of the gate refusing it too
        // often, even if it never waits on the host again.
        let deadline = Instant::now() + self.time_limit(request.tool) + EPOCH_TICK;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |mut store| {
            let now = Instant::now();
            let busy_too_long = store.data_mut().limits.tick(now);
            if now >= deadline || busy_too_long || store.data().hooks.budget().exhausted() {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Continue(1))
            }
        });
        store
    }

    /// The component's tools, validated, and the names of those that wait.
    async fn read_tools(&self) -> anyhow::Result<(Vec<ToolInfo>, Vec<String>)> {
        let log = CappedPipe::new(self.limits.max_log_bytes);
        let listing = CallRequest {
            tool: "list-tools",
            arguments: "",
            request_id: "list-tools",
            // Listing tools may reach nothing: a component learns no
            // cluster from it, and a call's access comes from the policy.
            access: Access::Read,
            cluster: None,
            writes: Vec::new(),
            progress: None,
        };
        let code = self.code.load_full();
        let mut store = self.new_store(&code, &listing, EgressLog::default(), &log);
        let instance = code.pre.instantiate_async(&mut store).await?;
        let descriptors = instance
            .pve_mcp_guest_tools()
            .call_list_tools(&mut store)
            .await
            .map_err(anyhow::Error::from)
            .context("the component's list-tools failed")?;
        let mut tools = Vec::with_capacity(descriptors.len());
        let mut waiting = Vec::new();
        for d in descriptors {
            if !valid_tool_name(&d.name) {
                anyhow::bail!(
                    "the component declares a tool with an invalid name {:?} (1-64 of A-Z a-z 0-9 _ - .)",
                    d.name
                );
            }
            if tools.iter().any(|t: &ToolInfo| t.name == d.name) {
                anyhow::bail!("the component declares tool {} twice", d.name);
            }
            if d.waits {
                waiting.push(d.name.clone());
            }
            tools.push(ToolInfo {
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
                    .iter()
                    .map(|r| Route::parse(&r.method, &r.path))
                    .collect::<Result<_, _>>()
                    .map_err(|problem| {
                        anyhow::anyhow!(
                            "tool {:?} declares a route the host refuses: {problem}",
                            d.name
                        )
                    })?,
                name: d.name,
                title: d.title,
                description: d.description,
            });
        }
        Ok((tools, waiting))
    }

    /// The cluster a call with these arguments is for: the one its
    /// `cluster` argument names, or the default (see [`Gate::resolve`]).
    pub fn cluster_for(&self, arguments: &crate::tools::JsonObject) -> Option<ClusterIndex> {
        self.gate.resolve(arguments.get(CLUSTER_ARG))
    }

    /// The writes a call of `tool` with these arguments may send: the
    /// tool's routes, bound to them.
    pub fn writes_for(&self, tool: &str, arguments: &crate::tools::JsonObject) -> Vec<BoundRoute> {
        self.tools
            .iter()
            .find(|t| t.name == tool)
            .map(|t| t.routes.iter().map(|r| r.bind(arguments)).collect())
            .unwrap_or_default()
    }

    /// The configured name of a resolved cluster.
    pub fn cluster_name(&self, cluster: ClusterIndex) -> &str {
        self.gate.cluster_name(cluster)
    }

    /// Runs one tool call in a fresh instance. Never panics and never
    /// returns a Rust error: every failure is a [`CallOutcome`].
    pub async fn call(&self, request: CallRequest<'_>) -> CallReport {
        self.call_recording(request, EgressLog::default()).await
    }

    /// [`Sandbox::call`], recording the call's requests in `egress` as
    /// they happen, so the caller still has them if it drops the call
    /// unfinished (the audit log records a cancelled call's requests).
    pub async fn call_recording(&self, request: CallRequest<'_>, egress: EgressLog) -> CallReport {
        // A waiting call takes a wait slot first, so calls that wait can
        // hold at most that many of the slots and reads always find one.
        let wait_permit = if self.waits(request.tool) {
            self.wait_slots.acquire().await.map(Some)
        } else {
            Ok(None)
        };
        let outcome = match (wait_permit, self.slots.acquire().await) {
            (Ok(_waiting), Ok(_permit)) => {
                match Contained(Box::pin(self.run(&request, egress.clone()))).await {
                    Ok(outcome) => outcome,
                    Err(panic) => {
                        tracing::error!(
                            tool = request.tool,
                            "a bug in pve-mcp ended this call: {panic}"
                        );
                        CallOutcome::Failed {
                            kind: FailureKind::Internal,
                            message: "pve-mcp hit a bug of its own while running this call and \
                                      ended it; the server keeps serving. Retrying may work; \
                                      please report the error in the server's log."
                                .into(),
                        }
                    }
                }
            }
            _ => CallOutcome::sandbox("the server is shutting down"),
        };
        let outcome = self.redact_outcome(outcome);
        let egress = egress.lock().map(|r| r.clone()).unwrap_or_default();
        CallReport { outcome, egress }
    }

    async fn run(&self, request: &CallRequest<'_>, egress: EgressLog) -> CallOutcome {
        let log = CappedPipe::new(self.limits.max_log_bytes);
        let code = self.code.load_full();
        let mut store = self.new_store(&code, request, egress, &log);
        let context = guest::CallContext {
            endpoints: self
                .gate
                .endpoints()
                .iter()
                .map(|e| guest::Endpoint {
                    name: e.cluster.clone(),
                    base_url: e.endpoint.base_url(),
                })
                .collect(),
            request_id: request.request_id.to_string(),
            wait_limit_secs: u32::try_from(self.limits.max_wait.as_secs()).unwrap_or(u32::MAX),
        };
        let budget = store.data().hooks.budget();
        let run = async {
            let instance = code.pre.instantiate_async(&mut store).await?;
            // A guest refused too often is dropped here if it is waiting on
            // the host, and trapped by the epoch callback if it is running.
            tokio::select! {
                result = instance
                    .pve_mcp_guest_tools()
                    .call_call_tool(&mut store, &context, request.tool, request.arguments) => result,
                () = budget.exhausted_signal() => Err(Trap::Interrupt.into()),
            }
        };
        // The epoch deadline stops a guest burning CPU; this timeout stops
        // one waiting on the network, and dropping the future cancels the
        // upstream request.
        let limit = self.time_limit(request.tool);
        let result = tokio::time::timeout(limit, run).await;
        let hit_memory = store.data().limits.hit_memory;
        let hit_busy = store.data().limits.hit_busy;
        let dropped_reports = store.data().progress.dropped;
        drop(store);
        if dropped_reports > 0 {
            tracing::debug!(
                tool = request.tool,
                dropped = dropped_reports,
                "progress reports over the caps (rate, size, not finite, queue) were dropped"
            );
        }
        let guest_log = log.contents();
        if !guest_log.is_empty() {
            tracing::debug!(
                tool = request.tool,
                "guest stderr: {}",
                self.redactor.redact(&guest_log)
            );
        }
        if budget.over_requests() {
            return CallOutcome::sandbox(format!(
                "the tool component tried to send more than {} requests to Proxmox in one call and was stopped; this is a bug in the component or an attack by it, not something a retry can fix",
                budget.max_requests()
            ));
        }
        if budget.exhausted() {
            tracing::warn!(
                tool = request.tool,
                "sandbox stopped a call: the egress gate refused more than {MAX_REFUSALS} of its requests"
            );
            return CallOutcome::sandbox(format!(
                "the tool component made too many requests that pve-mcp's egress gate refused (more than {MAX_REFUSALS} in one call) and was stopped; this is a bug in the component or an attack by it, not something a different request or retry can fix"
            ));
        }
        match result {
            Err(_) => CallOutcome::sandbox(format!(
                "the call did not finish within {} and was stopped; Proxmox may be slow or unreachable. Retry later, or narrow the request",
                self.describe_limit(request.tool)
            )),
            Ok(Err(trap)) if hit_busy => {
                let message = format!(
                    "the tool component computed for more than {} s of running time and was stopped; a tool may wait for Proxmox tasks longer than that, but not compute",
                    self.limits.timeout.as_secs()
                );
                tracing::warn!(
                    tool = request.tool,
                    "sandbox stopped a call: {message} ({trap:#})"
                );
                CallOutcome::sandbox(message)
            }
            Ok(Err(trap)) => self.describe_trap(request.tool, &trap, hit_memory, &guest_log),
            Ok(Ok(Err(error))) => from_tool_error(error),
            Ok(Ok(Ok(output))) => self.check_output(request.tool, output),
        }
    }

    fn describe_trap(
        &self,
        tool: &str,
        trap: &wasmtime::Error,
        hit_memory: bool,
        guest_log: &str,
    ) -> CallOutcome {
        let message = if hit_memory {
            format!(
                "the tool component exceeded its memory limit of {} MiB and was stopped",
                self.limits.memory_bytes >> 20
            )
        } else if matches!(trap.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
            format!(
                "the tool component ran past {} and was stopped",
                self.describe_limit(tool)
            )
        } else if let Some(panic) = panic_message(guest_log) {
            format!("the tool component crashed ({panic}); this is a bug in the component")
        } else {
            format!("the tool component crashed: {}", trap.root_cause())
        };
        tracing::warn!(tool, "sandbox stopped a call: {message} ({trap:#})");
        CallOutcome::sandbox(message)
    }

    /// The limit a call of `tool` ran into, for its error message.
    fn describe_limit(&self, tool: &str) -> String {
        let timeout = self.limits.timeout.as_secs();
        if self.waits(tool) {
            format!(
                "its {} s limit (the {timeout} s deadline plus up to {} s of waiting for Proxmox tasks)",
                self.time_limit(tool).as_secs(),
                self.limits.max_wait.as_secs()
            )
        } else {
            format!("its {timeout} s deadline")
        }
    }

    fn check_output(&self, tool: &str, output: guest::ToolOutput) -> CallOutcome {
        if output.structured.len() > self.limits.max_output_bytes {
            return CallOutcome::sandbox(format!(
                "the tool's result is {} MiB, over the {} MiB limit; narrow the request (filters, a lower limit)",
                output.structured.len() >> 20,
                self.limits.max_output_bytes >> 20
            ));
        }
        match serde_json::from_str::<serde_json::Value>(&output.structured) {
            Ok(structured @ serde_json::Value::Object(_)) => CallOutcome::Output {
                structured,
                summary: output.summary,
                is_error: output.is_error,
            },
            _ => {
                tracing::warn!(
                    tool,
                    "the component returned a structured result that is not a JSON object"
                );
                CallOutcome::Failed {
                    kind: FailureKind::Internal,
                    message: "the tool component returned a malformed result; this is a bug in the component".into(),
                }
            }
        }
    }

    fn redact_outcome(&self, outcome: CallOutcome) -> CallOutcome {
        match outcome {
            CallOutcome::Output {
                structured,
                summary,
                is_error,
            } => {
                let text = structured.to_string();
                let structured = match self.redactor.redact(&text) {
                    std::borrow::Cow::Borrowed(_) => structured,
                    std::borrow::Cow::Owned(clean) => {
                        serde_json::from_str(&clean).unwrap_or(serde_json::Value::Null)
                    }
                };
                CallOutcome::Output {
                    structured,
                    summary: self.redactor.redact(&summary).into_owned(),
                    is_error,
                }
            }
            CallOutcome::Failed { kind, message } => CallOutcome::Failed {
                kind,
                message: self.redactor.redact(&message).into_owned(),
            },
            other => other,
        }
    }
}

/// How many of `max_concurrent_calls` slots calls of waiting tools may
/// hold at once: all but a quarter (at least one), so that however many
/// calls wait for Proxmox tasks, reads still find a free slot. With a
/// single slot there is nothing to keep back.
pub fn wait_slots(max_concurrent_calls: usize) -> usize {
    let kept_for_others = (max_concurrent_calls / 4).max(1);
    max_concurrent_calls.saturating_sub(kept_for_others).max(1)
}

/// Rust prints `thread '..' panicked at FILE:LINE:COL:` and the message on
/// the next line; both together say what went wrong.
fn panic_message(guest_log: &str) -> Option<String> {
    let mut lines = guest_log.lines();
    let at = lines.by_ref().find(|l| l.contains("panicked at"))?;
    let location = at
        .split("panicked at")
        .nth(1)
        .unwrap_or("")
        .trim()
        .trim_end_matches(':');
    let message = lines.next().unwrap_or("").trim();
    Some(format!("panicked at {location}: {message}"))
}

fn from_tool_error(error: guest::ToolError) -> CallOutcome {
    let (kind, message) = match error {
        guest::ToolError::UnknownTool(name) => return CallOutcome::UnknownTool(name),
        guest::ToolError::InvalidArguments(m) => (FailureKind::InvalidArguments, m),
        guest::ToolError::Upstream(m) => (FailureKind::Upstream, m),
        guest::ToolError::Precondition(m) => (FailureKind::Precondition, m),
        guest::ToolError::Internal(m) => (FailureKind::Internal, m),
    };
    CallOutcome::Failed { kind, message }
}

/// The engine calls run on and the component compiled for it: from the
/// cache when it has it; else compiled with Winch while Cranelift fills the
/// cache in the background (a server's first start), or with Cranelift.
/// The two engines differ only in their compiler's settings, so the
/// artifact Cranelift stores is the one the next start's engine looks for.
fn compile(
    wasm: &[u8],
    limits: &SandboxLimits,
    cache: &CacheDir,
    first: FirstCompile,
) -> anyhow::Result<(Engine, Component, LoadedFrom, Option<Optimise>)> {
    let engine = build_engine(limits, Strategy::Cranelift)?;
    if let Some(component) = component::cached(&engine, wasm, cache) {
        return Ok((engine, component, LoadedFrom::Cache, None));
    }
    if first == FirstCompile::Quick && cache.enabled() {
        // Winch is not everywhere (x86-64 needs AVX, and not every
        // architecture has it): where it cannot, Cranelift compiles now.
        let quick = build_engine(limits, Strategy::Winch)
            .and_then(|quick| Ok((component::compile(&quick, wasm)?, quick)));
        match quick {
            Ok((component, quick)) => {
                let optimise = Some(Optimise { engine });
                return Ok((quick, component, LoadedFrom::Quick, optimise));
            }
            Err(e) => tracing::debug!("Winch cannot compile the component here: {e:#}"),
        }
    }
    let component = component::compile_into_cache(&engine, wasm, cache)?;
    Ok((engine, component, LoadedFrom::Compiled, None))
}

/// Cranelift's compile still to do after a quick start, with its engine.
struct Optimise {
    engine: Engine,
}

fn build_engine(limits: &SandboxLimits, compiler: Strategy) -> anyhow::Result<Engine> {
    let mut config = wasmtime::Config::new();
    config.strategy(compiler);
    if compiler == Strategy::Winch {
        // Cranelift still compiles the component's trampolines: for a quick
        // start they need not be optimised (Winch's code is never cached).
        config.cranelift_opt_level(wasmtime::OptLevel::None);
    }
    config.epoch_interruption(true);
    config.memory_init_cow(true);
    config.max_wasm_stack(1 << 20);
    // Slots for every concurrent call, plus one for the tool listing.
    let slots = limits.max_concurrent_calls as u32 + 1;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .total_core_instances(slots * 8)
        .total_memories(slots * 2)
        .total_tables(slots * 4)
        .max_memory_size(limits.memory_bytes)
        .max_component_instance_size(1 << 20)
        // Resetting a slot's memory with madvise after every call cost ~10%
        // of the server's CPU (TLB shootdowns, page faults); keeping the
        // first pages resident and clearing them in place is cheaper. Where
        // the kernel lacks PAGEMAP_SCAN (< 6.7) the kept pages are cleared
        // with memset, so the amount stays small.
        .pagemap_scan(wasmtime::Enabled::Auto)
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(64 << 10);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    match Engine::new(&config) {
        Ok(engine) => Ok(engine),
        Err(e) => {
            // The pool reserves address space up front; where that is not
            // allowed (a tight `ulimit -v`), instantiating on demand still works.
            tracing::warn!("pooling allocator unavailable ({e}); allocating instances on demand");
            config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
            Ok(Engine::new(&config)?)
        }
    }
}

/// Advances the engine's epoch on a background thread until dropped.
struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    fn start(engine: Engine) -> std::io::Result<EpochTicker> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("pve-mcp-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })?;
        Ok(EpochTicker { stop })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded component must import nothing beyond the world in
    /// wit/pve-tools.wit (and the types those interfaces pull in), so a
    /// gateway that links exactly the world can host it.
    #[test]
    fn embedded_component_imports_only_what_the_world_declares() {
        let imports = component::imports(component::GUEST_WASM).unwrap();
        assert!(
            imports
                .iter()
                .any(|i| i.starts_with("wasi:http/outgoing-handler")),
            "{imports:?}"
        );
        assert_eq!(
            component::undeclared(&imports),
            Vec::<String>::new(),
            "the component imports what the world does not declare"
        );
        // The check itself: an import outside the world is reported.
        assert_eq!(
            component::undeclared(&["wasi:sockets/tcp@0.2.12".to_owned()]),
            ["wasi:sockets/tcp@0.2.12"]
        );
    }

    fn limits(max_busy: Duration) -> Limits {
        Limits {
            memory_bytes: 0,
            hit_memory: false,
            max_busy,
            busy: Duration::ZERO,
            last_tick: None,
            hit_busy: false,
        }
    }

    #[test]
    fn running_time_counts_ticks_in_a_row_not_time_spent_waiting() {
        let start = Instant::now();
        let mut l = limits(Duration::from_millis(100));
        // Resuming once a second for a minute is waiting, not running.
        for s in 0..60 {
            assert!(!l.tick(start + Duration::from_secs(s)));
        }
        assert_eq!(l.busy, Duration::ZERO);
        // Running: a tick every 10 ms, 100 ms allowed.
        let run = start + Duration::from_secs(61);
        let spent = (0..100)
            .position(|i| l.tick(run + EPOCH_TICK * i))
            .expect("stopped");
        assert_eq!(spent, 11, "stopped just past 100 ms of running");
        assert!(l.hit_busy);
    }

    #[test]
    fn waiting_calls_always_leave_a_slot_for_others() {
        assert_eq!(wait_slots(1), 1);
        assert_eq!(wait_slots(2), 1);
        assert_eq!(wait_slots(4), 3);
        assert_eq!(wait_slots(20), 15);
        assert_eq!(wait_slots(32), 24);
        for max in 2..=1024 {
            assert!(wait_slots(max) < max, "{max}");
            assert!(wait_slots(max) >= max / 2, "{max}");
        }
    }

    #[test]
    fn panic_messages_keep_location_and_text() {
        let log = "thread '<unnamed>' (1) panicked at src/x.rs:5:9:\nboom here\nnote: run with RUST_BACKTRACE";
        assert_eq!(
            panic_message(log).unwrap(),
            "panicked at src/x.rs:5:9: boom here"
        );
        assert_eq!(panic_message("nothing"), None);
    }
}
