//! How the component gets compiled: a server's first start runs on code
//! from Winch while Cranelift fills the cache, and the next start loads
//! Cranelift's code from it; one-shot commands compile with Cranelift.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{HOSTILE_WASM, Opts, Server, fill_cache, simulator, within};

/// The compiled artifacts in `cache`.
fn artifacts(cache: &Path) -> usize {
    std::fs::read_dir(cache).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .count()
    })
}

/// What the server logs when Cranelift's code replaces Winch's.
const SWAPPED: &str = "calls now run the component as Cranelift compiled it";

fn opts(cache: &Path) -> Opts {
    Opts::default().env("PVE_MCP_CACHE_DIR", cache.to_str().unwrap())
}

#[tokio::test]
async fn a_servers_first_start_runs_winch_code_and_the_next_loads_cranelifts_from_the_cache() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");

        let first = Server::start(&sim, opts(&cache)).await;
        let log = first.stderr();
        assert!(
            log.contains("component ready") && log.contains("compiler=winch"),
            "{log}"
        );
        // Winch's code answers exactly as Cranelift's does.
        assert_eq!(first.ok("pve_list_vms", json!({})).await["total"], 13);
        let status = first.ok("pve_get_vm_status", json!({"vmid": 100})).await;
        assert_eq!(status["status"], "running", "{status}");
        // Meanwhile Cranelift compiles it: into the cache for the next
        // start, and in place of Winch's code for this server's next calls.
        let deadline = Instant::now() + Duration::from_secs(120);
        while !first.stderr().contains(SWAPPED) {
            assert!(Instant::now() < deadline, "no swap: {}", first.stderr());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(artifacts(&cache), 1, "{}", first.stderr());
        assert_eq!(first.ok("pve_list_vms", json!({})).await["total"], 13);
        first.stop().await;

        let second = Server::start(&sim, opts(&cache)).await;
        let log = second.stderr();
        assert!(
            log.contains("compiled=false") && log.contains("compiler=cranelift"),
            "{log}"
        );
        assert_eq!(second.ok("pve_list_vms", json!({})).await["total"], 13);
        second.stop().await;
        assert_eq!(artifacts(&cache), 1);
    })
    .await;
}

#[test]
fn a_one_shot_command_compiles_with_cranelift_and_leaves_it_cached() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    fill_cache(&cache, None);
    assert_eq!(artifacts(&cache), 1, "cached before the command exits");
}

/// The sandbox's limits hold in Winch's code as in Cranelift's: a guest
/// that spins is stopped at its deadline and one that allocates without end
/// at its memory cap, and the server serves on.
#[tokio::test]
async fn winch_code_is_held_to_the_same_deadline_and_memory_cap() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("pve-mcp.toml");
        std::fs::write(&config, "[sandbox]\ntimeout_secs = 3\nmemory_mib = 64\n").unwrap();
        let opts = opts(&dir.path().join("cache"))
            .arg("--component")
            .arg(HOSTILE_WASM)
            .arg("--config")
            .arg(config.to_str().unwrap());
        let server = Server::start(&sim, opts).await;
        let log = server.stderr();
        assert!(log.contains("compiler=winch"), "{log}");
        // Sent before Cranelift's hostile build (a second or so on two
        // cores) can replace Winch's; a call keeps the code it started on.
        assert!(!log.contains(SWAPPED), "{log}");
        let started = Instant::now();
        let spin = server.err("hostile_spin", json!({})).await;
        assert!(spin.contains("deadline") || spin.contains("time"), "{spin}");
        assert!(started.elapsed() < Duration::from_secs(15));
        let memory = server.err("hostile_memory", json!({})).await;
        assert!(memory.contains("memory limit of 64 MiB"), "{memory}");
        let upstream = server.ok("hostile_slow_upstream", json!({})).await;
        assert_eq!(upstream["status"], 200, "{upstream}");
        server.stop().await;
    })
    .await;
}
