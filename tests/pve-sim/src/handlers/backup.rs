//! `POST /nodes/{node}/vzdump` and `GET /cluster/nextid`.

use serde_json::Value;

use super::Ctx;
use super::act::{self, die};
use super::config::{render, size_str};
use super::power::human;
use crate::conf;
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::seed::backup_name;
use crate::state::{Cluster, GuestKind, Volume};
use crate::util::now_secs;
use crate::work::{self, Spec};

/// Options only `root@pam` may give vzdump.
const ROOT_ONLY: &[&str] = &["tmpdir", "dumpdir", "script", "job-id"];

/// Archive extension for a guest type and `compress` value.
fn extension(kind: GuestKind, compress: &str) -> String {
    let base = match kind {
        GuestKind::Qemu => "vma",
        GuestKind::Lxc => "tar",
    };
    match compress {
        "1" | "lzo" => format!("{base}.lzo"),
        "gzip" => format!("{base}.gz"),
        "zstd" => format!("{base}.zst"),
        _ => base.to_string(),
    }
}

/// `notes-template` with PVE's `{{guestname}}`, `{{vmid}}`, `{{node}}` and
/// `{{cluster}}`.
fn notes(template: &str, name: &str, vmid: u32, node: &str, cluster: &str) -> String {
    template
        .replace("{{guestname}}", name)
        .replace("{{vmid}}", &vmid.to_string())
        .replace("{{node}}", node)
        .replace("{{cluster}}", cluster)
        .replace("\\n", "\n")
}

