//! Reloading the policy: on SIGHUP, and when the policy's file (or the
//! configuration file that holds or names it) changes, checked once a
//! second. A new policy that does not pass the same checks as at start is
//! rejected with a warning, and the old one stays in force.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmcp::{Peer, RoleServer};

use super::{Engine, PolicySource};
use crate::tools::ToolInfo;

/// How often the files are looked at.
const POLL: Duration = Duration::from_secs(1);

/// Where the policy was found at start, so a reload finds it the same way.
#[derive(Debug, Clone)]
pub struct Origin {
    /// `--policy` / `PVE_MCP_POLICY`.
    pub flag: Option<PathBuf>,
    /// `--config` / `PVE_MCP_CONFIG`.
    pub config: Option<PathBuf>,
}

impl Origin {
    /// Finds and loads the policy.
    pub fn load(&self, tools: &[ToolInfo]) -> Result<super::Policy, crate::error::ConfigError> {
        PolicySource::resolve(self.flag.as_deref(), self.config.as_deref())?.load(tools)
    }

    fn watched(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self
            .flag
            .iter()
            .chain(self.config.iter())
            .cloned()
            .collect();
        if let Ok(source) = PolicySource::resolve(self.flag.as_deref(), self.config.as_deref())
            && let Some(path) = source.path()
            && !paths.iter().any(|p| p == path)
        {
            paths.push(path.to_path_buf());
        }
        paths
    }
}

/// What identifies one version of a file: a rewrite in place changes the
/// time or size, a rename over it changes the inode.
type Stamp = Option<(SystemTime, u64, u64)>;

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len(), meta.ino()))
}

/// Starts the reload task. It must be started before anything could send
/// SIGHUP: once the handler is installed the signal no longer ends the
/// process.
pub fn spawn(
    engine: Arc<Engine>,
    origin: Origin,
    tools: Arc<[ToolInfo]>,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    Ok(tokio::spawn(async move {
        let mut watched: Vec<(PathBuf, Stamp)> = origin
            .watched()
            .into_iter()
            .map(|p| {
                let s = stamp(&p);
                (p, s)
            })
            .collect();
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let why = tokio::select! {
                signal = hangup.recv() => match signal {
                    Some(()) => "SIGHUP",
                    None => return,
                },
                _ = tick.tick() => {
                    if !watched.iter().any(|(p, s)| stamp(p) != *s) {
                        continue;
                    }
                    "a file change"
                }
            };
            reload(&engine, &origin, &tools, why);
            watched = origin
                .watched()
                .into_iter()
                .map(|p| {
                    let s = stamp(&p);
                    (p, s)
                })
                .collect();
        }
    }))
}

/// Loads the policy again and puts it in force, or keeps the old one.
pub fn reload(engine: &Engine, origin: &Origin, tools: &[ToolInfo], why: &str) -> bool {
    match origin.load(tools) {
        Ok(policy) => {
            let from = policy.origin.clone();
            engine.replace(policy);
            tracing::info!(trigger = why, "policy reloaded from {from}");
            true
        }
        Err(e) => {
            tracing::warn!(
                trigger = why,
                "policy reload rejected; the previous policy stays in force: {e}"
            );
            false
        }
    }
}

/// Which tools `tools/list` shows, watched across policy reloads.
pub struct ListWatch {
    engine: Arc<Engine>,
    tools: Arc<[ToolInfo]>,
    reloads: tokio::sync::watch::Receiver<u64>,
    shown: Vec<bool>,
}

impl ListWatch {
    /// Starts watching from the list as it is now.
    pub fn new(engine: Arc<Engine>, tools: Arc<[ToolInfo]>) -> ListWatch {
        let reloads = engine.reloads();
        let mut watch = ListWatch {
            engine,
            tools,
            reloads,
            shown: Vec::new(),
        };
        watch.shown = watch.listed();
        watch
    }

    fn listed(&self) -> Vec<bool> {
        let policy = self.engine.policy();
        self.tools.iter().map(|t| policy.visible(t)).collect()
    }

    /// Waits for a reload that hides or shows a tool (a reload that
    /// changes nothing listed is not one); `false` once no reload can come.
    pub async fn changed(&mut self) -> bool {
        loop {
            if self.reloads.changed().await.is_err() {
                return false;
            }
            let now = self.listed();
            if now != self.shown {
                self.shown = now;
                return true;
            }
        }
    }
}

/// Tells the client `notifications/tools/list_changed` whenever a reload
/// changes which tools `tools/list` shows (a tool hidden or shown), so it
/// lists them again. Ends with the session (noticed within ten seconds).
pub fn notify_list_changes(
    engine: Arc<Engine>,
    tools: Arc<[ToolInfo]>,
    peer: Peer<RoleServer>,
) -> tokio::task::JoinHandle<()> {
    let mut watch = ListWatch::new(engine, tools);
    tokio::spawn(async move {
        // An HTTP server sees many sessions come and go without a reload in
        // between: look now and then whether this one is gone.
        let mut check = tokio::time::interval(std::time::Duration::from_secs(10));
        loop {
            tokio::select! {
                changed = watch.changed() => if !changed { return },
                _ = check.tick() => {
                    if peer.is_transport_closed() {
                        return;
                    }
                    continue;
                }
            }
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::debug!("could not tell the client the tool list changed: {e}");
                return;
            }
        }
    })
}
