//! Credentials in the store (AUTH-1): tokens minted (the secret returned once, only its hash
//! kept), revoked and looked up; the first administrator made once per store; secrets the
//! replicas share.

use warden_core::config::{Kind, Resource};
use warden_core::name::Name;
use warden_core::principal::{Credential, CredentialKind, Principal, TokenHash, format_token};
use warden_core::time::Millis;

use crate::config::resource_json;
use crate::rows;
use crate::sink::{AdminChange, AuditSink as _, admin_record};
use crate::token::{NewToken, TokenRequest};
use crate::{Store, StoreError};

impl Store {
    /// Creates a token and returns its secret once (AUTH-1). Only the hash is stored.
    pub async fn create_token(
        &self,
        request: TokenRequest,
        actor: &str,
        now: Millis,
    ) -> Result<NewToken, StoreError> {
        if matches!(request.principal, Principal::AgentRole { .. }) {
            return Err(StoreError::Invalid(
                "an agent role acts inside Warden; no token is minted for it".into(),
            ));
        }
        let mut random = [0u8; 32];
        getrandom::fill(&mut random)
            .map_err(|e| StoreError::Invalid(format!("no randomness available: {e}")))?;
        let secret = format_token(&random);
        let mut id_bytes = [0u8; 8];
        getrandom::fill(&mut id_bytes)
            .map_err(|e| StoreError::Invalid(format!("no randomness available: {e}")))?;
        let credential = Credential {
            id: format!("tok_{}", hex::encode(id_bytes)),
            kind: request.kind,
            principal: request.principal,
            projects: request.projects.map(|p| p.into_iter().collect()),
            scopes: request.scopes,
            created_at: now,
            expires_at: request.ttl.map(|t| now.plus(t)),
            revoked_at: None,
            description: request.description,
            groups: Vec::new(),
        };
        let admin = admin_record(
            now,
            actor,
            "token.create",
            serde_json::json!({
                "id": credential.id,
                "principal": credential.principal.to_string(),
                "kind": credential.kind,
                "projects": credential.projects,
                "scopes": credential.scopes,
                "expires_at": credential.expires_at,
            }),
        );
        let row = rows::CredentialRow::from_credential(&credential, TokenHash::of(&secret))?;
        self.sink
            .admin(AdminChange::InsertCredential(row), admin)
            .await?;
        Ok(NewToken { credential, secret })
    }

    /// Revokes a token; `false` if no such token. Revoking twice keeps the first time.
    pub async fn revoke_token(
        &self,
        id: &str,
        actor: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let admin = admin_record(now, actor, "token.revoke", serde_json::json!({ "id": id }));
        let change = AdminChange::RevokeCredential {
            id: id.to_owned(),
            at: now,
        };
        Ok(self.sink.admin(change, admin).await?.is_some())
    }

    /// Every credential, without secrets.
    pub async fn credentials(&self) -> Result<Vec<Credential>, StoreError> {
        self.backend
            .credentials()
            .await?
            .into_iter()
            .map(rows::CredentialRow::into_credential)
            .collect()
    }

    /// Every credential with its hash, for the server's in-memory cache.
    pub async fn credential_hashes(&self) -> Result<Vec<(TokenHash, Credential)>, StoreError> {
        self.backend
            .credentials()
            .await?
            .into_iter()
            .map(|row| {
                let hash = TokenHash::from_hex(&row.hash).ok_or_else(|| {
                    StoreError::Corrupt(format!("credential `{}` has a malformed hash", row.id))
                })?;
                Ok((hash, row.into_credential()?))
            })
            .collect()
    }

    /// Looks a presented token up by its hash.
    pub async fn credential_for_token(
        &self,
        token: &str,
    ) -> Result<Option<Credential>, StoreError> {
        let hash = TokenHash::of(token);
        match self.backend.credential_by_hash(&hash.to_hex()).await? {
            Some(row) => {
                let stored = TokenHash::from_hex(&row.hash);
                if stored.is_some_and(|s| s.ct_eq(&hash)) {
                    Ok(Some(row.into_credential()?))
                } else {
                    Ok(None)
                }
            }
            None => Ok(None),
        }
    }

    /// A random secret of the installation named `name` (hex, 32 bytes), the same for every
    /// process sharing the store: made by the first to ask. For keys that replicas must share
    /// (e.g. what signs the task ids Warden hands out); never shown or logged.
    pub async fn shared_secret(&self, name: &str) -> Result<String, StoreError> {
        let mut fresh = [0u8; 32];
        getrandom::fill(&mut fresh)
            .map_err(|e| StoreError::Invalid(format!("no randomness for a secret: {e}")))?;
        self.backend
            .meta_get_or_set(&format!("secret:{name}"), &hex::encode(fresh))
            .await
    }

    /// Creates the first admin user, its binding to the built-in `admin` role and a token,
    /// once per store. Returns the token's secret on the first call only.
    pub async fn bootstrap(&self, now: Millis) -> Result<Option<NewToken>, StoreError> {
        if self.backend.meta_get("bootstrapped").await?.is_some() {
            return Ok(None);
        }
        let admin = Name::from_static("admin");
        let user = Resource::User(warden_core::config::UserSpec {
            name: admin.clone(),
            groups: Vec::new(),
            display_name: Some("First administrator".into()),
        });
        let binding = Resource::RoleBinding(warden_core::config::RoleBindingSpec {
            name: None,
            role: admin.clone(),
            subject: warden_core::principal::Subject::User(admin.clone()),
        });
        let resources: Vec<(Kind, String, String)> = [user, binding]
            .iter()
            .map(|r| (r.kind(), r.key(), resource_json(r)))
            .collect();
        let record = admin_record(
            now,
            "warden",
            "bootstrap",
            serde_json::json!({ "user": "admin" }),
        );
        let change = AdminChange::Bootstrap { resources };
        if self.sink.admin(change, record).await?.is_none() {
            return Ok(None);
        }
        let token = self
            .create_token(
                TokenRequest {
                    principal: Principal::User { name: admin },
                    projects: None,
                    scopes: None,
                    ttl: None,
                    description: Some("first admin token".into()),
                    kind: CredentialKind::ApiKey,
                },
                "warden",
                now,
            )
            .await?;
        Ok(Some(token))
    }
}
