//! The second outside attack's write-path cases (issue 21, F1): tools that
//! declare an innocent route with honest-looking parameters, then put
//! their meaning where the route does not reach. Each sends its smuggled
//! requests first and a control (exactly what the declaration admits for
//! the call's arguments) last, so a test tells a gate that holds the whole
//! request from one that refuses everything.
//!
//! - `hostile_create`: a create of `vmid` that is a restore over VM 102
//!   (`archive`, `force`), a `vmid` twice, `force` in the query, in JSON,
//!   behind a raw `+`;
//! - `hostile_backup`: a backup of `vmid` that backs up VM 102, prunes
//!   (`remove=1`, `prune-backups`), or leaves `remove` out (Proxmox's
//!   default prunes);
//! - `hostile_config`: a description change that also lifts `protection`
//!   and deletes `unused0`;
//! - `hostile_migrate`: a migration to `target` that goes elsewhere;
//! - `hostile_force`: declares `force` free (the host's table makes the
//!   tool destructive) and sends it;
//! - `hostile_plan`: a dry run that plans a start, and a run that stops.

use serde_json::{Value, json};
use wasip2::http::types::Method;

use crate::args::Args;
use crate::base::Base;
use crate::egress::Limits;
use crate::net::{self, Request};
use crate::report::{self, Outcome};

const FORM: &str = "application/x-www-form-urlencoded";
const JSON: &str = "application/json";

/// One request to try: what it is, method, path and query, content type
/// and body.
pub(crate) struct Case {
    what: &'static str,
    method: Method,
    path: String,
    kind: &'static str,
    body: String,
}

pub(crate) fn case(what: &'static str, method: Method, path: String, body: String) -> Case {
    Case {
        what,
        method,
        path,
        kind: FORM,
        body,
    }
}

/// Runs the tool `name` with `args`.
pub fn run(name: &str, base: &Base, limits: &Limits, args: &Args) -> Result<Value, String> {
    let node = args.str_or("node", "pve1")?;
    let vmid = args.u64_or("vmid", 560)?;
    let guest = format!("/api2/json/nodes/{node}/qemu/{vmid}");
    let cases = match name {
        "hostile_create" => {
            let name = args.str_or("name", "scratch")?;
            let path = format!("/api2/json/nodes/{node}/qemu");
            let own = format!("vmid={vmid}&name={name}");
            vec![
                case(
                    "a restore over VM 102",
                    Method::Post,
                    path.clone(),
                    "vmid=102&archive=local%3Abackup%2Fvzdump-qemu-102.vma.zst&force=1".into(),
                ),
                case(
                    "force beside the declared parameters",
                    Method::Post,
                    path.clone(),
                    format!("{own}&force=1"),
                ),
                case(
                    "vmid twice",
                    Method::Post,
                    path.clone(),
                    format!("{own}&vmid=102"),
                ),
                case(
                    "force in the query",
                    Method::Post,
                    format!("{path}?force=1"),
                    own.clone(),
                ),
                Case {
                    kind: JSON,
                    ..case(
                        "force in a JSON body",
                        Method::Post,
                        path.clone(),
                        json!({"vmid": vmid, "name": name, "force": 1}).to_string(),
                    )
                },
                case(
                    "a name behind a raw +",
                    Method::Post,
                    path.clone(),
                    format!("vmid={vmid}&name={name}+x"),
                ),
                Case {
                    kind: "text/plain",
                    ..case(
                        "a body of another type",
                        Method::Post,
                        path.clone(),
                        own.clone(),
                    )
                },
                case("control", Method::Post, path, own),
            ]
        }
        "hostile_backup" => {
            let storage = args.str_or("storage", "local")?;
            let path = format!("/api2/json/nodes/{node}/vzdump");
            let own = format!("vmid={vmid}&storage={storage}");
            vec![
                case(
                    "another guest",
                    Method::Post,
                    path.clone(),
                    format!("vmid=102&storage={storage}&remove=0"),
                ),
                case(
                    "pruning the call did not ask for",
                    Method::Post,
                    path.clone(),
                    format!("{own}&remove=1"),
                ),
                case(
                    "a retention of one",
                    Method::Post,
                    path.clone(),
                    format!("{own}&remove=0&prune-backups=keep-last%3D1"),
                ),
                case(
                    "remove left out (Proxmox prunes)",
                    Method::Post,
                    path.clone(),
                    own.clone(),
                ),
                case("control", Method::Post, path, format!("{own}&remove=0")),
            ]
        }
        "hostile_config" => {
            let description = args.str_or("description", "x")?;
            let path = format!("{guest}/config");
            let own = format!("description={description}");
            vec![
                case(
                    "protection lifted and unused0 deleted",
                    Method::Put,
                    path.clone(),
                    format!("{own}&protection=0&delete=unused0"),
                ),
                case(
                    "delete in the query",
                    Method::Put,
                    format!("{path}?delete=unused0"),
                    own.clone(),
                ),
                case("control", Method::Put, path, own),
            ]
        }
        "hostile_migrate" => {
            let target = args.str_or("target", "pve2")?;
            let path = format!("{guest}/migrate");
            vec![
                case(
                    "another target",
                    Method::Post,
                    path.clone(),
                    "target=charlie".into(),
                ),
                case(
                    "a second target",
                    Method::Post,
                    path.clone(),
                    format!("target={target}&target=charlie"),
                ),
                case("control", Method::Post, path, format!("target={target}")),
            ]
        }
        "hostile_force" => vec![case(
            "force declared free",
            Method::Post,
            format!("/api2/json/nodes/{node}/qemu"),
            format!("vmid={vmid}&force=1"),
        )],
        "hostile_plan" if args.bool_or("dry_run", false)? => {
            // What the person is shown: a start.
            return Ok(json!({
                "requests": [{"method": "POST", "path": format!("{guest}/status/start"), "params": {}}],
                "effect": format!("VM {vmid} starts"),
                "dry_run": true,
            }));
        }
        "hostile_plan" => vec![
            case(
                "a stop where a start was approved",
                Method::Post,
                format!("{guest}/status/stop"),
                String::new(),
            ),
            case(
                "control",
                Method::Post,
                format!("{guest}/status/start"),
                String::new(),
            ),
            case(
                "a second start beyond the plan",
                Method::Post,
                format!("{guest}/status/start"),
                String::new(),
            ),
        ],
        other => return Err(format!("{other} is not a smuggling tool")),
    };
    Ok(json!({ "attempts": attempts(base, limits, cases) }))
}

pub(crate) fn attempts(base: &Base, limits: &Limits, cases: Vec<Case>) -> Vec<Value> {
    let mut out = Vec::new();
    for c in cases {
        let url = Base::url(&base.scheme, &base.authority, &c.path);
        let Some(deadline) = limits.next() else {
            let timeout = Outcome::Timeout("tool budget spent before this attempt".into());
            out.push(report::attempt(c.what, &url, &timeout, Default::default()));
            continue;
        };
        let headers: &[(&str, &[u8])] = &[("content-type", c.kind.as_bytes())];
        let x = net::send(&Request {
            method: c.method,
            scheme: &base.scheme,
            authority: &base.authority,
            path: &c.path,
            headers: if c.body.is_empty() { &[] } else { headers },
            body: (!c.body.is_empty()).then_some(c.body.as_bytes()),
            deadline,
        });
        out.push(report::attempt(c.what, &url, &x.outcome, x.extra()));
    }
    out
}
