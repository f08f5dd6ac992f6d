//! MCP prompts: ready-made tasks for the agent, written for the read-only
//! default. Every prompt is listed to everyone; what a prompt's text says
//! depends on the caller: a tool it expects that this caller cannot run
//! (not offered, hidden, denied, needing approval, or without a
//! credential) is named as unavailable, with the step to skip, rather than
//! inviting a call that would be refused.

use std::collections::BTreeMap;

use rmcp::ErrorData;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, Prompt, PromptArgument, PromptMessage, Role,
};
use serde_json::Value;

use crate::server::reads::Reads;
use crate::server::resources::{self, ResourceUri};
use crate::tier::Tier;
use crate::tools::ToolInfo;

/// The prompts, by name.
pub const NAMES: &[&str] = &[
    DIAGNOSE_GUEST,
    PLAN_NODE_MAINTENANCE,
    CAPACITY_REPORT,
    LEAST_PRIVILEGE_TOKEN,
];

const DIAGNOSE_GUEST: &str = "diagnose_guest";
const PLAN_NODE_MAINTENANCE: &str = "plan_node_maintenance";
const CAPACITY_REPORT: &str = "capacity_report";
const LEAST_PRIVILEGE_TOKEN: &str = "least_privilege_token";

/// The Proxmox user and token the least-privilege commands create.
const TOKEN_USER: &str = "pve-mcp@pve";
const TOKEN_NAME: &str = "agent";

/// One prompt: its arguments (name, description, required) and the tools
/// its text asks the agent to use.
struct Spec {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    arguments: &'static [(&'static str, &'static str, bool)],
    tools: &'static [&'static str],
}

const CLUSTER_ARG: (&str, &str, bool) = (
    "cluster",
    "The cluster's name in this server's configuration (default: the first)",
    false,
);

const SPECS: &[Spec] = &[
    Spec {
        name: DIAGNOSE_GUEST,
        title: "Diagnose a guest",
        description: "Find out what is wrong with a VM or container: status, config, recent \
                      tasks and their logs, metrics and the guest agent, then a summary. Reads \
                      only.",
        arguments: &[("vmid", "The guest's id, e.g. 101", true), CLUSTER_ARG],
        tools: &[
            "pve_get_vm_status",
            "pve_get_vm_config",
            "pve_list_tasks",
            "pve_get_task_log",
            "pve_get_vm_metrics",
            "pve_guest_agent_info",
        ],
    },
    Spec {
        name: PLAN_NODE_MAINTENANCE,
        title: "Plan a node's maintenance",
        description: "Which guests would move where, HA state and quorum with the node down, \
                      as a plan for a person to approve. Reads only; nothing is moved.",
        arguments: &[
            ("node", "The node to take down, e.g. pve1", true),
            CLUSTER_ARG,
        ],
        tools: &[
            "pve_get_cluster_status",
            "pve_list_nodes",
            "pve_list_vms",
            "pve_get_vm_config",
            "pve_list_ha",
            "pve_get_node_metrics",
            "pve_list_storage",
        ],
    },
    Spec {
        name: CAPACITY_REPORT,
        title: "Capacity report",
        description: "CPU, memory and storage: what is used, what is promised to guests, the \
                      headroom left and the risks. Reads only.",
        arguments: &[
            CLUSTER_ARG,
            (
                "storage",
                "Report on this storage only, rather than every one",
                false,
            ),
        ],
        tools: &[
            "pve_list_nodes",
            "pve_get_node_metrics",
            "pve_list_resources",
            "pve_list_storage",
        ],
    },
    Spec {
        name: LEAST_PRIVILEGE_TOKEN,
        title: "A least-privilege Proxmox token",
        description: "The pveum commands that create a Proxmox API token with only the \
                      privileges the named tools declare, and the pve-mcp policy that enables \
                      exactly those tools.",
        arguments: &[(
            "tools",
            "Comma-separated tool names, e.g. pve_list_vms,pve_get_vm_status",
            true,
        )],
        tools: &[],
    },
];

fn spec(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name)
}

