//! Tokens (AUTH-1, AUTH-2): create, list, revoke — the one home of the rules that the admin
//! API (`/api/v1/tokens`), the console's Tokens page and `warden token` all call.
//!
//! The rules, in the order they are checked:
//! - creating and revoking need `tokens:write`; listing needs `tokens:read` (with
//!   `tokens:write` alone, a caller lists its own principal's tokens, the ones it may revoke);
//! - a credential creates and revokes tokens only for its own principal unless it holds
//!   `tokens:any`: autonomy, write budgets, principal kill switches and "own" approvals are
//!   keyed on the principal, so a token for someone else would be wider in practice. This is
//!   checked before anything about the other principal is looked up, so that a refused caller
//!   learns nothing about it;
//! - the owner and every bound project exist;
//! - the token is never wider than the credential that creates it: every capability it would
//!   hold, the creator holds, and every project whose tools it could use, the creator can use.
//!
//! An operator holding the store itself (`--data-dir`) passes every check but the existence
//! of names. The store's admin record of each change names who acted and for whom.

use std::time::Duration;

use warden_core::authority::{Authority, resolve};
use warden_core::capability::{
    Capability, CapabilitySet, RUN_PROJECTS, TOKENS_ANY, TOKENS_READ, TOKENS_WRITE,
    validate_capability,
};
use warden_core::config::Kind;
use warden_core::name::Name;
use warden_core::policy::Policy;
use warden_core::principal::{Credential, CredentialKind, Principal};
use warden_core::time::{Millis, parse_duration};
use warden_store::{NewToken, TokenRequest};

use crate::{Caller, Control, Refusal};

/// The longest description a token keeps.
pub const MAX_DESCRIPTION: usize = 200;

/// A token as asked for, before any check: the admin API's body, the console's form and the
/// CLI's flags all become one of these.
#[derive(Clone, Debug, Default)]
pub struct TokenDraft {
    /// The owner, a User (give this or `service_account`).
    pub user: Option<String>,
    /// The owner, a ServiceAccount.
    pub service_account: Option<String>,
    /// Project bindings (none: all of the owner's projects).
    pub projects: Vec<String>,
    /// Capability scopes (none: all of the owner's capabilities).
    pub scopes: Vec<String>,
    /// Time to live (`30d`, `12h`); none: it does not expire.
    pub ttl: Option<String>,
    /// A note shown in listings.
    pub description: Option<String>,
}

impl TokenDraft {
    /// Checks the draft's form — names, scopes, time to live — without the store or the
    /// policy, so a client can refuse a malformed request before sending it anywhere.
    pub fn check(&self) -> Result<TokenRequest, Refusal> {
        let name = |field: &'static str, value: &str| {
            Name::new(value).map_err(|message| Refusal::Invalid {
                field,
                message: message.to_string(),
            })
        };
        let principal = match (&self.user, &self.service_account) {
            (Some(u), None) => Principal::User {
                name: name("user", u)?,
            },
            (None, Some(s)) => Principal::ServiceAccount {
                name: name("serviceAccount", s)?,
            },
            _ => {
                return Err(Refusal::Malformed(
                    "give exactly one of `user` or `serviceAccount`".into(),
                ));
            }
        };
        let projects = self
            .projects
            .iter()
            .map(|p| name("projects", p))
            .collect::<Result<Vec<_>, _>>()?;
        for s in &self.scopes {
            validate_capability(s).map_err(|message| Refusal::Invalid {
                field: "scopes",
                message,
            })?;
        }
        let ttl = self.ttl.as_deref().map(parse_ttl).transpose()?;
        let description = self.description.as_deref().map(str::trim);
        if description.is_some_and(|d| d.chars().count() > MAX_DESCRIPTION) {
            return Err(Refusal::Invalid {
                field: "description",
                message: format!("at most {MAX_DESCRIPTION} characters"),
            });
        }
        Ok(TokenRequest {
            principal,
            projects: (!projects.is_empty()).then_some(projects),
            scopes: (!self.scopes.is_empty())
                .then(|| CapabilitySet::from_patterns(self.scopes.iter().map(Capability::new))),
            ttl,
            description: description.filter(|d| !d.is_empty()).map(str::to_owned),
            kind: CredentialKind::ApiKey,
        })
    }
}

fn parse_ttl(text: &str) -> Result<Duration, Refusal> {
    let invalid = |message| Refusal::Invalid {
        field: "ttl",
        message,
    };
    let ttl = parse_duration(text).map_err(invalid)?;
    if ttl.is_zero() {
        return Err(invalid("must be greater than zero".into()));
    }
    Ok(ttl)
}

