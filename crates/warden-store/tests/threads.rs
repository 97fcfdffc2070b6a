//! The store contract of agent chat threads (RUN-9) and their ownership (RUN-7), on every
//! backend `warden_testkit::stores()` provides.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::sync::Arc;

use warden_core::time::Millis;
use warden_store::{MessageRole, Store, Thread, ThreadMessage};
use warden_testkit::stores;

const NOW: i64 = 1_800_000_000_000;
const ALICE: &str = "user:alice";
const BOB: &str = "user:bob";

fn thread(id: &str, owner: &str, at: i64) -> Thread {
    Thread {
        id: id.into(),
        agent: "helper".into(),
        owner: owner.into(),
        run_id: format!("run_{id}"),
        title: "What is owed?".into(),
        created_at: Millis(at),
        updated_at: Millis(at),
    }
}

#[tokio::test]
async fn messages_are_numbered_in_order_and_kept_with_their_calls() {
    for s in stores().await {
        let st = &s.store;
        st.insert_thread(&thread("thr_a", ALICE, NOW))
            .await
            .unwrap();
        let asked = ThreadMessage::new(MessageRole::User, "What is owed?", Millis(NOW));
        let mut answered = ThreadMessage::new(MessageRole::Assistant, "", Millis(NOW + 1));
        answered.tool_calls =
            Some(r#"[{"id":"c1","name":"ledger__balance","arguments":"{}"}]"#.into());
        let seqs = st
            .append_thread_messages("thr_a", ALICE, &[asked, answered], Millis(NOW + 1))
            .await
            .unwrap();
        assert_eq!(seqs, Some(vec![1, 2]), "{}", s.name);
        let mut result = ThreadMessage::new(MessageRole::Tool, "42", Millis(NOW + 2));
        result.tool_call_id = Some("c1".into());
        result.call_id = Some("call_1".into());
        result.decision = Some("executed".into());
        let seqs = st
            .append_thread_messages("thr_a", ALICE, &[result.clone()], Millis(NOW + 2))
            .await
            .unwrap();
        assert_eq!(seqs, Some(vec![3]));
        let messages = st.thread_messages("thr_a", ALICE).await.unwrap();
        assert_eq!(
            messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(messages[2], ThreadMessage { seq: 3, ..result });
        assert!(
            messages[1]
                .tool_calls
                .as_deref()
                .unwrap()
                .contains("ledger__balance")
        );
        let kept = st.thread("thr_a", ALICE).await.unwrap().unwrap();
        assert_eq!(
            kept.updated_at,
            Millis(NOW + 2),
            "used when a message was added"
        );
        assert_eq!(kept.run_id, "run_thr_a");
        s.cleanup().await;
    }
}

/// RUN-7: to anyone but its owner a thread is exactly one that does not exist.
#[tokio::test]
async fn another_principals_thread_is_as_one_that_does_not_exist() {
    for s in stores().await {
        let st = &s.store;
        st.insert_thread(&thread("thr_a", ALICE, NOW))
            .await
            .unwrap();
        let hello = ThreadMessage::new(MessageRole::User, "hello", Millis(NOW));
        st.append_thread_messages("thr_a", ALICE, std::slice::from_ref(&hello), Millis(NOW))
            .await
            .unwrap();
        for id in ["thr_a", "thr_made_up"] {
            assert_eq!(st.thread(id, BOB).await.unwrap(), None, "{}", s.name);
            assert!(st.thread_messages(id, BOB).await.unwrap().is_empty());
            assert_eq!(
                st.append_thread_messages(id, BOB, std::slice::from_ref(&hello), Millis(NOW))
                    .await
                    .unwrap(),
                None
            );
            assert!(!st.delete_thread(id, BOB).await.unwrap());
        }
        assert!(st.threads(BOB, None, 10).await.unwrap().is_empty());
        // Alice's is as it was.
        assert_eq!(st.thread_messages("thr_a", ALICE).await.unwrap().len(), 1);
        assert_eq!(st.threads(ALICE, None, 10).await.unwrap().len(), 1);
        assert!(st.delete_thread("thr_a", ALICE).await.unwrap());
        assert!(st.thread_messages("thr_a", ALICE).await.unwrap().is_empty());
        assert_eq!(st.thread("thr_a", ALICE).await.unwrap(), None);
        assert!(!st.delete_thread("thr_a", ALICE).await.unwrap());
        s.cleanup().await;
    }
}

#[tokio::test]
async fn threads_list_the_last_used_first_by_agent() {
    for s in stores().await {
        let st = &s.store;
        st.insert_thread(&thread("thr_1", ALICE, NOW))
            .await
            .unwrap();
        st.insert_thread(&thread("thr_2", ALICE, NOW + 1))
            .await
            .unwrap();
        let mut other = thread("thr_3", ALICE, NOW + 2);
        other.agent = "analyst".into();
        st.insert_thread(&other).await.unwrap();
        let note = ThreadMessage::new(MessageRole::User, "again", Millis(NOW + 5));
        st.append_thread_messages("thr_1", ALICE, &[note], Millis(NOW + 5))
            .await
            .unwrap();
        let ids = |ts: Vec<Thread>| ts.into_iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(
            ids(st.threads(ALICE, None, 10).await.unwrap()),
            ["thr_1", "thr_3", "thr_2"],
            "{}",
            s.name
        );
        assert_eq!(
            ids(st.threads(ALICE, Some("helper"), 10).await.unwrap()),
            ["thr_1", "thr_2"]
        );
        assert_eq!(ids(st.threads(ALICE, None, 1).await.unwrap()), ["thr_1"]);
        s.cleanup().await;
    }
}

/// Appends racing on one thread (two replicas answering its owner at once) never share a
/// number and lose nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_appends_get_distinct_numbers() {
    for s in stores().await {
        s.store
            .insert_thread(&thread("thr_r", ALICE, NOW))
            .await
            .unwrap();
        // Two handles on one database, as two replicas hold.
        let handles = [
            Arc::new(Store::open(&s.location).await.unwrap()),
            Arc::new(Store::open(&s.location).await.unwrap()),
        ];
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let st = handles[i % 2].clone();
                tokio::spawn(async move {
                    let m = ThreadMessage::new(MessageRole::User, format!("m{i}"), Millis(NOW));
                    st.append_thread_messages("thr_r", ALICE, &[m.clone(), m], Millis(NOW))
                        .await
                        .unwrap()
                        .unwrap()
                })
            })
            .collect();
        let mut seqs = Vec::new();
        for t in tasks {
            seqs.extend(t.await.unwrap());
        }
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=16).collect::<Vec<i64>>(), "{}", s.name);
        assert_eq!(
            s.store.thread_messages("thr_r", ALICE).await.unwrap().len(),
            16
        );
        s.cleanup().await;
    }
}
