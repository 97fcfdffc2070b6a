//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, server scenarios,
//! `--suite all`) against Warden in front of the conformance fixture, and against the fixture
//! alone: every scenario must get the same verdict both ways (XPORT-4).
//!
//! `tests/conformance/run.sh both` does the work; it installs the pinned suite (and Node 22,
//! which the suite needs, when the machine has an older one) on first use.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::process::Command;

#[test]
fn the_conformance_suite_passes_through_warden_exactly_as_against_the_fixture() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let status = Command::new("bash")
        .arg(repo.join("tests/conformance/run.sh"))
        .arg("both")
        .env("WARDEN_BIN", env!("CARGO_BIN_EXE_warden"))
        .env("FIXTURE_BIN", warden_testkit::fixture_bin())
        .env("NODE22_PREFIX", tmp.join("node22"))
        .status()
        .expect("run tests/conformance/run.sh");
    assert!(
        status.success(),
        "the conformance suite failed or its verdicts differ (see the lines above)"
    );
}
