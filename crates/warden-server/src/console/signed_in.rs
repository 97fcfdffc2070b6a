//! Console sessions: after a sign-in with a token, a random session id in an `HttpOnly`,
//! `SameSite=Strict` cookie names, on the server, the credential it was opened with. The
//! credential is looked up again on every request, so revoking the token, its expiry or the
//! removal of its owner ends the session at its next request (RUN-8).
//!
//! Sign-ins are kept in the store (`warden_control::sign_ins`), so that any replica serves any
//! console request and a restart signs nobody out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use warden_control::Control;
use warden_control::sign_ins;
pub(crate) use warden_control::sign_ins::{Ended, LIFETIME, NewToken, random_hex};
use warden_core::authority::Authority;
use warden_core::principal::{Credential, CredentialKind, CredentialRejection};
use warden_store::StoreError;

use crate::state::AppState;

/// The session cookie.
pub(crate) const COOKIE: &str = "warden_session";
/// The sign-in form's own anti-forgery cookie (before there is a session).
pub(crate) const SIGN_IN_COOKIE: &str = "warden_sign_in";

/// The console's sign-ins, kept in the store by `warden_control::sign_ins`: what a console
/// request asks of them, a store failure logged once here.
#[derive(Debug)]
pub(crate) struct SignIns {
    control: Control,
}

fn logged<T>(what: &str, result: Result<T, StoreError>) -> Option<T> {
    result
        .map_err(|e| tracing::error!(error = %e, "console sign-ins: {what} failed"))
        .ok()
}

impl SignIns {
    pub(crate) fn new(control: Control) -> Self {
        Self { control }
    }

    /// Opens a session for `credential_id`: its id, for the cookie. `None` when it cannot be
    /// opened (no randomness, or the store failed).
    pub(crate) async fn open(&self, credential_id: &str) -> Option<String> {
        logged(
            "opening",
            sign_ins::open(&self.control, credential_id).await,
        )
        .flatten()
    }

    /// Ends a session (signing out).
    pub(crate) async fn close(&self, sid: &str) -> bool {
        if logged("closing", sign_ins::close(&self.control, sid).await).is_some() {
            return true;
        }
        // Failing that, ended: it grants nothing either way.
        logged(
            "ending",
            sign_ins::end(&self.control, sid, Ended::SignedOut).await,
        )
        .is_some()
    }

    /// Ends a session for `why`, which its next request is told; it grants nothing after.
    pub(crate) async fn end(&self, sid: &str, why: Ended) {
        logged("ending", sign_ins::end(&self.control, sid, why).await);
    }

    /// How many live console sessions, on every replica, each credential is signed in with.
    pub(crate) async fn counts(&self) -> HashMap<String, u64> {
        logged("counting", sign_ins::counts(&self.control).await).unwrap_or_default()
    }

    /// Whether a session is open and grants its credential's authority.
    pub(crate) async fn active(&self, sid: &str) -> bool {
        logged("reading", sign_ins::active(&self.control, sid).await).unwrap_or(false)
    }

    /// The anti-forgery token of a live session.
    pub(crate) async fn csrf(&self, sid: &str) -> Option<String> {
        logged("reading", sign_ins::csrf(&self.control, sid).await).flatten()
    }

    /// Leaves a message for the session's next page.
    pub(crate) async fn flash(&self, sid: &str, message: &str) {
        logged(
            "keeping a message",
            sign_ins::flash(&self.control, sid, message).await,
        );
    }
}

/// The value of cookie `name` in a request's `Cookie` headers.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

/// Whether the browser reached the console over HTTPS (directly, or through a proxy that says
/// so): the cookies are then `Secure`.
pub(crate) fn over_https(headers: &HeaderMap, uri: &Uri) -> bool {
    uri.scheme_str() == Some("https")
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
}

/// A `Set-Cookie` value: `HttpOnly`, `SameSite=Strict`, `Path=/`, and `Secure` over HTTPS;
/// `max_age` zero removes the cookie.
pub(crate) fn set_cookie(name: &str, value: &str, max_age: Duration, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let text = format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        max_age.as_secs()
    );
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A credential the console accepts, looked up again now: usable, its owner still configured,
/// its authority resolved from the current policy.
pub(crate) fn resolve(
    state: &AppState,
    credential_id: &str,
) -> Result<(Credential, Arc<Authority>), Ended> {
    let snapshot = state.gateway.snapshot();
    let credential = snapshot
        .credential_by_id(credential_id)
        .ok_or(Ended::Revoked)?;
    credential
        .check_usable(state.control.now())
        .map_err(|e| match e {
            CredentialRejection::Expired => Ended::TokenExpired,
            _ => Ended::Revoked,
        })?;
    if credential.kind == CredentialKind::Run
        || (snapshot.loaded && !snapshot.policy.principal_exists(&credential.principal))
    {
        return Err(Ended::OwnerGone);
    }
    let authority = state
        .gateway
        .authority(&credential, None)
        .map_err(|_| Ended::OwnerGone)?;
    Ok((credential, authority))
}

/// [`resolve`], after reading the store again when this replica does not know the credential
/// (made a moment ago through another replica): the end of a session is kept for every
/// replica, so a lagging one must not decide it.
async fn resolve_fresh(
    state: &AppState,
    credential_id: &str,
) -> Result<(Credential, Arc<Authority>), Ended> {
    let first = resolve(state, credential_id);
    if first.is_err()
        && state
            .gateway
            .snapshot()
            .credential_by_id(credential_id)
            .is_none()
    {
        crate::auth::reread(state).await;
        return resolve(state, credential_id);
    }
    first
}

