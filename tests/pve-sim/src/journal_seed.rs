//! What the seeded nodes' journals hold: the two days around the seed's
//! "last night" ([`T0`] - 1 day to the start of tonight's backups), from
//! the daemons a PVE node runs, in their wording.
//!
//! - every node: hourly cron, the midnight log rotation that reloads
//!   `pveproxy` and `spiceproxy`, `apt-daily`, `pveproxy` worker turnover,
//!   logins, and a start and an end line for each task of the seed's task
//!   lists (plus the nightly backup jobs before them);
//! - `pve1`/`pve2`: corosync losing `pve3` for 35 s at 04:10 and for good
//!   at 15:22 (the quorum and pmxcfs resync that follow), the HA manager
//!   marking it `unknown`;
//! - `pve1`: replication job `106-0` failing three times against `pve3`
//!   before that, and a failed GUI login;
//! - `pve2`: the backup of CT 107 failing the night before, `chrony`
//!   failing to start again after an edit of its configuration, and
//!   `smartd` warning about `/dev/sdb` (`FAILED SMART self-check`) every
//!   half hour;
//! - `lab1` (standalone, PVE 8): no corosync, its two tasks.

use std::collections::BTreeMap;

use crate::journal::Entry;
use crate::seed::T0;
use crate::state::{Cluster, Task};

/// The journals' first and last second.
pub(crate) const START: u64 = T0 - 86_400;
pub(crate) const END: u64 = T0 + 86_400 + 3_600 + 90;

/// When corosync lost `pve3` for good.
pub(crate) const PEER_LOST: u64 = T0 + 15 * 3_600 + 22 * 60 + 41;

/// Boot time of a node (the journals hold no reboot).
pub(crate) fn boot_time(c: &Cluster, node: &str) -> u64 {
    let uptime = c.node(node).map_or(0, |n| n.uptime);
    // Uptime is counted to the seed's "now", a day after T0.
    (T0 + 86_400).saturating_sub(uptime)
}

/// An entry as written: second, identifier, pid, message, unit.
type Item = (u64, String, Option<u32>, String, Option<String>);

/// Entries as they are written, sorted and numbered at the end.
struct Log {
    node: String,
    items: Vec<Item>,
    next_pid: u32,
}

impl Log {
    fn at(&mut self, t: u64, ident: &str, pid: Option<u32>, unit: Option<&str>, msg: String) {
        if (START..=END).contains(&t) {
            self.items
                .push((t, ident.into(), pid, msg, unit.map(str::to_string)));
        }
    }

    /// A message of `systemd[1]` about a unit.
    fn systemd(&mut self, t: u64, unit: &str, msg: impl Into<String>) {
        self.at(t, "systemd", Some(1), Some(unit), msg.into());
    }

    fn pid(&mut self) -> u32 {
        self.next_pid += 7 + self.next_pid % 5;
        self.next_pid
    }

    fn finish(mut self) -> Vec<Entry> {
        self.items.sort_by_key(|i| i.0);
        let seq0 = 0x1_2a00 + u64::from(self.node.len() as u32) * 0x3_1111;
        let mut out: Vec<Entry> = Vec::with_capacity(self.items.len());
        let mut same = 0;
        for (i, (t, ident, pid, message, unit)) in self.items.into_iter().enumerate() {
            same = match out.last() {
                Some(prev) if prev.secs() == t => same + 1,
                _ => 0,
            };
            out.push(Entry {
                usec: t * 1_000_000 + 18_211 + same * 1_373 + (i as u64 * 7_919) % 900,
                seqnum: seq0 + i as u64,
                ident,
                pid,
                message,
                unit,
            });
        }
        out
    }
}

/// The daemons' pids on a node.
struct Pids {
    pveproxy: u32,
    spiceproxy: u32,
    pvedaemon: u32,
    pvescheduler: u32,
    corosync: u32,
    pmxcfs: u32,
    crm: u32,
    smartd: u32,
    chronyd: u32,
    logind: u32,
}

