//! `pve_get_vm_status`: one guest's live status from
//! `/nodes/{node}/{qemu|lxc}/{vmid}/status/current`, with node and type
//! looked up when the caller does not know them.

use serde::Serialize;
use serde_json::Value;

use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::VmType;
use crate::error::ToolError;
use crate::format;
use crate::json::{self as pj, Tidy};
use crate::path::ApiPath;
use crate::resolve::{Resolved, Target, guest_input};

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_vm_status",
    title: "Get VM/container status",
    description: "One guest's live state, uptime, CPU, memory, disk and network counters, HA state \
        and lock. For many guests use pve_list_vms.",
    reads: ["/nodes/{node}/{vm_type}/{vmid}/status/current", "/cluster/resources?type=vm"],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
    ],
    run: run,
};

guest_input! {
    /// The guest to ask about.
    pub struct Input {}
}

/// One guest's live status.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct VmStatus {
    /// VM/CT id
    pub vmid: u32,
    /// Guest name; null if it has none
    pub name: Option<String>,
    /// Node the guest is on
    pub node: String,
    /// "qemu" (VM) or "lxc" (container)
    pub vm_type: VmType,
    /// Proxmox's status: running or stopped. A paused or suspended VM is still "running" here;
    /// see qmpstatus
    pub status: String,
    /// QEMU's own state (running, paused, suspended, prelaunch, inmigrate, postmigrate, ...);
    /// null for containers
    pub qmpstatus: Option<String>,
    /// Seconds since start; null if unknown
    pub uptime: Option<u64>,
    /// CPU use as a fraction of cpus (0.25 = 25%); null if unknown
    pub cpu: Option<Tidy>,
    /// CPUs allotted; null if unknown
    pub cpus: Option<Tidy>,
    /// Memory in use, bytes; null if unknown
    pub mem: Option<u64>,
    /// Memory allotted, bytes; null if unknown
    pub maxmem: Option<u64>,
    /// Disk space used, bytes (0 for most VMs: Proxmox cannot see inside); null if unknown
    pub disk: Option<u64>,
    /// Root disk size, bytes; null if unknown
    pub maxdisk: Option<u64>,
    /// Bytes received since start; null if unknown
    pub netin: Option<u64>,
    /// Bytes sent since start; null if unknown
    pub netout: Option<u64>,
    /// High availability
    pub ha: Ha,
    /// Config lock (backup, migrate, snapshot, suspended, ...); null if none
    pub lock: Option<String>,
    /// true if the QEMU guest agent is enabled in the config; false for containers
    pub agent: bool,
    /// Host process id; null when stopped
    pub pid: Option<u64>,
    /// Tags
    pub tags: Vec<String>,
    /// QEMU version the VM runs; null when stopped or a container
    #[serde(rename = "running-qemu")]
    pub running_qemu: Option<String>,
    /// true for a template
    pub template: bool,
    /// Which of node and vm_type pve-mcp looked up because the call omitted them.
    pub resolved: Resolved,
}

