//! Worker tasks of the write endpoints, in simulated time.
//!
//! A write that PVE runs as a worker (`fork_worker`) becomes a [`Worker`]:
//! its task shows `running` at once, its log lines appear as their share of
//! the task's duration passes, and at the end it takes its exit status
//! (decided when it started) and, when that is `OK`, applies its effect on
//! the cluster. While it runs it holds the guest's config `lock` (backup,
//! snapshot, clone, ...) or, for actions PVE runs under the config file's
//! flock only (power actions), that flock.
//!
//! Time is evaluated lazily: every look at the cluster ([`advance`]) first
//! moves the workers on to "now", so there is no background thread, and
//! nothing can observe a worker between two of its steps.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::state::{Cluster, Task};
use crate::util::now_secs;

/// How long a task takes unless configured otherwise: short, so tests that
/// wait for tasks stay fast, yet long enough to see one running.
pub const DEFAULT_TASK_DURATION: Duration = Duration::from_millis(300);

/// A change applied to the cluster when a task ends.
pub(crate) type Effect = Box<dyn FnOnce(&mut Cluster) + Send + Sync>;

/// A running worker task.
pub(crate) struct Worker {
    pub upid: String,
    started: Instant,
    duration: Duration,
    /// Log lines still to be written, with the fraction of the duration at
    /// which each appears (sorted).
    pending: VecDeque<(f64, String)>,
    /// `OK`, `WARNINGS: n` or the error text.
    exit: String,
    effect: Option<Effect>,
    /// Runs at the end whatever the exit status.
    always: Option<Effect>,
    /// Undoes what the start did (a created guest's config), when the task
    /// is stopped.
    undo: Option<Effect>,
    /// Guests whose config `lock` this task set; cleared at the end.
    locks: Vec<u32>,
    /// Guests whose config file flock this task holds.
    pub flocks: Vec<u32>,
}

/// The workers and their timing knobs.
pub(crate) struct Work {
    pub workers: Vec<Worker>,
    /// Duration of a task whose type has no entry in `durations`.
    pub default_duration: Duration,
    /// Per task type (`qmstart`, `vzdump`, ...).
    pub durations: BTreeMap<String, Duration>,
    /// Guest configs saved by backups made here, by volid.
    pub backup_configs: BTreeMap<String, crate::state::Guest>,
    next_pid: u32,
}

impl Default for Work {
    fn default() -> Self {
        Work {
            workers: Vec::new(),
            default_duration: DEFAULT_TASK_DURATION,
            durations: BTreeMap::new(),
            backup_configs: BTreeMap::new(),
            next_pid: 0x0004_1A00,
        }
    }
}

/// What a new task is.
pub(crate) struct Spec {
    pub node: String,
    /// Task type, e.g. `qmstart`.
    pub ty: &'static str,
    /// Task id (usually the vmid; empty for multi-guest jobs).
    pub id: String,
    /// Full auth id of the caller (`root@pam!mcp`).
    pub user: String,
    /// Log lines and the fraction (0..=1) of the duration at which they
    /// appear.
    pub lines: Vec<(f64, String)>,
    /// Exit status: `Ok` is `OK`; `Err` the error text.
    pub exit: Result<(), String>,
    pub effect: Option<Effect>,
    pub always: Option<Effect>,
    pub undo: Option<Effect>,
    /// Config locks to set now (and clear at the end): `(vmid, lock)`.
    pub locks: Vec<(u32, &'static str)>,
    pub flocks: Vec<u32>,
}

impl Spec {
    pub fn new(node: &str, ty: &'static str, id: impl Into<String>, user: &str) -> Spec {
        Spec {
            node: node.to_string(),
            ty,
            id: id.into(),
            user: user.to_string(),
            lines: Vec::new(),
            exit: Ok(()),
            effect: None,
            always: None,
            undo: None,
            locks: Vec::new(),
            flocks: Vec::new(),
        }
    }

