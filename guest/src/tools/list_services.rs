//! `pve_list_services`: the state of a node's system services
//! (`GET /nodes/{node}/services`): pveproxy, pvedaemon, pve-cluster,
//! corosync and the rest, the ones not running named first in the summary.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Pve;
use crate::arg::NodeName;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;
use crate::tool::{Answer, Tool, read_tool};

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_services",
    title: "List a node's services",
    description: "A node's system services (pveproxy, pvedaemon, pve-cluster, corosync, ...) with \
        their state; those not running are named first.",
    reads: ["/nodes/{node}/services"],
    privileges: [
        "/nodes/{node}": "Sys.Audit",
    ],
    run: run,
};

/// Which node.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Node to ask
    node: NodeName,
}

/// A node's services.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ServiceList {
    /// Node asked
    pub node: String,
    /// Services by name
    pub services: Vec<Service>,
    /// Names of the services that should run and do not (failed, or enabled and stopped)
    pub not_running: Vec<String>,
}

/// One service.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Service {
    /// Unit name, e.g. pveproxy
    pub service: String,
    /// What it is
    pub desc: Option<String>,
    /// running, stopped, ...
    pub state: Option<String>,
    /// systemd's active state: active, inactive, failed
    pub active_state: Option<String>,
    /// systemd's unit state: enabled, disabled, masked, not-found
    pub unit_state: Option<String>,
}

fn record(e: &Value) -> Option<Service> {
    Some(Service {
        service: pj::text(e.get("service")).or_else(|| pj::text(e.get("name")))?,
        desc: pj::text(e.get("desc")),
        state: pj::text(e.get("state")),
        active_state: pj::text(e.get("active-state")),
        unit_state: pj::text(e.get("unit-state")),
    })
}

/// Whether a service should run and does not: failed, or enabled (or
/// static) and not active.
fn in_trouble(s: &Service) -> bool {
    let active = s.active_state.as_deref();
    active == Some("failed")
        || (matches!(s.unit_state.as_deref(), Some("enabled" | "static"))
            && active.is_some_and(|a| a != "active"))
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ServiceList>, ToolError> {
    let node = input.node.as_str();
    let entries = fetch::list(pve, &ApiPath::new("nodes").seg(node).lit("services"))?;
    let mut services: Vec<Service> = entries.iter().filter_map(record).collect();
    services.sort_by(|a, b| a.service.cmp(&b.service));
    let not_running: Vec<String> = services
        .iter()
        .filter(|s| in_trouble(s))
        .map(|s| s.service.clone())
        .collect();
    let summary = if not_running.is_empty() {
        format!(
            "{} on {node}; every enabled one is running.",
            crate::format::count(services.len(), "service", "services")
        )
    } else {
        format!(
            "{} on {node}; NOT running: {}.",
            crate::format::count(services.len(), "service", "services"),
            not_running.join(", ")
        )
    };
    Ok(Answer {
        summary,
        structured: ServiceList {
            node: node.to_owned(),
            services,
            not_running,
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
    fn services_in_trouble_are_named() {
        let mut pve = FakePve::default().with(
            "/nodes/pve2/services",
            json!([
                {"service": "pveproxy", "name": "pveproxy", "desc": "PVE API Proxy Server",
                 "state": "running", "active-state": "active", "unit-state": "enabled"},
                {"service": "pve-ha-lrm", "state": "stopped", "active-state": "failed",
                 "unit-state": "enabled"},
                {"service": "chrony", "state": "stopped", "active-state": "inactive",
                 "unit-state": "enabled"},
                {"service": "spiceproxy", "state": "stopped", "active-state": "inactive",
                 "unit-state": "disabled"},
            ]),
        );
        let out = TOOL.call(&mut pve, r#"{"node": "pve2"}"#).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["not_running"], json!(["chrony", "pve-ha-lrm"]));
        assert!(out.summary.contains("NOT running: chrony, pve-ha-lrm"), "{}", out.summary);
    }
}
