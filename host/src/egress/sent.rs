//! The parameters a write carries, read the one way the gate and Proxmox
//! agree on: the query string, and a form or JSON body, decoded strictly.
//! Anything that could read two ways (a `+`, a bad escape, a body of
//! another type, a name given twice) is refused rather than guessed, and
//! what was read is recorded, bounded and with its SHA-256.

use http::HeaderValue;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::guest_file;
use crate::route::request::shown;
use crate::secret::{MASK, holds_private_key, is_secret_name};

/// The parameters of one request, decoded, in the order sent.
pub type Sent = Vec<(String, String)>;

/// Reads the parameters of a write: its `query` and its `body` of type
/// `content_type`. A `DELETE` carries them in the query only (Proxmox
/// answers a DELETE with a body 501).
pub fn read(
    method: &http::Method,
    query: Option<&str>,
    content_type: Option<&HeaderValue>,
    body: &[u8],
) -> Result<Sent, String> {
    let mut sent = match query {
        Some(q) if !q.is_empty() => {
            form(q.as_bytes()).map_err(|e| format!("the query string {e}"))?
        }
        _ => Vec::new(),
    };
    if body.is_empty() {
        return Ok(sent);
    }
    if *method == http::Method::DELETE {
        return Err("a DELETE carries a body; its parameters belong in the query string".into());
    }
    let kind = content_type.and_then(|v| v.to_str().ok()).map(|v| {
        v.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    });
    let from_body = match kind.as_deref() {
        None | Some("application/x-www-form-urlencoded") => {
            form(body).map_err(|e| format!("the form body {e}"))?
        }
        Some("application/json") => json(body)?,
        Some(other) => {
            return Err(format!(
                "the body is {}, which the gate does not read; send a form or JSON",
                shown(other)
            ));
        }
    };
    sent.extend(from_body);
    Ok(sent)
}

/// `a=1&b=x%20y`, strictly: every pair has a name and `=`, escapes are
/// two hex digits, the result is UTF-8, and a raw `+` (a space to some
/// readers, a plus to others) is refused.
fn form(text: &[u8]) -> Result<Sent, String> {
    let text = std::str::from_utf8(text).map_err(|_| "is not UTF-8".to_string())?;
    text.split('&')
        .map(|pair| {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("has {}, which is not name=value", shown(pair)))?;
            let name = decode(name)?;
            if name.is_empty() {
                return Err("has a parameter without a name".to_string());
            }
            Ok((name, decode(value)?))
        })
        .collect()
}

fn decode(text: &str) -> Result<String, String> {
    if text.contains('+') {
        return Err(format!(
            "has a raw '+' in {}; encode it as %2B, or a space as %20",
            shown(text)
        ));
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("has a bad escape in {}", shown(text)))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("has {}, which decodes to no text", shown(text)))
}

/// A JSON object body whose values are strings, numbers or booleans.
fn json(body: &[u8]) -> Result<Sent, String> {
    let map: Map<String, Value> =
        serde_json::from_slice(body).map_err(|_| "the JSON body is not one object".to_string())?;
    map.into_iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(s) => s,
                Value::Bool(b) => if b { "1" } else { "0" }.into(),
                Value::Number(n) => n.to_string(),
                _ => {
                    return Err(format!(
                        "the JSON body's {} is not a string, number or boolean",
                        shown(&name)
                    ));
                }
            };
            Ok((name, value))
        })
        .collect()
}

/// The longest value kept in a record, in bytes.
const RECORDED_VALUE: usize = 256;
/// The most bytes of names and values one record keeps.
const RECORDED_TOTAL: usize = 2048;

