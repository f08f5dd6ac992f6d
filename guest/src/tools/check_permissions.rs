//! `pve_check_permissions`: what the API token may do, from
//! `/access/permissions[?path=]`, so an agent can explain a 403.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg;
use crate::error::{ToolError, quoted};
use crate::json as pj;
use crate::paging::{self, Limit, Offset, Page, PageInfo};
use crate::path::ApiPath;

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 1000;
/// Longest ACL path.
const PATH_MAX: usize = 256;
/// JSON Schema pattern of an ACL path (the rule [`AclPath`] checks).
pub const PATH_PATTERN: &str = "^/([A-Za-z0-9_.@!-]+(/[A-Za-z0-9_.@!-]+)*)?$";

/// Every privilege the tools declare, derived from the registry by its
/// tests (which check this file against every tool's `privileges` and
/// rewrite it with `UPDATE_SCHEMAS=1`): this tool cannot import the
/// registry it is listed in.
const NEEDS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/schemas/privileges.json"
));

/// One privilege some tool needs, and what for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Need {
    /// Its name, e.g. `VM.Audit`.
    pub privilege: String,
    /// Privileges that do instead wherever it is needed (the guest agent
    /// takes `VM.GuestAgent.Audit` on PVE 9 and `VM.Monitor` before).
    pub alternatives: Vec<String>,
    /// Which tools need it on which path, for people.
    pub needed_for: String,
    /// Only ever named after another privilege that does instead (PVE 8's
    /// `VM.Monitor`): shown, but never missing by itself, as that other
    /// one is checked.
    #[serde(default)]
    pub stand_in: bool,
}

/// [`NEEDS`], read.
fn needs() -> Result<Vec<Need>, ToolError> {
    serde_json::from_str(NEEDS)
        .map_err(|e| ToolError::Internal(format!("schemas/privileges.json is not valid: {e}")))
}

/// The [`Need`]s of `tools`, each privilege once, in the order the tools
/// first name them.
#[cfg(test)]
pub fn derive_needs(tools: &[&Tool]) -> Vec<Need> {
    // privilege → (alternatives, [(path, [tool])])
    type Uses = Vec<(&'static str, Vec<&'static str>)>;
    let mut found: Vec<(&str, Option<Vec<&str>>, Uses)> = Vec::new();
    let mut first: Vec<&str> = Vec::new();
    for tool in tools {
        for p in tool.privileges {
            first.extend(p.any_of.first());
            for name in p.any_of {
                let at = match found.iter().position(|(n, _, _)| n == name) {
                    Some(at) => at,
                    None => {
                        found.push((name, None, Vec::new()));
                        found.len() - 1
                    }
                };
                let (_, alternatives, uses) = &mut found[at];
                // An alternative must do wherever the privilege is needed:
                // `Datastore.Audit` stands in for `Datastore.AllocateSpace`
                // when listing, not when a tool allocates.
                let here: Vec<&str> = p.any_of.iter().copied().filter(|o| o != name).collect();
                match alternatives {
                    None => *alternatives = Some(here),
                    Some(kept) => kept.retain(|k| here.contains(k)),
                }
                match uses.iter_mut().find(|(path, _)| *path == p.path) {
                    Some((_, by)) if by.contains(&tool.name) => {}
                    Some((_, by)) => by.push(tool.name),
                    None => uses.push((p.path, vec![tool.name])),
                }
            }
        }
    }
    found
        .into_iter()
        .map(|(name, alternatives, uses)| Need {
            privilege: name.to_owned(),
            alternatives: alternatives
                .into_iter()
                .flatten()
                .map(str::to_owned)
                .collect(),
            needed_for: uses
                .iter()
                .map(|(path, by)| format!("on {path} by {}", by.join(", ")))
                .collect::<Vec<_>>()
                .join("; "),
            stand_in: !first.contains(&name),
        })
        .collect()
}

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_check_permissions",
    title: "Check the API token's permissions",
    description: "The API token's privileges per ACL path, or one path checked against what the \
        tools need. Use it when a tool got 403 or fewer items than expected.",
    reads: ["/access/permissions"],
    privileges: [],
    run: run,
};

/// Which ACL path to check, or the page of all of them.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Only this ACL path, checked against the tools' needs
    path: Option<AclPath>,
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    #[serde(default)]
    offset: Offset,
}

