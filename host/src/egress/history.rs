//! What one call has sent and been answered so far, for the routes whose
//! admission depends on it: a route sent at most once (`agent/exec`), and
//! a parameter that must carry a value Proxmox answered the call's own
//! earlier write with (`pid`), so a call polls only the command it
//! started, never another call's by guessing.

use std::sync::Mutex;

use serde_json::Value;

/// The most answered values a call keeps: far more than any tool polls.
const MAX_ANSWERS: usize = 64;
/// The longest answered value kept, in bytes: a pid, an id.
const MAX_ANSWER_LEN: usize = 256;

/// One call's memory of its own requests.
#[derive(Debug, Default)]
pub struct CallHistory {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Indexes into the call's routes of the once-only ones it sent.
    sent_once: Vec<usize>,
    /// `(field, value)` from the `data` of its writes' answers.
    answers: Vec<(String, String)>,
}

impl CallHistory {
    /// Marks the once-only route `index` sent; `false` when it was already.
    pub fn send_once(&self, index: usize) -> bool {
        let mut inner = self.lock();
        if inner.sent_once.contains(&index) {
            return false;
        }
        inner.sent_once.push(index);
        true
    }

    /// Whether a write of this call was answered `value` under `field`.
    pub fn answered(&self, field: &str, value: &str) -> bool {
        self.lock()
            .answers
            .iter()
            .any(|(f, v)| f == field && v == value)
    }

    /// Keeps the scalar values of `fields` in the `data` of a write's
    /// answer `body` (Proxmox's `{"data": {...}}`); anything else in it,
    /// or a body that is not such JSON, is ignored.
    pub fn remember(&self, fields: &[String], body: &[u8]) {
        let Ok(Value::Object(mut answer)) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        let Some(Value::Object(data)) = answer.remove("data") else {
            return;
        };
        let mut inner = self.lock();
        for field in fields {
            let value = match data.get(field) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => continue,
            };
            if value.len() <= MAX_ANSWER_LEN && inner.answers.len() < MAX_ANSWERS {
                inner.answers.push((field.clone(), value));
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere cannot leave the lists half-written.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_the_data_fields_a_write_was_answered_with() {
        let history = CallHistory::default();
        let fields = ["pid".to_string()];
        history.remember(&fields, br#"{"data": {"pid": 4242, "other": 7}}"#);
        assert!(history.answered("pid", "4242"));
        assert!(!history.answered("pid", "4243"));
        assert!(!history.answered("other", "7"));
        // Not Proxmox's shape, or not a scalar: nothing kept.
        history.remember(&fields, br#"{"pid": 1}"#);
        history.remember(&fields, br#"{"data": {"pid": [2]}}"#);
        history.remember(&fields, b"not json");
        assert!(!history.answered("pid", "1") && !history.answered("pid", "[2]"));
        // Bounded, however many writes answer.
        for i in 0..1000 {
            history.remember(&fields, format!(r#"{{"data": {{"pid": {i}}}}}"#).as_bytes());
        }
        assert!(history.answered("pid", "62") && !history.answered("pid", "63"));
    }

    #[test]
    fn a_once_only_route_is_sent_once() {
        let history = CallHistory::default();
        assert!(history.send_once(2));
        assert!(history.send_once(0));
        assert!(!history.send_once(2));
    }
}
