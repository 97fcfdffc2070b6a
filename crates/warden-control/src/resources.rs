//! Configuration resources (OPS-2): apply and delete — `warden apply|delete`, the admin API's
//! `/resources`, and kill switches (`killswitches.rs`) built on them. Parsing the YAML or JSON
//! is the door's; validating what it makes, writing it and saying what changed is here — a
//! GitProvider's webhook secret by the rules of `forge_secrets`.

use crate::{Caller, ConfigRefusal, Control, Refusal, forge_secrets};
use warden_core::capability::{CONFIG_READ, CONFIG_WRITE};
use warden_core::config::{Config, Kind, Located, Resource};

/// What an apply does to one resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeStatus {
    /// It was not there.
    Created,
    /// It was there, and differs.
    Configured,
    /// It was there, the same.
    Unchanged,
}

impl ChangeStatus {
    /// `created`, `configured` or `unchanged`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Configured => "configured",
            Self::Unchanged => "unchanged",
        }
    }
}

/// One resource of an apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Its kind.
    pub kind: Kind,
    /// Its key (name).
    pub key: String,
    /// What the apply does to it.
    pub status: ChangeStatus,
}

/// An apply's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The configuration's revision after it (unchanged for a dry run, or when nothing
    /// changed).
    pub revision: u64,
    /// Each resource, in the order given.
    pub changes: Vec<Change>,
    /// Whether anything was written.
    pub written: bool,
}

/// Refuses a caller that may not read resources (`config:read`): a door asks before it reads
/// the kind asked for, so that a refusal comes before any complaint about it.
pub fn may_read(caller: &Caller) -> Result<(), Refusal> {
    caller.require(CONFIG_READ, "reading resources")
}

/// Every applied resource of `kind`, in key order.
pub async fn list(
    control: &Control,
    caller: &Caller,
    kind: Kind,
) -> Result<Vec<Resource>, Refusal> {
    may_read(caller)?;
    let (config, _) = control.store().load_config().await?;
    Ok(config.of_kind(kind).cloned().collect())
}

/// The applied resource `kind`/`key`.
pub async fn get(
    control: &Control,
    caller: &Caller,
    kind: Kind,
    key: &str,
) -> Result<Resource, Refusal> {
    may_read(caller)?;
    let (config, _) = control.store().load_config().await?;
    config
        .get(kind, key)
        .cloned()
        .ok_or_else(|| Refusal::not_found(format!("no {kind} named `{key}`")))
}

/// Refuses a caller that may not apply or delete resources (`config:write`), naming `what`:
/// a door asks before it reads the resources, so that a refusal comes before any complaint
/// about them.
pub fn may_write(caller: &Caller, what: &str) -> Result<(), Refusal> {
    caller.require(CONFIG_WRITE, what)
}

/// Applies `resources` (create or replace each by kind and key) after validating the whole
/// configuration they make with what is applied; nothing is written when any is wrong, nor
/// for a `dry_run`, nor when every one is unchanged (validated all the same: an unchanged
/// resource may reference something deleted since).
pub async fn apply(
    control: &Control,
    caller: &Caller,
    resources: Vec<Located>,
    dry_run: bool,
) -> Result<Applied, Refusal> {
    may_write(caller, "applying resources")?;
    write(control, caller, resources, dry_run).await
}

/// [`apply`] without its capability check, for the services built on it.
pub(crate) async fn write(
    control: &Control,
    caller: &Caller,
    resources: Vec<Located>,
    dry_run: bool,
) -> Result<Applied, Refusal> {
    let (current, revision) = control.store().load_config().await?;
    let mut resources = resources;
    let secrets = forge_secrets::settle(&current, &mut resources, control.secrets());
    let rejected = |errors| Refusal::Config {
        refusal: ConfigRefusal::Rejected,
        errors,
    };
    secrets.check(control.secrets()).map_err(rejected)?;
    let changes: Vec<Change> = resources
        .iter()
        .map(|r| Change {
            kind: r.resource.kind(),
            key: r.resource.key(),
            status: match current.get(r.resource.kind(), &r.resource.key()) {
                None => ChangeStatus::Created,
                Some(existing) if *existing == r.resource => ChangeStatus::Unchanged,
                Some(_) => ChangeStatus::Configured,
            },
        })
        .collect();
    let to_write: Vec<Located> = resources
        .iter()
        .zip(&changes)
        .filter(|(_, c)| c.status != ChangeStatus::Unchanged)
        .map(|(r, _)| r.clone())
        .collect();
    let base: Vec<Located> = current.resources().cloned().collect();
    let merged = Config::merge(base, resources.clone()).map_err(rejected)?;
    // Only what is written: an unchanged policy applied again is not refused for a schema
    // accepted since.
    let undeclared = crate::tools::undeclared_arguments(control, &merged, &to_write).await?;
    if !undeclared.is_empty() {
        return Err(rejected(undeclared));
    }
    if dry_run || to_write.is_empty() {
        return Ok(Applied {
            revision,
            changes,
            written: false,
        });
    }
    // A GitProvider's secret was settled against this revision (a secret left out keeps the
    // one it had): it is written on that revision or not at all.
    let expected = resources
        .iter()
        .any(|r| r.resource.kind() == Kind::GitProvider)
        .then_some(revision);
    // Secrets are written only for an apply valid as a whole, before the configuration that
    // names them.
    secrets.write(control.secrets()).map_err(rejected)?;
    let applied = control
        .store()
        .apply_at(to_write, &caller.actor(), control.now(), expected)
        .await;
    let revision = match applied {
        Ok(Ok(revision)) => revision,
        Ok(Err(errors)) => {
            secrets.undo(control.secrets());
            return Err(rejected(errors));
        }
        Err(e) => {
            secrets.undo(control.secrets());
            return Err(e.into());
        }
    };
    // The server takes the new configuration in before the file it no longer names goes.
    control.changed().await;
    secrets.finish(control.secrets());
    Ok(Applied {
        revision,
        changes,
        written: true,
    })
}

/// Deletes the resource `kind`/`key`; refused while others reference it. The new revision.
pub async fn delete(
    control: &Control,
    caller: &Caller,
    kind: Kind,
    key: &str,
) -> Result<u64, Refusal> {
    may_write(caller, "deleting resources")?;
    remove(control, caller, kind, key).await
}

/// [`delete`] without its capability check, for the services built on it.
pub(crate) async fn remove(
    control: &Control,
    caller: &Caller,
    kind: Kind,
    key: &str,
) -> Result<u64, Refusal> {
    let (config, _) = control.store().load_config().await?;
    if !config.contains(kind, key) {
        return Err(Refusal::not_found(format!("no {kind} named `{key}`")));
    }
    let revision = control
        .store()
        .delete(kind, key, &caller.actor(), control.now())
        .await?
        .map_err(|errors| Refusal::Config {
            refusal: ConfigRefusal::InUse,
            errors,
        })?;
    control.changed().await;
    Ok(revision)
}
