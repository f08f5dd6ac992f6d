//! What metrics add to one tool call: the hooks a `tools/call` with one
//! upstream GET fires, timed in a loop, with metrics off (the process-wide
//! instance never enabled: each hook is one load of a `OnceLock`) and on.
//!
//! `cargo bench -p pve-mcp --bench metrics_hooks` (`PVE_MCP_BENCH_CALLS`,
//! default 1,000,000 calls a round; the best of 5 rounds is printed, so
//! load from elsewhere on a shared machine shows less). The per-call CPU
//! cost of a whole call is what `--bench stdio` measures; this prices the
//! part metrics add, which that bench cannot resolve (its readings vary by
//! about ±8%, the hooks cost under a thousandth of a call). Numbers are in
//! `docs/performance.md`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use pve_mcp::metrics::{self, Metrics, Outcome, Transport};

/// The component's tool names, as a server declares them.
const TOOLS: [&str; 32] = [
    "pve_list_vms",
    "pve_get_vm_status",
    "pve_list_clusters",
    "pve_get_version",
    "pve_get_cluster_status",
    "pve_list_nodes",
    "pve_get_node_metrics",
    "pve_list_resources",
    "pve_get_vm_config",
    "pve_list_storage",
    "pve_list_storage_content",
    "pve_list_backups",
    "pve_get_task_status",
    "pve_list_snapshots",
    "pve_list_tasks",
    "pve_get_task_log",
    "pve_get_vm_metrics",
    "pve_get_vm_ips",
    "pve_list_ha",
    "pve_list_networks",
    "pve_check_permissions",
    "pve_get_next_vmid",
    "pve_wait_task",
    "pve_start_vm",
    "pve_stop_vm",
    "pve_shutdown_vm",
    "pve_reboot_vm",
    "pve_create_snapshot",
    "pve_delete_snapshot",
    "pve_rollback_snapshot",
    "pve_clone_vm",
    "pve_delete_vm",
];

/// The hooks of one `tools/call pve_get_vm_status` with one upstream GET,
/// in the order the host fires them, on `m` (or, with `None`, through the
/// process-wide functions with metrics off).
fn one_call(m: Option<&Metrics>) {
    let started = Instant::now();
    match m {
        Some(m) => {
            let queued = m.slot_waiting();
            let in_use = (drop(queued), m.slot_in_use());
            m.upstream_request(Some("default"), "GET", Some(200));
            drop(in_use);
            m.tool_call("pve_get_vm_status", Outcome::Ok);
            m.operation(
                "tools/call",
                "pve_get_vm_status",
                metrics::error_type(false, None),
                Transport::Pipe,
                Some("2025-11-25"),
                started.elapsed(),
            );
        }
        None => {
            // What the off path runs: the same calls, each returning at once.
            if metrics::enabled() {
                unreachable!("metrics are never enabled in this bench");
            }
            let queued = metrics::slot_waiting();
            let in_use = (drop(queued), metrics::slot_in_use());
            metrics::upstream_request(Some("default"), "GET", Some(200));
            drop(in_use);
            metrics::tool_call("pve_get_vm_status", Outcome::Ok);
        }
    }
}

/// The best of `rounds` rounds of `calls` calls: nanoseconds per call.
fn best(rounds: usize, calls: usize, mut f: impl FnMut()) -> f64 {
    (0..rounds)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..calls {
                f();
            }
            started.elapsed().as_nanos() as f64 / calls as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let calls: usize = std::env::var("PVE_MCP_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let rounds = 5;
    let on = Metrics::new();
    on.declare_tools(TOOLS);
    on.sandbox_slots(32);
    // Every series a busy server has: each tool with a few outcomes.
    for tool in TOOLS {
        for outcome in [Outcome::Ok, Outcome::ToolError, Outcome::PolicyRefused] {
            on.tool_call(tool, outcome);
        }
    }
    let off_ns = best(rounds, calls, || one_call(black_box(None)));
    let on_ns = best(rounds, calls, || one_call(black_box(Some(&on))));
    let started = Instant::now();
    let mut bytes = 0;
    for _ in 0..100 {
        bytes = black_box(on.render()).len();
    }
    let render = started.elapsed() / 100;
    println!("| measure | per call |");
    println!("| --- | ---: |");
    println!("| metrics off: the hooks of one call | {off_ns:.1} ns |");
    println!("| metrics on: the hooks of one call (1 upstream GET) | {on_ns:.1} ns |");
    println!(
        "| rendering /metrics ({} tools x 3 outcomes, {bytes} bytes), per scrape | {} |",
        TOOLS.len(),
        micros(render)
    );
    println!("\n({calls} calls a round, best of {rounds} rounds)");
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_nanos() as f64 / 1000.0)
}
