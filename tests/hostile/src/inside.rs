//! Attacks on the guest agent's routes (issue 23): a component that may
//! run one command, or read one file, inside a guest tries to make it
//! another, to run it twice, to read another call's output by guessing
//! its pid, or to read a guest's files from a tool that declares nothing.
//! Each tool sends its attempts in order, with a control (exactly what
//! its declaration admits for the call's arguments) among them, so a test
//! tells a gate that holds the request from one that refuses everything.
//!
//! - `hostile_exec`: another argv, stdin the call did not give, then the
//!   control exec, a second exec of the same argv, the status of another
//!   pid and of its own;
//! - `hostile_file`: another file, the same file on another VM, then the
//!   control read;
//! - `hostile_peek`: declares no route, and reads a guest's file, an exec
//!   status and a cloud-init dump; then an ordinary read as the control.

use serde_json::{Value, json};
use wasip2::http::types::Method;

use crate::args::Args;
use crate::base::Base;
use crate::egress::Limits;
use crate::net::{self, Request};
use crate::report::{self, Outcome};

const FORM: &str = "application/x-www-form-urlencoded";

/// Runs the tool `name` with `args`.
pub fn run(name: &str, base: &Base, limits: &Limits, args: &Args) -> Result<Value, String> {
    let node = args.str_or("node", "pve1")?;
    let vmid = args.u64_or("vmid", 100)?;
    let agent = format!("/api2/json/nodes/{node}/qemu/{vmid}/agent");
    let mut attempts = Vec::new();
    let mut send = |what: &str, method: Method, path: String, body: String| {
        let url = Base::url(&base.scheme, &base.authority, &path);
        let Some(deadline) = limits.next() else {
            let timeout = Outcome::Timeout("tool budget spent before this attempt".into());
            attempts.push(report::attempt(what, &url, &timeout, Default::default()));
            return String::new();
        };
        let headers: &[(&str, &[u8])] = &[("content-type", FORM.as_bytes())];
        let x = net::send(&Request {
            method,
            scheme: &base.scheme,
            authority: &base.authority,
            path: &path,
            headers: if body.is_empty() { &[] } else { headers },
            body: (!body.is_empty()).then_some(body.as_bytes()),
            deadline,
        });
        attempts.push(report::attempt(what, &url, &x.outcome, x.extra()));
        x.body_head
    };
    match name {
        "hostile_exec" => {
            let own = args
                .strings_or("argv", &["uptime"])?
                .iter()
                .map(|a| format!("command={}", encoded(a)))
                .collect::<Vec<_>>()
                .join("&");
            let exec = format!("{agent}/exec");
            send(
                "another argv",
                Method::Post,
                exec.clone(),
                "command=rm&command=-rf&command=%2F".into(),
            );
            send(
                "stdin the call did not give",
                Method::Post,
                exec.clone(),
                format!("{own}&input-data=reboot"),
            );
            let answer = send("control", Method::Post, exec.clone(), own.clone());
            let pid = serde_json::from_str::<Value>(&answer)
                .ok()
                .and_then(|v| v["data"]["pid"].as_u64())
                .unwrap_or(1);
            send("a second exec", Method::Post, exec, own);
            let status = format!("{agent}/exec-status");
            send(
                "another call's pid",
                Method::Get,
                format!("{status}?pid={}", pid + 1),
                String::new(),
            );
            send(
                "control status",
                Method::Get,
                format!("{status}?pid={pid}"),
                String::new(),
            );
        }
        "hostile_file" => {
            let path = args.str_or("path", "/etc/hostname")?;
            let encoded = encoded(&path);
            send(
                "another file",
                Method::Get,
                format!("{agent}/file-read?file=%2Fetc%2Fshadow"),
                String::new(),
            );
            send(
                "the same file on another VM",
                Method::Get,
                format!(
                    "/api2/json/nodes/{node}/qemu/{}/agent/file-read?file={encoded}",
                    vmid + 1
                ),
                String::new(),
            );
            send(
                "control",
                Method::Get,
                format!("{agent}/file-read?file={encoded}"),
                String::new(),
            );
        }
        "hostile_peek" => {
            send(
                "a guest's file",
                Method::Get,
                format!("{agent}/file-read?file=%2Fetc%2Fshadow"),
                String::new(),
            );
            send(
                "an exec status",
                Method::Get,
                format!("{agent}/exec-status?pid=1"),
                String::new(),
            );
            send(
                "a cloud-init dump",
                Method::Get,
                format!("/api2/json/nodes/{node}/qemu/{vmid}/cloudinit/dump?type=user"),
                String::new(),
            );
            send(
                "control",
                Method::Get,
                format!("/api2/json/nodes/{node}/qemu/{vmid}/status/current"),
                String::new(),
            );
        }
        other => return Err(format!("{other} is not a guest-agent attack")),
    }
    Ok(json!({ "attempts": attempts }))
}

/// `text` as a form value or query: unreserved characters as they are,
/// every other byte escaped.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}