fn pids(node: &str) -> Pids {
    let o = match node {
        "pve1" => 0,
        "pve2" => 9,
        _ => 23,
    };
    Pids {
        pveproxy: 1844 + o,
        spiceproxy: 1851 + o,
        pvedaemon: 1811 + o,
        pvescheduler: 1905 + o,
        corosync: 1480 + o,
        pmxcfs: 1392 + o,
        crm: 1870 + o,
        smartd: 955 + o,
        chronyd: 1002 + o,
        logind: 780 + o,
    }
}

fn cron(l: &mut Log) {
    let mut t = START - START % 3_600 + 17 * 60 + 1;
    while t <= END {
        let p = l.pid();
        l.at(
            t,
            "CRON",
            Some(p),
            Some("cron.service"),
            "pam_unix(cron:session): session opened for user root(uid=0) by root(uid=0)".into(),
        );
        l.at(
            t,
            "CRON",
            Some(p + 1),
            Some("cron.service"),
            "(root) CMD (cd / && run-parts --report /etc/cron.hourly)".into(),
        );
        l.at(
            t,
            "CRON",
            Some(p),
            Some("cron.service"),
            "pam_unix(cron:session): session closed for user root".into(),
        );
        t += 3_600;
    }
}

/// Midnight: logrotate's postrotate reloads the proxies, whose old
/// workers then exit.
fn midnight(l: &mut Log, p: &Pids) {
    for day in 0..3 {
        let t = START + day * 86_400;
        let rot = "logrotate.service";
        l.systemd(t, rot, "Starting logrotate.service - Rotate log files...");
        l.systemd(
            t,
            "dpkg-db-backup.service",
            "Starting dpkg-db-backup.service - Daily dpkg database backup service...",
        );
        for (name, master, desc, workers) in [
            ("pveproxy", p.pveproxy, "PVE API Proxy Server", 3),
            ("spiceproxy", p.spiceproxy, "PVE SPICE Proxy Server", 1),
        ] {
            let unit = format!("{name}.service");
            let u = Some(unit.as_str());
            l.systemd(t + 1, &unit, format!("Reloading {unit} - {desc}..."));
            let helper = l.pid();
            l.at(
                t + 2,
                name,
                Some(helper),
                u,
                format!("send HUP to {master}"),
            );
            l.at(t + 2, name, Some(master), u, "received signal HUP".into());
            l.at(t + 2, name, Some(master), u, "server closing".into());
            l.at(
                t + 2,
                name,
                Some(master),
                u,
                "server shutdown (restart)".into(),
            );
            l.systemd(t + 2, &unit, format!("Reloaded {unit} - {desc}."));
            if name == "pveproxy" {
                l.at(
                    t + 3,
                    name,
                    Some(master),
                    u,
                    "Using '/etc/pve/local/pveproxy-ssl.pem' as certificate for the web interface."
                        .into(),
                );
            }
            l.at(t + 3, name, Some(master), u, "restarting server".into());
            l.at(
                t + 3,
                name,
                Some(master),
                u,
                format!("starting {workers} worker(s)"),
            );
            let mut old = Vec::new();
            for _ in 0..workers {
                let w = l.pid();
                l.at(t + 3, name, Some(master), u, format!("worker {w} started"));
                old.push(w);
            }
            // The workers started by the day before's reload exit.
            for w in old {
                let gone = w - 35_017;
                l.at(t + 8, name, Some(gone), u, "worker exit".into());
                l.at(
                    t + 8,
                    name,
                    Some(master),
                    u,
                    format!("worker {gone} finished"),
                );
            }
        }
        l.systemd(
            t + 4,
            "dpkg-db-backup.service",
            "dpkg-db-backup.service: Deactivated successfully.",
        );
        l.systemd(
            t + 4,
            "dpkg-db-backup.service",
            "Finished dpkg-db-backup.service - Daily dpkg database backup service.",
        );
        l.systemd(t + 9, rot, "logrotate.service: Deactivated successfully.");
        l.systemd(t + 9, rot, "Finished logrotate.service - Rotate log files.");
    }
}

