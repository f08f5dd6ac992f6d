//! Request parameters, extracted the way PVE's HTTP server does it: query
//! string for every method, plus a form-urlencoded or JSON body for
//! POST/PUT; repeated keys are kept (PVE joins them with NUL).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::errors::ApiError;
use crate::util::pct_decode;

/// Parameter name to every value it was given, in order.
pub(crate) type RawParams = BTreeMap<String, Vec<String>>;

/// Parses `a=1&b=2;c=3` like PVE's `decode_urlencoded` (`+` is a space, `;`
/// separates too). Keys without `=` carry no value and are dropped, as Perl
/// leaves them undefined.
pub(crate) fn parse_urlencoded(s: &str) -> RawParams {
    let mut out = RawParams::new();
    for kv in s.split(['&', ';']) {
        if kv.is_empty() {
            continue;
        }
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let k = pct_decode(&k.replace('+', " "));
        let v = pct_decode(&v.replace('+', " "));
        out.entry(k).or_default().push(v);
    }
    out
}

/// Parses a JSON object body. Booleans become PVE's 0/1, numbers their
/// decimal text, arrays one value per element.
pub(crate) fn parse_json_body(body: &[u8]) -> Result<RawParams, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bare(501, format!("malformed JSON string - {e}")))?;
    let Value::Object(map) = v else {
        return Err(ApiError::bare(
            501,
            "malformed JSON string - expected an object",
        ));
    };
    let mut out = RawParams::new();
    for (k, v) in map {
        let vals: Vec<String> = match v {
            Value::Null => continue,
            Value::Array(items) => items.iter().filter_map(scalar_text).collect(),
            other => scalar_text(&other).into_iter().collect(),
        };
        out.insert(k, vals);
    }
    Ok(out)
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Merges query parameters over body parameters (the query wins per key, as
/// in PVE) and drops the `_dc` cache buster.
pub(crate) fn merge(body: RawParams, query: RawParams) -> RawParams {
    let mut out = body;
    for (k, v) in query {
        out.insert(k, v);
    }
    out.remove("_dc");
    out
}

/// Final parameters handed to a handler: path parameters plus request
/// parameters, one string each (repeats joined with NUL like PVE).
#[derive(Debug, Clone, Default)]
pub(crate) struct Params {
    map: BTreeMap<String, String>,
}

impl Params {
    pub fn new(raw: &RawParams, path: &[(String, String)]) -> Self {
        let mut map: BTreeMap<String, String> =
            raw.iter().map(|(k, v)| (k.clone(), v.join("\0"))).collect();
        for (k, v) in path {
            map.insert(k.clone(), v.clone());
        }
        Params { map }
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.map.get(k).map(String::as_str)
    }

    /// Every parameter, path parameters included, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// A parameter the route guarantees (path parameters); empty if absent.
    pub fn path(&self, k: &str) -> &str {
        self.get(k).unwrap_or("")
    }
}

/// PVE rejects a request parameter that repeats a path parameter with a
/// different value.
pub(crate) fn check_path_conflicts(
    raw: &RawParams,
    path: &[(String, String)],
) -> Result<(), ApiError> {
    for (k, v) in path {
        if let Some(vals) = raw.get(k)
            && vals.join("\0") != *v
        {
            return Err(ApiError::param(
                k,
                "duplicate parameter (already defined in URI) with conflicting values!",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urlencoded_like_perl() {
        let p = parse_urlencoded("a=1&b=x+y;c=%41%ff&a=2&flag&=e");
        assert_eq!(p["a"], vec!["1", "2"]);
        assert_eq!(p["b"], vec!["x y"]);
        assert_eq!(p["c"], vec!["A\u{fffd}"]);
        assert!(!p.contains_key("flag"));
        assert_eq!(p[""], vec!["e"]);
    }

    #[test]
    fn json_body_typing() {
        let p = parse_json_body(br#"{"a":true,"b":3,"c":"s","d":[1,"x"],"e":null}"#).unwrap();
        assert_eq!(p["a"], vec!["1"]);
        assert_eq!(p["b"], vec!["3"]);
        assert_eq!(p["d"], vec!["1", "x"]);
        assert!(!p.contains_key("e"));
        assert!(parse_json_body(b"[1]").is_err());
        assert!(parse_json_body(b"{").is_err());
    }
}
