//! Helpers for the tests that drive the simulator: its own and pve-mcp's
//! end-to-end suite, which re-exports them from its `common` module, so
//! both suites wait and skip the same way.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::Simulator;

/// How long [`wait_for_request`] waits: generous, because a loaded 2-core
/// CI machine may take seconds to get a call as far as Proxmox.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(30);

/// Whether something a test needs from outside the repository is there
/// (`found`). Without it the test is skipped with a notice locally, and
/// fails under CI (`CI` set and not empty), where `.ci/run` provides it:
/// there a skip would pass a test that never ran. Every test that needs a
/// program or file the repository does not hold asks here, so none skips
/// in silence.
pub fn installed(found: bool, what: &str, install: &str) -> bool {
    if !found {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v.is_empty()),
            "{what} is missing under CI; .ci/run provides it ({install})"
        );
        eprintln!("skipped: {install} to run the tests that need {what}");
    }
    found
}

/// The official PVE API schema, `shared/pve-api/apidata.json` next to the
/// repository (AGPL test data, read at run time only, never compiled in).
pub fn schema_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/pve-api/apidata.json")
}

/// The schema's path if it is there. Without it a test that validates
/// requests is skipped with a notice locally, and fails under CI.
pub fn schema_if_present() -> Option<PathBuf> {
    let path = schema_file();
    installed(
        path.is_file(),
        &format!("the PVE API schema at {}", path.display()),
        "put the PVE API schema (apidata.json) in shared/pve-api/",
    )
    .then_some(path)
}

/// A description made when it is shown, e.g. to print a server's log as it
/// is at the deadline: `Lazy(|| format!(...))`.
pub struct Lazy<F>(pub F);

impl<F: Fn() -> String> fmt::Display for Lazy<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&(self.0)())
    }
}

/// Polls `check` every 20 ms until it yields a value and returns it. Past
/// `deadline` the test fails, naming `what` it waited for.
pub async fn wait_until<T>(
    what: impl fmt::Display,
    deadline: Duration,
    mut check: impl AsyncFnMut() -> Option<T>,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            started.elapsed() < deadline,
            "gave up after {deadline:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until a request has reached the simulator (e.g. one an injected
/// delay now holds).
pub async fn wait_for_request(sim: &Simulator) {
    wait_until(
        "a request to reach the simulator",
        REQUEST_DEADLINE,
        async || (!sim.requests().is_empty()).then_some(()),
    )
    .await
}
