//! Signing in with a token and out again.
//!
//! The token is verified by the gateway, as the API's bearer authentication verifies it;
//! failures are counted and limited per source address as there (AUTH-5). It is never
//! stored, shown or put in the cookie: the cookie holds a random session id.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Extension, FromRequest, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;
use warden_core::principal::CredentialKind;

use super::csrf::SignInKey;
use super::layout;
use super::signed_in::{
    COOKIE, Ended, LIFETIME, SIGN_IN_COOKIE, SignIns, Signed, over_https, set_cookie,
};
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub(crate) struct SignInQuery {
    ended: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct SignInForm {
    token: String,
}

/// Failed sign-ins allowed per source address and minute (the API's limit).
const MAX_FAILURES_PER_MINUTE: u32 = 30;

/// Failed sign-ins per source address, for the limit.
#[derive(Debug, Default)]
pub(crate) struct Failures {
    by_source: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Failures {
    fn blocked(&self, ip: IpAddr) -> bool {
        self.by_source.lock().is_ok_and(|map| {
            map.get(&ip).is_some_and(|(start, n)| {
                start.elapsed() < Duration::from_secs(60) && *n >= MAX_FAILURES_PER_MINUTE
            })
        })
    }

    fn record(&self, ip: IpAddr) {
        let Ok(mut map) = self.by_source.lock() else {
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

/// How long the sign-in form stays valid.
const FORM_LIFETIME: Duration = Duration::from_secs(3600);

async fn form(
    key: &SignInKey,
    status: StatusCode,
    secure: bool,
    notice: Option<&str>,
    problem: Option<&str>,
) -> Response {
    let Some(nonce) = key.issue(FORM_LIFETIME).await else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "the sign-in form cannot be made now (no randomness, or the store cannot be read)\n",
        )
            .into_response();
    };
    let body = html! {
        h1 { "Sign in" }
        @if let Some(notice) = notice {
            p.flash role="status" { (notice) }
        }
        @if let Some(problem) = problem {
            p.refusal role="alert" { (problem) }
        }
        form.signin method="post" action="/sign-in" {
            input type="hidden" name=(super::csrf::FIELD) value=(nonce);
            label for="token" { "Token" }
            input #token type="password" name="token" autocomplete="off" spellcheck="false" placeholder="wdn_…" required autofocus;
            button type="submit" { "Sign in" }
        }
        p.hint {
            "Use a token made with " code { "warden token create" } " (or the admin token "
            code { "warden serve" } " printed at its first start). The console shows what that token may see and do."
        }
    };
    let mut response = layout::bare(status, "Sign in", body);
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(SIGN_IN_COOKIE, &nonce, FORM_LIFETIME, secure),
    );
    response
}

/// `GET /sign-in`.
pub(crate) async fn page(
    Extension(key): Extension<Arc<SignInKey>>,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
    Query(q): Query<SignInQuery>,
) -> Response {
    let notice = q
        .ended
        .as_deref()
        .and_then(Ended::parse)
        .map(Ended::message);
    form(
        &key,
        StatusCode::OK,
        over_https(&headers, &uri),
        notice,
        None,
    )
    .await
}

/// `POST /sign-in`.
pub(crate) async fn sign_in(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let secure = over_https(request.headers(), request.uri());
    let extensions = request.extensions().clone();
    let peer = extensions.get::<ConnectInfo<SocketAddr>>().copied();
    let (Some(sessions), Some(key)) = (
        extensions.get::<Arc<SignIns>>().cloned(),
        extensions.get::<Arc<SignInKey>>().cloned(),
    ) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let token = match axum::Form::<SignInForm>::from_request(request, &state).await {
        Ok(axum::Form(f)) => f.token,
        Err(_) => {
            return form(
                &key,
                StatusCode::BAD_REQUEST,
                secure,
                None,
                Some("Give a token."),
            )
            .await;
        }
    };
    let Some(failures) = extensions.get::<Arc<Failures>>().cloned() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let source = peer.map(|p| p.0.ip());
    if let Some(ip) = source
        && failures.blocked(ip)
    {
        metrics::counter!("warden_auth_rate_limited_total").increment(1);
        tracing::warn!(source = %ip, "console sign-in refused: too many failures from this address");
        return form(
            &key,
            StatusCode::TOO_MANY_REQUESTS,
            secure,
            None,
            Some("Too many failed sign-ins from this address; try again in a minute."),
        )
        .await;
    }
    // The check every door makes of a Warden token (a token created a moment ago by another
    // process included).
    let credential = match crate::auth::token_credential(&state, token.trim()).await {
        Ok(c) => c,
        Err(_) if !state.gateway.snapshot().loaded => {
            return form(
                &key,
                StatusCode::SERVICE_UNAVAILABLE,
                secure,
                None,
                Some("Warden has not loaded its configuration yet; try again shortly."),
            )
            .await;
        }
        Err(e) => {
            if let Some(ip) = source {
                failures.record(ip);
            }
            metrics::counter!("warden_auth_failures_total", "reason" => e.to_string()).increment(1);
            let source = source.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string());
            tracing::warn!(%source, reason = %e, "console sign-in failed");
            return form(
                &key,
                StatusCode::UNAUTHORIZED,
                secure,
                None,
                Some(&format!("That token was not accepted: {e}.")),
            )
            .await;
        }
    };
    if credential.kind == CredentialKind::Run {
        return form(
            &key,
            StatusCode::FORBIDDEN,
            secure,
            None,
            Some("A run credential cannot sign in to the console."),
        )
        .await;
    }
    let Some(sid) = sessions.open(&credential.id).await else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "the console cannot open a session now; try again shortly\n",
        )
            .into_response();
    };
    tracing::info!(credential = %credential.id, principal = %credential.principal, "signed in to the console");
    let mut response = layout::see_other("/");
    let headers = response.headers_mut();
    headers.append(
        header::SET_COOKIE,
        set_cookie(COOKIE, &sid, LIFETIME, secure),
    );
    headers.append(
        header::SET_COOKIE,
        set_cookie(SIGN_IN_COOKIE, "", Duration::ZERO, secure),
    );
    response
}

/// `POST /sign-out`.
pub(crate) async fn sign_out(
    signed: Result<Signed, Response>,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let secure = over_https(&headers, &uri);
    if let Ok(signed) = &signed {
        if !signed.sessions.close(&signed.sid).await {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "you are not signed out: the store cannot be written; try again shortly\n",
            )
                .into_response();
        }
        tracing::info!(credential = %signed.credential.id, "signed out of the console");
    }
    let mut response = layout::see_other(&format!("/sign-in?ended={}", Ended::SignedOut.as_str()));
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(COOKIE, "", Duration::ZERO, secure),
    );
    response
}
