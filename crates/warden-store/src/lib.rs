//! Warden's store (STORE-1, STORE-2): one interface over two backends — SQLite (the embedded
//! default, WAL) and PostgreSQL (many replicas) — with versioned migrations per backend.
//!
//! Both backends run the same SQL where the dialects agree (`sql.rs`; `$N` placeholders work
//! on both); each backend's module (`sqlite/`, `postgres/`) holds its sqlx pool and its one
//! audit sink (`sink.rs`), which chains every audit record the backend stores. One contract
//! test suite (`tests/contract.rs`; `tests/tasks.rs` for the work domain, `tasks/`) runs
//! against both.

mod anchor;
mod approvals;
mod backend;
mod error;
mod health;
mod location;
mod migrations;
mod postgres;
mod reads;
mod rows;
mod sessions;
mod sink;
mod sql;
mod sqlite;
mod tasks;
mod verify;
mod views;

use std::path::{Path, PathBuf};
use std::time::Duration;

use warden_core::approval::{ApprovalQueue, Parked};
use warden_core::audit::checkpoint::Checkpoint;
use warden_core::audit::{AuditRecord, NewRecord, RecordKind, canonical_json};
use warden_core::capability::CapabilitySet;
use warden_core::config::{Config, ConfigError, Kind, Located, Resource, Source};
use warden_core::error::EnvError;
use warden_core::name::Name;
use warden_core::pipeline::{AuditLog, Counters};
use warden_core::policy::CounterSpec;
use warden_core::principal::{Credential, CredentialKind, Principal, TokenHash, format_token};
use warden_core::time::Millis;

pub use anchor::{AuditKey, CHECKPOINT_FILE, KEY_FILE, read_checkpoints};
pub use approvals::{Approval, ApprovalFilter, Transition};
pub use error::StoreError;
pub use location::{Location, SQLITE_FILE};
pub use rows::{AgentRun, AuditFilter};
pub use sessions::McpSession;
pub use tasks::{
    EnvironmentRepository, EnvironmentState, RequestedRepository, Task, TaskChange,
    TaskEnvironment, TaskFilter, TaskInsert, TaskState,
};
pub use views::{CallDetail, RunDetail, RunSummary};

use backend::{Backend, Sink};
use location::redact_url;
use sink::{AdminChange, AuditSink};

/// The fuzz target `spool`'s door (`fuzz/`, REL-1): reads `bytes` as the replay of an audit
/// spool file does. Only with the feature `fuzz`; not an API.
#[cfg(feature = "fuzz")]
#[doc(hidden)]
pub fn fuzz_spool_file(bytes: &[u8]) -> usize {
    sqlite::read_as_replay(bytes)
}

/// The store.
#[derive(Debug)]
pub struct Store {
    backend: Backend,
    /// Where audit records go: on SQLite, group-committed or (for a serving store) written to
    /// the audit spool and chained in bulk moments later; on PostgreSQL, group-committed by a
    /// writer task. Each append is acknowledged once durable.
    sink: Sink,
    /// Whether the latest audit append succeeded.
    appends: health::AppendHealth,
    /// The store's id ([`Store::id`]), once read.
    id: std::sync::OnceLock<String>,
}

/// A token just created: the credential and its secret, shown once.
#[derive(Debug)]
pub struct NewToken {
    /// The stored credential (no secret).
    pub credential: Credential,
    /// The secret (`wdn_…`). Never stored; print it once.
    pub secret: String,
}

/// What to create a token for.
#[derive(Clone, Debug)]
pub struct TokenRequest {
    /// The owner.
    pub principal: Principal,
    /// Project bindings (`None` = all of the owner's projects).
    pub projects: Option<Vec<Name>>,
    /// Capability scopes (`None` = all of the owner's capabilities).
    pub scopes: Option<CapabilitySet>,
    /// Time to live.
    pub ttl: Option<Duration>,
    /// Listing note.
    pub description: Option<String>,
    /// API key or run credential.
    pub kind: CredentialKind,
}

impl Store {
    /// Opens (creating if needed) and migrates the store. A schema newer than this binary
    /// knows is refused (STORE-2). On the embedded store, audit records that a stopped server
    /// left in its spool are inserted first, unless a live server owns the spool.
    pub async fn open(location: &Location) -> Result<Self, StoreError> {
        Self::open_as(location, None).await
    }

