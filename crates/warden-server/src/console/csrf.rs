//! Anti-forgery for every form of the console: each carries a token in a hidden `_csrf`
//! field, checked before any handler runs; a request that changes something without it is
//! refused (403) and changes nothing.
//!
//! A signed-in form carries its session's token. The sign-in form, before there is a session,
//! carries the value of its own `HttpOnly` cookie (double submit), so that no other site can
//! sign a browser in under a token of its choosing.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::session::{COOKIE, SIGN_IN_COOKIE, Sessions, cookie};
use crate::state::MAX_BODY_BYTES;

/// The hidden field of every form.
pub(crate) const FIELD: &str = "_csrf";

#[derive(Debug, Deserialize)]
struct Token {
    #[serde(rename = "_csrf")]
    csrf: Option<String>,
}

/// Whether `given` is `expected`, in time independent of where they differ.
pub(crate) fn same(expected: &str, given: &str) -> bool {
    !expected.is_empty() && bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

fn refused() -> Response {
    tracing::warn!("console request refused: no valid anti-forgery token");
    (
        StatusCode::FORBIDDEN,
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; charset=utf-8",
        )],
        "forbidden: the form was sent without its security token; reload the page and try again\n",
    )
        .into_response()
}

/// The check, as middleware on every console route: requests that may change something
/// (anything but GET and HEAD) must carry the token.
pub(crate) async fn guard(request: Request, next: Next) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    let expected = {
        let headers = request.headers();
        if request.uri().path() == "/sign-in" {
            cookie(headers, SIGN_IN_COOKIE).map(str::to_owned)
        } else {
            let sessions = request.extensions().get::<Arc<Sessions>>();
            cookie(headers, COOKIE).and_then(|sid| sessions.and_then(|s| s.csrf(sid)))
        }
    };
    let Some(expected) = expected else {
        return refused();
    };
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "the form is too large\n").into_response();
    };
    let probe = Request::from_parts(parts.clone(), Body::from(bytes.clone()));
    let given = match axum::Form::<Token>::from_request(probe, &()).await {
        Ok(axum::Form(Token { csrf: Some(given) })) => given,
        _ => return refused(),
    };
    if !same(&expected, &given) {
        return refused();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_when_equal_and_never_when_empty() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
        assert!(!same("", ""));
    }
}
