//! The embedded store (SQLite): one database file, in WAL mode, under the data directory.
//!
//! Two drivers share the file. sqlx's pool (`backend.rs`) runs every read and the writes that
//! chain no audit record, with the SQL that PostgreSQL runs too (`crate::sql`). The one audit
//! sink (`sink.rs`) has a rusqlite connection of its own (`appender.rs`), and only its code
//! chains and inserts audit rows (`chain.rs`): the calls' records, the spool's batches and the
//! admin changes, whose record is appended in the change's own transaction.
//!
//! The call path appends one or two records per governed call, the hottest write Warden
//! makes, and that is why the sink does not go through sqlx. There an append went caller task
//! → writer task → sqlx's connection thread → writer task → caller, and its statement was
//! parsed every time: a third of the server's CPU at 64 clients, and at one client ~0.2 ms of
//! thread wake-ups around an 11 µs commit (docs/benchmarks.md). On its own connection a caller
//! commits on its own thread with cached prepared statements.
//!
//! A serving store (`Store::open_serving`) that owns the audit spool (`spool/`) makes a call's
//! records durable with one write to it and chains them in bulk off the call path; every other
//! store on the file (the CLI, a second server) commits them by group commit.

mod appender;
mod backend;
mod chain;
mod files;
mod sink;
mod spool;

use std::path::Path;
use std::time::Duration;

pub(crate) use backend::SqliteBackend;
pub(crate) use sink::SqliteSink;
pub(crate) use spool::insert_delay;
#[cfg(feature = "fuzz")]
pub(crate) use spool::read_as_replay;

use crate::error::StoreError;

/// Opens (creating it if needed) and migrates the database in data directory `dir`, and opens
/// its audit sink; `serving` is the spool's insert delay for a serving store.
pub(crate) async fn open_dir(
    dir: &Path,
    serving: Option<Duration>,
) -> Result<(SqliteBackend, SqliteSink), StoreError> {
    opened(SqliteBackend::open_dir(dir).await?, serving).await
}

/// [`open_dir`] for a database URL (`sqlite://PATH`); an in-memory database is refused.
pub(crate) async fn open_url(
    url: &str,
    serving: Option<Duration>,
) -> Result<(SqliteBackend, SqliteSink), StoreError> {
    opened(SqliteBackend::open_url(url).await?, serving).await
}

/// The database file a `sqlite:` URL names, if it is a valid URL.
pub(crate) fn url_file(url: &str) -> Option<std::path::PathBuf> {
    use std::str::FromStr as _;
    sqlx::sqlite::SqliteConnectOptions::from_str(url)
        .ok()
        .map(|o| o.get_filename().to_path_buf())
}

async fn opened(
    backend: SqliteBackend,
    serving: Option<Duration>,
) -> Result<(SqliteBackend, SqliteSink), StoreError> {
    backend.migrate().await?;
    let sink = SqliteSink::open(&backend.file, serving).await?;
    Ok((backend, sink))
}
