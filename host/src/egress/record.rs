//! What the gate records of a call's requests, and what it lets a call
//! spend: every request's record (bounded, so a hostile guest cannot grow
//! the audit log), the summary past [`MAX_REFUSALS`], and the call's
//! budget of requests and refusals.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, Uri};

use super::gate::{ClusterIndex, Denial, Gate};
use crate::upstream::UpstreamFailure;

/// How many requests the gate may refuse in one call before the call is
/// ended. A correct component is refused at most a handful of times (the
/// hostile suite's widest probe makes about 20 deliberate mistakes); 32
/// leaves room for that and for a tool retrying a few refused requests,
/// while a component looping on refusals (a bug or an attack: each refusal
/// costs the host a log line and an audit record) is stopped at once.
pub const MAX_REFUSALS: usize = 32;

/// The longest method, authority or path kept in a record, in bytes. The
/// Proxmox API's paths are far shorter; a longer one is cut on a character
/// boundary and ends in [`TRUNCATED`], so the audit shows that it was cut.
pub const MAX_RECORDED_LEN: usize = 512;

/// Ends a value cut to [`MAX_RECORDED_LEN`].
pub const TRUNCATED: &str = "…[truncated]";

// The bookkeeping a call's refusals cost is bounded by a constant, whatever
// the guest sends: at most MAX_REFUSALS records are kept, each holding a
// method, authority and path of at most 512 + 14 bytes (TRUNCATED is 14
// bytes), a write's parameters of at most 2 KiB of names and values plus
// their count and hash (`sent::recorded`), and a denial of under 2 KiB
// (its names and values are cut to 64 characters, its paths like the
// record's), so with the record's ~150 bytes of fixed fields one kept
// record is under 6 KiB and the 32 of them plus the one summary record
// under 200 KiB.
// Every later refusal only increments the summary's counter. The audit log
// turns each record into one line of about the same size (and the call
// record lists method and path again), so a call's refusals cost under
// 450 KiB of host memory and audit log, next to the per-call guest memory
// cap (`memory_mib`, 64 MiB by default).

/// What happened to one request the guest made, for the log and the audit.
#[derive(Debug, Clone)]
pub struct EgressRecord {
    /// The configured cluster whose endpoint the request was for, if any.
    pub cluster: Option<String>,
    /// HTTP method.
    pub method: String,
    /// Authority as the guest gave it.
    pub authority: String,
    /// Path without the query.
    pub path: String,
    /// A write's parameters as read by the gate (query and body), bounded
    /// and masked, with their count and SHA-256 (see
    /// [`super::sent::recorded`]); `None` for a read, or a write refused
    /// before they were read.
    pub params: Option<serde_json::Value>,
    /// The summary of a guarded read's answer (see [`super::answer`]),
    /// made from what Proxmox answered.
    pub answer: Option<serde_json::Value>,
    /// The denial, if the gate refused it.
    pub denied: Option<Denial>,
    /// Upstream status, when a response arrived.
    pub status: Option<u16>,
    /// Upstream failure before a response, if any.
    pub failure: Option<UpstreamFailure>,
    /// Time from the hook being called to the response head.
    pub elapsed: Duration,
}

impl EgressRecord {
    /// The record of a request the guest (or a proxied component) makes,
    /// before any decision: one shape for every edge, each value cut to
    /// [`MAX_RECORDED_LEN`].
    pub fn of(gate: &Gate, method: &Method, uri: &Uri, bound: Option<ClusterIndex>) -> Self {
        EgressRecord {
            cluster: gate.cluster_of(uri, bound),
            method: bounded(method.as_str()),
            authority: bounded(uri.authority().map(|a| a.as_str()).unwrap_or_default()),
            path: bounded(uri.path()),
            params: None,
            answer: None,
            denied: None,
            status: None,
            failure: None,
            elapsed: Duration::ZERO,
        }
    }
}

/// The records of one call, shared between its hooks and the caller. At
/// most [`MAX_REFUSALS`] denied requests are recorded one by one; past them
/// one record whose denial is [`Denial::RefusedMore`] counts the rest.
pub type EgressLog = Arc<Mutex<Vec<EgressRecord>>>;

/// How many requests a call has sent and had refused, and the signal that
/// ends the call when either is too many. Shared by the call's hooks
/// (including their in-flight futures) and the sandbox that runs the call.
#[derive(Debug)]
pub struct CallBudget {
    max_requests: usize,
    refused: AtomicUsize,
    sent: AtomicUsize,
    stop: tokio::sync::Notify,
}

