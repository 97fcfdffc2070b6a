//! Warden's governance core: pure, synchronous decisions over plain values.
//!
//! No I/O crate is in this crate's dependency tree (no tokio, sqlx, axum, hyper, reqwest):
//! time comes in as an argument, the store and upstreams are small traits
//! ([`pipeline::AuditLog`], [`pipeline::Counters`], [`pipeline::Clock`],
//! [`pipeline::Executor`]) implemented by the adapter crates.
//!
//! Reading order: [`config`] (what operators write) → [`policy`] (compiled snapshot) →
//! [`authority`] (what one run may do) → [`decision`] (the decision function and the steps)
//! → [`pipeline`] (GOV-2 in order) → [`contract`] (what the caller sees) → [`audit`].

pub mod admission;
pub mod approval;
pub mod audit;
pub mod authority;
pub mod capability;
pub mod conditions;
pub mod config;
pub mod contract;
pub mod cron;
pub mod decision;
pub mod error;
pub mod explain;
pub mod git_url;
pub mod name;
pub mod notify;
pub mod oauth;
pub mod param_headers;
pub mod pins;
pub mod pipeline;
pub mod policy;
pub mod principal;
pub mod rbac;
pub mod schema;
pub mod time;
pub mod tool;
pub mod url_credentials;
pub mod work;

pub use name::Name;
