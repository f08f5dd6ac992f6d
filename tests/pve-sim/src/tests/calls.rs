//! Calls the write tests share: requests as the admin token, waiting for
//! tasks, PVE's messages and the schema violations a test expects.

use super::*;
use crate::testing::wait_until;

pub(super) const FORM: &str = "application/x-www-form-urlencoded";

/// A simulator validating against the official schema when it is there
/// (under CI it must be).
pub(super) async fn sim() -> Simulator {
    Simulator::start(SimConfig {
        schema_path: schema_path(),
        ..SimConfig::default()
    })
    .await
    .expect("start")
}

pub(super) async fn post(sim: &Simulator, path: &str, form: &str) -> Resp {
    let url = format!("/api2/json{path}");
    send(
        sim,
        "POST",
        &url,
        &[("authorization", ADMIN)],
        Some((FORM, form.as_bytes())),
    )
    .await
}

pub(super) async fn put(sim: &Simulator, path: &str, form: &str) -> Resp {
    let url = format!("/api2/json{path}");
    send(
        sim,
        "PUT",
        &url,
        &[("authorization", ADMIN)],
        Some((FORM, form.as_bytes())),
    )
    .await
}

pub(super) async fn delete(sim: &Simulator, path_and_query: &str) -> Resp {
    let url = format!("/api2/json{path_and_query}");
    send(sim, "DELETE", &url, &[("authorization", ADMIN)], None).await
}

/// The UPID a successful async write answered with.
pub(super) fn upid(r: &Resp) -> String {
    let d = r.data();
    let s = d.as_str().unwrap_or_else(|| panic!("not a UPID: {d}"));
    assert!(s.starts_with("UPID:") && s.ends_with(':'), "{s}");
    s.to_string()
}

/// Waits for the task to end and returns it.
pub(super) async fn finished(sim: &Simulator, upid: &str) -> TaskState {
    wait_until(
        format!("task {upid} to end"),
        Duration::from_secs(20),
        async || sim.task(upid).filter(|t| !t.running()),
    )
    .await
}

/// Runs an async write to its end; returns the task.
pub(super) async fn run(sim: &Simulator, r: Resp) -> TaskState {
    let u = upid(&r);
    finished(sim, &u).await
}

pub(super) fn status(sim: &Simulator, vmid: u32) -> &'static str {
    sim.guest(vmid).expect("guest").status
}

/// The 500's message (PVE's `die` text with its newline).
pub(super) fn message(r: &Resp) -> String {
    r.json()["message"].as_str().unwrap_or("").to_string()
}

pub(super) fn no_violations(sim: &Simulator) {
    only_violations(sim, &[]);
}

/// With the schema loaded, exactly the requests a test sent invalid on
/// purpose are the ones the official schema rejects (each violation starts
/// with the expected `METHOD path: param`).
pub(super) fn only_violations(sim: &Simulator, expected: &[&str]) {
    let v = sim.schema_violations();
    if schema_path().is_none() {
        return;
    }
    assert_eq!(v.len(), expected.len(), "schema violations: {v:#?}");
    for (got, want) in v.iter().zip(expected) {
        assert!(got.starts_with(want), "{got:?} is not {want:?}");
    }
}

/// `GET /api2/json<path>` as the admin token; the answer's `data`.
pub(super) async fn data(sim: &Simulator, path: &str) -> serde_json::Value {
    get(sim, &format!("/api2/json{path}"), ADMIN).await.data()
}

/// A request as the auditor token (form body for POST/PUT).
pub(super) async fn as_auditor(sim: &Simulator, method: &str, path: &str, form: &str) -> Resp {
    let url = format!("/api2/json{path}");
    let body = (!form.is_empty()).then_some((FORM, form.as_bytes()));
    send(sim, method, &url, &[("authorization", AUDITOR)], body).await
}

/// `s` escaped for a form value (every byte but the unreserved ones).
pub(super) fn form_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}