/// High availability
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Ha {
    /// true if the HA manager manages this guest
    pub managed: bool,
    /// HA state (started, stopped, ...); null if not managed
    pub state: Option<String>,
    /// HA group; null if none
    pub group: Option<String>,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<VmStatus>, ToolError> {
    let target = input.wanted().resolve(pve)?;
    let path = ApiPath::new("nodes")
        .seg(&target.node)
        .lit(target.vm_type.as_str())
        .id(target.vmid)
        .lit("status")
        .lit("current");
    let data = pve.get(&path)?;
    shape(&target, &data).map_err(|problem| {
        ToolError::Upstream(format!(
            "Proxmox's status answer for {} is not usable: {problem}. [GET /api2/json{path}]",
            target.label()
        ))
    })
}

/// Normalises a `status/current` answer.
pub fn shape(target: &Target, data: &Value) -> Result<Answer<VmStatus>, String> {
    let Value::Object(d) = data else {
        return Err("it is not a JSON object".to_owned());
    };
    let qemu = target.vm_type == VmType::Qemu;
    let ha = d.get("ha").and_then(Value::as_object);
    let ha_field = |k: &str| ha.and_then(|h| pj::text(h.get(k)));
    let structured = VmStatus {
        vmid: target.vmid,
        name: pj::text(d.get("name")),
        node: target.node.clone(),
        vm_type: target.vm_type,
        status: pj::text(d.get("status")).unwrap_or_else(|| "unknown".to_owned()),
        qmpstatus: if qemu {
            pj::text(d.get("qmpstatus"))
        } else {
            None
        },
        uptime: pj::uint(d.get("uptime")),
        cpu: pj::fraction(d.get("cpu")).map(Tidy),
        cpus: pj::num(d.get("cpus")).map(Tidy),
        mem: pj::uint(d.get("mem")),
        maxmem: pj::uint(d.get("maxmem")),
        disk: pj::uint(d.get("disk")),
        maxdisk: pj::uint(d.get("maxdisk")),
        netin: pj::uint(d.get("netin")),
        netout: pj::uint(d.get("netout")),
        ha: Ha {
            managed: ha.is_some_and(|h| pj::flag(h.get("managed"))),
            state: ha_field("state"),
            group: ha_field("group"),
        },
        lock: pj::text(d.get("lock")),
        agent: qemu && pj::flag(d.get("agent")),
        pid: pj::uint(d.get("pid")),
        tags: pj::tags(d.get("tags")),
        running_qemu: if qemu {
            pj::text(d.get("running-qemu"))
        } else {
            None
        },
        template: pj::flag(d.get("template")),
        resolved: target.resolved(),
    };
    let summary = summary(target, &structured);
    Ok(Answer {
        structured,
        summary,
    })
}

/// "VM 101 (web-1) on pve1 is running, up 3d 4h, CPU 2.3% of 4 CPUs, mem
/// 1.2 GiB / 4 GiB." plus lock, HA and lookup notes.
fn summary(target: &Target, s: &VmStatus) -> String {
    let name = s
        .name
        .as_ref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    let status = s.status.as_str();
    let template = s.template;
    let mut out = format!("{}{name} on {}", target.label(), target.node);

    // Proxmox says "running" for a paused VM; QEMU's state is the truth.
    let qmp = s
        .qmpstatus
        .as_deref()
        .filter(|q| status == "running" && *q != "running");
    if template {
        out.push_str(" is a template");
    } else if let Some(q) = qmp {
        out.push_str(&format!(" is {q} (PVE status running, QEMU status {q})"));
    } else {
        out.push_str(&format!(" is {status}"));
    }

    let cpus = s.cpus.map(|c| {
        let c = format::one_decimal(c.0);
        format!("{c} CPU{}", if c == "1" { "" } else { "s" })
    });
    let mut details = Vec::new();
    if status == "running" && !template {
        if let Some(up) = s.uptime {
            details.push(format!("up {}", format::duration(up)));
        }
        match (s.cpu, &cpus) {
            (Some(cpu), Some(cpus)) => {
                details.push(format!("CPU {} of {cpus}", format::percent(cpu.0)))
            }
            (None, Some(cpus)) => details.push(cpus.clone()),
            _ => {}
        }
        match (s.mem, s.maxmem) {
            (Some(m), Some(max)) => {
                details.push(format!("mem {} / {}", format::bytes(m), format::bytes(max)))
            }
            (None, Some(max)) => details.push(format!("{} memory", format::bytes(max))),
            _ => {}
        }
        if !details.is_empty() {
            out.push_str(", ");
            out.push_str(&details.join(", "));
        }
    } else {
        if let Some(cpus) = cpus {
            details.push(cpus);
        }
        if let Some(max) = s.maxmem {
            details.push(format!("{} memory", format::bytes(max)));
        }
        if !details.is_empty() {
            out.push_str(&format!(" ({})", details.join(", ")));
        }
    }
    out.push('.');

    if let Some(lock) = &s.lock {
        out.push_str(&format!(" Locked ({lock})."));
    }
    if s.ha.managed {
        let mut detail = Vec::new();
        if let Some(state) = &s.ha.state {
            detail.push(format!("state {state}"));
        }
        if let Some(group) = &s.ha.group {
            detail.push(format!("group {group}"));
        }
        if detail.is_empty() {
            out.push_str(" HA-managed.");
        } else {
            out.push_str(&format!(" HA-managed ({}).", detail.join(", ")));
        }
    }
    match (target.node_resolved, target.vm_type_resolved) {
        (true, true) => out.push_str(" Node and type looked up from cluster resources."),
        (true, false) => out.push_str(" Node looked up from cluster resources."),
        (false, true) => out.push_str(" Type looked up from cluster resources."),
        (false, false) => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::resources::fixtures::cluster_vms;
    use crate::tool::Output;
    use serde_json::json;

    /// The real PVE 8.0 capture (go-proxmox `pve8x`), blockstat cut; tap
    /// name restored.
    fn running_qemu() -> Value {
        json!({"pid":1563102,"shares":1000,"agent":1,"diskwrite":1515457024u64,"cpus":8,"ha":{"managed":0},
            "maxmem":2097152000u64,"blockstat":{"scsi0":{"rd_bytes":649448960,"wr_bytes":1515457024u64,"account_failed":true,"timed_stats":[]}},
            "uptime":170815,"cpu":0.0112815646165076,"running-machine":"pc-i440fx-8.0+pve0","balloon":2097152000u64,
            "qmpstatus":"running","status":"running","maxdisk":18467520512u64,"diskread":649793308,"freemem":887222272,
            "ballooninfo":{"actual":2097152000u64,"max_mem":2097152000u64,"free_mem":887222272,"total_mem":2015014912u64,"last_update":1693252591},
            "vmid":101,"balloon_min":2097152000u64,"mem":1127792640,
            "proxmox-support":{"pbs-dirty-bitmap":true,"backup-max-workers":true,"pbs-library-version":"1.4.0 (UNKNOWN)"},
            "running-qemu":"8.0.2","name":"matt","netout":14139344,"netin":547369168,
            "nics":{"tap101i0":{"netout":14139344,"netin":547369168}},"disk":0})
    }

    fn stopped_qemu() -> Value {
        json!({"status":"stopped","qmpstatus":"stopped","name":"web-2","vmid":1000,"cpus":8,"maxmem":17179869184u64,
            "maxdisk":34359738368u64,"disk":0,"uptime":0,"cpu":0,"mem":0,"netin":0,"netout":0,"diskread":0,
            "diskwrite":0,"ha":{"managed":0},"tags":"prod;db"})
    }

    fn paused_locked_qemu() -> Value {
        json!({"status":"running","qmpstatus":"paused","name":"paused-vm","vmid":102,"cpus":4,"cpu":0,
            "mem":2147483648u64,"maxmem":4294967296u64,"maxdisk":34359738368u64,"disk":0,"uptime":500,"netin":10,"netout":20,
            "pid":4242,"running-qemu":"9.0.2","agent":"1","lock":"backup","ha":{"managed":0},"tags":"prod"})
    }

    fn template_qemu() -> Value {
        json!({"status":"stopped","qmpstatus":"stopped","name":"tmpl-debian","vmid":9000,"cpus":2,"maxmem":2147483648u64,
            "maxdisk":10737418240u64,"disk":0,"uptime":0,"cpu":0,"mem":0,"netin":0,"netout":0,"template":1,"ha":{"managed":0}})
    }

    /// The real go-proxmox `pve7x` container example (a stopped template).
    fn lxc_template() -> Value {
        json!({"cpu":0,"cpus":2,"disk":0,"diskread":0,"diskwrite":0,"ha":{"managed":0},"maxdisk":8589934592u64,
            "maxmem":536870912,"maxswap":536870912,"mem":0,"name":"test-container","netin":0,"netout":0,"status":"stopped",
            "swap":0,"template":1,"tags":"tag1;tag2","type":"lxc","uptime":0,"vmid":101})
    }

    fn lxc_ha_running() -> Value {
        json!({"cpu":0.015,"cpus":2,"disk":1073741824,"diskread":0,"diskwrite":0,
            "ha":{"managed":1,"state":"started","group":"grp1"},"maxdisk":8589934592u64,"maxmem":536870912,"maxswap":536870912,
            "mem":104857600,"name":"ct-web","netin":1,"netout":2,"status":"running","pid":9999,"swap":0,"tags":"web,Prod",
            "type":"lxc","uptime":3600,"vmid":101,"agent":1})
    }

    fn validate(out: &Output) {
        crate::tool::testing::assert_valid_output(&TOOL, out);
    }

    fn with_resources() -> FakePve {
        FakePve::default().with("/cluster/resources?type=vm", cluster_vms())
    }

    #[test]
    fn running_vm_with_node_and_type_given() {
        let mut pve =
            FakePve::default().with("/nodes/node2/qemu/101/status/current", running_qemu());
        let out = TOOL
            .call(
                &mut pve,
                r#"{"vmid": 101, "node": "node2", "vm_type": "qemu"}"#,
            )
            .unwrap();
        validate(&out);
        assert_eq!(pve.requests, ["/nodes/node2/qemu/101/status/current"]);
        assert_eq!(
            out.structured,
            json!({
                "vmid": 101, "name": "matt", "node": "node2", "vm_type": "qemu", "status": "running",
                "qmpstatus": "running", "uptime": 170815, "cpu": 0.0113, "cpus": 8,
                "mem": 1127792640u64, "maxmem": 2097152000u64, "disk": 0, "maxdisk": 18467520512u64,
                "netin": 547369168u64, "netout": 14139344u64,
                "ha": {"managed": false, "state": null, "group": null},
                "lock": null, "agent": true, "pid": 1563102, "tags": [], "running-qemu": "8.0.2",
                "template": false,
                "resolved": {"node": false, "vm_type": false, "source": null}
            })
        );
        assert_eq!(
            out.summary,
            "VM 101 (matt) on node2 is running, up 1d 23h, CPU 1.1% of 8 CPUs, mem 1.1 GiB / 2 GiB."
        );
    }

    #[test]
    fn stopped_vm_resolved_from_cluster_resources() {
        let mut pve =
            with_resources().with("/nodes/node1/qemu/1000/status/current", stopped_qemu());
        let out = TOOL.call(&mut pve, r#"{"vmid": 1000}"#).unwrap();
        validate(&out);
        assert_eq!(
            pve.requests,
            [
                "/cluster/resources?type=vm",
                "/nodes/node1/qemu/1000/status/current"
            ]
        );
        let s = &out.structured;
        assert_eq!(s["status"], "stopped");
        assert_eq!(s["pid"], Value::Null);
        assert_eq!(s["running-qemu"], Value::Null);
        assert_eq!(s["agent"], false);
        assert_eq!(s["tags"], json!(["prod", "db"]));
        assert_eq!(
            s["resolved"],
            json!({"node": true, "vm_type": true, "source": "cluster/resources"})
        );
        assert_eq!(
            out.summary,
            "VM 1000 (web-2) on node1 is stopped (8 CPUs, 16 GiB memory). Node and type looked \
             up from cluster resources."
        );
    }

    #[test]
    fn paused_and_locked_vm() {
        let mut pve =
            with_resources().with("/nodes/node1/qemu/102/status/current", paused_locked_qemu());
        let out = TOOL
            .call(&mut pve, r#"{"vmid": 102, "node": "node1"}"#)
            .unwrap();
        validate(&out);
        let s = &out.structured;
        assert_eq!(s["status"], "running");
        assert_eq!(s["qmpstatus"], "paused");
        assert_eq!(s["lock"], "backup");
        assert_eq!(s["agent"], true);
        assert_eq!(s["cpu"], 0);
        assert_eq!(
            s["resolved"],
            json!({"node": false, "vm_type": true, "source": "cluster/resources"})
        );
        assert_eq!(
            out.summary,
            "VM 102 (paused-vm) on node1 is paused (PVE status running, QEMU status paused), up \
             8m 20s, CPU 0% of 4 CPUs, mem 2 GiB / 4 GiB. Locked (backup). Type looked up from \
             cluster resources."
        );
    }

    #[test]
    fn template_vm() {
        let mut pve =
            FakePve::default().with("/nodes/node2/qemu/9000/status/current", template_qemu());
        let out = TOOL
            .call(
                &mut pve,
                r#"{"vmid": 9000, "node": "node2", "vm_type": "qemu"}"#,
            )
            .unwrap();
        validate(&out);
        assert_eq!(out.structured["template"], true);
        assert_eq!(
            out.summary,
            "VM 9000 (tmpl-debian) on node2 is a template (2 CPUs, 2 GiB memory)."
        );
    }

    #[test]
    fn lxc_template_and_ha_container() {
        let mut pve =
            FakePve::default().with("/nodes/node1/lxc/101/status/current", lxc_template());
        let out = TOOL
            .call(
                &mut pve,
                r#"{"vmid": 101, "node": "node1", "vm_type": "lxc"}"#,
            )
            .unwrap();
        validate(&out);
        let s = &out.structured;
        assert_eq!(s["vm_type"], "lxc");
        assert_eq!(s["qmpstatus"], Value::Null);
        assert_eq!(s["template"], true);
        assert_eq!(s["tags"], json!(["tag1", "tag2"]));
        assert_eq!(s["agent"], false);

        let mut pve =
            with_resources().with("/nodes/node1/lxc/101/status/current", lxc_ha_running());
        let out = TOOL.call(&mut pve, r#"{"vmid": 101}"#).unwrap();
        validate(&out);
        let s = &out.structured;
        assert_eq!(
            s["ha"],
            json!({"managed": true, "state": "started", "group": "grp1"})
        );
        assert_eq!(s["pid"], 9999);
        // Containers have no guest agent, whatever the answer says.
        assert_eq!(s["agent"], false);
        assert_eq!(
            out.summary,
            "CT 101 (ct-web) on node1 is running, up 1h 0m, CPU 1.5% of 2 CPUs, mem 100 MiB / \
             512 MiB. HA-managed (state started, group grp1). Node and type looked up from \
             cluster resources."
        );
    }

    #[test]
    fn sparse_and_odd_answers_still_shape() {
        let target = Target {
            vmid: 555,
            node: "pve1".into(),
            vm_type: VmType::Qemu,
            node_resolved: false,
            vm_type_resolved: false,
        };
        let out = shape(&target, &json!({})).unwrap().into_output().unwrap();
        validate(&out);
        assert_eq!(out.structured["status"], "unknown");
        assert_eq!(out.summary, "VM 555 on pve1 is unknown.");
        let out = shape(
            &target,
            &json!({"status": "running", "cpu": "0.5", "cpus": "2", "mem": "1024", "ha": "weird", "name": 1234}),
        )
        .unwrap()
        .into_output()
        .unwrap();
        validate(&out);
        assert_eq!(out.structured["name"], "1234");
        assert_eq!(out.structured["cpu"], 0.5);
        assert!(shape(&target, &json!([1])).is_err());
    }

    #[test]
    fn not_an_object_is_upstream() {
        let mut pve = FakePve::default().with("/nodes/pve1/qemu/100/status/current", json!("nope"));
        let e = TOOL
            .call(
                &mut pve,
                r#"{"vmid": 100, "node": "pve1", "vm_type": "qemu"}"#,
            )
            .unwrap_err();
        assert!(matches!(e, ToolError::Upstream(_)), "{e:?}");
        assert!(e.message().contains("VM 100"), "{e}");
    }

    #[test]
    fn unknown_vmid_and_disagreeing_node() {
        let e = TOOL
            .call(&mut with_resources(), r#"{"vmid": 123}"#)
            .unwrap_err();
        assert_eq!(
            e.message(),
            "VM 123 not found in cluster resources: check the vmid with pve_list_vms (the token \
             may also lack VM.Audit on /vms/123)"
        );
        let e = TOOL
            .call(&mut with_resources(), r#"{"vmid": 100, "node": "node1"}"#)
            .unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments(_)));
        assert!(
            e.message().starts_with("node: VM 100 is on node \"node2\""),
            "{e}"
        );
    }

    #[test]
    fn upstream_errors_pass_through() {
        let mut pve = FakePve::default().failing(
            "/nodes/pve1/qemu/100/status/current",
            ToolError::Upstream("No such VM or container on that node".into()),
        );
        let e = TOOL
            .call(
                &mut pve,
                r#"{"vmid": 100, "node": "pve1", "vm_type": "qemu"}"#,
            )
            .unwrap_err();
        assert_eq!(
            e,
            ToolError::Upstream("No such VM or container on that node".into())
        );
    }

    #[test]
    fn validation_happens_before_any_request() {
        let mut pve = FakePve::default();
        for (args, want) in [
            (
                r#"{"vmid": 99}"#,
                "vmid: must be an integer between 100 and 999999999 (got 99)",
            ),
            (
                r#"{"vmid": 1000000000}"#,
                "vmid: must be an integer between 100 and 999999999 (got 1000000000)",
            ),
            (
                r#"{"vmid": "101"}"#,
                "vmid: must be an integer, e.g. 101, not a string (\"101\")",
            ),
            (r#"{}"#, "vmid: missing required argument"),
            (
                r#"{"vmid": 101, "node": "pve 1"}"#,
                "node: \"pve 1\" is not a valid node name (letters, digits and '-', e.g. \"pve1\")",
            ),
            (
                r#"{"vmid": 101, "vm_type": "vm"}"#,
                "vm_type: must be \"qemu\" or \"lxc\" (got \"vm\")",
            ),
            (
                r#"{"vmid": 101, "foo": 1}"#,
                "foo: unknown argument; valid arguments are cluster, node, vm_type, vmid",
            ),
        ] {
            let e = TOOL.call(&mut pve, args).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{args}: {e:?}");
            assert!(e.message().starts_with(want), "{args}: {e}");
        }
        assert!(pve.requests.is_empty());
    }

    #[test]
    fn input_schema_agrees_with_validation() {
        let schema = (TOOL.derived)().input;
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        for args in [
            json!({"vmid": 100, "node": "pve1", "vm_type": "qemu"}),
            json!({"vmid": 999999999, "node": "a", "vm_type": "lxc"}),
            json!({"vmid": 99, "node": "pve1", "vm_type": "qemu"}),
            json!({"vmid": 1000000000, "node": "pve1", "vm_type": "qemu"}),
            json!({"vmid": "101", "node": "pve1", "vm_type": "qemu"}),
            json!({"node": "pve1", "vm_type": "qemu"}),
            json!({"vmid": 101, "node": "pve-", "vm_type": "qemu"}),
            json!({"vmid": 101, "node": "pve1", "vm_type": "vm"}),
            json!({"vmid": 101, "node": "pve1", "vm_type": "qemu", "x": 1}),
        ] {
            let mut pve = FakePve::default()
                .with("/nodes/pve1/qemu/100/status/current", json!({}))
                .with("/nodes/a/lxc/999999999/status/current", json!({}));
            let ours = TOOL.call(&mut pve, &args.to_string()).is_ok();
            assert_eq!(validator.is_valid(&args), ours, "{args}");
        }
    }
}
