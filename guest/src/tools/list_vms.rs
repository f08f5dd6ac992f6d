//! `pve_list_vms`: every VM and container in the cluster, filtered and
//! capped, from one `/cluster/resources?type=vm` request.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::{self, NodeName, Text, VmType, choice};
use crate::error::ToolError;
use crate::error::quoted;
use crate::format;
use crate::json::Tidy;
use crate::paging::{self, Counts, Limit, Offset, Page, PageInfo};
use crate::resources::{self, Guest};

/// Default for `limit`.
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest `limit`.
pub const MAX_LIMIT: u64 = 1000;
/// Longest `name` filter.
const NAME_MAX: usize = 128;
/// Longest `tag` filter.
const TAG_MAX: usize = 64;
/// JSON Schema pattern of a Proxmox tag (`pve-tag`, case-insensitive).
pub const TAG_PATTERN: &str = "^[A-Za-z0-9_][A-Za-z0-9_+.-]*$";

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_list_vms",
    title: "List VMs and containers",
    description: "All VMs and containers with vmid, name, node, status, CPU, memory and tags. Use \
        it first, to find a guest's vmid or node.",
    reads: ["/cluster/resources?type=vm"],
    privileges: [
        "/vms": "VM.Audit",
    ],
    run: run,
};

/// The filters and page; filters combine with AND.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Filters {
    /// Only on this node
    node: Option<NodeName>,
    /// Only VMs or only CTs
    vm_type: Option<VmType>,
    /// Only in this state
    status: Option<Status>,
    /// Name contains (any case)
    name: Option<Text<NAME_MAX>>,
    /// Only with this tag
    tag: Option<Tag>,
    #[serde(default)]
    limit: Limit<DEFAULT_LIMIT, MAX_LIMIT>,
    #[serde(default)]
    offset: Offset,
}

choice! {
    /// The statuses `/cluster/resources` reports for guests.
    pub enum Status {
        /// Running.
        Running = "running",
        /// Stopped.
        Stopped = "stopped",
        /// A paused VM.
        Paused = "paused",
        /// A VM suspended to disk.
        Suspended = "suspended",
        /// A VM started with its CPUs not yet running.
        Prelaunch = "prelaunch",
        /// No data, usually because its node is offline.
        Unknown = "unknown",
    }
}

/// A Proxmox tag (format `pve-tag`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag(String);

impl Tag {
    fn from_json(v: &Value) -> Result<Self, String> {
        let t = arg::string(v, TAG_MAX)?;
        if !is_tag(t) {
            return Err(format!(
                "{} is not a valid tag (letters, digits and _ + . -, not starting with + . -), \
                 e.g. \"prod\"",
                quoted(t, 64)
            ));
        }
        Ok(Tag(t.to_owned()))
    }
}
arg::deserialize_from_json!(Tag);
arg::fixed_schema!(
    Tag,
    serde_json::json!({"type": "string", "minLength": 1, "maxLength": TAG_MAX, "pattern": TAG_PATTERN})
);

/// The guests that match, one page of them.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct VmList {
    /// Matching guests by vmid, at most limit of them
    pub vms: Vec<VmEntry>,
    /// Number of matching guests per status, over all matches (not only those returned)
    pub count_by_status: Counts,
    /// Where this page is in the list.
    #[serde(flatten)]
    pub page: PageInfo,
}

/// One guest.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct VmEntry {
    /// VM/CT id
    pub vmid: u64,
    /// Guest name; null if it has none
    pub name: Option<String>,
    /// "qemu" (VM) or "lxc" (container)
    #[serde(rename = "type")]
    pub vm_type: VmType,
    /// Node the guest is on
    pub node: String,
    /// running, stopped, paused, suspended, prelaunch or unknown (node offline, no data)
    pub status: String,
    /// true for a template
    pub template: bool,
    /// CPU use as a fraction of maxcpu (0.25 = 25%); null if unknown
    pub cpu: Option<Tidy>,
    /// CPUs allotted; null if unknown
    pub maxcpu: Option<Tidy>,
    /// Memory in use, bytes; null if unknown
    pub mem: Option<u64>,
    /// Memory allotted, bytes; null if unknown
    pub maxmem: Option<u64>,
    /// Seconds since start; null if unknown
    pub uptime: Option<u64>,
    /// Tags
    pub tags: Vec<String>,
    /// Config lock (backup, migrate, snapshot, ...); null if none
    pub lock: Option<String>,
    /// HA state if HA-managed (started, stopped, ...); null if not
    pub hastate: Option<String>,
}

