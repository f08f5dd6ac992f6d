//! `pve_get_vm_ips`: a guest's network interfaces and IP addresses, from
//! the QEMU guest agent (`.../qemu/{vmid}/agent/network-get-interfaces`)
//! or from the container's own view (`.../lxc/{vmid}/interfaces`).

use std::net::{Ipv4Addr, Ipv6Addr};

use serde::Serialize;
use serde_json::Value;

use crate::tool::{Answer, Tool, read_tool};
use crate::agent;
use crate::api::Pve;
use crate::arg::{VmType, choice};
use crate::error::ToolError;
use crate::json as pj;
use crate::path::ApiPath;
use crate::resolve::{Resolved, Target, guest_input};

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_vm_ips",
    title: "Get VM/container IP addresses",
    description: "A running guest's interfaces and IP addresses as it sees them (a VM needs its \
        guest agent). Use it to find where to reach a guest.",
    reads: ["/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", "/nodes/{node}/lxc/{vmid}/interfaces", "/cluster/resources?type=vm"],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.GuestAgent.Audit" | "VM.Monitor",
    ],
    run: run,
};

guest_input! {
    /// The guest to ask about.
    pub struct Input {}
}

/// A guest's IP addresses.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct VmIps {
    /// VM/CT id
    pub vmid: u32,
    /// Node the guest is on
    pub node: String,
    /// "qemu" or "lxc"
    pub vm_type: VmType,
    /// guest-agent: the QEMU guest agent; container: the container's interfaces
    pub source: IpSource,
    /// Interfaces as the guest reports them
    pub interfaces: Vec<Interface>,
    /// Usable IP addresses (no prefix), IPv4 first; loopback and link-local left out
    pub addresses: Vec<String>,
    /// Addresses left out of addresses, and why
    pub excluded: Vec<Excluded>,
    /// Which of node and vm_type pve-mcp looked up because the call omitted them.
    pub resolved: Resolved,
}

choice! {
    /// Who reported a guest's interfaces.
    pub enum IpSource {
        /// The QEMU guest agent inside a VM.
        GuestAgent = "guest-agent",
        /// Proxmox, for a container.
        Container = "container",
    }
}

/// One interface.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Interface {
    /// Interface name inside the guest, e.g. eth0
    pub name: String,
    /// MAC address; null if unknown
    pub mac: Option<String>,
    /// IPv4 addresses in CIDR form, e.g. 192.168.1.10/24
    pub ipv4: Vec<String>,
    /// IPv6 addresses in CIDR form
    pub ipv6: Vec<String>,
}

/// An address left out of addresses.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Excluded {
    /// The address
    pub address: String,
    /// Why it was left out
    pub reason: Exclusion,
}

