//! Warden's work domain (TASK-1..TASK-8): tasks in workspaces, admitted by the core's rules
//! ([`tasks`], with the arguments of [`args`]), and the environments an agent run works in —
//! each a set of git worktrees materialised from mirrors ([`environments`], [`materialise`]).
//!
//! The `tasks` tool set (warden-mcp), the admin API, the console and `warden task` all call
//! [`tasks`]. [`agents`] starts agent runs — by hand, on schedules, as sessions of a task in
//! its environment — behind the gateway, which it reaches through its [`agents::Gateway`]
//! port (implemented by `warden_mcp::Gateway`). [`epics`] holds epics and their review gates,
//! [`forges`] the git providers, and [`reconcilers`] the periodic job that moves stale work
//! through that same gateway.

pub mod agents;
pub mod args;
pub mod environments;
pub mod epics;
mod fire_times;
pub mod forges;
pub mod git_auth;
pub mod materialise;
pub mod reconcilers;
pub mod tasks;
