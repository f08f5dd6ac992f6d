//! Rate limits: the `N/unit` syntax, the three scopes, and the counter key
//! each call counts against.

use std::fmt;
use std::time::Duration;

use crate::caller::Caller;

/// Who shares one budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Each MCP session has its own budget (`rate_limit`).
    Session,
    /// Each named client token has its own budget (`rate_limit_per_token`);
    /// a call without a token (stdio) counts per session instead.
    Token,
    /// One budget for every caller, across replicas sharing a state store
    /// (`rate_limit_global`).
    Global,
}

impl Scope {
    /// The rule key that sets a limit of this scope.
    pub fn key(self) -> &'static str {
        match self {
            Scope::Session => "rate_limit",
            Scope::Token => "rate_limit_per_token",
            Scope::Global => "rate_limit_global",
        }
    }

    /// How a person reads the scope.
    pub fn label(self) -> &'static str {
        match self {
            Scope::Session => "per session",
            Scope::Token => "per client token",
            Scope::Global => "for all callers together",
        }
    }
}

/// `N/unit`: at most N calls per calendar window of one unit (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Calls allowed per window.
    pub calls: u64,
    /// The window's length.
    pub window: Duration,
}

/// The units a rate may use, with their length in seconds.
const UNITS: &[(&str, u64)] = &[
    ("second", 1),
    ("minute", 60),
    ("hour", 3600),
    ("day", 86_400),
];

impl Rate {
    /// Parses `10/minute` (also `10/min`, `10/s`, `10/hours`, spaces
    /// around the `/`). The error says what is expected.
    pub fn parse(text: &str) -> Result<Rate, String> {
        let expected = "write it as CALLS/UNIT, e.g. \"30/minute\", with a unit of second, minute, hour or day";
        let Some((calls, unit)) = text.split_once('/') else {
            return Err(format!("{text:?} is not a rate: {expected}"));
        };
        let calls: u64 = calls.trim().parse().map_err(|_| {
            format!(
                "{:?} is not a whole number of calls: {expected}",
                calls.trim()
            )
        })?;
        if calls == 0 {
            return Err(format!(
                "{text:?} allows no calls at all; use action = \"deny\" to refuse a tool"
            ));
        }
        let unit = unit.trim().to_ascii_lowercase();
        // Plurals and short forms ("minutes", "mins", "min", "m"); a
        // two-letter unit keeps its "s", so "ms" is refused rather than
        // read as minutes.
        let base = match unit.strip_suffix('s') {
            Some(base) if unit.len() > 2 => base,
            _ => unit.as_str(),
        };
        let seconds = UNITS
            .iter()
            .find(|(name, _)| {
                *name == base || (!base.is_empty() && base.len() <= 3 && name.starts_with(base))
            })
            .map(|(_, s)| *s)
            .ok_or_else(|| format!("{unit:?} is not a unit: {expected}"))?;
        Ok(Rate {
            calls,
            window: Duration::from_secs(seconds),
        })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.window.as_secs();
        let unit = UNITS
            .iter()
            .find(|(_, s)| *s == secs)
            .map(|(n, _)| *n)
            .unwrap_or("second");
        write!(f, "{}/{unit}", self.calls)
    }
}

/// One rate limit of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    /// Where it is written, e.g. `policy.tools.pve_list_vms.rate_limit`.
    pub name: String,
    /// Who shares the budget.
    pub scope: Scope,
    /// How many calls per window.
    pub rate: Rate,
}

impl RateLimit {
    /// The counter this caller's call counts against. The rule's name and
    /// rate are part of it, so an unchanged rule keeps its counters across
    /// a reload and a changed one starts afresh. Sessions are qualified
    /// with this process's instance id: the stdio session is called
    /// "stdio" in every process.
    pub fn counter_key(&self, caller: &Caller, instance: &str) -> String {
        let who = match (self.scope, &caller.token) {
            (Scope::Global, _) => "global".to_string(),
            (Scope::Token, Some(token)) => format!("token:{token}"),
            (Scope::Token, None) | (Scope::Session, _) => {
                format!("session:{instance}:{}", caller.session)
            }
        };
        format!("{}={}|{who}", self.name, self.rate)
    }

    /// How the limit reads in a message, e.g. `30/minute per session`.
    pub fn describe(&self) -> String {
        format!("{} {}", self.rate, self.scope.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn rates_parse_in_plain_words() {
        let r = Rate::parse("30/minute").unwrap();
        assert_eq!(r.calls, 30);
        assert_eq!(r.window, Duration::from_secs(60));
        assert_eq!(
            Rate::parse("5 / hours").unwrap().window,
            Duration::from_secs(3600)
        );
        assert_eq!(Rate::parse("1/s").unwrap().window, Duration::from_secs(1));
        assert_eq!(
            Rate::parse("1/min").unwrap().window,
            Duration::from_secs(60)
        );
        assert_eq!(Rate::parse("1000/day").unwrap().to_string(), "1000/day");
        for bad in [
            "30",
            "x/minute",
            "30/fortnight",
            "0/minute",
            "-1/minute",
            "30/",
        ] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
        assert!(
            Rate::parse("30/fortnight")
                .unwrap_err()
                .contains("second, minute, hour or day")
        );
    }

    #[test]
    fn counter_keys_follow_the_scope() {
        let limit = |scope| RateLimit {
            name: "policy.tools.x.rate_limit".into(),
            scope,
            rate: Rate::parse("3/minute").unwrap(),
        };
        let a = Caller {
            session: Arc::from("s1"),
            token: Some(Arc::from("ci")),
            client: None,
            via: None,
            trace: None,
        };
        let b = Caller {
            session: Arc::from("s2"),
            token: Some(Arc::from("ci")),
            client: None,
            via: None,
            trace: None,
        };
        assert_eq!(
            limit(Scope::Global).counter_key(&a, "i"),
            limit(Scope::Global).counter_key(&b, "i")
        );
        assert_eq!(
            limit(Scope::Token).counter_key(&a, "i"),
            limit(Scope::Token).counter_key(&b, "i")
        );
        assert_ne!(
            limit(Scope::Session).counter_key(&a, "i"),
            limit(Scope::Session).counter_key(&b, "i")
        );
        let stdio = Caller::stdio();
        assert_ne!(
            limit(Scope::Session).counter_key(&stdio, "one"),
            limit(Scope::Session).counter_key(&stdio, "two")
        );
    }
}
