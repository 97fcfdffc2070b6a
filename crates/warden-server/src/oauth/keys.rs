//! The signing keys of configured issuers (AUTH-4): discovered from the issuer's metadata
//! unless `jwksUri` names them, fetched once and kept, fetched again when a token names a key
//! that is not known (the issuer rotated its keys) — at most once per [`REFETCH_INTERVAL`] per
//! issuer, one fetch at a time, never while a known key is looked up — and never taken from
//! the token itself (`jwk`, `jku` and `x5u` headers are ignored). An issuer whose keys cannot
//! be fetched verifies nothing it does not already know: its other tokens are refused until
//! they can (fail closed), as unavailable rather than invalid.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use warden_core::config::IssuerSpec;

/// How long after a fetch an unknown key id does not fetch again.
pub(crate) const REFETCH_INTERVAL: Duration = Duration::from_secs(1);
/// How long fetched keys are used before they are fetched again on the next token.
const MAX_AGE: Duration = Duration::from_secs(600);
/// How long one request to an issuer may take.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The largest metadata or key set read.
const MAX_BYTES: usize = 512 * 1024;

/// One usable key of an issuer.
#[derive(Clone)]
pub(crate) struct Key {
    pub(crate) kid: Option<String>,
    /// The algorithm the key declares (`alg`), if any.
    pub(crate) alg: Option<Algorithm>,
    pub(crate) key: DecodingKey,
}

/// Why no key verifies a token.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum KeyError {
    #[error(
        "the signing keys of issuer `{issuer}` cannot be fetched ({reason}): tokens cannot be verified now; try again shortly"
    )]
    Unreachable { issuer: String, reason: String },
    #[error("issuer `{issuer}` has no signing key `{kid}`")]
    UnknownKid { issuer: String, kid: String },
    /// The key is not known and the caller may not make Warden fetch the keys.
    #[error("issuer `{issuer}` has no signing key `{kid}` known without fetching its keys")]
    NotFetched { issuer: String, kid: String },
}

/// The last attempt to fetch an issuer's keys.
struct Attempt {
    began: Instant,
    ended: Instant,
    /// Why it failed, if it did.
    failure: Option<String>,
}

#[derive(Default)]
struct Fetched {
    /// Where the keys are, once discovered (or as configured).
    jwks_uri: Option<String>,
    keys: Vec<Key>,
    attempt: Option<Attempt>,
    /// When keys were last fetched successfully.
    fetched: Option<Instant>,
}

impl Fetched {
    fn fresh(&self) -> bool {
        self.fetched.is_some_and(|at| at.elapsed() < MAX_AGE)
    }

    /// Whether an attempt ended less than [`REFETCH_INTERVAL`] ago.
    fn recent(&self) -> bool {
        self.attempt
            .as_ref()
            .is_some_and(|a| a.ended.elapsed() < REFETCH_INTERVAL)
    }

    /// The answer for `kid` from what is known now.
    fn answer(&self, issuer: &IssuerSpec, kid: Option<&str>) -> Result<Vec<Key>, KeyError> {
        let found = matching(&self.keys, kid);
        if !found.is_empty() {
            return Ok(found);
        }
        if let Some(reason) = self.attempt.as_ref().and_then(|a| a.failure.as_ref()) {
            return Err(KeyError::Unreachable {
                issuer: issuer.name.to_string(),
                reason: reason.clone(),
            });
        }
        Err(KeyError::UnknownKid {
            issuer: issuer.name.to_string(),
            kid: shown(kid),
        })
    }
}

fn shown(kid: Option<&str>) -> String {
    kid.unwrap_or("(none)").chars().take(64).collect()
}

/// One issuer's keys: what is known, behind a lock never held across a request, and the lock
/// that keeps fetches one at a time.
#[derive(Default)]
struct IssuerKeys {
    known: Mutex<Fetched>,
    fetching: tokio::sync::Mutex<()>,
}

impl IssuerKeys {
    fn known(&self) -> std::sync::MutexGuard<'_, Fetched> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The key sets of every issuer, by issuer URL.
pub(crate) struct KeySets {
    http: reqwest::Client,
    issuers: Mutex<HashMap<String, Arc<IssuerKeys>>>,
}

impl std::fmt::Debug for KeySets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySets").finish_non_exhaustive()
    }
}

impl Default for KeySets {
    fn default() -> Self {
        warden_mcp::http_client::install_tls();
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .unwrap_or_default();
        Self {
            http,
            issuers: Mutex::default(),
        }
    }
}

