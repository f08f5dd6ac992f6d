//! Each node's systemd journal: the entries, their cursors and the two ways
//! PVE reads them: `mini-journalreader -j` (`GET /nodes/{node}/journal`,
//! cursors first and last) and `journalctl -o short` (`GET
//! /nodes/{node}/syslog`). What the seed writes is in
//! [`crate::journal_seed`].

use crate::digests::{hex, sha1};
use crate::util::civil;

/// One journal entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// `__REALTIME_TIMESTAMP` in microseconds.
    pub usec: u64,
    /// Sequence number (`i=` of the cursor).
    pub seqnum: u64,
    /// `SYSLOG_IDENTIFIER` (`pveproxy`, `systemd`, `kernel`, ...).
    pub ident: String,
    /// `_PID`; kernel messages have none.
    pub pid: Option<u32>,
    pub message: String,
    /// The unit `journalctl --unit` finds it under (`pveproxy.service`),
    /// systemd's own messages about a unit included.
    pub unit: Option<String>,
}

impl Entry {
    pub fn secs(&self) -> u64 {
        self.usec / 1_000_000
    }
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `%b %d %T` (UTC, the nodes' time zone).
pub(crate) fn short_time(t: u64) -> String {
    let (_, m, d, h, mi, s) = civil(t);
    format!("{} {d:02} {h:02}:{mi:02}:{s:02}", MONTHS[m as usize - 1])
}

/// The line both readers print: `Nov 28 00:17:01 pve1 CRON[4101]: ...`.
pub(crate) fn line(node: &str, e: &Entry) -> String {
    let pid = e.pid.map(|p| format!("[{p}]")).unwrap_or_default();
    format!(
        "{} {node} {}{pid}: {}",
        short_time(e.secs()),
        e.ident,
        e.message
    )
}

/// 32 hex digits derived from the node and a purpose (journal file's
/// seqnum id, boot id).
fn node_id(node: &str, what: &str) -> String {
    hex(&sha1(format!("{what} {node}").as_bytes()))[..32].to_string()
}

/// `sd_journal_get_cursor`: `s=<seqnum id>;i=<seqnum>;b=<boot id>;m=<monotonic>;t=<realtime>;x=<xor hash>`.
pub(crate) fn cursor(node: &str, boot_usec: u64, e: &Entry) -> String {
    let x = hex(&sha1(format!("{}:{}", e.seqnum, e.message).as_bytes()));
    format!(
        "s={};i={:x};b={};m={:x};t={:x};x={}",
        node_id(node, "seqnum"),
        e.seqnum,
        node_id(node, "boot"),
        e.usec.saturating_sub(boot_usec),
        e.usec,
        &x[..16]
    )
}

/// Where a cursor points: its sequence number when it is this journal's,
/// else its realtime (as `sd_journal_seek_cursor` falls back to).
/// `None` when it is not a cursor at all.
fn parse_cursor(node: &str, c: &str) -> Option<Seek> {
    let mut seqnum_id = None;
    let mut seqnum = None;
    let mut realtime = None;
    for part in c.split(';') {
        let (k, v) = part.split_once('=')?;
        match k {
            "s" => seqnum_id = Some(v),
            "i" => seqnum = Some(u64::from_str_radix(v, 16).ok()?),
            "t" => realtime = Some(u64::from_str_radix(v, 16).ok()?),
            "b" | "m" | "x" => {}
            _ => return None,
        }
    }
    match (seqnum_id, seqnum, realtime) {
        (Some(s), Some(i), _) if s == node_id(node, "seqnum") => Some(Seek::Seqnum(i)),
        (_, _, Some(t)) => Some(Seek::Realtime(t)),
        _ => None,
    }
}

enum Seek {
    Seqnum(u64),
    Realtime(u64),
}

/// The index of the first entry at or after the cursor's position.
fn seek(entries: &[Entry], s: &Seek) -> usize {
    match s {
        Seek::Seqnum(i) => entries.partition_point(|e| e.seqnum < *i),
        Seek::Realtime(t) => entries.partition_point(|e| e.usec < *t),
    }
}

/// The options of `mini-journalreader` (`-n`, `-b`, `-e`, `-f`, `-t`).
#[derive(Debug, Default)]
pub(crate) struct Range<'a> {
    pub lastentries: Option<u64>,
    pub since: Option<u64>,
    pub until: Option<u64>,
    pub startcursor: Option<&'a str>,
    pub endcursor: Option<&'a str>,
}

/// `mini-journalreader -j`: the first entry's cursor, the lines, the last
/// position's cursor. `None` when the reader exits on its options (it
/// then prints nothing, and PVE streams an empty body): `-n` with a
/// start, both ends of one side, or a cursor it cannot parse.
pub(crate) fn read(
    node: &str,
    boot_usec: u64,
    entries: &[Entry],
    r: &Range<'_>,
) -> Option<Vec<String>> {
    let n = r.lastentries.filter(|n| *n > 0);
    let since = r.since.filter(|s| *s > 0).map(|s| s * 1_000_000);
    let until = r.until.filter(|u| *u > 0).map(|u| u * 1_000_000);
    let start = r.startcursor.filter(|s| !s.is_empty());
    let end = r.endcursor.filter(|s| !s.is_empty());
    if (n.is_some() && (since.is_some() || start.is_some()))
        || (since.is_some() && start.is_some())
        || (until.is_some() && end.is_some())
    {
        return None;
    }
    let start = match start {
        Some(c) => Some(parse_cursor(node, c)?),
        None => None,
    };
    let end = match end {
        Some(c) => Some(parse_cursor(node, c)?),
        None => None,
    };
    if entries.is_empty() {
        return Some(Vec::new());
    }
    let cur = |i: usize| cursor(node, boot_usec, &entries[i]);
    // The half-open range of entries to print.
    let stop = match (&end, until) {
        (Some(c), _) => seek(entries, c),
        (None, Some(u)) => entries.partition_point(|e| e.usec < u),
        (None, None) => entries.len(),
    };
    let (first, mut out) = if let Some(n) = n {
        // Back from the end (or the end cursor) `n` entries.
        let from = stop.saturating_sub(n as usize);
        (from, Vec::new())
    } else if let Some(s) = &start {
        // The cursor's own entry is the first cursor, not printed.
        let at = seek(entries, s).min(entries.len() - 1);
        (at + 1, vec![cur(at)])
    } else if let Some(s) = since {
        (entries.partition_point(|e| e.usec < s), Vec::new())
    } else {
        (0, Vec::new())
    };
    let mut last = None;
    for (i, e) in entries.iter().enumerate().take(stop).skip(first) {
        if out.is_empty() {
            out.push(cur(i));
        }
        out.push(line(node, e));
        last = Some(i);
    }
    // The final cursor: where the reader stopped (on the entry that ended
    // the range, when one did).
    let final_at = match last {
        _ if stop < entries.len() => stop,
        Some(i) => i,
        None => first.saturating_sub(1).min(entries.len() - 1),
    };
    if out.is_empty() {
        out.push(cur(final_at));
    }
    out.push(cur(final_at));
    Some(out)
}

/// `journalctl -o short --no-pager [--unit U] [--since S] [--until U]`:
/// the matching lines, or `-- No entries --`.
pub(crate) fn short(
    node: &str,
    entries: &[Entry],
    unit: Option<&str>,
    since: Option<u64>,
    until: Option<u64>,
) -> Vec<String> {
    let unit = unit.map(|u| {
        if u.contains('.') {
            u.to_string()
        } else {
            format!("{u}.service")
        }
    });
    let lines: Vec<String> = entries
        .iter()
        .filter(|e| since.is_none_or(|s| e.secs() >= s))
        .filter(|e| until.is_none_or(|u| e.secs() <= u))
        .filter(|e| unit.as_ref().is_none_or(|u| e.unit.as_ref() == Some(u)))
        .map(|e| line(node, e))
        .collect();
    if lines.is_empty() {
        return vec!["-- No entries --".to_string()];
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<Entry> {
        (0..10)
            .map(|i| Entry {
                usec: (1_000 + i * 10) * 1_000_000 + 5,
                seqnum: 100 + i,
                ident: "test".into(),
                pid: Some(7),
                message: format!("m{i}"),
                unit: Some(if i % 2 == 0 { "a.service" } else { "b.service" }.into()),
            })
            .collect()
    }

    fn msgs(v: &[String]) -> Vec<String> {
        v.iter()
            .filter(|l| !l.starts_with("s="))
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
            .collect()
    }

    #[test]
    fn reader_ranges_and_cursors() {
        let e = entries();
        let all = read("n", 0, &e, &Range::default()).unwrap();
        assert_eq!(all.len(), 12);
        assert_eq!(all[0], cursor("n", 0, &e[0]));
        assert_eq!(all[11], cursor("n", 0, &e[9]));
        assert_eq!(all[1], "Jan 01 00:16:40 n test[7]: m0");
        let last3 = read(
            "n",
            0,
            &e,
            &Range {
                lastentries: Some(3),
                ..Range::default()
            },
        )
        .unwrap();
        assert_eq!(msgs(&last3), ["m7", "m8", "m9"]);
        let c = |i: usize| cursor("n", 0, &e[i]);
        // Following from the last cursor: nothing new, the cursor twice.
        let tail = c(9);
        let r = Range {
            startcursor: Some(&tail),
            ..Range::default()
        };
        assert_eq!(read("n", 0, &e, &r).unwrap(), [tail.clone(), tail]);
        // After a cursor (exclusive), before a time (exclusive).
        let from = c(2);
        let r = Range {
            startcursor: Some(&from),
            until: Some(1_060),
            ..Range::default()
        };
        let got = read("n", 0, &e, &r).unwrap();
        assert_eq!(msgs(&got), ["m3", "m4", "m5"]);
        assert_eq!((&got[0], got.last()), (&from, Some(&c(6))));
        // From a time (inclusive) to a cursor (exclusive).
        let to = c(8);
        let r = Range {
            since: Some(1_050),
            endcursor: Some(&to),
            ..Range::default()
        };
        let got = read("n", 0, &e, &r).unwrap();
        assert_eq!(msgs(&got), ["m5", "m6", "m7"]);
        assert_eq!(got.last(), Some(&to));
        // The last entries before a time: the range ends on the first entry
        // past it.
        let r = Range {
            lastentries: Some(2),
            until: Some(1_050),
            ..Range::default()
        };
        let got = read("n", 0, &e, &r).unwrap();
        assert_eq!(msgs(&got), ["m3", "m4"]);
        assert_eq!(got.last(), Some(&c(5)));
        let r = Range {
            lastentries: Some(2),
            endcursor: Some(&to),
            ..Range::default()
        };
        assert_eq!(msgs(&read("n", 0, &e, &r).unwrap()), ["m6", "m7"]);
        // Option conflicts and garbage cursors print nothing.
        for r in [
            Range {
                lastentries: Some(2),
                since: Some(5),
                ..Range::default()
            },
            Range {
                until: Some(5),
                endcursor: Some(&c(2)),
                ..Range::default()
            },
            Range {
                startcursor: Some("garbage"),
                ..Range::default()
            },
        ] {
            assert!(read("n", 0, &e, &r).is_none(), "{r:?}");
        }
    }

    #[test]
    fn journalctl_short_filters() {
        let e = entries();
        let b = short("n", &e, Some("b"), Some(1_020), Some(1_060));
        assert_eq!(msgs(&b), ["m3", "m5"]);
        assert_eq!(short("n", &e, Some("c"), None, None), ["-- No entries --"]);
    }
}
