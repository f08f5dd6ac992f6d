//! The QEMU guest agent endpoints under `/nodes/{node}/qemu/{vmid}/agent/`
//! that pass an agent command's answer through: `info`, `get-osinfo`,
//! `get-host-name`, `get-fsinfo`, `get-users`, `get-timezone`, `get-time`,
//! `get-vcpus` and `network-get-interfaces`, plus PVE's availability checks
//! every agent endpoint runs first. `exec` is in [`super::agent_exec`],
//! `file-read`/`file-write` in [`super::agent_file`].
//!
//! qemu-server's `register_command` answers `{"result": <agent answer>}`
//! without looking at it, so an agent's own error arrives as HTTP 200
//! `{"result":{"error":{class,desc}}}`; `agent_cmd` (exec, files) instead
//! dies with `Agent error: <desc>`. Values the agent produces keep QMP's
//! JSON booleans (`true`/`false`), as PVE relays them.

use serde_json::{Value, json};

use super::{Ctx, agent_exec, agent_file};
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::guest_os::{KERNEL_RELEASE, KERNEL_VERSION, MOUNTS, hostname};
use crate::perms::Perm;
use crate::router::{Handler, Route};
use crate::schema::Prop;
use crate::seed::T0;
use crate::state::{Cluster, Guest, GuestKind, RunState};

/// The qemu-ga release the guests run (Debian 12's).
pub(crate) const AGENT_VERSION: &str = "7.2.11";

/// PVE's `load_config` and `agent_available`, in its order: config on this
/// node, agent enabled in it, VM running, agent answering `guest-ping`
/// (a paused VM's agent cannot answer either).
pub(crate) fn available<'c>(c: &'c Cluster, ctx: &Ctx<'_>) -> Result<&'c Guest, ApiError> {
    let vmid = ctx.params.path("vmid");
    let g = c
        .guest_on(ctx.node, GuestKind::Qemu, vmid)
        .ok_or_else(|| ApiError::no_config(ctx.node, GuestKind::Qemu.config_dir(), vmid))?;
    if !g.agent {
        return Err(ApiError::new(500, "No QEMU guest agent configured\n"));
    }
    if g.run == RunState::Stopped {
        return Err(ApiError::new(
            500,
            format!("VM {} is not running\n", g.vmid),
        ));
    }
    if g.agent_hangs || g.run == RunState::Paused {
        return Err(ApiError::new(500, "QEMU guest agent is not running\n"));
    }
    Ok(g)
}

/// `agent_cmd`'s `check_agent_error`: an agent that answers with its own
/// error (VM 111 of the real shapes) fails the call.
pub(crate) fn check_agent_error(g: &Guest) -> Result<(), ApiError> {
    match g.agent_error {
        Some((_, desc)) => Err(agent_error(desc)),
        None => Ok(()),
    }
}

/// `Agent error: <desc>`, as `check_agent_error` dies.
pub(crate) fn agent_error(desc: &str) -> ApiError {
    ApiError::new(500, format!("Agent error: {desc}\n"))
}

/// A passthrough command: the checks, then `{"result": answer}`.
fn passthrough(ctx: &Ctx<'_>, answer: fn(&Guest) -> Value) -> HandlerResult {
    let c = ctx.cluster();
    let g = available(&c, ctx)?;
    if let Some((class, desc)) = g.agent_error {
        return Ok(Reply::Data(
            json!({"result": {"error": {"class": class, "desc": desc}}}),
        ));
    }
    Ok(Reply::Data(json!({ "result": answer(g) })))
}

/// The commands `guest-info` lists; those that never answer (shutdown and
/// suspend) have `success-response: false`.
const COMMANDS: &[&str] = &[
    "guest-sync-delimited",
    "guest-sync",
    "guest-ping",
    "guest-get-time",
    "guest-set-time",
    "guest-info",
    "guest-shutdown",
    "guest-file-open",
    "guest-file-close",
    "guest-file-read",
    "guest-file-write",
    "guest-file-seek",
    "guest-file-flush",
    "guest-fsfreeze-status",
    "guest-fsfreeze-freeze",
    "guest-fsfreeze-freeze-list",
    "guest-fsfreeze-thaw",
    "guest-fstrim",
    "guest-suspend-disk",
    "guest-suspend-ram",
    "guest-suspend-hybrid",
    "guest-network-get-interfaces",
    "guest-get-vcpus",
    "guest-set-vcpus",
    "guest-get-disks",
    "guest-get-fsinfo",
    "guest-set-user-password",
    "guest-get-memory-blocks",
    "guest-set-memory-blocks",
    "guest-get-memory-block-info",
    "guest-exec-status",
    "guest-exec",
    "guest-get-host-name",
    "guest-get-users",
    "guest-get-timezone",
    "guest-get-osinfo",
    "guest-get-devices",
];