/// The argument names of the prompt called `name`, if there is one.
pub fn argument_names(name: &str) -> Option<Vec<&'static str>> {
    spec(name).map(|s| s.arguments.iter().map(|(n, ..)| *n).collect())
}

/// Every prompt.
pub fn list() -> Vec<Prompt> {
    SPECS
        .iter()
        .map(|s| {
            let arguments = s
                .arguments
                .iter()
                .map(|(name, description, required)| {
                    PromptArgument::new(*name)
                        .with_description(*description)
                        .with_required(*required)
                })
                .collect();
            Prompt::new(s.name, Some(s.description), Some(arguments)).with_title(s.title)
        })
        .collect()
}

/// The invalid-params error for one argument.
fn invalid(argument: &str, why: impl std::fmt::Display) -> ErrorData {
    ErrorData::invalid_params(format!("Invalid argument {argument}: {why}"), None)
}

/// The prompt's arguments as text: each must be a string (a number is
/// taken for a vmid), and each must be one the prompt has.
fn arguments(
    spec: &Spec,
    given: Option<&serde_json::Map<String, Value>>,
) -> Result<BTreeMap<&'static str, String>, ErrorData> {
    let mut out = BTreeMap::new();
    for (name, value) in given.into_iter().flatten() {
        let Some((known, ..)) = spec.arguments.iter().find(|(n, ..)| n == name) else {
            let takes: Vec<&str> = spec.arguments.iter().map(|(n, ..)| *n).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "Unknown argument {:?} for prompt {}: it takes {}",
                    name.chars().take(64).collect::<String>(),
                    spec.name,
                    takes.join(", ")
                ),
                None,
            ));
        };
        let text = match value {
            Value::String(s) => s.trim().to_string(),
            Value::Number(n) => n.to_string(),
            _ => return Err(invalid(known, "it must be a string")),
        };
        if !text.is_empty() {
            out.insert(*known, text);
        }
    }
    for (name, description, required) in spec.arguments {
        if *required && !out.contains_key(name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "Missing required argument {name} for prompt {}: {description}",
                    spec.name
                ),
                None,
            ));
        }
    }
    Ok(out)
}

/// Checks `text` is made of letters, digits and `extra`, as a name of
/// `what` is.
fn name_like(argument: &str, text: &str, extra: &[char], what: &str) -> Result<(), ErrorData> {
    if text.len() > 128
        || !text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
    {
        return Err(invalid(
            argument,
            format!(
                "{:?} is not {what}",
                text.chars().take(64).collect::<String>()
            ),
        ));
    }
    Ok(())
}

/// The prompt `request` names, with its arguments, for this caller.
pub fn get(
    reads: &Reads<'_>,
    request: &GetPromptRequestParams,
) -> Result<GetPromptResult, ErrorData> {
    let Some(spec) = spec(&request.name) else {
        return Err(ErrorData::invalid_params(
            format!(
                "Unknown prompt {:?}: this server's prompts are {}",
                request.name.chars().take(64).collect::<String>(),
                NAMES.join(", ")
            ),
            None,
        ));
    };
    let args = arguments(spec, request.arguments.as_ref())?;
    let clusters = resources::clusters(reads);
    let cluster = match args.get("cluster") {
        Some(c) if clusters.iter().any(|k| k == c) => Some(c.clone()),
        Some(c) => {
            return Err(invalid(
                "cluster",
                format!(
                    "{:?} is not a cluster of this server (it serves {})",
                    c.chars().take(64).collect::<String>(),
                    clusters.join(", ")
                ),
            ));
        }
        None => None,
    };
    let text = match spec.name {
        DIAGNOSE_GUEST => {
            let vmid = args["vmid"]
                .parse::<u64>()
                .ok()
                .filter(|n| (100..=999_999_999).contains(n))
                .ok_or_else(|| {
                    invalid(
                        "vmid",
                        format!(
                            "{:?} is not a vmid (a number from 100 to 999999999)",
                            args["vmid"].chars().take(64).collect::<String>()
                        ),
                    )
                })?;
            diagnose_guest(vmid, cluster.as_deref(), first(&clusters, &cluster))
        }
        PLAN_NODE_MAINTENANCE => {
            let node = &args["node"];
            name_like("node", node, &['-', '.'], "a node name")?;
            plan_node_maintenance(node, cluster.as_deref())
        }
        CAPACITY_REPORT => {
            let storage = args.get("storage");
            if let Some(storage) = storage {
                name_like("storage", storage, &['-', '_', '.'], "a storage name")?;
            }
            capacity_report(cluster.as_deref(), storage.map(String::as_str))
        }
        _ => {
            let tools = named_tools(reads, &args["tools"])?;
            least_privilege(&tools)
        }
    };
    let text = format!("{text}{}", unavailable(reads, spec.tools));
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(spec.description),
    )
}

