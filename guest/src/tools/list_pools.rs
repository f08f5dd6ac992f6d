//! `pve_list_pools`: the resource pools (`GET /pools`), or one pool with
//! its members (in whichever API form the cluster answers,
//! [`crate::pools::read`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::Pve;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;
use crate::pools::{self, Form, PoolId};
use crate::tool::{Answer, Tool, read_tool};

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_pools",
    title: "List resource pools",
    description: "Resource pools with their comments; with poolid, that pool's members (guests \
        with status, storages).",
    reads: ["/pools", "/pools?poolid=", "/pools/{poolid}"],
    privileges: [
        "/pool/{poolid}": "Pool.Audit",
    ],
    run: run,
};

/// Which pools.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Only this pool, with its members
    poolid: Option<PoolId>,
}

/// The pools.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct PoolList {
    /// Pools by id
    pub pools: Vec<PoolEntry>,
    /// The API form that answered for one pool; null for the list
    pub form: Option<Form>,
}

/// One pool.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct PoolEntry {
    /// Pool id
    pub poolid: String,
    /// Comment
    pub comment: Option<String>,
    /// Members; null in the list of all pools
    pub members: Option<Vec<Member>>,
}

/// One member of a pool.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Member {
    /// qemu, lxc or storage
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Guest id; null for a storage
    pub vmid: Option<u64>,
    /// Guest name; null if none
    pub name: Option<String>,
    /// Storage id; null for a guest
    pub storage: Option<String>,
    /// Node
    pub node: Option<String>,
    /// running, stopped, available, ...
    pub status: Option<String>,
}

fn member(m: &Map<String, Value>) -> Member {
    Member {
        kind: pj::text(m.get("type")),
        vmid: pj::uint(m.get("vmid")),
        name: pj::text(m.get("name")),
        storage: pj::text(m.get("storage")),
        node: pj::text(m.get("node")),
        status: pj::text(m.get("status")),
    }
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<PoolList>, ToolError> {
    let Some(id) = input.poolid else {
        let mut list: Vec<PoolEntry> = fetch::list(pve, &ApiPath::new("pools"))?
            .iter()
            .filter_map(|p| {
                Some(PoolEntry {
                    poolid: pj::text(p.get("poolid"))?,
                    comment: pj::text(p.get("comment")),
                    members: None,
                })
            })
            .collect();
        list.sort_by(|a, b| a.poolid.cmp(&b.poolid));
        let names: Vec<&str> = list.iter().map(|p| p.poolid.as_str()).collect();
        let summary = format!(
            "{}{}.",
            crate::format::count(list.len(), "pool", "pools"),
            if names.is_empty() {
                String::new()
            } else {
                format!(": {}", names.join(", "))
            }
        );
        return Ok(Answer {
            summary,
            structured: PoolList {
                pools: list,
                form: None,
            },
        });
    };
    let Some(pool) = pools::read(pve, &id)? else {
        return Err(ToolError::field(
            "poolid",
            format!("there is no pool {}; pve_list_pools lists them", id.as_str()),
        ));
    };
    let labels: Vec<String> = pool.members.iter().map(pools::member_label).collect();
    let summary = format!(
        "Pool {}: {}{} (read through {}).",
        id.as_str(),
        crate::format::count(labels.len(), "member", "members"),
        if labels.is_empty() {
            String::new()
        } else {
            format!(", {}", labels.join(", "))
        },
        pool.form.describe()
    );
    Ok(Answer {
        summary,
        structured: PoolList {
            pools: vec![PoolEntry {
                poolid: id.0,
                comment: pool.comment,
                members: Some(pool.members.iter().map(member).collect()),
            }],
            form: Some(pool.form),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    #[test]
    fn one_pool_is_read_in_the_new_form_or_the_old() {
        let pool = json!({"poolid": "production", "comment": "Prod", "members": [
            {"id": "qemu/100", "type": "qemu", "vmid": 100, "node": "pve1", "status": "running"},
            {"id": "storage/pve1/nfs-backup", "type": "storage", "storage": "nfs-backup", "node": "pve1"}]});
        let mut pve = FakePve::default().with("/pools?poolid=production", json!([pool]));
        let out = TOOL.call(&mut pve, r#"{"poolid": "production"}"#).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["form"], "pools?poolid=");
        assert!(out.summary.contains("2 members, VM 100, storage nfs-backup"), "{}", out.summary);
        let mut old = FakePve::default()
            .failing(
                "/pools?poolid=production",
                ToolError::Upstream("HTTP 400: poolid: property is not defined in schema".into()),
            )
            .with("/pools/production", pool);
        let out = TOOL.call(&mut old, r#"{"poolid": "production"}"#).unwrap();
        assert_eq!(out.structured["form"], "pools/{poolid}");
        assert_eq!(out.structured["pools"][0]["members"][0]["vmid"], 100);
    }

    #[test]
    fn the_list_names_every_pool() {
        let mut pve = FakePve::default().with(
            "/pools",
            json!([{"poolid": "lab"}, {"poolid": "production", "comment": "Prod"}]),
        );
        let out = TOOL.call(&mut pve, "{}").unwrap();
        assert_eq!(out.summary, "2 pools: lab, production.");
        assert_eq!(out.structured["form"], Value::Null);
    }
}
