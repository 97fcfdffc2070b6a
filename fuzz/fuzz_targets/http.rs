//! The MCP endpoint's request parsing (REL-1), through the listener's one door: bearer and MCP
//! headers, the inline fast path's JSON-RPC parser, the session screening and rmcp's parser
//! behind them. The input's first byte chooses the headers (era, method, token, session), the
//! rest is the body. Every request must be answered — never a panic or a hang.
#![no_main]

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use libfuzzer_sys::fuzz_target;
use tower::ServiceExt as _;

struct Server {
    runtime: tokio::runtime::Runtime,
    door: warden_server::ListenerService,
    token: String,
    _dir: tempfile::TempDir,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let dir = tempfile::tempdir().expect("a data directory");
        let (door, token) = runtime.block_on(async {
            let location = warden_store::Location::DataDir(dir.path().to_path_buf());
            let store = Arc::new(warden_store::Store::open(&location).await.expect("a store"));
            let admin = store
                .bootstrap(warden_core::time::Millis(1_800_000_000_000))
                .await
                .expect("bootstrap")
                .expect("a new store")
                .secret;
            let gateway =
                warden_mcp::Gateway::start(store, warden_mcp::GatewayOptions::default()).await;
            let addr: std::net::SocketAddr = "127.0.0.1:8600".parse().expect("an address");
            let hosts = warden_server::HostPolicy::for_listener(addr, &[], &[]).expect("hosts");
            let state = Arc::new(warden_server::AppState::new(gateway, hosts));
            (
                warden_server::ListenerService::new(
                    state,
                    tokio_util::sync::CancellationToken::new(),
                ),
                admin,
            )
        });
        Server {
            runtime,
            door,
            token,
            _dir: dir,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, body)) = data.split_first() else {
        return;
    };
    let s = server();
    let mut request = http::Request::builder()
        .method(if choice & 0x80 == 0 { "POST" } else { "DELETE" })
        .uri("/mcp")
        .header("host", "127.0.0.1:8600")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    request = match choice & 0x3 {
        0 => request.header("authorization", format!("Bearer {}", s.token)),
        1 => request.header("authorization", "Bearer wdn_0000"),
        2 => request.header("authorization", body.get(..16).unwrap_or(body)),
        _ => request,
    };
    if choice & 0x4 == 0 {
        request = request
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "warden__whoami");
    } else {
        request = request.header("mcp-protocol-version", "2025-11-25");
    }
    if choice & 0x8 != 0 {
        request = request.header("mcp-session-id", "fuzzed-session");
    }
    let Ok(request) = request.body(Body::from(body.to_vec())) else {
        return;
    };
    let door = s.door.clone();
    let _ = s.runtime.block_on(async move {
        tokio::time::timeout(std::time::Duration::from_secs(5), door.oneshot(request)).await
    });
});
