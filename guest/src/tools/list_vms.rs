//! `pve_list_vms`: every VM and container in the cluster, filtered and
//! capped, from one `/cluster/resources?type=vm` request.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Annotations, Output, Tool};
use crate::api::Pve;
use crate::args::{Args, VmType};
use crate::error::ToolError;
use crate::format;
use crate::json;
use crate::paging::{self, Page, PageInfo};
use crate::resources::{self, Guest};
use crate::schema;

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 1000;
/// Statuses `/cluster/resources` reports for guests.
pub const STATUSES: [&str; 6] = [
    "running",
    "stopped",
    "paused",
    "suspended",
    "prelaunch",
    "unknown",
];
/// Longest `name` filter.
const NAME_MAX: usize = 128;
/// Longest `tag` filter.
const TAG_MAX: usize = 64;
/// JSON Schema pattern of a Proxmox tag (`pve-tag`, case-insensitive).
const TAG_PATTERN: &str = "^[A-Za-z0-9_][A-Za-z0-9_+.-]*$";

/// The tool.
pub static TOOL: Tool = Tool {
    name: "pve_list_vms",
    title: "List VMs and containers",
    description: "List QEMU VMs and LXC containers across the whole Proxmox VE cluster, with \
        each guest's vmid, name, type, node, status, CPU and memory use, uptime, tags, lock \
        and HA state. Use it first: to find a guest's vmid or node, to see what is running, \
        stopped or paused, or to find guests by node, type, status, name or tag (filters \
        combine with AND). Results are sorted by vmid and paged with limit (default 100, max 1000) \
        and offset (follow next_offset); \
        total and count_by_status cover every match. Only guests the API token may audit \
        (VM.Audit) are listed. For one guest's full live status use pve_get_vm_status.",
    input_schema,
    output_schema,
    annotations: Annotations::READ_ONLY,
    run,
};

fn input_schema() -> Value {
    schema::input(
        &[
            (
                "node",
                schema::node("Only guests on this node, e.g. \"pve1\" (case-insensitive)."),
            ),
            (
                "vm_type",
                schema::vm_type("Only QEMU VMs (\"qemu\") or only LXC containers (\"lxc\")."),
            ),
            (
                "status",
                schema::enumeration(
                    &STATUSES,
                    "Only guests in this state. A paused VM is \"paused\"; \"unknown\" usually \
                     means its node is offline.",
                ),
            ),
            (
                "name",
                json!({
                    "type": "string", "minLength": 1, "maxLength": NAME_MAX,
                    "description": "Only guests whose name contains this text (case-insensitive)."
                }),
            ),
            (
                "tag",
                json!({
                    "type": "string", "minLength": 1, "maxLength": TAG_MAX, "pattern": TAG_PATTERN,
                    "description": "Only guests carrying this tag (exact match, case-insensitive)."
                }),
            ),
        ]
        .into_iter()
        .chain(paging::input_properties(DEFAULT_LIMIT, MAX_LIMIT, "guests"))
        .collect::<Vec<_>>(),
        &[],
    )
}

