//! Long calls as tasks: the MCP tasks extension
//! (`io.modelcontextprotocol/tasks`, SEP-2663).
//!
//! A `tools/call` whose request declares the extension, and that would
//! wait for Proxmox (its tool waits and it asked to: `wait: true`), is
//! authorized as always, then runs in the background ([`run`]) and is
//! answered at once with a task handle. The client polls `tasks/get` and
//! may `tasks/cancel` ([`cancel`]); a client that listens is sent
//! `notifications/tasks` when the task ends. Task state lives in the store
//! the policy's `state` names ([`store`]), so any replica answers for a
//! task another one runs. Other requests keep `wait: true` with progress.

pub mod cancel;
pub mod run;
pub mod store;
pub mod upid;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use rmcp::RoleServer;
use rmcp::model::{DetailedTask, GetTaskResult, MetaObject, Task, TaskPayload, TaskStatus};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, model::JsonObject};
use tokio_util::sync::CancellationToken;

use crate::audit::record::TaskEventRecord;
use crate::caller::Caller;
use crate::error::ConfigError;
use crate::policy::StateSpec;
use crate::server::app::App;
use store::{MemoryTasks, RedisTasks, Status, TaskRecord, TaskStore};

/// How long a task is kept from its creation. Longer than any wait a call
/// may ask for, so a working task is never forgotten.
pub const TTL: Duration = Duration::from_secs(2 * 60 * 60);

/// How often a client is asked to poll.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// A working task's record is rewritten at least this often by the
/// replica that runs it.
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// A working task not rewritten for this long has lost its replica (it
/// exited or crashed): `tasks/get` ends it `failed` rather than leave it
/// working until its TTL.
pub const ORPHANED: Duration = Duration::from_secs(45);

/// The tasks of one server (every session and replica shares the store).
pub struct Tasks {
    store: Arc<dyn TaskStore>,
    /// The tasks this process runs, to stop waiting at once when one is
    /// cancelled here (a cancel on another replica is seen by polling).
    local: Mutex<HashMap<String, CancellationToken>>,
}

impl Tasks {
    /// Tasks kept in `store`.
    pub fn new(store: Arc<dyn TaskStore>) -> Tasks {
        Tasks {
            store,
            local: Mutex::default(),
        }
    }

    /// Tasks in the store the policy's `state` names: memory, or Redis
    /// (the connection is lazy: an unreachable Redis fails a task's
    /// creation, and the call then waits as it would without tasks).
    pub fn for_state(state: &StateSpec, origin: &str) -> Result<Tasks, ConfigError> {
        let store: Arc<dyn TaskStore> = match (state, state.redis_connection(origin)?) {
            (StateSpec::Redis(url), Some(connection)) => {
                let address = crate::state::redis::redacted_url(url);
                Arc::new(RedisTasks::new(connection, address))
            }
            _ => Arc::new(MemoryTasks::default()),
        };
        Ok(Tasks::new(store))
    }

    /// `tasks/get`: the caller's task as it stands.
    pub async fn get(
        &self,
        app: &App,
        caller: &Caller,
        id: &str,
    ) -> Result<GetTaskResult, ErrorData> {
        let mut record = self.owned(caller, id).await?;
        if record.status == Status::Working && orphaned(&record.updated_at, Utc::now()) {
            record = self.end_orphan(app, caller, record).await?;
        }
        let mut result = GetTaskResult::new(detailed(&record));
        result.meta = proxmox_task(&record);
        Ok(result)
    }

    /// The caller's task `id`. Another caller's task is answered as an
    /// unknown one, so its existence is not revealed.
    async fn owned(&self, caller: &Caller, id: &str) -> Result<TaskRecord, ErrorData> {
        // Not a store key this server could have made: not looked up.
        if !well_formed(id) {
            return Err(unknown_task(id));
        }
        let found = self
            .store
            .get(id)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        match found {
            Some(record) if record.owner == crate::approval::binding(caller) => Ok(record),
            _ => Err(unknown_task(id)),
        }
    }

    /// Ends a task whose replica stopped rewriting it, unless it ended
    /// meanwhile: the task as it now stands.
    async fn end_orphan(
        &self,
        app: &App,
        caller: &Caller,
        mut record: TaskRecord,
    ) -> Result<TaskRecord, ErrorData> {
        let store_error = |e: store::StoreError| ErrorData::internal_error(e.to_string(), None);
        let lost = format!(
            "The pve-mcp replica running this task stopped (no word from it for {} s), so \
             its result is lost. The Proxmox task may still run: see _meta pve-mcp/upid and \
             pve_get_task_status.",
            ORPHANED.as_secs()
        );
        record.status = Status::Failed;
        record.message = Some(lost.clone());
        record.outcome = serde_json::to_value(ErrorData::internal_error(lost, None)).ok();
        record.updated_at = now();
        if self
            .store
            .replace_if(Status::Working, &record)
            .await
            .map_err(store_error)?
        {
            app.audit_task(event(caller, "end", &record)).await;
            return Ok(record);
        }
        let current = self.store.get(&record.id).await.map_err(store_error)?;
        current.ok_or_else(|| unknown_task(&record.id))
    }

    fn register(&self, id: &str) -> CancellationToken {
        let token = CancellationToken::new();
        self.local_tasks().insert(id.to_owned(), token.clone());
        token
    }

