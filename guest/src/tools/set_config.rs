//! `pve_set_vm_config`: `PUT /nodes/{node}/{qemu|lxc}/{vmid}/config`.
//!
//! Reads the config first and sends its `digest`, so a change someone else
//! made in the meantime is refused by Proxmox (`checksum mismatch`) rather
//! than overwritten. Values are encoded the way Proxmox reads them
//! (booleans `1`/`0`), keys are checked against PVE's config key format,
//! and keys only `root@pam` may set (a token never can) are refused with
//! the reason, as is `digest` itself. Keys whose value already is what is
//! asked are left out; when nothing is left, nothing is sent. The plan
//! names each change with its old value, for undo.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::route::{DIGEST, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::action::{self, ActionOutput, Prepared, action_input};
use crate::api::Pve;
use crate::error::{ToolError, quoted};
use crate::fetch;
use crate::json as pj;
use crate::write::{Method, Param, WriteRequest};

/// Keys only `root@pam` may set, or that pve-mcp sets itself.
const REFUSED: &[(&str, &str)] = &[
    ("args", "only root@pam may set it, never an API token"),
    ("lock", "only root@pam may set it, never an API token"),
    ("hookscript", "only root@pam may set it, never an API token"),
    ("affinity", "only root@pam may set it, never an API token"),
    ("skiplock", "only root@pam may use it, never an API token"),
    (
        "digest",
        "pve-mcp sends the digest of the config it read itself",
    ),
    (
        "cipassword",
        "a password in a tool call ends up in logs; set cloud-init SSH keys (sshkeys) instead",
    ),
    (
        "vmid",
        "it names the guest; pass it as the tool's vmid argument",
    ),
    (
        "node",
        "it names the node; pass it as the tool's node argument",
    ),
];

/// The config changes: keys and values as Proxmox names them.
#[derive(Debug, Clone, PartialEq)]
pub struct Changes(pub Map<String, Value>);

impl Changes {
    fn from_json(v: &Value) -> Result<Self, String> {
        let example = "e.g. {\"memory\": 4096, \"onboot\": true, \"delete\": \"tags\"}";
        let Value::Object(map) = v else {
            return Err(format!(
                "must be an object of config keys and values, {example}, not {}",
                crate::arg::json_kind(v)
            ));
        };
        if map.is_empty() {
            return Err(format!("is empty; name at least one change, {example}"));
        }
        if map.len() > 200 {
            return Err("has more than 200 keys; send fewer changes at once".into());
        }
        for (key, value) in map {
            let b = key.as_bytes();
            let key_ok = (1..=64).contains(&b.len())
                && b[0].is_ascii_lowercase()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_-".contains(c));
            if !key_ok {
                return Err(format!(
                    "{} is not a Proxmox config key (lower-case letters, digits, '-' and '_', \
                     e.g. \"memory\" or \"net0\")",
                    quoted(key, 64)
                ));
            }
            if let Some((_, why)) = REFUSED.iter().find(|(k, _)| k == key) {
                return Err(format!("{key} cannot be set here: {why}"));
            }
            match value {
                Value::String(s) if s.chars().any(char::is_control) && key != "description" => {
                    return Err(format!("{key}: the value contains a control character"));
                }
                Value::String(s) if s.len() > 8192 => {
                    return Err(format!("{key}: the value is longer than 8192 bytes"));
                }
                Value::String(_) | Value::Bool(_) => {}
                Value::Number(n) if n.is_i64() || n.is_f64() => {}
                other => {
                    return Err(format!(
                        "{key}: must be a string, number or boolean, not {}",
                        crate::arg::json_kind(other)
                    ));
                }
            }
        }
        Ok(Changes(map.clone()))
    }
}
crate::arg::deserialize_from_json!(Changes);
crate::arg::fixed_schema!(
    Changes,
    serde_json::json!({
        "type": "object",
        "minProperties": 1,
        "maxProperties": 200,
        "propertyNames": {"pattern": "^[a-z][a-z0-9_-]{0,63}$"},
        "additionalProperties": {"type": ["string", "number", "boolean"]},
    })
);

action_input! {
    /// The guest and the changes.
    pub struct Input {
        /// Keys and new values, e.g. {"memory": 4096}; "delete": "k1,k2" removes
        pub config: Changes,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_set_vm_config",
    title: "Change a VM's or container's options",
    description: "Change a guest's config options, refused if it changed meanwhile; some apply at \
        the next reboot. Returns each change with its old value.",
    // Destructive as a tool: a call may `delete` keys (an unused disk is
    // destroyed at once) or lift `protection`, and the host's tier is per
    // tool, so the tool needs its own policy rule and an operator approves.
    annotations: Annotations::write(true, true),
    routes: &[Route::new("PUT", "/nodes/{node}/{vm_type}/{vmid}/config", &[DIGEST]).with_entries("config")],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        // Proxmox checks each key against its own privilege; any one lets
        // the request through to that check.
        "/vms/{vmid}": "VM.Config.Disk" | "VM.Config.CDROM" | "VM.Config.CPU"
            | "VM.Config.Memory" | "VM.Config.Network" | "VM.Config.HWType"
            | "VM.Config.Options" | "VM.Config.Cloudinit",
    ],
    run: run,
};

