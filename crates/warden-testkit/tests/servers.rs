//! The `warden_fixture` binary serves the fixtures as other tests start it, and
//! `fixture_bin()` finds it where `cargo test` builds it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::io::BufRead as _;
use std::path::PathBuf;

use rmcp::ServiceExt as _;
use rmcp::transport::TokioChildProcess;

const FIXTURE: &str = env!("CARGO_BIN_EXE_warden_fixture");

#[test]
fn fixture_bin_finds_the_binary_cargo_built() {
    assert_eq!(warden_testkit::fixture_bin(), PathBuf::from(FIXTURE));
}

#[tokio::test]
async fn the_notes_fixture_serves_its_tools_over_stdio() {
    let mut cmd = tokio::process::Command::new(FIXTURE);
    cmd.args(["notes", "--stdio"]);
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "list_notes",
            "add_note",
            "delete_note",
            "echo",
            "locate",
            "add",
            "slow",
            "call_count",
            "cancellations",
            "ask",
            "sample",
            "progress",
            "ask_briefly",
            "end_streams",
            "publish"
        ]
    );
    client.cancel().await.unwrap();
}

#[test]
fn the_conformance_fixture_prints_its_url_when_it_listens() {
    let mut child = std::process::Command::new(FIXTURE)
        .args(["conformance", "--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        line.starts_with("mcp: http://127.0.0.1:") && line.trim_end().ends_with("/mcp"),
        "{line:?}"
    );
}
