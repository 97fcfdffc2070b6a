//! `POST /hooks/git/{provider}`: a forge's CI report (WORK-3), authenticated by its
//! `X-Hub-Signature-256` under the provider's webhook secret rather than by a bearer token.
//! The rules are the work domain's (`warden_work::forges::hook`, through
//! `warden_control::forges::deliver`); here the request is read and the answer written.
//!
//! A source whose deliveries were refused too often (an unknown provider, no or a bad
//! signature) is answered 429 for a while — unless the delivery is signed by the provider's
//! secret: forges send from shared addresses. Counted apart from failed bearer tokens, so
//! that a forge's address and its users' do not lock each other out.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, Extension, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use warden_control::forges;
use warden_work::forges::hook::{Delivery, HookError, HookRefusal};

use crate::admin::ApiError;
use crate::state::AppState;

/// `POST /hooks/git/{provider}`.
pub(crate) async fn git(
    State(state): State<Arc<AppState>>,
    Path(provider): Path<String>,
    source: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let ip = source.map(|Extension(c)| c.0.ip());
    let failures = &state.hook_failures;
    let body = match body {
        Ok(body) => body,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let delivery = Delivery {
        signature: text("x-hub-signature-256"),
        id: text("x-github-delivery"),
        event: text("x-github-event"),
        body: &body,
    };
    let policy = state.gateway.snapshot().policy.clone();
    // A blocked source's delivery goes through only when it is signed by the provider's
    // secret: forges send from shared addresses, which a stranger's bad hook must not close.
    if let Some(ip) = ip.filter(|ip| failures.blocked(*ip, state.auth_failure_limit))
        && !forges::verified(&state.control, &policy, &provider, delivery)
    {
        let wait = failures.retry_after(ip).as_secs().max(1);
        let mut answer = ApiError::coded(
            StatusCode::TOO_MANY_REQUESTS,
            "RATE_LIMITED",
            format!("too many refused deliveries from this address; retry in {wait}s"),
        )
        .into_response();
        if let Ok(value) = wait.to_string().parse() {
            answer.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return answer;
    }
    match forges::deliver(&state.control, &policy, &provider, delivery).await {
        Ok(taken) => (StatusCode::OK, Json(taken)).into_response(),
        Err(HookError::Store(e)) => ApiError::from(e).into_response(),
        Err(HookError::Refused(refusal)) => {
            let status = match refusal {
                HookRefusal::UnknownProvider(_) => StatusCode::NOT_FOUND,
                HookRefusal::NoSecret(_) => StatusCode::FORBIDDEN,
                HookRefusal::SecretUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                HookRefusal::Unsigned | HookRefusal::BadSignature => StatusCode::UNAUTHORIZED,
                HookRefusal::BadBody(_) => StatusCode::BAD_REQUEST,
            };
            // What a stranger can send counts against its source; the server's own
            // configuration (no secret, one it cannot read) and a signed body do not.
            let stranger = matches!(
                refusal,
                HookRefusal::UnknownProvider(_) | HookRefusal::Unsigned | HookRefusal::BadSignature
            );
            if let (Some(ip), true) = (ip, stranger) {
                failures.record(ip);
            }
            tracing::info!(code = refusal.code(), "a forge delivery was refused");
            ApiError::coded(status, refusal.code(), refusal.to_string()).into_response()
        }
    }
}
