//! Helpers shared by the task, snapshot, metrics and HA tools: Proxmox
//! UPIDs, UTC timestamps, task outcomes, RRD timeframes and the `since`
//! argument.

use serde_json::Value;

use crate::arg::{self, NodeName, choice, is_node_name};
use crate::error::{ToolError, quoted};

/// Longest UPID we accept; real ones are well under 200 characters.
pub const UPID_MAX: usize = 512;

/// A parsed Proxmox task id, `UPID:node:pid:pstart:starttime:type:id:user:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upid {
    /// The whole UPID as given.
    pub raw: String,
    /// Node the task runs on.
    pub node: String,
    /// Worker process id.
    pub pid: u32,
    /// Process start in clock ticks since boot.
    pub pstart: u64,
    /// Start time, Unix epoch seconds.
    pub starttime: u64,
    /// Task type, e.g. `qmstart`, `vzdump`.
    pub task_type: String,
    /// Task object id (often a vmid); `None` when empty.
    pub id: Option<String>,
    /// User that started the task, without the token part.
    pub user: String,
    /// API token name when a token started the task.
    pub tokenid: Option<String>,
}

fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `[^:\s/]`: what PVE's UPID regex allows in type, id and user.
fn is_field(s: &str) -> bool {
    !s.chars().any(|c| c == ':' || c == '/' || c.is_whitespace())
}

