//! The PostgreSQL store.

pub(crate) mod backend;
