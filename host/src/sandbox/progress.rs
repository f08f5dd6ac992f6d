//! The guest's side of progress reporting (the WIT `progress` interface):
//! what a component may report during a call, and the caps that keep a
//! hostile or chatty one from flooding the client, the log or the host.
//!
//! The sandbox only admits and cleans reports; forwarding them to the MCP
//! client is the server's job ([`crate::server::progress`]), which receives
//! them through the channel a call's [`CallRequest`](super::CallRequest)
//! carries.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::secret::Redactor;

/// Reports a call may forward in a burst, and the steady rate after it:
/// one per [`REFILL`]. Progress a person watches needs no more.
pub const BURST: u32 = 10;
/// One more report is admitted this often (10 a second).
pub const REFILL: Duration = Duration::from_millis(100);
/// The longest message forwarded, in bytes, after redaction; longer ones
/// are cut at a character boundary.
pub const MAX_MESSAGE_BYTES: usize = 512;
/// The longest message read at all: a longer one is dropped whole (its
/// progress still counts), so redaction never scans megabytes and never
/// works on a cut that could split a secret.
pub const MAX_RAW_MESSAGE_BYTES: usize = 64 << 10;
/// Reports waiting to be forwarded; more are dropped (a client reading
/// slowly cannot make the host buffer without bound).
const QUEUE: usize = 16;

/// One admitted report, cleaned, on its way to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestReport {
    /// Progress so far, on the guest's own scale; finite.
    pub progress: f64,
    /// The end of that scale, when the guest knows it; finite.
    pub total: Option<f64>,
    /// One line, redacted and capped; `None` when the guest sent none or
    /// one too long to read.
    pub message: Option<String>,
}

/// Where a call's admitted reports go: the receiving end is the server's.
pub type ReportSender = mpsc::Sender<GuestReport>;

/// A channel for one call's reports.
pub fn channel() -> (ReportSender, mpsc::Receiver<GuestReport>) {
    mpsc::channel(QUEUE)
}

/// One call's progress import: admits, cleans and passes on reports.
/// Without a sender (no one asked for progress) every report is dropped.
pub struct ProgressSink {
    sender: Option<ReportSender>,
    redactor: Redactor,
    rate: RateLimit,
    /// Reports the caps dropped, for the call's log line.
    pub dropped: u64,
}

impl ProgressSink {
    /// A sink forwarding to `sender` (if any), redacting with `redactor`.
    pub fn new(sender: Option<ReportSender>, redactor: Redactor) -> ProgressSink {
        ProgressSink {
            sender,
            redactor,
            rate: RateLimit::new(Instant::now()),
            dropped: 0,
        }
    }

    /// The guest's `report`: never fails, never blocks.
    pub fn report(&mut self, progress: f64, total: Option<f64>, message: &str) {
        let Some(sender) = &self.sender else {
            // Nobody listens: nothing to clean or count against the rate.
            return;
        };
        let admitted = progress.is_finite()
            && total.is_none_or(f64::is_finite)
            && self.rate.admit(Instant::now());
        if !admitted {
            self.dropped += 1;
            return;
        }
        let report = GuestReport {
            progress,
            total,
            message: clean_message(&self.redactor, message),
        };
        if sender.try_send(report).is_err() {
            self.dropped += 1;
        }
    }
}

/// The message as the client may see it: nothing when empty or over
/// [`MAX_RAW_MESSAGE_BYTES`]; otherwise secrets redacted first (so a cut
/// can never leave part of one), control characters made spaces (one
/// line), then cut to [`MAX_MESSAGE_BYTES`].
pub fn clean_message(redactor: &Redactor, raw: &str) -> Option<String> {
    if raw.is_empty() || raw.len() > MAX_RAW_MESSAGE_BYTES {
        return None;
    }
    let redacted = redactor.redact(raw);
    let mut line: String = redacted
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    line.truncate(line.floor_char_boundary(MAX_MESSAGE_BYTES));
    Some(line)
}

/// A token bucket: [`BURST`] at once, then one per [`REFILL`].
#[derive(Debug)]
pub struct RateLimit {
    tokens: u32,
    /// When the next token is added, while the bucket is not full.
    next_refill: Instant,
}

impl RateLimit {
    /// A full bucket at `now`.
    pub fn new(now: Instant) -> RateLimit {
        RateLimit {
            tokens: BURST,
            next_refill: now + REFILL,
        }
    }

