//! The audit trail (AUD-1..3): records, redaction, and the per-store hash chain.
//!
//! Every record's hash covers its sequence number, its fields, its payload and the previous
//! record's hash, so editing, deleting or reordering any record breaks the chain at that
//! record, and `warden audit verify` names it.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::time::Millis;

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

/// Serializes JSON with object keys sorted at every level, whatever serde_json's features:
/// the canonical form hashed by the chain and by argument hashes.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    // Only serde_json's output and ASCII punctuation were written: valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// A JSON object written in canonical form one field at a time: the bytes of
/// [`canonical_json`] of the same object, without building a `Value` for it (four records are
/// written per governed call; docs/benchmarks.md). Fields are added in sorted key order.
#[derive(Debug)]
pub struct CanonicalObject {
    out: Vec<u8>,
}

impl Default for CanonicalObject {
    fn default() -> Self {
        Self::new()
    }
}

impl CanonicalObject {
    /// An empty object.
    pub fn new() -> Self {
        let mut out = Vec::with_capacity(256);
        out.push(b'{');
        Self { out }
    }

    fn key(&mut self, key: &str) {
        if self.out.len() > 1 {
            self.out.push(b',');
        }
        write_str(key, &mut self.out);
        self.out.push(b':');
    }

    /// A field whose serde form is canonical already: a string, number, bool, `None` (null),
    /// unit enum, or a map that serializes its keys in sorted order (a `BTreeMap` of strings
    /// or names) and whose values are canonical too. Not a struct (its fields are written in
    /// declaration order) nor a `Value` holding objects: use [`CanonicalObject::value`].
    pub fn field<T: Serialize + ?Sized>(mut self, key: &str, value: &T) -> Self {
        self.key(key);
        write_json(value, &mut self.out);
        self
    }

    /// A field holding any JSON value, written canonically.
    pub fn value(mut self, key: &str, value: &Value) -> Self {
        self.key(key);
        write_canonical(value, &mut self.out);
        self
    }

    /// The object's text.
    pub fn finish(mut self) -> String {
        self.out.push(b'}');
        // Only serde_json's output and ASCII punctuation were written: valid UTF-8.
        String::from_utf8(self.out).unwrap_or_default()
    }
}

/// Writes `value` canonically: object keys sorted at every level, no whitespace, strings and
/// numbers exactly as serde_json writes them. Straight into bytes, with no intermediate
/// strings (this runs for every audit record; see docs/benchmarks.md).
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => write_canonical_object(map, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        Value::String(text) => write_str(text, out),
        other => write_json(other, out),
    }
}

/// serde_json's compact form of a value (a string, number, bool or null when called by the
/// canonical writer; see [`CanonicalObject::field`] for the rest).
fn write_json<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    // Writing these into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// `text` as a JSON string, the bytes serde_json writes for it. Most strings here (ids, names,
/// hex digests) need no escape, and checking that in one pass is cheaper than serde_json's
/// escape loop, byte by byte (it was most of the cost of writing the chain header); the others
/// go to serde_json. serde_json escapes exactly the control characters, `"` and `\`.
fn write_str(text: &str, out: &mut Vec<u8>) {
    // Without short-circuiting, so that the compiler may check many bytes at a time.
    let plain = text.bytes().fold(true, |plain, b| {
        plain & (b >= 0x20) & (b != b'"') & (b != b'\\')
    });
    if plain {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        write_json(text, out);
    }
}

fn write_canonical_object(map: &Map<String, Value>, out: &mut Vec<u8>) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    // A map without `preserve_order` is sorted already; this keeps the form canonical either way.
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(k, out);
        out.push(b':');
        write_canonical(v, out);
    }
    out.push(b'}');
}

/// Lowercase hex of `bytes`, written in one pass: `hex::encode` collects one `char` at a time,
/// and four digests are written per governed call (docs/benchmarks.md).
pub fn to_hex(bytes: &[u8]) -> String {
    let mut out = vec![0; bytes.len() * 2];
    match hex::encode_to_slice(bytes, &mut out) {
        Ok(()) => String::from_utf8(out).unwrap_or_else(|_| hex::encode(bytes)),
        Err(_) => hex::encode(bytes),
    }
}

/// SHA-256 of a JSON object's canonical form, without copying it (the same digest as
/// [`hash_value`] of the object).
pub fn hash_object(map: &Map<String, Value>) -> String {
    let mut out = Vec::with_capacity(256);
    write_canonical_object(map, &mut out);
    to_hex(&Sha256::digest(&out))
}

/// SHA-256 of the canonical form of arguments (AUD-3, APR-2).
pub fn hash_arguments(args: Option<&Map<String, Value>>) -> String {
    args.map_or_else(|| hash_object(&Map::new()), hash_object)
}

/// SHA-256 of any JSON value's canonical form.
pub fn hash_value(value: &Value) -> String {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    to_hex(&Sha256::digest(&out))
}

