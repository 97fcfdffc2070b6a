//! Each 2025-11-25 session belongs to the credential, and the agent route, that opened it — for
//! every method, on every replica. A request on another credential's session (`POST`, `GET` to
//! resume its stream, `DELETE` to end it) is answered here exactly as rmcp answers an unknown
//! session (404), as is a request on a session no replica opened; the session itself is left
//! alone (its use is noted only for its owner's requests).
//!
//! rmcp's session manager knows nothing of credentials, and `GET` and `DELETE` never reach the
//! MCP handler (which checks the owner of every request it serves too), so the owners are kept
//! here, beside the endpoint: written to the store (`mcp_sessions`) when rmcp answers an
//! `initialize` with a new session id — before the client learns the id — and cached. A replica
//! that does not know a session reads its owner from the store; rmcp then restores the session
//! from the same row (`mcp_session_store.rs`). When the store cannot be read the request is refused
//! (503): an owner is never guessed.
//!
//! A replica notes a session's use in the store at most once a [`TOUCH_EVERY`]; when it finds
//! the session gone there (ended by `DELETE` on another replica, or expired after
//! [`SESSION_IDLE`] unused), it ends its own copy too. Every replica deletes expired sessions
//! from the store once a [`TOUCH_EVERY`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, Method, StatusCode};
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio_util::sync::CancellationToken;
use warden_core::pipeline::Clock;
use warden_core::time::Millis;
use warden_mcp::{AgentRoute, Authenticated};
use warden_store::Store;

static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// Past this many owners, those of sessions rmcp has let go (idle ones expire) are dropped.
const PRUNE_ABOVE: usize = 1024;

/// How often a replica notes a session's use in the store, and deletes expired sessions.
pub(crate) const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// A session unused for this long, on every replica, is deleted from the store.
pub(crate) const SESSION_IDLE: Duration = Duration::from_secs(3600);

/// Who a request acts as.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Owner {
    credential: String,
    agent: Option<String>,
}

impl Owner {
    fn of(request: &Request) -> Option<Self> {
        let credential = request.extensions().get::<Authenticated>()?.0.id.clone();
        let agent = request
            .extensions()
            .get::<AgentRoute>()
            .map(|a| a.0.clone());
        Some(Self { credential, agent })
    }
}

/// A session's owner as this replica knows it, and when it last noted its use in the store.
#[derive(Debug)]
struct Known {
    owner: Owner,
    /// The principal that opened it, for sessions opened on this replica (counted against
    /// [`SessionLimits::per_principal`]).
    principal: Option<String>,
    touched: Instant,
}

/// How many 2025-11-25 sessions a replica keeps open: in all, and per principal (sessions
/// opened on this replica). Past either, an `initialize` is refused with 429 and the
/// session rmcp made for it is closed at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// Open sessions on this replica.
    pub total: usize,
    /// Open sessions one principal opened on this replica.
    pub per_principal: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            total: DEFAULT_MAX_SESSIONS as usize,
            per_principal: DEFAULT_MAX_SESSIONS_PER_PRINCIPAL as usize,
        }
    }
}

/// The default of [`SessionLimits::total`] (`warden serve --max-sessions`).
pub const DEFAULT_MAX_SESSIONS: u32 = 2048;
/// The default of [`SessionLimits::per_principal`] (`--max-sessions-per-principal`).
pub const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: u32 = 128;

/// The answer to an `initialize` past a limit: 429, with a JSON-RPC error that says which
/// limit and what to do.
fn too_many(message: String) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32000, "message": message },
    });
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (http::header::CONTENT_TYPE, "application/json"),
            (http::header::RETRY_AFTER, "60"),
        ],
        body.to_string(),
    )
        .into_response()
}

/// rmcp's answer to a request on a session it does not have.
fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// The answer when the store cannot say who owns a session.
fn unavailable(e: &warden_store::StoreError) -> Response {
    tracing::error!(error = %e, "a session's owner could not be read from the store");
    (
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: the store cannot be read, so the session's owner cannot be checked",
    )
        .into_response()
}

type Owners = Arc<Mutex<HashMap<String, Known>>>;

fn lock(owners: &Owners) -> std::sync::MutexGuard<'_, HashMap<String, Known>> {
    owners
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The owners of the sessions rmcp keeps.
#[derive(Debug)]
pub(crate) struct SessionOwners {
    owners: Owners,
    manager: Arc<LocalSessionManager>,
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
    limits: SessionLimits,
}

