//! The fault matrix: every way Proxmox, or the network to it, fails, put
//! on the wire by the simulator and run through both transports (stdio and
//! Streamable HTTP) against one long-lived server each.
//!
//! For every row the call must end, within a bound that only keeps the test
//! from hanging, in a clean tool error (`isError`, never a protocol error)
//! that says what happened upstream and what to do, names the request, and
//! leaks no credential; then the same server must answer the next call
//! correctly. Around the rows that push bytes at the host (a huge body, a
//! trickled one) its memory must stay bounded. `docs/security.md`
//! tabulates the rows.

use std::time::{Duration, Instant};

use pve_sim::tokens::{TICKET_PASSWORD, TICKET_USER};
use pve_sim::{Fault, FaultKind, SimConfig, Simulator};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RunningService, ServiceError};
use serde_json::{Value, json};

use crate::common::*;
use crate::http::HttpServer;

/// The host's per-request timeout in this suite (`PVE_TIMEOUT`).
const UPSTREAM_TIMEOUT_SECS: u64 = 4;

/// How long one row may take: generous, only so a hang fails the row
/// instead of the suite, and under the sandbox's 30 s call deadline, so a
/// fault that only that deadline ends is caught.
const ROW_BOUND: Duration = Duration::from_secs(20);

/// The whole matrix over one transport.
const MATRIX_BOUND: Duration = Duration::from_secs(600);

/// How much a row may add to the host's resident memory, and to its peak:
/// far below the 256 MiB huge body, far above the sandbox's own working set.
const RSS_GROWTH_MAX_KB: u64 = 64 << 10;
const PEAK_GROWTH_MAX_KB: u64 = 128 << 10;

/// The size of the huge body: 16 times the host's 16 MiB response cap.
const HUGE_BODY: u64 = 256 << 20;

/// Which simulated cluster a row breaks.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// The default cluster: API token, trusted through the cluster CA file.
    Token,
    /// Cluster `lab`: user and password (tickets), its certificate pinned.
    Password,
}

/// What the client must get.
enum Expect {
    /// A tool error whose text contains every needle.
    Error(&'static [&'static str]),
    /// The call succeeds all the same (the host recovers on its own).
    Recovers,
}

struct Row {
    name: &'static str,
    target: Target,
    fault: Fault,
    expect: Expect,
    /// Check the host's memory around this row.
    watch_memory: bool,
}

/// The one call every row makes: one upstream GET, to a path the faults
/// below are put on.
const PATH: &str = "/nodes/pve1/qemu/100/status/current";

fn at_path(kind: FaultKind) -> Fault {
    Fault {
        path_prefix: PATH.into(),
        kind,
        ..Fault::default()
    }
}

fn status(code: u16, reason: &str) -> Fault {
    Fault {
        status: code,
        reason: reason.into(),
        ..at_path(FaultKind::Status)
    }
}

fn rows() -> Vec<Row> {
    use Expect::*;
    use Target::*;
    let row = |name, target, fault, expect| Row {
        name,
        target,
        fault,
        expect,
        watch_memory: false,
    };
    vec![
        row(
            "latency beyond the timeout",
            Token,
            Fault {
                delay: Some(Duration::from_secs(UPSTREAM_TIMEOUT_SECS + 4)),
                ..at_path(FaultKind::Status)
            },
            Error(&["did not answer in time", "retry"]),
        ),
        row(
            "5xx from a proxy in front",
            Token,
            status(502, "Bad Gateway"),
            Error(&["HTTP 502", "unavailable or overloaded", "Retry"]),
        ),
        row(
            "5xx from Proxmox itself",
            Token,
            status(
                500,
                "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout",
            ),
            Error(&["HTTP 500", "can't lock file", "Proxmox returned an error"]),
        ),
        row(
            "a reset mid-body",
            Token,
            at_path(FaultKind::ResetMidBody),
            Error(&["connection terminated", "Retry"]),
        ),
        row(
            "malformed JSON",
            Token,
            at_path(FaultKind::MalformedJson),
            Error(&["not valid JSON", "points at the Proxmox API"]),
        ),
        row(
            "truncated JSON",
            Token,
            at_path(FaultKind::TruncatedJson),
            Error(&["not valid JSON", "points at the Proxmox API"]),
        ),
        Row {
            watch_memory: true,
            ..row(
                "a huge body (256 MiB)",
                Token,
                at_path(FaultKind::HugeBody { bytes: HUGE_BODY }),
                Error(&["body size exceeds limit: 16777216 bytes", "Retry"]),
            )
        },
        row(
            "a wrong content type (an HTML login page)",
            Token,
            at_path(FaultKind::WrongContentType),
            Error(&[
                "not valid JSON",
                "<!DOCTYPE html>",
                "not at a web page or proxy",
            ]),
        ),
        row(
            "an expired certificate",
            Token,
            Fault::of(FaultKind::ExpiredCertificate),
            Error(&["TLS verification", "certificate expired", "not valid after"]),
        ),
        row(
            "a certificate from another CA (CA file)",
            Token,
            Fault::of(FaultKind::UntrustedCertificate),
            Error(&["TLS verification", "UnknownIssuer", "PVE_CA_FILE"]),
        ),
        row(
            "a certificate for another host name",
            Token,
            Fault::of(FaultKind::WrongNameCertificate),
            Error(&["TLS verification", "not valid for name", "PVE_CA_FILE"]),
        ),
        row(
            "a certificate that does not match the pin",
            Password,
            Fault::of(FaultKind::UntrustedCertificate),
            Error(&[
                "TLS verification",
                "FingerprintMismatch",
                "PVE_TLS_FINGERPRINT",
            ]),
        ),
        Row {
            watch_memory: true,
            ..row(
                "a slow-loris upstream (one byte per 200 ms)",
                Token,
                at_path(FaultKind::SlowLoris {
                    interval: Duration::from_millis(200),
                }),
                Error(&["stopped sending the response in time", "Retry"]),
            )
        },
        row(
            "connection refused",
            Token,
            Fault::of(FaultKind::RefuseConnections),
            Error(&["connection refused", "pveproxy is running"]),
        ),
        row(
            "401 after a ticket expires",
            Password,
            Fault {
                times: Some(1),
                ..Fault::of(FaultKind::ExpireTickets)
            },
            Recovers,
        ),
        row(
            "401 after a ticket expires, and again after logging in",
            Password,
            Fault::of(FaultKind::ExpireTickets),
            Error(&["HTTP 401", "PVE_USERNAME"]),
        ),
        row(
            "595 (the API node cannot reach the guest's node)",
            Token,
            status(595, "Connection timed out"),
            Error(&["HTTP 595", "unreachable", "try again"]),
        ),
    ]
}

