//! The sandbox: one engine, the component compiled and pre-instantiated
//! once, and a fresh store and instance for every call, under a memory cap,
//! an epoch deadline and a wall-clock timeout (longer for a tool that
//! waits for Proxmox tasks), with the call's progress import.
//!
//! [`engine`] builds the engines and links the component, [`state`] is what
//! a call's store holds, [`limits`] its caps, [`descriptor`] checks the
//! tool list once at load and [`outcome`] says what a call's end means.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use arc_swap::ArcSwap;
use tokio::sync::Semaphore;
use wasmtime::component::{Component, ResourceTable};
use wasmtime::{Engine, Store, Trap, UpdateDeadline};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi_http::WasiHttpCtx;

mod bindings;
pub mod component;
mod contain;
mod descriptor;
mod engine;
pub mod guest_log;
mod limits;
mod outcome;
pub mod progress;
mod state;
pub mod wait_slots;

use crate::config::SandboxLimits;
use crate::egress::{
    Access, Binding, CallCaps, CallHooks, EgressLog, EgressRecord, Gate, MAX_REFUSALS,
};
use crate::secret::Redactor;
use crate::tools::{CallOutcome, FailureKind, ToolInfo};
use bindings::exports::pve_mcp::guest::tools as guest;
use component::{CacheDir, FirstCompile, LoadedFrom};
use contain::Contained;
use engine::{Code, Optimise, compile};
use guest_log::CappedPipe;
use limits::{EPOCH_TICK, Limits, time_limit};
use outcome::{Shaper, from_tool_error};
use progress::{ProgressSink, ReportSender};
use state::CallState;
use wait_slots::WaitShares;

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
    /// take every slot: see [`wait_slots()`].
    wait_slots: Semaphore,
    /// Each caller's share of the wait slots, so that one caller's waits
    /// cannot hold them all.
    wait_shares: WaitShares,
    redactor: Redactor,
    loaded_from: LoadedFrom,
}

/// What one call asks for.
pub struct CallRequest<'a> {
    /// The tool, as the component declared it.
    pub tool: &'a ToolInfo,
    /// Arguments, a JSON object as text.
    pub arguments: &'a str,
    /// Correlation id for logs.
    pub request_id: &'a str,
    /// The methods the egress gate lets this call send, decided by the
    /// policy (GET only unless the call may write).
    pub access: Access,
    /// Where the gate lets this call go: the binding made once from its
    /// arguments ([`Gate::bind`]).
    pub binding: Binding,
    /// Where the guest's progress reports go, when someone asked for
    /// them; without it they are dropped.
    pub progress: Option<ReportSender>,
    /// This call waits ([`ToolInfo::call_waits`]): it takes a wait slot
    /// and gets the wait limit on top of the plain deadline.
    pub waits: bool,
    /// Whose share of the wait slots a waiting call counts against
    /// ([`crate::caller::Caller::wait_key`]); `None` counts against no
    /// share (stdio, `pve-mcp call`).
    pub waiter: Option<Arc<str>>,
}

