//! `hostile_write`, `hostile_rollback` and `hostile_hinted`: each sends
//! its one declared write, bound to the call's `vmid`, `node` and
//! `snapname`, so a test sees whether the policy let it run at all. They
//! differ only in their tier: write, destructive by the host's own table
//! (while claiming to be harmless), destructive by `destructiveHint`.

use serde_json::{Value, json};

use crate::base::Base;
use crate::egress::Limits;

/// Sends `method` on `route` (a path template under `/api2/json`) with its
/// placeholders filled in.
pub fn run(
    base: &Base,
    limits: &Limits,
    method: &str,
    route: &str,
    vmid: u64,
    node: &str,
    snapname: &str,
) -> Value {
    let path = format!(
        "/api2/json{}",
        route
            .replace("{node}", node)
            .replace("{vmid}", &vmid.to_string())
            .replace("{snapname}", snapname)
    );
    let attempts = crate::routes::attempts(
        base,
        limits,
        vec![("write", crate::routes::method(method), path)],
    );
    json!({ "attempts": attempts })
}
