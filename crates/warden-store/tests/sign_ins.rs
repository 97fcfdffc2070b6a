//! The store contract of console sign-ins kept for every replica (STORE-3, OPS-5), on every
//! backend `warden_testkit::stores()` provides.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use warden_core::time::Millis;
use warden_store::{SignIn, SignInNote};
use warden_testkit::stores;

const NOW: i64 = 1_800_000_000_000;

fn sign_in(hash: &str, credential: &str, at: i64) -> SignIn {
    SignIn {
        id_hash: hash.into(),
        credential: credential.into(),
        csrf: format!("csrf-{hash}"),
        opened_at: Millis(at),
        seen_at: Millis(at),
        flash: None,
        new_token: None,
        ended: None,
    }
}

#[tokio::test]
async fn a_sign_in_is_read_back_touched_and_deleted() {
    for s in stores().await {
        let st = &s.store;
        let a = sign_in("a", "tok_1", NOW);
        st.insert_sign_in(&a).await.unwrap();
        assert_eq!(st.sign_in("a").await.unwrap(), Some(a), "{}", s.name);
        assert_eq!(st.sign_in("b").await.unwrap(), None, "{}", s.name);
        // Touched only when its last use is older than the step.
        st.touch_sign_in("a", Millis(NOW + 10), Millis(NOW))
            .await
            .unwrap();
        assert_eq!(st.sign_in("a").await.unwrap().unwrap().seen_at, Millis(NOW));
        st.touch_sign_in("a", Millis(NOW + 70), Millis(NOW + 1))
            .await
            .unwrap();
        assert_eq!(
            st.sign_in("a").await.unwrap().unwrap().seen_at,
            Millis(NOW + 70)
        );
        assert!(st.delete_sign_in("a").await.unwrap(), "{}", s.name);
        assert!(!st.delete_sign_in("a").await.unwrap(), "{}", s.name);
        assert_eq!(st.sign_in("a").await.unwrap(), None, "{}", s.name);
    }
}

#[tokio::test]
async fn a_note_is_taken_once_whoever_reads_it() {
    for s in stores().await {
        let st = &s.store;
        st.insert_sign_in(&sign_in("a", "tok_1", NOW))
            .await
            .unwrap();
        assert!(
            !st.set_sign_in_note("zz", SignInNote::Flash, "x")
                .await
                .unwrap()
        );
        for note in [SignInNote::Flash, SignInNote::NewToken] {
            assert!(st.set_sign_in_note("a", note, "hello").await.unwrap());
            // Two readers saw "hello": one takes it.
            assert!(
                st.take_sign_in_note("a", note, "hello").await.unwrap(),
                "{}",
                s.name
            );
            assert!(
                !st.take_sign_in_note("a", note, "hello").await.unwrap(),
                "{}",
                s.name
            );
        }
        let read = st.sign_in("a").await.unwrap().unwrap();
        assert_eq!((read.flash, read.new_token), (None, None), "{}", s.name);
        st.set_sign_in_note("a", SignInNote::Ended, "revoked")
            .await
            .unwrap();
        assert_eq!(
            st.sign_in("a").await.unwrap().unwrap().ended.as_deref(),
            Some("revoked"),
            "{}",
            s.name
        );
    }
}

#[tokio::test]
async fn counts_leave_out_ended_and_old_sign_ins_and_expiry_deletes_them() {
    for s in stores().await {
        let st = &s.store;
        st.insert_sign_in(&sign_in("a", "tok_1", NOW))
            .await
            .unwrap();
        st.insert_sign_in(&sign_in("b", "tok_1", NOW))
            .await
            .unwrap();
        st.insert_sign_in(&sign_in("c", "tok_2", NOW))
            .await
            .unwrap();
        st.insert_sign_in(&sign_in("old", "tok_2", NOW - 1_000))
            .await
            .unwrap();
        st.set_sign_in_note("c", SignInNote::Ended, "revoked")
            .await
            .unwrap();
        let counts = st
            .count_sign_ins(Millis(NOW - 10), Millis(NOW - 10))
            .await
            .unwrap();
        assert_eq!(counts.get("tok_1"), Some(&2), "{}", s.name);
        assert_eq!(counts.get("tok_2"), None, "{}", s.name);
        assert_eq!(
            st.expire_sign_ins(Millis(NOW - 10), Millis(NOW - 10))
                .await
                .unwrap(),
            1,
            "{}",
            s.name
        );
        assert_eq!(st.sign_in("old").await.unwrap(), None, "{}", s.name);
        assert!(st.sign_in("a").await.unwrap().is_some(), "{}", s.name);
    }
}
