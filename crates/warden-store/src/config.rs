//! The configuration in the store: read and validated, applied and deleted resource by
//! resource, each change recorded as an admin audit record with the revision it makes.

use warden_core::audit::canonical_json;
use warden_core::config::{Config, ConfigError, Kind, Located, Resource, Source};
use warden_core::time::Millis;

use crate::sink::{AdminChange, admin_record, revision_conflict};
use crate::{Store, StoreError};

/// How many times an apply or a delete prepared against nothing reads the configuration
/// again when its revision moved meanwhile.
const RETRIES: u32 = 5;

impl Store {
    /// The applied configuration and its revision.
    pub async fn load_config(&self) -> Result<(Config, u64), StoreError> {
        let (rows, revision) = self.backend.load_resources().await?;
        let mut located = Vec::with_capacity(rows.len());
        for (kind, key, spec) in rows {
            let mut resource: Resource = serde_json::from_str(&spec).map_err(|e| {
                StoreError::Corrupt(format!("stored {kind} `{key}` cannot be read: {e}"))
            })?;
            // Stored before such URLs were refused: kept working, never shown.
            if let Resource::Upstream(u) = &mut resource
                && let Some(http) = &mut u.http
                && http.lift_url_credentials()
            {
                tracing::warn!(upstream = %key, "the URL of this upstream carries credentials; they are sent as HTTP Basic authentication unless it has an `Authorization` header: apply it again with them in `headers` from a `${{secret:…}}`");
            }
            located.push(Located {
                source: Some(Source {
                    file: "store".into(),
                    document: 0,
                }),
                resource,
            });
        }
        let config = Config::validate(located).map_err(|errors| {
            StoreError::Corrupt(format!(
                "the stored configuration is invalid: {}",
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ))
        })?;
        Ok((config, revision))
    }

    /// Applies resources (create or replace by kind and key) after validating the merged
    /// configuration; returns the new revision. Nothing is written when validation fails.
    pub async fn apply(
        &self,
        resources: Vec<Located>,
        actor: &str,
        now: Millis,
    ) -> Result<Result<u64, Vec<ConfigError>>, StoreError> {
        self.apply_at(resources, actor, now, None).await
    }

    /// [`Store::apply`], refused as a conflict unless the configuration is still at
    /// `expected` (the revision the caller prepared the resources against), when given.
    ///
    /// Without `expected`, a change of the revision between reading the configuration and
    /// writing it — another apply, or a server writing pins (GOV-9) — makes the apply read and
    /// validate again, a few times, rather than fail: the caller prepared against nothing.
    pub async fn apply_at(
        &self,
        resources: Vec<Located>,
        actor: &str,
        now: Millis,
        expected: Option<u64>,
    ) -> Result<Result<u64, Vec<ConfigError>>, StoreError> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self
                .apply_once(resources.clone(), actor, now, expected)
                .await
            {
                Err(StoreError::Conflict(_)) if expected.is_none() && tries < RETRIES => {}
                done => return done,
            }
        }
    }

    async fn apply_once(
        &self,
        resources: Vec<Located>,
        actor: &str,
        now: Millis,
        expected: Option<u64>,
    ) -> Result<Result<u64, Vec<ConfigError>>, StoreError> {
        let (current, revision) = self.load_config().await?;
        if expected.is_some_and(|e| e != revision) {
            return Err(revision_conflict());
        }
        let base: Vec<Located> = current.resources().cloned().collect();
        let changed: Vec<(Kind, String, String)> = resources
            .iter()
            .map(|l| {
                (
                    l.resource.kind(),
                    l.resource.key(),
                    resource_json(&l.resource),
                )
            })
            .collect();
        if let Err(errors) = Config::merge(base, resources) {
            return Ok(Err(errors));
        }
        let summary = changed
            .iter()
            .map(|(k, key, _)| format!("{k}/{key}"))
            .collect::<Vec<_>>();
        let admin = admin_record(
            now,
            actor,
            "apply",
            serde_json::json!({ "resources": summary }),
        );
        let change = AdminChange::Resources {
            upserts: changed,
            deletes: Vec::new(),
            expected: Some(revision),
        };
        self.admin(change, admin).await.map(Ok)
    }

    /// Deletes one resource, refusing when others still reference it (read and validated
    /// again, a few times, when the revision moves meanwhile, as for [`Store::apply_at`]).
    pub async fn delete(
        &self,
        kind: Kind,
        key: &str,
        actor: &str,
        now: Millis,
    ) -> Result<Result<u64, Vec<ConfigError>>, StoreError> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.delete_once(kind, key, actor, now).await {
                Err(StoreError::Conflict(_)) if tries < RETRIES => {}
                done => return done,
            }
        }
    }

    async fn delete_once(
        &self,
        kind: Kind,
        key: &str,
        actor: &str,
        now: Millis,
    ) -> Result<Result<u64, Vec<ConfigError>>, StoreError> {
        let (current, revision) = self.load_config().await?;
        if let Err(errors) = current.without(kind, key) {
            return Ok(Err(errors));
        }
        let admin = admin_record(
            now,
            actor,
            "delete",
            serde_json::json!({ "resource": format!("{kind}/{key}") }),
        );
        let change = AdminChange::Resources {
            upserts: Vec::new(),
            deletes: vec![(kind, key.to_owned())],
            expected: Some(revision),
        };
        self.admin(change, admin).await.map(Ok)
    }
}

pub(crate) fn resource_json(resource: &Resource) -> String {
    serde_json::to_value(resource)
        .map(|v| canonical_json(&v))
        .unwrap_or_default()
}