fn output_schema() -> Value {
    let vm = schema::object(
        "One guest.",
        &[
            ("vmid", schema::typed("integer", "VM/CT id")),
            (
                "name",
                schema::nullable("string", "Guest name; null if it has none"),
            ),
            (
                "type",
                schema::vm_type("\"qemu\" (VM) or \"lxc\" (container)"),
            ),
            ("node", schema::string("Node the guest is on")),
            (
                "status",
                schema::string(
                    "running, stopped, paused, suspended, prelaunch or unknown (node offline, \
                     no data)",
                ),
            ),
            ("template", schema::boolean("true for a template")),
            (
                "cpu",
                schema::nullable(
                    "number",
                    "CPU use as a fraction of maxcpu (0.25 = 25%); null if unknown",
                ),
            ),
            (
                "maxcpu",
                schema::nullable("number", "CPUs allotted; null if unknown"),
            ),
            (
                "mem",
                schema::nullable("integer", "Memory in use, bytes; null if unknown"),
            ),
            (
                "maxmem",
                schema::nullable("integer", "Memory allotted, bytes; null if unknown"),
            ),
            (
                "uptime",
                schema::nullable("integer", "Seconds since start; null if unknown"),
            ),
            ("tags", schema::strings("Tags")),
            (
                "lock",
                schema::nullable(
                    "string",
                    "Config lock (backup, migrate, snapshot, ...); null if none",
                ),
            ),
            (
                "hastate",
                schema::nullable(
                    "string",
                    "HA state if HA-managed (started, stopped, ...); null if not",
                ),
            ),
        ],
    );
    schema::object(
        "",
        &[
            (
                "vms",
                json!({"type": "array", "items": vm, "description": "Matching guests by vmid, at most limit of them"}),
            ),
            (
                "count_by_status",
                json!({
                    "type": "object",
                    "additionalProperties": {"type": "integer", "minimum": 1},
                    "description": "Number of matching guests per status, over all matches (not only those returned)"
                }),
            ),
        ]
        .into_iter()
        .chain(paging::output_properties())
        .collect::<Vec<_>>(),
    )
}

/// The validated filters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Filters {
    node: Option<String>,
    vm_type: Option<VmType>,
    status: Option<String>,
    name: Option<String>,
    tag: Option<String>,
}

impl Filters {
    /// Reads and validates the filters; no request is made.
    pub fn from_args(args: &Args) -> Result<Self, ToolError> {
        let tag = args.string("tag", TAG_MAX)?;
        if let Some(t) = tag
            && !is_tag(t)
        {
            return Err(ToolError::field(
                "tag",
                format!(
                    "{} is not a valid tag (letters, digits and _ + . -, not starting with + . \
                     -), e.g. \"prod\"",
                    crate::error::quoted(t, 64)
                ),
            ));
        }
        Ok(Filters {
            node: args.node("node")?.map(str::to_owned),
            vm_type: args.vm_type()?,
            status: args.one_of("status", &STATUSES)?.map(str::to_owned),
            name: args.string("name", NAME_MAX)?.map(str::to_owned),
            tag: tag.map(str::to_owned),
        })
    }

    fn matches(&self, g: &Guest) -> bool {
        self.node
            .as_ref()
            .is_none_or(|n| n.eq_ignore_ascii_case(&g.node))
            && self.vm_type.is_none_or(|t| t == g.vm_type)
            && self.status.as_ref().is_none_or(|s| *s == g.status)
            && self.name.as_ref().is_none_or(|n| {
                g.name
                    .as_ref()
                    .is_some_and(|gn| gn.to_lowercase().contains(&n.to_lowercase()))
            })
            && self
                .tag
                .as_ref()
                .is_none_or(|t| g.tags.iter().any(|gt| gt.eq_ignore_ascii_case(t)))
    }

    /// `node=pve1, status=running` for the summary; empty without filters.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = &self.node {
            parts.push(format!("node={n}"));
        }
        if let Some(t) = self.vm_type {
            parts.push(format!("vm_type={}", t.as_str()));
        }
        if let Some(s) = &self.status {
            parts.push(format!("status={s}"));
        }
        if let Some(n) = &self.name {
            parts.push(format!("name~{}", crate::error::quoted(n, 40)));
        }
        if let Some(t) = &self.tag {
            parts.push(format!("tag={t}"));
        }
        parts.join(", ")
    }
}

/// Whether `t` is a valid Proxmox tag (the rule in [`TAG_PATTERN`]).
fn is_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_+.-".contains(c))
}

fn run(pve: &mut dyn Pve, args: &Args) -> Result<Output, ToolError> {
    let filters = Filters::from_args(args)?;
    let page = Page::from_args(args, DEFAULT_LIMIT, MAX_LIMIT)?;
    let guests = resources::fetch_guests(pve)?;
    Ok(shape(guests, &filters, page))
}

