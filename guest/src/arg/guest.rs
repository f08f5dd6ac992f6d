//! The agent tools' argument types: a path inside the guest, a command's
//! argv, and text bounded in bytes (what Proxmox's limits count).

use serde_json::Value;

use crate::arg::{self, deserialize_from_json, fixed_schema, json_kind};
use crate::error::quoted;

/// Longest path the file tools accept, in bytes.
pub const PATH_MAX: usize = 4096;

/// A normalised absolute path inside the guest: POSIX `/etc/hostname` or
/// Windows `C:\Windows\win.ini` (or `C:/...`), without `.` or `..`
/// segments, empty segments, NUL or control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestPath(pub String);

impl GuestPath {
    /// The path as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let example = "e.g. \"/etc/hostname\" or \"C:\\\\Windows\\\\win.ini\"";
        let Value::String(s) = v else {
            return Err(match v {
                Value::Null => {
                    format!("missing required argument; pass an absolute path, {example}")
                }
                other => format!(
                    "must be an absolute path string, {example}, not {}",
                    json_kind(other)
                ),
            });
        };
        let shown = quoted(s, arg::SHOWN_MAX);
        if s.len() > PATH_MAX {
            return Err(format!(
                "must be at most {PATH_MAX} bytes (got {})",
                s.len()
            ));
        }
        if s.chars().any(char::is_control) {
            return Err(format!(
                "{shown} holds a NUL or control character; remove it"
            ));
        }
        let bytes = s.as_bytes();
        let rest = if let Some(rest) = s.strip_prefix('/') {
            rest
        } else if bytes.len() >= 3
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && matches!(bytes[2], b'\\' | b'/')
        {
            &s[3..]
        } else {
            return Err(format!(
                "{shown} is not an absolute path; pass one, {example}"
            ));
        };
        if rest.is_empty() {
            return Ok(GuestPath(s.clone()));
        }
        for segment in rest.split(['/', '\\']) {
            match segment {
                "" => {
                    return Err(format!(
                        "{shown} has an empty segment (// or a trailing separator); write each \
                         separator once, without one at the end"
                    ));
                }
                "." | ".." => {
                    return Err(format!(
                        "{shown} has a {segment:?} segment; pass the normalised path it \
                         stands for"
                    ));
                }
                _ => {}
            }
        }
        Ok(GuestPath(s.clone()))
    }
}
deserialize_from_json!(GuestPath);
fixed_schema!(
    GuestPath,
    serde_json::json!({"type": "string", "minLength": 1, "maxLength": PATH_MAX})
);

/// Most elements a command's argv may have.
pub const ARGV_MAX: usize = 64;
/// Longest element of an argv, in bytes.
pub const ARG_MAX: usize = 4096;

/// A command as program and arguments, each its own element: 1 to
/// [`ARGV_MAX`] non-empty strings of at most [`ARG_MAX`] bytes, without
/// NUL. No shell parses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv(pub Vec<String>);

impl Argv {
    fn from_json(v: &Value) -> Result<Self, String> {
        let example = "e.g. [\"df\", \"-h\"]; for a shell, [\"sh\", \"-c\", \"df -h | head\"]";
        let items = match v {
            Value::Array(items) => items,
            Value::String(s) => {
                return Err(format!(
                    "must be a list of the program and its arguments, not a string ({}); \
                     {example}",
                    quoted(s, arg::SHOWN_MAX)
                ));
            }
            Value::Null => return Err(format!("missing required argument; {example}")),
            other => {
                return Err(format!(
                    "must be a list of strings, {example}, not {}",
                    json_kind(other)
                ));
            }
        };
        if items.is_empty() || items.len() > ARGV_MAX {
            return Err(format!(
                "must have 1 to {ARGV_MAX} elements (got {}); {example}",
                items.len()
            ));
        }
        let mut argv = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Value::String(s) = item else {
                return Err(format!(
                    "element {i} must be a string, not {}",
                    json_kind(item)
                ));
            };
            if s.is_empty() {
                return Err(format!(
                    "element {i} is empty; leave it out or give it a value"
                ));
            }
            if s.len() > ARG_MAX {
                return Err(format!(
                    "element {i} is longer than {ARG_MAX} bytes ({})",
                    s.len()
                ));
            }
            if s.contains('\0') {
                return Err(format!("element {i} holds a NUL character; remove it"));
            }
            argv.push(s.clone());
        }
        Ok(Argv(argv))
    }
}
deserialize_from_json!(Argv);
fixed_schema!(
    Argv,
    // The bounds are the guest's to check: advertising them costs bytes.
    serde_json::json!({"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": ARG_MAX}})
);

