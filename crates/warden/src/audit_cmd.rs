//! `warden audit`, `warden audit verify` and `warden audit checkpoint export` (AUD-2, AUD-4).

use warden_core::audit::checkpoint::Checkpoint;
use warden_store::{AuditFilter, AuditKey, StoreError, read_checkpoints};

use crate::cli::{AuditArgs, AuditCommand, CheckpointCommand, Output, VerifyArgs, VerifyKeyArgs};
use crate::common::{audit_key_path, location, now, open_existing, usage};
use crate::output;

pub(crate) async fn run(args: AuditArgs) -> anyhow::Result<()> {
    match &args.command {
        Some(AuditCommand::Verify(v)) => return verify(v).await,
        Some(AuditCommand::Checkpoint(CheckpointCommand::Export(a))) => return export(a).await,
        None => {}
    }
    let now = now();
    let since = args
        .since
        .as_deref()
        .map(|s| output::parse_time(s, now))
        .transpose()
        .map_err(usage)?;
    let until = args
        .until
        .as_deref()
        .map(|s| output::parse_time(s, now))
        .transpose()
        .map_err(usage)?;
    if args.limit < 1 {
        return Err(usage("--limit must be at least 1"));
    }
    let filter = AuditFilter {
        run_id: args.run.clone(),
        principal: args.principal.clone(),
        agent: args.agent.clone(),
        tool: args.tool.clone(),
        decision: args.decision.clone(),
        code: args.code.clone(),
        kind: args.kind.clone(),
        since,
        until,
        after_seq: None,
        limit: Some(args.limit),
        newest_first: false,
    };
    let store = open_existing(&location(&args.store)?).await?;
    let records = store.audit(&filter).await?;
    match args.output {
        Output::Json => {
            for r in &records {
                let mut v = serde_json::to_value(r)?;
                // Show the payload as JSON, not as a string of JSON.
                if let Some(obj) = v.as_object_mut()
                    && let Some(serde_json::Value::String(p)) = obj.get("payload")
                {
                    let parsed =
                        serde_json::from_str(p).unwrap_or(serde_json::Value::String(p.clone()));
                    obj.insert("payload".into(), parsed);
                }
                println!("{}", serde_json::to_string(&v)?);
            }
            Ok(())
        }
        Output::Yaml => output::yaml_docs(&records),
        Output::Table => {
            let rows: Vec<Vec<String>> = records
                .iter()
                .map(|r| {
                    let rec = &r.record;
                    vec![
                        r.seq.to_string(),
                        output::time(rec.at),
                        rec.kind.as_str().to_owned(),
                        rec.run_id.clone(),
                        rec.principal.clone().unwrap_or_else(|| "-".into()),
                        rec.tool.clone().unwrap_or_else(|| "-".into()),
                        rec.decision.clone().unwrap_or_else(|| "-".into()),
                        rec.code.clone().unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect();
            if rows.is_empty() {
                eprintln!("no audit records match");
            } else {
                output::table(
                    &[
                        "SEQ",
                        "TIME",
                        "KIND",
                        "RUN",
                        "PRINCIPAL",
                        "TOOL",
                        "DECISION",
                        "CODE",
                    ],
                    &rows,
                );
            }
            Ok(())
        }
    }
}

/// The audit key at `path`, if there is one.
fn key_at(path: &std::path::Path) -> anyhow::Result<Option<AuditKey>> {
    match AuditKey::load(path) {
        Ok(key) => Ok(Some(key)),
        Err(StoreError::Missing(_)) => Ok(None),
        Err(StoreError::Invalid(m)) => Err(usage(m)),
        Err(e) => Err(e.into()),
    }
}

/// The chain, then its end against the latest checkpoint signed by the trusted key: the one
/// of the `--anchor` file, else the audit key's.
async fn verify(v: &VerifyArgs) -> anyhow::Result<()> {
    let location = location(&v.store)?;
    let store = open_existing(&location).await?;
    let n = store
        .verify_audit()
        .await?
        .map_err(|b| anyhow::anyhow!("{b}"))?;
    let key_path = audit_key_path(v.audit_key.as_deref(), &location)?;
    let key = key_at(&key_path)?;
    let (trusted, mut candidates) = match &v.anchor {
        Some(file) => {
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
            (trusted, anchor)
        }
        None => match &key {
            Some(key) => (key.public_key(), Vec::new()),
            None => {
                println!("audit chain verified: {n} records");
                println!(
                    "its end is not anchored: no audit key at {} (`warden serve` creates one; or pass --anchor FILE)",
                    key_path.display()
                );
                return Ok(());
            }
        },
    };
    if let Some(key) = &key {
        candidates.extend(read_checkpoints(&key.checkpoint_file())?);
    }
    candidates.extend(store.checkpoints(1_000).await?);
    match store.verify_anchor(&trusted, candidates).await? {
        Ok(Some(c)) => println!(
            "audit chain verified: {n} records, its end anchored by the checkpoint of {} (seq {})",
            output::time(c.at),
            c.seq
        ),
        Ok(None) => {
            println!("audit chain verified: {n} records; no checkpoint signed by the audit key yet")
        }
        Err(problem) => return Err(anyhow::anyhow!("{problem}")),
    }
    Ok(())
}

/// The latest checkpoint the audit key signed, as one JSON line.
async fn export(a: &VerifyKeyArgs) -> anyhow::Result<()> {
    let location = location(&a.store)?;
    let store = open_existing(&location).await?;
    let key_path = audit_key_path(a.audit_key.as_deref(), &location)?;
    let key = key_at(&key_path)?.ok_or_else(|| {
        anyhow::anyhow!(
            "no audit key at {}: `warden serve` creates it with the first checkpoint",
            key_path.display()
        )
    })?;
    let trusted = key.public_key();
    let mut candidates = read_checkpoints(&key.checkpoint_file())?;
    candidates.extend(store.checkpoints(50).await?);
    let latest: Option<Checkpoint> = candidates
        .into_iter()
        .filter(|c| c.key == trusted && c.verify(&trusted).is_ok())
        .max_by_key(|c| c.seq);
    let latest = latest.ok_or_else(|| {
        anyhow::anyhow!(
            "no checkpoint yet: `warden serve` signs one a minute after the chain grows, and when it stops"
        )
    })?;
    println!("{}", serde_json::to_string(&latest)?);
    Ok(())
}