const SECRET_MARKERS: [&str; 10] = [
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "authorization",
    "credential",
    "cookie",
    "private",
];
const MAX_STRING: usize = 256;
const MAX_ITEMS: usize = 50;
const MAX_DEPTH: usize = 8;

/// A redacted copy of arguments for the audit trail (AUD-3): values under secret-looking keys
/// are replaced, long strings and arrays are cut, deep nesting is elided.
pub fn redact(args: Option<&Map<String, Value>>) -> Value {
    match args {
        Some(m) => Value::Object(redact_map(m, 0)),
        None => Value::Object(Map::new()),
    }
}

fn is_secret_key(key: &str) -> bool {
    // Lowercase with `-` read as `_`, compared in place: no folded copy of every argument name
    // on the call path. The markers are ASCII, so byte windows cannot match inside a UTF-8
    // sequence.
    let key = key.as_bytes();
    let contains = |marker: &str| {
        key.windows(marker.len())
            .any(|w| folded_eq(w, marker.as_bytes()))
    };
    SECRET_MARKERS.iter().any(|m| contains(m))
        || folded_eq(key, b"key")
        || key
            .len()
            .checked_sub(4)
            .and_then(|at| key.get(at..))
            .is_some_and(|tail| folded_eq(tail, b"_key"))
}

/// Whether `bytes`, ASCII-lowercased with `-` as `_`, equal `folded`.
fn folded_eq(bytes: &[u8], folded: &[u8]) -> bool {
    bytes.len() == folded.len()
        && bytes.iter().zip(folded).all(|(b, f)| {
            let b = if *b == b'-' {
                b'_'
            } else {
                b.to_ascii_lowercase()
            };
            b == *f
        })
}

fn redact_map(map: &Map<String, Value>, depth: usize) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| {
            let v = if is_secret_key(k) {
                Value::String("[redacted]".into())
            } else {
                redact_value(v, depth + 1)
            };
            (k.clone(), v)
        })
        .collect()
}

