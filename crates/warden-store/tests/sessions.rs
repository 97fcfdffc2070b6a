//! The store contract of 2025-11-25 MCP sessions kept for every replica (STORE-3), on every
//! backend `warden_testkit::stores()` provides.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use warden_core::time::Millis;
use warden_store::McpSession;
use warden_testkit::stores;

const NOW: i64 = 1_800_000_000_000;

#[tokio::test]
async fn a_session_is_served_once_it_has_its_owner_and_its_state_in_either_order() {
    for s in stores().await {
        let st = &s.store;
        // State first (as the transport writes it), then the owner.
        st.put_mcp_session_state("a", r#"{"p":1}"#, Millis(NOW))
            .await
            .unwrap();
        assert_eq!(st.mcp_session("a").await.unwrap(), None, "{}", s.name);
        assert!(
            st.put_mcp_session_owner("a", "tok_1", Some("bot"), Millis(NOW + 1))
                .await
                .unwrap()
        );
        assert_eq!(
            st.mcp_session("a").await.unwrap(),
            Some(McpSession {
                id: "a".into(),
                credential: "tok_1".into(),
                agent: Some("bot".into()),
                state: r#"{"p":1}"#.into(),
                created_at: Millis(NOW),
                seen_at: Millis(NOW),
            }),
            "{}",
            s.name
        );
        // Owner first, then the state.
        assert!(
            st.put_mcp_session_owner("b", "tok_2", None, Millis(NOW))
                .await
                .unwrap()
        );
        assert_eq!(st.mcp_session("b").await.unwrap(), None, "{}", s.name);
        st.put_mcp_session_state("b", "{}", Millis(NOW + 5))
            .await
            .unwrap();
        let b = st.mcp_session("b").await.unwrap().unwrap();
        assert_eq!((b.credential.as_str(), b.agent), ("tok_2", None));
        assert_eq!(st.mcp_session("nobody").await.unwrap(), None);
    }
}

#[tokio::test]
async fn an_owner_is_set_once_and_never_taken_over() {
    for s in stores().await {
        let st = &s.store;
        assert!(
            st.put_mcp_session_owner("a", "tok_1", None, Millis(NOW))
                .await
                .unwrap()
        );
        assert!(
            !st.put_mcp_session_owner("a", "tok_evil", Some("x"), Millis(NOW))
                .await
                .unwrap(),
            "{}",
            s.name
        );
        st.put_mcp_session_state("a", "{}", Millis(NOW))
            .await
            .unwrap();
        let a = st.mcp_session("a").await.unwrap().unwrap();
        assert_eq!((a.credential.as_str(), a.agent), ("tok_1", None));
    }
}

#[tokio::test]
async fn sessions_are_touched_deleted_and_expired() {
    for s in stores().await {
        let st = &s.store;
        for id in ["old", "used", "ended"] {
            st.put_mcp_session_owner(id, "tok_1", None, Millis(NOW))
                .await
                .unwrap();
            st.put_mcp_session_state(id, "{}", Millis(NOW))
                .await
                .unwrap();
        }
        assert!(
            st.touch_mcp_session("used", Millis(NOW + 60_000))
                .await
                .unwrap()
        );
        // A touch older than the last one changes nothing, and finds the session.
        assert!(st.touch_mcp_session("used", Millis(NOW)).await.unwrap());
        assert!(!st.touch_mcp_session("nobody", Millis(NOW)).await.unwrap());
        assert!(st.delete_mcp_session("ended").await.unwrap());
        assert!(!st.delete_mcp_session("ended").await.unwrap());
        assert!(
            !st.touch_mcp_session("ended", Millis(NOW + 1))
                .await
                .unwrap()
        );
        assert_eq!(
            st.expire_mcp_sessions(Millis(NOW + 30_000)).await.unwrap(),
            1,
            "{}",
            s.name
        );
        assert_eq!(st.mcp_session("old").await.unwrap(), None);
        assert_eq!(
            st.mcp_session("used").await.unwrap().unwrap().seen_at,
            Millis(NOW + 60_000)
        );
    }
}