/// The signed-in credential of a console request, with its authority as of now.
#[derive(Clone, Debug)]
pub(crate) struct Signed {
    /// The session id (from the cookie).
    pub(crate) sid: String,
    pub(crate) credential: Credential,
    pub(crate) authority: Arc<Authority>,
    /// The session's anti-forgery token, for the forms of the page.
    pub(crate) csrf: String,
    /// A message left for this page by the previous request.
    pub(crate) flash: Option<String>,
    /// The kill switches pulled now (name, scope, reason), which every page shows.
    pub(crate) kill_switches: Vec<(String, String, String)>,
    pub(crate) sessions: Arc<SignIns>,
}

impl Signed {
    pub(crate) fn holds(&self, capability: &str) -> bool {
        self.authority.holds(capability)
    }

    /// Leaves a message for the next page.
    pub(crate) async fn flash(&self, message: impl Into<String>) {
        self.sessions.flash(&self.sid, &message.into()).await;
    }

    /// Keeps a token just created until the tokens page shows its secret; false when it
    /// could not be kept (the page must then show it at once).
    pub(crate) async fn keep_new_token(&self, token: &NewToken) -> bool {
        logged(
            "keeping a new token",
            sign_ins::keep_new_token(&self.sessions.control, &self.sid, token).await,
        )
        .is_some()
    }

    /// The token this session just created, if the tokens page has not shown it yet.
    pub(crate) async fn take_new_token(&self) -> Option<NewToken> {
        logged(
            "taking a new token",
            sign_ins::take_new_token(&self.sessions.control, &self.sid).await,
        )
        .flatten()
    }
}

/// The kill switches pulled now: (name, scope, reason).
fn kill_switches(state: &AppState) -> Vec<(String, String, String)> {
    let snapshot = state.gateway.snapshot();
    snapshot
        .policy
        .config
        .of_kind(warden_core::config::Kind::KillSwitch)
        .filter_map(|r| match r {
            warden_core::config::Resource::KillSwitch(k) => {
                Some((r.key(), k.scope.to_string(), k.reason.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Where a request without a session goes: the sign-in page, or a plain 401 for event streams
/// and scripts.
fn to_sign_in(parts: &Parts, ended: Option<Ended>) -> Response {
    let secure = over_https(&parts.headers, &parts.uri);
    let wants_stream = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"));
    if wants_stream {
        // The cookie stays: the next page the browser opens is told why the session ended.
        return (StatusCode::UNAUTHORIZED, "sign in to the console first\n").into_response();
    }
    let clear = set_cookie(COOKIE, "", Duration::ZERO, secure);
    let location = match ended {
        Some(e) => format!("/sign-in?ended={}", e.as_str()),
        None => "/sign-in".to_owned(),
    };
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, clear),
            (
                header::LOCATION,
                HeaderValue::from_str(&location).unwrap_or(HeaderValue::from_static("/sign-in")),
            ),
        ],
    )
        .into_response()
}

impl FromRequestParts<Arc<AppState>> for Signed {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let Some(sessions) = parts.extensions.get::<Arc<SignIns>>().cloned() else {
            return Err(StatusCode::INTERNAL_SERVER_ERROR.into_response());
        };
        let Some(sid) = cookie(&parts.headers, COOKIE).map(str::to_owned) else {
            return Err(to_sign_in(parts, None));
        };
        let (credential_id, csrf, flash) = match sign_ins::touch(&sessions.control, &sid).await {
            Ok(Ok(live)) => (live.credential, live.csrf, live.flash),
            Ok(Err(ended)) => return Err(to_sign_in(parts, Some(ended))),
            Err(e) => {
                tracing::error!(error = %e, "console sign-ins: reading failed");
                return Err((
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the console cannot read its sign-ins from the store; try again shortly\n",
                )
                    .into_response());
            }
        };
        match resolve_fresh(state, &credential_id).await {
            Ok((credential, authority)) => Ok(Self {
                sid,
                credential,
                authority,
                csrf,
                flash,
                kill_switches: kill_switches(state),
                sessions,
            }),
            // A replica that has not loaded its configuration yet cannot tell; it ends nothing.
            Err(_) if !state.gateway.snapshot().loaded => Err((
                StatusCode::SERVICE_UNAVAILABLE,
                "Warden has not loaded its configuration yet; try again shortly\n",
            )
                .into_response()),
            Err(ended) => {
                tracing::info!(credential = %credential_id, reason = ended.as_str(), "console session ended");
                sessions.end(&sid, ended).await;
                Err(to_sign_in(parts, Some(ended)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn cookies_are_found_by_exact_name_among_all_cookie_headers() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; xwarden_session=no"),
        );
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("warden_session=abc ; b=2"),
        );
        assert_eq!(cookie(&headers, COOKIE), Some("abc"));
        assert_eq!(cookie(&headers, "b"), Some("2"));
        assert_eq!(cookie(&headers, "c"), None);
    }

    #[test]
    fn session_cookies_are_http_only_strict_and_secure_over_https() {
        assert_eq!(
            set_cookie(COOKIE, "abc", LIFETIME, true),
            "warden_session=abc; Path=/; HttpOnly; SameSite=Strict; Max-Age=86400; Secure"
        );
        assert_eq!(
            set_cookie(COOKIE, "", Duration::ZERO, false),
            "warden_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
        );
    }
}
