//! `warden audit` and `warden audit checkpoint export` (AUD-2, AUD-4); `warden audit verify`
//! is in [`crate::audit_verify`]. The listing works on the store or through
//! `/api/v1/audit` (newest first, in pages) and `/api/v1/audit/export` (oldest first): both give
//! the API's records, printed by one function.

use std::io::Write as _;

use serde_json::Value;
use warden_control::{Caller, Control, audit};
use warden_core::audit::AuditRecord;
use warden_core::audit::checkpoint::Checkpoint;
use warden_store::{AuditFilter, read_checkpoints};

use crate::api::Api;
use crate::audit_verify::key_at;
use crate::cli::{AuditArgs, AuditCommand, CheckpointCommand, Output, VerifyKeyArgs};
use crate::common::{audit_key_path, cli_actor, control, now, open_existing, usage};
use crate::output;
use crate::progress::Progress;
use crate::target::{Reach, Side, Target, resolve};
use crate::views::{cell, field, items, time_cell};

pub(crate) async fn run(args: AuditArgs) -> anyhow::Result<()> {
    match &args.command {
        // An export, offline (AUD-5); otherwise the store's chain, or the server's.
        Some(AuditCommand::Verify(v)) if v.file.is_some() => crate::audit_export::verify_file(v),
        Some(AuditCommand::Verify(v)) => crate::audit_verify::verify(v, &args.target).await,
        Some(AuditCommand::Checkpoint(CheckpointCommand::Export(a))) => export(a, &args).await,
        Some(AuditCommand::Export(a)) => crate::audit_export::run(a, &args).await,
        Some(AuditCommand::Key(a)) => crate::audit_export::key(a, &args).await,
        Some(AuditCommand::Archive(a)) => crate::audit_export::archive(a, &args).await,
        None => list(&args).await,
    }
}

/// Records read per query while listing the store.
const PAGE: i64 = 5_000;
/// The most records one page of the admin API holds.
const API_PAGE: i64 = 1_000;

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
        contains: args.text.clone(),
        after_seq: None,
        limit: None,
        newest_first: !args.oldest_first,
    })
}

/// The same filter as the admin API's query (times as milliseconds).
fn query_of(filter: &AuditFilter) -> Vec<(&'static str, String)> {
    let mut query = Vec::new();
    for (key, value) in [
        ("run", &filter.run_id),
        ("principal", &filter.principal),
        ("agent", &filter.agent),
        ("tool", &filter.tool),
        ("decision", &filter.decision),
        ("code", &filter.code),
        ("kind", &filter.kind),
        ("text", &filter.contains),
    ] {
        if let Some(v) = value {
            query.push((key, v.clone()));
        }
    }
    for (key, value) in [("since", filter.since), ("until", filter.until)] {
        if let Some(t) = value {
            query.push((key, t.0.to_string()));
        }
    }
    query
}

/// A record as the admin API answers it (`Record`): its payload as JSON, not as a string.
fn record_view(r: &AuditRecord) -> anyhow::Result<Value> {
    let mut v = serde_json::to_value(r)?;
    if let Some(obj) = v.as_object_mut()
        && let Some(Value::String(p)) = obj.get("payload")
    {
        let parsed = serde_json::from_str(p).unwrap_or(Value::String(p.clone()));
        obj.insert("payload".into(), parsed);
    }
    Ok(v)
}

/// `warden audit`: the newest `--limit` records that match (the oldest with
/// `--oldest-first`), printed as they are read, with a notice on stderr when more match.
async fn list(args: &AuditArgs) -> anyhow::Result<()> {
    if args.limit < 1 {
        return Err(usage("--limit must be at least 1"));
    }
    let filter = filter_of(args)?;
    let mut shown = Shown::new(args.output);
    let read = match resolve(&args.target, Reach::Both(Side::Store)).await? {
        Target::Store(location) => {
            let control = control(open_existing(&location).await?);
            let (mut progress, mut done) = (None, 0);
            let read = read_pages(&control, &filter, args.limit, |page, total| {
                let bar = progress
                    .get_or_insert_with(|| Progress::for_output(total, "records", args.output));
                done += page.len() as u64;
                shown.push(
                    page.iter()
                        .map(record_view)
                        .collect::<anyhow::Result<_>>()?,
                )?;
                bar.set(done);
                Ok(())
            })
            .await?;
            if let Some(bar) = &progress {
                bar.finish();
            }
            read
        }
        Target::Server(api) => read_api(&api, &filter, args.limit, |page| shown.push(page)).await?,
    };
    shown.finish()?;
    if read.more {
        let which = if args.oldest_first {
            "oldest"
        } else {
            "newest"
        };
        match read.matching {
            Some(m) => eprintln!(
                "showing the {which} {} of {m}; use --limit or filters",
                read.listed
            ),
            None => eprintln!(
                "showing the {which} {}; more match: use --limit or filters",
                read.listed
            ),
        }
    }
    Ok(())
}

/// What a listing read: how many records it handed over, whether more match, and how many
/// do (counted when more match; `None` from a server that does not count).
#[derive(Debug)]
struct Read {
    listed: i64,
    more: bool,
    matching: Option<i64>,
}