/// Filters, sorts, counts and pages the guests.
pub fn shape(guests: Vec<Guest>, filters: &Filters, page: Page) -> Output {
    let mut matched: Vec<Guest> = guests.into_iter().filter(|g| filters.matches(g)).collect();
    // Proxmox sorts by vmid as a string (1000 before 101); agents expect
    // numeric order. Node breaks ties so the order is total.
    matched.sort_by(|a, b| a.vmid.cmp(&b.vmid).then_with(|| a.node.cmp(&b.node)));
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for g in &matched {
        *counts.entry(g.status.clone()).or_default() += 1;
    }
    let (shown, info) = paging::paginate(matched, page);
    let vms: Vec<Value> = shown.iter().map(guest_json).collect();
    let mut structured = json!({"vms": vms, "count_by_status": counts});
    info.insert_into(&mut structured);
    Output {
        structured,
        summary: summary(filters, &counts, &info),
    }
}

fn guest_json(g: &Guest) -> Value {
    json!({
        "vmid": g.vmid,
        "name": g.name,
        "type": g.vm_type.as_str(),
        "node": g.node,
        "status": g.status,
        "template": g.template,
        "cpu": g.cpu.map(json::tidy),
        "maxcpu": g.maxcpu.map(json::tidy),
        "mem": g.mem,
        "maxmem": g.maxmem,
        "uptime": g.uptime,
        "tags": g.tags,
        "lock": g.lock,
        "hastate": g.hastate,
    })
}