impl KeySets {
    /// The keys that may have signed a token of `issuer` with key id `kid`: the one with that
    /// id, or without an id every key.
    ///
    /// Known keys answer at once, whatever fetch is in flight. A key that is not known makes
    /// Warden fetch the set — when `may_fetch` says so (a source past its failure limit makes
    /// no request to the issuer), at most one fetch at a time per issuer, and not again within
    /// [`REFETCH_INTERVAL`] of the last one: a request that arrives while a fetch is in flight
    /// waits for it and takes its outcome. Keys past [`MAX_AGE`] are fetched again by the
    /// first request that sees them so; the others use them meanwhile.
    pub(crate) async fn keys_for(
        &self,
        issuer: &IssuerSpec,
        kid: Option<&str>,
        may_fetch: &(dyn Fn() -> bool + Sync),
    ) -> Result<Vec<Key>, KeyError> {
        let entry = {
            let mut map = self.issuers.lock().unwrap_or_else(PoisonError::into_inner);
            map.entry(format!(
                "{}|{}",
                issuer.issuer,
                issuer.jwks_uri.as_deref().unwrap_or("")
            ))
            .or_default()
            .clone()
        };
        let asked = Instant::now();
        let found = {
            let known = entry.known();
            let found = matching(&known.keys, kid);
            if (!found.is_empty() && known.fresh()) || known.recent() {
                return known.answer(issuer, kid);
            }
            found
        };
        if !may_fetch() {
            return if found.is_empty() {
                Err(KeyError::NotFetched {
                    issuer: issuer.name.to_string(),
                    kid: shown(kid),
                })
            } else {
                Ok(found)
            };
        }
        let _fetching = if found.is_empty() {
            entry.fetching.lock().await
        } else {
            match entry.fetching.try_lock() {
                Ok(guard) => guard,
                // Aged keys, already being fetched again: used meanwhile.
                Err(_) => return Ok(found),
            }
        };
        let jwks_uri = {
            let known = entry.known();
            // A fetch that began after this request arrived answers for it.
            if known.recent() || known.attempt.as_ref().is_some_and(|a| a.began >= asked) {
                return known.answer(issuer, kid);
            }
            known.jwks_uri.clone()
        };
        let began = Instant::now();
        let outcome = self.fetch(issuer, jwks_uri).await;
        let mut known = entry.known();
        let failure = match outcome {
            Ok((uri, keys)) => {
                tracing::info!(issuer = %issuer.name, keys = keys.len(), "fetched the issuer's signing keys");
                known.jwks_uri = Some(uri);
                known.keys = keys;
                known.fetched = Some(Instant::now());
                None
            }
            Err(reason) => {
                tracing::warn!(issuer = %issuer.name, %reason, "cannot fetch the issuer's signing keys");
                // Keys fetched before keep working until they are MAX_AGE old.
                if !known.fresh() {
                    known.keys.clear();
                }
                Some(reason)
            }
        };
        known.attempt = Some(Attempt {
            began,
            ended: Instant::now(),
            failure,
        });
        known.answer(issuer, kid)
    }

    /// Fetches the key set, discovering where it is first unless `jwks_uri` (configured or
    /// discovered before) says: where it is, and its usable keys.
    async fn fetch(
        &self,
        issuer: &IssuerSpec,
        jwks_uri: Option<String>,
    ) -> Result<(String, Vec<Key>), String> {
        let uri = match (&issuer.jwks_uri, jwks_uri) {
            (Some(configured), _) => configured.clone(),
            (None, Some(discovered)) => discovered,
            (None, None) => self.discover(&issuer.issuer).await?,
        };
        let set = self.get_json(&uri).await?;
        let keys = parse_set(&set);
        if keys.is_empty() {
            return Err(format!("{uri} lists no usable signing key"));
        }
        Ok((uri, keys))
    }

    /// The `jwks_uri` of the issuer's metadata: OpenID discovery, then RFC 8414 (the
    /// well-known path inserted before the issuer's path). The metadata must name the same
    /// issuer (mix-up protection).
    async fn discover(&self, issuer: &str) -> Result<String, String> {
        let base = issuer.trim_end_matches('/');
        let (origin, path) = split_origin(base);
        let candidates = [
            format!("{base}/.well-known/openid-configuration"),
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
        ];
        let mut last = String::new();
        for url in &candidates {
            match self.get_json(url).await {
                Ok(meta) => {
                    let named = meta.get("issuer").and_then(Value::as_str).unwrap_or("");
                    if named.trim_end_matches('/') != base {
                        return Err(format!("{url} names issuer `{named}`, not `{issuer}`"));
                    }
                    return meta
                        .get("jwks_uri")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| format!("{url} has no `jwks_uri`"));
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("GET {url}: {}", error_chain(&e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("GET {url} answered {status}"));
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("GET {url}: {}", error_chain(&e)))?;
        if body.len() > MAX_BYTES {
            return Err(format!(
                "GET {url}: the answer is larger than {MAX_BYTES} bytes"
            ));
        }
        serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON: {e}"))
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// `https://host:port/path` → (`https://host:port`, `/path`).
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

fn matching(keys: &[Key], kid: Option<&str>) -> Vec<Key> {
    match kid {
        Some(kid) => keys
            .iter()
            .filter(|k| k.kid.as_deref() == Some(kid))
            .cloned()
            .collect(),
        None => keys.to_vec(),
    }
}

/// The signing keys of a JWK set, one by one: a key of a type or algorithm this build cannot
/// use, an encryption key or a symmetric key is skipped, not fatal to the others.
fn parse_set(set: &Value) -> Vec<Key> {
    let Some(items) = set.get("keys").and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let jwk = serde_json::from_value::<Jwk>(item.clone()).ok()?;
            // A declared algorithm this build does not verify with makes the key unusable.
            let alg = match item.get("alg").and_then(Value::as_str) {
                Some(a) => Some(a.parse::<Algorithm>().ok()?),
                None => None,
            };
            Some((jwk, alg))
        })
        .filter(|(jwk, _)| {
            !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption))
                && !matches!(
                    jwk.algorithm,
                    jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)
                )
        })
        .filter_map(|(jwk, alg)| {
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some(Key {
                kid: jwk.common.key_id.clone(),
                alg,
                key,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_split_from_paths() {
        assert_eq!(
            split_origin("https://login.example.com/tenant/v2"),
            ("https://login.example.com", "/tenant/v2")
        );
        assert_eq!(
            split_origin("http://127.0.0.1:9"),
            ("http://127.0.0.1:9", "")
        );
    }

    #[test]
    fn symmetric_and_encryption_keys_are_never_used() {
        let set = serde_json::json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "EC", "crv": "P-256", "use": "enc", "kid": "enc",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
             "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "EC", "crv": "P-256", "kid": "sig", "alg": "ES256",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
             "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "nonsense"}
        ]});
        let keys = parse_set(&set);
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("sig"));
        assert_eq!(keys[0].alg, Some(Algorithm::ES256));
    }
}