fn apt_daily(l: &mut Log) {
    for t in [
        START + 6 * 3_600 + 31 * 60 + 7,
        START + 18 * 3_600 + 2 * 60 + 44,
        T0 + 6 * 3_600 + 12 * 60 + 51,
        T0 + 19 * 3_600 + 40 * 60 + 3,
    ] {
        let u = "apt-daily.service";
        l.systemd(
            t,
            u,
            "Starting apt-daily.service - Daily apt download activities...",
        );
        l.systemd(t + 2, u, "apt-daily.service: Deactivated successfully.");
        l.systemd(
            t + 2,
            u,
            "Finished apt-daily.service - Daily apt download activities.",
        );
    }
}

/// A worker reaching its request limit every few hours.
fn worker_turnover(l: &mut Log, p: &Pids) {
    let u = Some("pveproxy.service");
    let mut t = START + 2 * 3_600 + 1_234;
    while t < END {
        let old = l.pid();
        let new = l.pid();
        l.at(t, "pveproxy", Some(old), u, "worker exit".into());
        l.at(
            t,
            "pveproxy",
            Some(p.pveproxy),
            u,
            format!("worker {old} finished"),
        );
        l.at(
            t,
            "pveproxy",
            Some(p.pveproxy),
            u,
            "starting 1 worker(s)".into(),
        );
        l.at(
            t,
            "pveproxy",
            Some(p.pveproxy),
            u,
            format!("worker {new} started"),
        );
        t += 4 * 3_600 + 977;
    }
    for t in [T0 + 10 * 3_600 + 611, T0 + 13 * 3_600 + 2_002] {
        let w = l.pid();
        l.at(
            t,
            "pveproxy",
            Some(w),
            u,
            "proxy detected vanished client connection".into(),
        );
    }
}

fn upid_user(t: &Task) -> &str {
    &t.user
}

/// `starting task` / `end task` lines of the task lists, and a backup job
/// run by the scheduler before each listed one.
fn tasks(l: &mut Log, c: &Cluster, node: &str, p: &Pids) {
    let mut list: Vec<&Task> = c
        .tasks
        .iter()
        .filter(|t| t.node == node && (START..=END).contains(&t.starttime))
        .collect();
    list.sort_by_key(|t| t.starttime);
    for t in list {
        let scheduled = t.ty == "vzdump" && t.user == "root@pam";
        let (ident, pid) = if scheduled {
            ("pvescheduler", p.pvescheduler)
        } else {
            ("pvedaemon", p.pvedaemon)
        };
        let unit = Some(if scheduled {
            "pvescheduler.service"
        } else {
            "pvedaemon.service"
        });
        let user = upid_user(t);
        l.at(
            t.starttime,
            ident,
            Some(pid),
            unit,
            format!("<{user}> starting task {}", t.upid),
        );
        match t.ty.as_str() {
            "qmstart" => {
                l.at(
                    t.starttime,
                    "pvedaemon",
                    Some(t.pid),
                    unit,
                    format!("start VM {}: {}", t.id, t.upid),
                );
                if t.status.as_deref() == Some("OK") {
                    let scope = format!("{}.scope", t.id);
                    l.systemd(t.starttime + 1, &scope, format!("Started {scope}."));
                }
            }
            "vzdump" => backup_lines(l, c, t),
            _ => {}
        }
        if let (Some(end), Some(status)) = (t.endtime, &t.status) {
            if status != "OK" && !status.starts_with("WARNINGS") {
                l.at(end, "pvedaemon", Some(t.pid), unit, status.clone());
            }
            l.at(
                end,
                ident,
                Some(pid),
                unit,
                format!("<{user}> end task {} {status}", t.upid),
            );
        }
    }
}

/// The guests a node's nightly job backs up (those with a backup from it).
fn nightly_guests(node: &str) -> &'static [(u32, &'static str)] {
    match node {
        "pve1" => &[
            (100, "qemu"),
            (101, "qemu"),
            (104, "qemu"),
            (106, "lxc"),
            (108, "lxc"),
        ],
        "pve2" => &[(103, "qemu"), (107, "lxc")],
        _ => &[(302, "lxc")],
    }
}

/// Where the nightly jobs write: the shared backup storage, else `local`.
fn backup_storage(c: &Cluster) -> &'static str {
    if c.storages.iter().any(|s| s.id == "nfs-backup") {
        "nfs-backup"
    } else {
        "local"
    }
}

