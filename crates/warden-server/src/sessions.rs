//! Each 2025-11-25 session belongs to the credential, and the agent route, that opened it — for
//! every method. A request on another credential's session (`POST`, `GET` to resume its stream,
//! `DELETE` to end it) reaches rmcp with a session id that no session has, so it is answered
//! exactly as an unknown session is (404), and the session itself is left alone. A `DELETE` of
//! a session the credential does not own — another's, or none at all — is answered 404 here
//! (rmcp would accept it with 202 whatever the id).
//!
//! rmcp's session manager knows nothing of credentials, and `GET` and `DELETE` never reach the
//! MCP handler (which checks the owner of every request it serves too), so the owners are kept
//! here, beside the endpoint: recorded when rmcp answers an `initialize` with a new session id,
//! forgotten when the session is deleted or rmcp no longer knows it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, Method, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use warden_mcp::{AgentRoute, Authenticated};

static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// Past this many owners, those of sessions rmcp has let go (idle ones expire) are dropped.
const PRUNE_ABOVE: usize = 1024;

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

/// rmcp's answer to a request on a session it does not have.
fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// The owners of the sessions rmcp keeps.
#[derive(Debug)]
pub(crate) struct SessionOwners {
    owners: Mutex<HashMap<String, Owner>>,
    manager: Arc<LocalSessionManager>,
}

/// What [`SessionOwners::screen`] saw of a request, for [`SessionOwners::settle`].
#[derive(Debug)]
pub(crate) struct Screened {
    session: Option<String>,
    owner: Option<Owner>,
    delete: bool,
}

impl SessionOwners {
    /// Owners of the sessions of `manager`.
    pub(crate) fn new(manager: Arc<LocalSessionManager>) -> Self {
        Self {
            owners: Mutex::new(HashMap::new()),
            manager,
        }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owner>> {
        self.owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Before rmcp: a request on a session another credential owns is pointed at no session;
    /// the answer to a `DELETE` of a session it does not own.
    #[expect(
        clippy::result_large_err,
        reason = "a refusal is moved once, straight into the answer"
    )]
    pub(crate) fn screen(&self, request: &mut Request) -> Result<Screened, Response> {
        let owner = Owner::of(request);
        let session = request
            .headers()
            .get(&MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let delete = request.method() == Method::DELETE;
        if let Some(id) = &session {
            let known = self.owners().get(id).cloned();
            if delete && known.as_ref() != owner.as_ref() {
                return Err(not_found());
            }
            if known.is_some_and(|known| Some(&known) != owner.as_ref()) {
                tracing::warn!(
                    credential = owner.as_ref().map_or("", |o| o.credential.as_str()),
                    "a request on another credential's session was answered as for an unknown session"
                );
                metrics::counter!("warden_foreign_session_requests_total").increment(1);
                let nowhere = format!("foreign-{}", uuid::Uuid::new_v4().simple());
                if let Ok(value) = HeaderValue::from_str(&nowhere) {
                    request.headers_mut().insert(MCP_SESSION_ID.clone(), value);
                }
                return Ok(Screened {
                    session: None,
                    owner: None,
                    delete: false,
                });
            }
        }
        Ok(Screened {
            session,
            owner,
            delete,
        })
    }

    /// After rmcp: records the owner of a session it opened, forgets one that ended. True when
    /// the owners should be [pruned](Self::prune).
    pub(crate) fn settle(&self, screened: Screened, response: &Response) -> bool {
        match (&screened.session, screened.owner) {
            (None, Some(owner)) => {
                let Some(opened) = response
                    .headers()
                    .get(&MCP_SESSION_ID)
                    .and_then(|v| v.to_str().ok())
                else {
                    return false;
                };
                let mut owners = self.owners();
                owners.insert(opened.to_owned(), owner);
                owners.len() > PRUNE_ABOVE
            }
            (Some(id), _)
                if (screened.delete && response.status().is_success())
                    || response.status() == StatusCode::NOT_FOUND =>
            {
                self.owners().remove(id);
                false
            }
            _ => false,
        }
    }

    /// Drops the owners of sessions rmcp no longer has.
    pub(crate) async fn prune(&self) {
        let live = self.manager.sessions.read().await;
        self.owners().retain(|id, _| live.contains_key(id.as_str()));
    }
}