/// One change, as the plan shows it.
#[derive(Debug, Clone, Serialize)]
struct Change {
    key: String,
    old: Option<String>,
    new: String,
}

fn wire(value: &Value) -> Param {
    match value {
        Value::Bool(b) => Param::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Param::Int(i),
            None => Param::Text(n.to_string()),
        },
        Value::String(s) => Param::Text(s.clone()),
        other => Param::Text(other.to_string()),
    }
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    let execution = input.execution();
    action::on_guest(pve, input.wanted(), execution, |pve, target, state| {
        state.refuse_if_locked(target)?;
        let config = fetch::object(pve, &action::guest_path(target).lit("config"))?;
        let mut request = WriteRequest::new(Method::Put, action::guest_path(target).lit("config"));
        let mut changes = Vec::new();
        for (key, value) in &input.config.0 {
            let new = wire(value);
            let old = pj::text(config.get(key));
            let control = key == "delete" || key == "revert";
            if !control && old.as_deref() == Some(new.wire().as_str()) {
                continue;
            }
            changes.push(Change {
                key: key.clone(),
                old: if control { None } else { old },
                new: new.wire(),
            });
            request = request.param(key, new);
        }
        let label = target.label();
        if changes.is_empty() {
            return Ok(Prepared::NothingToDo {
                why: format!("{label} already has every value asked for"),
            });
        }
        request = request.text("digest", pj::text(config.get("digest")).as_deref());
        let listed: Vec<String> = changes
            .iter()
            .map(|c| match (c.key.as_str(), &c.old) {
                ("delete", _) => format!("remove {}", c.new),
                ("revert", _) => format!("revert pending {}", c.new),
                (k, Some(old)) => format!("{k}: {old} -> {}", c.new),
                (k, None) => format!("{k}: (unset) -> {}", c.new),
            })
            .collect();
        Ok(Prepared::Act {
            request,
            effect: format!(
                "{label}'s config changes: {}; refused by Proxmox if the config changed since it \
                 was read",
                listed.join("; ")
            ),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    fn fake() -> FakePve {
        FakePve::default()
            .with(
                "/nodes/pve1/qemu/100/status/current",
                json!({"status": "running"}),
            )
            .with(
                "/nodes/pve1/qemu/100/config",
                json!({"memory": "2048", "onboot": 1, "digest": "d1g357"}),
            )
    }

    fn args(config: Value) -> String {
        json!({"vmid": 100, "node": "pve1", "vm_type": "qemu", "config": config}).to_string()
    }

    #[test]
    fn changes_go_with_the_digest_and_unchanged_keys_are_left_out() {
        let mut pve = fake().answering("PUT /nodes/pve1/qemu/100/config", Value::Null);
        let out = TOOL
            .call(
                &mut pve,
                &args(json!({"memory": 4096, "onboot": true, "delete": "tags"})),
            )
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(
            pve.writes,
            ["PUT /nodes/pve1/qemu/100/config delete=tags&memory=4096&digest=d1g357"]
        );
        let effect = out.structured["effect"].as_str().unwrap();
        assert!(
            effect.contains("memory: 2048 -> 4096") && effect.contains("remove tags"),
            "{effect}"
        );
        assert!(out.summary.contains("at once"), "{}", out.summary);
    }

    #[test]
    fn nothing_changes_nothing_is_sent_and_refused_keys_name_why() {
        let mut pve = fake();
        let out = TOOL
            .call(&mut pve, &args(json!({"memory": 2048, "onboot": true})))
            .unwrap();
        assert_eq!(out.structured["sent"], false);
        for (config, expected) in [
            (
                json!({"args": "-x"}),
                "config: args cannot be set here: only root@pam",
            ),
            (json!({"digest": "x"}), "sends the digest"),
            (json!({}), "is empty"),
            (json!({"Memory": 1}), "not a Proxmox config key"),
            (
                json!({"net0": {"a": 1}}),
                "net0: must be a string, number or boolean",
            ),
        ] {
            let e = TOOL.call(&mut pve, &args(config)).unwrap_err();
            assert!(e.message().contains(expected), "{expected}: {e}");
        }
        assert!(pve.writes.is_empty());
    }
}
