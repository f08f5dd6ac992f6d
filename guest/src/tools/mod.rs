//! The tool registry: which tools the component offers, in the order
//! `list-tools` reports them. What a tool is made of lives in
//! [`crate::tool`]; this module only lists the tools.
//!
//! Adding a read tool touches three places:
//! 1. `tools/<name>.rs`, with
//!    - an input struct: `#[derive(Deserialize)]`,
//!      `#[cfg_attr(test, derive(schemars::JsonSchema))]`,
//!      `#[serde(deny_unknown_fields)]`, a doc comment on every field (it
//!      becomes the schema's description) and field types that validate
//!      themselves: [`crate::arg`] (`Vmid`, `NodeName`, `VmType`, `Text`,
//!      `Int`, `Flag`; `arg::time` for `Time`, `Timeframe`), [`crate::paging`]
//!      (`Limit`, `Offset`), [`crate::task`] (`Upid`), or a new one with
//!      `arg::deserialize_from_json!` / `arg::choice!` and its schema in
//!      `arg::fixed_schema!`. `Option<T>` is optional; a
//!      `#[serde(default)]` field's type must read `null` as its default.
//!      Use `tool::NoArguments` for none. A tool about one guest declares
//!      its input with `resolve::guest_input!` (`vmid`, `node`,
//!      `vm_type`) and calls `input.wanted().resolve(pve)?`;
//!    - an output struct: `#[derive(Serialize)]` and
//!      `#[cfg_attr(test, derive(schemars::JsonSchema))]`, a doc comment on
//!      every field, `Option<T>` for what may be unknown (written as
//!      `null`; every output field is required), [`crate::json::Tidy`] for
//!      numbers Proxmox gives as floats;
//!    - `fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<Out>, ToolError>`
//!      that calls `Pve::get` with an [`crate::path::ApiPath`] and shapes
//!      the `data` with the tolerant readers in [`crate::json`];
//!    - `pub static TOOL: Tool = read_tool! { name, title, description,
//!      reads, privileges, run }`, with a description that says when to use
//!      it, the GETs it makes (`reads: ["/nodes/{node}/status"]`, for the
//!      docs) and the privileges of every endpoint it calls, as the PVE API
//!      schema's `permissions` give them (`"/vms/{vmid}": "VM.Audit"`;
//!      `"A" | "B"` where either suffices; `[]` for none).
//!
//!    A tool file imports the floor (`tool`, `arg`, `task`, `json`, ...),
//!    never another tool or this registry.
//! 2. One line in `registry!` below, `<name>: [TOOL] in "<toolset>",`, where
//!    `list-tools` should report it (a file declaring several tools lists
//!    them all), naming the toolset it joins.
//! 3. A handler for its endpoints in the Proxmox simulator
//!    (`tests/pve-sim`), for the host's end-to-end tests.
//!
//! Then run `UPDATE_SCHEMAS=1 cargo test -p pve-mcp-guest`: it writes the
//! schemas derived from the two structs, and `pve_check_permissions`'
//! privilege list derived from every tool's, to `guest/schemas/`, which the
//! component includes (see `schemas.rs`); commit them.
//!
//! The registry's tests then check the new tool's name, schemas and
//! argument handling; its own file tests its shaping against fixtures and
//! validates the output against its output schema.
//!
//! Arguments are read before the tool runs and before any request
//! ([`crate::input`]): unknown keys are refused with the valid ones
//! listed, then each field's type checks its value.
//!
//! `cluster`: every tool takes an optional `cluster` argument (which
//! configured Proxmox cluster to ask). The checked-in schemas declare it,
//! the registry takes it out of the arguments (`Tool::parse`) and
//! `lib.rs` picks the endpoint; it also adds `"cluster": <name>` to every
//! structured output (`tool::with_cluster`). A tool never declares, reads or
//! emits `cluster` itself (a test enforces it).
//!
//! Lists: a tool returning a list takes `limit: Limit<DEFAULT, MAX>` and
//! `offset: Offset`, flattens a [`crate::paging::PageInfo`] into its
//! output and uses `paging::paginate` and `PageInfo::describe`.
//! Epoch → ISO-8601 and byte sizes are in [`crate::format`].

