//! Anti-forgery for every form of the console: each carries a token in a hidden `_csrf`
//! field, checked before any handler runs; a request that changes something without it is
//! refused (403) and changes nothing.
//!
//! A signed-in form carries its session's token. The sign-in form, before there is a session,
//! carries the value of its own `HttpOnly` cookie (double submit), so that no other site can
//! sign a browser in under a token of its choosing. That value is one the server issued: a
//! random nonce and an expiry under an HMAC with a key every replica shares (the store's
//! `console-sign-in` secret), so a pair a client made up itself — the same value in a cookie
//! it planted and in the field — is refused too.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hmac::{KeyInit, Mac};
use serde::Deserialize;
use subtle::ConstantTimeEq;
use warden_control::Control;

use super::signed_in::{COOKIE, SIGN_IN_COOKIE, SignIns, cookie};
use crate::state::MAX_BODY_BYTES;

/// The hidden field of every form.
pub(crate) const FIELD: &str = "_csrf";

type Hmac = hmac::Hmac<sha2::Sha256>;

/// Issues and checks the sign-in form's anti-forgery values.
#[derive(Debug)]
pub(crate) struct SignInKey {
    control: Control,
    key: tokio::sync::OnceCell<Vec<u8>>,
}

impl SignInKey {
    pub(crate) fn new(control: Control) -> Self {
        Self {
            control,
            key: tokio::sync::OnceCell::new(),
        }
    }

    async fn mac(&self, nonce: &str, expires: i64) -> Option<Hmac> {
        let key = self
            .key
            .get_or_try_init(|| async {
                let secret = self.control.shared_secret("console-sign-in").await?;
                hex::decode(secret).map_err(|e| warden_store::StoreError::Corrupt(e.to_string()))
            })
            .await
            .map_err(|e| tracing::error!(error = %e, "the console's sign-in key cannot be read"))
            .ok()?;
        let mut mac = Hmac::new_from_slice(key).ok()?;
        mac.update(format!("sign-in\n{nonce}\n{expires}").as_bytes());
        Some(mac)
    }

    /// A new value, valid for `lifetime`: `<nonce>.<expiry ms>.<tag>`.
    pub(crate) async fn issue(&self, lifetime: Duration) -> Option<String> {
        let nonce = super::signed_in::random_hex()?;
        let expires = self
            .control
            .now()
            .0
            .saturating_add(i64::try_from(lifetime.as_millis()).unwrap_or(i64::MAX));
        let tag = self.mac(&nonce, expires).await?.finalize().into_bytes();
        Some(format!("{nonce}.{expires}.{}", hex::encode(tag)))
    }

    /// Whether `value` is one this server (or another replica) issued and it has not expired.
    pub(crate) async fn valid(&self, value: &str) -> bool {
        let mut parts = value.split('.');
        let (Some(nonce), Some(expires), Some(tag), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        let (Ok(expires), Ok(tag)) = (expires.parse::<i64>(), hex::decode(tag)) else {
            return false;
        };
        if expires <= self.control.now().0 {
            return false;
        }
        match self.mac(nonce, expires).await {
            // In constant time: the tag is what a forger would guess.
            Some(mac) => mac.verify_slice(&tag).is_ok(),
            None => false,
        }
    }
}

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
            let sessions = request.extensions().get::<Arc<SignIns>>();
            match (cookie(headers, COOKIE), sessions) {
                (Some(sid), Some(sessions)) => sessions.csrf(sid).await,
                _ => None,
            }
        }
    };
    let Some(expected) = expected else {
        return refused();
    };
    if request.uri().path() == "/sign-in" {
        let issued = match request.extensions().get::<Arc<SignInKey>>() {
            Some(key) => key.valid(&expected).await,
            None => false,
        };
        if !issued {
            return refused();
        }
    }
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

    async fn control(location: &warden_store::Location) -> Control {
        let store = warden_store::Store::open(location)
            .await
            .expect("the test store");
        Control::new(Arc::new(store), Arc::new(warden_runtime::SystemClock))
    }

    #[tokio::test]
    async fn a_sign_in_value_is_valid_only_as_issued_and_until_it_expires() {
        let store = warden_testkit::sqlite_store().await;
        let key = SignInKey::new(control(&store.location).await);
        let issued = key.issue(Duration::from_secs(60)).await.expect("a value");
        assert!(key.valid(&issued).await);
        let (nonce, rest) = issued.split_once('.').expect("three parts");
        let other = format!("{}.{rest}", "0".repeat(nonce.len()));
        assert!(!key.valid(&other).await, "another nonce under the same tag");
        assert!(
            !key.valid(&"a".repeat(64)).await,
            "a value the client made up"
        );
        let expired = key.issue(Duration::ZERO).await.expect("a value");
        assert!(!key.valid(&expired).await);
        // Another replica of the same store accepts it.
        let replica = SignInKey::new(control(&store.location).await);
        assert!(replica.valid(&issued).await);
    }

    #[test]
    fn tokens_match_only_when_equal_and_never_when_empty() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
        assert!(!same("", ""));
    }
}