/// The parameters of a request to `api_path` as a record keeps them: an
/// object of at most [`RECORDED_TOTAL`] bytes (each value at most
/// [`RECORDED_VALUE`]), secrets and private keys masked, a guest file's
/// content as its size and SHA-256, with `"…"` counting what was left out
/// and `"sha256"` of the whole list (as masked) in a field of its own.
pub fn recorded(api_path: &str, sent: &Sent) -> Value {
    let mut params = Map::new();
    let mut total = 0;
    let mut hash = Sha256::new();
    let mut left = 0;
    for (name, value) in sent {
        let summary;
        let value = if is_secret_name(name) || holds_private_key(value) {
            MASK
        } else if guest_file::is_content(api_path, name) {
            summary = guest_file::not_shown(value);
            summary.as_str()
        } else {
            value.as_str()
        };
        hash.update(name.as_bytes());
        hash.update(b"=");
        hash.update(value.as_bytes());
        hash.update(b"&");
        let name = cut(name, RECORDED_VALUE);
        let value = cut(value, RECORDED_VALUE);
        if total + name.len() + value.len() > RECORDED_TOTAL {
            left += 1;
            continue;
        }
        total += name.len() + value.len();
        // A name sent again (a list's elements) keeps every value, in order.
        match params.get_mut(&name) {
            Some(Value::Array(values)) => values.push(Value::String(value)),
            Some(first) => *first = Value::Array(vec![first.take(), Value::String(value)]),
            None => {
                params.insert(name, Value::String(value));
            }
        }
    }
    if left > 0 {
        params.insert("…".into(), Value::String(format!("{left} more not shown")));
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    serde_json::json!({ "values": params, "count": sent.len(), "sha256": hex })
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let hash: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{}…[{} bytes, sha256 {hash}]", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn form_type() -> HeaderValue {
        HeaderValue::from_static("application/x-www-form-urlencoded")
    }

    #[test]
    fn forms_queries_and_json_read_alike() {
        let pairs = |v: &[(&str, &str)]| -> Sent {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            read(
                &Method::POST,
                None,
                Some(&form_type()),
                b"vmid=102&notes=a%20b%26c"
            )
            .unwrap(),
            pairs(&[("vmid", "102"), ("notes", "a b&c")])
        );
        assert_eq!(
            read(&Method::DELETE, Some("purge=1"), None, b"").unwrap(),
            pairs(&[("purge", "1")])
        );
        let json = HeaderValue::from_static("application/json; charset=utf-8");
        assert_eq!(
            read(
                &Method::PUT,
                None,
                Some(&json),
                br#"{"protection":false,"cores":2}"#
            )
            .unwrap(),
            pairs(&[("cores", "2"), ("protection", "0")])
        );
        // Query and body together, so the gate sees both halves.
        assert_eq!(
            read(
                &Method::POST,
                Some("force=1"),
                Some(&form_type()),
                b"vmid=1"
            )
            .unwrap(),
            pairs(&[("force", "1"), ("vmid", "1")])
        );
    }

    #[test]
    fn what_could_read_two_ways_is_refused() {
        for (method, query, body, says) in [
            (Method::POST, None, &b"a=b+c"[..], "raw '+'"),
            (Method::POST, None, b"a=%zz", "bad escape"),
            (Method::POST, None, b"a=%ff", "decodes to no text"),
            (Method::POST, None, b"a", "not name=value"),
            (Method::POST, None, b"=1", "without a name"),
            (Method::POST, None, b"a=1&", "not name=value"),
            (Method::DELETE, None, b"purge=1", "belong in the query"),
        ] {
            let e = read(&method, query, Some(&form_type()), body).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        let xml = HeaderValue::from_static("text/xml");
        assert!(
            read(&Method::POST, None, Some(&xml), b"<a/>")
                .unwrap_err()
                .contains("does not read")
        );
        let json = HeaderValue::from_static("application/json");
        assert!(read(&Method::POST, None, Some(&json), b"[1]").is_err());
        assert!(read(&Method::POST, None, Some(&json), br#"{"a":[1]}"#).is_err());
    }

    #[test]
    fn a_record_is_bounded_masked_and_hashed() {
        let mut sent: Sent = (0..500)
            .map(|i| (format!("p{i}"), "x".repeat(1000)))
            .collect();
        sent.push(("password".into(), "hunter2".into()));
        let r = recorded("/nodes/pve1/qemu/100/config", &sent);
        assert!(
            r.to_string().len() < RECORDED_TOTAL + 600,
            "{}",
            r.to_string().len()
        );
        assert_eq!(r["count"], 501);
        assert!(
            r["values"]["…"]
                .as_str()
                .unwrap()
                .ends_with("more not shown")
        );
        assert!(!r.to_string().contains("hunter2"));
        assert_eq!(r["sha256"].as_str().unwrap().len(), 64);
        let small = recorded("/version", &vec![("password".into(), "hunter2".into())]);
        assert_eq!(small["values"]["password"], MASK);
    }

    /// A guest file's content is recorded as its size and digest, also
    /// behind an encoded path; a `content` elsewhere (a storage's content
    /// types) is an ordinary value.
    #[test]
    fn a_guest_files_content_is_recorded_as_its_size_and_digest() {
        let sent: Sent = vec![
            ("content".into(), "db_password=hunter2\n".into()),
            ("file".into(), "/etc/app.conf".into()),
        ];
        for path in [
            "/nodes/pve1/qemu/100/agent/file-write",
            "/nodes/pve1/qemu/100/agent/file%2Dwrite",
        ] {
            let r = recorded(path, &sent);
            assert!(!r.to_string().contains("hunter2"), "{r}");
            assert_eq!(
                r["values"]["content"],
                guest_file::not_shown("db_password=hunter2\n")
            );
            assert_eq!(r["values"]["file"], "/etc/app.conf");
        }
        let storage = recorded("/storage", &vec![("content".into(), "iso,vztmpl".into())]);
        assert_eq!(storage["values"]["content"], "iso,vztmpl");
    }
}
