//! The sensitive classes (`route::sensitive`) against the official Proxmox
//! API schema: every write (POST, PUT, DELETE) of every path is either in
//! a class or on [`ORDINARY`], the writes `pve_api_request` may send under
//! a plain `action = "allow"`, each with the reason it needs no class. A
//! path a new Proxmox release adds, or a class pattern changed, fails here
//! until someone decides which it is (issue 21, F5: 56 writes were in no
//! class).
//!
//! The schema is `../shared/pve-api/apidata.json` beside the repository
//! (pve-docs' `apidata.js`, AGPL-3.0-or-later): test data only, read at
//! test time and never compiled in. Missing, the test fails under `CI` and
//! otherwise prints a note and passes, so a checkout without the shared
//! reference still builds.

use std::collections::BTreeSet;

use pve_mcp::route::ApiRequest;
use pve_mcp::route::sensitive::{CLASSES, class_of};
use serde_json::{Value, json};

/// Where the schema lives: the shared reference beside the repository.
const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/pve-api/apidata.json"
);

/// The writes in no class, and why each may run under a plain allow.
const ORDINARY: &[(&str, &str, &str)] = &[
    // Power: the first-party tools' own job, undone by the opposite call.
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/status/start",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/status/stop",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/status/shutdown",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/status/reboot",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/status/reset",
        "power: a hard reset, as stop then start",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/status/suspend",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/status/resume",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/lxc/{vmid}/status/start",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/lxc/{vmid}/status/stop",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/lxc/{vmid}/status/shutdown",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/lxc/{vmid}/status/reboot",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/lxc/{vmid}/status/suspend",
        "power: the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/lxc/{vmid}/status/resume",
        "power: the tools' own job",
    ),
    // Power and housekeeping through the guest agent: nothing read back,
    // nothing run that the caller names.
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/agent/ping",
        "agent: only checks that the agent answers",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/agent/shutdown",
        "agent: power, as status/shutdown",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/agent/suspend-disk",
        "agent: power, as status/suspend",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/agent/suspend-hybrid",
        "agent: power, as status/suspend",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/agent/suspend-ram",
        "agent: power, as status/suspend",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/agent/fsfreeze-freeze",
        "agent: holds the guest's writes for a consistent backup; fsfreeze-thaw ends it",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/agent/fsfreeze-thaw",
        "agent: ends fsfreeze-freeze",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/agent/fsfreeze-status",
        "agent: reports the freeze state (a POST in the schema, a read in effect)",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/agent/fstrim",
        "agent: discards blocks the guest no longer uses",
    ),
    // Lifecycle the first-party tools cover: adds, moves or grows, and
    // never removes data.
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/snapshot",
        "snapshot: adds one; deleting or rolling back is guest-destroy",
    ),
    (
        "POST",
        "/nodes/{node}/lxc/{vmid}/snapshot",
        "snapshot: adds one; deleting or rolling back is guest-destroy",
    ),
    (
        "PUT",
        "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config",
        "snapshot: its description only",
    ),
    (
        "PUT",
        "/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/config",
        "snapshot: its description only",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/clone",
        "clone: a new guest from a copy; Proxmox refuses a VMID in use",
    ),
    (
        "POST",
        "/nodes/{node}/lxc/{vmid}/clone",
        "clone: a new guest from a copy; Proxmox refuses a VMID in use",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/migrate",
        "migrate: to another node of the same cluster; the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/lxc/{vmid}/migrate",
        "migrate: to another node of the same cluster; the tools' own job",
    ),
    (
        "POST",
        "/nodes/{node}/qemu/{vmid}/dbus-vmstate",
        "migrate: the helper that carries a VM's device state during a migration",
    ),
    (
        "PUT",
        "/nodes/{node}/qemu/{vmid}/resize",
        "resize: grows a disk; Proxmox refuses to shrink one",
    ),
    (
        "PUT",
        "/nodes/{node}/lxc/{vmid}/resize",
        "resize: grows a disk; Proxmox refuses to shrink one",
    ),
    (
        "PUT",
        "/nodes/{node}/qemu/{vmid}/cloudinit",
        "cloud-init: rebuilds the drive from the config already set (setting it is guest-config)",
    ),
    (
        "DELETE",
        "/nodes/{node}/tasks/{upid}",
        "tasks: stops a running task; what it did so far stays",
    ),
];

/// Each method of each path in the schema, paths as the schema writes
/// them (`/nodes/{node}/qemu`).
fn endpoints(tree: &Value, out: &mut Vec<(String, String)>) {
    for node in tree.as_array().into_iter().flatten() {
        let path = node["path"].as_str().expect("every schema node has a path");
        if let Some(info) = node["info"].as_object() {
            for method in info.keys() {
                out.push((method.clone(), path.to_string()));
            }
        }
        endpoints(&node["children"], out);
    }
}

