//! What both benchmarks share: statistics, the spawned server's
//! environment, and reading its memory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use pve_sim::tokens::{ADMIN_TOKEN_ID, ADMIN_TOKEN_SECRET};

pub fn env_count(key: &str, default: usize) -> Result<usize> {
    match std::env::var(key) {
        Err(_) => Ok(default),
        Ok(raw) => match raw.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => bail!("{key}={raw:?} is not a positive whole number"),
        },
    }
}

/// Median and tail of one series of timings.
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    pub p50: Duration,
    pub p99: Duration,
}

/// Nearest-rank percentile of sorted samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    assert!(!sorted.is_empty(), "no samples");
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn latency(mut samples: Vec<Duration>) -> Latency {
    samples.sort_unstable();
    Latency {
        p50: percentile(&samples, 50.0),
        p99: percentile(&samples, 99.0),
    }
}

/// What a spawned `pve-mcp serve` is pointed at.
pub struct ServerEnv {
    pub base_url: String,
    pub ca_file: PathBuf,
    pub cache_dir: PathBuf,
    pub stderr_log: PathBuf,
}

impl ServerEnv {
    /// `pve-mcp serve` with only the variables set here: the developer's own
    /// PVE_* and RUST_LOG settings must not leak in.
    pub fn command(&self) -> tokio::process::Command {
        let mut cmd = match std::env::var("PVE_MCP_BENCH_WRAP") {
            Ok(wrap) => {
                let mut c = tokio::process::Command::new(wrap);
                c.arg(env!("CARGO_BIN_EXE_pve-mcp"));
                c
            }
            Err(_) => tokio::process::Command::new(env!("CARGO_BIN_EXE_pve-mcp")),
        };
        cmd.arg("serve").env_clear();
        for key in ["PATH", "HOME", "TOKIO_WORKER_THREADS", "MALLOC_ARENA_MAX"] {
            if let Some(value) = std::env::var_os(key) {
                cmd.env(key, value);
            }
        }
        cmd.envs(self.vars());
        cmd
    }

    pub fn vars(&self) -> [(&'static str, OsString); 5] {
        [
            ("PVE_BASE_URL", self.base_url.clone().into()),
            ("PVE_API_TOKEN_ID", ADMIN_TOKEN_ID.into()),
            ("PVE_API_TOKEN_SECRET", ADMIN_TOKEN_SECRET.into()),
            ("PVE_CA_FILE", self.ca_file.clone().into()),
            ("PVE_MCP_CACHE_DIR", self.cache_dir.clone().into()),
        ]
    }

    /// Compiles the component into this environment's cache (`pve-mcp
    /// tools`), so that a server started next starts warm: the compiler's
    /// memory is then not in that server's peak RSS.
    pub async fn fill_cache(&self) -> Result<()> {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_pve-mcp"));
        cmd.arg("tools").env_clear().envs(self.vars());
        let out = cmd.output().await.context("running pve-mcp tools")?;
        if !out.status.success() {
            bail!(
                "pve-mcp tools failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }
}

pub fn server_log(path: &Path) -> String {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    format!("pve-mcp did not complete the MCP handshake; its stderr:\n{log}")
}

/// The high-water mark of a process's resident set, in MB (10^6 bytes).
pub fn peak_rss_mb(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/<pid>/status")?;
    Ok(kib * 1024.0 / 1e6)
}

/// CPU time (user plus system, every thread, exited ones included) a
/// process has used so far: fields 14 and 15 of `/proc/<pid>/stat`, in
/// USER_HZ ticks, which Linux fixes at 100 a second for user space. A
/// measure over many calls keeps the 10 ms tick small against the total.
pub fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("no command name in /proc/<pid>/stat")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| -> Result<u64> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .context("no utime/stime in /proc/<pid>/stat")
    };
    // After the name come field 3 (state) onwards: utime is field 14.
    let total = ticks(11)? + ticks(12)?;
    Ok(Duration::from_millis(total * 10))
}

/// The machine's load average (1, 5 and 15 minutes), to print next to
/// numbers that depend on it.
pub fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Milliseconds with microsecond precision.
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}