/// Reads at most `limit` records matching `filter`, in its order, a page of [`PAGE`] at a
/// time, handing each page to `each` with the number of records it will hand over in all
/// (for a progress bar). The records that match are counted only when there may be more than
/// one page.
async fn read_pages(
    control: &Control,
    filter: &AuditFilter,
    limit: i64,
    mut each: impl FnMut(Vec<AuditRecord>, u64) -> anyhow::Result<()>,
) -> anyhow::Result<Read> {
    let caller = Caller::Operator(cli_actor());
    let first = PAGE.min(limit);
    let mut page = audit::records(
        control,
        &caller,
        &AuditFilter {
            limit: Some(first),
            ..filter.clone()
        },
    )
    .await?;
    let matching = if page.len() as i64 == first {
        audit::count(control, &caller, filter).await?
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
        page = audit::records(
            control,
            &caller,
            &AuditFilter {
                after_seq: Some(cursor),
                limit: Some(PAGE.min(limit - listed)),
                ..filter.clone()
            },
        )
        .await?;
    }
    let matching = matching.max(listed);
    Ok(Read {
        listed,
        more: matching > listed,
        matching: Some(matching),
    })
}

/// [`read_pages`] through the admin API: newest first, the listing's pages (`before` is the
/// cursor); oldest first, the export, asked for one record more than `limit` to know whether
/// more match. When more match, the listing counts them (`count=true`), as the store does.
async fn read_api(
    api: &Api,
    filter: &AuditFilter,
    limit: i64,
    mut each: impl FnMut(Vec<Value>) -> anyhow::Result<()>,
) -> anyhow::Result<Read> {
    let mut query = query_of(filter);
    let mut listed = 0;
    if !filter.newest_first {
        query.push(("limit", limit.saturating_add(1).to_string()));
        let mut page = Vec::new();
        let mut more = false;
        api.lines(&["audit", "export"], &query, |record| {
            if listed == limit {
                more = true;
                return Ok(());
            }
            listed += 1;
            page.push(record);
            if page.len() as i64 == API_PAGE {
                each(std::mem::take(&mut page))?;
            }
            Ok(())
        })
        .await?;
        each(page)?;
        let matching = if more {
            count(api, filter).await?
        } else {
            None
        };
        return Ok(Read {
            listed,
            more,
            matching,
        });
    }
    let mut before: Option<i64> = None;
    loop {
        let mut q = query.clone();
        q.push(("limit", API_PAGE.min(limit - listed).to_string()));
        if let Some(b) = before {
            q.push(("before", b.to_string()));
        }
        let answer = api.get(&["audit"], &q).await?;
        let next = field(&answer, "next").as_i64();
        let records = items(field(&answer, "records").clone());
        listed += records.len() as i64;
        each(records)?;
        match next {
            Some(n) if listed < limit => before = Some(n),
            Some(_) => {
                return Ok(Read {
                    listed,
                    more: true,
                    matching: count(api, filter).await?,
                });
            }
            None => {
                return Ok(Read {
                    listed,
                    more: false,
                    matching: None,
                });
            }
        }
    }
}

/// How many records match `filter`, as the admin API counts them.
async fn count(api: &Api, filter: &AuditFilter) -> anyhow::Result<Option<i64>> {
    let mut query = query_of(filter);
    query.extend([("limit", "1".to_owned()), ("count", "true".to_owned())]);
    let answer = api.get(&["audit"], &query).await?;
    Ok(field(&answer, "matching").as_i64())
}

/// What `warden audit` prints: JSON Lines as the records are read, a table or YAML at the end.
enum Shown {
    Json(std::io::BufWriter<std::io::Stdout>),
    Table(Vec<Vec<String>>),
    Yaml(Vec<Value>),
}

impl Shown {
    fn new(output: Output) -> Self {
        match output {
            Output::Json => Self::Json(std::io::BufWriter::new(std::io::stdout())),
            Output::Table => Self::Table(Vec::new()),
            Output::Yaml => Self::Yaml(Vec::new()),
        }
    }

    fn push(&mut self, records: Vec<Value>) -> anyhow::Result<()> {
        match self {
            Self::Json(out) => {
                for v in &records {
                    serde_json::to_writer(&mut *out, v).map_err(|e| match e.io_error_kind() {
                        Some(kind) => output::stdout_error(kind.into()),
                        None => e.into(),
                    })?;
                    out.write_all(b"\n").map_err(output::stdout_error)?;
                }
            }
            Self::Table(rows) => rows.extend(records.iter().map(|r| {
                vec![
                    cell(r, "seq"),
                    time_cell(r, "at"),
                    cell(r, "kind"),
                    cell(r, "run_id"),
                    cell(r, "principal"),
                    cell(r, "tool"),
                    cell(r, "decision"),
                    cell(r, "code"),
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

/// The latest checkpoint the audit key signed, as one JSON line.
async fn export(a: &VerifyKeyArgs, audit: &AuditArgs) -> anyhow::Result<()> {
    let reach = Reach::StoreOnly(
        "audit checkpoint export",
        "it reads the audit key and its checkpoint file, which are where the store is",
    );
    let target = if audit.target.server.is_some() {
        &audit.target
    } else {
        &a.target
    };
    let Target::Store(location) = resolve(target, reach).await? else {
        return Err(usage("`warden audit checkpoint export` works on the store"));
    };
    let store = open_existing(&location).await?;
    let key_path = audit_key_path(a.audit_key.as_deref(), &location)?;
    let key = key_at(&key_path)?.ok_or_else(|| {
        anyhow::anyhow!(
            "no audit key at {}: `warden serve` creates it with the first checkpoint",
            key_path.display()
        )
    })?;
    let trusted = key.public_key();
    let candidates = store
        .checkpoints_with(read_checkpoints(&key.checkpoint_file())?)
        .await?;
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