use crate::error::ToolError;
use crate::tool::Tool;

/// Declares each tool module and [`TOOLS`], the statics it names in the
/// order given, so a tool is registered in one line.
macro_rules! registry {
    ($($module:ident: [$($tool:ident),+ $(,)?] in $toolset:literal),* $(,)?) => {
        $(pub mod $module;)*

        /// Every tool the component offers, in the order `list-tools`
        /// reports them.
        pub static TOOLS: &[&Tool] = &[$($(&$module::$tool),+),*];

        /// The toolset of each tool of [`TOOLS`], in the same order.
        pub static TOOLSETS: &[&str] = &[$($(toolset_of!($tool, $toolset)),+),*];
    };
}

/// A toolset named once per module, repeated for each of its tools.
macro_rules! toolset_of {
    ($tool:ident, $toolset:literal) => {
        $toolset
    };
}

// Toolsets: what an operator enables (`[tools] toolsets`) so an agent sees
// only what it needs. A new tool joins one of these, or a new one.
registry! {
    list_vms: [TOOL] in "guests",
    vm_status: [TOOL] in "guests",
    list_clusters: [TOOL] in "cluster",
    get_version: [TOOL] in "cluster",
    get_cluster_status: [TOOL] in "cluster",
    list_nodes: [TOOL] in "cluster",
    get_node_metrics: [TOOL] in "cluster",
    list_resources: [TOOL] in "cluster",
    get_vm_config: [TOOL] in "guests",
    list_storage: [TOOL] in "storage",
    list_storage_content: [TOOL] in "storage",
    delete_volume: [TOOL] in "storage",
    download_to_storage: [TOOL] in "storage",
    list_backups: [TOOL] in "backups",
    get_task_status: [TOOL] in "tasks",
    list_snapshots: [TOOL] in "snapshots",
    list_tasks: [TOOL] in "tasks",
    get_task_log: [TOOL] in "tasks",
    get_vm_metrics: [TOOL] in "guests",
    get_vm_ips: [TOOL] in "guests",
    list_ha: [TOOL] in "cluster",
    list_networks: [TOOL] in "cluster",
    list_services: [TOOL] in "nodes",
    list_updates: [TOOL] in "nodes",
    list_disks: [TOOL] in "nodes",
    get_ceph_status: [TOOL] in "nodes",
    get_node_log: [TOOL] in "nodes",
    list_replication: [TOOL] in "replication",
    run_replication: [TOOL] in "replication",
    get_firewall: [TOOL] in "firewall",
    add_firewall_rule: [TOOL] in "firewall",
    update_firewall_rule: [TOOL] in "firewall",
    delete_firewall_rule: [TOOL] in "firewall",
    set_firewall_options: [TOOL] in "firewall",
    set_ha_resource: [TOOL] in "ha",
    remove_ha_resource: [TOOL] in "ha",
    ha_migrate: [TOOL] in "ha",
    list_pools: [TOOL] in "pools",
    create_pool: [TOOL] in "pools",
    update_pool: [TOOL] in "pools",
    delete_pool: [TOOL] in "pools",
    check_permissions: [TOOL] in "access",
    next_vmid: [TOOL] in "cluster",
    wait_task: [TOOL] in "tasks",
    stop_task: [TOOL] in "tasks",
    power: [START, SHUTDOWN, STOP, REBOOT, SUSPEND, RESUME] in "guests",
    snapshots: [CREATE, DELETE, ROLLBACK] in "snapshots",
    migrate: [TOOL] in "guests",
    clone_vm: [TOOL] in "guests",
    convert_to_template: [TOOL] in "provisioning",
    move_disk: [TOOL] in "provisioning",
    get_cloudinit: [TOOL] in "provisioning",
    dump_cloudinit: [TOOL] in "provisioning",
    set_cloudinit: [TOOL] in "provisioning",
    regenerate_cloudinit: [TOOL] in "provisioning",
    list_appliances: [TOOL] in "provisioning",
    download_appliance: [TOOL] in "provisioning",
    create_guest: [QEMU, LXC] in "guests",
    resize_disk: [TOOL] in "guests",
    set_config: [TOOL] in "guests",
    delete_vm: [TOOL] in "guests",
    backup: [BACKUP, RESTORE] in "backups",
    api_request: [TOOL] in "api",
    guest_agent_info: [TOOL] in "agent",
    guest_exec: [TOOL] in "agent",
    guest_file_read: [TOOL] in "agent",
    guest_file_write: [TOOL] in "agent",
}

