//! Every CLI verb through the admin API and on the store, with the same output (OPS-5; issue
//! "Operators' surfaces", point 2): each verb runs twice against one in-process Warden — once
//! with `--server` and `WARDEN_TOKEN`, once with `--data-dir`/`--database-url` — and prints the
//! same stdout with the same exit status, errors included; the verbs that need a running
//! server say why; and how the CLI chooses between the two (docs/cli.md).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

#[path = "cli_remote/approvals.rs"]
mod approvals;
#[path = "cli_remote/audit.rs"]
mod audit;
#[path = "cli_remote/resources.rs"]
mod resources;
#[path = "cli_remote/selection.rs"]
mod selection;
#[path = "cli_remote/support.rs"]
mod support;
#[path = "cli_remote/tokens.rs"]
mod tokens;
#[path = "cli_remote/work.rs"]
mod work;