/// Refuses a caller acting on a token of `owner`, another principal than its own, unless it
/// holds `tokens:any` (AUTH-2).
fn for_principal(caller: &Caller, owner: &Principal, what: &str) -> Result<(), Refusal> {
    if caller.principal().is_some_and(|own| own == owner) {
        return Ok(());
    }
    caller.require(TOKENS_ANY, &format!("{what} `{owner}`, another principal,"))
}

/// Refuses a token that would hold what `creator` does not (AUTH-2): a capability pattern the
/// creator's authority does not cover, or a project whose tools the creator cannot use.
pub fn within(creator: &Authority, minted: &Authority) -> Result<(), Refusal> {
    for held in minted.effective_capabilities() {
        let wider = match held.as_str().strip_prefix(RUN_PROJECTS) {
            Some(project) => !creator.projects.keys().any(|p| p.as_str() == project),
            None => !creator.holds(held.as_str()),
        };
        if wider {
            return Err(Refusal::Forbidden(format!(
                "the token would hold `{held}`, which you do not: a token is never wider than the credential that creates it; narrow it with `scopes` or `projects`"
            )));
        }
    }
    Ok(())
}

/// Creates a token for `draft`; its secret is in the answer only (AUTH-1).
pub async fn create(
    control: &Control,
    policy: &Policy,
    caller: &Caller,
    draft: &TokenDraft,
) -> Result<NewToken, Refusal> {
    let now = control.now();
    caller.require(TOKENS_WRITE, "creating tokens")?;
    let request = draft.check()?;
    for_principal(caller, &request.principal, "creating a token for")?;
    let (kind, field, owner) = match &request.principal {
        Principal::User { name } => (Kind::User, "user", name),
        Principal::ServiceAccount { name } => (Kind::ServiceAccount, "serviceAccount", name),
        Principal::AgentRun { agent, .. } => (Kind::Agent, "agent", agent),
        Principal::AgentRole { .. } => {
            return Err(Refusal::Unprocessable {
                field: Some("principal"),
                message: "an agent role acts inside Warden; no token is minted for it".into(),
            });
        }
    };
    if !policy.config.contains(kind, owner.as_str()) {
        return Err(Refusal::Unprocessable {
            field: Some(field),
            message: format!("no {kind} named `{owner}`; apply it first"),
        });
    }
    for p in request.projects.iter().flatten() {
        if !policy.config.contains(Kind::Project, p.as_str()) {
            return Err(Refusal::Unprocessable {
                field: Some("projects"),
                message: format!("no Project named `{p}`"),
            });
        }
    }
    if let Caller::Credential(creator) = caller {
        let minted = Credential {
            id: "token-to-create".into(),
            kind: request.kind,
            principal: request.principal.clone(),
            projects: request.projects.clone().map(|p| p.into_iter().collect()),
            scopes: request.scopes.clone(),
            created_at: now,
            expires_at: None,
            revoked_at: None,
            description: None,
            groups: Vec::new(),
        };
        let minted =
            resolve(policy, &minted, None).map_err(|e| Refusal::unprocessable(e.to_string()))?;
        within(creator, &minted)?;
    }
    let token = control
        .store()
        .create_token(request, &caller.actor(), now)
        .await?;
    control.changed().await;
    Ok(token)
}

/// A token as the admin API and `warden token` show it: never its secret, its status at the
/// time it is read. The API answers it; the CLI reads it back, or makes it from the store.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Token {
    /// Its public id (`tok_…`): what revokes it.
    pub id: String,
    /// `api_key`, or `run` for a credential minted for one agent run.
    pub kind: String,
    /// The owner (`user:alice`, `serviceAccount:deploy-bot`, `agent:sre-bot/run_…`).
    pub principal: String,
    /// Project bindings (none: all of the owner's projects).
    pub projects: Option<Vec<String>>,
    /// Capability scopes (none: all of the owner's capabilities).
    pub scopes: Option<Vec<String>>,
    /// When it was created (ms since the epoch).
    pub created_at: i64,
    /// When it expires (ms).
    pub expires_at: Option<i64>,
    /// When it was revoked (ms).
    pub revoked_at: Option<i64>,
    /// The note.
    pub description: Option<String>,
    /// `active`, `revoked` or `expired`.
    pub status: String,
}

