//! MCP logging to the client (`logging/setLevel`, `notifications/message`):
//! what the agent's operator should see about a call beyond its result,
//! such as requests the egress gate refused and calls the sandbox stopped.
//! Nothing is sent until the client sets a level, and only at or above it.
//!
//! MCP 2026-07-28 deprecates logging (SEP-2577), but 2025-era clients, the
//! conformance suite among them, still use it; hence the `allow(deprecated)`.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;
use serde_json::json;

use crate::sandbox::CallReport;
use crate::tools::{CallOutcome, FailureKind};

/// The level one session asked for.
#[derive(Debug, Clone, Default)]
pub struct ClientLog {
    level: Arc<Mutex<Option<LoggingLevel>>>,
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl ClientLog {
    /// A fresh setting, for a new session.
    pub fn new() -> ClientLog {
        ClientLog::default()
    }

    /// `logging/setLevel`.
    pub fn set(&self, level: LoggingLevel) {
        if let Ok(mut current) = self.level.lock() {
            *current = Some(level);
        }
    }

    fn wants(&self, level: LoggingLevel) -> bool {
        let current = self.level.lock().ok().and_then(|l| *l);
        current.is_some_and(|min| rank(level) >= rank(min))
    }

    /// Tells the client what it should know about a finished call.
    pub async fn call_finished(&self, peer: &Peer<RoleServer>, tool: &str, report: &CallReport) {
        // Most clients never set a level: build nothing for them.
        if self.level.lock().ok().and_then(|l| *l).is_none() {
            return;
        }
        let mut messages = Vec::new();
        for record in report.egress.iter().filter(|r| r.denied.is_some()) {
            if let Some(denial) = &record.denied {
                messages.push((
                    LoggingLevel::Warning,
                    json!({
                        "tool": tool,
                        "event": "egress refused",
                        "method": record.method,
                        "path": record.path,
                        "reason": denial.to_string(),
                    }),
                ));
            }
        }
        if let CallOutcome::Failed {
            kind: kind @ (FailureKind::Sandbox | FailureKind::Internal),
            message,
        } = &report.outcome
        {
            messages.push((
                LoggingLevel::Error,
                json!({"tool": tool, "event": kind.as_str(), "message": message}),
            ));
        }
        messages.push((
            LoggingLevel::Debug,
            json!({
                "tool": tool,
                "event": "call finished",
                "upstream_requests": report.egress.len(),
            }),
        ));
        for (level, data) in messages {
            if self.wants(level) {
                let mut param = LoggingMessageNotificationParam::new(level, data);
                param.logger = Some("pve-mcp".into());
                // A client that went away cannot be told; the call's result
                // is what matters.
                let _ = peer.notify_logging_message(param).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_until_a_level_is_set_then_filters_by_it() {
        let log = ClientLog::new();
        assert!(!log.wants(LoggingLevel::Emergency));
        log.set(LoggingLevel::Warning);
        assert!(log.wants(LoggingLevel::Warning));
        assert!(log.wants(LoggingLevel::Error));
        assert!(!log.wants(LoggingLevel::Info));
        log.set(LoggingLevel::Debug);
        assert!(log.wants(LoggingLevel::Debug));
    }
}
