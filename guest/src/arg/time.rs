//! Time arguments: a point in time (`since`, `until`) given as epoch
//! seconds or ISO-8601, and the RRD timeframes and consolidations the
//! metrics tools ask for.

use serde_json::Value;

use super::choice;

/// Civil date → days since the epoch.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses ISO-8601 `YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|±HH:MM]` to epoch
/// seconds; a time without offset counts as UTC.
pub fn parse_iso(s: &str) -> Option<i64> {
    let s = s.trim();
    let num = |t: &str| -> Option<i64> {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mut dp = date.split('-');
    let (y, m, d) = (dp.next()?, dp.next()?, dp.next()?);
    if dp.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d) = (num(y)?, num(m)? as u32, num(d)? as u32);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    let mut secs = days_from_civil(y, m, d) * 86_400;
    if let Some(time) = time {
        let (clock, offset) = if let Some(t) = time.strip_suffix(['Z', 'z']) {
            (t, 0)
        } else if let Some(i) = time.rfind(['+', '-']) {
            let (t, off) = time.split_at(i);
            let sign = if off.starts_with('-') { -1 } else { 1 };
            let off = &off[1..];
            let (oh, om) = off
                .split_once(':')
                .unwrap_or((off.get(..2)?, off.get(2..)?));
            let (oh, om) = (num(oh)?, num(om)?);
            if oh > 23 || om > 59 {
                return None;
            }
            (t, sign * (oh * 3600 + om * 60))
        } else {
            (time, 0)
        };
        let clock = clock.split('.').next()?;
        let mut cp = clock.split(':');
        let h = num(cp.next()?)?;
        let mi = num(cp.next()?)?;
        let sec = cp.next().map(num).unwrap_or(Some(0))?;
        if cp.next().is_some() || h > 23 || mi > 59 || sec > 60 {
            return None;
        }
        secs += h * 3600 + mi * 60 + sec - offset;
    }
    Some(secs)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

choice! {
    /// The RRD timeframes Proxmox offers, each ending now.
    pub enum Timeframe {
        /// About one point per minute.
        Hour = "hour",
        /// One point per 30 minutes.
        Day = "day",
        /// One point per 3 hours.
        Week = "week",
        /// One point per 12 hours.
        Month = "month",
        /// One point per week.
        Year = "year",
    }
}

choice! {
    /// How Proxmox consolidates each RRD interval.
    pub enum Consolidation {
        /// The interval's mean.
        Average = "AVERAGE",
        /// The interval's peak.
        Max = "MAX",
    }
}

/// Latest time accepted as an argument: 2100-01-01.
const TIME_MAX: i64 = 4_102_444_800;

/// A point in time as an argument: Unix epoch seconds or an ISO-8601
/// date/time string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Time(pub i64);

impl Time {
    fn from_json(v: &Value) -> Result<Self, String> {
        let in_range = |t: i64| (0..=TIME_MAX).contains(&t).then_some(Time(t));
        let time = match v {
            Value::Number(n) => n.as_i64().and_then(in_range),
            Value::String(s) => match s.trim().parse::<i64>() {
                Ok(t) => in_range(t),
                Err(_) => parse_iso(s).and_then(in_range),
            },
            _ => None,
        };
        time.ok_or_else(|| {
            "must be Unix epoch seconds (e.g. 1774350000) or an ISO-8601 date/time \
             (e.g. \"2026-03-24\" or \"2026-03-24T10:00:00Z\")"
                .into()
        })
    }
}
super::deserialize_from_json!(Time);
super::fixed_schema!(Time, serde_json::json!({"type": ["integer", "string"]}));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::iso_utc;

    #[test]
    fn times() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_utc(1_774_350_000), "2026-03-24T11:00:00Z");
        assert_eq!(parse_iso("2026-03-24T11:00:00Z"), Some(1_774_350_000));
        assert_eq!(parse_iso("2026-03-24T12:00:00+01:00"), Some(1_774_350_000));
        assert_eq!(parse_iso("2026-03-24T11:00"), Some(1_774_350_000));
        assert_eq!(parse_iso("2026-03-24T11:00:00.123Z"), Some(1_774_350_000));
        assert_eq!(parse_iso("2026-03-24"), Some(1_774_310_400));
        assert_eq!(parse_iso("2024-02-29"), Some(1_709_164_800));
        for bad in [
            "2026-02-30",
            "2026-3-24",
            "yesterday",
            "2026-03-24T25:00Z",
            "2026-13-01",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
        for e in [0i64, 951_782_400, 1_709_164_800, 4_102_444_799] {
            assert_eq!(parse_iso(&iso_utc(e)), Some(e));
        }
    }
}
