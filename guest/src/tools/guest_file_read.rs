//! `pve_guest_file_read`: a file's content read from inside a VM through
//! its guest agent (`GET .../agent/file-read`, a read the host guards).
//!
//! PVE 9 takes `decode=0` and `count` and answers the content in base64;
//! PVE 8 knows neither (a 400 naming `decode`), so the tool asks again with
//! `file` alone, and gets the bytes as a string of characters ≤ U+00FF.

use serde::Serialize;
use serde_json::Value;

use crate::arg::guest::GuestPath;
use crate::agent_tool::{agent_input, agent_path, get_object, prepare};
use crate::base64;
use crate::api::Pve;
use crate::arg::{Int, choice};
use crate::error::ToolError;
use crate::json as pj;
use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};

/// Bytes read unless `max_bytes` says otherwise.
pub const DEFAULT_MAX: u64 = 65536;
/// [`DEFAULT_MAX`] as the route declares it.
const DEFAULT_MAX_TEXT: &str = "65536";
/// Proxmox's own limit.
pub const MAX: u64 = 16 * 1024 * 1024;

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_guest_file_read",
    title: "Read a file in a VM",
    description: "Read a file inside a running VM via its guest agent.",
    annotations: Annotations::write(true, false),
    routes: &[Route::new(
        "GET",
        "/nodes/{node}/qemu/{vmid}/agent/file-read",
        &[
            Param::from("file", "path"),
            Param::fixed("decode", &["0"]),
            Param::from("count", "max_bytes").or_one_of(&[DEFAULT_MAX_TEXT]),
        ],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Audit",
        "/vms/{vmid}": "VM.GuestAgent.FileRead" | "VM.GuestAgent.Unrestricted" | "VM.Monitor",
    ],
    run: run,
};

agent_input! {
    /// The file to read.
    pub struct Input {
        /// Absolute path in the guest
        pub path: GuestPath,
        /// Most bytes to read (default 65536)
        pub max_bytes: Option<Int<1, MAX>>,
    }
}

choice! {
    /// How `content` holds the bytes.
    pub enum Encoding {
        /// UTF-8 text, as it is.
        Text = "text",
        /// Base64 of bytes that are not UTF-8.
        Base64 = "base64",
    }
}

/// A file's content.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct FileContent {
    /// VM id
    pub vmid: u32,
    /// Node it runs on
    pub node: String,
    /// The file read
    pub path: String,
    /// The content: text, or base64 when the bytes are not UTF-8
    pub content: String,
    /// text or base64
    pub encoding: Encoding,
    /// Bytes read
    pub bytes: u64,
    /// The file goes on past what was read
    pub truncated: bool,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<FileContent>, ToolError> {
    let max = input.max_bytes.map_or(DEFAULT_MAX, |m| m.0);
    let ready = prepare(pve, input.wanted())?;
    let target = &ready.target;
    let path = input.path.as_str();
    let base = agent_path(target, "file-read").query("file", path);
    let pve9 = base.clone().query("decode", "0").query("count", &max.to_string());
    let (mut bytes, mut truncated) = match get_object(pve, target, &pve9) {
        Ok(data) => {
            let coded = pj::text(data.get("content")).unwrap_or_default();
            let bytes = base64::decode(&coded).ok_or_else(|| {
                ToolError::Upstream(format!(
                    "Proxmox's file-read answer is not base64 although decode=0 was sent; this \
                     Proxmox version may not be supported. [GET /api2/json{pve9}]"
                ))
            })?;
            (bytes, pj::flag(data.get("truncated")))
        }
        Err(e) if is_pve8(&e) => {
            let data = get_object(pve, target, &base)?;
            let content = data.get("content").and_then(Value::as_str).unwrap_or_default();
            (latin1_bytes(content), pj::flag(data.get("truncated")))
        }
        Err(e) => return Err(e),
    };
    if bytes.len() as u64 > max {
        bytes.truncate(max as usize);
        truncated = true;
    }
    let n = bytes.len() as u64;
    let (content, encoding) = match String::from_utf8(bytes) {
        Ok(text) => (text, Encoding::Text),
        Err(e) => (base64::encode(e.as_bytes()), Encoding::Base64),
    };
    let label = target.label();
    let more = if truncated { "; the file goes on (raise max_bytes)" } else { "" };
    let summary = format!(
        "Read {n} bytes of {path} in {label} on {}, as {}{more}.",
        target.node,
        encoding.as_str()
    );
    Ok(Answer {
        structured: FileContent {
            vmid: target.vmid,
            node: target.node.clone(),
            path: path.to_owned(),
            content,
            encoding,
            bytes: n,
            truncated,
        },
        summary,
    })
}

/// A 400 from a Proxmox that knows neither `decode` nor `count` (PVE 8).
fn is_pve8(e: &ToolError) -> bool {
    let m = e.message();
    m.contains("HTTP 400")
        && m.contains("property is not defined in schema")
        && (m.contains("decode") || m.contains("count"))
}

