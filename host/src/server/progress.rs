//! Progress notifications for a tool call whose request carried
//! `_meta.progressToken`: what the guest reports through its `progress`
//! import (admitted and cleaned by [`crate::sandbox::progress`]), a "still
//! running" notice every second in which the guest reported nothing, and
//! one when the call ends; the first of them is preceded by one saying the
//! call started. A call that ends before there is anything to report (most
//! reads: a millisecond or two) sends none: two notifications for it would
//! tell the client nothing and cost the server more than the call itself.
//! The same on stdio and HTTP: notifications go through the request's peer,
//! and over HTTP rmcp routes them onto the call's own SSE stream.

use std::future::Future;
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};

use crate::sandbox::progress::{self as guest, GuestReport, ReportSender};

/// How often a running call reports that it is still running, unless the
/// guest reported in the meantime.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// Runs the call `start` makes, reporting its progress if the client asked
/// for it; `start` gets where the guest's reports go (`None` when nobody
/// asked, and they are dropped).
pub async fn track<F, C>(context: &RequestContext<RoleServer>, tool: &str, start: F) -> C::Output
where
    F: FnOnce(Option<ReportSender>) -> C,
    C: Future,
{
    let Some(token) = context.meta.get_progress_token() else {
        return start(None).await;
    };
    let (sender, mut reports) = guest::channel();
    let call = start(Some(sender));
    let mut reporter = Reporter {
        peer: &context.peer,
        token,
        sequence: Sequence::default(),
        total: None,
        announced: false,
    };
    let started = Instant::now();
    tokio::pin!(call);
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + INTERVAL, INTERVAL);
    // A send that blocks (a slow client) must not be followed by a burst of
    // the ticks it missed.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut guest_spoke = false;
    let mut reports_open = true;
    loop {
        tokio::select! {
            // Reports the guest made before it returned go out before the
            // end, in order.
            biased;
            report = reports.recv(), if reports_open => match report {
                Some(report) => {
                    guest_spoke = true;
                    reporter.announce(tool).await;
                    reporter.forward(report).await;
                }
                None => reports_open = false,
            },
            output = &mut call => {
                while let Ok(report) = reports.try_recv() {
                    reporter.announce(tool).await;
                    reporter.forward(report).await;
                }
                if !reporter.announced {
                    return output;
                }
                let ms = started.elapsed().as_millis();
                let last = reporter.sequence.done();
                reporter.send(last, Some(last), format!("{tool}: done in {ms} ms")).await;
                return output;
            }
            _ = ticks.tick() => {
                // The guest's own reports replace the generic notice.
                if std::mem::take(&mut guest_spoke) {
                    continue;
                }
                reporter.announce(tool).await;
                let secs = started.elapsed().as_secs();
                let value = reporter.sequence.host();
                let total = reporter.total;
                reporter.send(value, total, format!("{tool}: waiting for Proxmox, {secs} s")).await;
            }
        }
    }
}

/// The progress values one call's client is sent. MCP requires each to be
/// larger than the one before, whoever sent it; the guest's values keep
/// their scale (they pair with its `total`), so the host's own notices
/// step by a hair that no progress bar shows.
#[derive(Debug, Default)]
pub struct Sequence {
    last: Option<f64>,
}

/// A hair: the smallest step, relative to the value it is added to, that
/// still changes it at the sizes progress takes.
const HAIR: f64 = 1.0 / (1u64 << 20) as f64;

impl Sequence {
    /// The value for a notice of the host's own: 0 for the first, then a
    /// hair above the last.
    pub fn host(&mut self) -> f64 {
        self.set(self.last.map_or(0.0, above))
    }

    /// The value for a guest's report of `progress`: itself when it is
    /// above the last value sent, else a hair above that one.
    pub fn guest(&mut self, progress: f64) -> f64 {
        match self.last {
            Some(last) if progress <= last => self.set(above(last)),
            _ => self.set(progress),
        }
    }

    /// The value of the final notice (also its total: the call is over).
    pub fn done(&mut self) -> f64 {
        self.set(
            self.last
                .map_or(1.0, |last| (last.floor() + 1.0).max(above(last))),
        )
    }

    fn set(&mut self, value: f64) -> f64 {
        self.last = Some(value);
        value
    }
}

/// A hair above `value`.
fn above(value: f64) -> f64 {
    value + (value.abs() * HAIR).max(HAIR)
}

struct Reporter<'a> {
    peer: &'a Peer<RoleServer>,
    token: ProgressToken,
    sequence: Sequence,
    /// The guest's last `total`, kept on the host's notices so a client's
    /// progress bar does not vanish between reports.
    total: Option<f64>,
    /// Whether "started" went out: it goes before the first other notice.
    announced: bool,
}

impl Reporter<'_> {
    /// Says the call started, once, before its first other notice.
    async fn announce(&mut self, tool: &str) {
        if std::mem::replace(&mut self.announced, true) {
            return;
        }
        let first = self.sequence.host();
        self.send(first, None, format!("{tool}: started")).await;
    }

    async fn forward(&mut self, report: GuestReport) {
        let value = self.sequence.guest(report.progress);
        if report.total.is_some() {
            self.total = report.total;
        }
        let mut param = ProgressNotificationParam::new(self.token.clone(), value);
        if let Some(total) = report.total {
            param = param.with_total(total);
        }
        if let Some(message) = report.message {
            param = param.with_message(message);
        }
        self.notify(param).await;
    }

    async fn send(&mut self, value: f64, total: Option<f64>, message: String) {
        let mut param =
            ProgressNotificationParam::new(self.token.clone(), value).with_message(message);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        self.notify(param).await;
    }

    async fn notify(&self, param: ProgressNotificationParam) {
        // A client that went away cannot be told; the call goes on (or is
        // cancelled through its own token).
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!(error = %e, "progress notification not delivered");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_always_increase_and_keep_the_guests_scale() {
        let mut s = Sequence::default();
        let mut sent = vec![s.host(), s.host()];
        // The guest's first report is 0 %: already sent, so a hair above.
        sent.push(s.guest(0.0));
        sent.push(s.guest(40.0));
        sent.push(s.host());
        // Going back is never shown.
        sent.push(s.guest(10.0));
        sent.push(s.guest(-5.0));
        sent.push(s.guest(60.0));
        sent.push(s.done());
        assert_eq!(sent[0], 0.0);
        assert!(sent.windows(2).all(|w| w[0] < w[1]), "{sent:?}");
        assert_eq!(sent[3], 40.0);
        assert!(sent[4] - 40.0 < 0.001, "{sent:?}");
        assert!(sent[5] < 40.001 && sent[6] < 40.001, "{sent:?}");
        assert_eq!(sent[7], 60.0);
        assert_eq!(sent[8], 61.0);
        assert_eq!(Sequence::default().done(), 1.0);
    }

    #[test]
    fn a_hair_is_felt_at_every_size() {
        for v in [0.0, 1e-9, 0.5, 1.0, 100.0, 1e6, 1e12, -3.0] {
            assert!(above(v) > v, "{v}");
        }
    }
}
