//! `warden serve --retention AGE --retention-dir DIR` (AUD-6): at each time of its schedule
//! (cron, UTC; 03:00 every day by default) the server archives the audit records older than
//! `AGE` — counted from that time — into a new file in `DIR`, and they leave the store, exactly
//! as `warden audit archive` does (`warden_control::audit_file::archive`). A time missed while
//! no server ran is not made up: the next one archives everything older than its `AGE`.
//! Replicas sharing a store archive once per time (a claim in the store decides); should two
//! archives of the same records still meet, one cut wins and the other's file is removed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use warden_control::audit_file::{self, Archive, Destination, FileError};
use warden_control::{Caller, Control, Refusal};
use warden_core::cron::Schedule;
use warden_core::pipeline::ports::Clock;
use warden_core::time::Millis;
use warden_store::{AuditKey, Store};

use crate::cli::RetentionArgs;

/// Who archives, as the trail's `audit.archive` record names it.
const ACTOR: &str = "serve --retention";

/// How often the schedule is looked at.
const LOOK: Duration = Duration::from_secs(1);

/// A server's scheduled retention.
#[derive(Debug)]
pub(crate) struct Retention {
    age: Millis,
    directory: PathBuf,
    cron: String,
    schedule: Schedule,
    control: Control,
    /// The store `control` serves, for the claim of each scheduled time.
    store: Arc<Store>,
    key: Arc<AuditKey>,
}

/// The retention a server's flags ask for, checked before the store is opened.
#[derive(Debug)]
pub(crate) struct Plan {
    age: Millis,
    directory: PathBuf,
    cron: String,
    schedule: Schedule,
}

impl Retention {
    /// What `args` ask for (none without `--retention`), checked before anything else starts:
    /// the schedule, and a directory (created, readable by its owner only, when missing) that
    /// a file can be written to.
    pub(crate) fn check(args: &RetentionArgs) -> anyhow::Result<Option<Plan>> {
        let (Some(age), Some(directory)) = (args.retention, &args.retention_dir) else {
            return Ok(None);
        };
        let schedule = Schedule::parse(&args.retention_schedule)
            .map_err(|e| crate::common::usage(format!("`--retention-schedule`: {e}")))?;
        let probe = directory.join(format!(".audit-probe-{}", std::process::id()));
        create_private_dir(directory)
            .and_then(|()| std::fs::write(&probe, b""))
            .and_then(|()| std::fs::remove_file(&probe))
            .map_err(|e| {
                crate::common::usage(format!(
                    "`--retention-dir`: cannot write in {}: {e}",
                    directory.display()
                ))
            })?;
        Ok(Some(Plan {
            age: Millis(i64::try_from(age.as_millis()).unwrap_or(i64::MAX)),
            directory: directory.clone(),
            cron: args.retention_schedule.clone(),
            schedule,
        }))
    }

    /// Archives at each time of the schedule until `cancel`.
    pub(crate) async fn run_while(self, cancel: CancellationToken) {
        tracing::info!(
            directory = %self.directory.display(),
            schedule = %self.cron,
            "audit retention: records older than {} are archived on the schedule",
            age_text(self.age),
        );
        let mut next = self.next_after(self.control.now());
        let mut tick = tokio::time::interval(LOOK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                _ = tick.tick() => next = self.fire_due(next).await.0,
            }
        }
    }

    /// The schedule's first time after `t`.
    fn next_after(&self, t: Millis) -> Millis {
        self.schedule.next_after(t).unwrap_or(Millis(i64::MAX))
    }

    /// When the scheduled time `next` has come, the archive for it; the next scheduled time
    /// (after now: times missed meanwhile are not made up).
    async fn fire_due(&self, next: Millis) -> (Millis, Option<Archive>) {
        let now = self.control.now();
        if now < next {
            return (next, None);
        }
        (self.next_after(now), self.fire(next).await)
    }

    /// The archive of the records older than the age at the scheduled time `at`, unless
    /// another replica claimed that time or nothing is that old.
    async fn fire(&self, at: Millis) -> Option<Archive> {
        // A replica that cannot write its directory does not take the time from the others.
        if !self.directory.is_dir() {
            tracing::error!(directory = %self.directory.display(), "audit retention skipped: the directory is gone");
            return None;
        }
        let claim = format!("audit-retention:{}", self.cron);
        match self.store.claim_once(&claim, at).await {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => {
                tracing::error!(error = %e, "audit retention skipped: the store cannot be reached");
                return None;
            }
        }
        let before = Millis(at.0.saturating_sub(self.age.0));
        let caller = Caller::Operator(ACTOR.into());
        let to = Destination::Directory(self.directory.clone());
        match audit_file::archive(&self.control, &caller, before, &self.key, &to).await {
            Ok(archive) => {
                tracing::info!(
                    file = %archive.file.display(),
                    records = archive.records,
                    through = archive.archived.through,
                    removed = archive.archived.removed,
                    "audit retention: archived"
                );
                if let Some(why) = &archive.archived.not_shrunk {
                    tracing::warn!(%why, "audit retention: the store's files were not shrunk; the next archive tries again");
                }
                Some(archive)
            }
            Err(FileError::Refused(Refusal::Unprocessable { message, .. })) => {
                tracing::debug!(%message, "audit retention: nothing to archive");
                None
            }
            Err(e) => {
                tracing::error!(error = %e, "audit retention: the archive failed; the next scheduled time tries again");
                None
            }
        }
    }
}

/// An age as people write it: whole days as days (`90d`, not humantime's months).
fn age_text(age: Millis) -> String {
    const DAY: i64 = 24 * 3600 * 1000;
    if age.0 % DAY == 0 {
        format!("{}d", age.0 / DAY)
    } else {
        warden_core::time::format_duration(Duration::from_millis(
            u64::try_from(age.0).unwrap_or(u64::MAX),
        ))
    }
}

impl Plan {
    /// The retention planned, archiving from `store` with `key` on `clock`.
    pub(crate) fn start(
        self,
        store: Arc<Store>,
        clock: Arc<dyn Clock>,
        key: Arc<AuditKey>,
    ) -> Retention {
        Retention {
            age: self.age,
            directory: self.directory,
            cron: self.cron,
            schedule: self.schedule,
            control: Control::new(store.clone(), clock),
            store,
            key,
        }
    }
}

/// Creates `dir` (and its parents) when missing, the directory itself readable by its owner
/// only: archives are as sensitive as the trail.
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    if dir.exists() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests;
