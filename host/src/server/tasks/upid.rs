//! Which Proxmox task a running call waits for, read from the requests it
//! sends: a wait polls `GET /nodes/{node}/tasks/{upid}/status`, so the
//! latest such poll names the task and its node. The guest's progress
//! reports carry log lines, not the UPID, and the host needs no new import
//! to learn it: the gate already records every request as it leaves.

use percent_encoding::percent_decode_str;

use crate::egress::EgressLog;

/// The longest UPID taken (PVE's are about 80 characters).
const MAX_UPID: usize = 512;

/// The Proxmox task being waited on: its node and UPID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waited {
    /// The node the task runs on.
    pub node: String,
    /// Its UPID.
    pub upid: String,
}

/// The task of the latest status poll the gate let through, if any.
pub fn waited(log: &EgressLog) -> Option<Waited> {
    let records = log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    records
        .iter()
        .rev()
        .filter(|r| r.method == "GET" && r.denied.is_none())
        .find_map(|r| from_path(&r.path))
}

/// `(node, upid)` from `.../nodes/{node}/tasks/{upid}/status`.
fn from_path(path: &str) -> Option<Waited> {
    let mut segments = path.rsplit('/');
    if segments.next()? != "status" {
        return None;
    }
    let upid = percent_decode_str(segments.next()?)
        .decode_utf8()
        .ok()?
        .into_owned();
    if segments.next()? != "tasks" {
        return None;
    }
    let node = segments.next()?.to_owned();
    if segments.next()? != "nodes" {
        return None;
    }
    let plausible_node = !node.is_empty()
        && node
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    (upid.starts_with("UPID:") && upid.len() <= MAX_UPID && plausible_node)
        .then_some(Waited { node, upid })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_poll_names_the_task_and_its_node() {
        let path = "/api2/json/nodes/pve1/tasks/UPID%3Apve1%3A0000A1B2%3A00C3D4E5%3A67E12345%3Avzdump%3A100%3Amcp%40pve%21w%3A/status";
        assert_eq!(
            from_path(path),
            Some(Waited {
                node: "pve1".into(),
                upid: "UPID:pve1:0000A1B2:00C3D4E5:67E12345:vzdump:100:mcp@pve!w:".into()
            })
        );
        for other in [
            "/api2/json/nodes/pve1/tasks/UPID%3Apve1/log",
            "/api2/json/nodes/pve1/qemu/100/status",
            "/api2/json/nodes/pve1/tasks/not-a-upid/status",
            "/api2/json/nodes/pv%20e/tasks/UPID%3Ax/status",
            "/status",
        ] {
            assert_eq!(from_path(other), None, "{other}");
        }
    }
}
