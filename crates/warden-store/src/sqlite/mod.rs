//! The embedded store (SQLite).

pub(crate) mod appender;
pub(crate) mod backend;
pub(crate) mod spool;
