//! Tests of the chain, the canonical form and redaction.

use serde_json::{Value, json};

use super::redact::{
    ArgumentsAudit, SECRET_MARKERS, SECRET_WORDS, is_secret_key, keep, sensitive_paths,
};
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
        let mut split = String::new();
        let mut previous: Option<char> = None;
        for c in key.chars() {
            if c.is_ascii_uppercase()
                && previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
            {
                split.push('_');
            }
            split.push(if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            });
            previous = Some(c);
        }
        SECRET_MARKERS.iter().any(|m| k.contains(m))
            || split.split('_').any(|w| SECRET_WORDS.contains(&w))
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
        "prompt",
        "system_prompt",
        "Bearer",
        "pwd",
        "userPwd",
        "session",
        "sessionId",
        "pin",
        "card_pin",
        "PIN",
        "pinned",
        "shipping",
        "ssn",
        "ssnNumber",
        "lessons",
        "otp",
        "keyword",
        "publicKey",
        "key2",
        "x2Key",
        "__",
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

#[test]
fn values_the_schema_marks_secret_are_never_kept_whatever_the_policy() {
    let schema = json!({"type": "object", "properties": {
        "user": {"type": "string"},
        "login": {"type": "string", "format": "password"},
        "nested": {"type": "object", "properties": {"hidden": {"type": "string", "writeOnly": true}}},
        "list": {"type": "array", "items": {"type": "object", "properties": {"code": {"writeOnly": true}}}}
    }});
    let Value::Object(schema) = schema else {
        unreachable!()
    };
    let mut paths = sensitive_paths(&schema);
    paths.sort();
    assert_eq!(
        paths,
        [
            vec!["list".to_owned(), "*".into(), "code".into()],
            vec!["login".to_owned()],
            vec!["nested".to_owned(), "hidden".into()],
        ]
    );
    let Value::Object(args) = json!({"user": "u", "login": "hunter2", "token": "t",
        "nested": {"hidden": "h", "seen": 1}, "list": [{"code": 1}, {"code": 2, "other": 3}]})
    else {
        unreachable!()
    };
    let full = keep(Some(&args), ArgumentsAudit::Full, &paths);
    assert_eq!(
        full,
        json!({"user": "u", "login": "[redacted]", "token": "t",
            "nested": {"hidden": "[redacted]", "seen": 1},
            "list": [{"code": "[redacted]"}, {"code": "[redacted]", "other": 3}]})
    );
    let redacted = keep(Some(&args), ArgumentsAudit::Redacted, &paths);
    assert_eq!(redacted["token"], "[redacted]");
    assert_eq!(redacted["login"], "[redacted]");
    assert_eq!(redacted["nested"]["hidden"], "[redacted]");
    assert_eq!(keep(Some(&args), ArgumentsAudit::Hash, &paths), Value::Null);
}