/// A non-empty string of at most `MAX` bytes (UTF-8), the unit Proxmox's
/// limits count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bytes<const MAX: usize>(pub String);

impl<const MAX: usize> Bytes<MAX> {
    /// The text as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let Value::String(s) = v else {
            return Err(format!("must be a string, not {}", json_kind(v)));
        };
        if s.is_empty() {
            return Err("must not be empty; omit it instead".into());
        }
        if s.len() > MAX {
            return Err(format!(
                "is {} bytes, more than Proxmox's limit of {MAX} bytes; send less",
                s.len()
            ));
        }
        Ok(Bytes(s.clone()))
    }
}

impl<'de, const MAX: usize> serde::Deserialize<'de> for Bytes<MAX> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        arg::read(d, Self::from_json)
    }
}

#[cfg(test)]
impl<const MAX: usize> schemars::JsonSchema for Bytes<MAX> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Bytes{MAX}").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "minLength": 1})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_absolute_and_normalised() {
        for good in [
            "/",
            "/etc/hostname",
            "/var/log/syslog.1",
            "C:\\Windows\\win.ini",
            "c:/Users/x/a b.txt",
            "C:\\",
            "/home/ü/…",
        ] {
            assert_eq!(GuestPath::from_json(&json!(good)).unwrap().as_str(), good);
        }
        for (bad, needle) in [
            ("etc/hostname", "not an absolute path"),
            ("", "not an absolute path"),
            ("C:", "not an absolute path"),
            ("\\\\server\\share", "not an absolute path"),
            ("//etc", "empty segment"),
            ("/etc/", "empty segment"),
            ("C:\\a\\\\b", "empty segment"),
            ("/etc/../shadow", "\"..\" segment"),
            ("/./etc", "\".\" segment"),
            ("C:\\a\\..\\b", "\"..\" segment"),
            ("/etc/a\u{0}b", "control character"),
            ("/etc/a\nb", "control character"),
        ] {
            let e = GuestPath::from_json(&json!(bad)).unwrap_err();
            assert!(e.contains(needle), "{bad:?}: {e}");
        }
        let long = format!("/{}", "a".repeat(PATH_MAX));
        assert!(
            GuestPath::from_json(&json!(long))
                .unwrap_err()
                .contains("4096 bytes")
        );
        assert!(
            GuestPath::from_json(&json!(1))
                .unwrap_err()
                .contains("not a number")
        );
    }

    #[test]
    fn argv_elements_are_checked_one_by_one() {
        assert_eq!(
            Argv::from_json(&json!(["df", "-h"])).unwrap(),
            Argv(vec!["df".into(), "-h".into()])
        );
        for (bad, needle) in [
            (json!("df -h"), "not a string (\"df -h\")"),
            (json!([]), "1 to 64 elements (got 0)"),
            (json!(vec!["x"; 65]), "(got 65)"),
            (json!(["df", ""]), "element 1 is empty"),
            (json!(["df", 1]), "element 1 must be a string, not a number"),
            (json!(["a\u{0}"]), "element 0 holds a NUL"),
            (json!(["a".repeat(4097)]), "longer than 4096 bytes"),
        ] {
            let e = Argv::from_json(&bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn byte_limits_count_bytes() {
        assert!(Bytes::<4>::from_json(&json!("abcd")).is_ok());
        // Two characters, six bytes.
        let e = Bytes::<4>::from_json(&json!("€€")).unwrap_err();
        assert!(
            e.contains("6 bytes, more than Proxmox's limit of 4 bytes"),
            "{e}"
        );
        assert!(Bytes::<4>::from_json(&json!("")).is_err());
    }
}
