//! The threads' rows and their sqlx operations, the same SQL on both backends. Every statement
//! names the owner (RUN-7).

use warden_core::time::Millis;

use super::{MessageRole, Thread, ThreadMessage};
use crate::error::StoreError;

/// A row of `threads`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct ThreadRow {
    id: String,
    agent: String,
    owner: String,
    run_id: String,
    title: String,
    created_at: i64,
    updated_at: i64,
}

impl ThreadRow {
    pub(crate) fn into_thread(self) -> Thread {
        Thread {
            id: self.id,
            agent: self.agent,
            owner: self.owner,
            run_id: self.run_id,
            title: self.title,
            created_at: Millis(self.created_at),
            updated_at: Millis(self.updated_at),
        }
    }
}

/// A row of `thread_messages`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct MessageRow {
    seq: i64,
    role: String,
    content: String,
    tool_calls: Option<String>,
    tool_call_id: Option<String>,
    call_id: Option<String>,
    decision: Option<String>,
    approval_id: Option<String>,
    at: i64,
}

impl MessageRow {
    pub(crate) fn into_message(self) -> Result<ThreadMessage, StoreError> {
        let role = MessageRole::parse(&self.role).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "a thread message has the role `{}`, which this warden does not know",
                self.role
            ))
        })?;
        Ok(ThreadMessage {
            seq: self.seq,
            role,
            content: self.content,
            tool_calls: self.tool_calls,
            tool_call_id: self.tool_call_id,
            call_id: self.call_id,
            decision: self.decision,
            approval_id: self.approval_id,
            at: Millis(self.at),
        })
    }
}

/// The columns of `threads`, in [`ThreadRow`]'s order.
pub(crate) const THREAD_COLUMNS: &str = "id, agent, owner, run_id, title, created_at, updated_at";

/// The threads' sqlx operations, expanded in each backend's `impl` block.
macro_rules! thread_operations {
    ($db:ty) => {
        pub(crate) async fn insert_thread(
            &self,
            t: &$crate::threads::Thread,
        ) -> Result<(), $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO threads (id, agent, owner, run_id, title, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&t.id)
            .bind(&t.agent)
            .bind(&t.owner)
            .bind(&t.run_id)
            .bind(&t.title)
            .bind(t.created_at.0)
            .bind(t.updated_at.0)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        }

        pub(crate) async fn thread_row(
            &self,
            id: &str,
            owner: &str,
        ) -> Result<Option<$crate::threads::sql::ThreadRow>, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::threads::sql::THREAD_COLUMNS);
            qb.push(" FROM threads WHERE id = ")
                .push_bind(id.to_owned());
            qb.push(" AND owner = ").push_bind(owner.to_owned());
            Ok(qb.build_query_as().fetch_optional(&self.pool).await?)
        }

        pub(crate) async fn thread_rows(
            &self,
            owner: &str,
            agent: Option<&str>,
            limit: i64,
        ) -> Result<Vec<$crate::threads::sql::ThreadRow>, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::threads::sql::THREAD_COLUMNS);
            qb.push(" FROM threads WHERE owner = ")
                .push_bind(owner.to_owned());
            if let Some(agent) = agent {
                qb.push(" AND agent = ").push_bind(agent.to_owned());
            }
            qb.push(" ORDER BY updated_at DESC, id DESC LIMIT ")
                .push_bind(limit);
            Ok(qb.build_query_as().fetch_all(&self.pool).await?)
        }

        pub(crate) async fn message_rows(
            &self,
            id: &str,
            owner: &str,
        ) -> Result<Vec<$crate::threads::sql::MessageRow>, $crate::error::StoreError> {
            Ok(sqlx::query_as(
                "SELECT m.seq, m.role, m.content, m.tool_calls, m.tool_call_id, m.call_id, \
                 m.decision, m.approval_id, m.at FROM thread_messages m \
                 JOIN threads t ON t.id = m.thread_id \
                 WHERE m.thread_id = $1 AND t.owner = $2 ORDER BY m.seq",
            )
            .bind(id)
            .bind(owner)
            .fetch_all(&self.pool)
            .await?)
        }

        /// Appends `messages` to the thread `id` of `owner`, numbered after its last; their
        /// numbers, or `None` when the owner has no such thread.
        pub(crate) async fn append_thread_messages(
            &self,
            id: &str,
            owner: &str,
            messages: &[$crate::threads::ThreadMessage],
            now: i64,
        ) -> Result<Option<Vec<i64>>, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            // Claims the thread (and on PostgreSQL locks its row) before numbering.
            let touched =
                sqlx::query("UPDATE threads SET updated_at = $3 WHERE id = $1 AND owner = $2")
                    .bind(id)
                    .bind(owner)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
            if touched.rows_affected() != 1 {
                return Ok(None);
            }
            let last: Option<i64> =
                sqlx::query_scalar("SELECT MAX(seq) FROM thread_messages WHERE thread_id = $1")
                    .bind(id)
                    .fetch_one(&mut *tx)
                    .await?;
            let mut seqs = Vec::with_capacity(messages.len());
            let mut seq = last.unwrap_or(0);
            for m in messages {
                seq += 1;
                sqlx::query(
                    "INSERT INTO thread_messages (thread_id, seq, role, content, tool_calls, \
                     tool_call_id, call_id, decision, approval_id, at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .bind(id)
                .bind(seq)
                .bind(m.role.as_str())
                .bind(&m.content)
                .bind(&m.tool_calls)
                .bind(&m.tool_call_id)
                .bind(&m.call_id)
                .bind(&m.decision)
                .bind(&m.approval_id)
                .bind(m.at.0)
                .execute(&mut *tx)
                .await?;
                seqs.push(seq);
            }
            tx.commit().await?;
            Ok(Some(seqs))
        }

        /// Claims the thread `id` of `owner` for a turn until `until`, unless a turn holds it
        /// past `now`.
        pub(crate) async fn claim_thread(
            &self,
            id: &str,
            owner: &str,
            now: i64,
            until: i64,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let done = sqlx::query(
                "UPDATE threads SET turn_until = $4 WHERE id = $1 AND owner = $2 \
                 AND (turn_until IS NULL OR turn_until < $3)",
            )
            .bind(id)
            .bind(owner)
            .bind(now)
            .bind(until)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }

        /// Lets go of a turn's claim.
        pub(crate) async fn release_thread(
            &self,
            id: &str,
            owner: &str,
        ) -> Result<(), $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            sqlx::query("UPDATE threads SET turn_until = NULL WHERE id = $1 AND owner = $2")
                .bind(id)
                .bind(owner)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        }

        pub(crate) async fn delete_thread(
            &self,
            id: &str,
            owner: &str,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let done = sqlx::query("DELETE FROM threads WHERE id = $1 AND owner = $2")
                .bind(id)
                .bind(owner)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 1 {
                sqlx::query("DELETE FROM thread_messages WHERE thread_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }
    };
}

pub(crate) use thread_operations;
