//! Bearer authentication for MCP and the admin API (AUTH-1, AUTH-3, AUTH-4, AUTH-5).
//!
//! Identity comes only from a verified credential: identity headers such as
//! `x-service-account` are ignored (and logged). Failed authentications are counted per
//! source address and limited — the failures only: a valid credential is always let through,
//! so that one client's mistakes never lock out its neighbours behind the same address (every
//! local agent shares loopback). Past the limit a bad credential is answered 429 instead of
//! 401, with `Retry-After`, counted (`warden_auth_rate_limited_total`) and logged, never with
//! what was presented. Warden tokens are compared by their SHA-256 in a hash table (AUTH-5:
//! nothing secret is compared byte by byte); access tokens are verified by signature.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use warden_core::principal::{Credential, CredentialKind, CredentialRejection, looks_like_token};
use warden_mcp::{AgentRoute, Authenticated, Gateway, SubjectToken};

use crate::limiter::FailureLimiter;
use crate::oauth::{self, Refusal, challenge};
use crate::state::AppState;

/// Headers some gateways trust for identity. Warden never does.
/// As header names, not strings: a lookup by string parses the name first, on every request.
static IDENTITY_HEADERS: [HeaderName; 5] = [
    HeaderName::from_static("x-service-account"),
    HeaderName::from_static("x-warden-principal"),
    HeaderName::from_static("x-user"),
    HeaderName::from_static("x-forwarded-user"),
    HeaderName::from_static("x-remote-user"),
];

/// Reads the store's revision again for a token the gateway does not know, and reloads when
/// it moved since the snapshot: a token another process created a moment ago (`warden token
/// create --data-dir …`) is known at once rather than at the next poll (STORE-1b). Re-reads
/// run one at a time, and one that began after a request arrived answers for it too, so
/// however many unknown tokens arrive the store sees at most one revision read at a time.
async fn reread_store(gateway: &Gateway, limiter: &FailureLimiter) {
    let asked = Instant::now();
    let mut latest = limiter.reread().lock().await;
    if latest.is_some_and(|began| began >= asked) {
        return;
    }
    *latest = Some(Instant::now());
    match gateway.store().revision().await {
        Ok(revision) if revision != gateway.snapshot().revision => gateway.refresh().await,
        Ok(_) => {}
        Err(e) => tracing::debug!(error = %e, "cannot read the store's revision"),
    }
}

/// Reads the store again when its configuration or credentials changed since the snapshot
/// (at most one reread at a time; a caller that waited for one takes its result).
pub(crate) async fn reread(state: &AppState) {
    reread_store(&state.gateway, &state.auth_failures).await;
}

/// The credential of a Warden token, for every door that takes one (the MCP endpoints, the
/// admin API, the console's sign-in): a hash lookup in the gateway's table, constant-time —
/// and, for a token the table does not know, once more after the store is re-read
/// ([`reread_store`]), so that a token another process created a moment ago works at once.
pub(crate) async fn token_credential(
    state: &AppState,
    token: &str,
) -> Result<Credential, CredentialRejection> {
    let gateway = &state.gateway;
    match gateway.authenticate(token) {
        Err(CredentialRejection::Unknown)
            if looks_like_token(token) && gateway.snapshot().loaded =>
        {
            Box::pin(reread_store(gateway, &state.auth_failures)).await;
            gateway.authenticate(token)
        }
        other => other,
    }
}

/// Why a request's credential is refused.
enum Refused {
    /// 401: no credential.
    Missing(&'static str),
    /// 401 `invalid_token`, or an OAuth refusal.
    Credential(Refusal),
}

/// The answer that refuses a request: the admin API's error shape under `/api/`, one line
/// elsewhere, with the challenge of the status (RFC 6750, RFC 9728).
fn refusal(state: &AppState, request: &Request, refused: &Refused) -> Response {
    let (status, code, message, error) = match refused {
        Refused::Missing(m) => (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", *m, None),
        Refused::Credential(r) => match r {
            Refusal::InvalidToken(m) => (
                StatusCode::UNAUTHORIZED,
                "UNAUTHENTICATED",
                m.as_str(),
                Some("invalid_token"),
            ),
            Refusal::InsufficientScope(m) => (
                StatusCode::FORBIDDEN,
                "FORBIDDEN",
                m.as_str(),
                Some("insufficient_scope"),
            ),
            Refusal::Forbidden(m) => (StatusCode::FORBIDDEN, "FORBIDDEN", m.as_str(), None),
            Refusal::Unavailable(m) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "UNAVAILABLE",
                m.as_str(),
                None,
            ),
            Refusal::Limited(m) => (
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMITED",
                m.as_str(),
                None,
            ),
        },
    };
    let mut response = if request.uri().path().starts_with("/api/") {
        (
            status,
            axum::Json(serde_json::json!({"error": message, "code": code})),
        )
            .into_response()
    } else {
        (status, format!("{message}\n")).into_response()
    };
    let description = error.map(|e| (e, message));
    let challenge = match (status, description) {
        (StatusCode::FORBIDDEN, None)
        | (StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS, _) => None,
        _ => Some(challenge(state, request, description)),
    };
    if let Some(c) = challenge {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, c);
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    }
    response
}

