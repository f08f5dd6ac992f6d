//! `pve_guest_agent_info`: what a running VM's guest agent reports about
//! it (OS, host name, filesystems, users, time, vCPUs), shaped and bounded.

use serde::Serialize;
use serde_json::Value;

use crate::agent_tool::{agent_input, agent_path, prepare};
use crate::agent;
use crate::api::Pve;
use crate::arg::{choice, deserialize_from_json, fixed_schema, json_kind, one_of};
use crate::error::ToolError;
use crate::format;
use crate::json as pj;
use crate::tool::{Answer, Tool, read_tool};

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_guest_agent_info",
    title: "Guest agent info",
    description: "What a running VM's guest agent reports: OS, hostname, filesystems, users, time.",
    reads: [
        "/cluster/resources?type=vm",
        "/nodes/{node}/qemu/{vmid}/status/current",
        "/nodes/{node}/qemu/{vmid}/agent/info",
        "/nodes/{node}/qemu/{vmid}/agent/get-osinfo",
        "/nodes/{node}/qemu/{vmid}/agent/get-host-name",
        "/nodes/{node}/qemu/{vmid}/agent/get-fsinfo",
        "/nodes/{node}/qemu/{vmid}/agent/get-users",
        "/nodes/{node}/qemu/{vmid}/agent/get-timezone",
        "/nodes/{node}/qemu/{vmid}/agent/get-time",
        "/nodes/{node}/qemu/{vmid}/agent/get-vcpus",
    ],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.GuestAgent.Audit" | "VM.GuestAgent.Unrestricted" | "VM.Monitor",
    ],
    run: run,
};

choice! {
    /// One thing to ask the agent.
    pub enum Section {
        /// `guest-info`: the agent's version and commands.
        Info = "info",
        /// `guest-get-osinfo`.
        Osinfo = "osinfo",
        /// `guest-get-host-name`.
        Hostname = "hostname",
        /// `guest-get-fsinfo`.
        Fsinfo = "fsinfo",
        /// `guest-get-users`.
        Users = "users",
        /// `guest-get-timezone`.
        Timezone = "timezone",
        /// `guest-get-time`.
        Time = "time",
        /// `guest-get-vcpus`.
        Vcpus = "vcpus",
    }
}

impl Section {
    /// Proxmox's name for the agent command.
    fn command(self) -> &'static str {
        match self {
            Section::Info => "info",
            Section::Osinfo => "get-osinfo",
            Section::Hostname => "get-host-name",
            Section::Fsinfo => "get-fsinfo",
            Section::Users => "get-users",
            Section::Timezone => "get-timezone",
            Section::Time => "get-time",
            Section::Vcpus => "get-vcpus",
        }
    }
}

/// What to ask, each once, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sections(pub Vec<Section>);

impl Sections {
    fn from_json(v: &Value) -> Result<Self, String> {
        let Value::Array(items) = v else {
            return Err(format!("must be a list such as [\"osinfo\", \"users\"], not {}", json_kind(v)));
        };
        if items.is_empty() {
            return Err("must name at least one section; omit it for the default".into());
        }
        let mut out = Vec::new();
        for item in items {
            let s = one_of(item, Section::ALL)?;
            let section = Section::parse(s).expect("one_of checked it");
            if !out.contains(&section) {
                out.push(section);
            }
        }
        Ok(Sections(out))
    }
}
deserialize_from_json!(Sections);
fixed_schema!(
    Sections,
    serde_json::json!({"type": "array", "items": {"enum": Section::ALL}})
);

/// What is asked when the call does not say.
const DEFAULT: &[Section] = &[Section::Osinfo, Section::Hostname, Section::Fsinfo];

/// Most filesystems, users and vCPUs listed; the rest are counted.
const LIST_MAX: usize = 64;
/// Longest text kept from the agent.
const TEXT_MAX: usize = 256;

agent_input! {
    /// The VM to ask.
    pub struct Input {
        /// Default osinfo, hostname, fsinfo
        pub what: Option<Sections>,
    }
}

