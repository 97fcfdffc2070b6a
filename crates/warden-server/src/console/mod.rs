//! The web console, served by `warden serve` from the binary (OPS-5): server-rendered pages,
//! one stylesheet and one small script embedded in the binary; nothing is fetched from
//! anywhere else, so it works offline.
//!
//! - [`signin`] and [`signed_in`]: sign-in with a token, a server-side session in an
//!   `HttpOnly`, `SameSite=Strict` cookie, the credential checked again on every request;
//! - [`csrf`]: an anti-forgery token in every form, checked before any handler runs;
//! - one module per page: [`overview`], [`approvals`] (live, decisions through the gateway,
//!   APR-4), [`runs`], [`audit`], [`kill`], [`explain`], [`tools`], [`agents`] (and tasks),
//!   [`tokens`]; [`layout`] frames them, [`chart`] draws their SVG, [`caps`] says who may
//!   open which.
//!
//! Every answer carries a strict content security policy: scripts, styles and connections
//! from this origin only, no inline script or style, no framing.

use std::sync::Arc;

use axum::extract::{Path, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};

use crate::state::AppState;

mod agents;
mod approvals;
mod audit;
mod caps;
mod chart;
mod chat;
mod csrf;
mod epics;
mod explain;
mod fmt;
mod kill;
mod layout;
mod overview;
mod runs;
mod signed_in;
mod signin;
mod tokens;
mod tool_changes;
mod tools;

/// The content security policy of every console answer.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The console's routes (its own sign-in; not behind the API's bearer authentication).
pub(crate) fn routes(control: warden_control::Control) -> Router<Arc<AppState>> {
    let sessions = Arc::new(signed_in::SignIns::new(control.clone()));
    let failures = Arc::new(signin::Failures::default());
    let sign_in = Arc::new(csrf::SignInKey::new(control));
    Router::new()
        .route("/", get(overview::show))
        .route("/sign-in", get(signin::page).post(signin::sign_in))
        .route("/sign-out", post(signin::sign_out))
        .route("/approvals", get(approvals::inbox))
        .route("/approvals/events", get(approvals::events))
        .route("/approvals/{id}", get(approvals::detail))
        .route("/approvals/{id}/decide", post(approvals::decide))
        .route("/runs", get(runs::list))
        .route("/runs/{id}", get(runs::detail))
        .route("/audit", get(audit::search))
        .route("/audit/export", get(audit::export))
        .route("/audit/verify", post(audit::verify))
        .route("/kill-switches", get(kill::list).post(kill::pull))
        .route("/kill-switches/{key}/release", post(kill::release))
        .route("/explain", get(explain::show))
        .route("/tools", get(tools::show))
        .route("/tools/changes", get(tool_changes::list))
        .route("/tools/changes/{tool}", get(tool_changes::detail))
        .route("/tools/changes/{tool}/accept", post(tool_changes::accept))
        .route("/tools/changes/{tool}/reject", post(tool_changes::reject))
        .route("/agents", get(agents::agents))
        .route("/agents/{agent}/run", post(agents::run_now))
        .route("/tasks", get(agents::tasks))
        .route("/tasks/{id}", get(agents::task))
        .route("/epics", get(epics::board))
        .route("/epics/{id}", get(epics::epic))
        .route("/epic-tasks/{id}", get(epics::task))
        .route("/chat", get(chat::threads).post(chat::start))
        .route("/chat/events", post(chat::start_events))
        .route("/chat/{id}", get(chat::thread).post(chat::send))
        .route("/chat/{id}/events", post(chat::send_events))
        .route("/chat/{id}/delete", post(chat::delete))
        .route("/tokens", get(tokens::list).post(tokens::create))
        .route("/tokens/{id}/revoke", post(tokens::revoke))
        .route("/assets/{version}/{file}", get(asset))
        .layer(axum::middleware::from_fn(csrf::guard))
        .layer(axum::middleware::from_fn(secure_headers))
        .layer(Extension(sessions))
        .layer(Extension(failures))
        .layer(Extension(sign_in))
}

/// The stylesheet and the script. Their URLs carry a hash of their content, so they are
/// cached for a year.
async fn asset(Path((_version, file)): Path<(String, String)>) -> Response {
    let (body, kind) = match file.as_str() {
        "console.css" => (layout::CSS, "text/css; charset=utf-8"),
        "console.js" => (layout::JS, "text/javascript; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, "no such file\n").into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        ],
        body,
    )
        .into_response()
}

/// The security headers of every console answer; pages are never cached.
async fn secure_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Not `no-referrer`: under it browsers send `Origin: null` with the forms' POSTs, which
    // the host check (XPORT-2) rightly refuses. `same-origin` sends nothing to other sites.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}
