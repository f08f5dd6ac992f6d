//! Finding where a guest lives: vmid → node and type.
//!
//! Proxmox addresses a guest as `/nodes/{node}/{qemu|lxc}/{vmid}`, but an
//! agent usually knows only the vmid. A vmid is unique across the cluster,
//! so one `/cluster/resources?type=vm` request tells us the rest. We only
//! look it up when something is missing; when the caller gave both node
//! and type we trust them and let Proxmox answer.

use serde::Serialize;

use crate::api::Pve;
use crate::arg::{NodeName, VmType, Vmid, choice};
use crate::error::{ToolError, quoted};
use crate::resources::{self, Guest};

/// Where a guest is, and what of that we had to look up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The VM/CT id.
    pub vmid: u32,
    /// The node that holds it.
    pub node: String,
    /// QEMU VM or LXC container.
    pub vm_type: VmType,
    /// Whether `node` came from the lookup rather than the arguments.
    pub node_resolved: bool,
    /// Whether `vm_type` came from the lookup rather than the arguments.
    pub vm_type_resolved: bool,
}

impl Target {
    /// The `resolved` object tools put in their output.
    pub fn resolved(&self) -> Resolved {
        let looked_up = self.node_resolved || self.vm_type_resolved;
        Resolved {
            node: self.node_resolved,
            vm_type: self.vm_type_resolved,
            source: looked_up.then_some(LookupSource::ClusterResources),
        }
    }

    /// "VM 101" or "CT 101".
    pub fn label(&self) -> String {
        format!("{} {}", self.vm_type.label(), self.vmid)
    }
}

/// Which of node and vm_type pve-mcp looked up because the call omitted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Resolved {
    /// true if node was looked up
    pub node: bool,
    /// true if vm_type was looked up
    pub vm_type: bool,
    /// Where they were looked up; null if nothing was
    pub source: Option<LookupSource>,
}

choice! {
    /// Where a guest's node and type were looked up.
    pub enum LookupSource {
        /// One `/cluster/resources?type=vm` listing.
        ClusterResources = "cluster/resources",
    }
}

/// Declares the input struct of a tool about one guest: `vmid` (required),
/// `node` and `vm_type` (optional, looked up when missing), then the
/// tool's own fields; its `wanted` method reads the first three.
macro_rules! guest_input {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$fmeta:meta])* $fvis:vis $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, serde::Deserialize)]
        #[cfg_attr(test, derive(schemars::JsonSchema))]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// VM/CT id, e.g. 101
            pub vmid: $crate::arg::Vmid,
            /// Looked up if omitted
            pub node: Option<$crate::arg::NodeName>,
            /// Looked up if omitted
            pub vm_type: Option<$crate::arg::VmType>,
            $($(#[$fmeta])* $fvis $field: $ty,)*
        }

        impl $name {
            /// The guest the call names.
            pub fn wanted(&self) -> $crate::resolve::Wanted {
                $crate::resolve::Wanted::new(self.vmid, self.node.as_ref(), self.vm_type)
            }
        }
    };
}
pub(crate) use guest_input;

/// The guest a call's `vmid`/`node`/`vm_type` arguments name, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The VM/CT id.
    pub vmid: u32,
    /// The node, if given.
    pub node: Option<String>,
    /// The type, if given.
    pub vm_type: Option<VmType>,
}

impl Wanted {
    /// The guest named by validated `vmid`, `node` and `vm_type` arguments.
    pub fn new(vmid: Vmid, node: Option<&NodeName>, vm_type: Option<VmType>) -> Self {
        Wanted {
            vmid: vmid.0,
            node: node.map(|n| n.as_str().to_owned()),
            vm_type,
        }
    }

    /// Completes the target, looking up what is missing.
    pub fn resolve(self, pve: &mut dyn Pve) -> Result<Target, ToolError> {
        if let (Some(node), Some(vm_type)) = (&self.node, self.vm_type) {
            return Ok(Target {
                vmid: self.vmid,
                node: node.clone(),
                vm_type,
                node_resolved: false,
                vm_type_resolved: false,
            });
        }
        let guests = resources::fetch_guests(pve)?;
        self.pick(&guests)
    }

