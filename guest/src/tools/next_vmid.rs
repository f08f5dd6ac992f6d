//! `pve_get_next_vmid`: a free vmid from `GET /cluster/nextid`.

use serde::{Deserialize, Serialize};

use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::Vmid;
use crate::error::ToolError;
use crate::path::ApiPath;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_next_vmid",
    title: "Get a free VM/CT id",
    description: "The lowest free vmid, or whether one is free, for a create, clone or restore. \
        Not reserved: ask again if it is taken.",
    reads: ["/cluster/nextid"],
    privileges: [],
    run: run,
};

/// Optionally, the id to check.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Is this id free?
    vmid: Option<Vmid>,
}

/// A free vmid.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct NextVmid {
    /// A vmid no guest uses (not reserved)
    pub vmid: u32,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NextVmid>, ToolError> {
    let mut path = ApiPath::new("cluster").lit("nextid");
    if let Some(v) = input.vmid {
        path = path.query("vmid", &v.0.to_string());
    }
    let data = pve.get(&path)?;
    // The schema says integer; the wire often carries a string.
    let vmid = crate::json::uint(Some(&data))
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| crate::fetch::unexpected(&path, "a vmid", &data))?;
    Ok(Answer {
        summary: match input.vmid {
            Some(_) => format!("vmid {vmid} is free (not reserved)."),
            None => format!("vmid {vmid} is free (not reserved; use it soon)."),
        },
        structured: NextVmid { vmid },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use serde_json::json;

    #[test]
    fn a_string_or_a_number_is_read() {
        for data in [json!("111"), json!(111)] {
            let mut pve = FakePve::default().with("/cluster/nextid", data);
            let out = TOOL.call(&mut pve, "{}").unwrap();
            crate::tool::testing::assert_valid_output(&TOOL, &out);
            assert_eq!(out.structured["vmid"], 111);
        }
        let mut pve = FakePve::default().with("/cluster/nextid?vmid=150", json!(150));
        let out = TOOL.call(&mut pve, r#"{"vmid": 150}"#).unwrap();
        assert_eq!(out.structured["vmid"], 150);
    }
}