/// What [`SessionOwners::screen`] saw of a request, for [`SessionOwners::settle`].
#[derive(Debug)]
pub(crate) struct Screened {
    session: Option<String>,
    owner: Option<Owner>,
    principal: Option<String>,
    delete: bool,
}

/// What [`SessionOwners::settle`] made of rmcp's answer.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    /// The owners should be [pruned](SessionOwners::prune).
    pub(crate) prune: bool,
    /// The answer to give instead of rmcp's: a session past a limit, closed.
    pub(crate) refused: Option<Response>,
}

impl SessionOwners {
    /// Owners of the sessions of `manager`, kept in `store` and stamped by `clock`, within
    /// `limits`.
    pub(crate) fn new(
        manager: Arc<LocalSessionManager>,
        store: Arc<Store>,
        clock: Arc<dyn Clock>,
        limits: SessionLimits,
    ) -> Self {
        Self {
            owners: Arc::default(),
            manager,
            store,
            clock,
            limits,
        }
    }

    /// Why the session `opened` for `principal` is one too many, if it is: counted over the
    /// sessions rmcp still has (idle ones it let go do not count).
    async fn over_limit(&self, opened: &str, principal: &str) -> Option<String> {
        let live = self.manager.sessions.read().await;
        let total = live.len();
        let mut owners = lock(&self.owners);
        owners.retain(|id, _| id == opened || live.contains_key(id.as_str()));
        let mine = owners
            .iter()
            .filter(|(id, k)| id.as_str() != opened && k.principal.as_deref() == Some(principal))
            .count()
            + 1;
        if mine > self.limits.per_principal {
            Some(format!(
                "too many open sessions for `{principal}`: {} is the limit on this server; \
                 end sessions you no longer use (DELETE with their Mcp-Session-Id) or wait \
                 for idle ones to expire",
                self.limits.per_principal
            ))
        } else if total > self.limits.total {
            Some(format!(
                "too many open sessions on this server: {} is the limit; try again later",
                self.limits.total
            ))
        } else {
            None
        }
    }

    /// The owner of session `id`: this replica's, else the store's (then cached); and whether
    /// its use is due to be noted in the store (the caller notes it once the owner matches:
    /// another credential's request must not count as the owner's use).
    async fn owner(&self, id: &str) -> Result<Option<(Owner, bool)>, Response> {
        let now = Instant::now();
        let cached = lock(&self.owners).get(id).map(|known| {
            (
                known.owner.clone(),
                now.duration_since(known.touched) >= TOUCH_EVERY,
            )
        });
        if cached.is_some() {
            return Ok(cached);
        }
        let Some(stored) = self
            .store
            .mcp_session(id)
            .await
            .map_err(|e| unavailable(&e))?
        else {
            return Ok(None);
        };
        let owner = Owner {
            credential: stored.credential,
            agent: stored.agent,
        };
        let known = Known {
            owner: owner.clone(),
            principal: None,
            touched: now,
        };
        lock(&self.owners).insert(id.to_owned(), known);
        Ok(Some((owner, true)))
    }

    /// Notes the use of session `id` in the store, on a task of its own; ends this replica's
    /// copy when the store has it no more.
    fn touch(&self, id: String) {
        let (store, owners, manager) = (
            self.store.clone(),
            self.owners.clone(),
            self.manager.clone(),
        );
        let now = self.clock.now();
        tokio::spawn(async move {
            match store.touch_mcp_session(&id, now).await {
                Ok(true) => {}
                Ok(false) => {
                    lock(&owners).remove(&id);
                    let _ = manager.close_session(&id.as_str().into()).await;
                    tracing::debug!(session = %id, "a session ended elsewhere was ended here too");
                }
                Err(e) => tracing::warn!(error = %e, "a session's use could not be noted"),
            }
        });
    }