fn redact_value(value: &Value, depth: usize) -> Value {
    if depth >= MAX_DEPTH {
        return Value::String("[nested too deep]".into());
    }
    match value {
        Value::Object(map) => Value::Object(redact_map(map, depth)),
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .take(MAX_ITEMS)
                .map(|v| redact_value(v, depth + 1))
                .collect();
            if items.len() > MAX_ITEMS {
                out.push(Value::String(format!(
                    "[{} more items]",
                    items.len() - MAX_ITEMS
                )));
            }
            Value::Array(out)
        }
        Value::String(s) if s.len() > MAX_STRING => {
            let mut cut = MAX_STRING;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            Value::String(format!(
                "{}…[{} chars]",
                s.get(..cut).unwrap_or_default(),
                s.chars().count()
            ))
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn record(n: i64) -> NewRecord {
        NewRecord {
            at: Millis(n),
            kind: RecordKind::Call,
            run_id: "run_1".into(),
            call_id: Some(format!("c{n}")),
            principal: Some("user:alice".into()),
            agent: None,
            tool: Some("t".into()),
            decision: None,
            code: None,
            payload: "{}".into(),
        }
    }

    fn chain(n: i64) -> Vec<AuditRecord> {
        let mut prev = GENESIS_HASH.to_owned();
        (1..=n)
            .map(|i| {
                let r = record(i).chain(i, &prev);
                prev.clone_from(&r.hash);
                r
            })
            .collect()
    }

    fn verify(records: &[AuditRecord], head: Option<(i64, &str)>) -> Result<i64, ChainBreak> {
        let mut v = ChainVerifier::default();
        for r in records {
            v.push(r)?;
        }
        v.finish(head)
    }

    #[test]
    fn an_untouched_chain_verifies() {
        let c = chain(5);
        let head = c.last().map(|r| (r.seq, r.hash.as_str()));
        assert_eq!(verify(&c, head), Ok(5));
    }

    #[test]
    fn editing_a_record_is_named() {
        let mut c = chain(5);
        c[2].record.tool = Some("other".into());
        assert_eq!(
            verify(&c, None).unwrap_err().to_string(),
            "audit record 3 does not match its hash: it was edited or moved"
        );
    }

    #[test]
    fn deleting_a_record_is_named() {
        let mut c = chain(5);
        c.remove(1);
        assert_eq!(
            verify(&c, None).unwrap_err().to_string(),
            "audit record 2 is missing"
        );
    }

    #[test]
    fn reordering_records_is_detected() {
        let mut c = chain(5);
        // swap the contents of records 2 and 3, keeping the sequence column in order
        let (a, b) = (c[1].clone(), c[2].clone());
        c[1] = AuditRecord { seq: 2, ..b };
        c[2] = AuditRecord { seq: 3, ..a };
        let err = verify(&c, None).unwrap_err();
        assert_eq!(err.seq, 2);
    }

    #[test]
    fn truncating_the_end_is_detected_against_the_head() {
        let c = chain(5);
        let head = (5, c[4].hash.clone());
        let err = verify(&c[..3], Some((head.0, &head.1))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "audit records from 4 on are missing: the chain was truncated"
        );
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let mut every_byte = String::new();
        for c in (0u8..0x80).map(char::from) {
            every_byte.push(c);
        }
        for text in [
            "",
            "plain",
            "run_01a2301842a674f9ab297079c93d3f5c",
            "quote\"inside",
            "back\\slash",
            "tab\tnew\nline",
            "\u{1}\u{1f}",
            "del\u{7f}",
            "caf\u{e9} \u{1f600} \u{2028}",
            every_byte.as_str(),
        ] {
            let mut ours = Vec::new();
            write_str(text, &mut ours);
            assert_eq!(ours, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn chain_hash_header_is_the_canonical_json_of_the_header_object() {
        let record = NewRecord {
            at: Millis(1_700_000_000_123),
            kind: RecordKind::Call,
            run_id: "run_1".into(),
            call_id: Some("c\"1\u{e9}".into()),
            principal: None,
            agent: Some("agent/x".into()),
            tool: Some("p__t".into()),
            decision: Some("allow".into()),
            code: None,
            payload: "{}".into(),
        };
        let header = json!({
            "seq": 7, "at": record.at.0, "kind": record.kind.as_str(), "run_id": record.run_id,
            "call_id": record.call_id, "principal": record.principal, "agent": record.agent,
            "tool": record.tool, "decision": record.decision, "code": record.code,
        });
        let mut h = Sha256::new();
        h.update(b"prev\n");
        h.update(canonical_json(&header).as_bytes());
        h.update(b"\n{}");
        assert_eq!(record.chain_hash(7, "prev"), hex::encode(h.finalize()));
        // The borrowed view chains the same, and owning it again gives the record back.
        assert_eq!(
            record.view().chain_hash(7, "prev"),
            record.chain_hash(7, "prev")
        );
        assert_eq!(NewRecord::from(record.view()), record);
    }

    #[test]
    fn secret_keys_are_recognised_as_by_their_folded_form() {
        let by_copy = |key: &str| {
            let k = key.to_ascii_lowercase().replace('-', "_");
            SECRET_MARKERS.iter().any(|m| k.contains(m)) || k == "key" || k.ends_with("_key")
        };
        for key in [
            "key",
            "KEY",
            "Key",
            "ssh-key",
            "SSH_KEY",
            "monkey",
            "keys",
            "a_key",
            "a-KEY",
            "_key",
            "-key",
            "kEy-",
            "x",
            "",
            "api-key",
            "ApiKey",
            "X-Api-Key",
            "Authorization",
            "refresh_token",
            "tokens",
            "passwordHash",
            "private_data",
            "Cookie",
            "caf\u{e9}_key",
            "\u{e9}key",
            "credentials",
            "the-secret-sauce",
            "path",
            "query",
            "count",
        ] {
            assert_eq!(is_secret_key(key), by_copy(key), "{key}");
        }
    }

    #[test]
    fn a_canonical_object_is_the_canonical_json_of_the_object() {
        let nested = json!({"z": [1, {"b": 2, "a": null}], "a": "x\"y"});
        let text = CanonicalObject::new()
            .value("args", &nested)
            .field("count", &3u64)
            .field("missing", &None::<String>)
            .field("name", "caf\u{e9} \n")
            .field(
                "sorted",
                &std::collections::BTreeMap::from([("b", 1), ("a", 2)]),
            )
            .finish();
        let object = json!({
            "args": nested,
            "count": 3,
            "missing": null,
            "name": "caf\u{e9} \n",
            "sorted": {"a": 2, "b": 1},
        });
        assert_eq!(text, canonical_json(&object));
        assert_eq!(CanonicalObject::new().finish(), "{}");
    }

    #[test]
    fn to_hex_is_lowercase_hex() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(to_hex(&bytes), hex::encode(&bytes));
        assert_eq!(to_hex(&[0x0f, 0xa0]), "0fa0");
        assert_eq!(to_hex(&[]), "");
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let v = json!({"b": 1, "a": {"d": [1, {"f": 2, "e": 3}], "c": null}});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"c":null,"d":[1,{"e":3,"f":2}]},"b":1}"#
        );
    }

    #[test]
    fn secrets_are_redacted_and_long_values_cut() {
        let args = json!({"amount": 3, "apiKey": "s3cr3t", "Authorization": "Bearer x", "note": "y".repeat(300)});
        let Value::Object(m) = args else {
            unreachable!()
        };
        let r = redact(Some(&m));
        assert_eq!(r["amount"], json!(3));
        assert_eq!(r["apiKey"], json!("[redacted]"));
        assert_eq!(r["Authorization"], json!("[redacted]"));
        assert!(r["note"].as_str().unwrap().ends_with("…[300 chars]"));
    }
}
