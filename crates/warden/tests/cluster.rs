//! A real cluster (STORE-3): three `warden serve` replicas on one PostgreSQL database behind
//! HAProxy, round-robin without stickiness. The official Python and TypeScript SDK clients
//! complete sessions through it in both eras, a replica is killed with `kill -9` under 64
//! writers and nothing acknowledged is lost, and `warden audit verify` raises no false alarm
//! while the replicas append. `tests/cluster/cluster.sh` does the work and prints its figures.
//!
//! Needs `WARDEN_TEST_POSTGRES_URL` (prints `postgres: skipped` without it, as the store
//! contract does) and Debian's `haproxy`, which `.ci/run` installs.

#![allow(clippy::expect_used, clippy::panic, reason = "test code")]

use std::process::Command;

#[test]
fn three_replicas_behind_a_round_robin_balancer_behave_as_one() {
    let Ok(postgres) = std::env::var("WARDEN_TEST_POSTGRES_URL") else {
        println!("postgres: skipped (WARDEN_TEST_POSTGRES_URL is not set)");
        return;
    };
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let status = Command::new("bash")
        .arg(repo.join("tests/cluster/cluster.sh"))
        .env("WARDEN_BIN", env!("CARGO_BIN_EXE_warden"))
        .env("WARDEN_TEST_POSTGRES_URL", postgres)
        .env("INTEROP_VENV", tmp.join("interop-venv"))
        .status()
        .expect("run tests/cluster/cluster.sh");
    assert!(
        status.success(),
        "the cluster behind HAProxy did not behave as one (see the lines above)"
    );
}