/// The tool called `name`.
pub fn find(name: &str) -> Result<&'static Tool, ToolError> {
    TOOLS
        .iter()
        .copied()
        .find(|t| t.name == name)
        .ok_or_else(|| ToolError::UnknownTool(name.to_owned()))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::api::fake::FakePve;
    use crate::cluster;
    use crate::schemas;
    use crate::tool::Annotations;

    #[test]
    fn names_are_unique_and_well_formed() {
        let mut names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        for n in &names {
            assert!(
                (1..=64).contains(&n.len())
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)),
                "{n}"
            );
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len());
    }

    #[test]
    fn unknown_tool() {
        assert_eq!(
            find("nope").unwrap_err(),
            ToolError::UnknownTool("nope".into())
        );
        assert_eq!(find("pve_list_vms").unwrap().name, "pve_list_vms");
    }

    #[test]
    fn arguments_are_checked_before_any_request() {
        for tool in TOOLS {
            // An empty fake panics on any request.
            let mut pve = FakePve::default();
            let e = tool.call(&mut pve, r#"{"bogus": 1}"#).unwrap_err();
            assert!(
                matches!(e, ToolError::InvalidArguments(_)),
                "{}: {e:?}",
                tool.name
            );
            assert!(e.message().starts_with("bogus: unknown argument"), "{e}");
            let e = tool.call(&mut pve, "[]").unwrap_err();
            assert!(
                matches!(e, ToolError::InvalidArguments(_)),
                "{}: {e:?}",
                tool.name
            );
            assert!(pve.requests.is_empty());
        }
    }

    /// The schemas `list-tools` reports, parsed.
    fn listed(tool: &Tool) -> (Value, Value) {
        let parse = |text| serde_json::from_str(text).expect("checked-in schema is JSON");
        (parse(tool.input_schema), parse(tool.output_schema))
    }

    #[test]
    fn cluster_is_accepted_checked_and_stripped() {
        for tool in TOOLS {
            let (input, output) = listed(tool);
            assert_eq!(input["properties"]["cluster"]["type"], "string");
            assert!(
                !input["required"]
                    .as_array()
                    .is_some_and(|r| r.contains(&"cluster".into()))
            );
            let p = tool.parse(r#"{"cluster": "lab"}"#).unwrap();
            assert_eq!(p.cluster.as_deref(), Some("lab"));
            // The tool's own arguments no longer carry it.
            assert_eq!(p.args.get("cluster"), None);
            let p = tool.parse(r#"{"cluster": null}"#).unwrap();
            assert_eq!(p.cluster, None);
            for bad in [r#"{"cluster": 1}"#, r#"{"cluster": ""}"#] {
                let e = tool.parse(bad).unwrap_err();
                assert!(e.message().starts_with("cluster: "), "{}: {e}", tool.name);
            }
            assert!(
                output["properties"].get("cluster").is_some(),
                "{}",
                tool.name
            );
            assert!(
                (tool.derived)().full_output()["required"]
                    .as_array()
                    .unwrap()
                    .contains(&"cluster".into())
            );
        }
    }

    /// The arguments the registry accepts are the input schema's
    /// properties and those accepted unadvertised (`confirm`), and each of
    /// them is read by the tool's input type.
    #[test]
    fn arguments_are_the_input_schema_properties() {
        for tool in TOOLS {
            let (input, _) = listed(tool);
            for hidden in crate::action::UNADVERTISED {
                assert!(input["properties"].get(hidden).is_none(), "{}", tool.name);
                if (tool.arguments)().contains(hidden) {
                    // Accepted as before, with or without a value.
                    let p = tool.parse(&format!(r#"{{"{hidden}": true}}"#)).unwrap();
                    assert_eq!(p.args[*hidden], true, "{}", tool.name);
                }
            }
        }
        for tool in TOOLS {
            let (input, _) = listed(tool);
            let mut declared: Vec<&str> = input["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .filter(|k| *k != cluster::ARG)
                .collect();
            declared.sort_unstable();
            let mut accepted: Vec<&str> = (tool.arguments)()
                .iter()
                .copied()
                .filter(|a| !crate::action::UNADVERTISED.contains(a))
                .collect();
            accepted.sort_unstable();
            assert_eq!(accepted, declared, "{}", tool.name);
        }
    }

    /// Every schema is a JSON Schema with an object root, closed, with a
    /// description on every property, and compiles as draft 2020-12.
    #[test]
    fn schemas_are_well_formed() {
        for tool in TOOLS {
            let derived = (tool.derived)();
            // The registry owns `cluster`; a tool must not declare it.
            for own in [&derived.input, &derived.output] {
                assert!(
                    own["properties"].get(cluster::ARG).is_none(),
                    "{} declares cluster itself",
                    tool.name
                );
            }
            let (input, output) = listed(tool);
            let full_output = derived.full_output();
            for (kind, schema) in [
                ("input", &derived.input),
                ("output", &derived.output),
                ("full output", &full_output),
                ("listed input", &input),
                ("listed output", &output),
            ] {
                assert_eq!(schema["type"], "object", "{} {kind}", tool.name);
                assert!(
                    jsonschema::draft202012::meta::is_valid(schema),
                    "{} {kind} schema is not valid 2020-12",
                    tool.name
                );
                jsonschema::draft202012::new(schema).expect("schema compiles");
                // The listed output is the exact one's structure alone
                // (`schemas::Derived::listed_output`), and the listed input
                // leaves the closing to the guest's own check.
                if kind == "listed input" {
                    let mut closed = schema.clone();
                    closed["additionalProperties"] = false.into();
                    check_closed_and_described(&closed, &format!("{} {kind}", tool.name));
                } else if kind != "listed output" {
                    check_closed_and_described(schema, &format!("{} {kind}", tool.name));
                }
            }
            assert!(!tool.title.is_empty() && tool.description.len() > 40);
            // A tool that declares no writes is a read tool, and one that
            // declares writes says so; the host holds each to its routes.
            if tool.routes.is_empty() {
                assert_eq!(tool.annotations, Annotations::READ_ONLY, "{}", tool.name);
            } else {
                assert!(!tool.annotations.read_only, "{}", tool.name);
                let arguments = (tool.arguments)();
                for route in tool.routes {
                    // The one route that is the call's own request
                    // (`pve_api_request`), which the host binds exactly.
                    if *route == crate::route::Route::CALL_REQUEST {
                        assert!(tool.annotations.destructive, "{}", tool.name);
                        continue;
                    }
                    let path = route.path;
                    // GET: a read the host guards (a guest's files, a
                    // command's output), held to its route like a write.
                    assert!(
                        ["POST", "PUT", "DELETE", "GET"].contains(&route.method),
                        "{}",
                        tool.name
                    );
                    // A node's objects, the cluster's resource pools,
                    // firewall or HA resources.
                    assert!(
                        path.starts_with("/nodes/{node}/")
                            || path.starts_with("/pools")
                            || path.starts_with("/cluster/firewall/")
                            || path.starts_with("/cluster/ha/resources"),
                        "{}: {path}",
                        tool.name
                    );
                    // Each parameter carries one of the tool's own
                    // arguments, or is declared as what the tool works out.
                    let bound = route.params.iter().filter_map(|p| p.argument);
                    for argument in bound.chain(route.entries) {
                        assert!(
                            arguments.contains(&argument),
                            "{}: {path} binds {argument}, not an argument of the tool",
                            tool.name
                        );
                    }
                    let mut names: Vec<&str> = route.params.iter().map(|p| p.name).collect();
                    names.sort_unstable();
                    names.dedup();
                    assert_eq!(names.len(), route.params.len(), "{}: {path}", tool.name);
                }
            }
        }
    }

    /// Every tool joins one toolset, named as the WIT asks; the host
    /// reserves `discover`.
    #[test]
    fn every_tool_has_a_toolset() {
        assert_eq!(TOOLS.len(), TOOLSETS.len());
        for (tool, set) in TOOLS.iter().zip(TOOLSETS) {
            assert!(
                (1..=32).contains(&set.len())
                    && set.starts_with(|c: char| c.is_ascii_lowercase())
                    && set
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && *set != "discover",
                "{}: {set}",
                tool.name
            );
        }
    }

    /// Agents see only the input schema: it must say what every argument
    /// is for. Unknown arguments are the guest's to refuse (`input`, which
    /// names the valid ones), so the listed schema is not closed: that
    /// would cost every conversation its bytes.
    #[test]
    fn input_schemas_describe_every_argument_and_leave_closing_to_the_guest() {
        for tool in TOOLS {
            let (input, _) = listed(tool);
            assert!(input.get("additionalProperties").is_none(), "{}", tool.name);
            let unknown = tool.parse(r#"{"no_such_argument": 1}"#).unwrap_err();
            assert!(
                unknown
                    .to_string()
                    .contains("no_such_argument: unknown argument"),
                "{}: {unknown}",
                tool.name
            );
            for (name, prop) in input["properties"].as_object().unwrap() {
                let description = prop["description"].as_str().unwrap_or_default();
                assert!(description.len() > 10, "{}.{name}: {prop}", tool.name);
            }
        }
    }

    fn check_closed_and_described(schema: &Value, at: &str) {
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            assert_eq!(schema["additionalProperties"], false, "{at} is not closed");
            for (name, prop) in props {
                assert!(
                    prop.get("description")
                        .and_then(Value::as_str)
                        .is_some_and(|d| !d.is_empty()),
                    "{at}.{name} has no description"
                );
                check_closed_and_described(prop, &format!("{at}.{name}"));
            }
        }
        if let Some(items) = schema.get("items") {
            check_closed_and_described(items, &format!("{at}[]"));
        }
        for key in ["anyOf", "oneOf"] {
            for alternative in schema[key].as_array().into_iter().flatten() {
                check_closed_and_described(alternative, at);
            }
        }
    }

    /// Every tool says which privileges it needs, in the form Proxmox's
    /// ACLs use, and every tool that writes needs at least one.
    #[test]
    fn privileges_are_declared_in_proxmox_form() {
        let is_name = |n: &str| {
            let mut parts = n.split('.');
            parts.clone().count() >= 2
                && parts.all(|w| {
                    w.starts_with(|c: char| c.is_ascii_uppercase())
                        && w.chars().all(|c| c.is_ascii_alphanumeric())
                })
        };
        for tool in TOOLS {
            let arguments = (tool.arguments)();
            for p in tool.privileges {
                assert!(p.path.starts_with('/'), "{}: {}", tool.name, p.path);
                for segment in p.path.split('/').skip(1).filter(|s| !s.is_empty()) {
                    if let Some(name) = segment.strip_prefix('{') {
                        let name = name.strip_suffix('}').expect("a closed placeholder");
                        assert!(
                            name == "node" || arguments.contains(&name),
                            "{}: {{{name}}} in {} is not an argument",
                            tool.name,
                            p.path
                        );
                    } else {
                        assert!(
                            segment.bytes().all(|b| b.is_ascii_lowercase()),
                            "{}: {}",
                            tool.name,
                            p.path
                        );
                    }
                }
                assert!(!p.any_of.is_empty(), "{}: {}", tool.name, p.path);
                for name in p.any_of {
                    assert!(is_name(name), "{}: {name}", tool.name);
                }
            }
            // `pve_api_request` sends whatever request it is given, so what
            // it needs is whatever that endpoint needs: nothing fixed.
            let own_request = tool.routes == [crate::route::Route::CALL_REQUEST];
            if !tool.routes.is_empty() && !own_request {
                assert!(!tool.privileges.is_empty(), "{} writes", tool.name);
            }
        }
    }

    /// Every read tool names the GETs it makes (all but
    /// `pve_list_clusters`, which answers from the host's configuration),
    /// as paths under `/api2/json` whose placeholders are its arguments or
    /// what it resolves itself; a tool that writes names its routes instead.
    #[test]
    fn read_tools_declare_their_gets() {
        for tool in TOOLS {
            if !tool.routes.is_empty() {
                assert!(tool.reads.is_empty(), "{}", tool.name);
                continue;
            }
            if tool.name != "pve_list_clusters" {
                assert!(!tool.reads.is_empty(), "{} declares no reads", tool.name);
            }
            let arguments = (tool.arguments)();
            for read in tool.reads {
                let path = read.split('?').next().unwrap_or_default();
                assert!(
                    path.starts_with('/') && !path.ends_with('/'),
                    "{}: {read}",
                    tool.name
                );
                for segment in path.split('/').skip(1) {
                    if let Some(name) = segment.strip_prefix('{') {
                        let name = name.strip_suffix('}').expect("a closed placeholder");
                        assert!(
                            ["node", "vm_type"].contains(&name) || arguments.contains(&name),
                            "{}: {{{name}}} in {read} is not an argument",
                            tool.name
                        );
                    } else {
                        assert!(
                            !segment.is_empty()
                                && segment
                                    .bytes()
                                    .all(|b| b.is_ascii_alphanumeric() || b == b'-'),
                            "{}: {read}",
                            tool.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn checked_in_schemas_are_current() {
        let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
        let mut stale = Vec::new();
        // First, as pve_check_permissions' output schema is derived from it.
        let needs = check_permissions::derive_needs(TOOLS);
        // Compact like the schemas: the component carries it.
        let mut want = serde_json::to_string(&needs).expect("needs serialise");
        want.push('\n');
        let file = "schemas/privileges.json";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
            if update {
                std::fs::write(&path, &want).expect("writing schemas/privileges.json");
            }
            stale.push(file.to_owned());
        }
        for tool in TOOLS {
            let derived = (tool.derived)();
            for (kind, listed, checked_in) in [
                ("input", derived.listed_input(), tool.input_schema),
                ("output", derived.listed_output(), tool.output_schema),
            ] {
                let want = schemas::text(&listed);
                if want == checked_in {
                    continue;
                }
                let file = format!("schemas/{}.{kind}.json", tool.name);
                if update {
                    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&file);
                    std::fs::write(&path, want).expect("writing a schema file");
                }
                stale.push(file);
            }
        }
        assert!(
            update || stale.is_empty(),
            "guest/{} out of date with the tool types; regenerate with \
             `UPDATE_SCHEMAS=1 cargo test -p pve-mcp-guest` and commit the result",
            stale.join(", guest/")
        );
    }
}