impl From<Guest> for VmEntry {
    fn from(g: Guest) -> Self {
        VmEntry {
            vmid: g.vmid,
            name: g.name,
            vm_type: g.vm_type,
            node: g.node,
            status: g.status,
            template: g.template,
            cpu: g.cpu.map(Tidy),
            maxcpu: g.maxcpu.map(Tidy),
            mem: g.mem,
            maxmem: g.maxmem,
            uptime: g.uptime,
            tags: g.tags,
            lock: g.lock,
            hastate: g.hastate,
        }
    }
}

impl Filters {
    fn matches(&self, g: &Guest) -> bool {
        self.node
            .as_ref()
            .is_none_or(|n| n.as_str().eq_ignore_ascii_case(&g.node))
            && self.vm_type.is_none_or(|t| t == g.vm_type)
            && self.status.is_none_or(|s| s.as_str() == g.status)
            && self.name.as_ref().is_none_or(|n| {
                g.name
                    .as_ref()
                    .is_some_and(|gn| gn.to_lowercase().contains(&n.as_str().to_lowercase()))
            })
            && self
                .tag
                .as_ref()
                .is_none_or(|t| g.tags.iter().any(|gt| gt.eq_ignore_ascii_case(&t.0)))
    }

    /// `node=pve1, status=running` for the summary; empty without filters.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = &self.node {
            parts.push(format!("node={}", n.as_str()));
        }
        if let Some(t) = self.vm_type {
            parts.push(format!("vm_type={}", t.as_str()));
        }
        if let Some(s) = self.status {
            parts.push(format!("status={}", s.as_str()));
        }
        if let Some(n) = &self.name {
            parts.push(format!("name~{}", quoted(n.as_str(), 40)));
        }
        if let Some(t) = &self.tag {
            parts.push(format!("tag={}", t.0));
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

fn run(pve: &mut dyn Pve, filters: Filters) -> Result<Answer<VmList>, ToolError> {
    let guests = resources::fetch_guests(pve)?;
    let page = Page::new(filters.limit, filters.offset);
    Ok(shape(guests, &filters, page))
}

/// Filters, sorts, counts and pages the guests.
pub fn shape(guests: Vec<Guest>, filters: &Filters, page: Page) -> Answer<VmList> {
    let mut matched: Vec<Guest> = guests.into_iter().filter(|g| filters.matches(g)).collect();
    // Proxmox sorts by vmid as a string (1000 before 101); agents expect
    // numeric order. Node breaks ties so the order is total.
    matched.sort_by(|a, b| a.vmid.cmp(&b.vmid).then_with(|| a.node.cmp(&b.node)));
    let counts = Counts::of(&matched, |g| &g.status);
    let (shown, info) = paging::paginate(matched, page);
    let summary = summary(filters, &counts, &info);
    Answer {
        structured: VmList {
            vms: shown.into_iter().map(VmEntry::from).collect(),
            count_by_status: counts,
            page: info,
        },
        summary,
    }
}

fn summary(filters: &Filters, counts: &Counts, info: &PageInfo) -> String {
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
    let mut by_count: Vec<(&String, &usize)> = counts.0.iter().collect();
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
    use crate::tool::Output;
    use serde_json::json;

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
        crate::tool::testing::assert_valid_output(&TOOL, out);
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
        )
        .into_output()
        .unwrap();
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
        let schema = (TOOL.derived)().input;
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