    /// Completes the target from a `/cluster/resources` listing.
    pub fn pick(self, guests: &[Guest]) -> Result<Target, ToolError> {
        let vmid = self.vmid;
        let matches: Vec<&Guest> = guests
            .iter()
            .filter(|g| g.vmid == u64::from(vmid))
            .collect();
        // A vmid is cluster-unique, but prefer an entry that agrees with
        // what the caller said in case a listing ever repeats one.
        let found = matches
            .iter()
            .find(|g| self.agrees(g))
            .or(matches.first())
            .ok_or_else(|| {
                ToolError::Upstream(format!(
                    "VM {vmid} not found in cluster resources: check the vmid with \
                     pve_list_vms (the token may also lack VM.Audit on /vms/{vmid})"
                ))
            })?;
        // The node goes into the next request's path and into messages: a
        // listing that names no valid node (empty, huge, a path) is refused
        // rather than echoed.
        if !crate::arg::is_node_name(&found.node) {
            return Err(ToolError::Upstream(format!(
                "Proxmox lists {} {vmid} on node {}, which is not a valid node name; pass the                  node explicitly (pve_list_nodes lists them) [GET /api2/json{}]",
                found.vm_type.label(),
                quoted(&found.node, 64),
                resources::guests_path()
            )));
        }
        if let Some(node) = &self.node
            && !node.eq_ignore_ascii_case(&found.node)
        {
            return Err(ToolError::field(
                "node",
                format!(
                    "{} {vmid} is on node {}, not {} (per cluster/resources); omit node to \
                     use where it is, or pass node {}",
                    found.vm_type.label(),
                    quoted(&found.node, 64),
                    quoted(node, 64),
                    quoted(&found.node, 64)
                ),
            ));
        }
        if let Some(vm_type) = self.vm_type
            && vm_type != found.vm_type
        {
            return Err(ToolError::field(
                "vm_type",
                format!(
                    "{vmid} is {} (\"{}\"), not \"{}\" (per cluster/resources); omit vm_type \
                     or pass \"{}\"",
                    match found.vm_type {
                        VmType::Qemu => "a QEMU VM",
                        VmType::Lxc => "an LXC container",
                    },
                    found.vm_type.as_str(),
                    vm_type.as_str(),
                    found.vm_type.as_str()
                ),
            ));
        }
        Ok(Target {
            vmid,
            // The listing's spelling is canonical, even when the caller's
            // differed only in case.
            node: found.node.clone(),
            vm_type: found.vm_type,
            node_resolved: self.node.is_none(),
            vm_type_resolved: self.vm_type.is_none(),
        })
    }

    fn agrees(&self, g: &Guest) -> bool {
        self.node
            .as_ref()
            .is_none_or(|n| n.eq_ignore_ascii_case(&g.node))
            && self.vm_type.is_none_or(|t| t == g.vm_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::resources::fixtures::cluster_vms;
    use serde_json::json;

    fn wanted(vmid: u32, node: Option<&str>, vm_type: Option<VmType>) -> Wanted {
        Wanted {
            vmid,
            node: node.map(str::to_owned),
            vm_type,
        }
    }

    fn fake() -> FakePve {
        FakePve::default().with("/cluster/resources?type=vm", cluster_vms())
    }

    #[test]
    fn both_given_means_no_lookup() {
        let mut pve = FakePve::default();
        let t = wanted(101, Some("pve1"), Some(VmType::Lxc))
            .resolve(&mut pve)
            .unwrap();
        assert!(pve.requests.is_empty());
        assert_eq!((t.node.as_str(), t.vm_type), ("pve1", VmType::Lxc));
        assert_eq!(
            serde_json::to_value(t.resolved()).unwrap(),
            json!({"node": false, "vm_type": false, "source": null})
        );
    }

    #[test]
    fn missing_parts_are_looked_up() {
        let mut pve = fake();
        let t = wanted(101, None, None).resolve(&mut pve).unwrap();
        assert_eq!(pve.requests, ["/cluster/resources?type=vm"]);
        assert_eq!((t.node.as_str(), t.vm_type), ("node1", VmType::Lxc));
        assert_eq!(
            serde_json::to_value(t.resolved()).unwrap(),
            json!({"node": true, "vm_type": true, "source": "cluster/resources"})
        );

        let t = wanted(100, Some("NODE2"), None)
            .resolve(&mut fake())
            .unwrap();
        assert_eq!((t.node.as_str(), t.vm_type), ("node2", VmType::Qemu));
        assert!(!t.node_resolved && t.vm_type_resolved);

        let t = wanted(100, None, Some(VmType::Qemu))
            .resolve(&mut fake())
            .unwrap();
        assert!(t.node_resolved && !t.vm_type_resolved);
        // A string vmid in the listing still matches.
        let t = wanted(103, None, None).resolve(&mut fake()).unwrap();
        assert_eq!(t.node, "node3");
    }

    #[test]
    fn disagreement_names_the_field_and_the_fix() {
        let e = wanted(100, Some("node1"), None)
            .resolve(&mut fake())
            .unwrap_err();
        assert_eq!(
            e,
            ToolError::InvalidArguments(
                "node: VM 100 is on node \"node2\", not \"node1\" (per cluster/resources); omit \
                 node to use where it is, or pass node \"node2\""
                    .into()
            )
        );
        let e = wanted(101, None, Some(VmType::Qemu))
            .resolve(&mut fake())
            .unwrap_err();
        assert!(
            e.message()
                .starts_with("vm_type: 101 is an LXC container (\"lxc\"), not \"qemu\""),
            "{e}"
        );
    }

    #[test]
    fn unknown_vmid_is_a_clear_error() {
        let e = wanted(123, None, None).resolve(&mut fake()).unwrap_err();
        assert_eq!(
            e,
            ToolError::Upstream(
                "VM 123 not found in cluster resources: check the vmid with pve_list_vms (the \
                 token may also lack VM.Audit on /vms/123)"
                    .into()
            )
        );
    }

    #[test]
    fn lookup_failures_propagate() {
        let mut pve = FakePve::default().failing(
            "/cluster/resources?type=vm",
            ToolError::Upstream("down".into()),
        );
        let e = wanted(100, None, None).resolve(&mut pve).unwrap_err();
        assert_eq!(e, ToolError::Upstream("down".into()));
    }
}
