//! The request log behind [`crate::Simulator::requests`].

use std::sync::Mutex;

use crate::util::lock;
use crate::{AuthSeen, LoggedRequest};

/// Entries are added when a request arrives and filled in as it progresses,
/// so requests whose client vanished mid-way are still listed.
#[derive(Default)]
pub(crate) struct RequestLog {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    entries: Vec<(u64, LoggedRequest)>,
}

impl RequestLog {
    pub fn begin(&self, req: LoggedRequest) -> u64 {
        let mut g = lock(&self.inner);
        let id = g.next_id;
        g.next_id += 1;
        g.entries.push((id, req));
        id
    }

    fn update(&self, id: u64, f: impl FnOnce(&mut LoggedRequest)) {
        let mut g = lock(&self.inner);
        // Ids only grow, so the vector stays sorted by id.
        if let Ok(i) = g.entries.binary_search_by_key(&id, |(k, _)| *k) {
            f(&mut g.entries[i].1);
        }
    }

    pub fn set_auth(&self, id: u64, auth: AuthSeen) {
        self.update(id, |r| r.auth = auth);
    }

    pub fn set_status(&self, id: u64, status: u16) {
        self.update(id, |r| r.status = status);
    }

    /// Records the decoded request parameters (repeats joined with NUL).
    pub fn set_params(&self, id: u64, raw: &crate::params::RawParams) {
        let params = raw.iter().map(|(k, v)| (k.clone(), v.join("\0"))).collect();
        self.update(id, |r| r.params = params);
    }

    pub fn set_completed(&self, id: u64) {
        self.update(id, |r| r.completed = true);
    }

    pub fn snapshot(&self) -> Vec<LoggedRequest> {
        lock(&self.inner)
            .entries
            .iter()
            .map(|(_, r)| r.clone())
            .collect()
    }

    pub fn clear(&self) {
        lock(&self.inner).entries.clear();
    }
}
