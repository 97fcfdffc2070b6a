//! An export of the audit trail that a SIEM can take and anyone can verify without Warden
//! (AUD-5): JSON Lines, one record per line — as Warden keeps it (`jsonl`), or as an OCSF API
//! Activity event that carries the record in `unmapped.warden` (`ocsf`) — and the signed
//! checkpoints that cover them, each a line `{"checkpoint": …}`.
//!
//! [`verify`] needs the text and the audit key's public half only: the records must follow each
//! other without a gap, each must match its hash and link to the one before (the chain, AUD-2),
//! every checkpoint must be signed by the key and name a record of the export by its hash, and
//! one must sign the last record — so that an edited, removed, reordered or added line, and a
//! tail cut off, are each named by their line.

use std::collections::HashMap;
use std::fmt;

use serde_json::{Value, json};

use super::checkpoint::Checkpoint;
use super::{AuditRecord, ChainBreak, ChainVerifier, GENESIS_HASH, RecordKind};

/// The formats of an export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The records as Warden keeps them.
    Jsonl,
    /// OCSF 1.x API Activity events (class 6003), each carrying its record.
    Ocsf,
}

/// One line of an export: a record in `format`.
pub fn record_line(record: &AuditRecord, format: Format) -> String {
    match format {
        Format::Jsonl => serde_json::to_string(record).unwrap_or_default(),
        Format::Ocsf => ocsf(record).to_string(),
    }
}

/// One line of an export: a checkpoint.
pub fn checkpoint_line(checkpoint: &Checkpoint) -> String {
    json!({ "checkpoint": checkpoint }).to_string()
}

/// A record as an OCSF API Activity event: who (`actor`), what (`api.operation`, the tool, or
/// the admin action), the decision (`status`, `status_code`), when, and the record itself in
/// `unmapped.warden`, from which [`verify`] checks it.
fn ocsf(r: &AuditRecord) -> Value {
    let n = &r.record;
    let denied = matches!(n.decision.as_deref(), Some("deny" | "failed" | "refuse"));
    let (status, status_id) = match n.decision.as_deref() {
        None => ("Unknown", 0),
        Some(_) if denied => ("Failure", 2),
        Some(_) => ("Success", 1),
    };
    let activity_id = match n.kind {
        RecordKind::Admin => 3,
        _ => 99,
    };
    json!({
        "class_uid": 6003,
        "class_name": "API Activity",
        "category_uid": 6,
        "category_name": "Application Activity",
        "activity_id": activity_id,
        "type_uid": 6003 * 100 + activity_id,
        "severity_id": if denied { 3 } else { 1 },
        "time": n.at.0,
        "status": status,
        "status_id": status_id,
        "status_code": n.code,
        "status_detail": n.decision,
        "actor": {
            "user": { "name": n.principal },
            "session": { "uid": n.run_id },
            "app_name": n.agent,
        },
        "api": {
            "operation": n.tool,
            "request": { "uid": n.call_id },
            "service": { "name": "warden" },
        },
        "metadata": {
            "product": { "name": "Warden", "vendor_name": "Warden" },
            "version": "1.3.0",
            "uid": format!("{}", r.seq),
            "log_name": n.kind.as_str(),
        },
        "unmapped": { "warden": r },
    })
}

/// What an export proves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// How many records.
    pub records: usize,
    /// The first record's and the last record's sequence numbers.
    pub first: i64,
    /// The last.
    pub last: i64,
    /// The checkpoint that signs the last record.
    pub end: Checkpoint,
    /// How many checkpoints it holds.
    pub checkpoints: usize,
}

/// What is wrong with an export, and on which line (from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The line; 0 for the export as a whole.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => f.write_str(&self.message),
            line => write!(f, "line {line}: {}", self.message),
        }
    }
}

fn at(line: usize, message: impl Into<String>) -> Problem {
    Problem {
        line,
        message: message.into(),
    }
}

