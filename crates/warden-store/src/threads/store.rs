//! The store's thread operations ([`Store::insert_thread`] and the rest). Each names the
//! owner: another principal's thread is `None` or `false`, as one that does not exist.

use warden_core::time::Millis;

use super::sql::{MessageRow, ThreadRow};
use super::{Thread, ThreadMessage};
use crate::Store;
use crate::error::StoreError;

impl Store {
    /// Stores a new thread, with no messages yet.
    pub async fn insert_thread(&self, thread: &Thread) -> Result<(), StoreError> {
        self.backend.insert_thread(thread).await
    }

    /// The thread `id` of `owner`; `None` when `owner` has none by that id.
    pub async fn thread(&self, id: &str, owner: &str) -> Result<Option<Thread>, StoreError> {
        Ok(self
            .backend
            .thread_row(id, owner)
            .await?
            .map(ThreadRow::into_thread))
    }

    /// The newest `limit` threads of `owner` (of `agent` when given), the last used first.
    pub async fn threads(
        &self,
        owner: &str,
        agent: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Thread>, StoreError> {
        Ok(self
            .backend
            .thread_rows(owner, agent, limit.clamp(1, 10_000))
            .await?
            .into_iter()
            .map(ThreadRow::into_thread)
            .collect())
    }

    /// The messages of the thread `id` of `owner`, in order (none when `owner` has no such
    /// thread).
    pub async fn thread_messages(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Vec<ThreadMessage>, StoreError> {
        self.backend
            .message_rows(id, owner)
            .await?
            .into_iter()
            .map(MessageRow::into_message)
            .collect()
    }

    /// Appends `messages` to the thread `id` of `owner` at `now`, numbered after its last
    /// (their given `seq` is ignored); their numbers, or `None` when `owner` has no such
    /// thread.
    pub async fn append_thread_messages(
        &self,
        id: &str,
        owner: &str,
        messages: &[ThreadMessage],
        now: Millis,
    ) -> Result<Option<Vec<i64>>, StoreError> {
        self.backend
            .append_thread_messages(id, owner, messages, now.0)
            .await
    }

    /// Claims the thread `id` of `owner` for one turn until `until`: false when `owner` has no
    /// such thread or another turn holds it past `now` (on any replica).
    pub async fn claim_thread(
        &self,
        id: &str,
        owner: &str,
        now: Millis,
        until: Millis,
    ) -> Result<bool, StoreError> {
        self.backend.claim_thread(id, owner, now.0, until.0).await
    }

    /// Ends a turn's claim of the thread `id` of `owner`.
    pub async fn release_thread(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.backend.release_thread(id, owner).await
    }

    /// Deletes the thread `id` of `owner` and its messages. False when `owner` has none by
    /// that id.
    pub async fn delete_thread(&self, id: &str, owner: &str) -> Result<bool, StoreError> {
        self.backend.delete_thread(id, owner).await
    }
}
