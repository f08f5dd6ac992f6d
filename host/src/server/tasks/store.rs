//! Where task state lives: this process's memory, or Redis (the policy's
//! `state`, shared with rate limits and approvals) so any replica answers
//! `tasks/get` and `tasks/cancel` for a task another replica runs.
//!
//! A task is one record, replaced whole. Every change is a compare-and-set
//! on its status, so a call that ends and a cancel that arrives at once
//! cannot both win: whichever moves it out of `working` first decides how
//! it ended.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::aio::ConnectionManager;
use serde::{Deserialize, Serialize};

/// Every key this store writes starts with this.
pub const PREFIX: &str = "pve-mcp:tasks:";

/// A task's status, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The call runs.
    Working,
    /// The call ended; `outcome` holds its `CallToolResult`.
    Completed,
    /// The call ended without a result; `outcome` holds the JSON-RPC error.
    Failed,
    /// A `tasks/cancel` ended it.
    Cancelled,
}

impl Status {
    /// The name stored and compared (`working`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// What a cancel needs to stop the Proxmox task from any replica: the
/// original call's grant, and where its credential came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopGrant {
    /// The rule that granted the original call write access.
    pub rule: String,
    /// The original call's `cluster` argument, if it named one.
    pub cluster: Option<String>,
    /// The credential tier the original call carried (`write`, ...).
    pub tier: String,
}

/// One task, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The random, unguessable id the client polls.
    pub id: String,
    /// Whose task it is ([`crate::approval::binding`]): only it may see
    /// or cancel it.
    pub owner: String,
    /// The tool the call ran.
    pub tool: String,
    /// Where it stands.
    pub status: Status,
    /// The latest word on it: the guest's latest progress line, or how it
    /// ended.
    pub message: Option<String>,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    pub updated_at: String,
    /// The Proxmox task the call waits for, once the host saw it polled.
    pub upid: Option<String>,
    /// That task's node.
    pub node: Option<String>,
    /// Set when the original call was granted write access.
    pub stop: Option<StopGrant>,
    /// The `CallToolResult` (completed) or the JSON-RPC error (failed).
    pub outcome: Option<serde_json::Value>,
}

/// The store could not be used; the text names no credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A store operation in flight.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Task records, kept for a TTL from their creation.
pub trait TaskStore: Send + Sync {
    /// Keeps a new record for `ttl`.
    fn create<'a>(&'a self, record: &'a TaskRecord, ttl: Duration) -> StoreFuture<'a, ()>;
    /// The record, unless it is unknown or expired.
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;
    /// Replaces the record if its stored status is still `expected`;
    /// whether it was.
    fn replace_if<'a>(&'a self, expected: Status, record: &'a TaskRecord) -> StoreFuture<'a, bool>;
}

/// Tasks in this process's memory.
#[derive(Default)]
pub struct MemoryTasks {
    records: Mutex<HashMap<String, (TaskRecord, Instant)>>,
}

impl MemoryTasks {
    fn locked(&self) -> std::sync::MutexGuard<'_, HashMap<String, (TaskRecord, Instant)>> {
        let mut records = self
            .records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        records.retain(|_, (_, expires)| *expires > now);
        records
    }
}

impl TaskStore for MemoryTasks {
    fn create<'a>(&'a self, record: &'a TaskRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        let expires = Instant::now() + ttl;
        self.locked()
            .insert(record.id.clone(), (record.clone(), expires));
        Box::pin(async { Ok(()) })
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let found = self.locked().get(id).map(|(r, _)| r.clone());
        Box::pin(async { Ok(found) })
    }

    fn replace_if<'a>(&'a self, expected: Status, record: &'a TaskRecord) -> StoreFuture<'a, bool> {
        let mut records = self.locked();
        let replaced = match records.get_mut(&record.id) {
            Some((stored, _)) if stored.status == expected => {
                *stored = record.clone();
                true
            }
            _ => false,
        };
        Box::pin(async move { Ok(replaced) })
    }
}

/// KEYS[1] the task; ARGV[1] the expected status, ARGV[2] the new one,
/// ARGV[3] the record. The hash keeps its TTL.
const REPLACE_IF: &str = r"
if redis.call('HGET', KEYS[1], 'status') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'record', ARGV[3])
return 1
";

/// Tasks in Redis, as the hash `PREFIX ID` {status, record}.
pub struct RedisTasks {
    connection: ConnectionManager,
    address: String,
    replace: redis::Script,
}

impl RedisTasks {
    /// A store on this connection; `address` is the redacted URL for
    /// messages.
    pub fn new(connection: ConnectionManager, address: String) -> RedisTasks {
        RedisTasks {
            connection,
            address,
            replace: redis::Script::new(REPLACE_IF),
        }
    }

    fn error(&self, e: &redis::RedisError) -> StoreError {
        StoreError(format!(
            "the task store (Redis at {}) failed ({})",
            self.address,
            e.category()
        ))
    }
}

fn encode(record: &TaskRecord) -> String {
    // A record of strings and JSON values always serialises.
    serde_json::to_string(record).unwrap_or_default()
}

impl TaskStore for RedisTasks {
    fn create<'a>(&'a self, record: &'a TaskRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let key = format!("{PREFIX}{}", record.id);
            redis::pipe()
                .atomic()
                .hset_multiple(
                    &key,
                    &[
                        ("status", record.status.as_str()),
                        ("record", &encode(record)),
                    ],
                )
                .pexpire(&key, ttl.as_millis() as i64)
                .query_async::<()>(&mut connection)
                .await
                .map_err(|e| self.error(&e))
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let text: Option<String> = redis::cmd("HGET")
                .arg(format!("{PREFIX}{id}"))
                .arg("record")
                .query_async(&mut connection)
                .await
                .map_err(|e| self.error(&e))?;
            text.map(|t| {
                serde_json::from_str(&t).map_err(|e| {
                    StoreError(format!("the task store holds an unreadable task ({e})"))
                })
            })
            .transpose()
        })
    }

    fn replace_if<'a>(&'a self, expected: Status, record: &'a TaskRecord) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let replaced: i64 = self
                .replace
                .key(format!("{PREFIX}{}", record.id))
                .arg(expected.as_str())
                .arg(record.status.as_str())
                .arg(encode(record))
                .invoke_async(&mut connection)
                .await
                .map_err(|e| self.error(&e))?;
            Ok(replaced == 1)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: Status) -> TaskRecord {
        TaskRecord {
            id: "t-1".into(),
            owner: "token:a".into(),
            tool: "pve_backup_vm".into(),
            status,
            message: None,
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:00Z".into(),
            upid: None,
            node: None,
            stop: None,
            outcome: None,
        }
    }

    #[tokio::test]
    async fn only_the_first_change_out_of_working_wins() {
        let store = MemoryTasks::default();
        store
            .create(&record(Status::Working), Duration::from_secs(60))
            .await
            .unwrap();
        let cancelled = record(Status::Cancelled);
        assert!(store.replace_if(Status::Working, &cancelled).await.unwrap());
        let completed = record(Status::Completed);
        assert!(!store.replace_if(Status::Working, &completed).await.unwrap());
        let now = store.get("t-1").await.unwrap().unwrap();
        assert_eq!(now.status, Status::Cancelled);
        assert_eq!(store.get("t-2").await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_task_is_forgotten_after_its_ttl() {
        let store = MemoryTasks::default();
        store
            .create(&record(Status::Working), Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(store.get("t-1").await.unwrap(), None);
        let done = record(Status::Completed);
        assert!(!store.replace_if(Status::Working, &done).await.unwrap());
    }
}