    /// Before rmcp: the answer to a request on a session that is unknown, or that another
    /// credential owns — the same 404 as rmcp's for an unknown session, so that one cannot be
    /// told from the other — or when the store cannot say.
    pub(crate) async fn screen(&self, request: &mut Request) -> Result<Screened, Response> {
        let owner = Owner::of(request);
        let principal = request
            .extensions()
            .get::<Authenticated>()
            .map(|a| a.0.principal.to_string());
        let session = request
            .headers()
            .get(&MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let delete = request.method() == Method::DELETE;
        if let Some(id) = &session {
            match self.owner(id).await? {
                None => return Err(not_found()),
                Some((known, _)) if Some(&known) != owner.as_ref() => {
                    tracing::warn!(
                        credential = owner.as_ref().map_or("", |o| o.credential.as_str()),
                        "a request on another credential's session was answered as for an unknown session"
                    );
                    metrics::counter!("warden_foreign_session_requests_total").increment(1);
                    return Err(not_found());
                }
                Some((_, due)) => {
                    if due {
                        if let Some(known) = lock(&self.owners).get_mut(id.as_str()) {
                            known.touched = Instant::now();
                        }
                        self.touch(id.clone());
                    }
                }
            }
        }
        Ok(Screened {
            session,
            owner,
            principal,
            delete,
        })
    }

    /// After rmcp: refuses a session it opened past a limit (closing it), records the owner
    /// of one it opened (in the store, before the client has the answer), forgets one that
    /// ended.
    /// (The answer is not held across the store's write: a body is not `Sync`.)
    pub(crate) fn settle(
        &self,
        screened: Screened,
        response: &Response,
    ) -> impl Future<Output = Settled> + Send + '_ {
        let status = response.status();
        let opened = response
            .headers()
            .get(&MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.settle_with(screened, status, opened)
    }

    async fn settle_with(
        &self,
        screened: Screened,
        status: StatusCode,
        opened: Option<String>,
    ) -> Settled {
        match (&screened.session, screened.owner) {
            (None, Some(owner)) => {
                let Some(opened) = opened.as_deref() else {
                    return Settled::default();
                };
                let principal = screened.principal.unwrap_or_default();
                if let Some(why) = self.over_limit(opened, &principal).await {
                    let _ = self.manager.close_session(&opened.into()).await;
                    tracing::warn!(principal, "{why}");
                    metrics::counter!("warden_sessions_refused_total").increment(1);
                    return Settled {
                        prune: false,
                        refused: Some(too_many(why)),
                    };
                }
                match self
                    .store
                    .put_mcp_session_owner(
                        opened,
                        &owner.credential,
                        owner.agent.as_deref(),
                        self.clock.now(),
                    )
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => {
                        // The store has this id with another owner: the session is not this
                        // credential's anywhere, here neither.
                        tracing::error!(
                            "a new session's id is another credential's: session ended"
                        );
                        let _ = self.manager.close_session(&opened.into()).await;
                        return Settled::default();
                    }
                    Err(e) => {
                        // The session is served here; no other replica will restore it.
                        tracing::warn!(error = %e, "a session's owner could not be stored");
                        metrics::counter!("warden_session_store_failures_total").increment(1);
                    }
                }
                let known = Known {
                    owner,
                    principal: Some(principal),
                    touched: Instant::now(),
                };
                let mut owners = lock(&self.owners);
                owners.insert(opened.to_owned(), known);
                Settled {
                    prune: owners.len() > PRUNE_ABOVE,
                    refused: None,
                }
            }
            (Some(id), _)
                if (screened.delete && status.is_success()) || status == StatusCode::NOT_FOUND =>
            {
                lock(&self.owners).remove(id);
                Settled::default()
            }
            _ => Settled::default(),
        }
    }

    /// Drops the owners of sessions rmcp no longer has (the store keeps them).
    pub(crate) async fn prune(&self) {
        let live = self.manager.sessions.read().await;
        lock(&self.owners).retain(|id, _| live.contains_key(id.as_str()));
    }

    /// Deletes the sessions of the store unused for [`SESSION_IDLE`], once a [`TOUCH_EVERY`],
    /// until `shutdown`.
    pub(crate) fn expire_until(&self, shutdown: CancellationToken) {
        let (store, clock) = (self.store.clone(), self.clock.clone());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let mut every = tokio::time::interval(TOUCH_EVERY);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    _ = every.tick() => {}
                }
                let idle = i64::try_from(SESSION_IDLE.as_millis()).unwrap_or(i64::MAX);
                let since = Millis(clock.now().0.saturating_sub(idle));
                match store.expire_mcp_sessions(since).await {
                    Ok(0) => {}
                    Ok(n) => tracing::debug!(expired = n, "idle sessions deleted"),
                    Err(e) => tracing::warn!(error = %e, "idle sessions could not be deleted"),
                }
            }
        });
    }
}
