#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "test code")]

use super::*;
use crate::audit::checkpoint::{public_key, sign};
use crate::audit::{GENESIS_HASH, NewRecord, RecordKind};
use crate::time::Millis;

const SECRET: [u8; 32] = [7; 32];

/// Records 1..=n of a chain.
fn chain(n: i64) -> Vec<AuditRecord> {
    let mut prev = GENESIS_HASH.to_owned();
    (1..=n)
        .map(|seq| {
            let r = NewRecord {
                at: Millis(1_000 + seq),
                kind: RecordKind::Call,
                run_id: "run_1".into(),
                call_id: Some(format!("call_{seq}")),
                principal: Some("user:alice".into()),
                agent: None,
                tool: Some("ledger__refund".into()),
                decision: Some(if seq % 2 == 0 { "deny" } else { "allow" }.into()),
                code: None,
                payload: format!("{{\"n\":{seq}}}"),
            }
            .chain(seq, &prev);
            prev.clone_from(&r.hash);
            r
        })
        .collect()
}

fn checkpoint(r: &AuditRecord) -> String {
    checkpoint_line(&sign(&SECRET, "sto_1", r.seq, &r.hash, Millis(9_000)))
}

/// Records `from..=to` of `records` in `format`, with a checkpoint of the last one (and of the
/// one before the first, when it is not the chain's first).
fn export(records: &[AuditRecord], from: usize, to: usize, format: Format) -> Vec<String> {
    let mut lines = Vec::new();
    if from > 1 {
        lines.push(checkpoint(&records[from - 2]));
    }
    lines.extend(records[from - 1..to].iter().map(|r| record_line(r, format)));
    lines.push(checkpoint(&records[to - 1]));
    lines
}

fn check(lines: &[String]) -> Result<Verified, Problem> {
    verify(&lines.join("\n"), &public_key(&SECRET))
}

/// AUD-5: an export in either format verifies with the public key alone, whole or from the
/// middle of the chain.
#[test]
fn an_export_verifies_with_the_public_key_alone() {
    let records = chain(6);
    for format in [Format::Jsonl, Format::Ocsf] {
        let whole = check(&export(&records, 1, 6, format)).unwrap();
        assert_eq!((whole.records, whole.first, whole.last), (6, 1, 6));
        let part = check(&export(&records, 3, 5, format)).unwrap();
        assert_eq!(
            (part.records, part.first, part.last, part.checkpoints),
            (3, 3, 5, 2)
        );
    }
    let ocsf: Value = serde_json::from_str(&record_line(&records[1], Format::Ocsf)).unwrap();
    assert_eq!(ocsf["class_uid"], 6003);
    assert_eq!(ocsf["actor"]["user"]["name"], "user:alice");
    assert_eq!(ocsf["api"]["operation"], "ledger__refund");
    assert_eq!(ocsf["status"], "Failure");
}

/// Each way of tampering with an export is named, by its line where there is one.
#[test]
fn an_edited_removed_reordered_or_cut_line_is_named() {
    let records = chain(6);
    let good = export(&records, 1, 6, Format::Jsonl);
    let said = |lines: Vec<String>| check(&lines).unwrap_err().to_string();

    let mut edited = good.clone();
    edited[2] = edited[2].replace("{\\\"n\\\":3}", "{\\\"n\\\":4}");
    assert_ne!(edited, good);
    assert_eq!(
        said(edited),
        "line 3: audit record 3 does not match its hash: it was edited or moved"
    );

    let mut removed = good.clone();
    removed.remove(3);
    assert_eq!(said(removed), "line 4: audit record 4 is missing");

    let mut reordered = good.clone();
    reordered.swap(1, 2);
    assert_eq!(said(reordered), "line 2: audit record 2 is missing");

    let mut cut = good.clone();
    cut.remove(5);
    assert_eq!(
        said(cut),
        "line 6: the checkpoint of seq 6 signs records after the export's last (5): records 6..=6 were removed"
    );

    let mut unsigned_end = good.clone();
    unsigned_end.pop();
    assert!(said(unsigned_end).starts_with("no checkpoint signs the export's last record (6)"));

    let mut headless = export(&records, 3, 6, Format::Jsonl);
    headless.remove(0);
    assert!(said(headless).starts_with("nothing signs where the export starts"));

    let other = checkpoint_line(&sign(&[8; 32], "sto_1", 6, &records[5].hash, Millis(9_000)));
    let mut forged = good.clone();
    forged[6] = other;
    assert_eq!(
        said(forged),
        "line 7: the checkpoint of seq 6 is not signed by the trusted key"
    );

    let mut garbage = good;
    garbage[0] = "{not json".into();
    assert!(said(garbage).starts_with("line 1: not JSON"));
}
