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
mod archive;
mod backend;
mod config;
mod credentials;
mod epics;
mod error;
mod health;
mod location;
mod migrations;
mod notifications;
mod pins;
mod postgres;
mod reads;
mod rows;
mod sessions;
mod sign_ins;
mod sink;
mod sql;
mod sqlite;
mod tasks;
mod threads;
mod token;
mod verify;
mod views;

use std::path::{Path, PathBuf};
use std::time::Duration;

use warden_core::approval::{ApprovalQueue, Parked};
use warden_core::audit::checkpoint::Checkpoint;
use warden_core::audit::{AuditRecord, NewRecord};
use warden_core::error::EnvError;
use warden_core::pipeline::{AuditLog, Counters};
use warden_core::policy::CounterSpec;
use warden_core::time::Millis;

pub use anchor::{AuditKey, CHECKPOINT_FILE, KEY_FILE, read_checkpoints};
pub use approvals::{Approval, ApprovalFilter, Transition};
pub use epics::{Epic, EpicChange, EpicFilter, EpicTask, Report, Review, WorkMove};
pub use error::StoreError;
pub use location::{Location, SQLITE_FILE};
pub use notifications::{Attempt, Delivery, DeliveryStatus, NewDelivery, NotifierDeliveries};
pub use pins::PinWrite;
pub use rows::{AgentRun, AuditFilter};
pub use sessions::McpSession;
pub use sign_ins::{SignIn, SignInNote};
pub use tasks::{
    EnvironmentRepository, EnvironmentState, RequestedRepository, Task, TaskChange,
    TaskEnvironment, TaskFilter, TaskInsert, TaskState,
};
pub use threads::{MessageRole, Thread, ThreadMessage};
pub use token::{NewToken, TokenRequest};
pub use views::{CallDetail, RunCursor, RunDetail, RunSummary};

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

    /// Claims `key` for the time `at` once across processes sharing the store: `true` for the
    /// first claim only (a Reconciler's pass for one scheduled time). Claims of `key` more than
    /// a day older than `at` are forgotten.
    pub async fn claim_once(&self, key: &str, at: Millis) -> Result<bool, StoreError> {
        const KEPT: i64 = 24 * 3600 * 1000;
        self.backend
            .claim_once(key, at.0, at.0.saturating_sub(KEPT))
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
            .agent_runs(agent, None, limit.clamp(1, 100_000))
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

    /// Runs, newest first, of `agent` when given, after the cursor `before` when given: those
    /// with audited calls and unattended agent runs.
    pub async fn runs(
        &self,
        agent: Option<&str>,
        before: Option<&RunCursor>,
        limit: i64,
    ) -> Result<Vec<RunSummary>, StoreError> {
        let limit = limit.clamp(1, 100_000);
        let records = self
            .audit(&views::run_records(agent, before, limit))
            .await?;
        let agent_runs = self
            .backend
            .agent_runs(agent, before.map(|c| c.at), limit)
            .await?;
        self.with_call_status(views::summaries(records, agent_runs, before, limit))
            .await
    }

    /// How many runs [`Self::runs`] can list, of `agent` when given.
    pub async fn count_runs(&self, agent: Option<&str>) -> Result<i64, StoreError> {
        self.sink.settle_for_read().await?;
        self.backend.count_runs(agent).await
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

    /// Records that `approver` approved the pending approval `a` (APR-8), if its approvers
    /// are still those `a` has: `false` when it was decided or approved by another meanwhile.
    pub async fn add_approver(&self, a: &Approval, approver: &str) -> Result<bool, StoreError> {
        let before =
            serde_json::to_string(&a.approvers).map_err(|e| StoreError::Invalid(e.to_string()))?;
        let mut approvers = a.approvers.clone();
        approvers.push(approver.to_owned());
        let after =
            serde_json::to_string(&approvers).map_err(|e| StoreError::Invalid(e.to_string()))?;
        self.backend.add_approver(&a.id, &before, &after).await
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
