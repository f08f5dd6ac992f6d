//! Answers from the QEMU guest agent, as Proxmox relays them.
//!
//! `GET .../qemu/{vmid}/agent/<command>` wraps whatever the agent answered
//! in `{"result": ...}`, and qemu-server's `Agent.pm` does not look inside:
//! when the agent itself refuses a command (too old, or the command blocked
//! in its configuration), the call still succeeds with HTTP 200 and
//! `{"result": {"error": {"class": ..., "desc": ...}}}`. Every agent-backed
//! read must check for that before reading the result, or the refusal
//! reads as an empty answer.

use serde_json::Value;

use crate::error::{ToolError, quoted};
use crate::resolve::Target;

/// The agent's answer to `command` for `label` (e.g. "VM 101"), or a tool
/// error quoting the agent's own error class and description and saying
/// what to check.
pub fn result<'a>(data: &'a Value, label: &str, command: &str) -> Result<&'a Value, ToolError> {
    let result = data.get("result").unwrap_or(data);
    let Some(error) = result.get("error").filter(|e| e.is_object()) else {
        return Ok(result);
    };
    let field = |k: &str| match error.get(k) {
        Some(Value::String(s)) if !s.is_empty() => quoted(s, 200),
        _ => "(none given)".to_owned(),
    };
    Err(ToolError::Upstream(format!(
        "The QEMU guest agent in {label} refused {command}: class {}, description {}. \
         Proxmox reached the agent, but the agent inside the guest does not support or allow \
         this command: update the qemu-guest-agent package in the guest (older versions lack \
         some commands), and check that {command} is not blocked in its configuration \
         (block-rpcs / allow-rpcs in /etc/qemu/qemu-ga.conf, or the --block-rpcs / \
         --allow-rpcs options of the qemu-guest-agent service).",
        field("class"),
        field("desc"),
    )))
}

/// Turns the failures of an agent-backed request for `target` into
/// instructions: no agent configured, the agent not running or not
/// answering, the VM not running, and the agent's own error (qemu-server's
/// `Agent error: ...`, a 500), quoted. Anything else is returned as it is.
pub fn explain(target: &Target, e: ToolError) -> ToolError {
    let ToolError::Upstream(msg) = &e else {
        return e;
    };
    let lower = msg.to_ascii_lowercase();
    let label = target.label();
    let vmid = target.vmid;
    let text = if lower.contains("no qemu guest agent configured") {
        format!(
            "{label} has no QEMU guest agent configured. Enable the agent option \
             (pve_set_vm_config with {{\"agent\": \"1\"}}, or qm set {vmid} --agent enabled=1), \
             then a full stop and start of the VM, and install qemu-guest-agent inside the guest."
        )
    } else if lower.contains("guest agent is not running") {
        format!(
            "The QEMU guest agent in {label} is not running: install the qemu-guest-agent \
             package inside the guest and start its service (e.g. systemctl enable --now \
             qemu-guest-agent; on Windows the QEMU Guest Agent service from the virtio drivers)."
        )
    } else if lower.contains("agent error") {
        let hint = if lower.contains("no such file") || lower.contains("failed to execute") {
            " Check that the program or file exists in the guest; give a program's full \
             path (e.g. /usr/bin/df)."
        } else if lower.contains("permission denied") || lower.contains("access is denied") {
            " The guest refused access: check the file's permissions (the agent usually runs \
             as root, or SYSTEM on Windows) and any SELinux or AppArmor policy."
        } else {
            ""
        };
        format!("The QEMU guest agent in {label} failed the command.{hint}")
    } else if lower.contains("got timeout") {
        format!(
            "The QEMU guest agent in {label} did not answer in time: it may be busy, hung or \
             not installed. Check it inside the guest (systemctl status qemu-guest-agent)."
        )
    } else if lower.contains("not running") {
        format!(
            "{label} is not running; start it first (pve_start_vm; pve_get_vm_status shows \
             its state)."
        )
    } else {
        return e;
    };
    ToolError::Upstream(format!("{text} Proxmox said: {msg}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plain_answer_is_the_result() {
        let data = json!({"result": [{"name": "lo"}]});
        assert_eq!(
            result(&data, "VM 1", "x").unwrap(),
            &json!([{"name": "lo"}])
        );
        // A result that merely has an "error"-named interface is no error.
        let data = json!({"result": [{"name": "error"}]});
        assert!(result(&data, "VM 1", "x").is_ok());
    }

    #[test]
    fn the_agents_error_is_quoted_with_the_fix() {
        let data = json!({"result": {"error": {"class": "Unsupported",
            "desc": "this feature or command is not currently supported"}}});
        let e = result(&data, "VM 101", "network-get-interfaces").unwrap_err();
        assert!(matches!(e, ToolError::Upstream(_)));
        let m = e.message();
        for needle in [
            "VM 101",
            "class \"Unsupported\"",
            "description \"this feature or command is not currently supported\"",
            "update the qemu-guest-agent package",
            "block-rpcs",
        ] {
            assert!(m.contains(needle), "{needle}: {m}");
        }
        // Without the wrapper, and with the fields missing.
        let e = result(&json!({"error": {}}), "VM 1", "x").unwrap_err();
        assert!(e.message().contains("class (none given)"), "{e}");
    }
}
