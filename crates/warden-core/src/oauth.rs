//! Access tokens of configured issuers (AUTH-4) as Warden reads them once their signature,
//! issuer, audience and lifetime are verified (the server's `oauth` module does that): the
//! principal their claims name, the groups they assert, and how their scopes narrow them
//! like a token's scopes (AUTH-2). Pure: the claims come in as JSON, the configuration as a
//! policy.
//!
//! Scopes Warden understands:
//!
//! - `mcp` — the principal's whole authority, unnarrowed;
//! - `mcp:<capability pattern>` (`mcp:run:projects:payments`, `mcp:ledger:*`) — the grant
//!   narrowed to those patterns, as `warden token create --scope` narrows a token.
//!
//! Any other scope (`openid`, `email`, …) is not Warden's and is ignored; a token with none
//! of Warden's is refused with `insufficient_scope` naming `mcp`.

use serde_json::{Map, Value};

use crate::capability::{Capability, CapabilitySet};
use crate::config::IssuerSpec;
use crate::name::Name;
use crate::policy::Policy;
use crate::principal::Principal;

/// The scope that grants a principal's whole authority.
pub const MCP_SCOPE: &str = "mcp";

/// The prefix of scopes that narrow to a capability pattern.
pub const CAPABILITY_SCOPE_PREFIX: &str = "mcp:";

/// Who a verified token names and what it may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimed {
    /// The principal.
    pub principal: Principal,
    /// Groups the token asserts for a user (its groups claim).
    pub groups: Vec<Name>,
    /// The narrowing of its scopes; `None` for `mcp` alone.
    pub scopes: Option<CapabilitySet>,
    /// The user is not configured and the issuer creates users on first sight.
    pub new_user: bool,
}

/// Why a verified token names no principal Warden accepts. The messages are safe to show.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClaimsRefusal {
    /// No scope Warden understands.
    #[error(
        "the token carries no scope Warden understands: ask the issuer for scope `mcp` (or `mcp:<capability>`)"
    )]
    InsufficientScope,
    /// The claim naming the user is missing or not a string.
    #[error("the token has no `{0}` claim naming its user (issuer `{1}`, `claims.user`)")]
    NoUser(String, Name),
    /// The claim's value is not a user name Warden can hold.
    #[error("the token's `{claim}` claim `{value}` is not a Warden user name: {reason}")]
    BadUser {
        /// The claim.
        claim: String,
        /// Its value (a name, never a secret).
        value: String,
        /// Why.
        reason: &'static str,
    },
    /// Neither configured nor created on first sight.
    #[error(
        "no user `{user}` is configured and issuer `{issuer}` does not create users (`autoCreateUsers`){hint}"
    )]
    UnknownUser {
        /// The user.
        user: Name,
        /// The issuer.
        issuer: Name,
        /// For a client's own token: where to map it.
        hint: String,
    },
}

