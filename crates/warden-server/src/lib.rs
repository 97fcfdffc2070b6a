//! Warden's HTTP server: the MCP endpoints (`POST /mcp`, `POST /mcp/agents/{agent}`, both
//! protocol eras), the admin API under `/api/v1`, `/healthz`, `/readyz` and `/metrics`.
//!
//! Every request passes the host check (XPORT-2) and, except health and metrics, bearer
//! authentication: a missing or bad token gets 401 with a one-line reason.
//!
//! - [`app`]: the routes and the service the listeners serve; [`inline`]: stateless
//!   2026-07-28 calls answered on the connection's own task, everything else handed to rmcp;
//!   [`sessions`]: each 2025-11-25 session kept to its credential; [`jsonrpc`]: JSON-RPC's
//!   errors for bodies that are no JSON-RPC request;
//! - [`serve`]: sockets, serving threads, background work;
//! - [`auth`], [`hosts`]: authentication and the host check; [`oauth`]: access tokens of
//!   configured issuers and RFC 9728 metadata; [`admin`]: the admin API;
//!   [`agents`]: agent runs and schedules; [`environments`] and [`materialise`]: the working
//!   directory of a session bound to a task; [`state`]: what the handlers share.

mod admin;
mod app;
mod auth;
mod console;
mod hosts;
mod inline;
mod jsonrpc;
mod limiter;
mod oauth;
mod serve;
mod session_store;
mod sessions;
mod state;

pub use admin::{
    AGENTS_RUN, APPROVALS_READ, EXPLAIN_ANY, RUNS_READ, TOOLS_INVENTORY, inventory_row,
};
pub use hosts::HostPolicy;
pub use limiter::DEFAULT_FAILURE_LIMIT;
pub use serve::{Bound, listen, reuse_port};
pub use sessions::{DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, SessionLimits};
pub use state::{AppState, DEFAULT_HEADER_READ_TIMEOUT, MAX_BODY_BYTES};
