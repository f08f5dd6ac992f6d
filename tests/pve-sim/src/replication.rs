//! Storage replication jobs (`/etc/pve/replication.cfg`) and their state
//! (`/var/lib/pve-manager/pve-replication-state.json` on the guest's
//! node), as pve-guest-common's `PVE::ReplicationConfig`,
//! `PVE::ReplicationState` and `PVE::Replication` keep them.
//!
//! Time: healthy seeded jobs ran at every schedule point up to now (a
//! routine evaluated at each look, like the worker tasks); `schedule_now`
//! zeroes `last_try` as PVE does, and the simulated `pvescheduler` picks
//! the job up after [`crate::work::duration_of`] `pvesr` and runs it for
//! as long again. Deviation: PVE replicates only ZFS volumes (others fail
//! `missing replicate feature on volume '...'`); the simulator replicates
//! the guests' `local-lvm` disks.

use std::time::{Duration, Instant};

use crate::seed::T0;
use crate::state::{Cluster, GuestKind};
use crate::util::civil;

/// A job: its `replication.cfg` section and its state.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub guest: u32,
    pub jobnum: u32,
    pub target: String,
    /// `None`: the default `*/15`, not written to the config.
    pub schedule: Option<String>,
    /// MB/s.
    pub rate: Option<f64>,
    pub comment: Option<String>,
    pub disable: bool,
    /// The node the guest was on when the job last looked.
    pub source: String,
    pub state: State,
}

impl Job {
    /// `<guest>-<jobnum>`.
    pub fn id(&self) -> String {
        format!("{}-{}", self.guest, self.jobnum)
    }

    pub fn schedule(&self) -> &str {
        self.schedule.as_deref().unwrap_or("*/15")
    }
}

/// The job's state file entry.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// Start of the last successful sync (0: never).
    pub last_sync: u64,
    /// Start of the last try (0: never, or `schedule_now` asked).
    pub last_try: u64,
    pub fail_count: u32,
    pub error: Option<String>,
    /// Seconds the last run took.
    pub duration: Option<f64>,
    /// The last run's log (`/var/log/pve/replicate/<id>`).
    pub log: Vec<String>,
    /// Healthy seeded jobs: each run starts `.0` s after a schedule point
    /// and takes about `.1` s.
    pub routine: Option<(u64, f64)>,
    /// Routine runs before this epoch second are already in the fields
    /// above.
    pub routine_after: u64,
    /// `schedule_now` (when, and the epoch second): the scheduler picks
    /// the job up.
    pub requested: Option<(Instant, u64)>,
    /// Whether the state file has an entry (a job that never ran has
    /// none, and `schedule_now` then does nothing).
    pub exists: bool,
}

/// The state as `job_status` reads it now, plus whether a run is going on.
#[derive(Debug, Clone)]
pub(crate) struct Status {
    pub last_sync: u64,
    pub last_try: u64,
    pub fail_count: u32,
    pub error: Option<String>,
    pub duration: Option<f64>,
    pub next_sync: u64,
    /// The worker's pid while a sync runs.
    pub pid: Option<u32>,
    pub log: Vec<String>,
}

/// Minutes of a `*/N` (or `*:0/N`) schedule; anything else is treated as
/// the default quarter-hour.
fn period(schedule: &str) -> u64 {
    let n = schedule
        .strip_prefix("*/")
        .or_else(|| schedule.strip_prefix("*:0/"))
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| (1..=60).contains(n))
        .unwrap_or(15);
    n * 60
}

/// `compute_next_event`: the first schedule point after `last`.
pub(crate) fn next_event(schedule: &str, last: u64) -> u64 {
    let p = period(schedule);
    (last / p + 1) * p
}