/// The scopes a token carries: `scope` (a space-separated string, RFC 9068) or `scp` (a list
/// or a string, as some providers send it).
pub fn token_scopes(claims: &Map<String, Value>) -> Vec<&str> {
    let mut out = Vec::new();
    for key in ["scope", "scp"] {
        match claims.get(key) {
            Some(Value::String(s)) => out.extend(s.split_ascii_whitespace()),
            Some(Value::Array(items)) => out.extend(items.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    out
}

/// How a token's scopes narrow its principal: `None` (`mcp` alone), the patterns of its
/// `mcp:` scopes, or refused when it has none of Warden's.
///
/// A malformed pattern is kept as written: it matches nothing, so it narrows — dropping it
/// would widen a token that also carries `mcp`.
pub fn narrowing(scopes: &[&str]) -> Result<Option<CapabilitySet>, ClaimsRefusal> {
    let patterns: Vec<Capability> = scopes
        .iter()
        .filter_map(|s| s.strip_prefix(CAPABILITY_SCOPE_PREFIX))
        .filter(|p| !p.is_empty())
        .map(Capability::new)
        .collect();
    if !patterns.is_empty() {
        Ok(Some(CapabilitySet::from_patterns(patterns)))
    } else if scopes.contains(&MCP_SCOPE) {
        Ok(None)
    } else {
        Err(ClaimsRefusal::InsufficientScope)
    }
}

fn string<'a>(claims: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    claims.get(key).and_then(Value::as_str)
}

/// The principal, groups and narrowing of a verified token of `issuer` under `policy`.
///
/// A client's own token (client credentials: its `client_id` — or `azp` — is one of the
/// issuer's `clients`, and `sub` is absent or the client itself, RFC 9068 §2.2) acts as the
/// mapped ServiceAccount. Any other token names a user by `claims.user`; an `email` claim
/// is compared in lowercase. Groups that are not valid names are ignored.
pub fn claimed(
    issuer: &IssuerSpec,
    claims: &Map<String, Value>,
    policy: &Policy,
) -> Result<Claimed, ClaimsRefusal> {
    let scopes = narrowing(&token_scopes(claims))?;
    let client = string(claims, "client_id").or_else(|| string(claims, "azp"));
    let sub = string(claims, "sub");
    let own_token = client.is_some_and(|c| sub.is_none_or(|s| s == c));
    if own_token && let Some(account) = client.and_then(|c| issuer.clients.get(c)) {
        return Ok(Claimed {
            principal: Principal::ServiceAccount {
                name: account.clone(),
            },
            groups: Vec::new(),
            scopes,
            new_user: false,
        });
    }
    let claim = issuer.claims.user.as_str();
    let value = string(claims, claim)
        .ok_or_else(|| ClaimsRefusal::NoUser(claim.to_owned(), issuer.name.clone()))?;
    let value = if claim == "email" {
        value.to_ascii_lowercase()
    } else {
        value.to_owned()
    };
    let user = Name::new(&value).map_err(|e| ClaimsRefusal::BadUser {
        claim: claim.to_owned(),
        value: value.chars().take(64).collect(),
        reason: e.reason,
    })?;
    let new_user = !policy.has_user(user.as_str());
    if new_user && !issuer.auto_create_users {
        let hint = match client {
            Some(c) if own_token => format!(
                "; a client-credentials token of client `{c}` needs `clients: {{ {c}: <ServiceAccount> }}` in the issuer"
            ),
            _ => String::new(),
        };
        return Err(ClaimsRefusal::UnknownUser {
            user,
            issuer: issuer.name.clone(),
            hint,
        });
    }
    let groups = match issuer.claims.groups.as_deref().and_then(|g| claims.get(g)) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|g| Name::new(g).ok())
            .collect(),
        Some(Value::String(g)) => Name::new(g).ok().into_iter().collect(),
        _ => Vec::new(),
    };
    Ok(Claimed {
        principal: Principal::User { name: user },
        groups,
        scopes,
        new_user,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::config::Config;

    fn policy(yaml: &str) -> Policy {
        let docs = crate::config::parse_documents("t.yaml", yaml).unwrap();
        Policy::compile(Config::validate(docs).unwrap(), 1)
    }

    const CONFIG: &str = r#"
kind: ServiceAccount
name: deploy-bot
---
kind: User
name: alice
---
kind: Issuer
name: corp
issuer: "https://login.example.com"
claims: { user: email, groups: groups }
clients: { deploy-pipeline: deploy-bot }
"#;

    fn issuer(p: &Policy) -> IssuerSpec {
        p.issuers().first().cloned().unwrap()
    }

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn scopes_narrow_like_a_tokens_scopes() {
        assert_eq!(narrowing(&["mcp"]), Ok(None));
        assert_eq!(
            narrowing(&["mcp", "mcp:run:projects:payments", "openid"]),
            Ok(Some(CapabilitySet::from_patterns([Capability::new(
                "run:projects:payments"
            )])))
        );
        // Malformed patterns narrow to nothing rather than being dropped.
        assert_eq!(
            narrowing(&["mcp", "mcp:Bad"]),
            Ok(Some(CapabilitySet::from_patterns([Capability::new("Bad")])))
        );
        assert_eq!(
            narrowing(&["openid", "tools:read"]),
            Err(ClaimsRefusal::InsufficientScope)
        );
        assert_eq!(narrowing(&[]), Err(ClaimsRefusal::InsufficientScope));
        let c = claims(serde_json::json!({"scp": ["mcp"], "scope": "email"}));
        assert_eq!(token_scopes(&c), vec!["email", "mcp"]);
    }

    #[test]
    fn a_clients_own_token_acts_as_its_service_account() {
        let p = policy(&CONFIG.replace("name: alice", "name: alice@example.com"));
        let c = claims(serde_json::json!({
            "sub": "deploy-pipeline", "client_id": "deploy-pipeline", "scope": "mcp"
        }));
        let got = claimed(&issuer(&p), &c, &p).unwrap();
        assert_eq!(
            got.principal,
            Principal::ServiceAccount {
                name: Name::new("deploy-bot").unwrap()
            }
        );
        // A user signed in through the same client is the user, not the client.
        let c = claims(serde_json::json!({
            "sub": "u1", "email": "Alice@Example.com", "client_id": "deploy-pipeline",
            "scope": "mcp", "groups": ["sre", "Not A Name"]
        }));
        let got = claimed(&issuer(&p), &c, &p).unwrap();
        assert_eq!(got.principal.to_string(), "user:alice@example.com");
        assert!(!got.new_user);
    }

    #[test]
    fn users_are_configured_or_created_on_first_sight() {
        let p = policy(&CONFIG.replace("name: alice", "name: alice@example.com"));
        let c = claims(serde_json::json!({
            "sub": "u1", "email": "alice@example.com", "scope": "mcp",
            "groups": ["sre", "Not A Name"]
        }));
        let got = claimed(&issuer(&p), &c, &p).unwrap();
        assert_eq!(got.principal.to_string(), "user:alice@example.com");
        assert_eq!(got.groups, vec![Name::new("sre").unwrap()]);
        assert!(!got.new_user);

        let c = claims(serde_json::json!({"email": "bob@example.com", "scope": "mcp"}));
        let refused = claimed(&issuer(&p), &c, &p).unwrap_err();
        assert!(refused.to_string().contains("no user `bob@example.com`"));
        let mut creating = issuer(&p);
        creating.auto_create_users = true;
        assert!(claimed(&creating, &c, &p).unwrap().new_user);

        let c = claims(serde_json::json!({"sub": "x", "scope": "mcp"}));
        assert!(matches!(
            claimed(&issuer(&p), &c, &p),
            Err(ClaimsRefusal::NoUser(..))
        ));
        let c = claims(serde_json::json!({"email": "a b@example.com", "scope": "mcp"}));
        assert!(matches!(
            claimed(&issuer(&p), &c, &p),
            Err(ClaimsRefusal::BadUser { .. })
        ));
        let c = claims(serde_json::json!({
            "sub": "other-client", "client_id": "other-client", "scope": "mcp"
        }));
        let mut by_sub = issuer(&p);
        by_sub.claims.user = "sub".into();
        let refused = claimed(&by_sub, &c, &p).unwrap_err().to_string();
        assert!(
            refused.contains("clients: { other-client: <ServiceAccount> }"),
            "{refused}"
        );
    }
}
