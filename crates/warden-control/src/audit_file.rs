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
/// as an export signed with `key` at both ends to a new file at `to`, checks that they chain
/// from start to end, syncs the file and its directory — then, and only then, cuts the store
/// there ([`audit_archive::cut`]). When anything fails before the cut, or the cut is refused
/// (another archive of these records was cut first), the file is removed and the store is
/// unchanged.
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
            let first = signed.start.as_ref().map_or(1, |s| s.seq + 1);
            let name = file_name(first, end.seq);
            // Written under a name of its own first: what a crash leaves is written over by
            // the next archive, never taken for one.
            (dir.join(&name), Some(dir.join(format!(".{name}.partial"))))
        }
    };
    let written_at = partial.as_ref().unwrap_or(&path);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(partial.is_none())
        .create(true)
        .truncate(true)
        .open(written_at)
        .map_err(|e| {
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
    let kept = file
        .try_clone()
        .map_err(|e| FileError::Failed(format!("cannot write {}: {e}", path.display())))
        .map_err(removing)?;
    let records = write(signed, Format::Jsonl, file, true)
        .await
        .map_err(removing)?;
    let failed = |e: std::io::Error| {
        FileError::Failed(format!(
            "cannot write the archive at {}: {e}; nothing was archived",
            path.display()
        ))
    };
    kept.sync_all().map_err(failed).map_err(removing)?;
    if let Some(partial) = &partial {
        // Named only if the name is free: an archive is never written over.
        std::fs::hard_link(partial, &path)
            .map_err(failed)
            .map_err(removing)?;
        let _ = std::fs::remove_file(partial);
    }
    let removing = |e: FileError| {
        let _ = std::fs::remove_file(&path);
        e
    };
    // On disk under its name, and found there after a crash, before anything leaves the store.
    sync_dir(&path).map_err(failed).map_err(removing)?;
    let archived = match audit_archive::cut(
        control,
        caller,
        key,
        &end,
        records,
        &path.display().to_string(),
    )
    .await
    {
        Ok(archived) => archived,
        // Once the store's cut is this archive's end, the file is all that holds its records.
        Err(e) if cut_at(control, &end).await => return Err(e.into()),
        Err(e) => return Err(removing(e.into())),
    };
    Ok(Archive {
        file: path,
        records,
        end,
        archived,
    })
}

/// Whether the store's cut is at `end` — or cannot be read, so that it may be.
async fn cut_at(control: &Control, end: &Checkpoint) -> bool {
    match control.store().audit_cut().await {
        Ok(cut) => cut.is_some_and(|c| c.seq == end.seq && c.hash == end.hash),
        Err(_) => true,
    }
}

/// Syncs the directory that names `path`.
fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}