choice! {
    /// Why an address is not worth reaching a guest at.
    pub enum Exclusion {
        /// 127.0.0.0/8 or ::1.
        Loopback = "loopback",
        /// 169.254.0.0/16 or fe80::/10.
        LinkLocal = "link-local",
    }
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<VmIps>, ToolError> {
    let target = input.wanted().resolve(pve)?;
    let base = ApiPath::new("nodes")
        .seg(&target.node)
        .lit(target.vm_type.as_str())
        .id(target.vmid);
    let path = match target.vm_type {
        VmType::Qemu => base.lit("agent").lit("network-get-interfaces"),
        VmType::Lxc => base.lit("interfaces"),
    };
    let data = pve.get(&path).map_err(|e| agent::explain(&target, e))?;
    if target.vm_type == VmType::Qemu {
        agent::result(&data, &target.label(), "network-get-interfaces")?;
    }
    Ok(shape(&target, &data))
}

/// Why an address is not in the flat list, if it is excluded.
fn excluded_reason(ip: &str) -> Option<Exclusion> {
    let bare = ip.split(['/', '%']).next().unwrap_or(ip);
    if let Ok(v4) = bare.parse::<Ipv4Addr>() {
        return if v4.is_loopback() {
            Some(Exclusion::Loopback)
        } else if v4.is_link_local() {
            Some(Exclusion::LinkLocal)
        } else {
            None
        };
    }
    if let Ok(v6) = bare.parse::<Ipv6Addr>() {
        return if v6.is_loopback() {
            Some(Exclusion::Loopback)
        } else if v6.segments()[0] & 0xffc0 == 0xfe80 {
            Some(Exclusion::LinkLocal)
        } else {
            None
        };
    }
    None
}

fn push_addr(iface: &mut Interface, addr: &str, prefix: Option<u64>) {
    let addr = addr.trim();
    if addr.is_empty() {
        return;
    }
    let cidr = match (addr.contains('/'), prefix) {
        (false, Some(p)) => format!("{addr}/{p}"),
        _ => addr.to_owned(),
    };
    // The family labels differ between sources ("ipv6" from the agent,
    // "inet6" from containers, free text in the schema); the address itself
    // is unambiguous, as only IPv6 has colons.
    if addr.contains(':') {
        iface.ipv6.push(cidr);
    } else {
        iface.ipv4.push(cidr);
    }
}

fn interfaces(data: &Value) -> Vec<Interface> {
    // The agent wraps its answer in {"result": [...]}; containers give a list.
    let list = data
        .get("result")
        .and_then(Value::as_array)
        .or_else(|| data.as_array());
    let Some(list) = list else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|i| {
            let name = pj::text(i.get("name"))?;
            let mac = pj::text(i.get("hardware-address")).or_else(|| pj::text(i.get("hwaddr")));
            let mut iface = Interface {
                name,
                mac,
                ipv4: Vec::new(),
                ipv6: Vec::new(),
            };
            if let Some(addrs) = i.get("ip-addresses").and_then(Value::as_array) {
                for a in addrs {
                    if let Some(ip) = pj::text(a.get("ip-address")) {
                        push_addr(&mut iface, &ip, pj::uint(a.get("prefix")));
                    }
                }
            } else {
                for key in ["inet", "inet6"] {
                    if let Some(s) = pj::text(i.get(key)) {
                        for a in s.split([' ', ',', ';']) {
                            push_addr(&mut iface, a, None);
                        }
                    }
                }
            }
            Some(iface)
        })
        .collect()
}

