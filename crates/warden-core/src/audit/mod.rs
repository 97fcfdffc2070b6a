//! The audit trail (AUD-1..3): records, redaction, and the per-store hash chain.
//!
//! Every record's hash covers its sequence number, its fields, its payload and the previous
//! record's hash, so editing, deleting or reordering any record breaks the chain at that
//! record, and `warden audit verify` names it.
//!
//! - [`canonical`]: the canonical JSON that hashes cover, and the hashes;
//! - [`redact`]: what is kept of arguments beside their hash (AUD-3);
//! - [`checkpoint`]: signed checkpoints of the head, the chain's anchor outside the database.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::time::Millis;

mod canonical;
pub mod checkpoint;
pub mod export;
mod redact;
#[cfg(test)]
mod tests;

pub use canonical::{
    CanonicalObject, canonical_json, hash_arguments, hash_object, hash_value, to_hex,
};
use canonical::{write_json, write_str};
pub use redact::{
    ArgumentsAudit, Path, SECRET_MARKERS, SECRET_WORDS, keep, redact, sensitive_paths,
};

/// The hash "before" the first record.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What a record is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A run was opened (mode, principal, effective scope).
    Run,
    /// A tool call reached step 3 (or was refused at name resolution).
    Call,
    /// The decision on a call (allow or deny, code, rule, policy version).
    Decision,
    /// The outcome of an executed call (timing, result hash).
    Outcome,
    /// An operator action (configuration, credentials, kill switches).
    Admin,
    /// A server-initiated request of an upstream relayed to (or refused for) a client.
    Relay,
}

/// Every value a record's `decision` takes, by kind: calls' decisions (allow, deny, park,
/// stage), outcomes (executed, failed, cancelled, input_required, task, interrupted),
/// approvals (approve, reject, veto, expire, refuse) and relays (relayed, refused). The one
/// list the CLI's and the console's audit filters offer.
pub const DECISIONS: [&str; 17] = [
    "allow",
    "deny",
    "park",
    "stage",
    "executed",
    "failed",
    "cancelled",
    "input_required",
    "task",
    "interrupted",
    "approve",
    "reject",
    "veto",
    "expire",
    "refuse",
    "relayed",
    "refused",
];

/// Every record kind, in its stored form.
pub const KINDS: [&str; 6] = ["run", "call", "decision", "outcome", "admin", "relay"];

impl RecordKind {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Run => "run",
            RecordKind::Call => "call",
            RecordKind::Decision => "decision",
            RecordKind::Outcome => "outcome",
            RecordKind::Admin => "admin",
            RecordKind::Relay => "relay",
        }
    }

    /// Parses the stored form.
    pub fn parse(s: &str) -> Option<Self> {
        [
            RecordKind::Run,
            RecordKind::Call,
            RecordKind::Decision,
            RecordKind::Outcome,
            RecordKind::Admin,
            RecordKind::Relay,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// A record before the store sequences and chains it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewRecord {
    /// When it happened.
    pub at: Millis,
    /// What it is.
    pub kind: RecordKind,
    /// The run (or, for admin records, `admin`).
    pub run_id: String,
    /// The call within the run.
    pub call_id: Option<String>,
    /// The acting principal.
    pub principal: Option<String>,
    /// The agent of the run.
    pub agent: Option<String>,
    /// The tool called (as requested).
    pub tool: Option<String>,
    /// `allow`, `deny`, `executed`, `failed`.
    pub decision: Option<String>,
    /// Denial code.
    pub code: Option<String>,
    /// Canonical JSON of the details.
    pub payload: String,
}

/// A header field of the chain hash.
enum Field<'a> {
    Text(Option<&'a str>),
    Int(i64),
}

/// A stored, chained record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Position in the chain, from 1, without gaps.
    pub seq: i64,
    /// The record's fields.
    #[serde(flatten)]
    pub record: NewRecord,
    /// Hash of the previous record.
    pub prev_hash: String,
    /// This record's hash.
    pub hash: String,
}

