//! Acting as the caller at an upstream (AUTH-6): the caller's access token is exchanged at its
//! issuer (RFC 8693) for a token whose audience is the upstream, and that token is the bearer
//! of the call — never a key of Warden's own.
//!
//! Warden authenticates at the token endpoint as its own client (the `Issuer`'s `exchange`,
//! HTTP Basic). An exchanged token is kept per subject token (by its SHA-256), agent,
//! audience and scopes until shortly before it (or the caller's own token) expires, so that a
//! caller's next calls cost no round trip to the issuer; another token of the same user is
//! exchanged anew, never served a token minted from someone else's. The token endpoint is the
//! issuer's metadata's unless the `Issuer` names one; found once per issuer URL.
//!
//! Warden presents no actor token: the issuer knows Warden as the client that asks, and the
//! agent and run that act are in the audit trail's call record (`on_behalf_of`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use warden_core::config::{ExchangeClient, ExchangeSpec, IssuerSpec};
use warden_core::time::Millis;
use warden_runtime::Secrets;

/// The grant type of RFC 8693.
const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The type of the subject token and of the token asked for.
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// How long one request to the issuer may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// An exchanged token is not used in its last this-many milliseconds (nor past the caller's
/// own token).
const MARGIN_MS: i64 = 30_000;
/// How long a token whose answer gave no `expires_in` is kept.
const UNTOLD_LIFETIME_MS: i64 = 300_000;
/// Most tokens kept; the table starts over when full.
const MAX_KEPT: usize = 10_000;
/// Largest answer read from the issuer.
const MAX_ANSWER: usize = 64 * 1024;

/// The caller's own access token, as presented on the request (never stored, never logged).
#[derive(Clone)]
pub struct SubjectToken {
    token: Arc<str>,
    /// Its SHA-256: what exchanged tokens are kept under.
    hash: [u8; 32],
    /// When it expires (its `exp`), if it says.
    expires_at: Option<Millis>,
}

impl SubjectToken {
    /// The verified JWT `token`.
    pub fn new(token: &str) -> Self {
        use base64::Engine as _;
        use sha2::Digest as _;
        let exp = token
            .split('.')
            .nth(1)
            .and_then(|p| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(p)
                    .ok()
            })
            .and_then(|p| serde_json::from_slice::<serde_json::Value>(&p).ok())
            .and_then(|c| c.get("exp")?.as_i64());
        Self {
            token: Arc::from(token),
            hash: sha2::Sha256::digest(token.as_bytes()).into(),
            expires_at: exp.map(|s| Millis(s.saturating_mul(1000))),
        }
    }
}

impl std::fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubjectToken")
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Who a call acts for, and through what.
pub(crate) struct Acting<'a> {
    /// The upstream (for messages).
    pub upstream: &'a str,
    /// The issuer's configuration.
    pub issuer: &'a IssuerSpec,
    /// What to ask for.
    pub spec: &'a ExchangeSpec,
    /// The agent acting for the caller, if any.
    pub agent: Option<&'a str>,
    /// The caller's token.
    pub subject: &'a SubjectToken,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    subject: [u8; 32],
    issuer: String,
    agent: Option<String>,
    audience: String,
    scopes: String,
}

/// Exchanged tokens and the token endpoints they came from.
#[derive(Default)]
pub(crate) struct Exchanges {
    kept: Mutex<HashMap<Key, (Arc<str>, Millis)>>,
    endpoints: Mutex<HashMap<String, String>>,
    /// Exchanges made (for the metrics and tests): kept tokens do not count.
    made: std::sync::atomic::AtomicU64,
}

#[derive(Deserialize)]
struct Minted {
    access_token: String,
    #[serde(default)]
    expires_in: Option<i64>,
}

#[derive(Deserialize)]
struct Refused {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

impl std::fmt::Debug for Exchanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchanges")
            .field(
                "kept",
                &self.kept.lock().map(|k| k.len()).unwrap_or_default(),
            )
            .field("made", &self.made())
            .finish_non_exhaustive()
    }
}

