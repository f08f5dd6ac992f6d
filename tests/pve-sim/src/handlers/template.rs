//! `POST /nodes/{node}/{qemu,lxc}/{vmid}/template`: a guest becomes a
//! template, as qemu-server's and pve-container's `template` do: refused
//! for a template, a running guest, a locked one and (containers) one
//! with snapshots. QEMU answers a `qmtemplate` task; a container is
//! converted at once and answers `null`.

use serde_json::Value;

use super::Ctx;
use super::act::{self, die, word};
use crate::errors::{HandlerResult, Reply};
use crate::state::GuestKind;
use crate::work::{self, Spec};

fn template(ctx: &Ctx<'_>, kind: GuestKind) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let g = act::guest(&c, ctx, kind)?;
    let vmid = g.vmid;
    let w = word(kind);
    if g.template {
        return Err(die("you can't convert a template to a template"));
    }
    if g.is_running() {
        return Err(die(format!(
            "you can't convert a {w} to template if {w} is running"
        )));
    }
    if let Some(err) = act::busy(&c, g) {
        return Err(die(err));
    }
    match kind {
        GuestKind::Lxc => {
            if !g.snapshots.is_empty() {
                return Err(die(
                    "you can't convert a CT to template if it has snapshots",
                ));
            }
            if let Some(g) = c.guests.get_mut(&vmid) {
                g.template = true;
            }
            c.generation += 1;
            Ok(Reply::Data(Value::Null))
        }
        GuestKind::Qemu => {
            let mut spec = Spec::new(ctx.node, "qmtemplate", vmid.to_string(), &act::user(ctx));
            spec.line(0.5, format!("converting VM {vmid} to a template"));
            let spec = spec.flock(vmid).effect(move |c| {
                if let Some(g) = c.guests.get_mut(&vmid) {
                    g.template = true;
                }
            });
            act::upid(work::spawn(&mut c, spec))
        }
    }
}

/// `POST /nodes/{node}/qemu/{vmid}/template`.
pub(crate) fn qemu_template(ctx: &Ctx<'_>) -> HandlerResult {
    template(ctx, GuestKind::Qemu)
}

/// `POST /nodes/{node}/lxc/{vmid}/template`.
pub(crate) fn lxc_template(ctx: &Ctx<'_>) -> HandlerResult {
    template(ctx, GuestKind::Lxc)
}