pub(crate) fn vzdump(ctx: &Ctx<'_>) -> HandlerResult {
    if !act::is_root(ctx)
        && let Some(k) = ROOT_ONLY.iter().find(|k| ctx.params.get(k).is_some())
    {
        return Err(ApiError::param(k, "Only root may set this option."));
    }
    let mut c = ctx.cluster_mut();
    let requested: Vec<u32> = ctx
        .params
        .get("vmid")
        .unwrap_or("")
        .split(|ch: char| ch == ',' || ch == ';' || ch == '\0' || ch.is_whitespace())
        .filter_map(|v| v.parse().ok())
        .collect();
    let all = act::flag(ctx, "all");
    let vmids: Vec<u32> = if all {
        c.guests
            .values()
            .filter(|g| g.node == ctx.node && !g.template)
            .map(|g| g.vmid)
            .collect()
    } else {
        requested
            .iter()
            .copied()
            .filter(|id| c.guests.get(id).is_some_and(|g| g.node == ctx.node))
            .collect()
    };
    if requested.is_empty() && !all {
        return Err(ApiError::param(
            "vmid",
            "property is missing and it is not optional",
        ));
    }
    for id in &vmids {
        act::require(ctx, &format!("/vms/{id}"), "VM.Backup")?;
    }
    let storage = ctx.params.get("storage").unwrap_or("local").to_string();
    act::require(
        ctx,
        &format!("/storage/{storage}"),
        "Datastore.AllocateSpace",
    )?;
    let Some(st) = c.storages.iter().find(|s| s.id == storage) else {
        return Err(die(format!("storage '{storage}' does not exist")));
    };
    if !st.content.split(',').any(|ct| ct == "backup") {
        return Err(die(format!(
            "can't use storage '{storage}' for backups - wrong content type"
        )));
    }
    // "silent exit if specified VMs run on other nodes"
    if vmids.is_empty() {
        return Ok(Reply::Data(Value::String("OK".into())));
    }
    let shared = st.shared;
    let prune = st
        .extra
        .iter()
        .find(|(k, _)| *k == "prune-backups")
        .map(|(_, v)| v.to_string())
        .unwrap_or_else(|| "keep-all=1".to_string());
    let mode = ctx.params.get("mode").unwrap_or("snapshot").to_string();
    let compress = ctx.params.get("compress").unwrap_or("0").to_string();
    let remove = ctx.params.get("remove") != Some("0");
    let protected = act::flag(ctx, "protected");
    let template = ctx.params.get("notes-template").map(str::to_string);
    let id = if vmids.len() == 1 {
        vmids[0].to_string()
    } else {
        String::new()
    };
    let mut spec = Spec::new(ctx.node, "vzdump", id, &act::user(ctx));
    let mut cmd = format!(
        "INFO: starting new backup job: vzdump {}",
        vmids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for k in [
        "storage",
        "mode",
        "compress",
        "remove",
        "notes-template",
        "protected",
    ] {
        if let Some(v) = ctx.params.get(k) {
            cmd.push_str(&format!(" --{k} {}", quote(v)));
        }
    }
    cmd.push_str(&format!(" --node {}", ctx.node));
    spec.line(0.0, cmd);
    let now = now_secs();
    let share = 1.0 / vmids.len() as f64;
    let mut failed = 0;
    let mut made: Vec<(Volume, crate::state::Guest)> = Vec::new();
    for (i, vmid) in vmids.iter().enumerate() {
        let Some(g) = c.guests.get(vmid) else {
            continue;
        };
        let at = |f: f64| i as f64 * share + f * share;
        let kind = g.kind;
        let ty = kind.as_str();
        spec.line(
            at(0.0),
            format!("INFO: Starting Backup of VM {vmid} ({ty})"),
        );
        spec.line(
            at(0.0),
            format!("INFO: Backup started at {}", work::stamp(0)),
        );
        spec.line(
            at(0.01),
            format!(
                "INFO: status = {}",
                if g.is_running() { "running" } else { "stopped" }
            ),
        );
        if let Some(err) = act::busy(&c, g) {
            spec.line(
                at(0.02),
                format!("ERROR: Backup of VM {vmid} failed - {err}"),
            );
            failed += 1;
            continue;
        }
        let conf_now = render(g);
        let disks = conf::disks(kind, &conf_now);
        let total: u64 = disks.iter().map(|d| d.2).sum();
        let name = g.display_name();
        match kind {
            GuestKind::Qemu => {
                spec.line(at(0.02), format!("INFO: VM Name: {name}"));
                for (key, volid, size) in &disks {
                    spec.line(
                        at(0.03),
                        format!("INFO: include disk '{key}' '{volid}' {}", size_str(*size)),
                    );
                }
            }
            GuestKind::Lxc => {
                spec.line(at(0.02), format!("INFO: CT Name: {name}"));
                for (key, _, _) in &disks {
                    spec.line(
                        at(0.03),
                        format!("INFO: including mount point {key} ('/') in backup"),
                    );
                }
            }
        }
        let running = g.is_running();
        spec.line(at(0.04), format!("INFO: backup mode: {mode}"));
        spec.line(at(0.04), "INFO: ionice priority: 7");
        if running && mode != "snapshot" {
            spec.line(
                at(0.05),
                format!(
                    "INFO: {} guest",
                    if mode == "stop" {
                        "stopping"
                    } else {
                        "suspending"
                    }
                ),
            );
        }
        let file = backup_name(kind, *vmid, now + i as u64).replace(
            match kind {
                GuestKind::Qemu => "vma.zst",
                GuestKind::Lxc => "tar.zst",
            },
            &extension(kind, &compress),
        );
        let dir = if shared {
            format!("/mnt/pve/{storage}/dump")
        } else {
            "/var/lib/vz/dump".to_string()
        };
        let file_name = file.trim_start_matches("backup/");
        spec.line(
            at(0.06),
            format!("INFO: creating vzdump archive '{dir}/{file_name}'"),
        );
        if kind == GuestKind::Qemu {
            spec.line(
                at(0.07),
                format!("INFO: started backup task '4f0c{vmid:04x}-9d1e-4b7a-8c2d-{vmid:012x}'"),
            );
            if running && mode != "snapshot" {
                spec.line(at(0.08), "INFO: resuming VM again");
            }
            for pct in [10u64, 25, 50, 75, 100] {
                spec.line(
                    at(0.1 + pct as f64 / 130.0),
                    format!(
                        "INFO: {pct:3}% ({} of {}) in {}s, read: 3.2 GiB/s, write: 412.3 MiB/s",
                        human(total / 100 * pct),
                        human(total),
                        pct / 10
                    ),
                );
            }
            spec.line(
                at(0.9),
                format!(
                    "INFO: backup is sparse: {} (84%) total zero data",
                    human(total / 100 * 84)
                ),
            );
            spec.line(
                at(0.9),
                format!(
                    "INFO: transferred {} in 10 seconds (3.2 GiB/s)",
                    human(total)
                ),
            );
        } else {
            spec.line(
                at(0.8),
                format!(
                    "INFO: Total bytes written: {} ({}, 412MiB/s)",
                    total / 6,
                    human(total / 6)
                ),
            );
        }
        let size = (total / 9).max(1 << 20);
        spec.line(
            at(0.92),
            format!("INFO: archive file size: {}", human(size)),
        );
        let note = template
            .as_deref()
            .map(|t| notes(t, &name, *vmid, ctx.node, &c.name));
        if note.is_some() {
            spec.line(at(0.93), "INFO: adding notes to backup");
        }
        if protected {
            spec.line(at(0.93), "INFO: marking backup as protected");
        }
        if remove {
            spec.line(
                at(0.94),
                format!(
                    "INFO: prune older backups with retention: {}",
                    prune.replace(',', ", ")
                ),
            );
            spec.line(at(0.95), "INFO: pruned 0 backup(s)");
        }
        spec.line(
            at(0.97),
            format!("INFO: Finished Backup of VM {vmid} (00:00:{:02})", 10 + i),
        );
        spec.line(
            at(0.98),
            format!("INFO: Backup finished at {}", work::stamp(10)),
        );
        let volid = format!("{storage}:{file}");
        made.push((
            Volume {
                storage: storage.clone(),
                node: (!shared).then(|| ctx.node.to_string()),
                volid,
                content: "backup",
                format: leak_format(&extension(kind, &compress)),
                size,
                ctime: Some(now + i as u64),
                vmid: Some(*vmid),
                notes: note,
                protected,
                subtype: Some(ty),
                verification: None,
                encrypted: None,
            },
            g.clone(),
        ));
        spec = spec.lock(*vmid, "backup");
    }
    if failed == 0 {
        spec.line(1.0, "INFO: Backup job finished successfully");
    } else {
        spec.line(1.0, "INFO: Failed at ".to_string() + &work::stamp(10));
    }
    let effect = move |c: &mut Cluster| {
        for (v, g) in made {
            c.work.backup_configs.insert(v.volid.clone(), g);
            c.volumes.push(v);
        }
    };
    // The backups that worked are kept even when the job reports errors.
    let spec = if failed > 0 {
        spec.fail("job errors")
    } else {
        spec
    };
    act::upid(work::spawn(&mut c, spec.always(effect)))
}

/// Volume formats as the storage listing names them.
fn leak_format(ext: &str) -> &'static str {
    match ext {
        "vma.zst" => "vma.zst",
        "vma.gz" => "vma.gz",
        "vma.lzo" => "vma.lzo",
        "vma" => "vma",
        "tar.zst" => "tar.zst",
        "tar.gz" => "tar.gz",
        "tar.lzo" => "tar.lzo",
        _ => "tar",
    }
}

/// Perl's shell quoting in the job line: plain words stay bare.
fn quote(v: &str) -> String {
    if v.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.:/".contains(&b))
    {
        v.to_string()
    } else {
        format!("'{v}'")
    }
}

/// `GET /cluster/nextid`: the lowest free vmid (as a string, as PVE sends
/// it), or whether `vmid` is free.
pub(crate) fn nextid(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    if let Some(v) = ctx.params.get("vmid") {
        let id: u32 = v.parse().unwrap_or(0);
        if c.guests.contains_key(&id) {
            return Err(ApiError::param("vmid", format!("VM {id} already exists")));
        }
        return Ok(Reply::Data(Value::String(id.to_string())));
    }
    match (100..1_000_000u32).find(|id| !c.guests.contains_key(id)) {
        Some(id) => Ok(Reply::Data(Value::String(id.to_string()))),
        None => Err(die("unable to get any free VMID in range [100, 1000000]")),
    }
}
