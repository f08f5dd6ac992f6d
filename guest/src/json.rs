//! Tolerant readers for Proxmox JSON.
//!
//! Proxmox is written in Perl, and a Perl scalar serialises according to how
//! it was last used: numbers sometimes arrive as strings (`"vmid":"106"`,
//! `"cpulimit":"1.5"`), booleans are `0`/`1` (or `"1"`), and keys whose value
//! would be false or empty are often left out altogether. Every reader here
//! therefore accepts any of those spellings and answers `None`/`false` for
//! anything it cannot make sense of, rather than failing the whole call
//! because one field had an unexpected shape.

use serde_json::Value;

/// A number, given as a JSON number or a numeric string. Non-finite values
/// are rejected because they cannot be serialised back to JSON.
pub fn num(v: Option<&Value>) -> Option<f64> {
    let n = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    n.is_finite().then_some(n)
}

/// A non-negative integer (counters, bytes, seconds, ids). Fractions are
/// rounded, since RRD-derived values can come back as floats.
pub fn uint(v: Option<&Value>) -> Option<u64> {
    let n = num(v)?;
    // `as` saturates at u64::MAX, which is fine for a display value.
    (n >= 0.0).then(|| n.round() as u64)
}

/// A Perl boolean: `1`/`0`, `"1"`/`"0"`, real `true`/`false`; an absent
/// key means false.
pub fn flag(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => {
            let s = s.trim();
            !(s.is_empty() || s == "0" || s.eq_ignore_ascii_case("false"))
        }
        _ => false,
    }
}

/// A non-empty string. Numbers are accepted and rendered, because Perl may
/// emit a purely numeric name such as `1234` as a JSON number.
pub fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Proxmox tags: officially `;`-separated in one string, but older or
/// hand-edited configurations use `,` or spaces, so split on all of them.
/// An array of strings is accepted too.
pub fn tags(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => s
            .split([';', ',', ' ', '\t', '\n'])
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        Some(Value::Array(items)) => items.iter().filter_map(|i| text(Some(i))).collect(),
        _ => Vec::new(),
    }
}

/// A CPU fraction (0..1 of the allotted CPUs), rounded to four decimals:
/// more digits only cost the agent tokens.
pub fn fraction(v: Option<&Value>) -> Option<f64> {
    num(v).map(|f| (f * 10_000.0).round() / 10_000.0)
}

/// An output number written as an integer when it is whole (`8`, not
/// `8.0`); for counts such as CPUs that Proxmox may give as floats. Its
/// schema says `number`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tidy(pub f64);

impl serde::Serialize for Tidy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Arithmetic on huge upstream values (CPU × 100, sums) can reach
        // infinity, which JSON cannot hold (serde_json would write `null`,
        // against the output schema's `number`): saturate, as `uint` does.
        let f = if self.0.is_nan() {
            0.0
        } else {
            self.0.clamp(f64::MIN, f64::MAX)
        };
        // Beyond 2^53 a float no longer holds every integer exactly.
        if f.fract() == 0.0 && f.abs() < 9.0e15 {
            s.serialize_i64(f as i64)
        } else {
            s.serialize_f64(f)
        }
    }
}

crate::arg::fixed_schema!(Tidy, serde_json::json!({"type": "number"}));

/// `used / total` rounded to four decimals; `None` if unknown or total 0.
pub fn ratio(used: Option<u64>, total: Option<u64>) -> Option<f64> {
    match (used, total) {
        (Some(u), Some(t)) if t > 0 => Some(((u as f64 / t as f64) * 10_000.0).round() / 10_000.0),
        _ => None,
    }
}

/// A comma-separated Proxmox list (`"images,rootdir"`), split and sorted.
pub fn split_list(v: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = text(v)
        .unwrap_or_default()
        .split([',', ';', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_in_every_perl_spelling() {
        assert_eq!(num(Some(&json!(3))), Some(3.0));
        assert_eq!(num(Some(&json!(0.25))), Some(0.25));
        assert_eq!(num(Some(&json!("1.5"))), Some(1.5));
        assert_eq!(num(Some(&json!("abc"))), None);
        assert_eq!(num(Some(&json!("NaN"))), None);
        assert_eq!(num(Some(&json!(null))), None);
        assert_eq!(num(None), None);
        assert_eq!(uint(Some(&json!("106"))), Some(106));
        assert_eq!(uint(Some(&json!(1.6))), Some(2));
        assert_eq!(uint(Some(&json!(-1))), None);
    }

    #[test]
    fn perl_booleans() {
        assert!(flag(Some(&json!(1))));
        assert!(flag(Some(&json!("1"))));
        assert!(flag(Some(&json!(true))));
        assert!(!flag(Some(&json!(0))));
        assert!(!flag(Some(&json!("0"))));
        assert!(!flag(Some(&json!(""))));
        assert!(!flag(Some(&json!(false))));
        assert!(!flag(None));
    }

    #[test]
    fn text_accepts_numeric_names_and_drops_empty() {
        assert_eq!(text(Some(&json!("web"))), Some("web".into()));
        assert_eq!(text(Some(&json!(1234))), Some("1234".into()));
        assert_eq!(text(Some(&json!(""))), None);
        assert_eq!(text(Some(&json!({}))), None);
    }

    #[test]
    fn tags_split_on_every_separator() {
        assert_eq!(tags(Some(&json!("tag1;tag2"))), ["tag1", "tag2"]);
        assert_eq!(tags(Some(&json!("a,b c;;d"))), ["a", "b", "c", "d"]);
        assert_eq!(tags(Some(&json!(["x", "y"]))), ["x", "y"]);
        assert!(tags(Some(&json!(""))).is_empty());
        assert!(tags(None).is_empty());
    }

    #[test]
    fn whole_numbers_are_integers() {
        let tidy = |f| serde_json::to_value(Tidy(f)).unwrap();
        assert_eq!(tidy(8.0), json!(8));
        assert_eq!(tidy(0.5), json!(0.5));
        assert_eq!(tidy(0.0), json!(0));
    }

    /// Found by fuzzing (`fuzz_responses`): an RRD point of `cpu: 1e308`
    /// became infinity in percent and was written as `null`.
    #[test]
    fn infinity_saturates_to_a_number() {
        let tidy = |f| serde_json::to_value(Tidy(f)).unwrap();
        assert_eq!(tidy(f64::INFINITY), json!(f64::MAX));
        assert_eq!(tidy(f64::NEG_INFINITY), json!(f64::MIN));
        assert!(tidy(f64::NAN).is_number());
    }

    #[test]
    fn cpu_fraction_is_rounded() {
        assert_eq!(fraction(Some(&json!(0.0249060195469461))), Some(0.0249));
        assert_eq!(fraction(Some(&json!(0))), Some(0.0));
    }
}