    fn forget(&self, id: &str) {
        self.local_tasks().remove(id);
    }

    /// Stops this process's wait for `id`, if it runs here.
    fn stop_local(&self, id: &str) {
        if let Some(token) = self.local_tasks().get(id) {
            token.cancel();
        }
    }

    fn local_tasks(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether the request declared the tasks extension (in its `_meta`, or
/// at `initialize` for a session).
pub fn wanted(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks())
}

/// The error for a task id this caller has no task under.
pub fn unknown_task(id: &str) -> ErrorData {
    let shown: String = id.chars().take(80).collect();
    ErrorData::invalid_params(
        format!(
            "Unknown task: {shown:?}. taskId must be the id a tools/call answered with \
             (resultType \"task\") for this caller; tasks are kept {} hours.",
            TTL.as_secs() / 3600
        ),
        None,
    )
}

/// Now, as task timestamps are written.
pub fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A random, unguessable task id (122 random bits).
fn new_id() -> String {
    format!("task-{}", uuid::Uuid::new_v4().simple())
}

/// Whether a working task last written at `updated_at` (RFC 3339) has
/// lost its replica by `now`. A time that does not parse is not judged.
fn orphaned(updated_at: &str, now: chrono::DateTime<Utc>) -> bool {
    chrono::DateTime::parse_from_rfc3339(updated_at).is_ok_and(|then| {
        now.signed_duration_since(then)
            .to_std()
            .is_ok_and(|age| age > ORPHANED)
    })
}

/// Whether `id` has the form [`new_id`] gives (`task-` and 32 hex digits).
fn well_formed(id: &str) -> bool {
    id.strip_prefix("task-")
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The task as `tasks/get` and `notifications/tasks` give it.
pub fn detailed(record: &TaskRecord) -> DetailedTask {
    let mut task = Task::new(
        &record.id,
        TaskStatus::Working,
        &record.created_at,
        &record.updated_at,
    )
    .with_ttl_ms(TTL.as_millis() as u64)
    .with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64);
    if let Some(message) = &record.message {
        task = task.with_status_message(message);
    }
    let object = |v: &Option<serde_json::Value>| match v {
        Some(serde_json::Value::Object(o)) => o.clone(),
        _ => JsonObject::new(),
    };
    let payload = match record.status {
        Status::Working => TaskPayload::Working,
        Status::Completed => TaskPayload::Completed {
            result: object(&record.outcome),
        },
        Status::Failed => TaskPayload::Failed {
            error: object(&record.outcome),
        },
        Status::Cancelled => TaskPayload::Cancelled,
    };
    DetailedTask::new(task, payload)
}

/// `_meta` naming the Proxmox task the call waits for, once it is known:
/// `pve-mcp/upid` and `pve-mcp/node`, what `pve_get_task_status` and
/// `pve_get_task_log` take.
fn proxmox_task(record: &TaskRecord) -> Option<MetaObject> {
    let (Some(upid), Some(node)) = (&record.upid, &record.node) else {
        return None;
    };
    let mut meta = JsonObject::new();
    meta.insert(UPID_META.into(), upid.as_str().into());
    meta.insert(NODE_META.into(), node.as_str().into());
    Some(MetaObject(meta))
}

/// The `_meta` key of a task's Proxmox UPID in `tasks/get`.
pub const UPID_META: &str = "pve-mcp/upid";
/// The `_meta` key of that task's node.
pub const NODE_META: &str = "pve-mcp/node";

/// The audit record of a step in `record`'s life, by `caller`.
fn event(caller: &Caller, event: &'static str, record: &TaskRecord) -> TaskEventRecord {
    TaskEventRecord {
        time: String::new(),
        event,
        task_id: record.id.clone(),
        session: caller.session.to_string(),
        token: caller.token.as_deref().map(str::to_owned),
        tool: record.tool.clone(),
        status: record.status.as_str().into(),
        upid: record.upid.clone(),
        message: record.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ids_of_the_form_this_server_makes_are_looked_up() {
        assert!(well_formed(&new_id()));
        assert_ne!(new_id(), new_id());
        for bad in [
            "",
            "task-",
            "task-0123",
            "TASK-0123456789abcdef0123456789abcdef",
            "task-0123456789abcdef0123456789abcdeg",
            "task-0123456789abcdef0123456789abcdef0",
            "task-0123456789abcdef0123456789abcde\u{e9}",
        ] {
            assert!(!well_formed(bad), "{bad:?}");
        }
        let now = Utc::now();
        let at = |secs: i64| {
            (now - chrono::Duration::seconds(secs)).to_rfc3339_opts(SecondsFormat::Millis, true)
        };
        assert!(!orphaned(&at(5), now));
        assert!(!orphaned(&at(HEARTBEAT.as_secs() as i64 * 4), now));
        assert!(orphaned(&at(ORPHANED.as_secs() as i64 + 1), now));
        // A clock ahead of this one's is not an old record.
        assert!(!orphaned(&at(-600), now));
        assert!(!orphaned("not a time", now));
        let long = "x".repeat(10_000);
        let error = unknown_task(&long);
        assert!(error.message.len() < 400, "{}", error.message);
    }
}