/// The token's privileges, per path or on one path.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Permissions {
    /// The path asked about; null for all
    pub path: Option<String>,
    /// ACL paths with their privileges, sorted by path
    pub paths: Vec<PathPrivileges>,
    /// With path: whether each privilege the tools need is granted there; null without path.
    pub has: Option<Has>,
    /// With path: the tools' privileges not granted there; empty without path
    pub missing: Vec<String>,
    /// With path and something missing: the pveum commands that grant it; null otherwise
    pub grant_hint: Option<String>,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
    /// One entry per token when the host holds a token per tier or agent; null otherwise
    pub credentials: Option<Vec<CredentialCheck>>,
}

/// This answer for one more of the cluster's tokens, which the host that
/// holds them fills in by running the tool again with each; the component
/// never does (it holds no token).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CredentialCheck {
    /// The tiers it serves: read, write, destructive
    pub tiers: Vec<String>,
    /// Its token id
    pub token_id: String,
    /// The answer's summary with it
    pub summary: String,
    /// The whole answer with it
    pub answer: serde_json::Value,
}

/// Privileges on one ACL path.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct PathPrivileges {
    /// ACL path
    pub path: String,
    /// Privileges granted there, sorted
    pub privileges: Vec<String>,
}

/// Whether each privilege the tools declare (`schemas/privileges.json`) is
/// granted, by name.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct Has(BTreeMap<String, bool>);

#[cfg(test)]
impl schemars::JsonSchema for Has {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Has".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // From the file on disk, not the copy compiled in: the registry's
        // test rewrites it just before it derives this schema, so one
        // `UPDATE_SCHEMAS=1` run brings both up to date.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/privileges.json");
        let text = std::fs::read_to_string(path).expect("schemas/privileges.json is readable");
        let needs: Vec<Need> = serde_json::from_str(&text).expect("privileges.json is valid");
        let properties: serde_json::Map<String, Value> = needs
            .into_iter()
            .map(|need| {
                let mut description = format!("Granted? Needed {}", need.needed_for);
                if !need.alternatives.is_empty() {
                    description.push_str(&format!(
                        " ({} also suffices)",
                        need.alternatives.join(" or ")
                    ));
                }
                (
                    need.privilege,
                    serde_json::json!({"type": "boolean", "description": description}),
                )
            })
            .collect();
        schemars::json_schema!({"type": "object", "properties": properties})
    }
}

/// An ACL path: `/` or `/seg[/seg...]` with `[A-Za-z0-9_.@!-]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclPath(String);

impl AclPath {
    fn from_json(v: &Value) -> Result<Self, String> {
        let p = arg::string(v, PATH_MAX)?;
        let valid = p == "/"
            || (p.starts_with('/')
                && p[1..].split('/').all(|seg| {
                    !seg.is_empty()
                        && seg != "."
                        && seg != ".."
                        && seg
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"_.@!-".contains(&b))
                }));
        if !valid {
            return Err(format!(
                "{} is not an ACL path: it must start with '/' and have segments of letters, \
                 digits and _ . - @ !, e.g. \"/vms/100\", \"/nodes/pve1\", \"/storage/local\" or \"/\"",
                quoted(p, 64)
            ));
        }
        Ok(AclPath(p.to_owned()))
    }
}
arg::deserialize_from_json!(AclPath);
arg::fixed_schema!(
    AclPath,
    serde_json::json!({"type": "string", "minLength": 1, "maxLength": PATH_MAX, "pattern": PATH_PATTERN})
);

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<Permissions>, ToolError> {
    let path = input.path.as_ref().map(|p| p.0.as_str());
    let page = Page::new(input.limit, input.offset);
    let mut api = ApiPath::new("access").lit("permissions");
    if let Some(p) = path {
        api = api.query("path", p);
    }
    let data = pve.get(&api)?;
    Ok(shape(path, &data, page, &needs()?))
}

fn privileges(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = match v {
        Value::Object(m) => m.keys().cloned().collect(),
        Value::Array(a) => a.iter().filter_map(|x| pj::text(Some(x))).collect(),
        _ => Vec::new(),
    };
    out.sort();
    out
}