fn backup_lines(l: &mut Log, c: &Cluster, t: &Task) {
    let guests: Vec<(u32, &str)> = if t.id.is_empty() {
        nightly_guests(&t.node).to_vec()
    } else {
        let id: u32 = t.id.parse().unwrap_or(0);
        let kind = c.guests.get(&id).map_or("qemu", |g| g.kind.as_str());
        vec![(id, kind)]
    };
    let u = Some("pvescheduler.service");
    let ids: Vec<String> = guests.iter().map(|g| g.0.to_string()).collect();
    l.at(
        t.starttime + 1,
        "vzdump",
        Some(t.pid),
        u,
        format!(
            "INFO: starting new backup job: vzdump {} --storage {} --mode snapshot \
             --compress zstd --notes-template '{{{{guestname}}}} nightly'",
            ids.join(" "),
            backup_storage(c)
        ),
    );
    let running = t.status.is_none();
    // Each guest's share of the task's time.
    let share = t
        .endtime
        .map(|e| e.saturating_sub(t.starttime + 4) / guests.len().max(1) as u64);
    let mut at = t.starttime + 2;
    for (i, (id, kind)) in guests.iter().enumerate() {
        l.at(
            at,
            "vzdump",
            Some(t.pid),
            u,
            format!("INFO: Starting Backup of VM {id} ({kind})"),
        );
        if running && i == guests.len() - 1 {
            return;
        }
        let took = (41 + (u64::from(*id) * 37) % 200)
            .min(share.unwrap_or(u64::MAX).saturating_sub(2).max(1));
        at += took;
        l.at(
            at,
            "vzdump",
            Some(t.pid),
            u,
            format!(
                "INFO: Finished Backup of VM {id} (00:{:02}:{:02})",
                took / 60,
                took % 60
            ),
        );
        at += 2;
    }
    if !running {
        l.at(
            t.endtime.unwrap_or(at).saturating_sub(1),
            "vzdump",
            Some(t.pid),
            u,
            "INFO: Backup job finished successfully".into(),
        );
    }
}

/// The nightly jobs before the task lists begin: pve1's went well, pve2's
/// failed for CT 107 (which has no backup from that night).
fn earlier_backups(l: &mut Log, c: &Cluster, node: &str, p: &Pids) {
    let start = START + 3_600;
    let pid = 0x9_1000 + p.pvescheduler;
    let upid = format!(
        "UPID:{node}:{pid:08X}:{:08X}:{start:08X}:vzdump::root@pam:",
        (start - 1_000_000) % 0xFFFF_FFFF
    );
    let u = Some("pvescheduler.service");
    l.at(
        start,
        "pvescheduler",
        Some(p.pvescheduler),
        u,
        format!("<root@pam> starting task {upid}"),
    );
    let guests = nightly_guests(node);
    let ids: Vec<String> = guests.iter().map(|g| g.0.to_string()).collect();
    l.at(
        start + 1,
        "vzdump",
        Some(pid),
        u,
        format!(
            "INFO: starting new backup job: vzdump {} --storage {} --mode snapshot \
             --compress zstd --notes-template '{{{{guestname}}}} nightly'",
            ids.join(" "),
            backup_storage(c)
        ),
    );
    let mut at = start + 3;
    let mut failed = false;
    for (id, kind) in guests {
        l.at(
            at,
            "vzdump",
            Some(pid),
            u,
            format!("INFO: Starting Backup of VM {id} ({kind})"),
        );
        if node == "pve2" && *id == 107 {
            at += 4;
            l.at(
                at,
                "vzdump",
                Some(pid),
                u,
                "ERROR: Backup of VM 107 failed - command 'mount -o ro,noload \
                 /dev/pve/snap_vm-107-disk-0_vzdump /mnt/vzsnap0//' failed: exit code 32"
                    .into(),
            );
            failed = true;
            continue;
        }
        let took = 40 + (u64::from(*id) * 41) % 190;
        at += took;
        l.at(
            at,
            "vzdump",
            Some(pid),
            u,
            format!(
                "INFO: Finished Backup of VM {id} (00:{:02}:{:02})",
                took / 60,
                took % 60
            ),
        );
        at += 2;
    }
    let (summary, status) = if failed {
        ("INFO: Backup job finished with errors", "job errors")
    } else {
        ("INFO: Backup job finished successfully", "OK")
    };
    l.at(at, "vzdump", Some(pid), u, summary.into());
    l.at(
        at + 1,
        "pvescheduler",
        Some(p.pvescheduler),
        u,
        format!("<root@pam> end task {upid} {status}"),
    );
    if failed {
        mail(l, at + 2, node, "ops@example.com");
    }
}