/// The cluster a prompt's resource URIs name: the one given, else the first.
fn first<'c>(clusters: &'c [String], given: &'c Option<String>) -> Option<&'c str> {
    given.as_deref().or(clusters.first().map(String::as_str))
}

/// `, cluster: "NAME"` for a tool call's arguments, when one was given.
fn on(cluster: Option<&str>) -> String {
    cluster
        .map(|c| format!(", cluster: {}", Value::String(c.into())))
        .unwrap_or_default()
}

fn diagnose_guest(vmid: u64, cluster: Option<&str>, for_uri: Option<&str>) -> String {
    let c = on(cluster);
    let resource = for_uri
        .map(|name| {
            let uri = ResourceUri::Guest {
                cluster: name.into(),
                vmid,
            };
            format!(
                " (Its status and config together are also the resource {}.)",
                uri.uri()
            )
        })
        .unwrap_or_default();
    format!(
        "Diagnose guest {vmid}{where_}. Use only tools that read; change nothing.{resource}\n\
         1. pve_get_vm_status {{vmid: {vmid}{c}}}: its state, uptime, CPU and memory use, lock, \
         HA state, QEMU status and whether its agent answers.\n\
         2. pve_get_vm_config {{vmid: {vmid}{c}}}: disks, network, boot order, whether the agent \
         is enabled, anything unusual.\n\
         3. pve_list_tasks {{vmid: {vmid}, limit: 10{c}}}: its recent tasks; for each that \
         failed or warned, pve_get_task_log {{upid, tail: 20{c}}} and quote the lines that \
         matter.\n\
         4. pve_get_vm_metrics {{vmid: {vmid}{c}}}: CPU, memory, disk and network over the last \
         hour; note saturation or a sudden change.\n\
         5. If the agent is enabled and the guest runs: pve_guest_agent_info {{vmid: {vmid}{c}}} \
         for its OS, file systems and addresses.\n\
         6. Summary: what is wrong (or that nothing is), the evidence for it, the likely cause, \
         and the next steps. Present any change as a suggestion for a person to approve; do not \
         make it.",
        where_ = cluster
            .map(|c| format!(" in cluster {c}"))
            .unwrap_or_default(),
    )
}

fn plan_node_maintenance(node: &str, cluster: Option<&str>) -> String {
    let c = on(cluster);
    format!(
        "Plan maintenance of node {node}{where_}: it will be taken down. Use only tools that \
         read; move nothing, and call no tool that changes the cluster.\n\
         1. pve_get_cluster_status {{{c_first}}}: the nodes, their votes and quorum. Say whether \
         the cluster keeps quorum with {node} down.\n\
         2. pve_list_vms {{node: \"{node}\"{c}}}: the guests on {node}; for each running one, \
         pve_get_vm_config {{vmid{c}}} for local disks, passthrough devices or CD images that \
         block a live migration.\n\
         3. pve_list_ha {{{c_first}}}: which of those guests HA manages (HA moves them itself \
         when the node enters maintenance mode) and any HA groups that limit where they may go.\n\
         4. pve_list_nodes {{{c_first}}} and pve_get_node_metrics {{node{c}}} for each other \
         online node: free memory and CPU; pve_list_storage {{{c_first}}}: which storages are \
         shared.\n\
         5. The plan, for a person to approve: each guest with its target node (online or \
         offline migration, or shut down), the order, HA guests handled by maintenance mode \
         (ha-manager crm-command node-maintenance enable {node}), the memory each target ends \
         with, and the risks. Stop there: nothing is migrated until a person approves the plan, \
         and then each move goes through this server's policy (which may ask again).",
        where_ = cluster
            .map(|c| format!(" in cluster {c}"))
            .unwrap_or_default(),
        c_first = c.trim_start_matches(", "),
    )
}