    /// [`Store::open`] for a command that reads, or changes only what exists (`audit`, `get`,
    /// `describe`, `delete`, `token list`, …): where there is no store it is refused with
    /// [`StoreError::Missing`], never created.
    pub async fn open_existing(location: &Location) -> Result<Self, StoreError> {
        let missing = |what: String| {
            Err(StoreError::Missing(format!(
                "no Warden store at {what}; `warden serve` or `warden migrate` creates one"
            )))
        };
        match location {
            Location::DataDir(dir) => {
                let file = dir.join(SQLITE_FILE);
                if !file.is_file() {
                    return missing(format!("{} (no such file)", file.display()));
                }
            }
            Location::Url(url) if url.starts_with("sqlite:") => {
                if let Some(file) = sqlite::url_file(url)
                    && !file.is_file()
                {
                    return missing(format!("{} (no such file)", file.display()));
                }
            }
            Location::Url(url)
                if url.starts_with("postgres://") || url.starts_with("postgresql://") =>
            {
                if !postgres::has_schema(url).await? {
                    return missing(format!(
                        "{} (the database has no Warden tables)",
                        redact_url(url)
                    ));
                }
            }
            Location::Url(_) => {}
        }
        Self::open(location).await
    }

    /// [`Store::open`] for a long-running server: on the embedded store it owns the audit
    /// spool, so that a call's audit records are made durable with one write to the spool and
    /// inserted into the chain in bulk off the call path (see `sqlite/spool/`). A store whose spool
    /// another process owns appends directly, as [`Store::open`] does.
    pub async fn open_serving(location: &Location) -> Result<Self, StoreError> {
        Self::open_as(location, Some(sqlite::insert_delay()?)).await
    }

    /// Opens the store; `serving` is the spool's insert delay for a serving store.
    async fn open_as(location: &Location, serving: Option<Duration>) -> Result<Self, StoreError> {
        let (backend, sink) = match location {
            Location::DataDir(dir) => {
                let (backend, sink) = sqlite::open_dir(dir, serving).await?;
                (Backend::Sqlite(backend), Sink::Sqlite(sink))
            }
            Location::Url(url)
                if url.starts_with("postgres://") || url.starts_with("postgresql://") =>
            {
                let (backend, sink) = postgres::open(url).await?;
                (Backend::Postgres(backend), Sink::Postgres(sink))
            }
            Location::Url(url) if url.starts_with("sqlite:") => {
                let (backend, sink) = sqlite::open_url(url, serving).await?;
                (Backend::Sqlite(backend), Sink::Sqlite(sink))
            }
            Location::Url(url) => {
                return Err(StoreError::Invalid(format!(
                    "`{}` is not a supported database URL; use postgres://… or sqlite://…",
                    redact_url(url)
                )));
            }
        };
        let store = Store {
            backend,
            sink,
            appends: health::AppendHealth::default(),
            id: std::sync::OnceLock::new(),
        };
        // A new store gets its id at creation.
        store.id().await?;
        Ok(store)
    }

    /// Which backend this is: `sqlite` or `postgres`.
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Closes the connections; further use fails (`UNAVAILABLE` on the call path). What is
    /// spooled is inserted first.
    pub async fn close(&self) {
        self.sink.close();
        self.backend.close().await;
    }

    /// The current revision of configuration and credentials.
    pub async fn revision(&self) -> Result<u64, StoreError> {
        self.backend.revision().await
    }

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
        let (current, revision) = self.load_config().await?;
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

