//! The embedded store's database file, checked rather than assumed (REL-2, RUN-4).
//!
//! SQLite keeps writing to a database file that was deleted or renamed under it: its open
//! handle still reaches the old inode, every commit succeeds, and the records live in a file
//! that is no longer the store — gone at the next start. So the file's identity (device and
//! inode) is taken when the store opens, and compared with what its path names now before an
//! append is acknowledged and whenever the gateway polls the store. Once the path names
//! another file, or none, the store is *lost* for the rest of the process: every append fails
//! with [`StoreError::Unreachable`] (a governed call is refused with `UNAVAILABLE` before any
//! upstream request) and the failure is logged once. Only a restart, which opens whatever the
//! path names then, takes it back.
//!
//! The check costs one `stat` of the database path per acknowledged append, after the append;
//! before it, only whether the store was found lost already (no system call).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::StoreError;

/// The identity of the database file the store opened, and whether it is lost.
#[derive(Debug)]
pub(crate) struct DatabaseFile {
    path: PathBuf,
    identity: Option<(u64, u64)>,
    lost: OnceLock<String>,
}

impl DatabaseFile {
    /// Takes the identity of the (open) database file at `path`.
    pub(crate) fn capture(path: &Path) -> Result<Self, StoreError> {
        let identity = identity(path).map_err(|e| {
            StoreError::Unreachable(format!(
                "cannot read the store's database file `{}`: {e}",
                path.display()
            ))
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            identity,
            lost: OnceLock::new(),
        })
    }

    /// `Err` once the store was found lost; no system call.
    pub(crate) fn check_lost(&self) -> Result<(), StoreError> {
        match self.lost.get() {
            Some(reason) => Err(StoreError::Unreachable(reason.clone())),
            None => Ok(()),
        }
    }

    /// `Ok` while the path still names the file the store opened.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        if let Some(reason) = self.lost.get() {
            return Err(StoreError::Unreachable(reason.clone()));
        }
        let now = identity(&self.path);
        let problem = match now {
            Ok(now) if now == self.identity => return Ok(()),
            Ok(Some(_)) => "was replaced by another file",
            Ok(None) => "is not a regular file any more",
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "was removed",
            Err(_) => "cannot be read",
        };
        let reason = format!(
            "the store's database file `{}` {problem} while Warden was running; governed calls are \
             refused until Warden is restarted on a store it can keep",
            self.path.display()
        );
        if self.lost.set(reason.clone()).is_ok() {
            tracing::error!("{reason}");
        }
        Err(StoreError::Unreachable(reason))
    }
}

/// `(device, inode)` of the regular file at `path`; `None` for anything else (or off Unix,
/// where the check compares nothing but existence).
fn identity(path: &Path) -> std::io::Result<Option<(u64, u64)>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Ok(None);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        Ok(Some((meta.dev(), meta.ino())))
    }
    #[cfg(not(unix))]
    {
        Ok(Some((0, 0)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn a_removed_or_replaced_file_is_lost_for_good() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("warden.db");
        std::fs::write(&path, b"x").unwrap();
        let file = DatabaseFile::capture(&path).unwrap();
        assert!(file.check().is_ok());
        std::fs::remove_file(&path).unwrap();
        let removed = file.check().unwrap_err().to_string();
        assert!(
            removed.contains("was removed while Warden was running"),
            "{removed}"
        );
        // A new file at the path is another store: still lost.
        std::fs::write(&path, b"y").unwrap();
        assert_eq!(file.check().unwrap_err().to_string(), removed);
    }

    #[test]
    fn a_file_swapped_in_by_rename_is_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("warden.db");
        std::fs::write(&path, b"x").unwrap();
        let file = DatabaseFile::capture(&path).unwrap();
        let other = dir.path().join("other.db");
        std::fs::write(&other, b"y").unwrap();
        std::fs::rename(&other, &path).unwrap();
        let err = file.check().unwrap_err().to_string();
        assert!(err.contains("was replaced by another file"), "{err}");
    }
}