fn capacity_report(cluster: Option<&str>, storage: Option<&str>) -> String {
    let c = on(cluster);
    let c_first = c.trim_start_matches(", ");
    let storages = match storage {
        Some(s) => format!("storage {s} only"),
        None => "every storage".to_string(),
    };
    format!(
        "Write a capacity report{where_}. Use only tools that read.\n\
         1. pve_list_nodes {{{c_first}}}: each node's CPUs, memory and state; for each online \
         node, pve_get_node_metrics {{node{c}}} for its load and memory over the last hour.\n\
         2. pve_list_resources {{resource_type: \"vm\"{c}}}: the CPU and memory promised to \
         guests, by node, against what each node has (the overcommit ratio).\n\
         3. pve_list_storage {{{c_first}}}: for {storages}, used and total space and how full it \
         is.\n\
         4. The report: a table per node (CPU and memory used, promised, physical), a table of \
         storages (used, free, percent), the headroom (how many more guests of the typical size \
         fit, and what runs out first), and the risks (a node that could not take another's \
         guests, a storage above 80 %).",
        where_ = cluster
            .map(|c| format!(" for cluster {c}"))
            .unwrap_or_default(),
    )
}

/// The tools a comma-separated list names: each must be a tool of the
/// component.
fn named_tools<'a>(reads: &Reads<'a>, list: &str) -> Result<Vec<&'a ToolInfo>, ErrorData> {
    let mut tools: Vec<&ToolInfo> = Vec::new();
    let mut unknown = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match reads.app().tool(name) {
            Some(tool) if !tools.iter().any(|t| t.name == tool.name) => tools.push(tool),
            Some(_) => {}
            None => unknown.push(name.chars().take(64).collect::<String>()),
        }
    }
    if !unknown.is_empty() {
        return Err(invalid(
            "tools",
            format!(
                "no tool is called {} (`pve-mcp tools` lists them)",
                unknown.join(", ")
            ),
        ));
    }
    if tools.is_empty() {
        return Err(invalid(
            "tools",
            "it names no tool; give tool names separated by commas",
        ));
    }
    Ok(tools)
}

/// The ACL path a privilege's path is granted on: the part before its
/// first placeholder (`/vms/{vmid}` is granted on `/vms`, which reaches
/// every guest; a person may narrow it to `/vms/101`).
fn acl_path(path: &str) -> String {
    let kept: Vec<&str> = path
        .split('/')
        .take_while(|s| !s.starts_with('{'))
        .filter(|s| !s.is_empty())
        .collect();
    format!("/{}", kept.join("/"))
}

/// The role holding one ACL path's privileges: `PveMcpVms` for `/vms`,
/// `PveMcpRoot` for `/`.
fn role_name(path: &str) -> String {
    let mut name = String::from("PveMcp");
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.is_empty() {
        name.push_str("Root");
    }
    for segment in segments {
        let mut chars = segment.chars().filter(char::is_ascii_alphanumeric);
        if let Some(first) = chars.next() {
            name.push(first.to_ascii_uppercase());
            name.extend(chars);
        }
    }
    name
}

