//! Where sessions live: rmcp's in-memory `LocalSessionManager`, except that
//! each new session id starts with `http.session_id_prefix` when one is set.
//!
//! Sessions are held by the process that opened them. With several replicas
//! behind a load balancer, the prefix is how the balancer finds that process
//! again: it matches the `Mcp-Session-Id` header against each replica's
//! prefix (docs/deploy.md), with no state of its own and nothing that stock
//! nginx lacks. Everything but the id is rmcp's, so the map, the idle expiry
//! and the streams behave exactly as without a prefix.

use futures_core::Stream;
use http::HeaderMap;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, create_local_session,
};

/// The header that carries the session id, both ways.
const SESSION_HEADER: &str = "mcp-session-id";

/// The MCP session id in these headers, if any.
pub fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The sessions of one process.
#[derive(Debug, Default)]
pub struct Sessions {
    /// rmcp's manager; its map is keyed by the full (prefixed) ids.
    pub local: LocalSessionManager,
    /// What each new id starts with (may be empty).
    prefix: String,
}

impl Sessions {
    /// Sessions whose ids start with `prefix` (none: bare ids), expiring
    /// after `local`'s idle time.
    pub fn new(local: LocalSessionManager, prefix: Option<&str>) -> Sessions {
        Sessions {
            local,
            prefix: prefix.unwrap_or_default().to_string(),
        }
    }

    /// Whether `id` could have been issued here: it carries this process's
    /// prefix. One that does not belongs to another replica.
    pub fn is_ours(&self, id: &str) -> bool {
        id.starts_with(&self.prefix)
    }

    /// The prefix, if one is set.
    pub fn prefix(&self) -> Option<&str> {
        (!self.prefix.is_empty()).then_some(self.prefix.as_str())
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    /// As rmcp's `LocalSessionManager::create_session` (a random v4 UUID,
    /// the manager's session config, no event store), with the prefix.
    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let id: SessionId = format!("{}{}", self.prefix, uuid::Uuid::new_v4()).into();
        let (handle, worker) = create_local_session(id.clone(), self.local.session_config.clone());
        self.local.sessions.write().await.insert(id.clone(), handle);
        Ok((id, WorkerTransport::spawn(worker)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.local.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn new_ids_carry_the_prefix_and_are_found_by_it() {
        let sessions = Sessions::new(LocalSessionManager::default(), Some("r2-"));
        let (a, _ta) = sessions.create_session().await.unwrap();
        let (b, _tb) = sessions.create_session().await.unwrap();
        assert!(a.starts_with("r2-") && b.starts_with("r2-"), "{a} {b}");
        assert_ne!(a, b);
        assert_eq!(a.len(), "r2-".len() + 36, "a UUID after the prefix: {a}");
        assert!(sessions.has_session(&a).await.unwrap());
        assert!(sessions.is_ours(&a));
        assert!(!sessions.is_ours("r1-0f8e2c4a-0000-4000-8000-000000000000"));
        sessions.close_session(&a).await.unwrap();
        assert!(!sessions.has_session(&a).await.unwrap());
        assert!(sessions.has_session(&b).await.unwrap());
    }

    #[tokio::test]
    async fn without_a_prefix_ids_are_bare_uuids() {
        let sessions = Sessions::new(LocalSessionManager::default(), None);
        let (id, _t) = sessions.create_session().await.unwrap();
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
        assert!(sessions.is_ours(&id));
        assert_eq!(sessions.prefix(), None);
    }
}
