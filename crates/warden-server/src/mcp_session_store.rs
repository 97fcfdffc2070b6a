//! rmcp's [`SessionStore`] over Warden's store (STORE-3): what a replica needs to serve a
//! 2025-11-25 session another replica opened — the client's `initialize`, which rmcp replays
//! to restore the session — kept in the store's `mcp_sessions` beside the session's owner
//! (`mcp_sessions.rs`). A session the store has no owner for is not restored.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use warden_core::pipeline::Clock;
use warden_store::Store;

/// The sessions of one store, stamped by one clock.
#[derive(Debug)]
pub(crate) struct StoredSessions {
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
}

impl StoredSessions {
    pub(crate) fn new(store: Arc<Store>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }
}

#[async_trait::async_trait]
impl SessionStore for StoredSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(session) = self.store.mcp_session(session_id).await? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_str(&session.state)?))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let state = serde_json::to_string(state)?;
        self.store
            .put_mcp_session_state(session_id, &state, self.clock.now())
            .await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.store.delete_mcp_session(session_id).await?;
        Ok(())
    }
}