/// The answer to a source past its failure limit whose credential is not served: 429, with
/// when its window ends, counted and logged — never with what was presented.
fn too_many(failures: &FailureLimiter, ip: IpAddr, reason: &str) -> Response {
    metrics::counter!("warden_auth_rate_limited_total").increment(1);
    tracing::warn!(
        source = %ip,
        reason,
        "authentication failed past the limit of this address: answered 429"
    );
    let retry = failures.retry_after(ip).as_secs().max(1);
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        format!("too many failed authentications from this address; try again in {retry} s\n"),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&retry.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

/// The presented bearer token, if any (`Authorization: Bearer …`, the scheme in any case).
fn bearer(request: &Request) -> Option<String> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    Some(if scheme.eq_ignore_ascii_case("bearer") {
        token.trim().to_owned()
    } else {
        String::new()
    })
}

/// The check itself: puts the credential (and the agent) into `request`'s extensions, or
/// returns the answer that refuses it.
///
/// A token the gateway's in-memory table does not know is looked for once more after the
/// store is re-read ([`reread_store`]), so that a token created a moment ago by another
/// process works at once instead of after the next poll — also from a source past its
/// failure limit (AUTH-5: a valid credential is never refused for its neighbours' mistakes;
/// re-reads are one at a time whoever asks). A known token never waits for the store, and a
/// token that exists nowhere gets the same refusal as before, after the same lookup by hash.
///
/// On the MCP endpoints a JWT is an access token of a configured issuer (`oauth`). A source
/// past its failure limit makes Warden send no request to an issuer: its token is verified
/// with the keys already fetched. An issuer whose keys cannot be fetched makes its tokens
/// unavailable (503), which is not a failed authentication.
pub(crate) async fn verify(state: &AppState, request: &mut Request) -> Result<(), Response> {
    let gateway = &state.gateway;
    let failures = &state.auth_failures;
    let source = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    for name in &IDENTITY_HEADERS {
        if request.headers().contains_key(name) {
            tracing::warn!(
                header = name.as_str(),
                "ignored an identity header: identity comes only from the bearer token"
            );
        }
    }
    let Some(token) = bearer(request) else {
        return Err(refusal(
            state,
            request,
            &Refused::Missing("missing bearer token: send `Authorization: Bearer wdn_…`"),
        ));
    };
    let blocked = || source.is_some_and(|ip| failures.blocked(ip, state.auth_failure_limit));
    let mcp = request.uri().path().starts_with("/mcp");
    let credential = if mcp && !looks_like_token(&token) && oauth::looks_like_jwt(&token) {
        if !gateway.snapshot().loaded {
            Err(Refusal::Unavailable(NOT_LOADED.into()))
        } else {
            let may_fetch = || !blocked();
            // Boxed, as the store's re-read below: the request futures around a bearer
            // token's check hold a pointer to these rare paths, not their whole state.
            Box::pin(
                state
                    .oauth
                    .authenticate(gateway, &token, state.origins(), &may_fetch),
            )
            .await
        }
    } else {
        token_credential(state, &token).await.map_err(|e| {
            if gateway.snapshot().loaded {
                Refusal::InvalidToken(e.to_string())
            } else {
                // No credential is known before the store was first read: every token
                // would be "unknown". A client told so retries; one told 401 may discard a
                // valid token.
                Refusal::Unavailable(NOT_LOADED.into())
            }
        })
    };
    let credential = match credential {
        Ok(c) => c,
        Err(Refusal::Unavailable(reason)) => {
            tracing::warn!(%reason, "refused a request: cannot check its credential now");
            return Err(refusal(
                state,
                request,
                &Refused::Credential(Refusal::Unavailable(reason)),
            ));
        }
        Err(e) => {
            if let Some(ip) = source
                && (matches!(e, Refusal::Limited(_)) || blocked())
            {
                return Err(too_many(failures, ip, e.message()));
            }
            if let Some(ip) = source {
                failures.record(ip);
            }
            let reason = match &e {
                Refusal::InvalidToken(_) if oauth::looks_like_jwt(&token) => "invalid access token",
                Refusal::InvalidToken(m) => m.as_str(),
                Refusal::InsufficientScope(_) => "insufficient scope",
                Refusal::Forbidden(_) => "principal not accepted",
                Refusal::Unavailable(_) => "unavailable",
                Refusal::Limited(_) => "rate limited",
            };
            metrics::counter!("warden_auth_failures_total", "reason" => reason.to_owned())
                .increment(1);
            tracing::warn!(
                source = source.map(tracing::field::display),
                reason = e.message(),
                "authentication failed"
            );
            return Err(refusal(state, request, &Refused::Credential(e)));
        }
    };
    if let Some(agent) = request.uri().path().strip_prefix("/mcp/agents/") {
        let agent = agent.trim_end_matches('/').to_owned();
        if gateway.snapshot().policy.agent(&agent).is_none() {
            return Err((
                StatusCode::NOT_FOUND,
                format!(
                    "no agent named `{}`\n",
                    agent.chars().take(64).collect::<String>()
                ),
            )
                .into_response());
        }
        request.extensions_mut().insert(AgentRoute(agent));
    }
    if credential.kind == CredentialKind::Jwt {
        // For upstreams that act as their caller (AUTH-6); never stored, never logged.
        let subject = SubjectToken::new(&token);
        request.extensions_mut().insert(subject);
    }
    request.extensions_mut().insert(Authenticated(credential));
    Ok(())
}

const NOT_LOADED: &str = "Warden has not loaded its configuration and credentials: the store cannot be read; try again shortly";
