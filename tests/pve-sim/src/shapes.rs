//! What [`Shapes::Real`] adds to the standard seed: the guests, storage and
//! backups that carry the shapes real clusters send (the table on
//! [`Shapes`]). The handlers read [`Cluster::shapes`] for the shapes that
//! are a matter of rendering (network resources, the fencing row, JSON
//! booleans, string vmids).

use crate::Shapes;
use crate::seed::{GIB, T0, backup, base, running};
use crate::state::{Cluster, GuestKind, Storage, Volume};

/// What an agent without `network-get-interfaces` answers (QEMU guest
/// agent's `QERR_UNSUPPORTED`); PVE passes it through unchanged.
pub const AGENT_UNSUPPORTED: (&str, &str) = (
    "Unsupported",
    "this feature or command is not currently supported",
);

/// PVE 9's `/cluster/resources` `network` entries, per online node:
/// `(network-type, network, extra key, extra value, status)`. A zone
/// carries its `zone-type`, a fabric its `protocol` (apidata.json 9.1).
pub const NETWORKS: &[(&str, &str, &str, &str, &str)] = &[
    ("zone", "lab-network", "zone-type", "simple", "available"),
    ("fabric", "underlay", "protocol", "openfabric", "ok"),
];

/// The fencing row PVE 9.2 adds to `/cluster/ha/status/current`.
pub const FENCING_STATUS: &str = "armed (CRM watchdog active)";

/// The raw `lxc.*` keys of CT 107.
pub const RAW_LXC: &[(&str, &str)] = &[
    ("lxc.apparmor.profile", "unconfined"),
    ("lxc.cgroup2.devices.allow", "a"),
];

/// The PBS storage the real-shapes cluster backs up to.
pub const PBS_STORAGE: &str = "pbs-main";

/// Turns the standard primary cluster into the real-shapes one.
pub(crate) fn apply(c: &mut Cluster) {
    c.shapes = Shapes::Real;
    c.release = crate::release::Release::new("9.2.3");

    // A running VM whose agent is too old for network-get-interfaces.
    let mut g = base(111, GuestKind::Qemu, "pve2", Some("legacy-agent-vm"));
    running(&mut g, 86_400 * 12, 0.0142, 1_610_612_736);
    g.agent = true;
    g.agent_error = Some(AGENT_UNSUPPORTED);
    c.guests.insert(g.vmid, g);

    if let Some(g) = c.guests.get_mut(&107) {
        g.raw_lxc = RAW_LXC.to_vec();
    }
    // One service that stays where it was moved to; one that rebalances.
    if let Some(ha) = c.guests.get_mut(&106).and_then(|g| g.ha.as_mut()) {
        ha.failback = false;
    }
    if let Some(ha) = c.guests.get_mut(&103).and_then(|g| g.ha.as_mut()) {
        ha.auto_rebalance = true;
    }

    c.storages.push(Storage {
        id: PBS_STORAGE.into(),
        plugintype: "pbs",
        content: "backup",
        shared: true,
        nodes: None,
        total: 15_998_753_177_600,
        used: c
            .nodes
            .iter()
            .map(|n| (n.name.clone(), 5_102_137_344_000))
            .collect(),
        extra: vec![
            ("server", "192.0.2.60"),
            ("datastore", "main"),
            ("username", "backup@pbs"),
            ("fingerprint", "a1:b2:c3:d4:e5:f6:07:18:29:3a:4b:5c:6d:7e:8f:90:a1:b2:c3:d4:e5:f6:07:18:29:3a:4b:5c:6d:7e:8f:90"),
        ],
    });
    c.volumes.extend([
        pbs(GuestKind::Qemu, 100, T0 + 3_600 + 12, 34 * GIB, Some("ok"), None),
        pbs(GuestKind::Qemu, 100, T0 - 86_400 + 3_600 + 9, 34 * GIB, None, None),
        pbs(
            GuestKind::Lxc,
            106,
            T0 + 3_600 + 1_104,
            GIB / 2,
            Some("failed"),
            Some("0f:1e:2d:3c:4b:5a:69:78:87:96:a5:b4:c3:d2:e1:f0:0f:1e:2d:3c:4b:5a:69:78:87:96:a5:b4:c3:d2:e1:f0"),
        ),
    ]);
}

/// A PBS snapshot as PBSPlugin lists it: volid
/// `<storage>:backup/<vm|ct>/<vmid>/<RFC 3339 UTC>`, format `pbs-vm` or
/// `pbs-ct`.
fn pbs(
    kind: GuestKind,
    vmid: u32,
    t: u64,
    size: u64,
    verification: Option<&'static str>,
    encrypted: Option<&'static str>,
) -> Volume {
    let (y, mo, d, h, mi, s) = crate::util::civil(t);
    let btype = match kind {
        GuestKind::Qemu => "vm",
        GuestKind::Lxc => "ct",
    };
    Volume {
        volid: format!(
            "{PBS_STORAGE}:backup/{btype}/{vmid}/{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"
        ),
        format: match kind {
            GuestKind::Qemu => "pbs-vm",
            GuestKind::Lxc => "pbs-ct",
        },
        verification,
        encrypted,
        ..backup(PBS_STORAGE, None, kind, vmid, t, size)
    }
}
