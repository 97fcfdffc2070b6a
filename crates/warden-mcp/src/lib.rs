//! Warden's MCP layer.
//!
//! - [`gateway`]: the live policy, credentials and catalog, the upstreams and the governed call —
//!   one instance shared by every transport.
//! - [`handler`]: the MCP server presented to clients (stdio and Streamable HTTP, both eras).
//! - [`upstream`]: supervised upstream MCP servers (stdio children, HTTP URLs).
//! - [`builtin`]: the built-in tool set `warden` (`whoami`, `explain`).
//! - [`wire`]: the one mapping between MCP and governed outcomes, both ways.
//! - [`demo`]: the demo project's notebook, a real MCP server over stdio (`warden demo-server`).

pub mod approval_tasks;
pub mod approval_url;
pub mod bridge;
pub mod builtin;
pub mod client;
pub mod demo;
pub mod era;
pub mod gateway;
pub mod handler;
pub mod http_client;
pub mod knowledge;
mod list_changes;
mod listen_stream;
pub mod trace;
pub mod upstream;
pub mod upstream_task_ids;
pub mod wire;

pub use gateway::{Gateway, GatewayOptions};
pub use handler::{AgentRoute, Authenticated, McpHandler, SessionAuth};
pub use upstream::exchange::SubjectToken;
pub use upstream::http::serving_thread;