/// What a store is made for: a call, or the tool listing (which has no
/// tool of its own).
struct Scope<'a> {
    tool: &'a str,
    waits: bool,
    access: Access,
    binding: &'a Binding,
    progress: Option<ReportSender>,
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
            wait_shares: WaitShares::new(wait_slots::share_of(
                &limits,
                wait_slots(limits.max_concurrent_calls),
            )),
            limits,
            redactor,
            loaded_from,
        };
        sandbox.tools = sandbox.read_tools().await?.into();
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

    /// How long a call of `tool` may run: the sandbox timeout, plus the
    /// wait limit for a tool that waits.
    pub fn time_limit(&self, tool: &ToolInfo) -> Duration {
        time_limit(&self.limits, tool.waits)
    }

    /// The component's tools, as validated at load; shared, as their
    /// parsed schemas are large (about 1.4 MB for the built-in component).
    pub fn tools(&self) -> &Arc<[ToolInfo]> {
        &self.tools
    }

    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.tools.iter().find(|t| t.name == name)
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
        scope: Scope<'_>,
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
                scope.tool,
                scope.access,
                scope.binding.clone(),
                CallCaps {
                    max_response_bytes: self.limits.max_response_bytes,
                    max_requests: self.limits.max_requests_per_call,
                },
                egress,
            ),
            limits: Limits {
                memory_bytes: self.limits.memory_bytes,
                hit_memory: false,
                max_busy: match scope.waits {
                    true => self.limits.timeout,
                    false => Duration::MAX,
                },
                busy: Duration::ZERO,
                last_tick: None,
                hit_busy: false,
            },
            progress: ProgressSink::new(scope.progress, self.redactor.clone()),
        };
        let mut store = Store::new(&code.engine, state);
        store.limiter(|s| &mut s.limits);
        // Checked every tick: the guest is interrupted (a trap) when its
        // time is up, when it has run (not waited) for longer than the
        // sandbox timeout, and within a tick of the gate refusing it too
        // often, even if it never waits on the host again.
        let deadline = Instant::now() + time_limit(&self.limits, scope.waits) + EPOCH_TICK;
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

    /// The component's tools, validated.
    async fn read_tools(&self) -> anyhow::Result<Vec<ToolInfo>> {
        let log = CappedPipe::new(self.limits.max_log_bytes);
        // Listing tools may reach nothing: a component learns no cluster
        // from it, and a call's access comes from the policy.
        let listing = Scope {
            tool: "list-tools",
            waits: false,
            access: Access::Read,
            binding: &Binding::default(),
            progress: None,
        };
        let code = self.code.load_full();
        let mut store = self.new_store(&code, listing, EgressLog::default(), &log);
        let instance = code.pre.instantiate_async(&mut store).await?;
        let descriptors = instance
            .pve_mcp_guest_tools()
            .call_list_tools(&mut store)
            .await
            .map_err(anyhow::Error::from)
            .context("the component's list-tools failed")?;
        descriptor::tool_infos(descriptors)
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
        // A wait beyond its caller's share is refused before it queues: a
        // queued wait would keep the next caller's waits behind it all the
        // same. Its place is held until the call ends.
        let _share = match (&request.waiter, request.waits) {
            (Some(key), true) => match self.wait_shares.try_claim(key) {
                Ok(claim) => Some(claim),
                Err(full) => {
                    tracing::info!(
                        tool = %request.tool.name,
                        caller = %key,
                        share = full.share,
                        outcome = "busy",
                        "a wait beyond its caller's share was refused"
                    );
                    return CallReport {
                        outcome: CallOutcome::Failed {
                            kind: FailureKind::Busy,
                            message: full.message(),
                        },
                        egress: Vec::new(),
                    };
                }
            },
            _ => None,
        };
        // A waiting call takes a wait slot first, so calls that wait can
        // hold at most that many of the slots and reads always find one.
        let queued = crate::metrics::slot_waiting();
        let wait_permit = if request.waits {
            self.wait_slots.acquire().await.map(Some)
        } else {
            Ok(None)
        };
        let outcome = match (wait_permit, self.slots.acquire().await) {
            (Ok(_waiting), Ok(_permit)) => {
                let _in_use = (drop(queued), crate::metrics::slot_in_use());
                match Contained(Box::pin(self.run(&request, egress.clone()))).await {
                    Ok(outcome) => outcome,
                    Err(panic) => {
                        tracing::error!(
                            tool = %request.tool.name,
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
            _ => {
                crate::metrics::sandbox_limit(crate::metrics::SandboxLimit::Shutdown);
                CallOutcome::sandbox("the server is shutting down")
            }
        };
        let outcome = self.shaper(request.tool).redact(outcome);
        let egress = egress.lock().map(|r| r.clone()).unwrap_or_default();
        CallReport { outcome, egress }
    }

    async fn run(&self, request: &CallRequest<'_>, egress: EgressLog) -> CallOutcome {
        let log = CappedPipe::new(self.limits.max_log_bytes);
        let code = self.code.load_full();
        let scope = Scope {
            tool: &request.tool.name,
            waits: request.waits,
            access: request.access,
            binding: &request.binding,
            progress: request.progress.clone(),
        };
        let mut store = self.new_store(&code, scope, egress, &log);
        let shaper = self.shaper(request.tool);
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
                    .call_call_tool(&mut store, &context, &request.tool.name, request.arguments) => result,
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
                tool = %request.tool.name,
                dropped = dropped_reports,
                "progress reports over the caps (rate, size, not finite, queue) were dropped"
            );
        }
        let guest_log = log.contents();
        if !guest_log.is_empty() {
            tracing::debug!(
                tool = %request.tool.name,
                "guest stderr: {}",
                self.redactor.redact(&guest_log)
            );
        }
        if budget.over_requests() {
            crate::metrics::sandbox_limit(crate::metrics::SandboxLimit::Requests);
            return CallOutcome::sandbox(format!(
                "the tool component tried to send more than {} requests to Proxmox in one call and was stopped; this is a bug in the component or an attack by it, not something a retry can fix",
                budget.max_requests()
            ));
        }
        if budget.exhausted() {
            crate::metrics::sandbox_limit(crate::metrics::SandboxLimit::Refusals);
            tracing::warn!(
                tool = %request.tool.name,
                "sandbox stopped a call: the egress gate refused more than {MAX_REFUSALS} of its requests"
            );
            return CallOutcome::sandbox(format!(
                "the tool component made too many requests that pve-mcp's egress gate refused (more than {MAX_REFUSALS} in one call) and was stopped; this is a bug in the component or an attack by it, not something a different request or retry can fix"
            ));
        }
        match result {
            Err(_) => {
                crate::metrics::sandbox_limit(crate::metrics::SandboxLimit::Deadline);
                CallOutcome::sandbox(format!(
                    "the call did not finish within {} and was stopped; Proxmox may be slow or unreachable. Retry later, or narrow the request",
                    shaper.describe_limit()
                ))
            }
            Ok(Err(trap)) if hit_busy => {
                crate::metrics::sandbox_limit(crate::metrics::SandboxLimit::Cpu);
                let message = format!(
                    "the tool component computed for more than {} s of running time and was stopped; a tool may wait for Proxmox tasks longer than that, but not compute",
                    self.limits.timeout.as_secs()
                );
                tracing::warn!(
                    tool = %request.tool.name,
                    "sandbox stopped a call: {message} ({trap:#})"
                );
                CallOutcome::sandbox(message)
            }
            Ok(Err(trap)) => shaper.describe_trap(&trap, hit_memory, &guest_log),
            Ok(Ok(Err(error))) => from_tool_error(error),
            Ok(Ok(Ok(output))) => shaper.check_output(output),
        }
    }

    fn shaper<'a>(&'a self, tool: &'a ToolInfo) -> Shaper<'a> {
        Shaper {
            limits: &self.limits,
            redactor: &self.redactor,
            tool: &tool.name,
            waits: tool.waits,
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
}
