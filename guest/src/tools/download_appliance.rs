//! `pve_download_appliance`: `POST /nodes/{node}/aplinfo`, a template of
//! the node's appliance index fetched onto a storage (what `pveam
//! download` does), checked against the index's own checksum by Proxmox.
//!
//! Refused without writing: a template the index does not list (Proxmox
//! answers "no such template" only after), a storage that does not take
//! container templates on the node, and one that already holds it.

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::arg::{NodeName, StorageId, Text};
use crate::error::{ToolError, quoted};
use crate::fetch;
use crate::json as pj;
use crate::node_action::{self, NodeActionOutput};
use crate::path::ApiPath;
use crate::route::{Param, Route};
use crate::storages;
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

action_input! {
    new:
    /// The appliance and where it goes.
    pub struct Input {
        /// Node that downloads
        node: NodeName,
        /// Storage for container templates
        storage: StorageId,
        /// Template name from pve_list_appliances
        template: Text<255>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_download_appliance",
    title: "Download an appliance template",
    description: "Download a container template from the appliance index \
        (pve_list_appliances) onto a storage. Returns the download task.",
    annotations: Annotations::write(false, false),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/aplinfo",
        &[Param::arg("storage"), Param::arg("template")],
    )],
    privileges: [
        "/storage/{storage}": "Datastore.Audit" | "Datastore.AllocateSpace",
        "/storage/{storage}": "Datastore.AllocateTemplate",
    ],
    run: run,
};

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    let execution = input.execution();
    let (node, storage, template) = (
        input.node.as_str(),
        input.storage.as_str(),
        input.template.as_str(),
    );
    let index = ApiPath::new("nodes").seg(node).lit("aplinfo");
    let listed = fetch::list(pve, &index)?;
    let Some(entry) = listed
        .iter()
        .find(|e| pj::text(e.get("template")).as_deref() == Some(template))
    else {
        return Err(ToolError::field(
            "template",
            format!(
                "{} is not in node {node}'s appliance index; pve_list_appliances lists the \
                 names it has",
                quoted(template, 80)
            ),
        ));
    };
    storages::require(pve, "storage", node, storage, "vztmpl", "container templates")?;
    let volid = format!("{storage}:vztmpl/{template}");
    if storages::holds(pve, node, storage, "vztmpl", &volid)? {
        return Err(ToolError::Precondition(format!(
            "{volid} is already on {storage}. Nothing was sent. Create containers from it \
             (pve_create_lxc ostemplate {volid})."
        )));
    }
    let headline = pj::text(entry.get("headline"))
        .map(|h| format!(" ({h})"))
        .unwrap_or_default();
    let request = WriteRequest::new(Method::Post, index)
        .text("storage", Some(storage))
        .text("template", Some(template));
    let prepared = Prepared::Act {
        request,
        effect: format!("node {node} downloads {template}{headline} to {volid}"),
    };
    let found = format!("{template} is in the index; {storage} takes templates and lacks it");
    node_action::run(pve, node, found, prepared, execution)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::{Value, json};

    const T: &str = "debian-12-standard_12.7-1_amd64.tar.zst";
    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:download:x:mcp@pve!ops:";

    fn fake(on_storage: Value) -> FakePve {
        FakePve::default()
            .with("/nodes/pve1/aplinfo", json!([{"template": T, "headline": "Debian 12"}]))
            .with(
                "/nodes/pve1/storage?content=vztmpl",
                json!([{"storage": "local", "enabled": 1}]),
            )
            .with("/nodes/pve1/storage/local/content?content=vztmpl", on_storage)
            .answering("POST /nodes/pve1/aplinfo", json!(UPID))
    }

    fn args(template: &str, storage: &str) -> String {
        json!({"node": "pve1", "storage": storage, "template": template}).to_string()
    }

    #[test]
    fn a_listed_template_is_downloaded_with_one_post() {
        let mut pve = fake(json!([]));
        let out = TOOL.call(&mut pve, &args(T, "local")).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(
            pve.writes,
            [format!("POST /nodes/pve1/aplinfo storage=local&template={T}")]
        );
    }

    #[test]
    fn what_cannot_work_is_refused_before_any_write() {
        let there = json!([{"volid": format!("local:vztmpl/{T}")}]);
        for (pve, a, says) in [
            (fake(json!([])), args("nope.tar.zst", "local"), "not in node pve1's appliance index"),
            (fake(json!([])), args(T, "nfs"), "does not take container templates"),
            (fake(there), args(T, "local"), "is already on local"),
        ] {
            let mut pve = pve;
            let e = TOOL.call(&mut pve, &a).unwrap_err();
            assert!(e.message().contains(says), "{a}: {e}");
            assert!(pve.writes.is_empty());
        }
    }
}