/// The server under test, over either transport. One per test, so the
/// size difference between the two does not matter.
#[allow(clippy::large_enum_variant)]
enum Host {
    Stdio(Server),
    Http(HttpServer, RunningService<RoleClient, ()>),
}

impl Host {
    async fn call(&self, args: Value) -> Result<CallToolResult, ServiceError> {
        match self {
            Host::Stdio(server) => server.try_call("pve_get_vm_status", args).await,
            Host::Http(_, client) => {
                let args = args.as_object().cloned().unwrap_or_default();
                client
                    .call_tool(CallToolRequestParams::new("pve_get_vm_status").with_arguments(args))
                    .await
            }
        }
    }

    fn pid(&self) -> u32 {
        match self {
            Host::Stdio(server) => server.pid.expect("the stdio server's pid"),
            Host::Http(server, _) => server.pid(),
        }
    }

    fn log(&self) -> String {
        match self {
            Host::Stdio(server) => server.stderr(),
            Host::Http(server, _) => server.log(),
        }
    }
}

/// `VmRSS` and `VmHWM` of a process, in KiB.
fn memory_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("reading /proc/{pid}/status: {e}"));
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The two clusters: `token` is the default (environment, CA file),
/// `lab` logs in with a password and pins `password`'s certificate.
struct Clusters {
    token: Simulator,
    password: Simulator,
    _dir: tempfile::TempDir,
    opts: Opts,
}

async fn clusters() -> Clusters {
    let token = simulator().await;
    let password = Simulator::start(SimConfig {
        schema_path: Some(schema_path()),
        ..SimConfig::default()
    })
    .await
    .expect("starting the second simulator");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pve-mcp.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.lab]\nbase_url = \"{}\"\nusername = \"{TICKET_USER}\"\npassword = \"{TICKET_PASSWORD}\"\n\
             fingerprint = \"{}\"\ntimeout_secs = {UPSTREAM_TIMEOUT_SECS}\n",
            password.base_url(),
            password.leaf_fingerprint()
        ),
    )
    .unwrap();
    let opts = Opts::default()
        .env("PVE_TIMEOUT", &UPSTREAM_TIMEOUT_SECS.to_string())
        .arg("--config")
        .arg(config.to_str().unwrap());
    Clusters {
        token,
        password,
        _dir: dir,
        opts,
    }
}

impl Clusters {
    fn sim(&self, target: Target) -> &Simulator {
        match target {
            Target::Token => &self.token,
            Target::Password => &self.password,
        }
    }

    fn args(target: Target) -> Value {
        let mut args = json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"});
        if let Target::Password = target {
            args["cluster"] = json!("lab");
        }
        args
    }

    fn clear(&self) {
        self.token.clear_faults();
        self.password.clear_faults();
    }
}

/// Both simulators accept connections (one that refused them listens again
/// a moment after its faults are cleared).
async fn listening(clusters: &Clusters) {
    for sim in [&clusters.token, &clusters.password] {
        wait_until(
            "the simulator to accept connections again",
            Duration::from_secs(10),
            async || {
                tokio::net::TcpStream::connect(("127.0.0.1", sim.port()))
                    .await
                    .ok()
            },
        )
        .await;
    }
}

