//! The store contract of archiving (AUD-6) on every backend `warden_testkit::stores()`
//! provides: the cut set once per seq with its record, the records through it removed past the
//! append-only triggers, and the chain verified from the cut.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use warden_core::audit::{NewRecord, RecordKind};
use warden_core::time::Millis;
use warden_store::{AuditFilter, AuditKey, StoreError};
use warden_testkit::stores;

fn record(i: usize) -> NewRecord {
    NewRecord {
        at: Millis(1_800_000_000_000 + i as i64),
        kind: RecordKind::Call,
        run_id: format!("r{i}"),
        call_id: None,
        principal: Some("user:a".into()),
        agent: None,
        tool: Some("a__b".into()),
        decision: None,
        code: None,
        payload: "{}".into(),
    }
}

#[tokio::test]
async fn records_through_a_cut_are_removed_and_the_chain_verifies_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let key = AuditKey::load_or_create(&dir.path().join("audit.key")).unwrap();
    for s in stores().await {
        let st = &s.store;
        st.append_audit((0..25).map(record).collect())
            .await
            .unwrap();
        let head = st.audit_head().await.unwrap();
        let tenth = st
            .audit(&AuditFilter {
                after_seq: Some(9),
                limit: Some(1),
                ..AuditFilter::default()
            })
            .await
            .unwrap()
            .remove(0);
        let cut = key.sign(&st.id().await.unwrap(), tenth.seq, &tenth.hash, Millis(0));
        let details = serde_json::json!({"through": cut.seq, "hash": cut.hash});
        st.set_audit_cut(cut.clone(), "user:admin", details.clone(), Millis(1))
            .await
            .unwrap();
        // The same cut, or an earlier one, again: refused.
        let again = st
            .set_audit_cut(cut.clone(), "user:admin", details, Millis(2))
            .await;
        assert!(
            matches!(again, Err(StoreError::Conflict(_))),
            "{}: {again:?}",
            s.name
        );
        assert_eq!(
            st.audit_cut().await.unwrap(),
            Some(cut.clone()),
            "{}",
            s.name
        );
        assert_eq!(st.remove_archived().await.unwrap(), 10, "{}", s.name);
        let left = st.audit(&AuditFilter::default()).await.unwrap();
        assert_eq!(left.first().map(|r| r.seq), Some(11), "{}", s.name);
        // The records after the cut and the cut's own record verify.
        assert_eq!(
            st.verify_audit().await.unwrap(),
            Ok(head + 1 - 10),
            "{}",
            s.name
        );
        // Appends go on after the removal: the triggers are back.
        st.append_audit(vec![record(99)]).await.unwrap();
        assert_eq!(
            st.verify_audit().await.unwrap(),
            Ok(head + 2 - 10),
            "{}",
            s.name
        );
    }
}
