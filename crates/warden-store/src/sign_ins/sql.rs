//! The sign-ins' rows and their sqlx operations, the same SQL on both backends.

use warden_core::time::Millis;

use super::SignIn;

/// A row of `console_sign_ins`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct SignInRow {
    id_hash: String,
    credential: String,
    csrf: String,
    opened_at: i64,
    seen_at: i64,
    flash: Option<String>,
    new_token: Option<String>,
    ended: Option<String>,
}

impl SignInRow {
    pub(crate) fn into_sign_in(self) -> SignIn {
        SignIn {
            id_hash: self.id_hash,
            credential: self.credential,
            csrf: self.csrf,
            opened_at: Millis(self.opened_at),
            seen_at: Millis(self.seen_at),
            flash: self.flash,
            new_token: self.new_token,
            ended: self.ended,
        }
    }
}

/// The sign-ins' sqlx operations, expanded in each backend's `impl` block.
macro_rules! sign_in_operations {
    ($db:ty) => {
        pub(crate) async fn insert_sign_in(
            &self,
            s: &$crate::sign_ins::SignIn,
        ) -> Result<(), $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO console_sign_ins (id_hash, credential, csrf, opened_at, seen_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&s.id_hash)
            .bind(&s.credential)
            .bind(&s.csrf)
            .bind(s.opened_at.0)
            .bind(s.seen_at.0)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        }

        pub(crate) async fn sign_in_row(
            &self,
            id_hash: &str,
        ) -> Result<Option<$crate::sign_ins::sql::SignInRow>, $crate::error::StoreError> {
            Ok(sqlx::query_as(
                "SELECT id_hash, credential, csrf, opened_at, seen_at, flash, new_token, ended \
                 FROM console_sign_ins WHERE id_hash = $1",
            )
            .bind(id_hash)
            .fetch_optional(&self.pool)
            .await?)
        }

        pub(crate) async fn touch_sign_in(
            &self,
            id_hash: &str,
            now: i64,
            older_than: i64,
        ) -> Result<(), $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            sqlx::query(
                "UPDATE console_sign_ins SET seen_at = $2 WHERE id_hash = $1 AND seen_at < $3",
            )
            .bind(id_hash)
            .bind(now)
            .bind(older_than)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        }

        pub(crate) async fn set_sign_in_note(
            &self,
            id_hash: &str,
            note: $crate::sign_ins::SignInNote,
            value: &str,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            // The column is one of a closed set (`SignInNote::column`), never text from outside.
            let statement = format!(
                "UPDATE console_sign_ins SET {} = $2 WHERE id_hash = $1",
                note.column()
            );
            let done = sqlx::query(sqlx::AssertSqlSafe(statement))
                .bind(id_hash)
                .bind(value)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }

        pub(crate) async fn clear_sign_in_note(
            &self,
            id_hash: &str,
            note: $crate::sign_ins::SignInNote,
            value: &str,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let column = note.column();
            let statement = format!(
                "UPDATE console_sign_ins SET {column} = NULL WHERE id_hash = $1 AND {column} = $2"
            );
            let done = sqlx::query(sqlx::AssertSqlSafe(statement))
                .bind(id_hash)
                .bind(value)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }

        pub(crate) async fn delete_sign_in(
            &self,
            id_hash: &str,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let done = sqlx::query("DELETE FROM console_sign_ins WHERE id_hash = $1")
                .bind(id_hash)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }

        pub(crate) async fn count_sign_ins(
            &self,
            opened_since: i64,
            seen_since: i64,
        ) -> Result<Vec<(String, i64)>, $crate::error::StoreError> {
            Ok(sqlx::query_as(
                "SELECT credential, COUNT(*) FROM console_sign_ins WHERE ended IS NULL \
                 AND opened_at > $1 AND seen_at > $2 GROUP BY credential",
            )
            .bind(opened_since)
            .bind(seen_since)
            .fetch_all(&self.pool)
            .await?)
        }

        pub(crate) async fn expire_sign_ins(
            &self,
            opened_before: i64,
            seen_before: i64,
        ) -> Result<u64, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let done =
                sqlx::query("DELETE FROM console_sign_ins WHERE opened_at < $1 OR seen_at < $2")
                    .bind(opened_before)
                    .bind(seen_before)
                    .execute(&mut *tx)
                    .await?;
            tx.commit().await?;
            Ok(done.rows_affected())
        }
    };
}

pub(crate) use sign_in_operations;
