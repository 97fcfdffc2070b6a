//! Verifying an access token and naming its credential (see the module above).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};
use warden_core::config::{IssuerSpec, Kind, Located, Resource, UserSpec};
use warden_core::oauth::{ClaimsRefusal, claimed};
use warden_core::pipeline::Clock as _;
use warden_core::policy::Policy;
use warden_core::principal::{Credential, CredentialKind, JWT_CREDENTIAL_PREFIX, TokenHash};
use warden_core::time::Millis;
use warden_mcp::Gateway;

use super::keys::{self, KeyError};
use super::resource::Origins;

/// How many verified tokens are remembered before the memory starts over.
const MAX_VERIFIED: usize = 10_000;

/// Why an access token is refused, as the answer says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 401 `invalid_token`.
    InvalidToken(String),
    /// 403 `insufficient_scope`, naming the scope.
    InsufficientScope(String),
    /// 403: a valid token of a principal Warden does not accept.
    Forbidden(String),
    /// 503: the token cannot be checked now — its issuer's keys cannot be fetched, or the
    /// store could not take a user created on first sight.
    Unavailable(String),
    /// 429: the token names a key not fetched yet, and its source is past its failure limit
    /// (it makes Warden send no request to the issuer).
    Limited(String),
}

impl Refusal {
    /// The message, safe to show: never the token.
    pub(crate) fn message(&self) -> &str {
        match self {
            Self::InvalidToken(m)
            | Self::InsufficientScope(m)
            | Self::Forbidden(m)
            | Self::Unavailable(m)
            | Self::Limited(m) => m,
        }
    }
}

/// A token verified once: its issuer and claims, valid until `exp`.
struct Verified {
    revision: u64,
    issuer: String,
    claims: Arc<Map<String, Value>>,
    expires: i64,
}

/// The resource server's state: issuers' keys and tokens verified so far.
#[derive(Default)]
pub(crate) struct Oauth {
    keys: keys::KeySets,
    verified: Mutex<HashMap<TokenHashKey, Verified>>,
}

impl std::fmt::Debug for Oauth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oauth").finish_non_exhaustive()
    }
}

/// [`TokenHash`] as a map key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct TokenHashKey([u8; 32]);

/// Whether `token` has the shape of a JWT (three base64url parts, the first a JSON object):
/// only then is it a candidate for an issuer.
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    decode_part(header).is_some_and(|v| v.is_object())
}

fn decode_part(part: &str) -> Option<Value> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::InvalidToken(message.into())
}

impl Oauth {
    /// Verifies an access token for this server, whose origins are `origins` (its resource
    /// URLs are the audiences of an issuer that names none), and returns the credential it
    /// stands for. `may_fetch` says whether the request may make Warden fetch an issuer's
    /// keys (`keys`).
    pub(crate) async fn authenticate(
        &self,
        gateway: &Gateway,
        token: &str,
        origins: &Origins,
        may_fetch: &(dyn Fn() -> bool + Sync),
    ) -> Result<Credential, Refusal> {
        let snapshot = gateway.snapshot();
        let policy = &snapshot.policy;
        let now = gateway.clock().now();
        let (issuer, claims) = self
            .verified(policy, token, origins, may_fetch, now)
            .await?;
        let mut credential = credential(issuer, &claims, policy)?;
        if !policy.principal_exists(&credential.principal) {
            create_user(gateway, issuer, &credential).await?;
            credential.description = Some(format!(
                "access token of issuer `{}` (user created on first sight)",
                issuer.name
            ));
        }
        Ok(credential)
    }