    /// Deletes one resource, refusing when others still reference it.
    pub async fn delete(
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

    /// Creates a token and returns its secret once (AUTH-1). Only the hash is stored.
    pub async fn create_token(
        &self,
        request: TokenRequest,
        actor: &str,
        now: Millis,
    ) -> Result<NewToken, StoreError> {
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

    /// Appends audit records, chained, in one transaction; returns once durable. Await it to
    /// the end or drop it: on the embedded store the call may be leading a group commit that
    /// other calls wait for (dropped, it hands that over). A serving store makes them durable
    /// in its spool and chains them moments later (`sqlite/spool/`).
    pub async fn append_audit(&self, records: Vec<NewRecord>) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let result = self.sink.append(records).await;
        self.appends.record(&result);
        result
    }

    /// Whether the store is there and answers: the embedded store's database file is still
    /// the one it opened (`sqlite/files.rs`) and the database answers. `Ok` with the current
    /// revision.
    pub async fn health(&self) -> Result<u64, StoreError> {
        self.sink.check()?;
        self.backend.revision().await
    }

    /// Why the latest audit append failed, while appends fail (a held write lock, a full
    /// disk, a lost connection or database file).
    pub fn append_problem(&self) -> Option<String> {
        self.appends.problem()
    }

    /// A change of resources (`AdminChange::Resources`) and its record: the new revision.
    async fn admin(&self, change: AdminChange, record: NewRecord) -> Result<u64, StoreError> {
        // INVARIANT: a change of resources always bumps the revision; only bootstrapping and
        // revoking can find nothing to change.
        self.sink
            .admin(change, record)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a change of resources reported no revision".into()))
    }

    /// Audit records matching a filter, in sequence order.
    pub async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        self.sink.settle_for_read().await?;
        self.backend
            .query_audit(filter)
            .await?
            .into_iter()
            .map(rows::AuditRow::into_record)
            .collect()
    }

    /// The store's id (`sto_…`): made once, when the store is created (or first opened by a
    /// binary that knows ids), kept in the store itself and the same for every process on it,
    /// a restored backup included. Checkpoints name it (AUD-2).
    pub async fn id(&self) -> Result<String, StoreError> {
        if let Some(id) = self.id.get() {
            return Ok(id.clone());
        }
        let fresh = format!("sto_{}", uuid::Uuid::now_v7().simple());
        let id = self.backend.meta_get_or_set("store_id", &fresh).await?;
        Ok(self.id.get_or_init(|| id).clone())
    }

    /// Signs the chain's head with `key` and keeps the checkpoint in the store and in the
    /// checkpoint file beside the key (AUD-2); `None` when the chain is empty or has not grown
    /// since the latest checkpoint.
    pub async fn checkpoint(
        &self,
        key: &AuditKey,
        now: Millis,
    ) -> Result<Option<Checkpoint>, StoreError> {
        self.sink.settle_for_read().await?;
        let (seq, hash) = self.backend.head().await?;
        let latest = self.backend.checkpoints(1).await?.first().map(|c| c.1);
        if seq == 0 || latest.is_some_and(|l| l >= seq) {
            return Ok(None);
        }
        let c = key.sign(&self.id().await?, seq, &hash, now);
        anchor::append_checkpoint(&key.checkpoint_file(), &c)?;
        self.backend.insert_checkpoint(&c).await?;
        Ok(Some(c))
    }

    /// The store's checkpoints, newest first.
    pub async fn checkpoints(&self, limit: i64) -> Result<Vec<Checkpoint>, StoreError> {
        Ok(self
            .backend
            .checkpoints(limit)
            .await?
            .into_iter()
            .map(|(store, seq, hash, at, key, signature)| Checkpoint {
                store,
                seq,
                hash,
                at: Millis(at),
                key,
                signature,
            })
            .collect())
    }

    /// The head of the audit chain: the last record's sequence number (0 when empty).
    pub async fn audit_head(&self) -> Result<i64, StoreError> {
        self.sink.settle_for_read().await?;
        Ok(self.backend.head().await?.0)
    }

    /// The decision records of calls allowed in the sequence range `(from, to]`, before
    /// `before`, that have no outcome record: calls whose process stopped between deciding
    /// and recording what happened (REL-3).
    pub async fn unfinished_calls(
        &self,
        from: i64,
        to: i64,
        before: Millis,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        self.sink.settle_for_read().await?;
        self.backend
            .unfinished_calls(from, to, before.0)
            .await?
            .into_iter()
            .map(rows::AuditRow::into_record)
            .collect()
    }

    /// Takes one unit from a counter; `false` when the limit is reached. Exact under
    /// concurrency, across processes sharing the store.
    pub async fn take(&self, counter: &CounterSpec, now: Millis) -> Result<bool, StoreError> {
        if counter.limit == 0 {
            return Ok(false);
        }
        let window = now.window_start(counter.window).0;
        self.backend
            .take(&counter.key, window, i64::from(counter.limit))
            .await
    }

    /// Records a new agent run; `false` when it would break a uniqueness rule (the same
    /// scheduled time fired twice, or a schedule already queued or running).
    pub async fn insert_agent_run(&self, run: &AgentRun) -> Result<bool, StoreError> {
        self.backend.insert_agent_run(run).await
    }