/// A record's fields, borrowed: what chaining and storing a record read. The audit spool
/// inserts records straight from the bytes it spooled them as, without owning copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// When it happened.
    pub at: Millis,
    /// What it is.
    pub kind: RecordKind,
    /// The run (or, for admin records, `admin`).
    pub run_id: &'a str,
    /// The call within the run.
    pub call_id: Option<&'a str>,
    /// The acting principal.
    pub principal: Option<&'a str>,
    /// The agent of the run.
    pub agent: Option<&'a str>,
    /// The tool called (as requested).
    pub tool: Option<&'a str>,
    /// `allow`, `deny`, `executed`, `failed`.
    pub decision: Option<&'a str>,
    /// Denial code.
    pub code: Option<&'a str>,
    /// Canonical JSON of the details.
    pub payload: &'a str,
}

impl NewRecord {
    /// The record's fields, borrowed.
    pub fn view(&self) -> RecordView<'_> {
        RecordView {
            at: self.at,
            kind: self.kind,
            run_id: &self.run_id,
            call_id: self.call_id.as_deref(),
            principal: self.principal.as_deref(),
            agent: self.agent.as_deref(),
            tool: self.tool.as_deref(),
            decision: self.decision.as_deref(),
            code: self.code.as_deref(),
            payload: &self.payload,
        }
    }

    /// The chain hash of this record at `seq` after `prev_hash`.
    pub fn chain_hash(&self, seq: i64, prev_hash: &str) -> String {
        self.view().chain_hash(seq, prev_hash)
    }

    /// Sequences and chains the record.
    pub fn chain(self, seq: i64, prev_hash: &str) -> AuditRecord {
        let hash = self.chain_hash(seq, prev_hash);
        AuditRecord {
            seq,
            record: self,
            prev_hash: prev_hash.to_owned(),
            hash,
        }
    }
}

impl From<RecordView<'_>> for NewRecord {
    fn from(v: RecordView<'_>) -> Self {
        let own = |s: Option<&str>| s.map(str::to_owned);
        NewRecord {
            at: v.at,
            kind: v.kind,
            run_id: v.run_id.to_owned(),
            call_id: own(v.call_id),
            principal: own(v.principal),
            agent: own(v.agent),
            tool: own(v.tool),
            decision: own(v.decision),
            code: own(v.code),
            payload: v.payload.to_owned(),
        }
    }
}

impl RecordView<'_> {
    /// The chain hash of this record at `seq` after `prev_hash`.
    pub fn chain_hash(&self, seq: i64, prev_hash: &str) -> String {
        // The canonical form of the header object {seq, at, kind, run_id, call_id, principal,
        // agent, tool, decision, code}, keys in sorted order, written directly (the same
        // bytes as `canonical_json` of that object; a test holds them equal).
        let mut header = Vec::with_capacity(256);
        // Each field's key with what precedes it, as canonical JSON writes it (keys need no
        // escape): written as constants, not through the string writer per call.
        let fields: [(&[u8], Field<'_>); 10] = [
            (b"{\"agent\":", Field::Text(self.agent)),
            (b",\"at\":", Field::Int(self.at.0)),
            (b",\"call_id\":", Field::Text(self.call_id)),
            (b",\"code\":", Field::Text(self.code)),
            (b",\"decision\":", Field::Text(self.decision)),
            (b",\"kind\":", Field::Text(Some(self.kind.as_str()))),
            (b",\"principal\":", Field::Text(self.principal)),
            (b",\"run_id\":", Field::Text(Some(self.run_id))),
            (b",\"seq\":", Field::Int(seq)),
            (b",\"tool\":", Field::Text(self.tool)),
        ];
        for (key, value) in fields {
            header.extend_from_slice(key);
            match value {
                Field::Text(Some(text)) => write_str(text, &mut header),
                Field::Text(None) => header.extend_from_slice(b"null"),
                Field::Int(n) => write_json(&n, &mut header),
            }
        }
        header.push(b'}');
        let mut h = Sha256::new();
        h.update(prev_hash.as_bytes());
        h.update(b"\n");
        h.update(&header);
        h.update(b"\n");
        h.update(self.payload.as_bytes());
        to_hex(&h.finalize())
    }
}

