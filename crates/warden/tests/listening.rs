//! FED-2: Warden keeps a `subscriptions/listen` stream open to each 2026-07-28 upstream for its
//! list changes, and opens it again when it ends — at a pace that slows when the upstream
//! keeps ending it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use tokio_util::sync::CancellationToken;
use warden_testkit::notes::{NotesServer, spawn_http};

/// An upstream that ends every listen stream as soon as it opens is asked again after pauses
/// that double (1 s, 2 s, 4 s …), not every second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_ends_every_listen_stream_at_once_is_asked_ever_less_often() {
    let shutdown = CancellationToken::new();
    let server = NotesServer::new(None).brief_listens(true);
    let addr = spawn_http(
        server.clone(),
        "127.0.0.1:0".parse().unwrap(),
        shutdown.clone(),
    )
    .await
    .unwrap();
    let _w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\nkind: Upstream\nname: web\nproject: alpha\n\
         http: {{ url: \"http://{addr}/mcp\" }}\n"
    ))
    .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.listens() == 0 {
        assert!(Instant::now() < deadline, "Warden never listened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Opened at 0 s, again at about 1 s and 3 s, next at about 7 s; every second would be
    // five times by 4.5 s.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    let listens = server.listens();
    assert!(
        (2..=3).contains(&listens),
        "{listens} listen streams opened in 4.5 s"
    );
    shutdown.cancel();
}