    /// Updates an agent run's lifecycle fields; never the task it is bound to
    /// ([`Store::set_run_task`] changes that).
    pub async fn update_agent_run(&self, run: &AgentRun) -> Result<(), StoreError> {
        self.backend.update_agent_run(run).await
    }

    /// Agent runs, newest first.
    pub async fn agent_runs(
        &self,
        agent: Option<&str>,
        limit: i64,
    ) -> Result<Vec<AgentRun>, StoreError> {
        self.backend
            .agent_runs(agent, limit.clamp(1, 100_000))
            .await
    }

    /// One agent run.
    pub async fn agent_run(&self, id: &str) -> Result<Option<AgentRun>, StoreError> {
        self.backend.agent_run(id).await
    }

    /// Runs raw SQL against the store. For tests that tamper with the database as an attacker
    /// with direct access would.
    #[cfg(any(test, feature = "testing"))]
    #[doc(hidden)]
    pub async fn execute_raw(&self, sql: &str) -> Result<u64, StoreError> {
        self.sink.settle_for_read().await?;
        self.backend.execute_raw(sql).await
    }

    /// Runs, newest first: those with audited calls and unattended agent runs.
    pub async fn runs(
        &self,
        agent: Option<&str>,
        limit: i64,
    ) -> Result<Vec<RunSummary>, StoreError> {
        let records = self.audit(&views::run_records(agent, limit)).await?;
        let agent_runs = self.agent_runs(agent, limit).await?;
        self.with_call_status(views::summaries(records, agent_runs, limit))
            .await
    }

    /// One run in detail; `None` when no such run exists.
    pub async fn describe_run(&self, id: &str) -> Result<Option<RunDetail>, StoreError> {
        let records = self.audit(&views::records_of(id)).await?;
        let lifecycle = self.agent_run(id).await?;
        Ok(views::detail(id, records, lifecycle))
    }

    /// Records a parked call.
    pub async fn insert_approval(&self, a: &Approval) -> Result<(), StoreError> {
        self.backend.insert_approval(a).await
    }

    /// One parked call.
    pub async fn approval(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        self.backend.approval(id).await
    }

    /// Parked calls, oldest first.
    pub async fn approvals(&self, filter: &ApprovalFilter) -> Result<Vec<Approval>, StoreError> {
        self.backend.approvals(filter).await
    }

    /// Moves an approval from one of `from` to `to`; `true` if this writer won (APR-6).
    pub async fn transition(
        &self,
        id: &str,
        from: &[warden_core::approval::ApprovalStatus],
        to: warden_core::approval::ApprovalStatus,
        set: Transition,
    ) -> Result<bool, StoreError> {
        self.backend.transition(id, from, to, &set).await
    }

    /// Path of the SQLite file for a data directory.
    pub fn sqlite_path(dir: &Path) -> PathBuf {
        dir.join(SQLITE_FILE)
    }
}

fn resource_json(resource: &Resource) -> String {
    serde_json::to_value(resource)
        .map(|v| canonical_json(&v))
        .unwrap_or_default()
}

fn admin_record(now: Millis, actor: &str, action: &str, details: serde_json::Value) -> NewRecord {
    NewRecord {
        at: now,
        kind: RecordKind::Admin,
        run_id: "admin".into(),
        call_id: None,
        principal: Some(actor.to_owned()),
        agent: None,
        tool: Some(action.to_owned()),
        decision: None,
        code: None,
        payload: canonical_json(&details),
    }
}

impl AuditLog for Store {
    async fn append(&self, records: Vec<NewRecord>) -> Result<(), EnvError> {
        self.append_audit(records)
            .await
            .map_err(|e| EnvError(e.to_string()))
    }
}

impl Counters for Store {
    async fn take(&self, counter: &CounterSpec, now: Millis) -> Result<bool, EnvError> {
        Store::take(self, counter, now)
            .await
            .map_err(|e| EnvError(e.to_string()))
    }
}

impl ApprovalQueue for Store {
    async fn park(&self, p: &Parked) -> Result<String, EnvError> {
        let row = approvals::parked(p);
        self.insert_approval(&row)
            .await
            .map_err(|e| EnvError(e.to_string()))?;
        Ok(row.id)
    }
}
