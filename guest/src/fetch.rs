//! `GET` plus a shape check: a list or an object, else an `upstream`
//! error that says what came back and which request it was.

use serde_json::{Map, Value};

use crate::api::Pve;
use crate::error::ToolError;
use crate::path::ApiPath;

/// `GET path`, expecting a JSON list (`null` counts as empty).
pub fn list(pve: &mut dyn Pve, path: &ApiPath) -> Result<Vec<Value>, ToolError> {
    match pve.get(path)? {
        Value::Array(items) => Ok(items),
        Value::Null => Ok(Vec::new()),
        other => Err(unexpected(path, "a list", &other)),
    }
}

/// `GET path`, expecting a JSON object.
pub fn object(pve: &mut dyn Pve, path: &ApiPath) -> Result<Map<String, Value>, ToolError> {
    match pve.get(path)? {
        Value::Object(o) => Ok(o),
        other => Err(unexpected(path, "an object", &other)),
    }
}

/// The error for an answer of the wrong JSON type.
pub fn unexpected(path: &ApiPath, wanted: &str, got: &Value) -> ToolError {
    let kind = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    };
    ToolError::Upstream(format!(
        "Proxmox's answer is not {wanted} (got {kind}); this Proxmox version may not be \
         supported. [GET /api2/json{path}]"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use serde_json::json;

    #[test]
    fn shapes() {
        let p = ApiPath::new("nodes");
        let mut pve = FakePve::default().with("/nodes", json!({"a": 1}));
        let e = list(&mut pve, &p).unwrap_err();
        assert!(e.message().contains("not a list (got an object)"), "{e}");
        assert!(e.message().ends_with("[GET /api2/json/nodes]"), "{e}");
        assert_eq!(object(&mut pve, &p).unwrap()["a"], 1);
        let mut pve = FakePve::default().with("/nodes", Value::Null);
        assert!(list(&mut pve, &p).unwrap().is_empty());
    }
}