fn stamp(t: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

/// `__replicate_<id>_<time>__`.
fn snapname(id: &str, t: u64) -> String {
    format!("__replicate_{id}_{t}__")
}

/// The guest's disks a run replicates, sorted.
fn volumes(c: &Cluster, guest: u32) -> Vec<String> {
    let mut v: Vec<String> = c
        .volumes
        .iter()
        .filter(|v| v.vmid == Some(guest) && matches!(v.content, "images" | "rootdir"))
        .filter(|v| !v.volid.contains("cloudinit"))
        .map(|v| v.volid.clone())
        .collect();
    v.sort();
    v
}

/// `guest => VM 101, running => <pid>` (QEMU reports its pid, LXC 1/0).
fn guest_line(c: &Cluster, guest: u32) -> String {
    match c.guests.get(&guest) {
        Some(g) if g.kind == GuestKind::Qemu => {
            let pid = if g.is_running() { g.stats.pid } else { 0 };
            format!("guest => VM {guest}, running => {pid}")
        }
        Some(g) => format!(
            "guest => CT {guest}, running => {}",
            u8::from(g.is_running())
        ),
        None => format!("guest => VM {guest}, running => 0"),
    }
}

/// Whether the run freezes the guest's filesystems (a running CT, or a
/// running VM with the agent).
fn freezes(c: &Cluster, guest: u32) -> bool {
    c.guests
        .get(&guest)
        .is_some_and(|g| g.is_running() && (g.kind == GuestKind::Lxc || g.agent))
}

/// The log of a successful incremental run that started at `start`.
fn success_log(c: &Cluster, job: &Job, start: u64, prev: u64, duration: f64) -> Vec<String> {
    let id = job.id();
    let vols = volumes(c, job.guest);
    let new = snapname(&id, start);
    let old = snapname(&id, prev);
    let mut lines = vec![
        "start replication job".to_string(),
        guest_line(c, job.guest),
        format!("volumes => {}", vols.join(",")),
    ];
    let freeze = freezes(c, job.guest);
    if freeze {
        lines.push("freeze guest filesystem".into());
    }
    for v in &vols {
        lines.push(format!("create snapshot '{new}' on {v}"));
    }
    if freeze {
        lines.push("thaw guest filesystem".into());
    }
    lines.push(format!(
        "using secure transmission, rate limit: {}",
        job.rate
            .map_or("none".to_string(), |r| format!("{r} MByte/s"))
    ));
    for v in &vols {
        lines.push(format!("incremental sync '{v}' ({old} => {new})"));
        lines.push(format!("successfully imported '{v}'"));
    }
    for v in &vols {
        lines.push(format!(
            "delete previous replication snapshot '{old}' on {v}"
        ));
    }
    for v in &vols {
        lines.push(format!(
            "(remote_finalize_local_job) delete stale replication snapshot '{old}' on {v}"
        ));
    }
    lines.push("end replication job".into());
    let n = lines.len() as f64;
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let t = start + (duration * i as f64 / n) as u64;
            format!("{} {id}: {l}", stamp(t))
        })
        .collect()
}

/// A routine run's duration: a little different every time.
fn routine_duration(base: f64, start: u64) -> f64 {
    let jitter = (start / 60 % 17) as f64 * 0.113;
    ((base + jitter) * 1_000_000.0).round() / 1_000_000.0
}

/// How long the simulated scheduler takes to pick a job up, and a run.
fn step(c: &Cluster) -> Duration {
    crate::work::duration_of(c, "pvesr")
}

fn target_online(c: &Cluster, job: &Job) -> bool {
    c.node(&job.target).is_some_and(|n| n.online)
}

/// The job's status now (`job_status` plus the state file).
pub(crate) fn status(c: &Cluster, job: &Job, now: u64) -> Status {
    let s = &job.state;
    let mut st = Status {
        last_sync: s.last_sync,
        last_try: s.last_try,
        fail_count: s.fail_count,
        error: s.error.clone(),
        duration: s.duration,
        next_sync: 0,
        pid: None,
        log: s.log.clone(),
    };
    let pid = 0x2_0000 + job.guest * 7 % 0x1_0000;
    // A run `schedule_now` asked for.
    if let Some((asked, asked_secs)) = s.requested
        && target_online(c, job)
    {
        let step = step(c);
        let elapsed = asked.elapsed();
        if elapsed >= step {
            let start = asked_secs + step.as_secs();
            if elapsed < step * 2 {
                st.last_try = start;
                st.pid = Some(pid);
            } else {
                let prev = st.last_sync;
                let d = step.as_secs_f64();
                st.last_sync = start;
                st.last_try = start;
                st.fail_count = 0;
                st.error = None;
                st.duration = Some((d * 1_000_000.0).round() / 1_000_000.0);
                st.log = success_log(c, job, start, prev, d);
            }
        }
    }
    // The routine's latest run, when it is newer.
    if let Some((offset, base)) = s.routine
        && !job.disable
    {
        let p = period(job.schedule());
        let k = now.saturating_sub(offset) / p;
        let run = k * p + offset;
        let prev = run.saturating_sub(p);
        let d = routine_duration(base, run);
        if run > s.routine_after && run > st.last_try && st.pid.is_none() {
            let done = |st: &mut Status, at: u64| {
                let d = routine_duration(base, at);
                st.log = success_log(c, job, at, st.last_sync.max(at.saturating_sub(p)), d);
                st.last_sync = at;
                st.last_try = at;
                st.fail_count = 0;
                st.error = None;
                st.duration = Some(d);
            };
            if now < run + d.ceil() as u64 {
                // Running: the run before it is the last one done, and the
                // log file (rewritten at each start) has the first lines.
                if prev > s.routine_after && prev > st.last_try {
                    done(&mut st, prev);
                }
                st.pid = Some(pid);
                st.log = success_log(c, job, run, st.last_sync, d)
                    .into_iter()
                    .take(3)
                    .collect();
                st.last_try = run;
            } else {
                done(&mut st, run);
            }
        }
    }
    st.next_sync = if st.fail_count > 0 {
        if target_online(c, job) {
            let wait = if st.fail_count <= 3 {
                5 * u64::from(st.fail_count)
            } else {
                30
            };
            st.last_try + 60 * wait
        } else {
            0
        }
    } else {
        next_event(job.schedule(), st.last_try)
    };
    st
}