    /// The issuer and claims of a verified token: remembered, or verified now.
    async fn verified<'p>(
        &self,
        policy: &'p Policy,
        token: &str,
        origins: &Origins,
        may_fetch: &(dyn Fn() -> bool + Sync),
        now: Millis,
    ) -> Result<(&'p IssuerSpec, Arc<Map<String, Value>>), Refusal> {
        let key = TokenHashKey(TokenHash::of(token).0);
        let now = now.0 / 1000;
        let remembered = self.verified.lock().ok().and_then(|memo| {
            let v = memo.get(&key)?;
            (v.revision == policy.revision).then(|| (v.issuer.clone(), v.claims.clone(), v.expires))
        });
        if let Some((iss, claims, expires)) = remembered {
            let issuer = policy
                .issuer(&iss)
                .ok_or_else(|| invalid(format!("issuer `{iss}` is not configured")))?;
            let skew = i64::try_from(issuer.clock_skew().as_secs()).unwrap_or(i64::MAX);
            if now > expires.saturating_add(skew) {
                return Err(invalid("the access token expired"));
            }
            if !for_this_server(issuer, &claims, origins, policy) {
                return Err(invalid(wrong_audience(&claims)));
            }
            return Ok((issuer, claims));
        }
        let (issuer, claims) = self.verify(policy, token, origins, may_fetch).await?;
        let expires = claims.get("exp").and_then(Value::as_i64).unwrap_or(0);
        if let Ok(mut memo) = self.verified.lock() {
            if memo.len() >= MAX_VERIFIED {
                memo.clear();
            }
            memo.insert(
                key,
                Verified {
                    revision: policy.revision,
                    issuer: issuer.issuer.clone(),
                    claims: claims.clone(),
                    expires,
                },
            );
        }
        Ok((issuer, claims))
    }

    /// Verifies type, signature, issuer, audience and lifetime.
    async fn verify<'p>(
        &self,
        policy: &'p Policy,
        token: &str,
        origins: &Origins,
        may_fetch: &(dyn Fn() -> bool + Sync),
    ) -> Result<(&'p IssuerSpec, Arc<Map<String, Value>>), Refusal> {
        let mut parts = token.split('.');
        let header = parts.next().and_then(decode_part).unwrap_or_default();
        let payload = parts
            .next()
            .and_then(decode_part)
            .ok_or_else(|| invalid("the access token's claims cannot be read"))?;
        let iss = payload.get("iss").and_then(Value::as_str).unwrap_or("");
        if policy.issuers().is_empty() {
            return Err(invalid(
                "no issuer is configured: this server accepts its own `wdn_` tokens only",
            ));
        }
        let issuer = policy.issuer(iss).ok_or_else(|| {
            invalid(format!(
                "issuer `{}` is not configured",
                iss.chars().take(200).collect::<String>()
            ))
        })?;
        let alg_name = header.get("alg").and_then(Value::as_str).unwrap_or("");
        let allowed = issuer.algorithms();
        let alg = allowed
            .iter()
            .find(|a| a.as_str() == alg_name)
            .and_then(|a| a.parse::<Algorithm>().ok())
            .ok_or_else(|| {
                invalid(format!(
                    "algorithm `{}` is not accepted for issuer `{}` (accepted: {})",
                    alg_name.chars().take(32).collect::<String>(),
                    issuer.name,
                    allowed.join(", ")
                ))
            })?;
        if let Some(typ) = header.get("typ")
            && !typ.as_str().is_some_and(access_token_type)
        {
            let typ = typ.as_str().map_or_else(|| typ.to_string(), str::to_owned);
            return Err(invalid(format!(
                "the token is not an access token (`typ` is `{}`)",
                typ.chars().take(64).collect::<String>()
            )));
        }
        let kid = header.get("kid").and_then(Value::as_str);
        let keys = self
            .keys
            .keys_for(issuer, kid, may_fetch)
            .await
            .map_err(|e| match e {
                KeyError::Unreachable { .. } => Refusal::Unavailable(e.to_string()),
                KeyError::NotFetched { .. } => Refusal::Limited(e.to_string()),
                KeyError::UnknownKid { .. } => invalid(e.to_string()),
            })?;
        let mut validation = Validation::new(alg);
        validation.leeway = issuer.clock_skew().as_secs();
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.set_issuer(&[iss]);
        // Checked below, against this server's resource URLs.
        validation.validate_aud = false;
        let mut refusal = invalid("the access token's signature does not verify");
        for key in keys.iter().filter(|k| k.alg.is_none_or(|a| a == alg)) {
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation) {
                Ok(data) if for_this_server(issuer, &data.claims, origins, policy) => {
                    return Ok((issuer, Arc::new(data.claims)));
                }
                Ok(data) => return Err(invalid(wrong_audience(&data.claims))),
                Err(e) => {
                    refusal = match e.kind() {
                        ErrorKind::InvalidSignature
                        | ErrorKind::InvalidAlgorithm
                        | ErrorKind::InvalidKeyFormat
                        | ErrorKind::InvalidRsaKey(_)
                        | ErrorKind::InvalidEcdsaKey
                        | ErrorKind::InvalidEddsaKey => continue,
                        ErrorKind::ExpiredSignature => invalid("the access token expired"),
                        ErrorKind::ImmatureSignature => {
                            invalid("the access token is not valid yet (`nbf`)")
                        }
                        ErrorKind::MissingRequiredClaim(c) => {
                            invalid(format!("the access token has no `{c}` claim"))
                        }
                        other => invalid(format!("the access token is invalid: {other:?}")),
                    };
                    break;
                }
            }
        }
        Err(refusal)
    }
}

