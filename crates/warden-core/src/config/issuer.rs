//! `kind: Issuer`: an OAuth 2.1 authorization server whose JWT access tokens Warden accepts
//! (AUTH-4), and how their claims map to principals.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::name::Name;

/// The signing algorithms an issuer's tokens may use: asymmetric only — never `none`, never an
/// HMAC algorithm, which would verify with the public key as a shared secret.
pub const ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// Default leeway for `exp` and `nbf`.
pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(60);

/// `kind: Issuer`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IssuerSpec {
    /// The issuer's name in Warden.
    pub name: Name,
    /// The issuer identifier: the `iss` its tokens carry, and where its metadata is
    /// discovered (`/.well-known/openid-configuration` or
    /// `/.well-known/oauth-authorization-server`).
    pub issuer: String,
    /// Where its keys are; discovered from its metadata when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// The audiences a token must name; by default this server's MCP resource URLs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
    /// Signing algorithms accepted (default `RS256`, `ES256`, `EdDSA`); see [`ALGORITHMS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub algorithms: Vec<String>,
    /// Leeway for `exp` and `nbf` (default 60 s).
    #[serde(
        default,
        with = "crate::time::human_duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub clock_skew: Option<Duration>,
    /// Which claims carry the user and the groups.
    #[serde(default)]
    pub claims: IssuerClaims,
    /// Whether a user the configuration does not know is accepted on first sight (with the
    /// groups its token carries); by default unknown users are refused.
    #[serde(default)]
    pub auto_create_users: bool,
    /// Client-credentials clients: `client_id` → the ServiceAccount its tokens act as
    /// (RUN-2 `service-account` mode).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub clients: BTreeMap<String, Name>,
    /// How Warden authenticates itself at this issuer's token endpoint to exchange a caller's
    /// token for an upstream (AUTH-6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<ExchangeClient>,
}

/// Warden's own client at an issuer, for RFC 8693 token exchange (AUTH-6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExchangeClient {
    /// Warden's `client_id` there.
    pub client_id: String,
    /// Its secret: a `${secret:NAME}` or `${env:NAME}` reference, sent as HTTP Basic
    /// authentication.
    pub client_secret: String,
    /// The token endpoint; by default the one the issuer's metadata names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
}

/// The claims that name the user and carry its groups.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IssuerClaims {
    /// The claim naming the user (`sub`, `email`, `preferred_username`…; default `sub`).
    #[serde(default = "sub")]
    pub user: String,
    /// The claim listing the user's groups (role bindings may name a group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<String>,
}

fn sub() -> String {
    "sub".into()
}

impl Default for IssuerClaims {
    fn default() -> Self {
        Self {
            user: sub(),
            groups: None,
        }
    }
}

impl IssuerSpec {
    /// The algorithms accepted, defaults applied.
    pub fn algorithms(&self) -> Vec<String> {
        if self.algorithms.is_empty() {
            vec!["RS256".into(), "ES256".into(), "EdDSA".into()]
        } else {
            self.algorithms.clone()
        }
    }

    /// The leeway, default applied.
    pub fn clock_skew(&self) -> Duration {
        self.clock_skew.unwrap_or(DEFAULT_CLOCK_SKEW)
    }

    /// What is wrong with it on its own, as `(field, problem)` pairs.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let url = |s: &str| s.starts_with("https://") || s.starts_with("http://");
        if !url(&self.issuer) {
            out.push((
                "issuer".into(),
                format!("`{}` is not an http(s) URL", self.issuer),
            ));
        }
        if let Some(j) = &self.jwks_uri
            && !url(j)
        {
            out.push(("jwksUri".into(), format!("`{j}` is not an http(s) URL")));
        }
        for (i, a) in self.algorithms.iter().enumerate() {
            if !ALGORITHMS.contains(&a.as_str()) {
                out.push((
                    format!("algorithms[{i}]"),
                    format!(
                        "`{a}` is not accepted: use one of {} (never `none` or an HMAC algorithm)",
                        ALGORITHMS.join(", ")
                    ),
                ));
            }
        }
        if self.claims.user.trim().is_empty() {
            out.push(("claims.user".into(), "name the claim of the user".into()));
        }
        if let Some(x) = &self.exchange {
            if x.client_id.trim().is_empty() {
                out.push(("exchange.clientId".into(), "cannot be empty".into()));
            }
            if !super::reference::is_sole_reference(&x.client_secret) {
                out.push((
                    "exchange.clientSecret".into(),
                    "write a reference, `${secret:NAME}` or `${env:NAME}`, not the secret itself"
                        .into(),
                ));
            } else if let Err(e) = super::reference::check_reference(&x.client_secret) {
                out.push(("exchange.clientSecret".into(), e));
            }
            if let Some(t) = &x.token_endpoint
                && !url(t)
            {
                out.push((
                    "exchange.tokenEndpoint".into(),
                    format!("`{t}` is not an http(s) URL"),
                ));
            }
        }
        out
    }
}