/// What the agent reported.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct AgentInfo {
    /// VM id
    pub vmid: u32,
    /// Node it runs on
    pub node: String,
    /// Agent version and enabled commands; null if not asked
    pub agent: Option<AgentVersion>,
    /// Operating system; null if not asked
    pub os: Option<OsInfo>,
    /// Host name; null if not asked
    pub hostname: Option<String>,
    /// Mounted filesystems; null if not asked
    pub filesystems: Option<Vec<Filesystem>>,
    /// Logged-in users; null if not asked
    pub users: Option<Vec<User>>,
    /// Time zone; null if not asked
    pub timezone: Option<Timezone>,
    /// The guest's clock, ISO-8601 UTC; null if not asked
    pub time: Option<String>,
    /// vCPUs online and in all; null if not asked
    pub vcpus: Option<Vcpus>,
    /// Lists cut at 64 entries, and how many each had
    pub cut: Vec<String>,
    /// Sections the agent refused (too old, or blocked), with its error
    pub unavailable: Vec<String>,
}

/// The agent itself.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct AgentVersion {
    /// qemu-guest-agent version
    pub version: Option<String>,
    /// Enabled commands, e.g. guest-exec
    pub commands: Vec<String>,
}

/// The guest OS.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct OsInfo {
    /// e.g. Debian GNU/Linux 12 (bookworm)
    pub pretty_name: Option<String>,
    /// e.g. debian, mswindows
    pub id: Option<String>,
    /// OS version
    pub version: Option<String>,
    /// Kernel release, e.g. 6.1.0-18-amd64
    pub kernel_release: Option<String>,
    /// e.g. x86_64
    pub machine: Option<String>,
}

/// One mounted filesystem.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Filesystem {
    /// Mount point, e.g. / or C:\
    pub mountpoint: String,
    /// Filesystem type, e.g. ext4, NTFS
    #[serde(rename = "type")]
    pub fs_type: Option<String>,
    /// Bytes used; null if unknown
    pub used_bytes: Option<u64>,
    /// Bytes in all; null if unknown
    pub total_bytes: Option<u64>,
}

/// One logged-in user.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct User {
    /// User name
    pub user: String,
    /// Windows domain; null elsewhere
    pub domain: Option<String>,
    /// Login time, ISO-8601 UTC
    pub login_time: Option<String>,
}

/// The guest's time zone.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Timezone {
    /// Zone name, e.g. CET
    pub zone: Option<String>,
    /// Offset from UTC in seconds
    pub offset_secs: Option<i64>,
}

/// The guest's vCPUs.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Vcpus {
    /// Online
    pub online: u64,
    /// In all
    pub total: u64,
}

fn text(v: Option<&Value>) -> Option<String> {
    pj::text(v).map(|s| s.chars().take(TEXT_MAX).collect())
}

fn int(v: Option<&Value>) -> Option<i64> {
    pj::num(v).filter(|n| n.abs() < 9.0e15).map(|n| n.floor() as i64)
}

/// The list an agent answer holds, at most [`LIST_MAX`] of it, noting a cut.
fn list<'a>(v: &'a Value, what: &str, cut: &mut Vec<String>) -> &'a [Value] {
    let items = v.as_array().map(Vec::as_slice).unwrap_or_default();
    if items.len() > LIST_MAX {
        cut.push(format!("{what}: {} of {}", LIST_MAX, items.len()));
        &items[..LIST_MAX]
    } else {
        items
    }
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<AgentInfo>, ToolError> {
    let sections = input.what.as_ref().map_or(DEFAULT, |w| w.0.as_slice());
    let ready = prepare(pve, input.wanted())?;
    let target = &ready.target;
    let label = target.label();
    let mut out = AgentInfo {
        vmid: target.vmid,
        node: target.node.clone(),
        agent: None,
        os: None,
        hostname: None,
        filesystems: None,
        users: None,
        timezone: None,
        time: None,
        vcpus: None,
        cut: Vec::new(),
        unavailable: Vec::new(),
    };
    for &section in sections {
        let data = pve
            .get(&agent_path(target, section.command()))
            .map_err(|e| agent::explain(target, e))?;
        let r = match agent::result(&data, &label, section.command()) {
            Ok(r) => r,
            Err(e) => {
                let short: String = e.message().chars().take(300).collect();
                out.unavailable.push(format!("{}: {short}", section.as_str()));
                continue;
            }
        };
        shape(section, r, &mut out);
    }
    let summary = summary(&label, &out);
    Ok(Answer {
        structured: out,
        summary,
    })
}