/// Postfix sending a notification.
fn mail(l: &mut Log, t: u64, node: &str, to: &str) {
    let u = Some("postfix@-.service");
    let q = format!("{:X}", 0x03C4_F2A1_u64 + t % 0xFFFF);
    let pickup = l.pid();
    l.at(
        t,
        "postfix/pickup",
        Some(pickup),
        u,
        format!("{q}: uid=0 from=<root>"),
    );
    let cleanup = l.pid();
    l.at(
        t,
        "postfix/cleanup",
        Some(cleanup),
        u,
        format!("{q}: message-id=<{t}.{node}@{node}.demo.lan>"),
    );
    l.at(
        t,
        "postfix/qmgr",
        Some(1662),
        u,
        format!("{q}: from=<root@{node}.demo.lan>, size=2874, nrcpt=1 (queue active)"),
    );
    let smtp = l.pid();
    l.at(
        t + 1,
        "postfix/smtp",
        Some(smtp),
        u,
        format!(
            "{q}: to=<{to}>, relay=mail.example.com[203.0.113.25]:25, delay=0.62, \
             delays=0.04/0.01/0.33/0.24, dsn=2.0.0, status=sent (250 2.0.0 Ok: queued as 7B3C9D2E11)"
        ),
    );
    l.at(
        t + 1,
        "postfix/qmgr",
        Some(1662),
        u,
        format!("{q}: removed"),
    );
}

/// corosync on `pve1`/`pve2`: a short link flap, then `pve3` gone.
fn corosync(l: &mut Log, node: &str, p: &Pids) {
    let u = Some("corosync.service");
    let cs = |l: &mut Log, t: u64, m: &str| {
        l.at(t, "corosync", Some(p.corosync), u, format!("  {m}"));
    };
    let down = |l: &mut Log, t: u64| {
        cs(l, t, "[KNET  ] link: host: 3 link: 0 is down");
        cs(
            l,
            t,
            "[KNET  ] host: host: 3 (passive) best link: 0 (pri: 1)",
        );
        cs(l, t, "[KNET  ] host: host: 3 has no active links");
    };
    let flap = T0 + 4 * 3_600 + 10 * 60 + 22;
    down(l, flap);
    cs(l, flap + 35, "[KNET  ] rx: host: 3 link: 0 is up");
    cs(
        l,
        flap + 35,
        "[KNET  ] link: Resetting MTU for link 0 because host 3 joined",
    );
    cs(
        l,
        flap + 35,
        "[KNET  ] host: host: 3 (passive) best link: 0 (pri: 1)",
    );
    cs(
        l,
        flap + 36,
        "[KNET  ] pmtud: Global data MTU changed to: 1397",
    );

    let t = PEER_LOST;
    down(l, t);
    cs(l, t + 1, "[TOTEM ] Token has not been received in 2737 ms");
    cs(
        l,
        t + 2,
        "[TOTEM ] A processor failed, forming new configuration: token timed out (3650ms), \
         waiting 4380ms for consensus.",
    );
    cs(l, t + 7, "[QUORUM] Sync members[2]: 1 2");
    cs(l, t + 7, "[QUORUM] Sync left[1]: 3");
    cs(
        l,
        t + 7,
        "[TOTEM ] A new membership (1.2a) was formed. Members left: 3",
    );
    cs(
        l,
        t + 7,
        "[TOTEM ] Failed to receive the leave message. failed: 3",
    );
    let (p1, p2) = (1392, 1401);
    let fs = |l: &mut Log, m: String| {
        l.at(
            t + 7,
            "pmxcfs",
            Some(p.pmxcfs),
            Some("pve-cluster.service"),
            m,
        );
    };
    for area in ["dcdb", "status"] {
        fs(l, format!("[{area}] notice: members: 1/{p1}, 2/{p2}"));
        fs(l, format!("[{area}] notice: starting data syncronisation"));
    }
    cs(l, t + 7, "[QUORUM] Members[2]: 1 2");
    cs(
        l,
        t + 7,
        "[MAIN  ] Completed service synchronization, ready to provide service.",
    );
    for area in ["dcdb", "status"] {
        fs(
            l,
            format!("[{area}] notice: received sync request (epoch 1/{p1}/00000007)"),
        );
    }
    fs(l, "[dcdb] notice: received all states".into());
    fs(l, format!("[dcdb] notice: leader is 1/{p1}"));
    fs(l, format!("[dcdb] notice: synced members: 1/{p1}, 2/{p2}"));
    if node == "pve1" {
        fs(l, "[dcdb] notice: start sending inode updates".into());
        fs(l, "[dcdb] notice: sent all (0) updates".into());
    } else {
        fs(l, "[dcdb] notice: waiting for updates from leader".into());
    }
    fs(l, "[dcdb] notice: all data is up to date".into());
    fs(l, "[status] notice: received all states".into());
    fs(l, "[status] notice: all data is up to date".into());
    if node == "pve1" {
        l.at(
            t + 21,
            "pve-ha-crm",
            Some(p.crm),
            Some("pve-ha-crm.service"),
            "node 'pve3': state changed from 'online' => 'unknown'".into(),
        );
    }
}

