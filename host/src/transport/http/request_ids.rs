//! The JSON-RPC ids of a session's requests in flight. MCP forbids a client
//! to reuse an id within a session, and rmcp routes each answer by its id,
//! so a second request with an id still in flight would never be answered:
//! it is refused with a clear error instead.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;
use serde::de::IgnoredAny;

/// The ids in flight, per session.
#[derive(Debug, Default)]
pub struct RequestIds {
    in_flight: Mutex<HashMap<Arc<str>, HashSet<String>>>,
}

/// A request's ids, held until its response is sent or abandoned.
#[derive(Debug)]
pub struct IdsGuard {
    ids: Arc<RequestIds>,
    session: Arc<str>,
    taken: Vec<String>,
}

/// Just what tells a request from a notification or an answer.
#[derive(Deserialize)]
struct Head {
    id: Option<serde_json::Value>,
    method: Option<IgnoredAny>,
}

// A batch first: serde reads a struct from a sequence too, so an array
// tried as `One` would pass as one request made of its first elements.
#[derive(Deserialize)]
#[serde(untagged)]
enum Body {
    Batch(Vec<Head>),
    One(Head),
}

/// The ids of the requests in `body` (as JSON text), none when it is not
/// JSON-RPC: rmcp answers that itself.
fn requests(body: &[u8]) -> Vec<String> {
    let heads = match serde_json::from_slice::<Body>(body) {
        Ok(Body::One(head)) => vec![head],
        Ok(Body::Batch(heads)) => heads,
        Err(_) => return Vec::new(),
    };
    heads
        .into_iter()
        .filter(|h| h.method.is_some())
        .filter_map(|h| h.id)
        .map(|id| id.to_string())
        .collect()
}

impl RequestIds {
    /// Takes the ids of the requests in `body` for `session`, or names the
    /// first that a request still in flight there already uses (or that
    /// the body itself repeats).
    pub fn take(self: &Arc<Self>, session: &str, body: &[u8]) -> Result<IdsGuard, String> {
        let ids = requests(body);
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let session: Arc<str> = match in_flight.get_key_value(session) {
            Some((key, _)) => key.clone(),
            None => Arc::from(session),
        };
        let held = in_flight.entry(session.clone()).or_default();
        let mut taken = Vec::with_capacity(ids.len());
        for id in ids {
            if !held.insert(id.clone()) {
                for t in &taken {
                    held.remove(t);
                }
                if held.is_empty() {
                    in_flight.remove(&session);
                }
                return Err(id);
            }
            taken.push(id);
        }
        Ok(IdsGuard {
            ids: self.clone(),
            session,
            taken,
        })
    }

    /// Sessions with a request in flight, for tests.
    #[cfg(test)]
    fn sessions(&self) -> usize {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for IdsGuard {
    fn drop(&mut self) {
        if self.taken.is_empty() {
            return;
        }
        let mut in_flight = self
            .ids
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = in_flight.get_mut(&self.session) {
            for id in &self.taken {
                held.remove(id);
            }
            if held.is_empty() {
                in_flight.remove(&self.session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_in_flight_is_refused_until_its_response_is_done() {
        let ids = Arc::new(RequestIds::default());
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#;
        let first = ids.take("s1", call).unwrap();
        assert_eq!(ids.take("s1", call).unwrap_err(), "7");
        // Another session, a string id "7", an answer or a notification:
        // not the same request id.
        let other = ids.take("s2", call).unwrap();
        let text = ids
            .take("s1", br#"{"jsonrpc":"2.0","id":"7","method":"ping"}"#)
            .unwrap();
        let answer = ids
            .take("s1", br#"{"jsonrpc":"2.0","id":7,"result":{}}"#)
            .unwrap();
        let note = ids
            .take(
                "s1",
                br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            )
            .unwrap();
        // A batch that repeats an id in flight takes none of its ids.
        let batch = br#"[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"ping"}]"#;
        assert_eq!(ids.take("s1", batch).unwrap_err(), "7");
        assert!(
            ids.take("s1", br#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#)
                .is_ok()
        );
        drop(first);
        let again = ids.take("s1", call).unwrap();
        drop((again, other, text, answer, note));
        assert_eq!(ids.sessions(), 0, "nothing is kept once all are done");
        // Not JSON-RPC: nothing to take; rmcp answers it.
        assert!(ids.take("s1", b"{not json").is_ok());
    }
}
