//! `POST /hooks/git/{provider}`: a forge's CI report (WORK-3), authenticated by its
//! `X-Hub-Signature-256` under the provider's webhook secret rather than by a bearer token.
//! The rules are the work domain's (`warden_work::forges::hook`, through
//! `warden_control::forges::deliver`); here the request is read and the answer written.
//!
//! A source whose deliveries were refused too often (an unknown provider, no secret, no or a
//! bad signature) is answered 429 for a while, before anything is read or recorded — counted
//! apart from failed bearer tokens, so that a forge's shared address sending bad deliveries
//! does not lock its users out of the API, nor they it.

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
    if let Some(ip) = ip.filter(|ip| failures.blocked(*ip, state.auth_failure_limit)) {
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
            // Every refusal but a signed body's counts against its source.
            if let (Some(ip), false) = (ip, matches!(refusal, HookRefusal::BadBody(_))) {
                failures.record(ip);
            }
            tracing::info!(code = refusal.code(), "a forge delivery was refused");
            ApiError::coded(status, refusal.code(), refusal.to_string()).into_response()
        }
    }
}
