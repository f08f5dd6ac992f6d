//! The record of one attempt, in the JSON shape the end-to-end tests read.

use serde_json::{Map, Value, json};

/// What became of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The request went through and got this status: a sandbox failure
    /// unless the attempt is the control.
    Ok(u16),
    /// A non-HTTP action succeeded (a file read, a socket...): reported as
    /// `"ok"` without a status.
    Done,
    /// The host refused it with `error-code.HTTP-request-denied`.
    Denied,
    /// Setting a header failed with `header-error.forbidden`.
    ForbiddenHeader,
    /// Setting a header succeeded (the header attempts' failure case).
    Accepted,
    /// `wasi:http` would not even build the request (a `set-*` call failed).
    Rejected(String),
    /// Nothing came back before the attempt's deadline.
    Timeout(String),
    /// Not tried; the reason says why.
    Skipped(String),
    /// Any other failure, as Debug text.
    Error(String),
}

impl Outcome {
    /// The `outcome` word plus `status` or `error`.
    pub fn fields(&self) -> Map<String, Value> {
        let (word, extra) = match self {
            Self::Ok(status) => ("ok", ("status", json!(status))),
            Self::Done => ("ok", ("status", Value::Null)),
            Self::Denied => ("denied", ("error", json!("HttpRequestDenied"))),
            Self::ForbiddenHeader => ("forbidden-header", ("error", json!("Forbidden"))),
            Self::Accepted => ("accepted", ("error", Value::Null)),
            Self::Rejected(e) => ("rejected", ("error", json!(e))),
            Self::Timeout(e) => ("timeout", ("error", json!(e))),
            Self::Skipped(e) => ("skipped", ("error", json!(e))),
            Self::Error(e) => ("error", ("error", json!(e))),
        };
        let mut map = Map::new();
        map.insert("outcome".into(), json!(word));
        if !extra.1.is_null() {
            map.insert(extra.0.into(), extra.1);
        }
        map
    }
}

/// `{"what", "url", "outcome", "status"|"error"}` plus any `extra` fields.
pub fn attempt(what: &str, url: &str, outcome: &Outcome, extra: Map<String, Value>) -> Value {
    let mut map = Map::new();
    map.insert("what".into(), json!(what));
    map.insert("url".into(), json!(url));
    map.extend(outcome.fields());
    map.extend(extra);
    Value::Object(map)
}

/// Counts attempts by outcome word, for the human-readable summary.
pub fn tally(attempts: &[Value]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for a in attempts {
        let word = a["outcome"].as_str().unwrap_or("?").to_owned();
        match counts.iter_mut().find(|(w, _)| *w == word) {
            Some((_, n)) => *n += 1,
            None => counts.push((word, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(w, n)| format!("{n} {w}")).collect();
    format!("{} attempts: {}", attempts.len(), parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let a = attempt("x", "u", &Outcome::Ok(200), Map::new());
        assert_eq!(a, json!({"what":"x","url":"u","outcome":"ok","status":200}));
        let d = attempt("y", "v", &Outcome::Denied, Map::new());
        assert_eq!(d["error"], "HttpRequestDenied");
        assert_eq!(Outcome::Accepted.fields().len(), 1);
        assert_eq!(
            Value::Object(Outcome::Done.fields()),
            json!({"outcome":"ok"})
        );
        assert_eq!(tally(&[a, d.clone(), d]), "3 attempts: 1 ok, 2 denied");
    }
}
