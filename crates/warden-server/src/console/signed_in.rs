//! Console sessions: after a sign-in with a token, a random session id in an `HttpOnly`,
//! `SameSite=Strict` cookie names, on the server, the credential it was opened with. The
//! credential is looked up again on every request, so revoking the token, its expiry or the
//! removal of its owner ends the session at its next request (RUN-8).
//!
//! Sign-ins live in this process's memory: a restart signs everyone out, and replicas behind
//! one address need sticky routing for the console (the API and MCP need none).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use warden_core::authority::Authority;
use warden_core::principal::{Credential, CredentialKind, CredentialRejection};

use crate::state::AppState;

/// The session cookie.
pub(crate) const COOKIE: &str = "warden_session";
/// The sign-in form's own anti-forgery cookie (before there is a session).
pub(crate) const SIGN_IN_COOKIE: &str = "warden_sign_in";
/// A session unused this long ends.
const IDLE: Duration = Duration::from_secs(8 * 3600);
/// A session ends this long after sign-in, used or not.
pub(crate) const LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// Sign-ins kept at most; past it the least recently used goes.
const MAX_SIGN_INS: usize = 10_000;

#[derive(Debug)]
struct SignIn {
    credential_id: String,
    csrf: String,
    opened: Instant,
    seen: Instant,
    flash: Option<String>,
    /// A token this session just created, until the tokens page shows its secret (once).
    new_token: Option<NewToken>,
    /// Why the session ended, kept so that the next page says it.
    ended: Option<Ended>,
}

/// A token just created in the console, between the form's answer (a redirect) and the page
/// that shows its secret once; kept in this process's memory only, never stored.
#[derive(Clone, Debug)]
pub(crate) struct NewToken {
    pub(crate) id: String,
    pub(crate) principal: String,
    pub(crate) secret: String,
}

impl SignIn {
    fn live(&self, now: Instant) -> bool {
        now.duration_since(self.opened) < LIFETIME && now.duration_since(self.seen) < IDLE
    }
}

/// The open sign-ins, by the SHA-256 of their id (the id itself is kept by the browser only).
#[derive(Debug, Default)]
pub(crate) struct SignIns {
    open: Mutex<HashMap<[u8; 32], SignIn>>,
}

/// 32 random bytes as hex; `None` when the system has no randomness to give.
pub(crate) fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

fn key(sid: &str) -> [u8; 32] {
    Sha256::digest(sid.as_bytes()).into()
}

impl SignIns {
    /// Opens a session for `credential_id`: its id, for the cookie.
    pub(crate) fn open(&self, credential_id: &str) -> Option<String> {
        let (sid, csrf) = (random_hex()?, random_hex()?);
        let mut open = self.open.lock().ok()?;
        let now = Instant::now();
        if open.len() >= MAX_SIGN_INS {
            open.retain(|_, s| s.live(now));
        }
        if open.len() >= MAX_SIGN_INS
            && let Some(oldest) = open.iter().min_by_key(|(_, s)| s.seen).map(|(k, _)| *k)
        {
            open.remove(&oldest);
        }
        open.insert(
            key(&sid),
            SignIn {
                credential_id: credential_id.to_owned(),
                csrf,
                opened: now,
                seen: now,
                flash: None,
                new_token: None,
                ended: None,
            },
        );
        Some(sid)
    }

    /// Ends a session.
    pub(crate) fn close(&self, sid: &str) {
        if let Ok(mut open) = self.open.lock() {
            open.remove(&key(sid));
        }
    }

    /// The credential id and anti-forgery token of a live session, and its message for the
    /// next page (taken); marks it used. `Err` when there is none: why it ended, if known.
    fn touch(&self, sid: &str) -> Result<(String, String, Option<String>), Ended> {
        let mut open = self.open.lock().map_err(|_| Ended::Expired)?;
        let k = key(sid);
        let now = Instant::now();
        let session = open.get_mut(&k).ok_or(Ended::Expired)?;
        if !session.live(now) {
            open.remove(&k);
            return Err(Ended::Expired);
        }
        if let Some(ended) = session.ended {
            return Err(ended);
        }
        session.seen = now;
        Ok((
            session.credential_id.clone(),
            session.csrf.clone(),
            session.flash.take(),
        ))
    }

    /// Ends a session for `why`, which its next request is told; it grants nothing after.
    pub(crate) fn end(&self, sid: &str, why: Ended) {
        if let Ok(mut open) = self.open.lock()
            && let Some(s) = open.get_mut(&key(sid))
        {
            s.ended = Some(why);
        }
    }

    /// How many live console sessions `credential_id` is signed in with (in this process).
    pub(crate) fn signed_in_with(&self, credential_id: &str) -> usize {
        let now = Instant::now();
        self.open.lock().map_or(0, |open| {
            open.values()
                .filter(|s| s.credential_id == credential_id && s.ended.is_none() && s.live(now))
                .count()
        })
    }