/// A line read: a record, or a checkpoint.
enum Line {
    Record(AuditRecord),
    Checkpoint(Checkpoint),
}

fn parse(text: &str) -> Result<Line, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    if let Some(c) = value.get("checkpoint") {
        return serde_json::from_value(c.clone())
            .map(Line::Checkpoint)
            .map_err(|e| format!("not a checkpoint ({e})"));
    }
    let record = value
        .get("unmapped")
        .and_then(|u| u.get("warden"))
        .unwrap_or(&value);
    serde_json::from_value(record.clone())
        .map(Line::Record)
        .map_err(|e| format!("not an audit record ({e})"))
}

/// Verifies the export `text` (either format) against `trusted`, the audit key's public half
/// (hex).
pub fn verify(text: &str, trusted: &str) -> Result<Verified, Problem> {
    let mut chain: Option<ChainVerifier> = None;
    let mut first_prev = String::new();
    let mut lines_of: HashMap<i64, (usize, String)> = HashMap::new();
    let mut checkpoints: Vec<(usize, Checkpoint)> = Vec::new();
    let (mut records, mut first, mut last) = (0, 0, 0);
    for (i, text) in text.lines().enumerate() {
        let line = i + 1;
        if text.trim().is_empty() {
            continue;
        }
        match parse(text).map_err(|m| at(line, m))? {
            Line::Checkpoint(c) => checkpoints.push((line, c)),
            Line::Record(r) => {
                let verifier = chain.get_or_insert_with(|| {
                    first = r.seq;
                    first_prev.clone_from(&r.prev_hash);
                    ChainVerifier::starting_at(r.seq, &r.prev_hash)
                });
                verifier
                    .push(&r)
                    .map_err(|b: ChainBreak| at(line, b.to_string()))?;
                records += 1;
                last = r.seq;
                lines_of.insert(r.seq, (line, r.hash));
            }
        }
    }
    if records == 0 {
        return Err(at(0, "the export holds no audit record"));
    }
    let mut end: Option<Checkpoint> = None;
    let mut start = first == 1 && first_prev == GENESIS_HASH;
    for (line, c) in &checkpoints {
        if c.verify(trusted).is_err() {
            return Err(at(
                *line,
                format!(
                    "the checkpoint of seq {} is not signed by the trusted key",
                    c.seq
                ),
            ));
        }
        if c.seq == first - 1 && c.hash == first_prev {
            // The record before the export's first: where it starts is signed.
            start = true;
            continue;
        }
        match lines_of.get(&c.seq) {
            Some((_, hash)) if *hash == c.hash => {}
            Some((record_line, _)) => {
                return Err(at(
                    *record_line,
                    format!(
                        "audit record {} is not the one the checkpoint on line {line} signed: it was edited",
                        c.seq
                    ),
                ));
            }
            None if c.seq > last => {
                return Err(at(
                    *line,
                    format!(
                        "the checkpoint of seq {} signs records after the export's last ({last}): records {}..={} were removed",
                        c.seq,
                        last + 1,
                        c.seq
                    ),
                ));
            }
            None => {
                return Err(at(
                    *line,
                    format!(
                        "the checkpoint of seq {} names a record this export does not hold",
                        c.seq
                    ),
                ));
            }
        }
        if c.seq == last {
            end = Some(c.clone());
        }
    }
    if !start {
        return Err(at(
            0,
            format!(
                "nothing signs where the export starts: no checkpoint of record {} (the one before its first), so records before it could have been removed",
                first - 1
            ),
        ));
    }
    let end = end.ok_or_else(|| {
        at(
            0,
            format!(
                "no checkpoint signs the export's last record ({last}): records at its end could have been removed or added"
            ),
        )
    })?;
    Ok(Verified {
        records,
        first,
        last,
        end,
        checkpoints: checkpoints.len(),
    })
}

#[cfg(test)]
mod tests;