impl Exchanges {
    /// The bearer of a call acting as `acting`'s caller at `now`: kept, or exchanged now. The
    /// error names the issuer and what went wrong, for the caller.
    pub(crate) async fn bearer(
        &self,
        acting: &Acting<'_>,
        secrets: &Secrets,
        now: Millis,
    ) -> Result<Arc<str>, String> {
        let key = Key {
            subject: acting.subject.hash,
            issuer: acting.issuer.name.to_string(),
            agent: acting.agent.map(str::to_owned),
            audience: acting.spec.audience.clone(),
            scopes: acting.spec.scopes.join(" "),
        };
        let kept = self.kept.lock().ok().and_then(|k| k.get(&key).cloned());
        if let Some((token, until)) = kept
            && now < until
        {
            return Ok(token);
        }
        let name = &acting.issuer.name;
        let failed = |why: String| {
            format!(
                "cannot act as the caller at upstream `{}`: issuer `{name}` {why}",
                acting.upstream
            )
        };
        let client = acting
            .issuer
            .exchange
            .as_ref()
            .ok_or_else(|| failed("has no `exchange` client for Warden".into()))?;
        let endpoint = self
            .endpoint(acting.issuer, client)
            .await
            .map_err(&failed)?;
        let (token, lifetime) = exchange(&endpoint, client, acting, secrets)
            .await
            .map_err(&failed)?;
        self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        metrics::counter!("warden_token_exchanges_total", "issuer" => name.to_string())
            .increment(1);
        let mut until = now.0.saturating_add(lifetime.unwrap_or(UNTOLD_LIFETIME_MS)) - MARGIN_MS;
        if let Some(own) = acting.subject.expires_at {
            until = until.min(own.0);
        }
        let token: Arc<str> = Arc::from(token);
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() >= MAX_KEPT {
                kept.clear();
            }
            kept.insert(key, (token.clone(), Millis(until)));
        }
        Ok(token)
    }

    /// How many exchanges were made (kept tokens reused do not count).
    pub(crate) fn made(&self) -> u64 {
        self.made.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The issuer's token endpoint: configured, found before, or read from its metadata.
    async fn endpoint(
        &self,
        issuer: &IssuerSpec,
        client: &ExchangeClient,
    ) -> Result<String, String> {
        if let Some(e) = &client.token_endpoint {
            return Ok(e.clone());
        }
        let base = issuer.issuer.trim_end_matches('/');
        if let Some(e) = self
            .endpoints
            .lock()
            .ok()
            .and_then(|m| m.get(base).cloned())
        {
            return Ok(e);
        }
        let http = crate::http_client::shared()?;
        let mut last = String::new();
        for well_known in ["openid-configuration", "oauth-authorization-server"] {
            let url = format!("{base}/.well-known/{well_known}");
            let answer = http.get(&url).timeout(TIMEOUT).send().await;
            let found = match answer {
                Ok(r) if r.status().is_success() => read_limited(r)
                    .await
                    .ok()
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                    .and_then(|m| m.get("token_endpoint")?.as_str().map(str::to_owned)),
                Ok(r) => {
                    last = format!("answered HTTP {} at {url}", r.status().as_u16());
                    continue;
                }
                Err(e) => {
                    last = format!("cannot be reached at {url}: {e}");
                    continue;
                }
            };
            if let Some(endpoint) = found {
                if let Ok(mut m) = self.endpoints.lock() {
                    m.insert(base.to_owned(), endpoint.clone());
                }
                return Ok(endpoint);
            }
            last = format!("names no token_endpoint at {url}");
        }
        Err(last)
    }
}

/// One RFC 8693 request: the token and its lifetime in milliseconds, if told.
async fn exchange(
    endpoint: &str,
    client: &ExchangeClient,
    acting: &Acting<'_>,
    secrets: &Secrets,
) -> Result<(String, Option<i64>), String> {
    let secret = secrets
        .resolve(&client.client_secret)
        .map_err(|e| format!("has no secret for Warden's client: {e}"))?;
    // Written whole before the request: the serializer is not `Send`.
    let form = {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", GRANT_TYPE)
            .append_pair("subject_token", &acting.subject.token)
            .append_pair("subject_token_type", ACCESS_TOKEN_TYPE)
            .append_pair("requested_token_type", ACCESS_TOKEN_TYPE)
            .append_pair("audience", &acting.spec.audience);
        // RFC 8707: a resource is an absolute URI; a logical audience goes alone.
        if acting.spec.audience.contains("://") {
            form.append_pair("resource", &acting.spec.audience);
        }
        if !acting.spec.scopes.is_empty() {
            form.append_pair("scope", &acting.spec.scopes.join(" "));
        }
        form.finish()
    };
    // RFC 6749 §2.3.1: the id and secret are form-encoded before they are joined.
    let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let http = crate::http_client::shared()?;
    let answer = http
        .post(endpoint)
        .basic_auth(encode(&client.client_id), Some(encode(&secret)))
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json")
        .body(form)
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("cannot be reached at {endpoint}: {e}"))?;
    let status = answer.status();
    let body = read_limited(answer).await?;
    let body = body.as_slice();
    if !status.is_success() {
        return Err(match serde_json::from_slice::<Refused>(body) {
            Ok(r) => format!(
                "refused the token exchange: {}{}",
                r.error,
                r.error_description
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ),
            Err(_) => format!("refused the token exchange: HTTP {}", status.as_u16()),
        });
    }
    let minted: Minted = serde_json::from_slice(body)
        .map_err(|e| format!("answered the token exchange without a token: {e}"))?;
    Ok((
        minted.access_token,
        minted.expires_in.map(|s| s.saturating_mul(1000)),
    ))
}

