//! `warden audit`, `warden audit verify` and `warden audit checkpoint export` (AUD-2, AUD-4).

use std::io::Write as _;

use warden_core::audit::AuditRecord;
use warden_core::audit::checkpoint::Checkpoint;
use warden_store::{AuditFilter, AuditKey, StoreError, read_checkpoints};

use crate::cli::{AuditArgs, AuditCommand, CheckpointCommand, Output, VerifyArgs, VerifyKeyArgs};
use crate::common::{audit_key_path, location, now, open_existing, usage};
use crate::output;
use crate::progress::Progress;

pub(crate) async fn run(args: AuditArgs) -> anyhow::Result<()> {
    match &args.command {
        Some(AuditCommand::Verify(v)) => verify(v).await,
        Some(AuditCommand::Checkpoint(CheckpointCommand::Export(a))) => export(a).await,
        None => list(&args).await,
    }
}

/// Records read per query while listing.
const PAGE: i64 = 5_000;

/// The filter of `warden audit`'s flags, without a limit.
fn filter_of(args: &AuditArgs) -> anyhow::Result<AuditFilter> {
    let now = now();
    let time = |t: &Option<String>| {
        t.as_deref()
            .map(|s| output::parse_time(s, now))
            .transpose()
            .map_err(usage)
    };
    Ok(AuditFilter {
        run_id: args.run.clone(),
        principal: args.principal.clone(),
        agent: args.agent.clone(),
        tool: args.tool.clone(),
        decision: args.decision.clone(),
        code: args.code.clone(),
        kind: args.kind.clone(),
        since: time(&args.since)?,
        until: time(&args.until)?,
        after_seq: None,
        limit: None,
        newest_first: !args.oldest_first,
    })
}

/// `warden audit`: the newest `--limit` records that match (the oldest with
/// `--oldest-first`), printed as they are read, with a notice on stderr when more match.
async fn list(args: &AuditArgs) -> anyhow::Result<()> {
    if args.limit < 1 {
        return Err(usage("--limit must be at least 1"));
    }
    let filter = filter_of(args)?;
    let store = open_existing(&location(&args.store)?).await?;
    let mut shown = Shown::new(args.output);
    let (mut progress, mut done) = (None, 0);
    let read = read_pages(&store, &filter, args.limit, |page, total| {
        let bar = progress.get_or_insert_with(|| match args.output {
            Output::Json => Progress::beside_stdout(total, "records"),
            _ => Progress::new(total, "records"),
        });
        done += page.len() as u64;
        shown.push(page)?;
        bar.set(done);
        Ok(())
    })
    .await?;
    if let Some(bar) = &progress {
        bar.finish();
    }
    shown.finish()?;
    if read.matching > read.listed {
        let which = if args.oldest_first {
            "oldest"
        } else {
            "newest"
        };
        eprintln!(
            "showing the {which} {} of {}; use --limit or filters",
            read.listed, read.matching
        );
    }
    Ok(())
}

/// What [`read_pages`] read: how many records it handed over, of how many that match.
#[derive(Debug)]
pub(crate) struct Read {
    pub(crate) listed: i64,
    pub(crate) matching: i64,
}

/// Reads at most `limit` records matching `filter`, in its order, a page of [`PAGE`] at a
/// time, handing each page to `each` with the number of records it will hand over in all
/// (for a progress bar). The records that match are counted only when there may be more than
/// one page.
pub(crate) async fn read_pages(
    store: &warden_store::Store,
    filter: &AuditFilter,
    limit: i64,
    mut each: impl FnMut(Vec<AuditRecord>, u64) -> anyhow::Result<()>,
) -> anyhow::Result<Read> {
    let first = PAGE.min(limit);
    let mut page = store
        .audit(&AuditFilter {
            limit: Some(first),
            ..filter.clone()
        })
        .await?;
    let matching = if page.len() as i64 == first {
        store.count_audit(filter).await?
    } else {
        page.len() as i64
    };
    let total = matching.min(limit).unsigned_abs();
    let mut listed: i64 = 0;
    loop {
        let full = page.len() as i64 == PAGE;
        let cursor = page.last().map(|r| r.seq);
        listed += page.len() as i64;
        each(page, total)?;
        let (true, Some(cursor)) = (full && listed < limit, cursor) else {
            break;
        };
        page = store
            .audit(&AuditFilter {
                after_seq: Some(cursor),
                limit: Some(PAGE.min(limit - listed)),
                ..filter.clone()
            })
            .await?;
    }
    Ok(Read {
        listed,
        matching: matching.max(listed),
    })
}

/// What `warden audit` prints: JSON Lines as the records are read, a table or YAML at the end.
enum Shown {
    Json(std::io::BufWriter<std::io::Stdout>),
    Table(Vec<Vec<String>>),
    Yaml(Vec<AuditRecord>),
}

impl Shown {
    fn new(output: Output) -> Self {
        match output {
            Output::Json => Self::Json(std::io::BufWriter::new(std::io::stdout())),
            Output::Table => Self::Table(Vec::new()),
            Output::Yaml => Self::Yaml(Vec::new()),
        }
    }

    fn push(&mut self, records: Vec<AuditRecord>) -> anyhow::Result<()> {
        match self {
            Self::Json(out) => {
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
                    serde_json::to_writer(&mut *out, &v).map_err(|e| match e.io_error_kind() {
                        Some(kind) => output::stdout_error(kind.into()),
                        None => e.into(),
                    })?;
                    out.write_all(b"\n").map_err(output::stdout_error)?;
                }
            }
            Self::Table(rows) => rows.extend(records.iter().map(|r| {
                let rec = &r.record;
                let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
                vec![
                    r.seq.to_string(),
                    output::time(rec.at),
                    rec.kind.as_str().to_owned(),
                    rec.run_id.clone(),
                    dash(&rec.principal),
                    dash(&rec.tool),
                    dash(&rec.decision),
                    dash(&rec.code),
                ]
            })),
            Self::Yaml(all) => all.extend(records),
        }
        Ok(())
    }

    fn finish(self) -> anyhow::Result<()> {
        match self {
            Self::Json(mut out) => out.flush().map_err(output::stdout_error),
            Self::Yaml(all) => output::yaml_docs(&all),
            Self::Table(rows) if rows.is_empty() => {
                eprintln!("no audit records match");
                Ok(())
            }
            Self::Table(rows) => {
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
                Ok(())
            }
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
    let progress = Progress::new(store.audit_head().await?.unsigned_abs(), "records verified");
    let n = store
        .verify_audit_with(|n| progress.set(n))
        .await?
        .map_err(|b| anyhow::anyhow!("{b}"))?;
    progress.finish();
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
