//! The sessions' rows and their sqlx operations, the same SQL on both backends.

use warden_core::time::Millis;

use super::McpSession;

/// A row of `mcp_sessions`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct SessionRow {
    id: String,
    credential: Option<String>,
    agent: Option<String>,
    state: Option<String>,
    created_at: i64,
    seen_at: i64,
}

impl SessionRow {
    /// The session, when it is complete: owned and with its state.
    pub(crate) fn into_session(self) -> Option<McpSession> {
        Some(McpSession {
            id: self.id,
            credential: self.credential?,
            agent: self.agent,
            state: self.state?,
            created_at: Millis(self.created_at),
            seen_at: Millis(self.seen_at),
        })
    }
}

/// The sessions' sqlx operations, the same SQL on both backends, expanded in each backend's
/// `impl` block.
macro_rules! session_operations {
    ($db:ty) => {
        pub(crate) async fn put_session_state(
            &self,
            id: &str,
            state: &str,
            now: i64,
        ) -> Result<(), $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO mcp_sessions (id, state, created_at, seen_at) VALUES ($1, $2, $3, $3) \
                 ON CONFLICT (id) DO UPDATE SET state = excluded.state",
            )
            .bind(id)
            .bind(state)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        }

        pub(crate) async fn put_session_owner(
            &self,
            id: &str,
            credential: &str,
            agent: Option<&str>,
            now: i64,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            // INVARIANT: the owner is set once; a second owner for an id is refused (false).
            let done = sqlx::query(
                "INSERT INTO mcp_sessions (id, credential, agent, created_at, seen_at) VALUES ($1, $2, $3, $4, $4) \
                 ON CONFLICT (id) DO UPDATE SET credential = excluded.credential, agent = excluded.agent \
                 WHERE mcp_sessions.credential IS NULL",
            )
            .bind(id)
            .bind(credential)
            .bind(agent)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }

        pub(crate) async fn session_row(
            &self,
            id: &str,
        ) -> Result<Option<$crate::sessions::sql::SessionRow>, $crate::error::StoreError> {
            Ok(sqlx::query_as(
                "SELECT id, credential, agent, state, created_at, seen_at FROM mcp_sessions WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
        }

        pub(crate) async fn touch_session(
            &self,
            id: &str,
            now: i64,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            // One statement: a row that exists is matched (and so counted) whether or not its
            // time moves forward.
            let done = sqlx::query(
                "UPDATE mcp_sessions SET seen_at = CASE WHEN seen_at < $2 THEN $2 ELSE seen_at END WHERE id = $1",
            )
            .bind(id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }

        pub(crate) async fn delete_session(
            &self,
            id: &str,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let done = sqlx::query("DELETE FROM mcp_sessions WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }

        pub(crate) async fn expire_sessions(
            &self,
            unseen_since: i64,
        ) -> Result<u64, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let done = sqlx::query("DELETE FROM mcp_sessions WHERE seen_at < $1")
                .bind(unseen_since)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(done.rows_affected())
        }
    };
}

pub(crate) use session_operations;
