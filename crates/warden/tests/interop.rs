//! Interop with the official MCP client SDKs (XPORT-3): the Python SDK (`mcp` from PyPI) and
//! the TypeScript SDK (`@modelcontextprotocol/sdk` from npm), over HTTP in both eras and over
//! `warden stdio`, through Warden to a real stdio upstream, against `warden serve` started as a
//! user starts it (a fresh embedded store, the printed admin token, the demo tool set).
//!
//! `tests/interop/run.sh` does the work; it installs the SDKs on first use (pinned versions).
//! `tests/interop/peers.sh` puts popular upstream servers behind Warden, era unpinned, for the
//! same SDKs and the MCP Inspector CLI.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::process::Command;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn run(sdks: &str) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-venv");
    let status = Command::new("bash")
        .arg(repo.join("tests/interop/run.sh"))
        .env("WARDEN_BIN", env!("CARGO_BIN_EXE_warden"))
        .env("FIXTURE_BIN", warden_testkit::fixture_bin())
        .env("INTEROP_PORT", free_port().to_string())
        .env("INTEROP_SDKS", sdks)
        .env("INTEROP_VENV", venv)
        .status()
        .expect("run tests/interop/run.sh");
    assert!(
        status.success(),
        "the {sdks} SDK interop checks failed (see the lines above)"
    );
}

#[test]
fn the_python_sdk_client_works_over_http_in_both_eras_and_over_stdio() {
    run("python");
}

#[test]
fn the_typescript_sdk_client_works_over_http_and_over_stdio() {
    run("ts");
}

#[test]
fn the_sdks_and_the_inspector_use_popular_upstreams_through_warden() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let status = Command::new("bash")
        .arg(repo.join("tests/interop/peers.sh"))
        .env("WARDEN_BIN", env!("CARGO_BIN_EXE_warden"))
        .env("FIXTURE_BIN", warden_testkit::fixture_bin())
        .env("INTEROP_PORT", free_port().to_string())
        .env("INTEROP_VENV", tmp.join("interop-venv"))
        .env("NODE22_PREFIX", tmp.join("node22"))
        .status()
        .expect("run tests/interop/peers.sh");
    assert!(
        status.success(),
        "a client failed against the popular upstreams (see the lines above)"
    );
}