impl Token {
    /// `credential` as shown at `now`.
    pub fn of(credential: &Credential, now: Millis) -> Self {
        let Credential {
            id,
            kind,
            principal,
            projects,
            scopes,
            created_at,
            expires_at,
            revoked_at,
            description,
            groups: _,
        } = credential;
        Self {
            id: id.clone(),
            kind: kind.as_str().to_owned(),
            principal: principal.to_string(),
            projects: projects
                .as_ref()
                .map(|p| p.iter().map(ToString::to_string).collect()),
            scopes: scopes
                .as_ref()
                .map(|s| s.patterns().iter().map(|c| c.as_str().to_owned()).collect()),
            created_at: created_at.0,
            expires_at: expires_at.map(|m| m.0),
            revoked_at: revoked_at.map(|m| m.0),
            description: description.clone(),
            status: credential.status(now).to_owned(),
        }
    }
}

/// The tokens `caller` may see, oldest first, without secrets: every one with `tokens:read`;
/// with `tokens:write` alone, those of its own principal.
pub async fn list(control: &Control, caller: &Caller) -> Result<Vec<Credential>, Refusal> {
    let all = caller.holds(TOKENS_READ);
    if !all && !caller.holds(TOKENS_WRITE) {
        caller.require(TOKENS_READ, "listing tokens")?;
    }
    let mut credentials = control.store().credentials().await?;
    if !all {
        credentials.retain(|c| caller.principal() == Some(&c.principal));
    }
    Ok(credentials)
}

/// Revokes the token `id`: refused from its next use on, by sessions already open too
/// (RUN-8). Revoking twice keeps the first time. Answers the token as it was.
pub async fn revoke(control: &Control, caller: &Caller, id: &str) -> Result<Credential, Refusal> {
    caller.require(TOKENS_WRITE, "revoking tokens")?;
    let not_found = || Refusal::not_found(format!("no token with id `{id}`"));
    let token = control
        .store()
        .credentials()
        .await?
        .into_iter()
        .find(|c| c.id == id)
        .ok_or_else(not_found)?;
    for_principal(caller, &token.principal, "revoking a token of")?;
    if !control
        .store()
        .revoke_token(id, &caller.actor(), control.now())
        .await?
    {
        return Err(not_found());
    }
    control.changed().await;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(user: &str) -> TokenDraft {
        TokenDraft {
            user: Some(user.into()),
            ..TokenDraft::default()
        }
    }

    #[test]
    fn a_draft_names_the_field_that_is_wrong() {
        let refused = |d: TokenDraft| d.check().unwrap_err().to_string();
        assert_eq!(
            refused(TokenDraft::default()),
            "give exactly one of `user` or `serviceAccount`"
        );
        assert_eq!(
            refused(TokenDraft {
                ttl: Some("0s".into()),
                ..draft("alice")
            }),
            "`ttl`: must be greater than zero"
        );
        assert_eq!(
            refused(TokenDraft {
                description: Some("x".repeat(201)),
                ..draft("alice")
            }),
            "`description`: at most 200 characters"
        );
        assert!(
            refused(TokenDraft {
                scopes: vec!["Bad Scope".into()],
                ..draft("alice")
            })
            .starts_with("`scopes`: "),
        );
        let request = TokenDraft {
            description: Some("  ".into()),
            ..draft("alice")
        }
        .check()
        .unwrap();
        assert_eq!(request.description, None, "a blank note is no note");
    }

    #[test]
    fn another_principals_token_needs_tokens_any_and_names_it() {
        let alice = Principal::User {
            name: Name::new("alice").unwrap(),
        };
        let admin = Principal::User {
            name: Name::new("admin").unwrap(),
        };
        let caller = |patterns: &[&str]| {
            let authority = Authority {
                mode: warden_core::authority::Mode::Caller,
                principal: alice.clone(),
                groups: Vec::new(),
                credential_id: None,
                expires_at: None,
                agent: None,
                intent: None,
                autonomy_cap: None,
                grant: warden_core::capability::Grant {
                    owner: CapabilitySet::from_patterns(
                        patterns.iter().map(|p| Capability::new(*p)),
                    ),
                    ceiling: None,
                },
                projects: Default::default(),
                knowledge: Default::default(),
                knowledge_only: Default::default(),
                withheld: None,
                cosigner: None,
            };
            Caller::Credential(std::sync::Arc::new(authority))
        };
        assert!(for_principal(&caller(&["tokens:*"]), &alice, "creating a token for").is_ok());
        assert_eq!(
            for_principal(&caller(&["tokens:*"]), &admin, "creating a token for")
                .unwrap_err()
                .to_string(),
            "creating a token for `user:admin`, another principal, needs the `tokens:any` capability"
        );
        assert!(for_principal(&caller(&["*"]), &admin, "creating a token for").is_ok());
        assert!(for_principal(&caller(&["tokens:any"]), &admin, "revoking a token of").is_ok());
        assert!(
            for_principal(
                &Caller::Operator("cli:root".into()),
                &admin,
                "revoking a token of"
            )
            .is_ok()
        );
    }
}