/// Puts one section's answer (the agent's `result`) into `out`.
fn shape(section: Section, r: &Value, out: &mut AgentInfo) {
    match section {
        Section::Info => {
            let mut commands: Vec<String> = list(r.get("supported_commands").unwrap_or(&Value::Null), "commands", &mut Vec::new())
                .iter()
                .filter(|c| c.get("enabled").is_none_or(|e| pj::flag(Some(e))))
                .filter_map(|c| text(c.get("name")))
                .collect();
            commands.sort();
            out.agent = Some(AgentVersion {
                version: text(r.get("version")),
                commands,
            });
        }
        Section::Osinfo => {
            out.os = Some(OsInfo {
                pretty_name: text(r.get("pretty-name")).or_else(|| text(r.get("name"))),
                id: text(r.get("id")),
                version: text(r.get("version")),
                kernel_release: text(r.get("kernel-release")),
                machine: text(r.get("machine")),
            });
        }
        Section::Hostname => out.hostname = text(r.get("host-name")),
        Section::Fsinfo => {
            let items = list(r, "filesystems", &mut out.cut);
            out.filesystems = Some(
                items
                    .iter()
                    .filter_map(|f| {
                        Some(Filesystem {
                            mountpoint: text(f.get("mountpoint"))?,
                            fs_type: text(f.get("type")),
                            used_bytes: pj::uint(f.get("used-bytes")),
                            total_bytes: pj::uint(f.get("total-bytes")),
                        })
                    })
                    .collect(),
            );
        }
        Section::Users => {
            let items = list(r, "users", &mut out.cut);
            out.users = Some(
                items
                    .iter()
                    .filter_map(|u| {
                        Some(User {
                            user: text(u.get("user"))?,
                            domain: text(u.get("domain")),
                            login_time: int(u.get("login-time")).map(format::iso_utc),
                        })
                    })
                    .collect(),
            );
        }
        Section::Timezone => {
            out.timezone = Some(Timezone {
                zone: text(r.get("zone")),
                offset_secs: int(r.get("offset")),
            });
        }
        // Nanoseconds since the epoch.
        Section::Time => {
            out.time = pj::num(Some(r)).map(|ns| format::iso_utc((ns / 1e9).floor().clamp(-9e15, 9e15) as i64));
        }
        Section::Vcpus => {
            let all = r.as_array().map(Vec::as_slice).unwrap_or_default();
            out.vcpus = Some(Vcpus {
                online: all.iter().filter(|c| pj::flag(c.get("online"))).count() as u64,
                total: all.len() as u64,
            });
        }
    }
}

fn summary(label: &str, out: &AgentInfo) -> String {
    let mut parts = Vec::new();
    if let Some(os) = out.os.as_ref().and_then(|o| o.pretty_name.as_deref()) {
        parts.push(os.to_owned());
    }
    if let Some(h) = &out.hostname {
        parts.push(format!("host name {h}"));
    }
    if let Some(fs) = &out.filesystems {
        parts.push(format::count(fs.len(), "filesystem", "filesystems"));
    }
    if let Some(u) = &out.users {
        parts.push(format::count(u.len(), "user logged in", "users logged in"));
    }
    if let Some(t) = &out.time {
        parts.push(format!("clock {t}"));
    }
    if !out.unavailable.is_empty() {
        parts.push(format!("{} refused by the agent", out.unavailable.len()));
    }
    format!("{label} on {}: {}.", out.node, parts.join("; "))
}

#[cfg(test)]
mod tests {
    use crate::agent_tool::testing::fake;
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const BASE: &str = "/nodes/pve1/qemu/100/agent";

    fn answers(pve: FakePve) -> FakePve {
        pve.with(
            &format!("{BASE}/get-osinfo"),
            json!({"result": {"id": "debian", "kernel-release": "6.1.0-18-amd64",
                "machine": "x86_64", "pretty-name": "Debian GNU/Linux 12 (bookworm)",
                "version": "12 (bookworm)"}}),
        )
        .with(&format!("{BASE}/get-host-name"), json!({"result": {"host-name": "web01"}}))
        .with(
            &format!("{BASE}/get-fsinfo"),
            json!({"result": [
                {"name": "sda1", "mountpoint": "/", "type": "ext4",
                 "used-bytes": 2_000_000_000u64, "total-bytes": 10_000_000_000u64, "disk": []},
                {"name": "sr0", "mountpoint": "/media/cd", "type": "iso9660"}]}),
        )
        .with(
            &format!("{BASE}/get-users"),
            json!({"result": [{"user": "root", "login-time": 1_709_753_290.75}]}),
        )
        .with(&format!("{BASE}/get-time"), json!({"result": 1_709_753_290_123_456_789u64}))
        .with(&format!("{BASE}/get-timezone"), json!({"result": {"zone": "CET", "offset": 3600}}))
        .with(
            &format!("{BASE}/get-vcpus"),
            json!({"result": [{"logical-id": 0, "online": true}, {"logical-id": 1, "online": false}]}),
        )
        .with(
            &format!("{BASE}/info"),
            json!({"result": {"version": "7.2.0", "supported_commands": [
                {"name": "guest-exec", "enabled": true}, {"name": "guest-file-open", "enabled": false}]}}),
        )
    }

