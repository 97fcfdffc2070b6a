//! The store's sign-in operations ([`Store::insert_sign_in`] and the rest).

use std::collections::HashMap;

use warden_core::time::Millis;

use super::sql::SignInRow;
use super::{SignIn, SignInNote};
use crate::Store;
use crate::error::StoreError;

impl Store {
    /// Stores a new sign-in.
    pub async fn insert_sign_in(&self, sign_in: &SignIn) -> Result<(), StoreError> {
        self.backend.insert_sign_in(sign_in).await
    }

    /// The sign-in whose id hashes to `id_hash`; `None` when there is none.
    pub async fn sign_in(&self, id_hash: &str) -> Result<Option<SignIn>, StoreError> {
        Ok(self
            .backend
            .sign_in_row(id_hash)
            .await?
            .map(SignInRow::into_sign_in))
    }

    /// Notes that a sign-in was used at `now`, when it was last noted before `older_than`
    /// (so that a busy sign-in is written at most once a minute, say).
    pub async fn touch_sign_in(
        &self,
        id_hash: &str,
        now: Millis,
        older_than: Millis,
    ) -> Result<(), StoreError> {
        self.backend
            .touch_sign_in(id_hash, now.0, older_than.0)
            .await
    }

    /// Sets one of a sign-in's notes. False when there is no such sign-in.
    pub async fn set_sign_in_note(
        &self,
        id_hash: &str,
        note: SignInNote,
        value: &str,
    ) -> Result<bool, StoreError> {
        self.backend.set_sign_in_note(id_hash, note, value).await
    }

    /// Clears one of a sign-in's notes if it still holds `value`: true for exactly one of any
    /// number of requests, on any replica, that read the same value (it is shown once).
    pub async fn take_sign_in_note(
        &self,
        id_hash: &str,
        note: SignInNote,
        value: &str,
    ) -> Result<bool, StoreError> {
        self.backend.clear_sign_in_note(id_hash, note, value).await
    }

    /// Deletes a sign-in. False when there was none.
    pub async fn delete_sign_in(&self, id_hash: &str) -> Result<bool, StoreError> {
        self.backend.delete_sign_in(id_hash).await
    }

    /// How many sign-ins each credential has that have not ended, were opened after
    /// `opened_since` and used after `seen_since` (credentials with none are left out).
    pub async fn count_sign_ins(
        &self,
        opened_since: Millis,
        seen_since: Millis,
    ) -> Result<HashMap<String, u64>, StoreError> {
        Ok(self
            .backend
            .count_sign_ins(opened_since.0, seen_since.0)
            .await?
            .into_iter()
            .map(|(credential, n)| (credential, u64::try_from(n).unwrap_or(0)))
            .collect())
    }

    /// Deletes the sign-ins opened before `opened_before` or unused since `seen_before`; how
    /// many.
    pub async fn expire_sign_ins(
        &self,
        opened_before: Millis,
        seen_before: Millis,
    ) -> Result<u64, StoreError> {
        self.backend
            .expire_sign_ins(opened_before.0, seen_before.0)
            .await
    }
}
