//! Who acts: principals, configuration subjects, credentials and provenance references.

use std::collections::BTreeSet;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::capability::CapabilitySet;
use crate::name::Name;
use crate::time::Millis;

/// A verified identity. It only ever comes from a verified credential (AUTH-3): no header,
/// body field or tool argument can name one.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Principal {
    /// A human user.
    User {
        /// The user's name.
        name: Name,
    },
    /// A service account: an identity of its own with its own role bindings.
    ServiceAccount {
        /// The account's name.
        name: Name,
    },
    /// An unattended run of an agent, authenticated by a run credential minted by Warden.
    AgentRun {
        /// The agent.
        agent: Name,
        /// The run the credential was minted for.
        run: String,
    },
    /// An agent role doing work no person started (APR-3, WORK-4): a Reconciler's job. No
    /// credential names it: Warden acts as it in-process, with exactly the role's capabilities.
    AgentRole {
        /// The Role whose capabilities bound it.
        role: Name,
        /// The intent it serves (`reconciler:<name>`).
        intent: String,
    },
}

impl Principal {
    /// The RBAC subject whose bindings grant this principal its capabilities; none for an
    /// agent role, which holds its role directly.
    pub fn subject(&self) -> Option<Subject> {
        match self {
            Self::User { name } => Some(Subject::User(name.clone())),
            Self::ServiceAccount { name } => Some(Subject::ServiceAccount(name.clone())),
            Self::AgentRun { agent, .. } => Some(Subject::Agent(agent.clone())),
            Self::AgentRole { .. } => None,
        }
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User { name } => write!(f, "user:{name}"),
            Self::ServiceAccount { name } => write!(f, "serviceAccount:{name}"),
            Self::AgentRun { agent, run } => write!(f, "agent:{agent}/{run}"),
            Self::AgentRole { role, intent } => write!(f, "agentRole:{role}/{intent}"),
        }
    }
}

/// The subject of a role binding, an autonomy rule, a write budget or a kill switch, as
/// written in configuration: `{ user: alice }`, `{ serviceAccount: deploy-bot }`,
/// `{ group: sre }` or `{ agent: sre-bot }`.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Subject {
    /// A user.
    User(Name),
    /// A service account.
    ServiceAccount(Name),
    /// A group of users (users list their groups).
    Group(Name),
    /// An agent (its unattended runs).
    Agent(Name),
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User(n) => write!(f, "user:{n}"),
            Self::ServiceAccount(n) => write!(f, "serviceAccount:{n}"),
            Self::Group(n) => write!(f, "group:{n}"),
            Self::Agent(n) => write!(f, "agent:{n}"),
        }
    }
}

/// What kind of credential authenticated a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialKind {
    /// A long-lived API token of a user or service account (`warden token create`).
    ApiKey,
    /// A short-lived run credential minted for one unattended agent run.
    Run,
    /// A JWT access token of a configured issuer (AUTH-4): verified on every request and
    /// never stored.
    Jwt,
}

impl CredentialKind {
    /// The kind as stored and shown (`api_key`, `run`, `jwt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ApiKey => "api_key",
            Self::Run => "run",
            Self::Jwt => "jwt",
        }
    }
}

/// A stored credential, without its secret (AUTH-1): only the hash is kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    /// Public identifier (`tok_…`), safe to list and to name in revocations.
    pub id: String,
    /// The kind of credential.
    pub kind: CredentialKind,
    /// The owner.
    pub principal: Principal,
    /// Project bindings; `None` means all of the owner's projects (AUTH-2).
    pub projects: Option<BTreeSet<Name>>,
    /// Capability scopes; `None` means all of the owner's capabilities (AUTH-2).
    pub scopes: Option<CapabilitySet>,
    /// Creation time.
    pub created_at: Millis,
    /// Expiry, if any.
    pub expires_at: Option<Millis>,
    /// Revocation time, if revoked.
    pub revoked_at: Option<Millis>,
    /// Free text shown in listings.
    pub description: Option<String>,
    /// Groups the credential itself asserts (a JWT's groups claim, AUTH-4), on top of those
    /// configuration gives the user; empty for Warden's own tokens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Name>,
}