/// Normalises the interface list.
pub fn shape(target: &Target, data: &Value) -> Answer<VmIps> {
    let ifaces = interfaces(data);
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    let mut excluded = Vec::new();
    for i in &ifaces {
        for (list, out) in [(&i.ipv4, &mut v4), (&i.ipv6, &mut v6)] {
            for cidr in list {
                let bare = cidr.split('/').next().unwrap_or(cidr).to_owned();
                match excluded_reason(cidr) {
                    Some(reason) => excluded.push(Excluded {
                        address: bare,
                        reason,
                    }),
                    None if !out.contains(&bare) => out.push(bare),
                    None => {}
                }
            }
        }
    }
    let addresses: Vec<String> = v4.into_iter().chain(v6).collect();
    let summary = if addresses.is_empty() {
        format!(
            "{} on {} reports {} but no usable IP address ({} loopback/link-local left out).",
            target.label(),
            target.node,
            crate::format::count(ifaces.len(), "interface", "interfaces"),
            excluded.len()
        )
    } else {
        let shown: Vec<&str> = addresses.iter().take(5).map(String::as_str).collect();
        let more = if addresses.len() > 5 {
            format!(" and {} more", addresses.len() - 5)
        } else {
            String::new()
        };
        format!(
            "{} on {}: {}{more} (loopback and link-local left out).",
            target.label(),
            target.node,
            shown.join(", ")
        )
    };
    Answer {
        structured: VmIps {
            vmid: target.vmid,
            node: target.node.clone(),
            vm_type: target.vm_type,
            source: match target.vm_type {
                VmType::Qemu => IpSource::GuestAgent,
                VmType::Lxc => IpSource::Container,
            },
            interfaces: ifaces,
            addresses,
            excluded,
            resolved: target.resolved(),
        },
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::Output;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const AGENT: &str = "/nodes/pve1/qemu/101/agent/network-get-interfaces";

    fn agent_answer() -> Value {
        json!({"result":[
            {"name":"lo","hardware-address":"00:00:00:00:00:00","ip-addresses":[
                {"ip-address":"127.0.0.1","ip-address-type":"ipv4","prefix":8},
                {"ip-address":"::1","ip-address-type":"ipv6","prefix":128}],
             "statistics":{"rx-bytes":100,"tx-bytes":100}},
            {"name":"eth0","hardware-address":"bc:24:11:2a:3b:4c","ip-addresses":[
                {"ip-address":"192.168.1.50","ip-address-type":"ipv4","prefix":24},
                {"ip-address":"2001:db8::50","ip-address-type":"ipv6","prefix":64},
                {"ip-address":"fe80::be24:11ff:fe2a:3b4c","ip-address-type":"ipv6","prefix":64}]},
            {"name":"docker0","hardware-address":"02:42:ac:11:00:01"}
        ]})
    }

    fn call(pve: &mut FakePve, args: Value) -> Result<Output, ToolError> {
        TOOL.call(pve, &args.to_string())
    }

    #[test]
    fn agent_interfaces() {
        let mut pve = FakePve::default().with(AGENT, agent_answer());
        let out = call(
            &mut pve,
            json!({"vmid": 101, "node": "pve1", "vm_type": "qemu"}),
        )
        .unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["addresses"], json!(["192.168.1.50", "2001:db8::50"]));
        assert_eq!(s["interfaces"][1]["ipv4"], json!(["192.168.1.50/24"]));
        assert_eq!(s["interfaces"][1]["mac"], "bc:24:11:2a:3b:4c");
        assert_eq!(s["interfaces"][2]["ipv4"], json!([]));
        assert_eq!(s["excluded"].as_array().unwrap().len(), 3);
        assert_eq!(
            s["excluded"][2],
            json!({"address": "fe80::be24:11ff:fe2a:3b4c", "reason": "link-local"})
        );
        assert!(
            out.summary.contains("192.168.1.50, 2001:db8::50"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn container_interfaces() {
        let data = json!([
            {"name":"lo","hwaddr":"00:00:00:00:00:00","inet":"127.0.0.1/8","inet6":"::1/128"},
            {"name":"eth0","hwaddr":"bc:24:11:00:00:01","inet":"10.0.0.5/24","inet6":"fe80::1/64"}
        ]);
        let mut pve = FakePve::default().with("/nodes/pve1/lxc/200/interfaces", data);
        let out = call(
            &mut pve,
            json!({"vmid": 200, "node": "pve1", "vm_type": "lxc"}),
        )
        .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["addresses"], json!(["10.0.0.5"]));
        assert_eq!(out.structured["source"], "container");
        assert_eq!(
            out.structured["interfaces"][1]["ipv6"],
            json!(["fe80::1/64"])
        );
    }

    #[test]
    fn agent_errors_say_what_to_do() {
        let up = |m: &str| {
            ToolError::Upstream(format!(
                "Proxmox returned an error (HTTP 500 \"{m}\"). [GET /api2/json{AGENT}]"
            ))
        };
        for (msg, needle) in [
            ("No QEMU guest agent configured", "Enable the agent option"),
            (
                "QEMU guest agent is not running",
                "install the qemu-guest-agent package",
            ),
            ("VM 101 is not running", "is not running; start it first"),
        ] {
            let mut pve = FakePve::default().failing(AGENT, up(msg));
            let e = call(
                &mut pve,
                json!({"vmid": 101, "node": "pve1", "vm_type": "qemu"}),
            )
            .unwrap_err();
            assert!(matches!(e, ToolError::Upstream(_)));
            assert!(e.message().contains(needle), "{e}");
            assert!(e.message().contains(msg), "{e}");
        }
        let mut pve =
            FakePve::default().failing(AGENT, ToolError::Upstream("Permission denied".into()));
        let e = call(
            &mut pve,
            json!({"vmid": 101, "node": "pve1", "vm_type": "qemu"}),
        )
        .unwrap_err();
        assert_eq!(e.message(), "Permission denied");
    }

    #[test]
    fn the_agents_own_error_is_a_tool_error() {
        let refusal = json!({"result": {"error": {"class": "Unsupported",
            "desc": "this feature or command is not currently supported"}}});
        let mut pve = FakePve::default().with(AGENT, refusal);
        let e = call(
            &mut pve,
            json!({"vmid": 101, "node": "pve1", "vm_type": "qemu"}),
        )
        .unwrap_err();
        assert!(matches!(e, ToolError::Upstream(_)), "{e:?}");
        assert!(e.message().contains("\"Unsupported\""), "{e}");
        assert!(
            e.message()
                .contains("\"this feature or command is not currently supported\""),
            "{e}"
        );
    }

    #[test]
    fn bad_arguments_make_no_request() {
        let mut pve = FakePve::default();
        for args in [
            json!({}),
            json!({"vmid": "101"}),
            json!({"vmid": 101, "node": "a/b"}),
        ] {
            let e = call(&mut pve, args.clone()).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{args}: {e:?}");
        }
        assert!(pve.requests.is_empty());
    }
}
