//! Writing the trail to files (AUD-5, AUD-6): an export to any writer, and an archive to a new
//! file — or a new file in a directory — that is written, checked and on disk before the
//! store's cut is set. `warden audit export`, `warden audit archive` and `warden serve
//! --retention` all write through here.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use warden_core::audit::ChainVerifier;
use warden_core::audit::checkpoint::Checkpoint;
use warden_core::audit::export::{self, Format};
use warden_core::time::Millis;
use warden_store::{AuditKey, StoreError};

use crate::audit::SignedExport;
use crate::audit_archive::{self, Archived};
use crate::{Caller, Control, Refusal};

/// Why a file of the trail was not written, or an archive not made.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The service refused (a missing capability, nothing to archive, the store failed).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// Writing or checking the file failed; for an archive, nothing was archived.
    #[error("{0}")]
    Failed(String),
}

impl From<StoreError> for FileError {
    fn from(e: StoreError) -> Self {
        Self::Refused(Refusal::Store(e))
    }
}

/// Writes `signed` in `format` to `out`: the start's checkpoint, the records, the end's. How
/// many records. `check`: refuse, naming the record, an export whose records do not chain from
/// its start to its end (an archive, which removes them from the store next).
pub async fn write(
    mut signed: SignedExport,
    format: Format,
    out: impl Write,
    check: bool,
) -> Result<u64, FileError> {
    let failed = |e: std::io::Error| FileError::Failed(format!("cannot write: {e}"));
    let mut out = std::io::BufWriter::new(out);
    let mut chain = match &signed.start {
        Some(start) => ChainVerifier::starting_at(start.seq + 1, &start.hash),
        None => ChainVerifier::default(),
    };
    if let Some(start) = &signed.start {
        writeln!(out, "{}", export::checkpoint_line(start)).map_err(failed)?;
    }
    let mut written = 0_u64;
    let mut last_hash = None;
    while let Some(chunk) = signed.records.next_chunk().await {
        for record in chunk? {
            if check {
                chain.push(&record).map_err(|b| {
                    FileError::Failed(format!(
                        "{b}: the store's chain is broken there; nothing was archived"
                    ))
                })?;
                last_hash = Some(record.hash.clone());
            }
            writeln!(out, "{}", export::record_line(&record, format)).map_err(failed)?;
            written += 1;
        }
    }
    if check && last_hash.as_deref() != Some(signed.end.hash.as_str()) {
        return Err(FileError::Failed(format!(
            "the records read end before seq {}, which was signed: the store changed; nothing was archived",
            signed.end.seq
        )));
    }
    writeln!(out, "{}", export::checkpoint_line(&signed.end)).map_err(failed)?;
    out.flush().map_err(failed)?;
    Ok(written)
}

/// Where an archive goes.
#[derive(Clone, Debug)]
pub enum Destination {
    /// This new file.
    File(PathBuf),
    /// A new file in this directory, named after the records it holds
    /// ([`file_name`]).
    Directory(PathBuf),
}

/// The name of the archive of the records `first..=through` in a directory: zero-padded, so
/// that a directory's listing is in the trail's order.
pub fn file_name(first: i64, through: i64) -> String {
    format!("audit-{first:012}-{through:012}.jsonl")
}

/// An archive made.
#[derive(Clone, Debug)]
pub struct Archive {
    /// The file it was written to.
    pub file: PathBuf,
    /// The records it holds.
    pub records: u64,
    /// The checkpoint of its last record (its key is the audit key's public half).
    pub end: Checkpoint,
    /// What the store kept and removed.
    pub archived: Archived,
}

