//! The store contract of notifications (NOTIFY-1) on every backend `warden_testkit::stores()`
//! provides: the cursor moved by one replica only, deliveries found twice kept once, claimed by
//! one replica, their attempts recorded and summed up by notifier.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use warden_core::audit::{NewRecord, RecordKind};
use warden_core::time::Millis;
use warden_store::{Attempt, DeliveryStatus, NewDelivery};
use warden_testkit::stores;

const NOW: i64 = 1_800_000_000_000;

fn record(kind: RecordKind, tool: &str, decision: Option<&str>) -> NewRecord {
    NewRecord {
        at: Millis(NOW),
        kind,
        run_id: "r".into(),
        call_id: None,
        principal: Some("user:a".into()),
        agent: None,
        tool: Some(tool.into()),
        decision: decision.map(str::to_owned),
        code: None,
        payload: "{}".into(),
    }
}

fn delivery(id: &str) -> NewDelivery {
    NewDelivery {
        id: id.into(),
        notifier: "pager".into(),
        event: "killswitch.pulled".into(),
        body: format!("{{\"id\":\"{id}\"}}"),
        created_at: Millis(NOW),
    }
}

#[tokio::test]
async fn events_are_found_once_claimed_once_and_their_attempts_kept() {
    for s in stores().await {
        let st = &s.store;
        // A new store reads its trail from the start.
        assert_eq!(st.notify_cursor().await.unwrap(), Some(0), "{}", s.name);
        st.append_audit(vec![
            record(RecordKind::Call, "a__b", None),
            record(RecordKind::Decision, "a__b", Some("allow")),
            record(RecordKind::Admin, "apply", None),
            record(RecordKind::Decision, "a__b", Some("park")),
        ])
        .await
        .unwrap();
        // A serving store inserts what it spooled a moment later; read once it has.
        assert_eq!(st.audit_head().await.unwrap(), 4, "{}", s.name);
        let head = st.audit_inserted_head().await.unwrap();
        assert_eq!(head, 4, "{}", s.name);
        let notable: Vec<i64> = st
            .notable_records(0, head, 10)
            .await
            .unwrap()
            .iter()
            .map(|r| r.seq)
            .collect();
        assert_eq!(notable, [3, 4], "{}: calls' records are skipped", s.name);

        // Two replicas find the same events: the first moves the cursor, the second nothing.
        let found = [delivery("dlv_1"), delivery("dlv_2")];
        assert!(
            st.enqueue_notifications(&found, Some((Some(0), head)))
                .await
                .unwrap()
        );
        assert!(
            !st.enqueue_notifications(&found, Some((Some(0), head)))
                .await
                .unwrap()
        );
        assert_eq!(st.notify_cursor().await.unwrap(), Some(head), "{}", s.name);
        // Found again without a cursor (an expiring approval): kept once.
        st.enqueue_notifications(&found, None).await.unwrap();
        let due = st.due_deliveries(Millis(NOW), 10).await.unwrap();
        assert_eq!(due.len(), 2, "{}", s.name);
        assert_eq!(due[0].status, DeliveryStatus::Pending);

        // One replica claims a delivery; the other cannot, and does not see it due.
        let until = Millis(NOW + 60_000);
        let claimed = st
            .claim_delivery("dlv_1", Millis(NOW), until)
            .await
            .unwrap();
        assert_eq!(claimed.map(|d| d.attempts), Some(0), "{}", s.name);
        let again = st
            .claim_delivery("dlv_1", Millis(NOW), until)
            .await
            .unwrap();
        assert!(again.is_none(), "{}", s.name);
        let due: Vec<String> = st
            .due_deliveries(Millis(NOW), 10)
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.id)
            .collect();
        assert_eq!(due, ["dlv_2"], "{}", s.name);

        // A failed attempt: due again later, not now.
        let failed = Attempt {
            at: Millis(NOW + 10),
            status: DeliveryStatus::Pending,
            next_at: Millis(NOW + 1010),
            error: Some("the receiver answered 500".into()),
        };
        st.finish_delivery("dlv_1", &failed).await.unwrap();
        assert!(
            st.due_deliveries(Millis(NOW + 500), 10)
                .await
                .unwrap()
                .iter()
                .all(|d| d.id != "dlv_1")
        );
        let again = st.due_deliveries(Millis(NOW + 1010), 10).await.unwrap();
        let d1 = again.iter().find(|d| d.id == "dlv_1").unwrap();
        assert_eq!(d1.attempts, 1, "{}", s.name);

        // Delivered at the second attempt: the failure is still shown.
        // Not before its next attempt is due, even unclaimed.
        let early = st
            .claim_delivery("dlv_1", Millis(NOW + 500), until)
            .await
            .unwrap();
        assert!(early.is_none(), "{}", s.name);
        let claimed = st
            .claim_delivery("dlv_1", Millis(NOW + 1010), until)
            .await
            .unwrap();
        assert_eq!(claimed.map(|d| d.attempts), Some(1), "{}", s.name);
        let delivered = Attempt {
            at: Millis(NOW + 1020),
            status: DeliveryStatus::Delivered,
            next_at: Millis(NOW + 1020),
            error: None,
        };
        st.finish_delivery("dlv_1", &delivered).await.unwrap();
        let summary = st.notifier_deliveries().await.unwrap();
        let pager = &summary["pager"];
        assert_eq!(
            (pager.delivered, pager.pending, pager.failed),
            (1, 1, 0),
            "{}",
            s.name
        );
        assert_eq!(pager.last_delivered_at, Some(Millis(NOW + 1020)));
        assert_eq!(pager.last_failures.len(), 1, "{}", s.name);
        let f = &pager.last_failures[0];
        assert_eq!(
            (f.id.as_str(), f.attempts, f.status),
            ("dlv_1", 2, DeliveryStatus::Delivered)
        );
        assert_eq!(f.last_error.as_deref(), Some("the receiver answered 500"));
    }
}