/// Shapes a permissions map `{path: {priv: propagate}}`, checking `needs`
/// when it is about one path.
pub fn shape(
    path: Option<&str>,
    data: &Value,
    page: Page,
    needs: &[Need],
) -> Answer<Permissions> {
    let empty = Map::new();
    let map = data.as_object().unwrap_or(&empty);
    let mut entries: Vec<(String, Vec<String>)> = map
        .iter()
        .map(|(p, v)| (p.clone(), privileges(v)))
        .collect();
    entries.sort();
    let at_path: Vec<String> = path
        .and_then(|p| entries.iter().find(|(e, _)| e == p))
        .map(|(_, privs)| privs.clone())
        .unwrap_or_default();
    let (has, missing): (Option<Has>, Vec<String>) = match path {
        Some(_) => {
            let mut has = Has::default();
            let mut missing = Vec::new();
            let granted = |p: &str| at_path.iter().any(|x| x == p);
            for need in needs {
                let name = &need.privilege;
                has.0.insert(name.clone(), granted(name));
                // One that is granted instead covers the need (the guest
                // agent's privilege was renamed in PVE 9).
                if !need.stand_in
                    && !granted(name)
                    && !need.alternatives.iter().any(|a| granted(a))
                {
                    missing.push(name.clone());
                }
            }
            (Some(has), missing)
        }
        None => (None, Vec::new()),
    };
    let grant_hint = path
        .filter(|_| !missing.is_empty())
        .map(|p| grant_hint(p, &missing));
    let list: Vec<PathPrivileges> = entries
        .iter()
        .map(|(p, privs)| PathPrivileges {
            path: p.clone(),
            privileges: privs.clone(),
        })
        .collect();
    let (page_items, info) = paging::paginate(list, page);
    let summary = match path {
        Some(p) if at_path.is_empty() => format!(
            "The API token has no privileges on {p}. Grant them, e.g. pveum acl modify {p} \
             --tokens 'user@realm!tokenname' --roles PVEAuditor."
        ),
        Some(p) => {
            let checked: Vec<&str> = needs
                .iter()
                .map(|n| n.privilege.as_str())
                .filter(|n| at_path.iter().any(|x| x == n))
                .collect();
            let shown = if at_path.len() <= 8 {
                at_path.join(", ")
            } else if checked.is_empty() {
                format!("{} privileges", at_path.len())
            } else {
                format!(
                    "{} privileges, including {}",
                    at_path.len(),
                    checked.join(", ")
                )
            };
            let mut s = format!("On {p} the API token has {shown}");
            if missing.is_empty() {
                s.push('.');
            } else {
                s.push_str(&format!("; it lacks {}.", missing.join(", ")));
            }
            s
        }
        None => {
            let mut s = format!(
                "The API token has privileges on {}",
                crate::format::count(info.total, "path", "paths")
            );
            if info.total == 0 {
                s.push_str(": it can read nothing; grant it a role, e.g. pveum acl modify / --tokens 'user@realm!tokenname' --roles PVEAuditor.");
            } else {
                s.push_str(&format!("; {}.", info.describe()));
            }
            s
        }
    };
    Answer {
        structured: Permissions {
            path: path.map(str::to_owned),
            paths: page_items,
            has,
            missing,
            grant_hint,
            page: info,
            credentials: None,
        },
        summary,
    }
}

/// The privileges Proxmox's built-in `PVEAuditor` role grants that the
/// tools need: the read tools' own.
const AUDITOR: &[&str] = &["Sys.Audit", "VM.Audit", "Datastore.Audit"];

