//! 2025-11-25 MCP sessions, kept where every replica reads them (STORE-3): a session opened on
//! one replica is served by any other, which restores it from here (docs/replicas.md).
//!
//! A row is written in two steps while the session's `initialize` is answered, both before the
//! client learns the session's id: the transport's state (the client's `initialize` request,
//! opaque here) and the session's owner — the credential, and the agent route, that opened it.
//! A session is served only once it has both ([`Store::mcp_session`]). The owner is set once and
//! never changed. Rows unseen for a while are expired by [`Store::expire_mcp_sessions`].

pub(crate) mod sql;
mod store;

use warden_core::time::Millis;

/// A stored MCP session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpSession {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The id of the credential that opened it.
    pub credential: String,
    /// The agent route it was opened on (`/mcp/agents/{agent}`), if any.
    pub agent: Option<String>,
    /// The transport's state, as the transport wrote it.
    pub state: String,
    /// When it was opened.
    pub created_at: Millis,
    /// When a replica last saw it used (updated at most once a minute per replica).
    pub seen_at: Millis,
}