/// Whether a token's `typ` header says it is an access token: `at+jwt` (RFC 9068), or the
/// generic `JWT` many providers put on their access tokens. Anything else (`logout+jwt`,
/// `dpop+jwt`, …) is another kind of token.
fn access_token_type(typ: &str) -> bool {
    let typ = typ.strip_prefix("application/").unwrap_or(typ);
    typ.eq_ignore_ascii_case("at+jwt") || typ.eq_ignore_ascii_case("jwt")
}

/// Whether a token's `aud` names one of `issuer`'s audiences, or, for an issuer that lists
/// none, one of this server's resource URLs.
fn for_this_server(
    issuer: &IssuerSpec,
    claims: &Map<String, Value>,
    origins: &Origins,
    policy: &Policy,
) -> bool {
    let named = |a: &str| {
        if issuer.audiences.is_empty() {
            origins.is_resource(policy, a)
        } else {
            issuer.audiences.iter().any(|x| x == a)
        }
    };
    match claims.get("aud") {
        Some(Value::String(a)) => named(a),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).any(named),
        _ => false,
    }
}

fn wrong_audience(claims: &Map<String, Value>) -> String {
    let aud = match claims.get("aud") {
        Some(Value::String(a)) => a.clone(),
        Some(other) => other.to_string(),
        None => "nothing".into(),
    };
    format!(
        "the access token is for another resource (`aud` is {}), not for this server",
        aud.chars().take(200).collect::<String>()
    )
}

/// The credential a verified token stands for.
fn credential(
    issuer: &IssuerSpec,
    claims: &Map<String, Value>,
    policy: &Policy,
) -> Result<Credential, Refusal> {
    let found = claimed(issuer, claims, policy).map_err(|e| match e {
        ClaimsRefusal::InsufficientScope => Refusal::InsufficientScope(e.to_string()),
        other => Refusal::Forbidden(other.to_string()),
    })?;
    let seconds = |k: &str| claims.get(k).and_then(Value::as_i64);
    let skew = i64::try_from(issuer.clock_skew().as_secs()).unwrap_or(i64::MAX);
    Ok(Credential {
        id: format!("{JWT_CREDENTIAL_PREFIX}{}:{}", issuer.name, found.principal),
        kind: CredentialKind::Jwt,
        principal: found.principal,
        projects: None,
        scopes: found.scopes,
        created_at: Millis(seconds("iat").unwrap_or(0).saturating_mul(1000)),
        expires_at: seconds("exp").map(|e| Millis(e.saturating_add(skew).saturating_mul(1000))),
        revoked_at: None,
        description: Some(format!("access token of issuer `{}`", issuer.name)),
        groups: found.groups,
    })
}

/// Applies the `User` an issuer creates on first sight (`autoCreateUsers`), recorded in the
/// admin log as the issuer's doing, and reloads the configuration.
async fn create_user(
    gateway: &Gateway,
    issuer: &IssuerSpec,
    credential: &Credential,
) -> Result<(), Refusal> {
    let warden_core::principal::Principal::User { name } = &credential.principal else {
        return Err(Refusal::Forbidden(format!(
            "{} no longer exists",
            credential.principal
        )));
    };
    let user = Located {
        source: None,
        resource: Resource::User(UserSpec {
            name: name.clone(),
            groups: Vec::new(),
            display_name: None,
        }),
    };
    let actor = format!("issuer:{}", issuer.name);
    let store = gateway.store();
    let unavailable = |e: String| {
        Refusal::Unavailable(format!("cannot create user `{name}` on first sight: {e}"))
    };
    for _ in 0..3 {
        let (config, _) = store
            .load_config()
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        if config.contains(Kind::User, name.as_str()) {
            break;
        }
        match store
            .apply(vec![user.clone()], &actor, gateway.clock().now())
            .await
        {
            Ok(Ok(_)) => {
                tracing::info!(issuer = %issuer.name, user = %name, "created a user on first sight");
                break;
            }
            Ok(Err(errors)) => {
                return Err(unavailable(
                    errors
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                ));
            }
            // A concurrent change: read again and retry.
            Err(warden_store::StoreError::Conflict(_)) => {}
            Err(e) => return Err(unavailable(e.to_string())),
        }
    }
    gateway.refresh().await;
    if gateway
        .snapshot()
        .policy
        .principal_exists(&credential.principal)
    {
        Ok(())
    } else {
        Err(unavailable("the configuration did not take it".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_tokens_are_typed_at_jwt_or_jwt_and_nothing_else() {
        for typ in [
            "at+jwt",
            "application/at+jwt",
            "AT+JWT",
            "JWT",
            "application/jwt",
        ] {
            assert!(access_token_type(typ), "{typ}");
        }
        for typ in ["logout+jwt", "dpop+jwt", "secevent+jwt", "JOSE", ""] {
            assert!(!access_token_type(typ), "{typ}");
        }
    }
}