/// The schema's endpoints, or `None` (with a note) when the shared
/// reference is not beside this checkout and `CI` is not set.
fn schema() -> Option<Vec<(String, String)>> {
    let text = match std::fs::read_to_string(SCHEMA) {
        Ok(text) => text,
        Err(e) if std::env::var_os("CI").is_some() => {
            panic!(
                "{SCHEMA}: {e}. CI must check the sensitive classes against the API schema; \
                 lay out the shared reference beside the repository (shared/pve-api/apidata.json)"
            )
        }
        Err(e) => {
            eprintln!("note: {SCHEMA}: {e}; the sensitive classes are not checked against it");
            return None;
        }
    };
    let tree: Value = serde_json::from_str(&text).expect("apidata.json is JSON");
    let mut out = Vec::new();
    endpoints(&tree, &mut out);
    assert!(out.len() > 500, "only {} endpoints in {SCHEMA}", out.len());
    Some(out)
}

/// The request a schema endpoint stands for, each `{placeholder}` as the
/// segment `x` (a class pattern's `*`; no pattern names `x` literally).
fn request(method: &str, path: &str) -> ApiRequest {
    let concrete: Vec<&str> = path
        .split('/')
        .map(|s| if s.starts_with('{') { "x" } else { s })
        .collect();
    let mut args = json!({"method": method, "path": concrete.join("/")})
        .as_object()
        .cloned()
        .unwrap();
    ApiRequest::normalise(&mut args).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

fn class_name(method: &str, path: &str) -> Option<&'static str> {
    class_of(&request(method, path)).map(|c| c.name)
}

fn is_write(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "DELETE")
}

#[test]
fn every_write_in_the_schema_is_in_a_class_or_ordinary_for_a_reason() {
    let Some(endpoints) = schema() else { return };
    let ordinary: BTreeSet<(&str, &str)> = ORDINARY.iter().map(|(m, p, _)| (*m, *p)).collect();
    assert_eq!(
        ordinary.len(),
        ORDINARY.len(),
        "ORDINARY lists a write twice"
    );
    let unjudged: Vec<String> = endpoints
        .iter()
        .filter(|(m, p)| is_write(m) && class_name(m, p).is_none())
        .filter(|(m, p)| !ordinary.contains(&(m.as_str(), p.as_str())))
        .map(|(m, p)| format!("{m} {p}"))
        .collect();
    assert!(
        unjudged.is_empty(),
        "{} writes are in no sensitive class and not in ORDINARY; add each to its class in \
         host/src/route/sensitive.rs, or to ORDINARY here with the reason it needs none:\n{}",
        unjudged.len(),
        unjudged.join("\n")
    );
}

#[test]
fn every_ordinary_write_is_in_the_schema_and_in_no_class() {
    let Some(endpoints) = schema() else { return };
    for (method, path, why) in ORDINARY {
        assert!(!why.is_empty(), "{method} {path}: give the reason");
        assert!(
            endpoints.iter().any(|(m, p)| m == method && p == path),
            "{method} {path} is in ORDINARY but not in the schema; drop it"
        );
        assert_eq!(
            class_name(method, path),
            None,
            "{method} {path} is in ORDINARY and in a sensitive class; drop it from ORDINARY"
        );
    }
}

/// A read that makes the node connect to a host the caller names (a
/// `server`, `portal`, `url` or registry `reference` parameter) runs even
/// under `write = false`, so it must be in a class, GET included.
#[test]
fn reads_that_connect_to_a_host_the_caller_names_are_in_url_fetch() {
    let Some(_) = schema() else { return };
    let tree: Value = serde_json::from_str(&std::fs::read_to_string(SCHEMA).unwrap()).unwrap();
    let mut found = Vec::new();
    outbound_reads(&tree, &mut found);
    assert!(found.len() >= 5, "only {found:?}");
    for path in found {
        assert_eq!(class_name("GET", &path), Some("url-fetch"), "GET {path}");
    }
}

/// The GET paths whose parameters name a host or URL to reach.
fn outbound_reads(tree: &Value, out: &mut Vec<String>) {
    for node in tree.as_array().into_iter().flatten() {
        let params = &node["info"]["GET"]["parameters"]["properties"];
        if ["server", "portal", "url", "reference"]
            .iter()
            .any(|p| params.get(p).is_some())
        {
            out.push(node["path"].as_str().unwrap().to_string());
        }
        outbound_reads(&node["children"], out);
    }
}

/// Every pattern of every class holds at least one endpoint of the
/// schema, so a misspelt segment cannot leave a class quietly empty.
#[test]
fn every_class_pattern_holds_a_schema_endpoint() {
    let Some(endpoints) = schema() else { return };
    let requests: Vec<ApiRequest> = endpoints.iter().map(|(m, p)| request(m, p)).collect();
    for class in CLASSES {
        for pattern in class.patterns {
            // Held by this pattern, and not taken first by an earlier class.
            let held = requests
                .iter()
                .any(|r| pattern.holds(r) && class_of(r).is_some_and(|c| c.name == class.name));
            assert!(
                held,
                "{}: the pattern /{} holds no endpoint of the schema; fix its segments",
                class.name,
                pattern.path.join("/")
            );
        }
    }
}