/// An answer of the issuer, read up to [`MAX_ANSWER`] bytes.
async fn read_limited(mut answer: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = answer
        .chunk()
        .await
        .map_err(|e| format!("sent an unreadable answer: {e}"))?
    {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(format!("answered more than {} KiB", MAX_ANSWER >> 10));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

    use std::sync::atomic::{AtomicU64, Ordering};

    use base64::Engine as _;
    use serde_json::json;

    use super::*;

    /// A token endpoint minting `t1`, `t2`, … each valid `lifetime` seconds.
    async fn token_endpoint(lifetime: i64) -> (String, Arc<AtomicU64>) {
        let minted = Arc::new(AtomicU64::new(0));
        let count = minted.clone();
        let app = axum::Router::new().route(
            "/token",
            axum::routing::post(move || {
                let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                async move {
                    axum::Json(json!({
                        "access_token": format!("t{n}"),
                        "token_type": "Bearer",
                        "expires_in": lifetime,
                    }))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (format!("http://{addr}/token"), minted)
    }

    /// A JWT-shaped subject token that expires at `exp` (seconds).
    fn subject(exp: i64) -> SubjectToken {
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(json!({ "sub": "alice", "exp": exp }).to_string());
        SubjectToken::new(&format!("e30.{claims}.sig"))
    }

    #[tokio::test]
    async fn a_kept_token_serves_until_shortly_before_it_or_the_callers_expires() {
        crate::http_client::install_tls();
        let (endpoint, minted) = token_endpoint(120).await;
        let secrets_dir = tempfile::tempdir().unwrap();
        std::fs::write(secrets_dir.path().join("exchange"), "s3cret").unwrap();
        let secrets = Secrets::new(Some(secrets_dir.path().to_path_buf()));
        let issuer: IssuerSpec = serde_json::from_value(json!({
            "name": "corp",
            "issuer": "https://idp.example",
            "exchange": {
                "clientId": "warden",
                "clientSecret": "${secret:exchange}",
                "tokenEndpoint": endpoint,
            },
        }))
        .unwrap();
        let spec: ExchangeSpec = serde_json::from_value(json!({
            "issuer": "corp",
            "audience": "https://ledger.example/mcp",
        }))
        .unwrap();
        let t0 = 1_800_000_000_000_i64;
        let alice = subject(t0 / 1000 + 3600);
        let acting = |subject| Acting {
            upstream: "ledger",
            issuer: &issuer,
            spec: &spec,
            agent: None,
            subject,
        };
        let exchanges = Exchanges::default();
        let at = |ms: i64| Millis(t0 + ms);

        assert_eq!(
            &*exchanges
                .bearer(&acting(&alice), &secrets, at(0))
                .await
                .unwrap(),
            "t1"
        );
        // Kept: 120 s of life, less the 30 s margin.
        let kept = exchanges
            .bearer(&acting(&alice), &secrets, at(89_999))
            .await;
        assert_eq!(&*kept.unwrap(), "t1");
        assert_eq!(minted.load(Ordering::SeqCst), 1);
        // From then on, a new one.
        let renewed = exchanges
            .bearer(&acting(&alice), &secrets, at(90_000))
            .await;
        assert_eq!(&*renewed.unwrap(), "t2");
        assert_eq!((exchanges.made(), minted.load(Ordering::SeqCst)), (2, 2));

        // Another token of hers is exchanged anew, and one about to expire is not outlived.
        let short = subject(t0 / 1000 + 60);
        let first = exchanges.bearer(&acting(&short), &secrets, at(0)).await;
        assert_eq!(&*first.unwrap(), "t3");
        let kept = exchanges
            .bearer(&acting(&short), &secrets, at(59_999))
            .await;
        assert_eq!(&*kept.unwrap(), "t3");
        let after = exchanges
            .bearer(&acting(&short), &secrets, at(60_000))
            .await;
        assert_eq!(
            &*after.unwrap(),
            "t4",
            "kept no longer than the caller's own token"
        );
    }
}
