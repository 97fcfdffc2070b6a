//! What every request handler shares: the gateway, the host policy, the agent runner, the
//! Reconcilers and the limiter of failed authentications.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use warden_control::{Control, Listener};
use warden_mcp::Gateway;

use crate::hosts::HostPolicy;
use crate::limiter::{DEFAULT_FAILURE_LIMIT, FailureLimiter};
use crate::mcp_sessions::SessionLimits;
use crate::oauth::resource::Origins;
use crate::oauth::verify::Oauth;
use warden_work::agents::Runner;

/// The default of [`AppState::header_read_timeout`] (`warden serve --header-read-timeout`):
/// hyper's own default, which it applies only with a timer (`axum::serve` sets none).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest accepted request body (REL-1).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Cancelled when the server stops: long-lived answers (the console's event streams) end
/// with it, so that a graceful shutdown does not wait for them. An extension of every
/// request the router serves.
#[derive(Clone, Debug)]
pub(crate) struct Stopping(pub(crate) tokio_util::sync::CancellationToken);

/// Shared state of the server.
#[derive(Debug)]
pub struct AppState {
    /// The gateway.
    pub gateway: Arc<Gateway>,
    /// The operator services, over the gateway's store; the gateway hears of their changes.
    pub control: Control,
    /// Which `Host` and `Origin` headers are accepted.
    pub hosts: HostPolicy,
    /// Starts agent runs (scheduled and manual).
    pub runner: Arc<Runner>,
    /// The Reconcilers' passes (WORK-4).
    pub reconcilers: Arc<warden_work::reconcilers::Reconcilers>,
    pub(crate) auth_failures: FailureLimiter,
    /// Refused deliveries to forges' webhooks, by source (`hooks.rs`).
    pub(crate) hook_failures: FailureLimiter,
    /// Failed authentications a source address may have per minute before it is answered
    /// 429 (AUTH-5).
    pub auth_failure_limit: u32,
    /// How many 2025-11-25 sessions this replica keeps open.
    pub session_limits: SessionLimits,
    /// How long a client has to send a request's headers, from when its connection is ready
    /// for them — new, or kept alive after its last answer: one that sends half a request, or
    /// nothing, is closed then, as is an idle kept-alive one.
    pub header_read_timeout: Duration,
    /// The URL clients reach this server at, when it is not its listener's (behind a TLS
    /// proxy).
    public_url: Option<String>,
    /// This server's origins, which OAuth resource URLs and default audiences are built from
    /// (AUTH-4): the public URL's, else the listener's once it is bound.
    origins: OnceLock<Origins>,
    pub(crate) oauth: Oauth,
}

impl AppState {
    /// State for a server in front of `gateway`.
    pub fn new(gateway: Arc<Gateway>, hosts: HostPolicy) -> Self {
        let runner = Arc::new(Runner::new(
            gateway.clone(),
            gateway.upstreams().secrets().clone(),
        ));
        let control = Control::new(gateway.store().clone(), gateway.clock().clone())
            .with_listener(Arc::new(Refresh(gateway.clone())))
            .with_secrets(gateway.upstreams().secrets().clone());
        let reconcilers = Arc::new(warden_work::reconcilers::Reconcilers::new(gateway.clone()));
        Self {
            gateway,
            control,
            hosts,
            runner,
            reconcilers,
            auth_failures: FailureLimiter::default(),
            hook_failures: FailureLimiter::default(),
            auth_failure_limit: DEFAULT_FAILURE_LIMIT,
            session_limits: SessionLimits::default(),
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            public_url: None,
            origins: OnceLock::new(),
            oauth: Oauth::default(),
        }
    }

    /// Sets the URL clients reach this server at (`https://warden.example.com`).
    #[must_use]
    pub fn with_public_url(mut self, url: Option<String>) -> Self {
        self.public_url = url.map(|u| u.trim_end_matches('/').to_owned());
        self.origins = self
            .public_url
            .as_deref()
            .map(Origins::public)
            .map_or_else(OnceLock::new, OnceLock::from);
        self
    }

    /// Sets how many failed authentications a source may have per minute.
    #[must_use]
    pub fn with_auth_failure_limit(mut self, limit: u32) -> Self {
        self.auth_failure_limit = limit;
        self
    }

    /// Sets how long a client has to send a request's headers.
    #[must_use]
    pub fn with_header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Sets how many 2025-11-25 sessions this replica keeps open.
    #[must_use]
    pub fn with_session_limits(mut self, limits: SessionLimits) -> Self {
        self.session_limits = limits;
        self
    }

    /// The URL clients reach this server at, when set.
    pub fn public_url(&self) -> Option<&str> {
        self.public_url.as_deref()
    }

    /// Notes the address the listener is bound to: without a public URL, this server's origins
    /// are the listener's ([`Origins::listener`]).
    pub(crate) fn listening(&self, addr: SocketAddr) {
        let _ = self
            .origins
            .set(Origins::listener(addr, self.hosts.names()));
    }

    /// This server's origins (AUTH-4).
    pub(crate) fn origins(&self) -> &Origins {
        static NONE: Origins = Origins::NONE;
        self.origins.get().unwrap_or(&NONE)
    }
}

/// Makes the gateway reload configuration and credentials when a service changed them.
struct Refresh(Arc<Gateway>);

impl Listener for Refresh {
    fn changed(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(self.0.refresh())
    }
}
