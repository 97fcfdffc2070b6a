//! The PostgreSQL store, for several replicas sharing one database: the sqlx pool and what it
//! shares with SQLite (`backend.rs`), and the one audit sink (`sink.rs`: a writer task's group
//! commit; `chain.rs`: the chain insert and the admin changes that append in its transaction).

mod backend;
mod chain;
mod sink;

pub(crate) use backend::PgBackend;
pub(crate) use sink::PgSink;

use crate::error::StoreError;

/// Whether the database at `url` holds Warden's tables (its migrations table), without
/// changing anything.
pub(crate) async fn has_schema(url: &str) -> Result<bool, StoreError> {
    let backend = PgBackend::open(url).await?;
    let found: Option<String> = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
        .fetch_one(&backend.pool)
        .await?;
    backend.pool.close().await;
    Ok(found.is_some())
}

/// Opens and migrates the database at `url`, and starts its audit sink.
pub(crate) async fn open(url: &str) -> Result<(PgBackend, PgSink), StoreError> {
    let backend = PgBackend::open(url).await?;
    backend.migrate().await?;
    let sink = PgSink::start(backend.clone());
    Ok((backend, sink))
}