impl CallBudget {
    /// A budget of `max_requests` requests and [`MAX_REFUSALS`] refusals.
    pub fn new(max_requests: usize) -> Self {
        Self {
            max_requests,
            refused: AtomicUsize::new(0),
            sent: AtomicUsize::new(0),
            stop: tokio::sync::Notify::new(),
        }
    }

    /// Whether the call has had more than [`MAX_REFUSALS`] requests refused
    /// or tried to send more than its request cap, and must end: every
    /// later request fails at once.
    pub fn exhausted(&self) -> bool {
        self.refused.load(Ordering::Relaxed) > MAX_REFUSALS || self.over_requests()
    }

    /// The call's request cap.
    pub fn max_requests(&self) -> usize {
        self.max_requests
    }

    /// Whether the call tried to send more than its request cap.
    pub fn over_requests(&self) -> bool {
        self.sent.load(Ordering::Relaxed) > self.max_requests
    }

    /// Resolves once the call is [`exhausted`](CallBudget::exhausted), so the
    /// sandbox can drop a guest that is waiting on the host.
    pub async fn exhausted_signal(&self) {
        let notified = self.stop.notified();
        if self.exhausted() {
            return;
        }
        notified.await;
    }

    /// Counts one refusal; returns how many there have been, this one
    /// included. The caller records it, then calls
    /// [`signal_if_exhausted`](CallBudget::signal_if_exhausted).
    fn count_one(&self) -> usize {
        self.refused.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Wakes the sandbox if the call must end.
    fn signal_if_exhausted(&self) {
        if self.exhausted() {
            self.stop.notify_waiters();
        }
    }
}

/// `value`, cut to [`MAX_RECORDED_LEN`] bytes (on a character boundary,
/// with [`TRUNCATED`] after it) when longer.
pub(super) fn bounded(value: &str) -> String {
    if value.len() <= MAX_RECORDED_LEN {
        return value.to_string();
    }
    let mut end = MAX_RECORDED_LEN;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{TRUNCATED}", &value[..end])
}

/// Logs and records a refused request: the first [`MAX_REFUSALS`] each get
/// a record and a log line, the rest only the summary's count.
pub(super) fn deny(
    log: &EgressLog,
    tool: &str,
    budget: &CallBudget,
    record: EgressRecord,
    denial: Denial,
) {
    // Counted and entered under the log's lock, and only then signalled:
    // the sandbox reads the log (under that lock) once it sees the call
    // exhausted, so the record that exhausted it is always there, even
    // though the hook runs on another task that the stop then aborts.
    if let Ok(mut records) = log.lock() {
        enter_denial(&mut records, tool, budget, record, denial);
    }
    budget.signal_if_exhausted();
}

/// Counts a refusal and enters its record (or, past [`MAX_REFUSALS`], its
/// count in the summary). The caller holds the log's lock.
fn enter_denial(
    records: &mut Vec<EgressRecord>,
    tool: &str,
    budget: &CallBudget,
    mut record: EgressRecord,
    denial: Denial,
) {
    crate::metrics::egress_denied(denial.metric());
    let n = budget.count_one();
    if n > MAX_REFUSALS {
        return summarise(records, tool, n);
    }
    tracing::warn!(
        tool,
        method = %record.method,
        authority = %record.authority,
        path = %record.path,
        reason = %denial,
        "egress denied"
    );
    record.denied = Some(denial);
    records.push(record);
}

/// Counts a request refused unseen because the call is being stopped.
/// A call stopped at its request cap may have had few refusals before: the
/// cap's own record says why it stopped, and these requests enter the
/// summary only once the refusals pass [`MAX_REFUSALS`] too.
pub(super) fn deny_more(log: &EgressLog, tool: &str, budget: &CallBudget) {
    crate::metrics::egress_denied(crate::metrics::Denial::Stopping);
    if let Ok(mut records) = log.lock() {
        let n = budget.count_one();
        if n > MAX_REFUSALS {
            summarise(&mut records, tool, n);
        }
    }
    budget.signal_if_exhausted();
}

/// Counts a request about to leave: `true` while the call is within its
/// request cap; past it, the request is refused (and recorded, and the
/// call stopped) instead. Counted under the log's lock, like a refusal.
pub(super) fn count_sent(
    log: &EgressLog,
    tool: &str,
    budget: &CallBudget,
    record: &EgressRecord,
) -> bool {
    let Ok(mut records) = log.lock() else {
        return false;
    };
    let n = budget.sent.fetch_add(1, Ordering::Relaxed) + 1;
    let max = budget.max_requests;
    if n <= max {
        return true;
    }
    if n == max + 1 {
        tracing::warn!(
            tool,
            "a call tried to send more than {max} requests; stopping the call"
        );
    }
    enter_denial(
        &mut records,
        tool,
        budget,
        record.clone(),
        Denial::TooManyRequests(max),
    );
    drop(records);
    budget.signal_if_exhausted();
    false
}

/// Enters refusal `n` (past [`MAX_REFUSALS`]) in the call's summary record,
/// adding that record (and one log line) the first time.
fn summarise(records: &mut Vec<EgressRecord>, tool: &str, n: usize) {
    let more = n.saturating_sub(MAX_REFUSALS);
    // Past the cap nothing new is entered but this summary (a request
    // already in flight may still finish its own record), so the search
    // from the end is short.
    let summary = records.iter_mut().rev().find_map(|r| match &mut r.denied {
        Some(Denial::RefusedMore(count)) => Some(count),
        _ => None,
    });
    match summary {
        // Counts race between threads; the largest is the total so far.
        Some(count) => *count = (*count).max(more),
        None => {
            tracing::warn!(
                tool,
                "egress denied {n} requests in one call, over the limit of {MAX_REFUSALS}; stopping the call"
            );
            records.push(EgressRecord {
                cluster: None,
                method: String::new(),
                authority: String::new(),
                path: String::new(),
                params: None,
                answer: None,
                denied: Some(Denial::RefusedMore(more)),
                status: None,
                failure: None,
                elapsed: Duration::ZERO,
            });
        }
    }
}

/// Appends a record; returns its index, for [`complete`].
pub(super) fn push(log: &EgressLog, record: EgressRecord) -> Option<usize> {
    let mut records = log.lock().ok()?;
    records.push(record);
    Some(records.len() - 1)
}

/// Replaces the record `push` put at `slot` with its finished form.
pub(super) fn complete(log: &EgressLog, slot: Option<usize>, record: EgressRecord) {
    crate::metrics::upstream_request(record.cluster.as_deref(), &record.method, record.status);
    if let (Some(slot), Ok(mut records)) = (slot, log.lock())
        && let Some(entry) = records.get_mut(slot)
    {
        *entry = record;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_on_a_character_boundary_with_a_marker() {
        assert_eq!(bounded("/api2/json/version"), "/api2/json/version");
        let exact = "a".repeat(MAX_RECORDED_LEN);
        assert_eq!(bounded(&exact), exact);
        let long = format!("/api2/json/{}", "a".repeat(100_000));
        let cut = bounded(&long);
        assert_eq!(cut.len(), MAX_RECORDED_LEN + TRUNCATED.len());
        assert!(cut.starts_with("/api2/json/aaa") && cut.ends_with(TRUNCATED));
        // "€" is 3 bytes: 512 falls inside one, so the cut is at 510.
        let wide = "€".repeat(1000);
        assert_eq!(bounded(&wide), format!("{}{TRUNCATED}", "€".repeat(170)));
    }

    /// Found by the e2e flood: requests after a call hit its request cap
    /// were summarised as refusals past MAX_REFUSALS when there had been
    /// fewer, and the count underflowed (a panic in debug builds, in the
    /// task running the call, which then never answered).
    #[test]
    fn requests_after_the_request_cap_are_refused_without_underflow() {
        let log = EgressLog::default();
        let budget = CallBudget::new(2);
        let record = EgressRecord {
            cluster: None,
            method: "GET".into(),
            authority: "pve1:8006".into(),
            path: "/api2/json/version".into(),
            params: None,
            answer: None,
            denied: None,
            status: None,
            failure: None,
            elapsed: Duration::ZERO,
        };
        assert!(count_sent(&log, "t", &budget, &record));
        assert!(count_sent(&log, "t", &budget, &record));
        assert!(!count_sent(&log, "t", &budget, &record));
        assert!(budget.exhausted() && budget.over_requests());
        for _ in 0..(MAX_REFUSALS + 5) {
            deny_more(&log, "t", &budget);
        }
        let records = log.lock().unwrap();
        let denials: Vec<_> = records.iter().filter_map(|r| r.denied.clone()).collect();
        assert_eq!(
            denials,
            vec![Denial::TooManyRequests(2), Denial::RefusedMore(6)],
            "{records:?}"
        );
    }

    #[tokio::test]
    async fn the_stop_signal_waits_until_the_cap_is_passed() {
        let refusals = Arc::new(CallBudget::new(
            crate::config::DEFAULT_MAX_REQUESTS_PER_CALL,
        ));
        for _ in 0..MAX_REFUSALS {
            refusals.count_one();
            refusals.signal_if_exhausted();
        }
        let waiting = tokio::spawn({
            let refusals = refusals.clone();
            async move { refusals.exhausted_signal().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        refusals.count_one();
        refusals.signal_if_exhausted();
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("woken")
            .unwrap();
    }
}