/// The `pveum` commands for a token with only what `tools` declare, and
/// the pve-mcp policy that enables exactly those tools.
pub fn least_privilege(tools: &[&ToolInfo]) -> String {
    // ACL path -> privileges; the first of each `any_of` (the others are
    // alternatives, e.g. PVE 8's name for a PVE 9 privilege).
    let mut grants: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut alternatives = Vec::new();
    let mut free = Vec::new();
    for tool in tools {
        if tool.privileges.is_empty() {
            free.push(tool.name.as_str());
        }
        for privilege in &tool.privileges {
            let Some(chosen) = privilege.any_of.first() else {
                continue;
            };
            let privs = grants.entry(acl_path(&privilege.path)).or_default();
            if !privs.contains(chosen) {
                privs.push(chosen.clone());
            }
            if privilege.any_of.len() > 1 {
                alternatives.push(format!(
                    "{} ({}): {} may stand in for {chosen}",
                    tool.name,
                    privilege.path,
                    privilege.any_of[1..].join(" or ")
                ));
            }
        }
    }
    let token = format!("{TOKEN_USER}!{TOKEN_NAME}");
    let mut commands = format!(
        "pveum user add {TOKEN_USER} --comment \"pve-mcp\"   # once; skip if the user exists\n\
         pveum user token add {TOKEN_USER} {TOKEN_NAME} --privsep 1\n"
    );
    for (path, privs) in &grants {
        let role = role_name(path);
        // `/` itself only: propagating it would grant the same on every path.
        let propagate = if path == "/" { " --propagate 0" } else { "" };
        commands.push_str(&format!(
            "pveum role add {role} --privs \"{}\"\n\
             pveum acl modify {path} --users {TOKEN_USER} --roles {role}{propagate}\n\
             pveum acl modify {path} --tokens '{token}' --roles {role}{propagate}\n",
            privs.join(",")
        ));
    }
    let mut policy = String::from("[policy]\ndefault = \"deny\"\n");
    for tool in tools {
        let action = match Tier::of(tool) {
            Tier::Read => "allow",
            // A write runs once a person approves it.
            _ => "require_approval",
        };
        policy.push_str(&format!(
            "[policy.tools.{}]\naction = \"{action}\"\n",
            tool.name
        ));
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let mut text = format!(
        "Give me a Proxmox API token with least privilege for these pve-mcp tools: {}. Present \
         the commands and the policy below, computed from the privileges the tools declare, \
         and explain each grant in a sentence.\n\n\
         Commands (run as root on a cluster node; the token's secret is printed once):\n\
         ```sh\n{commands}```\n\
         The user gets the same grants as its token: with privilege separation a token has \
         only what both it and its user have.\n\n\
         pve-mcp configuration (PVE_API_TOKEN_ID={token}, PVE_API_TOKEN_SECRET from the output \
         above), enabling only these tools{}:\n```toml\n{policy}```\n",
        names.join(", "),
        if tools.iter().any(|t| Tier::of(t) != Tier::Read) {
            "; the ones that write run once a person approves"
        } else {
            ""
        }
    );
    if !alternatives.is_empty() {
        text.push_str(&format!(
            "\nAlternatives the tools accept: {}.\n",
            alternatives.join("; ")
        ));
    }
    if !free.is_empty() {
        text.push_str(&format!(
            "\nThese need no privilege of their own: {}.\n",
            free.join(", ")
        ));
    }
    text.push_str(
        "\nA grant on /vms, /nodes, /storage or /pool reaches every guest, node, storage or \
         pool; narrow it to one (e.g. /vms/101) where the agent needs no more.",
    );
    text
}

/// What the prompt's text adds when the caller cannot run some of the
/// tools it names.
fn unavailable(reads: &Reads<'_>, tools: &[&str]) -> String {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| reads.usable(t).is_none())
        .collect();
    if missing.is_empty() {
        return String::new();
    }
    format!(
        "\n\nNot available to you on this server (not offered, hidden or denied by its policy, \
         or without a credential): {}. Do not call them; skip the steps that need them and say \
         which information is missing.",
        missing.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_paths_and_roles() {
        assert_eq!(acl_path("/vms/{vmid}"), "/vms");
        assert_eq!(acl_path("/"), "/");
        assert_eq!(acl_path("/storage/{storage}"), "/storage");
        assert_eq!(acl_path("/pool/{poolid}"), "/pool");
        assert_eq!(role_name("/vms"), "PveMcpVms");
        assert_eq!(role_name("/"), "PveMcpRoot");
    }

    #[test]
    fn every_prompt_is_listed_with_its_arguments() {
        let listed = list();
        let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, NAMES);
        assert_eq!(argument_names(DIAGNOSE_GUEST).unwrap(), ["vmid", "cluster"]);
        assert!(argument_names("nope").is_none());
    }
}
