//! What every request handler shares: the gateway, the host policy, the agent runner and
//! the limiter of failed authentications.

use std::sync::Arc;

use warden_mcp::Gateway;

use crate::agents::Runner;
use crate::auth::FailureLimiter;
use crate::hosts::HostPolicy;

/// Largest accepted request body (REL-1).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Shared state of the server.
#[derive(Debug)]
pub struct AppState {
    /// The gateway.
    pub gateway: Arc<Gateway>,
    /// Which `Host` and `Origin` headers are accepted.
    pub hosts: HostPolicy,
    /// Starts agent runs (scheduled and manual).
    pub runner: Arc<Runner>,
    pub(crate) auth_failures: FailureLimiter,
}

impl AppState {
    /// State for a server in front of `gateway`.
    pub fn new(gateway: Arc<Gateway>, hosts: HostPolicy) -> Self {
        let runner = Arc::new(Runner::new(
            gateway.clone(),
            gateway.upstreams().secrets().clone(),
        ));
        Self {
            gateway,
            hosts,
            runner,
            auth_failures: FailureLimiter::default(),
        }
    }
}
