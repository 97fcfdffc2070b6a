//! Bearer authentication for MCP and the admin API (AUTH-1, AUTH-3, AUTH-5).
//!
//! Identity comes only from a verified credential: identity headers such as
//! `x-service-account` are ignored (and logged). Failed authentications are counted per
//! source address and limited — the failures only: a valid credential is always let through,
//! so that one client's mistakes never lock out its neighbours behind the same address (every
//! local agent shares loopback). Past the limit a bad credential is answered 429 instead of
//! 401, counted (`warden_auth_rate_limited_total`) and logged, never with what was presented.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use warden_core::principal::{CredentialRejection, looks_like_token};
use warden_mcp::{AgentRoute, Authenticated, Gateway};

/// Failed authentications allowed per source address and minute.
const MAX_FAILURES_PER_MINUTE: u32 = 30;

/// Headers some gateways trust for identity. Warden never does.
/// As header names, not strings: a lookup by string parses the name first, on every request.
static IDENTITY_HEADERS: [HeaderName; 5] = [
    HeaderName::from_static("x-service-account"),
    HeaderName::from_static("x-warden-principal"),
    HeaderName::from_static("x-user"),
    HeaderName::from_static("x-forwarded-user"),
    HeaderName::from_static("x-remote-user"),
];

/// Counts failed authentications per source, and keeps the store's re-reads for unknown
/// tokens to one at a time.
#[derive(Debug, Default)]
pub(crate) struct FailureLimiter {
    failures: Mutex<HashMap<IpAddr, (Instant, u32)>>,
    /// When the latest re-read of the store for an unknown token began; held while one runs.
    reread: tokio::sync::Mutex<Option<Instant>>,
}

/// Reads the store's revision again for a token the gateway does not know, and reloads when
/// it moved since the snapshot: a token another process created a moment ago (`warden token
/// create --data-dir …`) is known at once rather than at the next poll (STORE-1b). Re-reads
/// run one at a time, and one that began after a request arrived answers for it too, so
/// however many unknown tokens arrive the store sees at most one revision read at a time.
async fn reread_store(gateway: &Gateway, limiter: &FailureLimiter) {
    let asked = Instant::now();
    let mut latest = limiter.reread.lock().await;
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

impl FailureLimiter {
    fn blocked(&self, ip: IpAddr) -> bool {
        let Ok(map) = self.failures.lock() else {
            return false;
        };
        map.get(&ip).is_some_and(|(start, n)| {
            start.elapsed() < Duration::from_secs(60) && *n >= MAX_FAILURES_PER_MINUTE
        })
    }

    fn record(&self, ip: IpAddr) {
        let Ok(mut map) = self.failures.lock() else {
            return;
        };
        if map.len() > 10_000 {
            map.retain(|_, (start, _)| start.elapsed() < Duration::from_secs(60));
        }
        let entry = map.entry(ip).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= Duration::from_secs(60) {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
    }
}

/// A 401 with the reason: the admin API's error shape under `/api/`, one line elsewhere.
fn unauthorized(reason: &str, api: bool) -> Response {
    let mut response = if api {
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(serde_json::json!({"error": reason, "code": "UNAUTHENTICATED"})),
        )
            .into_response()
    } else {
        (StatusCode::UNAUTHORIZED, format!("{reason}\n")).into_response()
    };
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"warden\""),
    );
    response
}

/// The check itself: puts the credential (and the agent) into `request`'s extensions, or
/// returns the answer that refuses it.
///
/// A token the gateway's in-memory table does not know is looked for once more after the
/// store is re-read ([`reread_store`]), so that a token created a moment ago by another
/// process works at once instead of after the next poll. A source past its failure limit is
/// answered 429 without that second look. A known token never waits for the store, and a
/// token that exists nowhere gets the same refusal as before, after the same lookup by hash.
pub(crate) async fn verify(
    gateway: &Gateway,
    failures: &FailureLimiter,
    request: &mut Request,
) -> Result<(), Response> {
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
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
                .unwrap_or("")
                .trim()
                .to_owned()
        });
    let api = request.uri().path().starts_with("/api/");
    let Some(token) = token else {
        return Err(unauthorized(
            "missing bearer token: send `Authorization: Bearer wdn_…`",
            api,
        ));
    };
    let blocked = || source.is_some_and(|ip| failures.blocked(ip));
    let credential = match gateway.authenticate(&token) {
        Err(CredentialRejection::Unknown)
            if looks_like_token(&token) && gateway.snapshot().loaded && !blocked() =>
        {
            reread_store(gateway, failures).await;
            gateway.authenticate(&token)
        }
        other => other,
    };
    let credential = match credential {
        Ok(c) => c,
        Err(_) if !gateway.snapshot().loaded => {
            // No credential is known before the store was first read: every token would be
            // "unknown". A client told so retries; one told 401 may discard a valid token.
            tracing::warn!("refused a request: the configuration is not loaded from the store");
            let mut response = (
                StatusCode::SERVICE_UNAVAILABLE,
                "Warden has not loaded its configuration and credentials: the store cannot be read; try again shortly\n",
            )
                .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return Err(response);
        }
        Err(e) => {
            if let Some(ip) = source
                && blocked()
            {
                metrics::counter!("warden_auth_rate_limited_total").increment(1);
                tracing::warn!(
                    source = %ip,
                    reason = %e,
                    "authentication failed past the limit of this address: answered 429"
                );
                return Err((
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many failed authentications from this address; try again in a minute\n",
                )
                    .into_response());
            }
            if let Some(ip) = source {
                failures.record(ip);
            }
            metrics::counter!("warden_auth_failures_total", "reason" => e.to_string()).increment(1);
            tracing::warn!(
                source = source.map(tracing::field::display),
                reason = %e,
                "authentication failed"
            );
            return Err(unauthorized(&e.to_string(), api));
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
    request.extensions_mut().insert(Authenticated(credential));
    Ok(())
}
