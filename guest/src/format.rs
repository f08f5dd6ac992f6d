//! Human-readable numbers for the one-line summaries.

/// What a masked secret reads, wherever one is shown (a config's
/// `cipassword`, as Proxmox masks it itself).
pub const MASK: &str = "**********";

/// Bytes in binary units with at most one decimal: `512 B`, `1.2 GiB`,
/// `4 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{} {}", one_decimal(value), UNITS[unit])
}

/// A duration as its two largest units: `3d 4h`, `4h 12m`, `12m 5s`, `45s`.
pub fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// A CPU fraction (0..1) as a percentage with one decimal: `2.3%`.
pub fn percent(fraction: f64) -> String {
    format!("{}%", one_decimal(fraction * 100.0))
}

/// A number with at most one decimal, without a trailing `.0`.
pub fn one_decimal(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

/// `1 guest`, `2 guests`.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// Seconds since the Unix epoch as ISO-8601 UTC, `2024-03-06T19:28:10Z`.
pub fn iso_utc(epoch: i64) -> String {
    let days = epoch.div_euclid(86_400);
    let secs = epoch.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1_288_490_189), "1.2 GiB");
        assert_eq!(bytes(4 * 1024 * 1024 * 1024), "4 GiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(duration(45), "45s");
        assert_eq!(duration(725), "12m 5s");
        assert_eq!(duration(4 * 3600 + 12 * 60), "4h 12m");
        assert_eq!(duration(3 * 86_400 + 4 * 3600 + 59), "3d 4h");
        assert_eq!(percent(0.023), "2.3%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(count(1, "guest", "guests"), "1 guest");
        assert_eq!(count(3, "guest", "guests"), "3 guests");
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_utc(1_709_753_290), "2024-03-06T19:28:10Z");
        assert_eq!(iso_utc(1_774_350_000), "2026-03-24T11:00:00Z");
        assert_eq!(iso_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso_utc(-1), "1969-12-31T23:59:59Z");
    }
}
