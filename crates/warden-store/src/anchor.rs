//! The audit chain's anchor outside the database (AUD-2): the key that signs checkpoints of
//! the chain's head, and the file every checkpoint is appended to.
//!
//! - **The key**: 32 random bytes, as hex, in a file only its owner may read (mode 0600),
//!   created on first use. By default `audit.key` in the data directory; `warden serve
//!   --audit-key FILE` (`WARDEN_AUDIT_KEY`) names another, which a store on PostgreSQL needs.
//!   The database never holds it: whoever can write the database cannot sign.
//! - **The checkpoint file**: `audit-checkpoints.jsonl` beside the key, one JSON checkpoint per
//!   line, appended and synced. The same checkpoints are in the store (`audit_checkpoints`), so
//!   `warden audit verify` finds the latest one from the database too — and the file, or an
//!   operator's copy of `warden audit checkpoint export`, shows a database whose checkpoints
//!   were cut along with its chain. Several stores may share a key and its file (every
//!   PostgreSQL store served or verified from one machine does, by default): each checkpoint
//!   names its store, and a store reads only its own.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use warden_core::audit::checkpoint::{self, Checkpoint};
use warden_core::time::Millis;

use crate::error::StoreError;

/// The key's file name in a data directory.
pub const KEY_FILE: &str = "audit.key";
/// The checkpoint file's name, beside the key.
pub const CHECKPOINT_FILE: &str = "audit-checkpoints.jsonl";

/// The key that signs checkpoints.
pub struct AuditKey {
    secret: [u8; 32],
    path: PathBuf,
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditKey")
            .field("path", &self.path)
            .field("public", &self.public_key())
            .finish_non_exhaustive()
    }
}

impl AuditKey {
    /// The key at `path`, created (0600) if there is none.
    pub fn load_or_create(path: &Path) -> Result<Self, StoreError> {
        match Self::load(path) {
            Err(StoreError::Missing(_)) => {}
            other => return other,
        }
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| {
            StoreError::Unreachable(format!("no randomness for the audit key: {e}"))
        })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io_error(dir, &e))?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let mut file = options.open(path).map_err(|e| io_error(path, &e))?;
        file.write_all(format!("{}\n", hex::encode(secret)).as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| io_error(path, &e))?;
        tracing::info!(key = %path.display(), "created the audit key that signs checkpoints; keep it, and it only, outside the database");
        Ok(Self {
            secret,
            path: path.to_path_buf(),
        })
    }

    /// The key at `path`; [`StoreError::Missing`] when there is none.
    pub fn load(path: &Path) -> Result<Self, StoreError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Missing(format!(
                    "no audit key at {}",
                    path.display()
                )));
            }
            Err(e) => return Err(io_error(path, &e)),
        };
        let secret: [u8; 32] = hex::decode(text.trim())
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| {
                StoreError::Invalid(format!(
                    "{} is not an audit key (64 hexadecimal digits)",
                    path.display()
                ))
            })?;
        Ok(Self {
            secret,
            path: path.to_path_buf(),
        })
    }

    /// The public key (hex), which verifies this key's checkpoints.
    pub fn public_key(&self) -> String {
        checkpoint::public_key(&self.secret)
    }

    /// Signs the head `(seq, hash)` of the chain of `store` at `at`.
    pub fn sign(&self, store: &str, seq: i64, hash: &str, at: Millis) -> Checkpoint {
        checkpoint::sign(&self.secret, store, seq, hash, at)
    }

    /// Signs the archive cut `(seq, hash)` of the chain of `store` at `at` (AUD-6).
    pub fn sign_cut(&self, store: &str, seq: i64, hash: &str, at: Millis) -> Checkpoint {
        checkpoint::sign_cut(&self.secret, store, seq, hash, at)
    }

    /// The checkpoint file beside the key.
    pub fn checkpoint_file(&self) -> PathBuf {
        self.path.parent().map_or_else(
            || PathBuf::from(CHECKPOINT_FILE),
            |d| d.join(CHECKPOINT_FILE),
        )
    }
}

/// Appends `c` to the checkpoint file at `path`, and syncs it.
pub(crate) fn append_checkpoint(path: &Path, c: &Checkpoint) -> Result<(), StoreError> {
    let line = serde_json::to_string(c).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| io_error(path, &e))?;
    file.write_all(format!("{line}\n").as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(|e| io_error(path, &e))
}

/// The checkpoints of a checkpoint file (or of an exported anchor); none if it does not exist.
pub fn read_checkpoints(path: &Path) -> Result<Vec<Checkpoint>, StoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(path, &e)),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            serde_json::from_str(l).map_err(|e| {
                StoreError::Invalid(format!(
                    "{} line {}: not a checkpoint: {e}",
                    path.display(),
                    n + 1
                ))
            })
        })
        .collect()
}

fn io_error(path: &Path, e: &std::io::Error) -> StoreError {
    StoreError::Unreachable(format!("{}: {e}", path.display()))
}