/// `warden audit archive` and scheduled retention (AUD-6): writes the records before `before`
/// as an export signed with `key` at both ends to a new file at `to` (readable by its owner
/// only), checks that they chain from start to end, syncs the file and its directory — then,
/// and only then, cuts the store there ([`audit_archive::set_cut`]). Until the cut, a failure
/// removes what was written and leaves the store unchanged; from the cut on the file is kept
/// whatever happens, and what fails after it the next archive finishes.
pub async fn archive(
    control: &Control,
    caller: &Caller,
    before: Millis,
    key: &AuditKey,
    to: &Destination,
) -> Result<Archive, FileError> {
    let signed = audit_archive::plan(control, caller, before, key).await?;
    let end = signed.end.clone();
    let (path, partial) = match to {
        Destination::File(path) => (path.clone(), None),
        Destination::Directory(dir) => {
            remove_stale_partials(dir);
            let first = signed.start.as_ref().map_or(1, |s| s.seq + 1);
            let name = file_name(first, end.seq);
            // Written under a name of its own first (no other archive writes it), and named
            // only once complete: a crash never leaves a file that looks like an archive.
            let partial = format!(".{name}.{:016x}{PARTIAL}", random());
            (dir.join(&name), Some(dir.join(partial)))
        }
    };
    let written_at = partial.as_ref().unwrap_or(&path);
    let file = new_file(written_at).map_err(|e| {
        FileError::Failed(format!(
            "cannot write a new archive at {}: {e}",
            written_at.display()
        ))
    })?;
    let removing = |e: FileError| {
        // What was written of an archive that will not be cut is no archive.
        let _ = std::fs::remove_file(written_at);
        e
    };
    let failed = |e: std::io::Error| {
        FileError::Failed(format!(
            "cannot write the archive at {}: {e}; nothing was archived",
            path.display()
        ))
    };
    let kept = file.try_clone().map_err(failed).map_err(removing)?;
    let records = write(signed, Format::Jsonl, file, true)
        .await
        .map_err(removing)?;
    kept.sync_all().map_err(failed).map_err(removing)?;
    if let Some(partial) = &partial {
        name(partial, &path).map_err(failed).map_err(removing)?;
    }
    let removing = |e: FileError| {
        let _ = std::fs::remove_file(&path);
        e
    };
    // On disk under its name, and found there after a crash, before anything leaves the store.
    sync_dir(&path).map_err(failed).map_err(removing)?;
    let file = path.display().to_string();
    match audit_archive::set_cut(control, caller, key, &end, records, &file).await {
        Ok(()) => {}
        // Refused before the store changed (archived already, by another archive).
        Err(e @ (Refusal::Store(StoreError::Conflict(_)) | Refusal::Missing { .. })) => {
            return Err(removing(e.into()));
        }
        // Whether the cut took is unknown: the file stays, so that its records are somewhere.
        Err(e) => {
            return Err(FileError::Failed(format!(
                "{file} was written, then the store's cut could not be set: {e}; the file is kept (the store may hold its records still, or have been cut at seq {})",
                end.seq
            )));
        }
    }
    let archived = audit_archive::after_cut(control, key, &end)
        .await
        .map_err(|e| {
            FileError::Failed(format!(
                "the store was cut through seq {} and {file} holds those records; then: {e}; the next archive removes what is left",
                end.seq
            ))
        })?;
    Ok(Archive {
        file: path,
        records,
        end,
        archived,
    })
}

/// How the name of a file an archive is being written to ends.
const PARTIAL: &str = ".partial";

/// How old a `.partial` file must be before an archive in its directory removes it: one that
/// a crash left, not one another archive is writing.
const STALE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes the `.partial` files of archives that stopped (a crash) in `dir`.
fn remove_stale_partials(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE);
        if name.starts_with(".audit-") && name.ends_with(PARTIAL) && stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A new file at `path`, never one that exists (nor a link's target), readable by its owner
/// only: an archive is as sensitive as the trail.
fn new_file(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Gives the complete file at `partial` the name `path`, only if no file has it.
fn name(partial: &Path, path: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(partial, path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(e),
        // A file system without hard links: a rename, after looking that the name is free.
        Err(_) if !path.exists() => std::fs::rename(partial, path)?,
        Err(e) => return Err(e),
    }
    let _ = std::fs::remove_file(partial);
    Ok(())
}

/// A random number, for a name nobody else picks.
fn random() -> u64 {
    let mut bytes = [0_u8; 8];
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}

/// Syncs the directory that names `path`.
fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}
