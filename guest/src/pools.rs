//! Resource pools as the pool tools speak them: the pool id argument and
//! one pool read in whichever form the cluster answers. PVE 8.1 and later
//! (and 9) take `GET /pools?poolid=`; PVE 8.0 knows only
//! `GET /pools/{poolid}` and refuses the `poolid` parameter with a 400.
//! [`read`] asks the new form first and falls back, and says which
//! answered, so a write that follows uses the same form.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::api::Pve;
use crate::arg::{deserialize_from_json, fixed_schema, string};
use crate::error::{ToolError, quoted};
use crate::json as pj;
use crate::path::ApiPath;

/// A pool id: letters, digits, `-` and `_` (nested pools, `a/b`, are not
/// taken here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolId(pub String);

impl PoolId {
    /// The id as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let s = string(v, 64)?;
        if s.contains('/') {
            return Err(format!(
                "{} names a nested pool, which these tools do not handle; use \
                 pve_api_request for it",
                quoted(s, 64)
            ));
        }
        if !s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "{} is not a pool id (letters, digits, '-' and '_'), e.g. \"production\"",
                quoted(s, 64)
            ));
        }
        Ok(PoolId(s.to_owned()))
    }
}
deserialize_from_json!(PoolId);
fixed_schema!(PoolId, serde_json::json!({"type": "string"}));

/// Which API form a cluster answered pool requests in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub enum Form {
    /// `/pools?poolid=` (PVE 8.1 and later).
    #[serde(rename = "pools?poolid=")]
    Query,
    /// `/pools/{poolid}` (PVE 8.0).
    #[serde(rename = "pools/{poolid}")]
    Path,
}

impl Form {
    /// What it is, for answers.
    pub fn describe(self) -> &'static str {
        match self {
            Form::Query => "/pools?poolid= (PVE 8.1 and later)",
            Form::Path => "/pools/{poolid} (PVE 8.0)",
        }
    }
}

/// A pool as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    /// Its comment.
    pub comment: Option<String>,
    /// Its members as Proxmox lists them.
    pub members: Vec<Map<String, Value>>,
    /// The form that answered.
    pub form: Form,
}

/// Whether `e` is PVE 8.0 refusing the `poolid` parameter of `GET /pools`.
fn is_pve80(e: &ToolError) -> bool {
    let m = e.message();
    m.contains("HTTP 400") && m.contains("poolid")
}

/// Reads pool `id`; `None` when the cluster has no such pool.
pub fn read(pve: &mut dyn Pve, id: &PoolId) -> Result<Option<Pool>, ToolError> {
    let query = ApiPath::new("pools").query("poolid", id.as_str());
    let (data, form) = match pve.get(&query) {
        Ok(Value::Array(list)) => match list.into_iter().next() {
            Some(first) => (first, Form::Query),
            None => return Ok(None),
        },
        Ok(other) => (other, Form::Query),
        Err(e) if is_pve80(&e) => {
            let path = ApiPath::new("pools").seg(id.as_str());
            match pve.get(&path) {
                Ok(data) => (data, Form::Path),
                Err(e) if e.message().contains("does not exist") => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Err(e) if e.message().contains("does not exist") => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(Pool {
        comment: pj::text(data.get("comment")),
        members: data
            .get("members")
            .and_then(Value::as_array)
            .map(|m| m.iter().filter_map(|e| e.as_object().cloned()).collect())
            .unwrap_or_default(),
        form,
    }))
}

/// A member as a word: `VM 100`, `CT 106`, `storage nfs-backup`.
pub fn member_label(m: &Map<String, Value>) -> String {
    match pj::text(m.get("type")).as_deref() {
        Some("qemu") => format!("VM {}", pj::text(m.get("vmid")).unwrap_or_default()),
        Some("lxc") => format!("CT {}", pj::text(m.get("vmid")).unwrap_or_default()),
        Some("storage") => format!("storage {}", pj::text(m.get("storage")).unwrap_or_default()),
        _ => pj::text(m.get("id")).unwrap_or_else(|| "a member".into()),
    }
}
