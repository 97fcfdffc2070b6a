//! Warden's HTTP server: the MCP endpoints (`POST /mcp`, `POST /mcp/agents/{agent}`, both
//! protocol eras), the admin API under `/api/v1`, `/healthz`, `/readyz` and `/metrics`.
//!
//! Every request passes the host check (XPORT-2); the MCP endpoints, the admin API and every
//! unknown path also pass bearer authentication (a missing or bad token gets 401 with a
//! one-line reason). Health, metrics, the OpenAPI document, OAuth metadata and the console's
//! own sign-in do not.
//!
//! - [`app`]: the one door of every request (the host check, then authentication and the MCP
//!   endpoint for `/mcp`, the router for the rest); [`endpoint`]: the MCP endpoint, which
//!   answers stateless 2026-07-28 calls on the connection's own task and hands everything else
//!   to rmcp; [`mcp_sessions`] and [`mcp_session_store`]: each 2025-11-25 session kept to its
//!   credential, on every replica; [`jsonrpc`]: JSON-RPC's errors for bodies that are no
//!   JSON-RPC request;
//! - [`serve`]: sockets, serving threads, background work;
//! - [`auth`], [`hosts`], [`limiter`]: authentication, the host check and the limit on failed
//!   authentications; [`oauth`]: access tokens of configured issuers and RFC 9728 metadata;
//!   [`admin`]: the admin API; [`console`]: the operator console; [`state`]: what the
//!   handlers share.

mod admin;
mod app;
mod auth;
mod chat_events;
mod console;
mod endpoint;
mod hooks;
mod hosts;
mod jsonrpc;
mod limiter;
mod mcp_session_store;
mod mcp_sessions;
mod notify;
mod oauth;
mod serve;
mod state;

pub use admin::{
    AGENTS_RUN, APPROVALS_READ, EXPLAIN_ANY, RUNS_READ, TOOLS_INVENTORY, inventory_row,
};
pub use app::ListenerService;
pub use hosts::HostPolicy;
pub use limiter::DEFAULT_FAILURE_LIMIT;
pub use mcp_sessions::{DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, SessionLimits};
pub use serve::{Bound, listen, reuse_port};
pub use state::{AppState, DEFAULT_HEADER_READ_TIMEOUT, MAX_BODY_BYTES};