fn replication_errors(l: &mut Log, c: &Cluster, node: &str, p: &Pids) {
    let Some((source, id, error)) = crate::replication::seeded_failure(c) else {
        return;
    };
    if source != node {
        return;
    }
    for (_, end) in crate::replication::FAILED_TRIES {
        l.at(
            end,
            "pvescheduler",
            Some(p.pvescheduler + 2_000),
            Some("pvescheduler.service"),
            format!("{id}: got unexpected replication job error - {error}"),
        );
        mail(l, end + 1, node, "ops@example.com");
    }
}

fn logins(l: &mut Log, node: &str, p: &Pids, pve9: bool) {
    let u = Some("pvedaemon.service");
    let ok = |l: &mut Log, t: u64| {
        l.at(
            t,
            "pvedaemon",
            Some(p.pvedaemon + 1),
            u,
            "<root@pam> successful auth for user 'root@pam'".into(),
        );
    };
    match node {
        "pve1" => {
            ok(l, T0 + 8 * 3_600 + 55 * 60 + 2);
            l.at(
                T0 + 9 * 3_600 + 2 * 60 + 44,
                "pvedaemon",
                Some(p.pvedaemon + 2),
                u,
                "authentication failure; rhost=::ffff:198.51.100.77 user=admin@pve \
                 msg=no such user ('admin@pve')"
                    .into(),
            );
            ok(l, T0 + 13 * 3_600 + 40);
        }
        "pve2" => {
            let t = T0 + 6 * 3_600 + 28 * 60 + 40;
            ssh_session(l, t, 6 * 60 + 2, p, pve9);
            chrony_failure(l, t + 92, p);
        }
        _ => {
            ok(l, T0 + 7_100);
            ssh_session(l, T0 + 2 * 3_600 + 5 * 60, 1_500, p, pve9);
        }
    }
}

/// An administrator's ssh session (OpenSSH 10 on PVE 9 logs as
/// `sshd-session`).
fn ssh_session(l: &mut Log, t: u64, length: u64, p: &Pids, pve9: bool) {
    let ident = if pve9 { "sshd-session" } else { "sshd" };
    let u = Some("ssh.service");
    let pid = l.pid() + 700_000;
    l.at(
        t,
        ident,
        Some(pid),
        u,
        "Accepted publickey for root from 192.0.2.5 port 53122 ssh2: ED25519 \
         SHA256:Hh2c0d3XkF8qz1vJpT7mYbN6wLsR4aE9uK5oG2iDfQc"
            .into(),
    );
    l.at(
        t,
        ident,
        Some(pid),
        u,
        "pam_unix(sshd:session): session opened for user root(uid=0) by root(uid=0)".into(),
    );
    let lu = Some("systemd-logind.service");
    l.at(
        t,
        "systemd-logind",
        Some(p.logind),
        lu,
        "New session 412 of user root.".into(),
    );
    l.at(
        t + length,
        ident,
        Some(pid),
        u,
        "pam_unix(sshd:session): session closed for user root".into(),
    );
    l.at(
        t + length,
        "systemd-logind",
        Some(p.logind),
        lu,
        "Session 412 logged out. Waiting for processes to exit.".into(),
    );
    l.at(
        t + length,
        "systemd-logind",
        Some(p.logind),
        lu,
        "Removed session 412.".into(),
    );
}

