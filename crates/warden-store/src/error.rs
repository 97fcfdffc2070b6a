//! Store errors. Messages are for operators: they name what failed and what to do, and never
//! contain secrets (database passwords are redacted from URLs).

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or a connection failed.
    #[error("cannot reach the store: {0}")]
    Unreachable(String),
    /// The database's schema is newer than this binary (STORE-2).
    #[error(
        "the store's schema is at version {found}, newer than this warden knows (version {known}); run a newer warden"
    )]
    SchemaTooNew {
        /// Newest migration applied to the database.
        found: i64,
        /// Newest migration this binary knows.
        known: i64,
    },
    /// A migration failed.
    #[error("migrating the store failed: {0}")]
    Migration(String),
    /// A concurrent change got in the way; retrying is safe.
    #[error("{0}")]
    Conflict(String),
    /// Stored data cannot be read back.
    #[error("the store holds unreadable data: {0}")]
    Corrupt(String),
    /// No store where one was expected (a command that does not create one).
    #[error("{0}")]
    Missing(String),
    /// Bad input to the store (an unsupported URL, …).
    #[error("{0}")]
    Invalid(String),
    /// Any other database error.
    #[error("database error: {0}")]
    Database(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => StoreError::Unreachable(e.to_string()),
            other => StoreError::Database(other.to_string()),
        }
    }
}