fn info(_: &Guest) -> Value {
    let cmds: Vec<Value> = COMMANDS
        .iter()
        .map(|name| {
            let answers = !name.starts_with("guest-shutdown") && !name.starts_with("guest-suspend");
            json!({"name": name, "enabled": true, "success-response": answers})
        })
        .collect();
    json!({"version": AGENT_VERSION, "supported_commands": cmds})
}

fn osinfo(_: &Guest) -> Value {
    json!({
        "id": "debian",
        "name": "Debian GNU/Linux",
        "pretty-name": "Debian GNU/Linux 12 (bookworm)",
        "version": "12 (bookworm)",
        "version-id": "12",
        "kernel-release": KERNEL_RELEASE,
        "kernel-version": KERNEL_VERSION,
        "machine": "x86_64",
    })
}

fn host_name(g: &Guest) -> Value {
    json!({"host-name": hostname(g)})
}

/// qemu-ga lists the mounts newest first (it prepends while reading
/// mountinfo).
fn fsinfo(_: &Guest) -> Value {
    let list: Vec<Value> = MOUNTS
        .iter()
        .rev()
        .map(|m| {
            json!({
                "name": m.name,
                "mountpoint": m.mountpoint,
                "type": m.fstype,
                "used-bytes": m.used,
                "total-bytes": m.total,
                "disk": [{
                    "pci-controller": {"domain": 0, "bus": 1, "slot": 1, "function": 0},
                    "bus-type": "scsi",
                    "bus": 0,
                    "target": 0,
                    "unit": m.unit,
                    "serial": format!("0QEMU_QEMU_HARDDISK_drive-scsi{}", m.unit),
                    "dev": format!("/dev/{}", m.name),
                }],
            })
        })
        .collect();
    Value::Array(list)
}

/// Two sessions; `login-time` is a float epoch, as qemu-ga sends it.
fn users(_: &Guest) -> Value {
    json!([
        {"user": "debian", "login-time": (T0 - 5_400) as f64 + 0.412_733},
        {"user": "root", "login-time": (T0 - 600) as f64 + 0.087_19},
    ])
}

fn timezone(_: &Guest) -> Value {
    json!({"zone": "CET", "offset": 3600})
}

/// Nanoseconds since the epoch, an integer.
fn time(_: &Guest) -> Value {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    json!(ns)
}

/// Linux cannot take CPU 0 offline.
fn vcpus(g: &Guest) -> Value {
    let list: Vec<Value> = (0..g.cpus())
        .map(|i| json!({"logical-id": i, "online": true, "can-offline": i > 0}))
        .collect();
    Value::Array(list)
}

/// `GET agent/info`.
pub(crate) fn get_info(ctx: &Ctx<'_>) -> HandlerResult {
    passthrough(ctx, info)
}

/// `GET agent/get-osinfo`.
pub(crate) fn get_osinfo(ctx: &Ctx<'_>) -> HandlerResult {
    passthrough(ctx, osinfo)
}

/// `GET agent/get-host-name`.
pub(crate) fn get_host_name(ctx: &Ctx<'_>) -> HandlerResult {
    passthrough(ctx, host_name)
}

/// `GET agent/get-fsinfo`.
pub(crate) fn get_fsinfo(ctx: &Ctx<'_>) -> HandlerResult {
    passthrough(ctx, fsinfo)
}

/// `GET agent/get-users`.
pub(crate) fn get_users(ctx: &Ctx<'_>) -> HandlerResult {
    passthrough(ctx, users)
}

/// `GET agent/get-timezone`.
pub(crate) fn get_timezone(ctx: &Ctx<'_>) -> HandlerResult {
    passthrough(ctx, timezone)
}

/// `GET agent/get-time`.
pub(crate) fn get_time(ctx: &Ctx<'_>) -> HandlerResult {
    passthrough(ctx, time)
}

