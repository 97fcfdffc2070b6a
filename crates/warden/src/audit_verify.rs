//! `warden audit verify` (AUD-2): the hash chain, then its end against the latest checkpoint
//! signed by a trusted key — on the store, or by the server (`POST /api/v1/audit/verify`), which
//! is given what to trust: the `--anchor` file's checkpoints, or the `--audit-key`'s public key
//! and checkpoint file. Both paths end in a [`Verified`] (or the break), printed by one function.

use serde_json::{Value, json};
use warden_control::Caller;
use warden_control::audit::{self, Verification};
use warden_core::audit::checkpoint::Checkpoint;
use warden_store::{AuditKey, StoreError, read_checkpoints};

use crate::api::Api;
use crate::cli::{TargetArgs, VerifyArgs};
use crate::common::{audit_key_path, cli_actor, control, open_existing, usage};
use crate::output;
use crate::progress::Progress;
use crate::target::{Reach, Side, Target, resolve};
use crate::views::field;

/// A chain that verifies, and what is known of its end.
#[derive(Debug)]
struct Verified {
    records: i64,
    end: End,
}

/// The chain's end.
#[derive(Debug)]
enum End {
    /// It matches the latest checkpoint of the trusted key: this one's sequence number and time.
    Anchored { seq: i64, at: i64 },
    /// A key is trusted, but it has signed no checkpoint yet.
    NoCheckpoint,
    /// Nothing to check it against, and why.
    Unanchored(String),
}

/// `warden audit verify` (its flags, and the `audit` verb's, which may name the server).
pub(crate) async fn verify(v: &VerifyArgs, audit: &TargetArgs) -> anyhow::Result<()> {
    let target = if v.target.server.is_none() && audit.server.is_some() {
        audit
    } else {
        &v.target
    };
    let verified = match resolve(target, Reach::Both(Side::Store)).await? {
        Target::Store(location) => on_store(v, &location).await?,
        Target::Server(api) => on_server(v, &api).await?,
    };
    let n = verified.records;
    match verified.end {
        End::Anchored { seq, at } => println!(
            "audit chain verified: {n} records, its end anchored by the checkpoint of {} (seq {seq})",
            output::time(warden_core::time::Millis(at)),
        ),
        End::NoCheckpoint => {
            println!("audit chain verified: {n} records; no checkpoint signed by the audit key yet")
        }
        End::Unanchored(why) => {
            println!("audit chain verified: {n} records");
            println!("its end is not anchored: {why}");
        }
    }
    Ok(())
}

/// The checkpoints of an `--anchor` file, all signed by one key: that key and them.
fn anchor_file(file: &std::path::Path) -> anyhow::Result<(String, Vec<Checkpoint>)> {
    let anchor = read_checkpoints(file).map_err(|e| usage(e.to_string()))?;
    let Some(last) = anchor.last() else {
        return Err(usage(format!("{}: no checkpoint in it", file.display())));
    };
    let trusted = last.key.clone();
    if anchor.iter().any(|c| c.key != trusted) {
        return Err(usage(format!(
            "{}: its checkpoints are signed by different keys",
            file.display()
        )));
    }
    Ok((trusted, anchor))
}

async fn on_store(v: &VerifyArgs, location: &warden_store::Location) -> anyhow::Result<Verified> {
    let store = open_existing(location).await?;
    let progress = Progress::new(store.audit_head().await?.unsigned_abs(), "records verified");
    let key_path = audit_key_path(v.audit_key.as_deref(), location)?;
    let key = key_at(&key_path)?;
    let (trusted, mut candidates) = match &v.anchor {
        Some(file) => {
            let (trusted, anchor) = anchor_file(file)?;
            (Some(trusted), anchor)
        }
        None => (key.as_ref().map(AuditKey::public_key), Vec::new()),
    };
    if let (Some(key), Some(trusted)) = (&key, &trusted) {
        candidates.extend(
            read_checkpoints(&key.checkpoint_file())?
                .into_iter()
                .filter(|c| &c.key == trusted),
        );
    }
    let caller = Caller::Operator(cli_actor());
    let verification = audit::verify(&control(store), &caller, trusted, candidates, |n| {
        progress.set(n)
    })
    .await?;
    progress.finish();
    let (records, end) = match verification {
        Verification::Broken(b) => return Err(anyhow::anyhow!("{b}")),
        Verification::Intact { records, end } => (records, end),
    };
    let end = match end {
        audit::End::Anchored(c) => End::Anchored {
            seq: c.seq,
            at: c.at.0,
        },
        audit::End::NoCheckpoint => End::NoCheckpoint,
        audit::End::Unanchored => End::Unanchored(format!(
            "no audit key at {} (`warden serve` creates one; or pass --anchor FILE)",
            key_path.display()
        )),
        audit::End::Problem(problem) => return Err(anyhow::anyhow!("{problem}")),
    };
    Ok(Verified { records, end })
}

async fn on_server(v: &VerifyArgs, api: &Api) -> anyhow::Result<Verified> {
    // The key only when named: the default key is where a store is, not where the server is.
    let key = match &v.audit_key {
        Some(path) => Some(
            key_at(path)?
                .ok_or_else(|| usage(format!("--audit-key: no audit key at {}", path.display())))?,
        ),
        None => None,
    };
    let (trusted, mut checkpoints) = match (&v.anchor, &key) {
        (Some(file), _) => {
            let (trusted, anchor) = anchor_file(file)?;
            (Some(trusted), anchor)
        }
        (None, Some(key)) => (Some(key.public_key()), Vec::new()),
        (None, None) => (None, Vec::new()),
    };
    if let (Some(key), Some(trusted)) = (&key, &trusted) {
        checkpoints.extend(
            read_checkpoints(&key.checkpoint_file())?
                .into_iter()
                .filter(|c| &c.key == trusted),
        );
    }
    let mut body = json!({ "checkpoints": checkpoints });
    if let (Some(t), Some(fields)) = (&trusted, body.as_object_mut()) {
        fields.insert("publicKey".into(), Value::String(t.clone()));
    }
    let answer = api.post(&["audit", "verify"], &[], body).await?;
    if let Some(message) = field(field(&answer, "break"), "message").as_str() {
        return Err(anyhow::anyhow!("{message}"));
    }
    if let Some(problem) = field(&answer, "anchorProblem").as_str() {
        return Err(anyhow::anyhow!("{problem}"));
    }
    let records = field(&answer, "records").as_i64().unwrap_or_default();
    let anchor = field(&answer, "anchor");
    let end = match (anchor.get("seq").and_then(Value::as_i64), &trusted) {
        (Some(seq), _) => End::Anchored {
            seq,
            at: field(anchor, "at").as_i64().unwrap_or_default(),
        },
        (None, Some(_)) => End::NoCheckpoint,
        (None, None) => End::Unanchored(
            "nothing to check it against was given (pass --anchor FILE, or --audit-key FILE with the server's audit key)"
                .into(),
        ),
    };
    Ok(Verified { records, end })
}

/// The audit key at `path`, if there is one.
pub(crate) fn key_at(path: &std::path::Path) -> anyhow::Result<Option<AuditKey>> {
    match AuditKey::load(path) {
        Ok(key) => Ok(Some(key)),
        Err(StoreError::Missing(_)) => Ok(None),
        Err(StoreError::Invalid(m)) => Err(usage(m)),
        Err(e) => Err(e.into()),
    }
}