/// Why a presented credential is not accepted. The messages are safe to show the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CredentialRejection {
    /// No credential was presented.
    #[error("missing bearer token")]
    Missing,
    /// Not a Warden token, or not one this store knows.
    #[error("invalid token")]
    Unknown,
    /// The token was revoked.
    #[error("token revoked")]
    Revoked,
    /// The token expired.
    #[error("token expired")]
    Expired,
    /// The owner no longer exists in configuration.
    #[error("token owner no longer exists")]
    OwnerGone,
}

impl Credential {
    /// A credential no token stands behind: an unbounded API key of `principal`, named `id`,
    /// for asking what the principal's own authority allows (explain, a requester checked
    /// again at approval).
    pub fn synthetic(id: &str, principal: Principal) -> Self {
        Self {
            id: id.to_owned(),
            kind: CredentialKind::ApiKey,
            principal,
            projects: None,
            scopes: None,
            created_at: Millis(0),
            expires_at: None,
            revoked_at: None,
            description: None,
            groups: Vec::new(),
        }
    }

    /// How listings show it: `revoked`, `expired` or `active`.
    pub fn status(&self, now: Millis) -> &'static str {
        match self.check_usable(now) {
            Err(CredentialRejection::Revoked) => "revoked",
            Err(_) => "expired",
            Ok(()) => "active",
        }
    }

    /// Whether the credential may be used at `now`.
    pub fn check_usable(&self, now: Millis) -> Result<(), CredentialRejection> {
        if self.revoked_at.is_some() {
            return Err(CredentialRejection::Revoked);
        }
        if self.expires_at.is_some_and(|e| e <= now) {
            return Err(CredentialRejection::Expired);
        }
        Ok(())
    }
}

/// The prefix that makes Warden tokens recognisable (AUTH-1).
pub const TOKEN_PREFIX: &str = "wdn_";

/// The SHA-256 of a presented token, as stored (AUTH-1: only the hash is stored).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenHash(pub [u8; 32]);

impl TokenHash {
    /// Hashes a presented token.
    pub fn of(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }

    /// Lowercase hex, as stored.
    pub fn to_hex(self) -> String {
        crate::audit::to_hex(&self.0)
    }

    /// Parses the stored hex form.
    pub fn from_hex(s: &str) -> Option<Self> {
        let bytes = hex::decode(s).ok()?;
        Some(Self(bytes.try_into().ok()?))
    }

    /// Constant-time comparison (AUTH-5).
    pub fn ct_eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenHash({}…)", &self.to_hex()[..8])
    }
}

/// Formats a new token from 32 bytes of randomness supplied by the caller (the core does no
/// I/O, randomness included).
pub fn format_token(random: &[u8; 32]) -> String {
    format!("{TOKEN_PREFIX}{}", hex::encode(random))
}

/// Whether `s` looks like a Warden token (prefix and length), before any lookup.
pub fn looks_like_token(s: &str) -> bool {
    s.strip_prefix(TOKEN_PREFIX)
        .is_some_and(|rest| rest.len() == 64 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Who asked for a parked or queued action, recorded *by reference* (APR-3): authority is
/// resolved again when the action is decided or runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Provenance {
    /// A principal acting through a credential.
    Principal {
        /// The reference.
        #[serde(rename = "ref")]
        reference: PrincipalRef,
    },
    /// An agent role acting for an intent (reconcilers, scheduled work).
    AgentRole {
        /// The role.
        role: Name,
        /// The intent the work serves.
        #[serde(rename = "intentId")]
        intent_id: String,
        /// The autonomy cap of that intent.
        #[serde(rename = "autonomyCap")]
        autonomy_cap: u8,
    },
}

/// A reference to a principal, without any snapshot of its capabilities.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PrincipalRef {
    /// A user acting with a session or JWT.
    User {
        /// The user.
        name: Name,
    },
    /// A user's or service account's API key.
    ApiKey {
        /// The key's public id.
        id: String,
        /// The key's owner.
        owner: Principal,
    },
    /// A service account.
    ServiceAccount {
        /// The account.
        name: Name,
    },
    /// A JWT access token of a configured issuer (AUTH-4). The token is never stored, so
    /// the reference keeps what it granted: its owner, scopes and groups, for as long as it
    /// would have been valid.
    Jwt {
        /// The credential id (`jwt:<issuer>:<principal>`).
        id: String,
        /// The token's principal.
        owner: Principal,
        /// Its scopes' narrowing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scopes: Option<CapabilitySet>,
        /// The groups it asserted.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        groups: Vec<Name>,
        /// When it expired.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_at: Option<Millis>,
    },
}

