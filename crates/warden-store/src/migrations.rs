//! Versioned migrations (STORE-2): each backend has its own directory of SQL files, embedded
//! in the binary. A database whose schema is newer than the binary is refused.

use sqlx::migrate::Migrator;

use crate::error::StoreError;

/// Refuses a database migrated by a newer binary.
pub(crate) fn check_not_newer(migrator: &Migrator, applied: Option<i64>) -> Result<(), StoreError> {
    let known = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    match applied {
        Some(found) if found > known => Err(StoreError::SchemaTooNew { found, known }),
        _ => Ok(()),
    }
}
