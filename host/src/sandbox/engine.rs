//! The engines calls run on: Cranelift (or Winch for a quick first start)
//! under the pooling allocator, epoch interruption and the sandbox's memory
//! cap; the component compiled for one, linked and pre-instantiated; and
//! the thread that advances its epoch.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

use super::bindings;
use super::component::{self, CacheDir, FirstCompile, LoadedFrom};
use super::limits::EPOCH_TICK;
use super::state::CallState;
use crate::config::SandboxLimits;

/// A component compiled for an engine, linked and pre-instantiated, with
/// the thread that advances that engine's epoch.
pub struct Code {
    pub engine: Engine,
    pub pre: bindings::PveToolsPre<CallState>,
    _ticker: EpochTicker,
}

impl Code {
    pub fn link(engine: Engine, component: &Component) -> anyhow::Result<Code> {
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

/// The engine calls run on and the component compiled for it: from the
/// cache when it has it; else compiled with Winch while Cranelift fills the
/// cache in the background (a server's first start), or with Cranelift.
/// The two engines differ only in their compiler's settings, so the
/// artifact Cranelift stores is the one the next start's engine looks for.
pub fn compile(
    wasm: &[u8],
    limits: &SandboxLimits,
    cache: &CacheDir,
    first: FirstCompile,
) -> anyhow::Result<(Engine, Component, LoadedFrom, Option<Optimise>)> {
    let engine = build_engine(limits, Strategy::Cranelift)?;
    let cached = component::cached(&engine, wasm, cache);
    crate::metrics::compile_cache(crate::metrics::CacheResult::of(cached.is_some()));
    if let Some(component) = cached {
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
pub struct Optimise {
    pub engine: Engine,
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