/// Parses a UPID with the rules of PVE's decoder
/// (`^UPID:(node):([0-9A-F]{8}):([0-9A-F]{8,9}):([0-9A-F]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$`).
pub fn parse_upid(s: &str) -> Result<Upid, String> {
    let Some(rest) = s.strip_prefix("UPID:") else {
        return Err("it must start with \"UPID:\"".into());
    };
    let Some(rest) = rest.strip_suffix(':') else {
        return Err(
            "it must end with ':' (copy the whole UPID, including the trailing colon)".into(),
        );
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() != 7 {
        return Err(format!(
            "it must have 8 ':'-separated fields (UPID:node:pid:pstart:starttime:type:id:user:), found {}",
            parts.len() + 1
        ));
    }
    let [node, pid, pstart, starttime, task_type, id, user] =
        <[&str; 7]>::try_from(parts).expect("length checked");
    if !is_node_name(node) {
        return Err(format!("{} is not a valid node name", quoted(node, 64)));
    }
    if pid.len() != 8 || !is_hex(pid) {
        return Err("pid must be 8 hex digits".into());
    }
    if !(8..=9).contains(&pstart.len()) || !is_hex(pstart) {
        return Err("pstart must be 8 or 9 hex digits".into());
    }
    if starttime.len() != 8 || !is_hex(starttime) {
        return Err("starttime must be 8 hex digits".into());
    }
    if task_type.is_empty() || !is_field(task_type) {
        return Err("the task type must be non-empty without ':', '/' or spaces".into());
    }
    if !is_field(id) {
        return Err("the task id must not contain ':', '/' or spaces".into());
    }
    if user.is_empty() || !is_field(user) {
        return Err("the user must be non-empty without ':', '/' or spaces".into());
    }
    let hex = |h: &str| u64::from_str_radix(h, 16).expect("hex checked");
    let (user, tokenid) = match user.split_once('!') {
        Some((u, t)) => (u.to_owned(), Some(t.to_owned())),
        None => (user.to_owned(), None),
    };
    Ok(Upid {
        raw: s.to_owned(),
        node: node.to_owned(),
        pid: hex(pid) as u32,
        pstart: hex(pstart),
        starttime: hex(starttime),
        task_type: task_type.to_owned(),
        id: (!id.is_empty()).then(|| id.to_owned()),
        user,
        tokenid,
    })
}

impl Upid {
    fn from_json(v: &Value) -> Result<Self, String> {
        let raw = match v {
            Value::Null => {
                return Err("missing required argument; pass a task id such as \
                     \"UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:\" (pve_list_tasks lists them)"
                    .into());
            }
            Value::String(s) => s.as_str(),
            _ => return Err("must be a string".into()),
        };
        if raw.chars().count() > UPID_MAX {
            return Err(format!("must be at most {UPID_MAX} characters"));
        }
        parse_upid(raw)
            .map_err(|why| format!("{} is not a valid Proxmox task id: {why}", quoted(raw, 96)))
    }
}
arg::deserialize_from_json!(Upid);
arg::fixed_schema!(
    Upid,
    serde_json::json!({
        "type": "string",
        "minLength": 1,
        "maxLength": UPID_MAX,
        "description": "Task id (UPID), e.g. \"UPID:pve1:0020C066:042DF204:69C26EB0:vzdump:101:root@pam:\", \
            as returned by pve_list_tasks or an action tool. Include the trailing colon.",
        "pattern": "^UPID:[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?:[0-9A-Fa-f]{8}:[0-9A-Fa-f]{8,9}:[0-9A-Fa-f]{8}:[^:\\s/]+:[^:\\s/]*:[^:\\s/]+:$",
    })
);

/// The node to ask about a task: the UPID's, which an optional `node`
/// argument must agree with.
pub fn task_node(upid: &Upid, node: Option<&NodeName>) -> Result<String, ToolError> {
    match node {
        Some(n) if n.as_str() != upid.node => Err(ToolError::field(
            "node",
            format!(
                "{} disagrees with the UPID, whose task runs on node {}; omit node (it is \
                 taken from the UPID) or pass {}",
                quoted(n.as_str(), 64),
                quoted(&upid.node, 64),
                quoted(&upid.node, 64)
            ),
        )),
        _ => Ok(upid.node.clone()),
    }
}

choice! {
    /// How a task ended, or that it has not.
    pub enum Outcome {
        /// Still running.
        Running = "running",
        /// Finished OK.
        Ok = "ok",
        /// Finished with warnings.
        Warning = "warning",
        /// Failed.
        Error = "error",
    }
}

/// How a finished task ended.
pub fn outcome(exitstatus: Option<&str>) -> Outcome {
    match exitstatus.map(str::trim) {
        None => Outcome::Running,
        Some(s) if s.eq_ignore_ascii_case("RUNNING") => Outcome::Running,
        Some("OK") => Outcome::Ok,
        Some(s) if s.starts_with("WARNINGS") => Outcome::Warning,
        Some(_) => Outcome::Error,
    }
}

/// A Unix time as ISO-8601 UTC, `2026-03-24T10:20:00Z`.
pub fn iso_utc(epoch: i64) -> String {
    let days = epoch.div_euclid(86_400);
    let secs = epoch.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Howard Hinnant's days → civil date.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

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
arg::deserialize_from_json!(Time);
arg::fixed_schema!(Time, serde_json::json!({"type": ["integer", "string"]}));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upids_parse() {
        let u = parse_upid("UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:").unwrap();
        assert_eq!(u.node, "pve1");
        assert_eq!(u.pid, 0x0020C066);
        assert_eq!(u.pstart, 0x042DF204);
        assert_eq!(u.starttime, 0x69C26EB0);
        assert_eq!(u.task_type, "vzdump");
        assert_eq!(u.id, None);
        assert_eq!(u.user, "root@pam");
        assert_eq!(u.tokenid, None);
        // 9-hex pstart, token user, id set.
        let u = parse_upid("UPID:node-2:000FF1FD:110F9374C:630D702C:qmstart:110:api@pve!ci-tok:")
            .unwrap();
        assert_eq!(u.pstart, 0x110F9374C);
        assert_eq!(u.id.as_deref(), Some("110"));
        assert_eq!(u.user, "api@pve");
        assert_eq!(u.tokenid.as_deref(), Some("ci-tok"));
        assert_eq!(iso_utc(u.starttime as i64), "2022-08-30T02:04:28Z");
    }

    #[test]
    fn bad_upids_are_rejected() {
        for bad in [
            "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam",
            "pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam:",
            "UPID:pve1:0020C06G:042DF204:69C26EB0:vzdump::root@pam:",
            "UPID:pve1:0020C06:042DF204:69C26EB0:vzdump::root@pam:",
            "UPID:pve1:0020C066:042DF2:69C26EB0:vzdump::root@pam:",
            "UPID:pve1:0020C066:042DF204A0:69C26EB0:vzdump::root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB:vzdump::root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB0:::root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump:1:2:root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump:a/b:root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump:a b:root@pam:",
            "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump:1::",
            "UPID:-pve:0020C066:042DF204:69C26EB0:vzdump:1:root@pam:",
            "UPID:pve.x:0020C066:042DF204:69C26EB0:vzdump:1:root@pam:",
            "",
        ] {
            assert!(parse_upid(bad).is_err(), "{bad}");
        }
    }

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

    #[test]
    fn outcomes() {
        assert_eq!(outcome(None), Outcome::Running);
        assert_eq!(outcome(Some("RUNNING")), Outcome::Running);
        assert_eq!(outcome(Some("OK")), Outcome::Ok);
        assert_eq!(outcome(Some("WARNINGS: 2")), Outcome::Warning);
        assert_eq!(outcome(Some("VM 100 already running")), Outcome::Error);
        assert_eq!(outcome(Some("unexpected status")), Outcome::Error);
    }
}