/// `GET agent/get-vcpus`.
pub(crate) fn get_vcpus(ctx: &Ctx<'_>) -> HandlerResult {
    passthrough(ctx, vcpus)
}

/// `GET agent/network-get-interfaces`.
pub(crate) fn network_get_interfaces(ctx: &Ctx<'_>) -> HandlerResult {
    passthrough(ctx, super::config::agent_interfaces)
}

/// The agent routes, with PVE 9's privileges (`VM.GuestAgent.*`, checked
/// like the schema's `permissions`) and PVE 8's single `VM.Monitor`.
pub(crate) fn routes() -> Vec<Route> {
    const AUDIT: Perm = Perm::check_any(
        "/vms/{vmid}",
        &["VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"],
    );
    const UNRESTRICTED: Perm = Perm::check("/vms/{vmid}", &["VM.GuestAgent.Unrestricted"]);
    const FILE_READ: Perm = Perm::check_any(
        "/vms/{vmid}",
        &["VM.GuestAgent.FileRead", "VM.GuestAgent.Unrestricted"],
    );
    const FILE_WRITE: Perm = Perm::check_any(
        "/vms/{vmid}",
        &["VM.GuestAgent.FileWrite", "VM.GuestAgent.Unrestricted"],
    );
    const MONITOR: Perm = Perm::check("/vms/{vmid}", &["VM.Monitor"]);
    let with = |extra: Vec<(&'static str, Prop)>| {
        let mut v = vec![("node", Prop::node()), ("vmid", Prop::vmid())];
        v.extend(extra);
        v
    };
    let info: [(&'static str, Handler); 9] = [
        ("/nodes/{node}/qemu/{vmid}/agent/info", get_info),
        ("/nodes/{node}/qemu/{vmid}/agent/get-osinfo", get_osinfo),
        (
            "/nodes/{node}/qemu/{vmid}/agent/get-host-name",
            get_host_name,
        ),
        ("/nodes/{node}/qemu/{vmid}/agent/get-fsinfo", get_fsinfo),
        ("/nodes/{node}/qemu/{vmid}/agent/get-users", get_users),
        ("/nodes/{node}/qemu/{vmid}/agent/get-timezone", get_timezone),
        ("/nodes/{node}/qemu/{vmid}/agent/get-time", get_time),
        ("/nodes/{node}/qemu/{vmid}/agent/get-vcpus", get_vcpus),
        (
            "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
            network_get_interfaces,
        ),
    ];
    let mut out: Vec<Route> = info
        .into_iter()
        .map(|(path, h)| {
            Route::get(path, h)
                .perm(AUDIT)
                .pve8(MONITOR, None)
                .proxy("node")
                .params(with(vec![]))
        })
        .collect();
    let file = || ("file", Prop::string());
    out.extend([
        Route::post("/nodes/{node}/qemu/{vmid}/agent/exec", agent_exec::exec)
            .perm(UNRESTRICTED)
            .pve8(MONITOR, None)
            .proxy("node")
            .params(with(vec![
                ("command", Prop::array(Prop::string())),
                ("input-data", Prop::string().max_len(65_536).optional()),
            ])),
        Route::get(
            "/nodes/{node}/qemu/{vmid}/agent/exec-status",
            agent_exec::exec_status,
        )
        .perm(UNRESTRICTED)
        .pve8(MONITOR, None)
        .proxy("node")
        .params(with(vec![("pid", Prop::integer())])),
        Route::get(
            "/nodes/{node}/qemu/{vmid}/agent/file-read",
            agent_file::file_read,
        )
        .perm(FILE_READ)
        .pve8(MONITOR, Some(with(vec![file()])))
        .proxy("node")
        .params(with(vec![
            file(),
            (
                "count",
                Prop::integer()
                    .min(1)
                    .max(agent_file::MAX_READ_SIZE as i64)
                    .optional(),
            ),
            ("decode", Prop::boolean().optional()),
            ("offset", Prop::integer().min(0).optional()),
        ])),
        Route::post(
            "/nodes/{node}/qemu/{vmid}/agent/file-write",
            agent_file::file_write,
        )
        .perm(FILE_WRITE)
        .pve8(MONITOR, None)
        .proxy("node")
        .params(with(vec![
            file(),
            ("content", Prop::string().max_len(61_440)),
            ("encode", Prop::boolean().optional()),
        ])),
    ]);
    out
}
