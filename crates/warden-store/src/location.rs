//! Where the store lives, and how to print it.

use std::path::PathBuf;

/// The file name of the SQLite database inside a data directory.
pub const SQLITE_FILE: &str = "warden.db";

/// Where the store lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A data directory holding an SQLite database (created if missing).
    DataDir(PathBuf),
    /// A database URL: `postgres://…` or `sqlite://…`.
    Url(String),
}

impl Location {
    /// A description safe to print (no password).
    pub fn display(&self) -> String {
        match self {
            Location::DataDir(p) => p.join(SQLITE_FILE).display().to_string(),
            Location::Url(u) => redact_url(u),
        }
    }
}

/// `url` without its credentials.
pub(crate) fn redact_url(url: &str) -> String {
    warden_core::url_credentials::redact(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_printed_without_passwords() {
        assert_eq!(
            redact_url("postgres://u:secret@h:5432/db"),
            "postgres://***@h:5432/db"
        );
        assert_eq!(redact_url("postgres://h/db"), "postgres://h/db");
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://***@h/db");
    }
}
