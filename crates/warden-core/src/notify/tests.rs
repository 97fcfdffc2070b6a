//! NOTIFY-1: the events found in records, the bodies, the signature, the retries.

use serde_json::{Value, json};

use super::*;
use crate::audit::{AuditRecord, NewRecord, RecordKind, canonical_json};

fn record(
    seq: i64,
    kind: RecordKind,
    tool: &str,
    decision: Option<&str>,
    payload: Value,
) -> AuditRecord {
    AuditRecord {
        seq,
        record: NewRecord {
            at: Millis(1_700_000_000_000),
            kind,
            run_id: "run_1".into(),
            call_id: Some("c1".into()),
            principal: Some("user:alice".into()),
            agent: None,
            tool: Some(tool.into()),
            decision: decision.map(str::to_owned),
            code: None,
            payload: canonical_json(&payload),
        },
        prev_hash: String::new(),
        hash: String::new(),
    }
}

#[test]
fn a_parked_call_is_an_approval_parked_with_its_page_and_no_arguments() {
    let r = record(
        7,
        RecordKind::Decision,
        "ledger__refund",
        Some("park"),
        json!({"approval_id": "apr_1", "rule": "autonomy:supervised", "due_at": 1_700_000_600_000i64, "args": {"amount": 900}}),
    );
    let found = notices(&r);
    assert_eq!(found.len(), 1);
    let n = &found[0];
    assert_eq!(n.event, Event::ApprovalParked);
    assert_eq!(n.source, "seq:7");
    assert_eq!(n.page, "/approvals/apr_1");
    assert_eq!(n.approval(), Some("apr_1"));
    assert_eq!(n.subject["tool"], "ledger__refund");
    assert_eq!(n.subject["principal"], "user:alice");
    assert_eq!(n.subject["due_at"], "2023-11-14T22:23:20Z");
    assert!(!n.subject.contains_key("args"));
}

#[test]
fn decisions_kill_switches_and_held_tools_are_events_and_other_records_are_not() {
    let decided = record(
        8,
        RecordKind::Decision,
        "ledger__refund",
        Some("expire"),
        json!({"approval_id": "apr_1", "requester": "user:alice", "decider": "warden"}),
    );
    assert_eq!(notices(&decided)[0].event, Event::ApprovalDecided);
    assert_eq!(notices(&decided)[0].subject["decider"], "warden");

    let applied = record(
        9,
        RecordKind::Admin,
        "apply",
        None,
        json!({"resources": ["Project/p", "KillSwitch/tool:a__b", "KillSwitch/all"]}),
    );
    let pulled = notices(&applied);
    assert_eq!(
        pulled
            .iter()
            .map(|n| (n.event, n.source.as_str(), n.subject["key"].as_str()))
            .collect::<Vec<_>>(),
        [
            (Event::KillswitchPulled, "seq:9", Some("tool:a__b")),
            (Event::KillswitchPulled, "seq:9:1", Some("all")),
        ]
    );
    let deleted = record(
        10,
        RecordKind::Admin,
        "delete",
        None,
        json!({"resource": "KillSwitch/all"}),
    );
    assert_eq!(notices(&deleted)[0].event, Event::KillswitchReleased);
    let other = record(
        11,
        RecordKind::Admin,
        "delete",
        None,
        json!({"resource": "Project/p"}),
    );
    assert!(notices(&other).is_empty());

    let held = record(
        12,
        RecordKind::Admin,
        "tools.change",
        None,
        json!({"held": [{"upstream": "notes", "tool": "echo", "catalog": "notes__echo", "state": "changed"}]}),
    );
    let q = notices(&held);
    assert_eq!(q[0].event, Event::ToolQuarantined);
    assert_eq!(q[0].page, "/tools/changes/notes__echo");
    let warned = record(
        13,
        RecordKind::Admin,
        "tools.change",
        None,
        json!({"held": []}),
    );
    assert!(notices(&warned).is_empty());

    let allowed = record(14, RecordKind::Decision, "a__b", Some("allow"), json!({}));
    assert!(notices(&allowed).is_empty());
}

#[test]
fn the_signature_is_the_hmac_of_the_time_a_dot_and_the_body() {
    // Python: hmac.new(b'whsec', b'1700000000.{"a":1}', hashlib.sha256).hexdigest()
    assert_eq!(
        signature(b"whsec", 1_700_000_000, r#"{"a":1}"#),
        "t=1700000000,v1=8ad37ba156048ae0e0a5533c75cdf26fee88b07f93cb57ee4c80adb053012032"
    );
    assert_ne!(
        signature(b"other", 1_700_000_000, r#"{"a":1}"#),
        signature(b"whsec", 1_700_000_000, r#"{"a":1}"#)
    );
}

#[test]
fn a_delivery_id_is_the_same_for_one_event_and_notifier_only() {
    assert_eq!(delivery_id("pager", "seq:7"), delivery_id("pager", "seq:7"));
    assert_ne!(delivery_id("pager", "seq:7"), delivery_id("pager", "seq:8"));
    assert_ne!(delivery_id("pager", "seq:7"), delivery_id("chat", "seq:7"));
    assert_eq!(delivery_id("pager", "seq:7").len(), 4 + 24);
}

#[test]
fn bodies_carry_the_link_and_slack_gets_text_only() {
    let n = expiring(
        "apr_2",
        Millis(0),
        object(json!({"tool": "a__b", "principal": "user:bob", "due_at": "1970-01-01T00:10:00Z"})),
    );
    let json_body: Value =
        serde_json::from_str(&body(Format::Json, "dlv_x", &n, Some("https://w.example/"))).unwrap();
    assert_eq!(json_body["id"], "dlv_x");
    assert_eq!(json_body["event"], "approval.expiring");
    assert_eq!(json_body["link"], "https://w.example/approvals/apr_2");
    assert_eq!(json_body["subject"]["approval"], "apr_2");
    let slack: Value =
        serde_json::from_str(&body(Format::Slack, "dlv_x", &n, Some("https://w.example"))).unwrap();
    assert_eq!(
        slack,
        json!({"text": "approval apr_2 of `a__b` by user:bob expires at 1970-01-01T00:10:00Z undecided <https://w.example/approvals/apr_2|Open in Warden>"})
    );
}

#[test]
fn retries_double_from_a_second_up_to_ten_minutes_for_about_an_hour() {
    let waits: Vec<u64> = (1..=MOST_ATTEMPTS)
        .filter_map(retry_after)
        .map(|d| d.as_secs())
        .collect();
    assert_eq!(
        waits,
        [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600, 600, 600]
    );
    let total: u64 = waits.iter().sum();
    assert!((3000..4000).contains(&total), "{total}");
    assert_eq!(retry_after(MOST_ATTEMPTS), None);
    assert_eq!(expiring_from(Millis(0), Millis(1000)), Millis(750));
}