/// PVE 8's content: each character one byte, unless one is beyond U+00FF,
/// when it is text after all (its UTF-8 bytes).
fn latin1_bytes(content: &str) -> Vec<u8> {
    if content.chars().all(|c| u32::from(c) <= 0xFF) {
        content.chars().map(|c| u32::from(c) as u8).collect()
    } else {
        content.as_bytes().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use crate::agent_tool::testing::fake;
    use super::*;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const READ: &str = "/nodes/pve1/qemu/100/agent/file-read?file=%2Fetc%2Fhostname";

    fn pve9(count: u64) -> String {
        format!("{READ}&decode=0&count={count}")
    }

    #[test]
    fn the_default_and_the_route_agree() {
        assert_eq!(DEFAULT_MAX.to_string(), DEFAULT_MAX_TEXT);
    }

    #[test]
    fn pve9_answers_base64_and_text_is_returned_as_text() {
        let mut pve = fake().with(&pve9(DEFAULT_MAX), json!({"content": base64::encode(b"web01\n")}));
        let out = TOOL.call(&mut pve, r#"{"vmid": 100, "path": "/etc/hostname"}"#).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["content"], "web01\n");
        assert_eq!(s["encoding"], "text");
        assert_eq!(s["bytes"], 6);
        assert_eq!(s["truncated"], false);
        assert_eq!(pve.requests.last().unwrap(), &pve9(DEFAULT_MAX));
        assert!(pve.writes.is_empty());
    }

    #[test]
    fn bytes_that_are_not_utf8_come_as_base64() {
        let raw = [0x7f, b'E', b'L', b'F', 0xff, 0x00];
        let mut pve = fake().with(&pve9(6), json!({"content": base64::encode(&raw), "truncated": 1}));
        let out = TOOL
            .call(&mut pve, r#"{"vmid": 100, "path": "/etc/hostname", "max_bytes": 6}"#)
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["encoding"], "base64");
        assert_eq!(base64::decode(out.structured["content"].as_str().unwrap()).unwrap(), raw);
        assert_eq!(out.structured["truncated"], true);
    }

    #[test]
    fn pve8_is_asked_again_with_the_file_alone() {
        let refusal = ToolError::Upstream(
            "Proxmox rejected the request parameters (HTTP 400 \"Parameter verification failed. \
             decode: property is not defined in schema and the schema does not allow additional \
             properties; count: property is not defined in schema and the schema does not allow \
             additional properties\"). [GET ...]"
                .into(),
        );
        // Latin-1 bytes as characters: "é" is the byte 0xE9, not UTF-8.
        let mut pve = fake()
            .failing(&pve9(4), refusal.clone())
            .with(READ, json!({"content": "ab\u{e9}cdef"}));
        let out = TOOL
            .call(&mut pve, r#"{"vmid": 100, "path": "/etc/hostname", "max_bytes": 4}"#)
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["encoding"], "base64");
        assert_eq!(base64::decode(out.structured["content"].as_str().unwrap()).unwrap(), b"ab\xe9c");
        assert_eq!(out.structured["bytes"], 4);
        assert_eq!(out.structured["truncated"], true);
        // A character beyond U+00FF: text after all.
        let mut pve = fake().failing(&pve9(DEFAULT_MAX), refusal).with(READ, json!({"content": "€ ok"}));
        let out = TOOL.call(&mut pve, r#"{"vmid": 100, "path": "/etc/hostname"}"#).unwrap();
        assert_eq!(out.structured["content"], "€ ok");
        assert_eq!(out.structured["encoding"], "text");
    }

    #[test]
    fn bad_paths_and_stopped_vms_are_refused_before_reading() {
        for (args, needle) in [
            (json!({"vmid": 100, "path": "etc/passwd"}), "path: "),
            (json!({"vmid": 100, "path": "/etc/../shadow"}), "path: "),
            (json!({"vmid": 100, "path": "/a", "max_bytes": 0}), "max_bytes: "),
            (json!({"vmid": 100, "path": "/a", "dry_run": true}), "dry_run: unknown argument"),
        ] {
            let mut pve = fake();
            let e = TOOL.call(&mut pve, &args.to_string()).unwrap_err();
            assert!(e.message().starts_with(needle), "{needle}: {e}");
            assert!(pve.requests.is_empty());
        }
        let mut pve = crate::agent_tool::testing::with_status(json!({"status": "stopped"}));
        let e = TOOL.call(&mut pve, r#"{"vmid": 100, "path": "/a"}"#).unwrap_err();
        assert!(e.message().contains("pve_start_vm"), "{e}");
        assert!(!pve.requests.iter().any(|r| r.contains("file-read")));
    }

    #[test]
    fn the_agents_error_is_quoted() {
        let mut pve = fake().failing(
            &pve9(DEFAULT_MAX),
            ToolError::Upstream(
                "Proxmox returned an error (HTTP 500 \"Agent error: Guest agent command failed, \
                 error was 'failed to open file '/etc/hostname': Permission denied'\")."
                    .into(),
            ),
        );
        let e = TOOL.call(&mut pve, r#"{"vmid": 100, "path": "/etc/hostname"}"#).unwrap_err();
        assert!(e.message().contains("The guest refused access"), "{e}");
        assert!(e.message().contains("Permission denied"), "{e}");
    }
}