    /// Whether a report at `now` may pass; takes a token if so.
    pub fn admit(&mut self, now: Instant) -> bool {
        while self.tokens < BURST && now >= self.next_refill {
            self.tokens += 1;
            self.next_refill += REFILL;
        }
        if self.tokens == BURST {
            // A full bucket does not save up refills for later.
            self.next_refill = self.next_refill.max(now + REFILL);
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    const SECRET: &str = "0b5a5c2e-6f7d-4a1b-9c3d-2e1f0a9b8c7d";

    #[test]
    fn a_burst_passes_then_ten_a_second() {
        let start = Instant::now();
        let mut rate = RateLimit::new(start);
        let burst = (0..100).filter(|_| rate.admit(start)).count();
        assert_eq!(burst, BURST as usize);
        // Over the next 10 s, 100 reports a second: 10 a second pass.
        let passed = (1..=1000)
            .filter(|i| rate.admit(start + Duration::from_millis(i * 10)))
            .count();
        assert_eq!(passed, 100);
    }

    #[test]
    fn an_idle_bucket_holds_only_one_burst() {
        let start = Instant::now();
        let mut rate = RateLimit::new(start);
        let later = start + Duration::from_secs(60);
        let burst = (0..100).filter(|_| rate.admit(later)).count();
        assert_eq!(burst, BURST as usize, "a minute idle saves no more");
        assert!(!rate.admit(later));
        assert!(rate.admit(later + REFILL));
    }

    #[test]
    fn messages_are_redacted_before_they_are_cut() {
        let redactor = Redactor::new([Secret::new(SECRET)]);
        let clean = clean_message(&redactor, &format!("token {SECRET} seen")).unwrap();
        assert_eq!(clean, "token [REDACTED] seen");
        // A secret straddling the cut is redacted whole, not cut in half.
        let padding = "x".repeat(MAX_MESSAGE_BYTES - 10);
        let clean = clean_message(&redactor, &format!("{padding}{SECRET}")).unwrap();
        assert_eq!(clean.len(), MAX_MESSAGE_BYTES);
        assert!(clean.ends_with("[REDACTED]"), "{clean}");
        assert!(!clean.contains(&SECRET[..6]), "{clean}");
    }

    #[test]
    fn messages_are_one_capped_line() {
        let redactor = Redactor::default();
        let long = "é".repeat(MAX_MESSAGE_BYTES);
        let clean = clean_message(&redactor, &long).unwrap();
        assert!(clean.len() <= MAX_MESSAGE_BYTES && clean.len() >= MAX_MESSAGE_BYTES - 1);
        assert!(clean.chars().all(|c| c == 'é'));
        assert_eq!(
            clean_message(&redactor, "a\nb\r\tc\u{1b}[2J").unwrap(),
            "a b  c [2J"
        );
        assert_eq!(clean_message(&redactor, ""), None);
        let huge = "y".repeat(MAX_RAW_MESSAGE_BYTES + 1);
        assert_eq!(clean_message(&redactor, &huge), None);
        let largest = "y".repeat(MAX_RAW_MESSAGE_BYTES);
        assert_eq!(
            clean_message(&redactor, &largest).unwrap().len(),
            MAX_MESSAGE_BYTES
        );
    }

    #[tokio::test]
    async fn the_sink_drops_what_it_cannot_use_and_never_blocks() {
        let (sender, mut receiver) = channel();
        let mut sink = ProgressSink::new(Some(sender), Redactor::default());
        sink.report(f64::NAN, None, "nan");
        sink.report(1.0, Some(f64::INFINITY), "infinite total");
        for i in 0..100 {
            sink.report(f64::from(i), Some(100.0), "flood");
        }
        let mut got = Vec::new();
        while let Ok(report) = receiver.try_recv() {
            got.push(report);
        }
        assert_eq!(got.len(), BURST as usize, "{got:?}");
        assert_eq!(got[0].progress, 0.0);
        assert_eq!(got[0].total, Some(100.0));
        assert_eq!(got[0].message.as_deref(), Some("flood"));
        assert_eq!(sink.dropped, 2 + 100 - u64::from(BURST));
    }

    #[tokio::test]
    async fn a_full_queue_drops_rather_than_waits() {
        let (sender, mut receiver) = mpsc::channel(2);
        let mut sink = ProgressSink::new(Some(sender), Redactor::default());
        for i in 0..5 {
            sink.report(f64::from(i), None, "");
        }
        assert_eq!(sink.dropped, 3);
        assert_eq!(receiver.recv().await.unwrap().message, None);
        let mut silent = ProgressSink::new(None, Redactor::default());
        silent.report(1.0, None, "nobody listens");
        assert_eq!(silent.dropped, 0);
    }
}
