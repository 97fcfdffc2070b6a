//! The official MCP conformance suites (`@modelcontextprotocol/conformance` 0.1.16 and
//! 0.2.0-alpha.12, server scenarios) against Warden in front of the conformance fixture, and
//! against the fixture alone: every scenario that passes against the fixture must pass through
//! Warden (XPORT-4) — with the fixture's era negotiated, as a user gets by default, and pinned
//! to 2025-11-25.
//!
//! The fixture runs in two ways: as it is (its tools ask a 2026-07-28 client with
//! `input_required`), and as a server written before 2026-07-28 (`--asks-on-session`: its
//! tools ask only through a session's peer, and it knows no `subscriptions/listen`), which
//! Warden must reach in the client's era for what it asks to reach that client. That one runs
//! unpinned only: the default is what must pass.
//!
//! `tests/conformance/run.sh both` does the work; it installs the pinned suites (and Node 22,
//! which they need, when the machine has an older one) on first use. The suites run one at a
//! time: they measure timing-sensitive behaviour (SSE polling, progress) on two cores.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::process::Command;
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The 2026-07-28 scenarios that pass against the fixture and not yet through Warden, by the
/// upstream's pin (`PIN SCENARIO`), with the reason. docs/mcp.md lists them as limits.
const KNOWN_GAPS_2026: &str = "\
2025-11-25 input-required-result-basic-elicitation
";

/// `run.sh both` for `suite` with `args`, the fixture started with `fixture_args`, each
/// upstream pin of `pins` in turn.
fn both(suite: &str, args: &[&str], fixture_args: &str, pins: &str, known_gaps: &str) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let status = Command::new("bash")
        .arg(repo.join("tests/conformance/run.sh"))
        .arg("both")
        .args(args)
        .env("SUITE", suite)
        .env("PINS", pins)
        .env("FIXTURE_ARGS", fixture_args)
        .env("KNOWN_GAPS", known_gaps)
        .env("WARDEN_BIN", env!("CARGO_BIN_EXE_warden"))
        .env("FIXTURE_BIN", warden_testkit::fixture_bin())
        .env("NODE22_PREFIX", tmp.join("node22"))
        .status()
        .expect("run tests/conformance/run.sh");
    assert!(
        status.success(),
        "conformance {suite} {args:?} (fixture {fixture_args:?}): a scenario that passes against the fixture failed through Warden (see the lines above)"
    );
}

/// The upstream pins of the fixture as it is: negotiated, and 2025-11-25.
const PINS: &str = "unpinned 2025-11-25";
/// The fixture as a server that asks only through a session's peer.
const ON_SESSION: &str = "--asks-on-session";

#[test]
fn conformance_0_1_16_passes_through_warden_as_against_the_fixture() {
    both("0.1.16", &["--suite", "all"], "", PINS, "");
}

#[test]
fn conformance_0_2_0_for_2025_11_25_passes_through_warden_as_against_the_fixture() {
    both(
        "0.2.0-alpha.12",
        &["--requirements", "2025-11-25"],
        "",
        PINS,
        "",
    );
}

#[test]
fn conformance_0_2_0_for_2026_07_28_passes_through_warden_but_its_known_gaps() {
    both(
        "0.2.0-alpha.12",
        &["--requirements", "2026-07-28"],
        "",
        PINS,
        KNOWN_GAPS_2026,
    );
}

/// XPORT-1, XPORT-4: a 2025-11-25 client is asked what a server that asks on its session
/// asks, and subscribes with `resources/subscribe`, through Warden as without it.
#[test]
fn conformance_0_1_16_passes_through_warden_as_against_a_server_asking_on_its_session() {
    both("0.1.16", &["--suite", "all"], ON_SESSION, "unpinned", "");
}

#[test]
fn conformance_0_2_0_for_2025_11_25_passes_through_warden_as_against_a_server_asking_on_its_session()
 {
    both(
        "0.2.0-alpha.12",
        &["--requirements", "2025-11-25"],
        ON_SESSION,
        "unpinned",
        "",
    );
}

#[test]
fn conformance_0_2_0_for_2026_07_28_passes_through_warden_as_against_a_server_asking_on_its_session()
 {
    both(
        "0.2.0-alpha.12",
        &["--requirements", "2026-07-28"],
        ON_SESSION,
        "unpinned",
        "",
    );
}