fn summary(filters: &Filters, counts: &BTreeMap<String, usize>, info: &PageInfo) -> String {
    let total = info.total;
    let filtered = filters.describe();
    if total == 0 {
        return if filtered.is_empty() {
            "No guests visible. Either the cluster has none, or the API token lacks VM.Audit \
             (cluster/resources lists only guests the token may audit)."
                .to_owned()
        } else {
            format!("No guests match {filtered}.")
        };
    }
    // Largest groups first, ties by name, for a stable sentence.
    let mut by_count: Vec<(&String, &usize)> = counts.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    let breakdown = by_count
        .iter()
        .map(|(s, n)| format!("{n} {s}"))
        .collect::<Vec<_>>()
        .join(", ");
    let matching = if filtered.is_empty() {
        String::new()
    } else {
        format!(" matching {filtered}")
    };
    let head = format!(
        "{}{matching} ({breakdown})",
        format::count(total, "guest", "guests")
    );
    if info.returned == total {
        return format!("{head}; showing {total}.");
    }
    if info.returned == 0 {
        return format!("{head}; {}.", info.describe());
    }
    let first = info.offset + 1;
    let last = info.offset + info.returned as u64;
    let more = match info.next_offset {
        Some(n) => format!("pass offset {n} for more, "),
        None => String::new(),
    };
    let raise = if info.limit < MAX_LIMIT {
        format!("raise limit (max {MAX_LIMIT}), ")
    } else {
        String::new()
    };
    format!(
        "{head}; showing {first}-{last} of {total}; {more}{raise}or filter by node, vm_type, \
         status, name or tag."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::resources::fixtures::cluster_vms;

    fn call(args: &str) -> Result<Output, ToolError> {
        let mut pve = FakePve::default().with("/cluster/resources?type=vm", cluster_vms());
        TOOL.call(&mut pve, args)
    }

    fn vmids(out: &Output) -> Vec<u64> {
        out.structured["vms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["vmid"].as_u64().unwrap())
            .collect()
    }

    fn validate(out: &Output) {
        crate::tools::testing::assert_valid_output(&TOOL, out);
    }

    #[test]
    fn lists_everything_sorted_by_vmid() {
        let out = call("{}").unwrap();
        validate(&out);
        assert_eq!(vmids(&out), [100, 101, 102, 103, 104, 1000, 9000]);
        let s = &out.structured;
        assert_eq!(s["total"], 7);
        assert_eq!(s["returned"], 7);
        assert_eq!(s["omitted"], 0);
        assert_eq!(s["limit"], 100);
        assert_eq!(
            s["count_by_status"],
            json!({"running": 2, "stopped": 3, "paused": 1, "unknown": 1})
        );
        assert_eq!(
            out.summary,
            "7 guests (3 stopped, 2 running, 1 paused, 1 unknown); showing 7."
        );
    }

    #[test]
    fn entries_have_exact_fields() {
        let out = call("{}").unwrap();
        let first = &out.structured["vms"][0];
        assert_eq!(
            *first,
            json!({
                "vmid": 100, "name": "server1", "type": "qemu", "node": "node2", "status": "running",
                "template": false, "cpu": 0.0249, "maxcpu": 1, "mem": 842551296u64,
                "maxmem": 1073741824u64, "uptime": 874350, "tags": [], "lock": null, "hastate": null
            })
        );
        let offline = &out.structured["vms"][3];
        assert_eq!(offline["vmid"], 103);
        assert_eq!(offline["cpu"], Value::Null);
        assert_eq!(offline["mem"], Value::Null);
        assert_eq!(offline["template"], false);
        let paused = &out.structured["vms"][2];
        assert_eq!(paused["lock"], "backup");
        assert_eq!(paused["status"], "paused");
    }

    #[test]
    fn filters_combine_with_and() {
        let out = call(r#"{"node": "NODE1"}"#).unwrap();
        assert_eq!(vmids(&out), [101, 102, 104, 1000]);
        assert!(
            out.summary.starts_with("4 guests matching node=NODE1 ("),
            "{}",
            out.summary
        );
        let out = call(r#"{"vm_type": "lxc"}"#).unwrap();
        assert_eq!(vmids(&out), [101, 103, 104]);
        let out = call(r#"{"status": "paused"}"#).unwrap();
        assert_eq!(vmids(&out), [102]);
        let out = call(r#"{"name": "CT-"}"#).unwrap();
        assert_eq!(vmids(&out), [101, 104]);
        let out = call(r#"{"tag": "prod"}"#).unwrap();
        assert_eq!(vmids(&out), [101, 102, 104, 1000]);
        let out =
            call(r#"{"tag": "PROD", "vm_type": "lxc", "node": "node1", "status": "stopped"}"#)
                .unwrap();
        assert_eq!(vmids(&out), [104]);
        validate(&out);
        let out = call(r#"{"tag": "pro"}"#).unwrap();
        assert!(vmids(&out).is_empty());
        assert_eq!(out.summary, "No guests match tag=pro.");
        assert_eq!(out.structured["count_by_status"], json!({}));
        validate(&out);
    }

    #[test]
    fn limit_truncates_but_counts_cover_all() {
        let out = call(r#"{"limit": 2}"#).unwrap();
        validate(&out);
        assert_eq!(vmids(&out), [100, 101]);
        assert_eq!(out.structured["total"], 7);
        assert_eq!(out.structured["returned"], 2);
        assert_eq!(out.structured["omitted"], 5);
        assert_eq!(out.structured["count_by_status"]["stopped"], 3);
        assert_eq!(
            out.summary,
            "7 guests (3 stopped, 2 running, 1 paused, 1 unknown); showing 1-2 of 7; pass offset 2 \
             for more, raise limit (max 1000), or filter by node, vm_type, status, name or tag."
        );
        assert_eq!(out.structured["next_offset"], 2);
        let page2 = call(r#"{"limit": 2, "offset": 2}"#).unwrap();
        validate(&page2);
        assert_eq!(vmids(&page2), [102, 103]);
        assert_eq!(page2.structured["offset"], 2);
        assert_eq!(page2.structured["next_offset"], 4);
        assert_eq!(
            page2.structured["count_by_status"],
            out.structured["count_by_status"]
        );
        let past = call(r#"{"offset": 7}"#).unwrap();
        validate(&past);
        assert!(vmids(&past).is_empty());
        assert!(
            past.summary.contains("none at offset 7"),
            "{}",
            past.summary
        );
    }

    #[test]
    fn large_clusters_at_max_limit() {
        let guests: Vec<Value> = (100..5100)
            .map(|id| json!({"id": format!("qemu/{id}"), "vmid": id, "type": "qemu", "node": "pve1", "status": "running", "template": 0}))
            .collect();
        let parsed = resources::parse_guests(&Value::Array(guests)).unwrap();
        let out = shape(
            parsed,
            &Filters::default(),
            Page {
                limit: 1000,
                offset: 0,
            },
        );
        validate(&out);
        assert_eq!(out.structured["returned"], 1000);
        assert_eq!(out.structured["omitted"], 4000);
        assert_eq!(
            out.summary,
            "5000 guests (5000 running); showing 1-1000 of 5000; pass offset 1000 for more, or \
             filter by node, vm_type, status, name or tag."
        );
    }

    #[test]
    fn empty_cluster() {
        let mut pve = FakePve::default().with("/cluster/resources?type=vm", json!([]));
        let out = TOOL.call(&mut pve, "{}").unwrap();
        validate(&out);
        assert!(
            out.summary.starts_with("No guests visible"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn bad_filters_are_rejected_before_any_request() {
        let mut pve = FakePve::default();
        for (args, start) in [
            (
                r#"{"node": "pve 1"}"#,
                "node: \"pve 1\" is not a valid node name",
            ),
            (
                r#"{"vm_type": "vm"}"#,
                "vm_type: must be \"qemu\" or \"lxc\" (got \"vm\")",
            ),
            (
                r#"{"status": "up"}"#,
                "status: must be one of \"running\", \"stopped\"",
            ),
            (r#"{"name": ""}"#, "name: must not be empty"),
            (r#"{"tag": "a;b"}"#, "tag: \"a;b\" is not a valid tag"),
            (r#"{"tag": "-x"}"#, "tag: \"-x\" is not a valid tag"),
            (
                r#"{"limit": 0}"#,
                "limit: must be an integer between 1 and 1000 (got 0)",
            ),
            (
                r#"{"limit": 1001}"#,
                "limit: must be an integer between 1 and 1000 (got 1001)",
            ),
            (
                r#"{"limit": "10"}"#,
                "limit: must be an integer, e.g. 100, not a string",
            ),
            (
                r#"{"foo": 1}"#,
                "foo: unknown argument; valid arguments are cluster, limit, name, node, offset, status, tag, vm_type",
            ),
        ] {
            let e = TOOL.call(&mut pve, args).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{args}: {e:?}");
            assert!(e.message().starts_with(start), "{args}: {e}");
        }
        assert!(pve.requests.is_empty());
    }

    /// The input schema and the Rust validation accept the same values.
    #[test]
    fn input_schema_agrees_with_validation() {
        let schema = input_schema();
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        for args in [
            json!({}),
            json!({"node": "pve1", "vm_type": "qemu", "status": "running", "name": "web", "tag": "prod", "limit": 1}),
            json!({"limit": 1000}),
            json!({"tag": "a+b.c_d-e"}),
            json!({"node": "pve 1"}),
            json!({"node": "-pve"}),
            json!({"vm_type": "vm"}),
            json!({"status": "up"}),
            json!({"name": ""}),
            json!({"tag": "a;b"}),
            json!({"tag": ".x"}),
            json!({"limit": 0}),
            json!({"limit": 1001}),
            json!({"limit": 2.5}),
            json!({"foo": 1}),
        ] {
            let mut pve = FakePve::default().with("/cluster/resources?type=vm", json!([]));
            let ours = TOOL.call(&mut pve, &args.to_string()).is_ok();
            assert_eq!(validator.is_valid(&args), ours, "{args}");
        }
    }
}
