//! Reading the optional arguments of a tool call.

use serde_json::{Map, Value};

/// A tool's arguments object.
#[derive(Debug, Default)]
pub struct Args(Map<String, Value>);

impl Args {
    /// Parses `text`, which must be a JSON object; an empty string counts as
    /// `{}` because some clients send nothing for tools without parameters.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Ok(Self(map)),
            Ok(_) => Err("arguments must be a JSON object".into()),
            Err(e) => Err(format!("arguments are not JSON: {e}")),
        }
    }

    /// The non-negative integer `key`, or `default` when absent or null.
    pub fn u64_or(&self, key: &str, default: u64) -> Result<u64, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v
                .as_u64()
                .ok_or_else(|| format!("`{key}` must be a non-negative integer")),
        }
    }

    /// The integer `key`, or `default` when absent or null.
    pub fn i64_or(&self, key: &str, default: i64) -> Result<i64, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v
                .as_i64()
                .ok_or_else(|| format!("`{key}` must be an integer")),
        }
    }

    /// The boolean `key`, or `default` when absent or null.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| format!("`{key}` must be a boolean")),
        }
    }

    /// The list of strings `key`, or `default` when absent or null.
    pub fn strings_or(&self, key: &str, default: &[&str]) -> Result<Vec<String>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(default.iter().map(|s| (*s).to_owned()).collect()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| format!("`{key}` must be a list of strings")),
            Some(_) => Err(format!("`{key}` must be a list of strings")),
        }
    }

    /// The string `key`, or `default` when absent or null.
    pub fn str_or(&self, key: &str, default: &str) -> Result<String, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(default.to_owned()),
            Some(v) => v
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("`{key}` must be a string")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_values() {
        let a = Args::parse(r#"{"mib":3,"path":"/x","graceful":true,"code":-1}"#).unwrap();
        assert_eq!(a.u64_or("mib", 32), Ok(3));
        assert_eq!(a.u64_or("other", 32), Ok(32));
        assert_eq!(a.str_or("path", "/d").unwrap(), "/x");
        assert_eq!(a.bool_or("graceful", false), Ok(true));
        assert_eq!(a.i64_or("code", 0), Ok(-1));
        assert!(a.u64_or("path", 1).is_err());
        assert!(Args::parse("").is_ok());
        assert!(Args::parse("[]").is_err());
    }
}