/// `schedule_job_now`: with a state entry, `last_try` becomes 0 so the
/// scheduler runs the job at its next round; without one nothing changes.
pub(crate) fn schedule_now(c: &Cluster, job: &mut Job, now: u64) {
    if !job.state.exists {
        return;
    }
    let st = status(c, job, now);
    let s = &mut job.state;
    s.last_sync = st.last_sync;
    s.fail_count = st.fail_count;
    s.error = st.error;
    s.duration = st.duration;
    s.log = st.log;
    s.last_try = 0;
    s.routine_after = now;
    s.requested = Some((Instant::now(), now));
}

/// The error of the seeded job to the offline `pve3`: its ssh cannot
/// reach the node.
fn ssh_error(id: &str, vols: &str, scan: &str, parent: Option<&str>, last_sync: u64) -> String {
    let parent = parent
        .map(|p| format!(" --parent_snapname {p}"))
        .unwrap_or_default();
    format!(
        "command '/usr/bin/ssh -e none -o 'BatchMode=yes' -o 'HostKeyAlias=pve3' \
         -o 'UserKnownHostsFile=/etc/pve/nodes/pve3/ssh_known_hosts' \
         -o 'GlobalKnownHostsFile=none' root@192.0.2.13 -- pvesr prepare-local-job {id} \
         --scan {scan} {vols} --last_sync {last_sync}{parent}' failed: exit code 255"
    )
}

/// The seeded failing job's tries (start, end): the first when `pve3`
/// stopped answering ssh, retried after 5 and 10 minutes; then corosync
/// lost the node and `job_status` stopped scheduling it.
pub(crate) const FAILED_TRIES: [(u64, u64); 3] = [
    (T0 + 15 * 3_600 + 3, T0 + 15 * 3_600 + 130),
    (T0 + 15 * 3_600 + 6 * 60 + 2, T0 + 15 * 3_600 + 8 * 60 + 9),
    (T0 + 15 * 3_600 + 17 * 60 + 2, T0 + 15 * 3_600 + 19 * 60 + 9),
];

/// The seeded failing job's id and error (for the journal).
pub(crate) fn seeded_failure(c: &Cluster) -> Option<(String, String, String)> {
    let job = c.replication.iter().find(|j| j.state.fail_count > 0)?;
    Some((job.source.clone(), job.id(), job.state.error.clone()?))
}

/// The primary cluster's jobs: 101 → pve2 and 107 → pve1 replicate on
/// schedule; 106 → pve3 failed three times when pve3 went away.
pub(crate) fn seed(c: &Cluster) -> Vec<Job> {
    let job = |guest: u32, target: &str, schedule: Option<&str>| Job {
        guest,
        jobnum: 0,
        target: target.into(),
        schedule: schedule.map(str::to_string),
        rate: None,
        comment: None,
        disable: false,
        source: c
            .guests
            .get(&guest)
            .map_or_else(String::new, |g| g.node.clone()),
        state: State {
            exists: true,
            ..State::default()
        },
    };
    let mut db = job(101, "pve2", Some("*/15"));
    db.rate = Some(50.0);
    db.comment = Some("database replica for failover".into());
    db.state.routine = Some((3, 4.268_313));

    let mut dns = job(106, "pve3", None);
    let id = dns.id();
    let last_sync = T0 + 14 * 3_600 + 45 * 60 + 3;
    let vols = volumes(c, 106).join(" ");
    let parent = c.guests.get(&106).and_then(|g| g.current_parent.as_deref());
    let error = ssh_error(&id, &vols, "local-lvm", parent, last_sync);
    let (start, end) = FAILED_TRIES[2];
    dns.state.last_sync = last_sync;
    dns.state.last_try = start;
    dns.state.fail_count = 3;
    dns.state.duration = Some(127.412_907);
    dns.state.log = [
        (start, "start replication job".to_string()),
        (start, guest_line(c, 106)),
        (start, format!("volumes => {}", volumes(c, 106).join(","))),
        (
            end,
            "(remote_prepare_local_job) ssh: connect to host 192.0.2.13 port 22: \
             Connection timed out"
                .to_string(),
        ),
        (end, format!("end replication job with error: {error}")),
    ]
    .into_iter()
    .map(|(t, l)| format!("{} {id}: {l}", stamp(t)))
    .collect();
    dns.state.error = Some(error);

    let mut proxy = job(107, "pve1", Some("*/30"));
    proxy.state.routine = Some((5, 2.904_771));
    vec![db, dns, proxy]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules() {
        assert_eq!(next_event("*/15", 0), 900);
        assert_eq!(next_event("*/15", 899), 900);
        assert_eq!(next_event("*/15", 900), 1_800);
        assert_eq!(next_event("*/30", 1_000), 1_800);
        assert_eq!(period("every day"), 900);
    }
}