/// How to grant what is `missing` on `path`: `PVEAuditor` for the read
/// privileges it holds, and a role of one's own for the rest (the write
/// tools' and the guest agent's), which no built-in read role has.
fn grant_hint(path: &str, missing: &[String]) -> String {
    let (reads, others): (Vec<&String>, Vec<&String>) =
        missing.iter().partition(|m| AUDITOR.contains(&m.as_str()));
    let token = "--tokens 'user@realm!tokenname'";
    let mut hint = Vec::new();
    if !reads.is_empty() {
        hint.push(format!(
            "Grant read access with: pveum acl modify {path} {token} --roles PVEAuditor."
        ));
    }
    if !others.is_empty() {
        let names: Vec<&str> = others.iter().map(|o| o.as_str()).collect();
        hint.push(format!(
            "{} {} not in PVEAuditor: grant only those the tools you enable need, with a role of \
             your own, e.g. pveum role add PVEMCPTools --privs '{}' and pveum acl modify {path} \
             {token} --roles PVEMCPTools.",
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            names.join(" ")
        ));
    }
    hint.push(
        "Use the pve-mcp token's id; a privilege-separated token needs the ACL on the token \
         itself. VM.GuestAgent.Audit (PVE 9) and VM.Monitor (older) are one need: either suffices."
            .into(),
    );
    hint.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::Output;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    fn call(pve: &mut FakePve, args: Value) -> Result<Output, ToolError> {
        TOOL.call(pve, &args.to_string())
    }

    #[test]
    fn all_paths() {
        let data = json!({
            "/": {"Sys.Audit": 1, "Datastore.Audit": 1, "VM.Audit": 1},
            "/vms/100": {"VM.Audit": 1, "VM.PowerMgmt": 0},
            "/access": {}
        });
        let mut pve = FakePve::default().with("/access/permissions", data);
        let out = call(&mut pve, json!({})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(
            s["paths"][0],
            json!({"path": "/", "privileges": ["Datastore.Audit", "Sys.Audit", "VM.Audit"]})
        );
        assert_eq!(s["paths"][2]["path"], "/vms/100");
        assert_eq!(s["has"], Value::Null);
        assert_eq!(s["total"], 3);
    }

    /// A PVE 9 token holds the guest agent's new privileges and never
    /// PVE 8's `VM.Monitor`, which only ever stands in for them.
    #[test]
    fn pve_8s_name_is_never_missing_beside_pve_9s() {
        let mut pve = FakePve::default().with(
            "/access/permissions?path=%2Fvms%2F100",
            json!({"/vms/100": {"VM.GuestAgent.Audit": 1, "VM.GuestAgent.Unrestricted": 1}}),
        );
        let out = call(&mut pve, json!({"path": "/vms/100"})).unwrap();
        let s = &out.structured;
        assert_eq!(s["has"]["VM.Monitor"], false);
        let missing = s["missing"].as_array().unwrap();
        for covered in ["VM.Monitor", "VM.GuestAgent.FileRead", "VM.GuestAgent.Audit"] {
            assert!(!missing.contains(&json!(covered)), "{missing:?}");
        }
        assert!(missing.contains(&json!("VM.Audit")), "{missing:?}");
    }

    #[test]
    fn one_path_with_has_check() {
        let mut pve = FakePve::default().with(
            "/access/permissions?path=%2Fvms%2F100",
            json!({"/vms/100": {"VM.Audit": 1, "VM.Monitor": 1}}),
        );
        let out = call(&mut pve, json!({"path": "/vms/100"})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["has"]["VM.Audit"], true);
        assert_eq!(s["has"]["Sys.Audit"], false);
        let missing: Vec<&str> = s["missing"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(missing.starts_with(&["Sys.Audit", "Datastore.Audit"]), "{missing:?}");
        // Granted, or covered by the one granted instead.
        for covered in ["VM.Audit", "VM.Monitor", "VM.GuestAgent.Audit"] {
            assert!(!missing.contains(&covered), "{missing:?}");
        }
        let hint = s["grant_hint"].as_str().unwrap();
        assert!(
            hint.contains("pveum acl modify /vms/100 --tokens 'user@realm!tokenname' --roles PVEAuditor"),
            "{hint}"
        );
        // The write tools' privileges are no built-in read role's.
        assert!(
            hint.contains("VM.PowerMgmt") && hint.contains("--roles PVEMCPTools"),
            "{hint}"
        );
        assert!(
            out.summary
                .starts_with("On /vms/100 the API token has VM.Audit, VM.Monitor"),
            "{}",
            out.summary
        );

        let mut pve =
            FakePve::default().with("/access/permissions?path=%2Fnodes%2Fpve1", json!({}));
        let out = call(&mut pve, json!({"path": "/nodes/pve1"})).unwrap();
        assert_valid_output(&TOOL, &out);
        assert!(
            out.summary.contains("no privileges on /nodes/pve1"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn bad_paths_make_no_request() {
        let mut pve = FakePve::default();
        for bad in [
            "vms/100",
            "/vms//100",
            "/vms/100/",
            "/vms/../x",
            "/vms/1 0",
            "/a?b",
            "",
        ] {
            let e = call(&mut pve, json!({"path": bad})).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{bad}: {e:?}");
            assert!(e.message().starts_with("path: "), "{e}");
        }
        assert!(pve.requests.is_empty());
        let mut pve = FakePve::default().with(
            "/access/permissions?path=%2F",
            json!({"/": {"Sys.Audit": 1}}),
        );
        assert!(call(&mut pve, json!({"path": "/"})).is_ok());
        let mut pve = FakePve::default().with(
            "/access/permissions?path=%2Faccess%2Fusers%2Fapi%40pve",
            json!({}),
        );
        assert!(call(&mut pve, json!({"path": "/access/users/api@pve"})).is_ok());
    }
}
