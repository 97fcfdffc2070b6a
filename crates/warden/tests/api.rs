//! The admin API end to end (OPS-5): every route of `/api/v1` against an in-process Warden —
//! its success, a refusal in the one error shape, the capability it needs — and the OpenAPI
//! document that describes them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

#[path = "api/approvals.rs"]
mod approvals;
#[path = "api/audit.rs"]
mod audit;
#[path = "api/killswitches.rs"]
mod killswitches;
#[path = "api/openapi.rs"]
mod openapi;
#[path = "api/reads.rs"]
mod reads;
#[path = "api/resources.rs"]
mod resources;
#[path = "api/support.rs"]
mod support;
#[path = "api/tokens.rs"]
mod tokens;
