//! `pve_guest_file_write`: writes a file inside a VM through its guest
//! agent (`POST .../agent/file-write`), replacing what was there.
//!
//! Text goes as given with `encode=1` (Proxmox encodes it for the agent);
//! base64 is checked here and goes as given with `encode=0`. Proxmox takes
//! at most 61440 bytes of `content` either way.

use crate::arg::guest::{Bytes, GuestPath};
use crate::agent_tool::{agent_input, agent_path, prepare};
use crate::base64;
use crate::action::{self, ActionOutput, Execution, Prepared};
use crate::api::Pve;
use crate::arg::{Flag, choice};
use crate::error::ToolError;
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

/// Proxmox's limit on `content`, in bytes.
pub const CONTENT_MAX: usize = 61440;

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_guest_file_write",
    title: "Write a file in a VM",
    description: "Write (replace) a file inside a running VM via its guest agent.",
    annotations: Annotations::write(true, false),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/qemu/{vmid}/agent/file-write",
        &[
            Param::from("file", "path"),
            Param::arg("content"),
            Param::fixed("encode", &["0", "1"]),
        ],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.GuestAgent.FileWrite" | "VM.GuestAgent.Unrestricted" | "VM.Monitor",
    ],
    run: run,
};

choice! {
    /// How `content` is given.
    pub enum Encoding {
        /// Text, written as its UTF-8 bytes.
        Text = "text",
        /// Base64 of the bytes to write.
        Base64 = "base64",
    }
}

agent_input! {
    /// The file to write.
    pub struct Input {
        /// Absolute path in the guest
        pub path: GuestPath,
        /// What to write, ≤ 61440 bytes
        pub content: Bytes<CONTENT_MAX>,
        /// text (default) or base64
        pub encoding: Option<Encoding>,
        /// Plan only, send nothing
        #[serde(default)]
        pub dry_run: Flag,
    }
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<ActionOutput>, ToolError> {
    let content = input.content.as_str();
    let encoding = input.encoding.unwrap_or(Encoding::Text);
    let bytes = match encoding {
        Encoding::Text => content.len(),
        Encoding::Base64 => base64::decode(content)
            .ok_or_else(|| {
                ToolError::field(
                    "content",
                    "is not base64 (RFC 4648 with = padding, no line breaks); fix it, or pass \
                     encoding \"text\" for plain text",
                )
            })?
            .len(),
    };
    let ready = prepare(pve, input.wanted())?;
    let target = &ready.target;
    let path = input.path.as_str();
    let encode = match encoding {
        Encoding::Text => "1",
        Encoding::Base64 => "0",
    };
    let request = WriteRequest::new(Method::Post, agent_path(target, "file-write"))
        .text("file", Some(path))
        .text("content", Some(content))
        .text("encode", Some(encode));
    let prepared = Prepared::Act {
        request,
        effect: format!(
            "{path} in {} is written with {bytes} bytes, replacing any file there",
            target.label()
        ),
    };
    let execution = Execution {
        dry_run: input.dry_run.0,
        wait: false,
        wait_timeout: None,
    };
    action::run(pve, target, ready.found, prepared, execution)
        .map_err(|e| crate::agent::explain(target, e))
}

#[cfg(test)]
mod tests {
    use crate::agent_tool::testing::{fake, with_status};
    use super::*;
    use crate::tool::testing::assert_valid_output;
    use serde_json::{Value, json};

    const WRITE: &str = "POST /nodes/pve1/qemu/100/agent/file-write";

    #[test]
    fn text_is_sent_as_given_with_encode_1() {
        let mut pve = fake().answering(WRITE, Value::Null);
        let args = json!({"vmid": 100, "path": "/etc/motd", "content": "hi there\n"});
        let out = TOOL.call(&mut pve, &args.to_string()).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(
            pve.writes,
            ["POST /nodes/pve1/qemu/100/agent/file-write file=%2Fetc%2Fmotd&content=hi%20there%0A&encode=1"]
        );
        assert_eq!(out.structured["sent"], true);
        assert!(out.structured["effect"].as_str().unwrap().contains("9 bytes"));
    }

    #[test]
    fn base64_is_checked_and_sent_as_given_with_encode_0() {
        let mut pve = fake().answering(WRITE, Value::Null);
        let args = json!({"vmid": 100, "path": "C:\\x.bin", "content": "AAH/", "encoding": "base64"});
        TOOL.call(&mut pve, &args.to_string()).unwrap();
        assert_eq!(
            pve.writes,
            ["POST /nodes/pve1/qemu/100/agent/file-write file=C%3A%5Cx.bin&content=AAH%2F&encode=0"]
        );
        let mut pve = fake();
        let args = json!({"vmid": 100, "path": "/x", "content": "not base64!", "encoding": "base64"});
        let e = TOOL.call(&mut pve, &args.to_string()).unwrap_err();
        assert!(e.message().starts_with("content: is not base64"), "{e}");
        assert!(pve.requests.is_empty());
    }

    #[test]
    fn a_dry_run_sends_nothing() {
        let mut pve = fake();
        let args = json!({"vmid": 100, "path": "/etc/motd", "content": "x", "dry_run": true});
        let out = TOOL.call(&mut pve, &args.to_string()).unwrap();
        assert_valid_output(&TOOL, &out);
        assert!(pve.writes.is_empty());
        assert_eq!(out.structured["dry_run"], true);
        assert_eq!(out.structured["requests"][0]["params"]["encode"], "1");
    }

    #[test]
    fn refusals_send_nothing() {
        let big = "x".repeat(CONTENT_MAX + 1);
        for (mut pve, args, needle) in [
            (fake(), json!({"vmid": 100, "path": "/x", "content": big}), "content: is 61441 bytes, more than Proxmox's limit of 61440"),
            (fake(), json!({"vmid": 100, "path": "/x//y", "content": "a"}), "path: "),
            (fake(), json!({"vmid": 100, "path": "/x", "content": "a", "encoding": "hex"}), "encoding: "),
            (fake(), json!({"vmid": 200, "path": "/x", "content": "a"}), "is a container"),
            (with_status(json!({"status": "running"})), json!({"vmid": 100, "path": "/x", "content": "a"}), "agent"),
        ] {
            let e = TOOL.call(&mut pve, &args.to_string()).unwrap_err();
            assert!(e.message().contains(needle), "{needle}: {e}");
            assert!(pve.writes.is_empty());
        }
    }
}
