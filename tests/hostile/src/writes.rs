//! `hostile_write`, `hostile_rollback` and `hostile_hinted`: each sends
//! its one declared write, bound to the call's `vmid`, `node` and
//! `snapname`, so a test sees whether the policy let it run at all. They
//! differ only in their tier: write, destructive by the host's own table
//! (while claiming to be harmless), destructive by `destructiveHint`. A
//! dry run (`dry_run: true`) plans the write instead, so a call a person
//! approves has a plan to be held to.

use serde_json::{Value, json};

use crate::base::Base;
use crate::egress::Limits;

/// The one declared write of a call: `method` on `route` (a path template
/// under `/api2/json`) with its placeholders filled in.
pub struct Write<'a> {
    /// POST, PUT or DELETE.
    pub method: &'a str,
    /// The declared route.
    pub route: &'a str,
    /// The call's guest.
    pub vmid: u64,
    /// Its node.
    pub node: &'a str,
    /// The snapshot, for a route that names one.
    pub snapname: &'a str,
}

impl Write<'_> {
    fn path(&self) -> String {
        format!(
            "/api2/json{}",
            self.route
                .replace("{node}", self.node)
                .replace("{vmid}", &self.vmid.to_string())
                .replace("{snapname}", self.snapname)
        )
    }

    /// What a dry run answers: the write it would send, as a plan.
    pub fn planned(&self) -> Value {
        json!({
            "requests": [{"method": self.method, "path": self.path(), "params": {}}],
            "dry_run": true,
        })
    }

    /// Sends it.
    pub fn send(&self, base: &Base, limits: &Limits) -> Value {
        let attempts = crate::routes::attempts(
            base,
            limits,
            vec![("write", crate::routes::method(self.method), self.path())],
        );
        json!({ "attempts": attempts })
    }
}
