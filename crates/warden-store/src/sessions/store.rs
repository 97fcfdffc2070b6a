//! The store's session operations ([`Store::mcp_session`] and the rest).

use warden_core::time::Millis;

use super::McpSession;
use super::sql::SessionRow;
use crate::Store;
use crate::error::StoreError;

impl Store {
    /// Stores the transport's state of session `id` (a new row, or the state of the row its
    /// owner made).
    pub async fn put_mcp_session_state(
        &self,
        id: &str,
        state: &str,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.backend.put_session_state(id, state, now.0).await
    }

    /// Records who opened session `id`. False, and nothing changed, when it has an owner
    /// already.
    pub async fn put_mcp_session_owner(
        &self,
        id: &str,
        credential: &str,
        agent: Option<&str>,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.backend
            .put_session_owner(id, credential, agent, now.0)
            .await
    }

    /// Session `id`, when it exists and is complete (owned, with its state).
    pub async fn mcp_session(&self, id: &str) -> Result<Option<McpSession>, StoreError> {
        Ok(self
            .backend
            .session_row(id)
            .await?
            .and_then(SessionRow::into_session))
    }

    /// Notes that session `id` was used at `now`. False when there is no such session (it
    /// ended, or expired).
    pub async fn touch_mcp_session(&self, id: &str, now: Millis) -> Result<bool, StoreError> {
        self.backend.touch_session(id, now.0).await
    }

    /// Ends session `id` for every replica. False when there was none.
    pub async fn delete_mcp_session(&self, id: &str) -> Result<bool, StoreError> {
        self.backend.delete_session(id).await
    }

    /// Deletes the sessions unseen since `unseen_since`; how many.
    pub async fn expire_mcp_sessions(&self, unseen_since: Millis) -> Result<u64, StoreError> {
        self.backend.expire_sessions(unseen_since.0).await
    }
}