/// A call that must succeed and name guest 100.
async fn assert_serves(host: &Host, target: Target, after: &str) {
    let result = host
        .call(Clusters::args(target))
        .await
        .unwrap_or_else(|e| panic!("after {after}: a protocol error: {e}\n{}", host.log()));
    assert_eq!(
        result.is_error,
        Some(false),
        "after {after}, the next call ({target:?}) failed: {}\n{}",
        text(&result),
        host.log()
    );
    let out = result.structured_content.expect("structured content");
    assert_eq!(
        (out["vmid"].as_u64(), out["name"].as_str()),
        (Some(100), Some("web-frontend-01")),
        "after {after}: {out}"
    );
}

async fn run_matrix(transport: &str, host: Host, clusters: Clusters) {
    // Both clusters work, and the password cluster has its ticket.
    assert_serves(&host, Target::Token, "start-up").await;
    assert_serves(&host, Target::Password, "start-up").await;
    let secrets = [ADMIN_TOKEN_SECRET, TICKET_PASSWORD];
    // `FAULT_MATRIX_ROWS=reset,loris` runs only the rows whose names
    // contain one of those words (to look at one row); unset, all run.
    let only = std::env::var("FAULT_MATRIX_ROWS").ok();
    let chosen = |name: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|w| name.contains(w.trim())))
    };
    for row in rows().into_iter().filter(|r| chosen(r.name)) {
        let what = format!("{transport}: {}", row.name);
        let sim = clusters.sim(row.target);
        sim.clear_requests();
        let logins = sim.login_count();
        let before = memory_kb(host.pid());
        sim.add_fault(row.fault.clone());

        let started = Instant::now();
        let result = tokio::time::timeout(ROW_BOUND, host.call(Clusters::args(row.target)))
            .await
            .unwrap_or_else(|_| panic!("{what}: no answer within {ROW_BOUND:?}\n{}", host.log()))
            .unwrap_or_else(|e| panic!("{what}: a protocol error, not a tool error: {e}"));
        let took = started.elapsed();
        let message = text(&result);
        eprintln!("fault matrix, {what}: in {took:.1?}: {message}");
        match row.expect {
            Expect::Error(needles) => {
                assert_eq!(
                    result.is_error,
                    Some(true),
                    "{what}: not a tool error: {result:?}"
                );
                for needle in needles {
                    assert!(
                        message.contains(needle),
                        "{what}: the error does not say {needle:?}: {message}"
                    );
                }
                assert!(
                    message.contains(&format!("[GET /api2/json{PATH}]")),
                    "{what}: the error does not name the request: {message}"
                );
            }
            Expect::Recovers => {
                assert_eq!(result.is_error, Some(false), "{what}: {message}");
                assert_eq!(result.structured_content.unwrap()["vmid"], 100);
                let statuses: Vec<u16> = sim.requests().iter().map(|r| r.status).collect();
                assert_eq!(
                    statuses.iter().filter(|s| **s == 401).count(),
                    1,
                    "{what}: one 401, then a login and the request again: {statuses:?}"
                );
                assert_eq!(sim.login_count(), logins + 1, "{what}: one new login");
            }
        }
        for secret in secrets {
            assert!(!message.contains(secret), "{what}: a credential leaked");
        }
        if let FaultKind::HugeBody { .. } = row.fault.kind {
            // The host stopped reading far short of the whole body.
            let sent = sim.requests();
            assert!(
                sent.iter().all(|r| !r.completed),
                "{what}: the whole huge body was read: {sent:?}"
            );
        }

        clusters.clear();
        listening(&clusters).await;
        if row.watch_memory {
            let (rss, peak) = memory_kb(host.pid());
            assert!(
                rss <= before.0 + RSS_GROWTH_MAX_KB
                    && peak <= before.1.max(before.0) + PEAK_GROWTH_MAX_KB,
                "{what}: the host's memory grew from {} KiB (peak {} KiB) to {rss} KiB (peak {peak} KiB)",
                before.0,
                before.1
            );
        }
        assert_serves(&host, row.target, &what).await;
    }
    // The other cluster was never disturbed for long either.
    assert_serves(&host, Target::Token, "the whole matrix").await;
    assert_serves(&host, Target::Password, "the whole matrix").await;
}

#[tokio::test]
async fn every_upstream_fault_is_a_clean_tool_error_over_stdio() {
    tokio::time::timeout(MATRIX_BOUND, async {
        let clusters = clusters().await;
        let server = Server::start(&clusters.token, clusters.opts.clone()).await;
        run_matrix("stdio", Host::Stdio(server), clusters).await;
    })
    .await
    .expect("the fault matrix did not finish in time");
}

#[tokio::test]
async fn every_upstream_fault_is_a_clean_tool_error_over_http() {
    tokio::time::timeout(MATRIX_BOUND, async {
        let clusters = clusters().await;
        let server = HttpServer::start(&clusters.token, clusters.opts.clone()).await;
        let client = server.client().await;
        run_matrix("HTTP", Host::Http(server, client), clusters).await;
    })
    .await
    .expect("the fault matrix did not finish in time");
}
