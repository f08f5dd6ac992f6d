//! Helpers for the policy tests: a server started with a policy file, a
//! real `redis-server` on an ephemeral port, and `pve-mcp policy check`.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use pve_sim::Simulator;
use serde_json::{Value, json};

use crate::common::*;

/// A server under a policy file it reads with `--policy`.
pub struct PolicyServer {
    pub server: Server,
    pub path: PathBuf,
    _dir: tempfile::TempDir,
}

/// Writes the policy so a reader never sees half a file: to a temporary
/// name first, then renamed over the old one.
pub fn write_policy(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("writing the policy");
    std::fs::rename(&tmp, path).expect("renaming the policy into place");
}

/// `pve-mcp --policy FILE serve` against the simulator.
pub async fn with_policy(sim: &Simulator, policy: &str) -> PolicyServer {
    with_policy_opts(sim, policy, Opts::default()).await
}

/// The same, with more options (another component, environment...).
pub async fn with_policy_opts(sim: &Simulator, policy: &str, opts: Opts) -> PolicyServer {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("policy.toml");
    write_policy(&path, policy);
    let opts = opts.arg("--policy").arg(path.to_str().expect("utf-8 path"));
    PolicyServer {
        server: Server::start(sim, opts).await,
        path,
        _dir: dir,
    }
}

/// A `redis-server` of our own, killed when dropped.
pub struct Redis {
    child: std::process::Child,
    pub port: u16,
}

impl Redis {
    /// Whether `redis-server` can be run here (see [`installed`]).
    pub fn available() -> bool {
        let found = std::process::Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        installed(
            found,
            "redis-server",
            "install redis-server (Debian: apt-get install redis-server)",
        )
    }

    /// Starts one on a free 127.0.0.1 port with persistence off, and waits
    /// until it answers.
    pub async fn start() -> Redis {
        Redis::start_on(free_port()).await
    }

    /// Starts one on this port.
    pub async fn start_on(port: u16) -> Redis {
        let child = std::process::Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is needed for the policy tests: apt-get install redis-server (.ci/run does)");
        let redis = Redis { child, port };
        wait_until(
            format!("redis-server to accept connections on port {port}"),
            Duration::from_secs(30),
            async || {
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .ok()
            },
        )
        .await;
        redis
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("an ephemeral port")
}

/// Runs `pve-mcp ARGS` with a clean environment.
pub fn run(args: &[&str]) -> Output {
    let out = std::process::Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PVE_MCP_CACHE_DIR", cache_dir())
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running pve-mcp");
    Secrets::of_command(&[], args).check_output(&format!("pve-mcp {args:?}"), &out);
    out
}

/// Whether the call was refused by the policy: an `isError` result whose
/// text names the rule.
pub async fn refused(server: &Server, tool: &str, args: Value, rule: &str) -> String {
    let text = server.err(tool, args.clone()).await;
    assert!(
        text.contains(rule),
        "{tool}({args}) should be refused by {rule}: {text}"
    );
    text
}

/// Calls `pve_get_version` `n` times and counts the successes and the
/// rate-limit refusals; anything else fails the test.
pub async fn count_version_calls(server: &Server, n: usize) -> (usize, Vec<String>) {
    let mut ok = 0;
    let mut limited = Vec::new();
    for _ in 0..n {
        let result = server.call("pve_get_version", json!({})).await;
        if result.is_error == Some(false) {
            ok += 1;
        } else {
            let t = text(&result);
            assert!(t.starts_with("Rate limit reached"), "{t}");
            limited.push(t);
        }
    }
    (ok, limited)
}

/// Waits until the server's log shows `needle` (a reload's outcome).
pub async fn wait_for_log(server: &Server, needle: &str, seen_before: usize) {
    wait_until(
        Lazy(|| {
            format!(
                "the server to log {needle:?} again; it logged:\n{}",
                server.stderr()
            )
        }),
        Duration::from_secs(30),
        async || (server.stderr().matches(needle).count() > seen_before).then_some(()),
    )
    .await
}