    /// Whether a session is open and grants its credential's authority.
    pub(crate) fn active(&self, sid: &str) -> bool {
        self.open.lock().is_ok_and(|open| {
            open.get(&key(sid))
                .is_some_and(|s| s.ended.is_none() && s.live(Instant::now()))
        })
    }

    /// The anti-forgery token of a live session.
    pub(crate) fn csrf(&self, sid: &str) -> Option<String> {
        let open = self.open.lock().ok()?;
        open.get(&key(sid))
            .filter(|s| s.live(Instant::now()))
            .map(|s| s.csrf.clone())
    }

    /// Keeps a token the session just created, for [`SignIns::take_new_token`].
    fn keep_new_token(&self, sid: &str, token: NewToken) {
        if let Ok(mut open) = self.open.lock()
            && let Some(s) = open.get_mut(&key(sid))
        {
            s.new_token = Some(token);
        }
    }

    /// The token the session just created, taken: it is shown once.
    fn take_new_token(&self, sid: &str) -> Option<NewToken> {
        let mut open = self.open.lock().ok()?;
        open.get_mut(&key(sid))?.new_token.take()
    }

    /// Leaves a message for the session's next page.
    pub(crate) fn flash(&self, sid: &str, message: impl Into<String>) {
        if let Ok(mut open) = self.open.lock()
            && let Some(s) = open.get_mut(&key(sid))
        {
            s.flash = Some(message.into());
        }
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

/// Why a request found no session, as the sign-in page says it (a closed set: the page never
/// shows text taken from its address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// No session, or one that timed out.
    Expired,
    /// The token was revoked.
    Revoked,
    /// The token expired.
    TokenExpired,
    /// The token's owner no longer exists, or its authority cannot be resolved.
    OwnerGone,
    /// Signed out.
    SignedOut,
}

impl Ended {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Ended::Expired => "expired",
            Ended::Revoked => "revoked",
            Ended::TokenExpired => "token-expired",
            Ended::OwnerGone => "owner-gone",
            Ended::SignedOut => "signed-out",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        [
            Ended::Expired,
            Ended::Revoked,
            Ended::TokenExpired,
            Ended::OwnerGone,
            Ended::SignedOut,
        ]
        .into_iter()
        .find(|e| e.as_str() == text)
    }

    pub(crate) fn message(self) -> &'static str {
        match self {
            Ended::Expired => "Your session has ended. Sign in again.",
            Ended::Revoked => "Your session ended: its token was revoked.",
            Ended::TokenExpired => "Your session ended: its token expired.",
            Ended::OwnerGone => "Your session ended: the token's owner no longer has access.",
            Ended::SignedOut => "You are signed out.",
        }
    }
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
    pub(crate) fn flash(&self, message: impl Into<String>) {
        self.sessions.flash(&self.sid, message);
    }

    /// Keeps a token just created until the tokens page shows its secret.
    pub(crate) fn keep_new_token(&self, token: NewToken) {
        self.sessions.keep_new_token(&self.sid, token);
    }

    /// The token this session just created, if the tokens page has not shown it yet.
    pub(crate) fn take_new_token(&self) -> Option<NewToken> {
        self.sessions.take_new_token(&self.sid)
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
        let (credential_id, csrf, flash) = match sessions.touch(&sid) {
            Ok(found) => found,
            Err(ended) => return Err(to_sign_in(parts, Some(ended))),
        };
        match resolve(state, &credential_id) {
            Ok((credential, authority)) => Ok(Self {
                sid,
                credential,
                authority,
                csrf,
                flash,
                kill_switches: kill_switches(state),
                sessions,
            }),
            Err(ended) => {
                tracing::info!(credential = %credential_id, reason = ended.as_str(), "console session ended");
                sessions.end(&sid, ended);
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

    #[test]
    fn an_ended_session_says_why_a_closed_one_is_gone_and_a_flash_is_read_once() {
        let sessions = SignIns::default();
        let sid = sessions.open("tok_1").unwrap();
        sessions.flash(&sid, "done");
        let (id, csrf, flash) = sessions.touch(&sid).unwrap();
        assert_eq!((id.as_str(), flash.as_deref()), ("tok_1", Some("done")));
        assert_eq!(sessions.csrf(&sid), Some(csrf));
        assert_eq!(sessions.touch(&sid).unwrap().2, None);
        assert!(sessions.active(&sid));
        sessions.end(&sid, Ended::Revoked);
        assert_eq!(sessions.touch(&sid).unwrap_err(), Ended::Revoked);
        assert!(!sessions.active(&sid));
        sessions.close(&sid);
        assert_eq!(sessions.touch(&sid).unwrap_err(), Ended::Expired);
        assert_eq!(sessions.touch("forged").unwrap_err(), Ended::Expired);
    }
}
