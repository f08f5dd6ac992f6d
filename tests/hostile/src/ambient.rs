//! `hostile_ambient`: everything a WASI program can reach without asking
//! the network gate. A host following the contract leaves all of it empty.

use serde_json::{Map, Value, json};
use wasip2::io::streams::StreamError;

use crate::net::Deadline;
use crate::report::Outcome;

/// Strings that would mean a credential is reachable from inside.
const MARKERS: &[&str] = &["PVEAPIToken", "PVEAuthCookie", "CSRFPreventionToken"];

/// One ambient attempt: `{"what", "outcome", "status"|"error", ...extra}`.
fn attempt(what: &str, outcome: &Outcome, extra: Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert("what".into(), json!(what));
    m.extend(outcome.fields());
    m.extend(extra);
    Value::Object(m)
}

fn one(key: &str, v: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.into(), v);
    m
}

/// Runs every ambient attempt. `port` is the endpoint's port, the one
/// socket a leaked capability would most likely reach.
pub fn run(port: u16) -> Value {
    // Everything seen is also scanned for credential markers below.
    let mut seen: Vec<String> = Vec::new();

    let env: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let preopens: Vec<String> = wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    seen.extend(env.iter().flat_map(|(k, v)| [k.clone(), v.clone()]));
    seen.extend(args.iter().cloned());
    seen.extend(preopens.iter().cloned());

    let mut attempts = Vec::new();
    for path in ["/etc/passwd", "/proc/self/environ", "passwd"] {
        let (out, extra) = match std::fs::read(path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let extra = one("bytes", json!(bytes.len()));
                seen.push(text);
                (Outcome::Done, extra)
            }
            Err(e) => (Outcome::Error(format!("{e:?}")), Map::new()),
        };
        attempts.push(attempt(&format!("read {path}"), &out, extra));
    }
    for dir in ["/", ".", "/etc"] {
        let (out, extra) = match std::fs::read_dir(dir) {
            Ok(entries) => {
                let names: Vec<String> = entries
                    .map(|e| match e {
                        Ok(e) => e.file_name().to_string_lossy().into_owned(),
                        Err(e) => format!("<error {e:?}>"),
                    })
                    .collect();
                seen.extend(names.iter().cloned());
                (Outcome::Done, one("entries", json!(names)))
            }
            Err(e) => (Outcome::Error(format!("{e:?}")), Map::new()),
        };
        attempts.push(attempt(&format!("read_dir {dir}"), &out, extra));
    }
    let (out, extra) = match std::fs::write("hostile-was-here", b"x") {
        Ok(()) => (Outcome::Done, Map::new()),
        Err(e) => (Outcome::Error(format!("{e:?}")), Map::new()),
    };
    attempts.push(attempt("write ./hostile-was-here", &out, extra));
    attempts.push(stdin(&mut seen));
    // The contract says "no terminal": a terminal handle would be one more
    // capability the host meant not to give.
    use wasip2::cli::{terminal_stderr, terminal_stdin, terminal_stdout};
    for (what, present) in [
        (
            "terminal stdin",
            terminal_stdin::get_terminal_stdin().is_some(),
        ),
        (
            "terminal stdout",
            terminal_stdout::get_terminal_stdout().is_some(),
        ),
        (
            "terminal stderr",
            terminal_stderr::get_terminal_stderr().is_some(),
        ),
    ] {
        let out = if present {
            Outcome::Done
        } else {
            Outcome::Error("none".into())
        };
        attempts.push(attempt(what, &out, Map::new()));
    }
    attempts.extend(sockets(port));

    let markers: Vec<&str> = MARKERS
        .iter()
        .copied()
        .filter(|m| {
            let m = m.to_ascii_lowercase();
            seen.iter().any(|s| s.to_ascii_lowercase().contains(&m))
        })
        .collect();
    json!({
        "env": env,
        "args": args,
        "preopens": preopens,
        "attempts": attempts,
        "credential_markers_seen": markers,
    })
}

/// Reads stdin until EOF, giving up after a second so a host whose stdin
/// never ends cannot hang the report.
fn stdin(seen: &mut Vec<String>) -> Value {
    let input = wasip2::cli::stdin::get_stdin();
    let deadline = Deadline::after_ms(1000, Deadline::NONE);
    let mut data = Vec::new();
    let outcome = loop {
        match input.read(64 * 1024) {
            Ok(chunk) if chunk.is_empty() => {
                if !deadline.wait(&input.subscribe()) {
                    break Outcome::Timeout("stdin neither ended nor gave data within 1 s".into());
                }
            }
            Ok(chunk) => data.extend_from_slice(&chunk),
            // Closed is end of file: what an empty stdin should give.
            Err(StreamError::Closed) => break Outcome::Done,
            Err(StreamError::LastOperationFailed(e)) => break Outcome::Error(e.to_debug_string()),
        }
        if data.len() > 1 << 20 {
            break Outcome::Error("more than 1 MiB on stdin".into());
        }
    };
    seen.push(String::from_utf8_lossy(&data).into_owned());
    let mut extra = one("bytes", json!(data.len()));
    extra.insert("eof".into(), json!(outcome == Outcome::Done));
    attempt("stdin", &outcome, extra)
}

#[cfg(not(feature = "sockets"))]
fn sockets(_port: u16) -> Vec<Value> {
    vec![attempt(
        "sockets",
        &Outcome::Skipped(
            "built without the `sockets` feature: std::net would make the component import \
             wasi:sockets, which the pve-tools world does not"
                .into(),
        ),
        Map::new(),
    )]
}

#[cfg(feature = "sockets")]
fn sockets(port: u16) -> Vec<Value> {
    use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
    use std::time::Duration;

    fn outcome<T>(r: &std::io::Result<T>) -> Outcome {
        match r {
            Ok(_) => Outcome::Done,
            Err(e) => Outcome::Error(format!("{e:?}")),
        }
    }
    let target = SocketAddr::from(([127, 0, 0, 1], port));
    let connect = TcpStream::connect_timeout(&target, Duration::from_secs(2));
    let listen = TcpListener::bind("127.0.0.1:0");
    let udp = UdpSocket::bind("127.0.0.1:0");
    let dns = ("localhost", 80)
        .to_socket_addrs()
        .map(|a| a.collect::<Vec<_>>());
    let addrs: Vec<String> = dns
        .as_ref()
        .map(|a| a.iter().map(ToString::to_string).collect())
        .unwrap_or_default();
    vec![
        attempt(
            &format!("tcp connect {target}"),
            &outcome(&connect),
            Map::new(),
        ),
        attempt("tcp listen 127.0.0.1:0", &outcome(&listen), Map::new()),
        attempt("udp bind 127.0.0.1:0", &outcome(&udp), Map::new()),
        attempt(
            "dns lookup localhost",
            &outcome(&dns),
            one("addresses", json!(addrs)),
        ),
    ]
}
