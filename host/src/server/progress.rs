//! Progress notifications for a tool call whose request carried
//! `_meta.progressToken`: one when the call starts, one every second while
//! it runs (a slow Proxmox answer), one when it ends. The same on stdio and
//! HTTP: notifications go through the request's peer, and over HTTP rmcp
//! routes them onto the call's own SSE stream.

use std::future::Future;
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};

/// How often a running call reports that it is still running.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// Runs `call`, reporting its progress if the client asked for it.
pub async fn track<F: Future>(
    context: &RequestContext<RoleServer>,
    tool: &str,
    call: F,
) -> F::Output {
    let Some(token) = context.meta.get_progress_token() else {
        return call.await;
    };
    let mut reporter = Reporter {
        peer: &context.peer,
        token,
        next: 0.0,
    };
    let started = Instant::now();
    reporter.send(false, format!("{tool}: started")).await;
    tokio::pin!(call);
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + INTERVAL, INTERVAL);
    // A send that blocks (a slow client) must not be followed by a burst of
    // the ticks it missed.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            output = &mut call => {
                let ms = started.elapsed().as_millis();
                reporter.send(true, format!("{tool}: done in {ms} ms")).await;
                return output;
            }
            _ = ticks.tick() => {
                let secs = started.elapsed().as_secs();
                reporter.send(false, format!("{tool}: waiting for Proxmox, {secs} s")).await;
            }
        }
    }
}

struct Reporter<'a> {
    peer: &'a Peer<RoleServer>,
    token: ProgressToken,
    /// The next progress value: 0 at the start, one more each time, and
    /// the last one is also the total.
    next: f64,
}

impl Reporter<'_> {
    async fn send(&mut self, last: bool, message: String) {
        let progress = self.next;
        self.next += 1.0;
        let mut param =
            ProgressNotificationParam::new(self.token.clone(), progress).with_message(message);
        if last {
            param = param.with_total(progress);
        }
        // A client that went away cannot be told; the call goes on (or is
        // cancelled through its own token).
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!(error = %e, "progress notification not delivered");
        }
    }
}