/// Where and how the chain breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainBreak {
    /// The first record that does not verify (or the missing sequence number).
    pub seq: i64,
    /// What is wrong.
    pub problem: ChainProblem,
}

/// What is wrong at a break.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainProblem {
    /// The record's content does not match its hash: edited (or moved).
    Edited,
    /// The record does not follow the previous one: a record before it was removed or the
    /// records were reordered.
    NotLinked,
    /// A sequence number is missing.
    Missing,
    /// The chain ends before the recorded head: records at the end were removed.
    Truncated,
    /// The chain starts after an archive cut (AUD-6) that no `audit.archive` record of the
    /// chain names: the records before it were removed, not archived.
    CutUnrecorded,
}

impl fmt::Display for ChainBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problem {
            ChainProblem::Edited => write!(
                f,
                "audit record {} does not match its hash: it was edited or moved",
                self.seq
            ),
            ChainProblem::NotLinked => write!(
                f,
                "audit record {} does not follow the record before it: records were removed or reordered",
                self.seq
            ),
            ChainProblem::Missing => write!(f, "audit record {} is missing", self.seq),
            ChainProblem::Truncated => write!(
                f,
                "audit records from {} on are missing: the chain was truncated",
                self.seq
            ),
            ChainProblem::CutUnrecorded => write!(
                f,
                "audit records through {} are gone, and no `audit.archive` record of the chain says they were archived",
                self.seq
            ),
        }
    }
}

/// Incremental verifier: feed records in stored order.
#[derive(Debug)]
pub struct ChainVerifier {
    expected_seq: i64,
    prev_hash: String,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        Self {
            expected_seq: 1,
            prev_hash: GENESIS_HASH.to_owned(),
        }
    }
}

impl ChainVerifier {
    /// A verifier of a part of the chain that starts at record `seq`, whose predecessor's hash
    /// is `prev_hash` (an export, AUD-5).
    pub fn starting_at(seq: i64, prev_hash: &str) -> Self {
        Self {
            expected_seq: seq,
            prev_hash: prev_hash.to_owned(),
        }
    }

    /// Checks the next record.
    pub fn push(&mut self, r: &AuditRecord) -> Result<(), ChainBreak> {
        if r.seq > self.expected_seq {
            return Err(ChainBreak {
                seq: self.expected_seq,
                problem: ChainProblem::Missing,
            });
        }
        if r.record.chain_hash(r.seq, &r.prev_hash) != r.hash || r.seq < self.expected_seq {
            return Err(ChainBreak {
                seq: r.seq,
                problem: ChainProblem::Edited,
            });
        }
        if r.prev_hash != self.prev_hash {
            return Err(ChainBreak {
                seq: r.seq,
                problem: ChainProblem::NotLinked,
            });
        }
        self.expected_seq = r.seq + 1;
        self.prev_hash.clone_from(&r.hash);
        Ok(())
    }

    /// Checks the end of the chain against the recorded head (last sequence and hash).
    pub fn finish(&self, head: Option<(i64, &str)>) -> Result<i64, ChainBreak> {
        let verified = self.expected_seq - 1;
        if let Some((head_seq, head_hash)) = head {
            if head_seq > verified {
                return Err(ChainBreak {
                    seq: verified + 1,
                    problem: ChainProblem::Truncated,
                });
            }
            if head_seq == verified && head_hash != self.prev_hash {
                return Err(ChainBreak {
                    seq: verified,
                    problem: ChainProblem::Edited,
                });
            }
        }
        Ok(verified)
    }
}
