//! A node's logs (pve-manager's `PVE::API2::Nodes`): `GET
//! /nodes/{node}/journal`, which streams `mini-journalreader -j` (cursors
//! first and last), and `GET /nodes/{node}/syslog`, `journalctl -o short`
//! through pve-common's `dump_journal` (`{n, t}` lines and a `total`).

use bytes::Bytes;
use serde_json::{Value, json};

use super::Ctx;
use super::act::die;
use crate::errors::{HandlerResult, Reply};
use crate::journal::{self, Range};

fn int(ctx: &Ctx<'_>, k: &str) -> Option<u64> {
    ctx.params
        .get(k)
        .and_then(|v| v.trim_start_matches('+').parse().ok())
}

/// `GET /nodes/{node}/journal`. Options the reader refuses (`lastentries`
/// with `since` or `startcursor`, `since` with `startcursor`, `until` with
/// `endcursor`, a cursor it cannot parse) make it exit before printing, so
/// PVE answers 200 with an empty body.
pub(crate) fn journal(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let entries = c.journals.get(ctx.node).map_or(&[][..], Vec::as_slice);
    let boot = crate::journal_seed::boot_time(&c, ctx.node) * 1_000_000;
    let range = Range {
        lastentries: int(ctx, "lastentries"),
        since: int(ctx, "since"),
        until: int(ctx, "until"),
        startcursor: ctx.params.get("startcursor"),
        endcursor: ctx.params.get("endcursor"),
    };
    Ok(match journal::read(ctx.node, boot, entries, &range) {
        Some(lines) => Reply::Data(lines.into()),
        None => Reply::Raw(Bytes::new()),
    })
}

/// Days since the epoch of a proleptic Gregorian date (Howard Hinnant's
/// days-from-civil).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// What journalctl makes of `YYYY-MM-DD[ HH:MM[:SS]]` (the node's time,
/// UTC): `None` for a date that does not exist.
fn parse_time(s: &str) -> Option<u64> {
    let (date, time) = s.split_once(' ').unwrap_or((s, "00:00:00"));
    let mut d = date.split('-').map(|p| p.parse::<u32>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|p| p.parse::<u32>().ok());
    let (h, mi, sec) = (t.next()??, t.next()??, t.next().unwrap_or(Some(0))?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || day == 0 || day > month_days[m as usize - 1] {
        return None;
    }
    if h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let days = days_from_civil(i64::from(y), m, day);
    u64::try_from(days * 86_400 + i64::from(h * 3_600 + mi * 60 + sec)).ok()
}

/// `PVE::Tools::cmd2string`: arguments with characters a shell treats
/// specially are single-quoted.
fn shell_arg(a: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:,@+%".contains(c);
    if !a.is_empty() && a.chars().all(safe) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\"'\"'"))
    }
}

/// `GET /nodes/{node}/syslog`: `start` (0) and `limit` (50; 0 means 50)
/// page the lines; `service` goes to `--unit` (PVE maps `postfix` to
/// `postfix@-` and `sshd` to `ssh`).
pub(crate) fn syslog(ctx: &Ctx<'_>) -> HandlerResult {
    let start = int(ctx, "start").unwrap_or(0);
    let limit = int(ctx, "limit").filter(|l| *l > 0).unwrap_or(50);
    let service = ctx.params.get("service").filter(|s| !s.is_empty());
    let unit = service.map(|s| match s {
        "postfix" => "postfix@-",
        "sshd" => "ssh",
        other => other,
    });
    let since_arg = ctx.params.get("since").filter(|s| !s.is_empty());
    let until_arg = ctx.params.get("until").filter(|s| !s.is_empty());
    let mut cmd = vec!["journalctl", "-o", "short", "--no-pager"];
    if let Some(u) = unit {
        cmd.extend(["--unit", u]);
    }
    if let Some(s) = since_arg {
        cmd.extend(["--since", s]);
    }
    if let Some(u) = until_arg {
        cmd.extend(["--until", u]);
    }
    let failed = || {
        let line: Vec<String> = cmd.iter().map(|a| shell_arg(a)).collect();
        die(format!("command '{}' failed: exit code 1", line.join(" ")))
    };
    let since = match since_arg {
        Some(s) => Some(parse_time(s).ok_or_else(failed)?),
        None => None,
    };
    let until = match until_arg {
        Some(u) => Some(parse_time(u).ok_or_else(failed)?),
        None => None,
    };
    if let (Some(s), Some(u)) = (since, until)
        && s > u
    {
        return Err(failed());
    }
    let c = ctx.cluster();
    let entries = c.journals.get(ctx.node).map_or(&[][..], Vec::as_slice);
    let lines = journal::short(ctx.node, entries, unit, since, until);
    let total = lines.len() as u64;
    let out: Vec<Value> = lines
        .into_iter()
        .enumerate()
        .skip(start as usize)
        .take(limit as usize)
        .map(|(i, t)| json!({"n": i + 1, "t": t}))
        .collect();
    Ok(Reply::DataTotal(Value::Array(out), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_journalctl_reads_them() {
        assert_eq!(parse_time("2026-11-28"), Some(crate::seed::T0));
        assert_eq!(
            parse_time("2026-11-28 01:02:03"),
            Some(crate::seed::T0 + 3_723)
        );
        assert_eq!(
            parse_time("2026-11-28 01:02"),
            Some(crate::seed::T0 + 3_720)
        );
        assert_eq!(parse_time("2026-02-29"), None);
        assert_eq!(parse_time("2024-02-29"), Some(1_709_164_800));
        assert_eq!(parse_time("2026-11-28 24:00"), None);
        assert_eq!(shell_arg("2026-11-28"), "2026-11-28");
        assert_eq!(shell_arg("2026-11-28 25:00"), "'2026-11-28 25:00'");
    }
}