    /// Adds a log line at `at` (fraction of the duration).
    pub fn line(&mut self, at: f64, text: impl Into<String>) -> &mut Self {
        self.lines.push((at, text.into()));
        self
    }

    pub fn fail(mut self, msg: impl Into<String>) -> Spec {
        self.exit = Err(msg.into());
        self.effect = None;
        self
    }

    pub fn effect(mut self, f: impl FnOnce(&mut Cluster) + Send + Sync + 'static) -> Spec {
        self.effect = Some(Box::new(f));
        self
    }

    /// An effect applied when the task ends, whatever its exit status.
    pub fn always(mut self, f: impl FnOnce(&mut Cluster) + Send + Sync + 'static) -> Spec {
        self.always = Some(Box::new(f));
        self
    }

    pub fn undo(mut self, f: impl FnOnce(&mut Cluster) + Send + Sync + 'static) -> Spec {
        self.undo = Some(Box::new(f));
        self
    }

    pub fn lock(mut self, vmid: u32, lock: &'static str) -> Spec {
        self.locks.push((vmid, lock));
        self
    }

    pub fn flock(mut self, vmid: u32) -> Spec {
        self.flocks.push(vmid);
        self
    }
}

fn duration_for(w: &Work, ty: &str) -> Duration {
    w.durations.get(ty).copied().unwrap_or(w.default_duration)
}

/// Starts a task: lists it as running, sets its locks, writes the lines due
/// at once, and returns its UPID.
pub(crate) fn spawn(c: &mut Cluster, spec: Spec) -> String {
    let pid = c.work.next_pid;
    c.work.next_pid = c.work.next_pid.wrapping_add(0x13) & 0x3F_FFFF;
    let starttime = now_secs();
    // Jiffies since a boot a few weeks ago, like the seed's tasks.
    let pstart = (starttime % 3_000_000 + 400_000) * 100;
    let task = Task::new(
        &spec.node, pid, pstart, starttime, spec.ty, &spec.id, &spec.user, None, 0,
    );
    let upid = task.upid.clone();
    let mut lines = spec.lines;
    lines.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut task = task;
    task.log = Some(Vec::new());
    c.tasks.insert(0, task);
    let mut locks = Vec::new();
    for (vmid, lock) in spec.locks {
        if let Some(g) = c.guests.get_mut(&vmid) {
            g.lock = Some(lock.to_string());
            locks.push(vmid);
        }
    }
    let duration = duration_for(&c.work, spec.ty);
    c.work.workers.push(Worker {
        upid: upid.clone(),
        started: Instant::now(),
        duration,
        pending: lines.into(),
        exit: match spec.exit {
            Ok(()) => "OK".to_string(),
            Err(e) => e,
        },
        effect: spec.effect,
        always: spec.always,
        undo: spec.undo,
        locks,
        flocks: spec.flocks,
    });
    c.generation += 1;
    advance(c);
    upid
}

/// [`advance`] behind the cluster's lock, taking the write lock only when
/// tasks are running.
pub(crate) fn advance_shared(lock: &std::sync::RwLock<Cluster>) {
    if crate::util::read(lock).work.workers.is_empty() {
        return;
    }
    advance(&mut crate::util::write(lock));
}

/// The pid the next task will get (PVE names temporary files after its
/// worker's pid).
pub(crate) fn next_pid(c: &Cluster) -> u32 {
    c.work.next_pid
}

/// Ends a running task now, as if its time were up (its remaining log,
/// its effect), and returns its exit status: what an API call that waits
/// for its task (`delay`, `background_delay`) sees when the task fits.
pub(crate) fn finish_now(c: &mut Cluster, upid: &str) -> Option<String> {
    if let Some(w) = c.work.workers.iter_mut().find(|w| w.upid == upid) {
        w.duration = Duration::ZERO;
    }
    advance(c);
    c.tasks
        .iter()
        .find(|t| t.upid == upid)
        .and_then(|t| t.status.clone())
}

/// How long a task of this type takes now.
pub(crate) fn duration_of(c: &Cluster, ty: &str) -> Duration {
    duration_for(&c.work, ty)
}

/// Whether a running task holds the config file lock of `vmid`.
pub(crate) fn flocked(c: &Cluster, vmid: u32) -> bool {
    c.work.workers.iter().any(|w| w.flocks.contains(&vmid))
}

fn append_log(c: &mut Cluster, upid: &str, lines: Vec<String>) {
    if lines.is_empty() {
        return;
    }
    if let Some(t) = c.tasks.iter_mut().find(|t| t.upid == upid) {
        t.log.get_or_insert_with(Vec::new).extend(lines);
    }
}

fn end_task(c: &mut Cluster, upid: &str, status: String) {
    if let Some(t) = c.tasks.iter_mut().find(|t| t.upid == upid) {
        let now = now_secs().max(t.starttime);
        t.endtime = Some(now);
        t.status = Some(status);
    }
}

fn release(c: &mut Cluster, w: &Worker) {
    for vmid in &w.locks {
        if let Some(g) = c.guests.get_mut(vmid) {
            g.lock = None;
        }
    }
}

/// Moves every worker on to now: writes the log lines that are due and ends
/// the tasks whose time is up (an effect may start further tasks, e.g. the
/// HA manager acting on a request).
pub(crate) fn advance(c: &mut Cluster) {
    // Bounded: effects start at most a few follow-up tasks.
    for _ in 0..8 {
        let now = Instant::now();
        let mut finished = Vec::new();
        let mut logs = Vec::new();
        let mut i = 0;
        while i < c.work.workers.len() {
            let w = &mut c.work.workers[i];
            let elapsed = now.saturating_duration_since(w.started);
            let frac = if w.duration.is_zero() {
                1.0
            } else {
                elapsed.as_secs_f64() / w.duration.as_secs_f64()
            };
            let mut due = Vec::new();
            while w.pending.front().is_some_and(|(at, _)| *at <= frac) {
                if let Some((_, l)) = w.pending.pop_front() {
                    due.push(l);
                }
            }
            logs.push((w.upid.clone(), due));
            if frac >= 1.0 {
                finished.push(c.work.workers.remove(i));
            } else {
                i += 1;
            }
        }
        for (upid, lines) in logs {
            append_log(c, &upid, lines);
        }
        if finished.is_empty() {
            return;
        }
        for mut w in finished {
            let rest: Vec<String> = w.pending.drain(..).map(|(_, l)| l).collect();
            append_log(c, &w.upid, rest);
            release(c, &w);
            if w.exit == "OK"
                && let Some(effect) = w.effect.take()
            {
                effect(c);
            }
            if let Some(always) = w.always.take() {
                always(c);
            }
            end_task(c, &w.upid, std::mem::take(&mut w.exit));
        }
        c.generation += 1;
    }
}

/// Stops a running task like `DELETE /nodes/{node}/tasks/{upid}`: no
/// effect, locks released, what its start created undone. A seeded task
/// that runs with no worker behind it ends the same way. `false` when it
/// is not running.
pub(crate) fn stop(c: &mut Cluster, upid: &str) -> bool {
    let Some(i) = c.work.workers.iter().position(|w| w.upid == upid) else {
        let seeded = c.tasks.iter().any(|t| t.upid == upid && t.status.is_none());
        if seeded {
            append_log(c, upid, vec!["received interrupt".to_string()]);
            end_task(c, upid, "interrupted by signal".to_string());
            c.generation += 1;
        }
        return seeded;
    };
    let mut w = c.work.workers.remove(i);
    append_log(c, upid, vec!["received interrupt".to_string()]);
    release(c, &w);
    if let Some(undo) = w.undo.take() {
        undo(c);
    }
    end_task(c, upid, "interrupted by signal".to_string());
    c.generation += 1;
    true
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of now plus `offset` seconds, as migration
/// logs prefix their lines.
pub(crate) fn stamp(offset: u64) -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
        + offset;
    let (y, mo, d, h, mi, s) = crate::util::civil(t);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}
