//! What one call's store holds: WASI with nothing granted, wasi:http with
//! the call's egress hooks, its limits and its progress sink. Dropped with
//! the store at the end of the call, so nothing survives from one call to
//! the next.

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings;
use super::limits::Limits;
use super::progress::ProgressSink;
use crate::egress::CallHooks;

/// Everything a call's store holds. Dropped with the store at the end of the
/// call, so nothing survives from one call to the next.
pub struct CallState {
    pub wasi: WasiCtx,
    pub http: WasiHttpCtx,
    pub table: ResourceTable,
    pub hooks: CallHooks,
    pub limits: Limits,
    pub progress: ProgressSink,
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