/// `systemctl restart chrony` after a bad edit: it does not come back.
fn chrony_failure(l: &mut Log, t: u64, p: &Pids) {
    let u = "chrony.service";
    let d = "chrony, an NTP client/server";
    l.systemd(t, u, format!("Stopping chrony.service - {d}..."));
    l.at(
        t,
        "chronyd",
        Some(p.chronyd),
        Some(u),
        "chronyd exiting".into(),
    );
    l.systemd(t, u, "chrony.service: Deactivated successfully.");
    l.systemd(t, u, format!("Stopped chrony.service - {d}."));
    l.systemd(t, u, format!("Starting chrony.service - {d}..."));
    let pid = 731_044;
    l.at(
        t,
        "chronyd",
        Some(pid),
        Some(u),
        "chronyd version 4.6.1 starting (+CMDMON +NTP +REFCLOCK +RTC +PRIVDROP +SCFILTER \
         +SIGND +ASYNCDNS +NTS +SECHASH +IPV6 -DEBUG)"
            .into(),
    );
    l.at(
        t,
        "chronyd",
        Some(pid),
        Some(u),
        "Fatal error : Invalid command at line 4 in file /etc/chrony/chrony.conf".into(),
    );
    l.systemd(
        t,
        u,
        "chrony.service: Control process exited, code=exited, status=1/FAILURE",
    );
    l.systemd(t, u, "chrony.service: Failed with result 'exit-code'.");
    l.systemd(t, u, format!("Failed to start chrony.service - {d}."));
}

/// smartd's half-hourly checks of `pve2`'s failing disk, and the worn
/// SSD's wear counter ticking down.
fn smartd(l: &mut Log, p: &Pids) {
    let u = Some("smartd.service");
    let mut t = START - START % 1_800 + 1_800 + 11;
    while t <= END {
        l.at(
            t,
            "smartd",
            Some(p.smartd),
            u,
            "Device: /dev/sdb [SAT], FAILED SMART self-check. BACK UP DATA NOW!".into(),
        );
        l.at(
            t,
            "smartd",
            Some(p.smartd),
            u,
            "Device: /dev/sdb [SAT], 24 Currently unreadable (pending) sectors".into(),
        );
        t += 1_800;
    }
    l.at(
        T0 + 11 * 3_600 + 1_811,
        "smartd",
        Some(p.smartd),
        u,
        "Device: /dev/sda [SAT], SMART Usage Attribute: 177 Wear_Leveling_Count changed from 5 to 4"
            .into(),
    );
}

/// Every online node's journal.
pub(crate) fn seed(c: &Cluster) -> BTreeMap<String, Vec<crate::journal::Entry>> {
    let mut out = BTreeMap::new();
    for n in c.nodes.iter().filter(|n| n.online) {
        let node = n.name.as_str();
        let p = pids(node);
        let mut l = Log {
            node: node.to_string(),
            items: Vec::new(),
            next_pid: 400_000 + (n.nodeid * 51_001),
        };
        cron(&mut l);
        midnight(&mut l, &p);
        apt_daily(&mut l);
        worker_turnover(&mut l, &p);
        earlier_backups(&mut l, c, node, &p);
        tasks(&mut l, c, node, &p);
        logins(&mut l, node, &p, c.release_of(node).major() >= 9);
        if c.clustered {
            corosync(&mut l, node, &p);
        }
        replication_errors(&mut l, c, node, &p);
        if node == "pve2" {
            smartd(&mut l, &p);
        }
        out.insert(node.to_string(), l.finish());
    }
    out
}