impl Provenance {
    /// The principal it refers to, as [`Principal`]'s `Display` writes it (`user:alice`,
    /// `agent:dev/run_…` for an agent role's run).
    pub fn principal(&self) -> String {
        match self {
            Self::Principal { reference } => match reference {
                PrincipalRef::User { name } => Principal::User { name: name.clone() }.to_string(),
                PrincipalRef::ServiceAccount { name } => {
                    Principal::ServiceAccount { name: name.clone() }.to_string()
                }
                PrincipalRef::ApiKey { owner, .. } | PrincipalRef::Jwt { owner, .. } => {
                    owner.to_string()
                }
            },
            Self::AgentRole {
                role, intent_id, ..
            } if intent_id.starts_with(RECONCILER_INTENT) => Principal::AgentRole {
                role: role.clone(),
                intent: intent_id.clone(),
            }
            .to_string(),
            Self::AgentRole {
                role, intent_id, ..
            } => format!("agent:{role}/{intent_id}"),
        }
    }
}

/// Who acts, as the review gate and four eyes tell people apart (WORK-2, APR-8): a principal as
/// written (`user:alice`), and the runs of an agent as that agent (`agent:dev`), since they are
/// one party however many runs it starts.
pub fn party(principal: &str) -> &str {
    match principal.strip_prefix("agent:") {
        Some(rest) => {
            let end = "agent:".len() + rest.find('/').unwrap_or(rest.len());
            principal.get(..end).unwrap_or(principal)
        }
        None => principal,
    }
}

/// The prefix of a Reconciler's intent id: `reconciler:<name>` (WORK-4).
pub const RECONCILER_INTENT: &str = "reconciler:";

/// The prefix of the credential ids of JWT access tokens: `jwt:<issuer>:<principal>`.
pub const JWT_CREDENTIAL_PREFIX: &str = "jwt:";

/// The issuer named by a JWT credential id.
pub fn jwt_issuer(credential_id: &str) -> Option<&str> {
    credential_id
        .strip_prefix(JWT_CREDENTIAL_PREFIX)?
        .split(':')
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_runs_are_one_party_and_people_are_themselves() {
        assert_eq!(party("agent:dev/run_1"), "agent:dev");
        assert_eq!(party("agent:dev/run_2"), "agent:dev");
        assert_eq!(party("agent:dev"), "agent:dev");
        assert_eq!(party("user:alice"), "user:alice");
        assert_eq!(party("serviceAccount:bot"), "serviceAccount:bot");
    }

    #[test]
    fn tokens_are_recognisable_and_hashed() {
        let token = format_token(&[7u8; 32]);
        assert!(token.starts_with("wdn_"));
        assert!(looks_like_token(&token));
        assert!(!looks_like_token("wdn_short"));
        assert!(!looks_like_token("Bearer x"));
        let h = TokenHash::of(&token);
        assert_eq!(TokenHash::from_hex(&h.to_hex()), Some(h));
        assert!(h.ct_eq(&TokenHash::of(&token)));
        assert!(!h.ct_eq(&TokenHash::of("wdn_other")));
        assert!(!h.to_hex().contains(&token[4..]));
    }

    #[test]
    fn provenance_serializes_as_the_spec_shows() {
        let p = Provenance::Principal {
            reference: PrincipalRef::User {
                name: Name::new("alice").unwrap(),
            },
        };
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"kind":"principal","ref":{"type":"user","name":"alice"}}"#
        );
    }
}