    #[test]
    fn the_default_sections_are_shaped() {
        let mut pve = answers(fake());
        let out = TOOL.call(&mut pve, r#"{"vmid": 100}"#).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["os"]["pretty_name"], "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(s["os"]["kernel_release"], "6.1.0-18-amd64");
        assert_eq!(s["hostname"], "web01");
        assert_eq!(
            s["filesystems"][0],
            json!({"mountpoint": "/", "type": "ext4", "used_bytes": 2_000_000_000u64,
                   "total_bytes": 10_000_000_000u64})
        );
        assert_eq!(s["filesystems"][1]["used_bytes"], Value::Null);
        assert_eq!(s["users"], Value::Null);
        assert!(out.summary.contains("host name web01"), "{}", out.summary);
        assert!(pve.writes.is_empty());
    }

    #[test]
    fn every_section_and_the_agents_refusal() {
        let mut pve = answers(fake()).with(
            &format!("{BASE}/get-users"),
            json!({"result": {"error": {"class": "CommandNotFound", "desc": "not found"}}}),
        );
        let args = json!({"vmid": 100, "node": "pve1", "what":
            ["info", "users", "time", "timezone", "vcpus", "time"]});
        let out = TOOL.call(&mut pve, &args.to_string()).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["agent"], json!({"version": "7.2.0", "commands": ["guest-exec"]}));
        assert_eq!(s["time"], "2024-03-06T19:28:10Z");
        assert_eq!(s["timezone"], json!({"zone": "CET", "offset_secs": 3600}));
        assert_eq!(s["vcpus"], json!({"online": 1, "total": 2}));
        assert_eq!(s["users"], Value::Null);
        assert!(s["unavailable"][0].as_str().unwrap().starts_with("users: "), "{s}");
        // "time" twice is asked once.
        let times = pve.requests.iter().filter(|r| r.ends_with("/get-time")).count();
        assert_eq!(times, 1);
        let mut pve = answers(fake());
        let out = TOOL.call(&mut pve, r#"{"vmid": 100, "what": ["users"]}"#).unwrap();
        assert_eq!(out.structured["users"][0]["login_time"], "2024-03-06T19:28:10Z");
    }

    #[test]
    fn lists_are_bounded() {
        let many: Vec<Value> = (0..100).map(|i| json!({"mountpoint": format!("/m{i}")})).collect();
        let mut pve = fake().with(&format!("{BASE}/get-fsinfo"), json!({"result": many}));
        let out = TOOL.call(&mut pve, r#"{"vmid": 100, "what": ["fsinfo"]}"#).unwrap();
        assert_eq!(out.structured["filesystems"].as_array().unwrap().len(), LIST_MAX);
        assert_eq!(out.structured["cut"], json!(["filesystems: 64 of 100"]));
    }

    #[test]
    fn agent_failures_say_what_to_do() {
        let mut pve = fake().failing(
            &format!("{BASE}/get-osinfo"),
            ToolError::Upstream("Proxmox returned an error (HTTP 500 \"QEMU guest agent is not running\").".into()),
        );
        let e = TOOL.call(&mut pve, r#"{"vmid": 100, "what": ["osinfo"]}"#).unwrap_err();
        assert!(e.message().contains("install the qemu-guest-agent package"), "{e}");
        let mut pve = fake();
        for bad in [r#"{"vmid": 100, "what": "osinfo"}"#, r#"{"vmid": 100, "what": ["os"]}"#, r#"{"vmid": 100, "what": []}"#] {
            let e = TOOL.call(&mut pve, bad).unwrap_err();
            assert!(e.message().starts_with("what: "), "{e}");
        }
        assert!(pve.requests.is_empty());
    }
}
