//! What the backends share: the SQL text that every driver runs, and the sqlx operations
//! written once in [`shared_operations!`] and expanded in each backend's `impl` block.
//!
//! The SQL is the same on SQLite and PostgreSQL (`$N` placeholders, `ON CONFLICT`,
//! `RETURNING`); only the pool type differs, and each backend supplies `begin_write`, how its
//! writers are serialised. The statements below are also run by rusqlite (the embedded
//! store's audit sink, `sqlite::chain`), which binds `$N` by the order in which placeholders
//! first appear, not by their number: only statements whose placeholders appear in order,
//! `$1` first, belong here (a test holds them to it).

use warden_core::config::Kind;

use crate::error::StoreError;

/// The configuration's revision.
pub(crate) const REVISION: &str = "SELECT revision FROM state WHERE id = 1";
/// Sets the configuration's revision.
pub(crate) const SET_REVISION: &str = "UPDATE state SET revision = $1 WHERE id = 1";
/// The audit chain's head: the last record's sequence number and hash.
pub(crate) const HEAD: &str = "SELECT seq, hash FROM audit_head WHERE id = 1";
/// Moves the chain's head.
pub(crate) const SET_HEAD: &str = "UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1";
/// One chained audit record.
pub(crate) const INSERT_AUDIT: &str = "INSERT INTO audit (seq, at, kind, run_id, call_id, principal, agent, tool, decision, code, payload, prev_hash, hash) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";
/// One meta value.
pub(crate) const META_GET: &str = "SELECT value FROM meta WHERE key = $1";
/// Sets one meta value.
pub(crate) const META_SET: &str = "INSERT INTO meta (key, value) VALUES ($1, $2) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value";
/// Creates or replaces a resource.
pub(crate) const UPSERT_RESOURCE: &str = "INSERT INTO resources (kind, key, spec, updated_at, revision) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (kind, key) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at, revision = excluded.revision";
/// Deletes a resource.
pub(crate) const DELETE_RESOURCE: &str = "DELETE FROM resources WHERE kind = $1 AND key = $2";
/// Marks the store bootstrapped, once: changes no row when it already is.
pub(crate) const MARK_BOOTSTRAPPED: &str =
    "INSERT INTO meta (key, value) VALUES ('bootstrapped', $1) ON CONFLICT (key) DO NOTHING";
/// Stores a credential.
pub(crate) const INSERT_CREDENTIAL: &str = "INSERT INTO credentials (id, hash, kind, principal, projects, scopes, created_at, expires_at, revoked_at, description) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
/// Whether a credential exists.
pub(crate) const CREDENTIAL_EXISTS: &str = "SELECT id FROM credentials WHERE id = $1";
/// Revokes a credential, unless it is revoked already.
pub(crate) const REVOKE_CREDENTIAL: &str =
    "UPDATE credentials SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL";
/// Marks an upstream pinned (GOV-9), once.
pub(crate) const MARK_PINNED: &str = "INSERT INTO pinned_upstreams (upstream, pinned_at) VALUES ($1, $2) \
     ON CONFLICT (upstream) DO NOTHING";
/// Creates or replaces the pin of an upstream tool.
pub(crate) const UPSERT_PIN: &str = "INSERT INTO tool_pins (upstream, tool, pinned_hash, pinned, offered_hash, offered, offered_at, rejected_hash, decided_by, decided_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
     ON CONFLICT (upstream, tool) DO UPDATE SET pinned_hash = excluded.pinned_hash, pinned = excluded.pinned, \
     offered_hash = excluded.offered_hash, offered = excluded.offered, offered_at = excluded.offered_at, \
     rejected_hash = excluded.rejected_hash, decided_by = excluded.decided_by, decided_at = excluded.decided_at";
/// The seq of the audit trail's archive cut (AUD-6).
pub(crate) const AUDIT_CUT_SEQ: &str = "SELECT seq FROM audit_cut WHERE id = 1";
/// Sets the audit trail's archive cut.
pub(crate) const SET_AUDIT_CUT: &str = "INSERT INTO audit_cut (id, store, seq, hash, at, key, signature) \
     VALUES (1, $1, $2, $3, $4, $5, $6) \
     ON CONFLICT (id) DO UPDATE SET store = excluded.store, seq = excluded.seq, hash = excluded.hash, \
     at = excluded.at, key = excluded.key, signature = excluded.signature";

/// Deletes archived records, oldest first, a batch at a time (AUD-6).
pub(crate) const DELETE_ARCHIVED: &str =
    "DELETE FROM audit WHERE seq IN (SELECT seq FROM audit WHERE seq <= $1 ORDER BY seq LIMIT $2)";

/// Every statement rusqlite runs too.
#[cfg(test)]
const RUN_BY_RUSQLITE: [&str; 17] = [
    REVISION,
    SET_REVISION,
    HEAD,
    SET_HEAD,
    INSERT_AUDIT,
    META_GET,
    META_SET,
    UPSERT_RESOURCE,
    DELETE_RESOURCE,
    MARK_BOOTSTRAPPED,
    INSERT_CREDENTIAL,
    CREDENTIAL_EXISTS,
    REVOKE_CREDENTIAL,
    MARK_PINNED,
    UPSERT_PIN,
    AUDIT_CUT_SEQ,
    SET_AUDIT_CUT,
];

/// A stored resource kind.
pub(crate) fn parse_kind(s: &str) -> Result<Kind, StoreError> {
    Kind::ALL
        .into_iter()
        .find(|k| k.as_str() == s)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown resource kind `{s}`")))
}

/// A stored revision (never negative).
pub(crate) fn revision_u64(r: i64) -> u64 {
    u64::try_from(r).unwrap_or_default()
}

/// The operations both backends share, expanded inside each backend's `impl` block.
macro_rules! shared_operations {
    ($db:ty) => {
        pub(crate) async fn revision(&self) -> Result<u64, StoreError> {
            let r: i64 = sqlx::query_scalar($crate::sql::REVISION)
                .fetch_one(&self.pool)
                .await?;
            Ok($crate::sql::revision_u64(r))
        }

        pub(crate) async fn load_resources(
            &self,
        ) -> Result<(Vec<$crate::rows::ResourceRow>, u64), StoreError> {
            // One transaction: the rows and the revision are a consistent snapshot.
            let mut tx = self.pool.begin().await?;
            let revision: i64 = sqlx::query_scalar($crate::sql::REVISION)
                .fetch_one(&mut *tx)
                .await?;
            let rows: Vec<(String, String, String)> =
                sqlx::query_as("SELECT kind, key, spec FROM resources ORDER BY kind, key")
                    .fetch_all(&mut *tx)
                    .await?;
            tx.commit().await?;
            let rows = rows
                .into_iter()
                .map(|(k, key, spec)| Ok(($crate::sql::parse_kind(&k)?, key, spec)))
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok((rows, $crate::sql::revision_u64(revision)))
        }

        pub(crate) async fn meta_get(&self, key: &str) -> Result<Option<String>, StoreError> {
            Ok(sqlx::query_scalar($crate::sql::META_GET)
                .bind(key)
                .fetch_optional(&self.pool)
                .await?)
        }

        /// Sets `key` to `value` unless it has a value; returns the value it has.
        pub(crate) async fn meta_get_or_set(&self, key: &str, value: &str) -> Result<String, StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            sqlx::query("INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING")
                .bind(key)
                .bind(value)
                .execute(&mut *tx)
                .await?;
            let kept: String = sqlx::query_scalar($crate::sql::META_GET)
                .bind(key)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(kept)
        }

        pub(crate) async fn credentials(&self) -> Result<Vec<$crate::rows::CredentialRow>, StoreError> {
            Ok(sqlx::query_as(
                "SELECT id, hash, kind, principal, projects, scopes, created_at, expires_at, revoked_at, description \
                 FROM credentials ORDER BY created_at, id",
            )
            .fetch_all(&self.pool)
            .await?)
        }

        pub(crate) async fn credential_by_hash(
            &self,
            hash: &str,
        ) -> Result<Option<$crate::rows::CredentialRow>, StoreError> {
            Ok(sqlx::query_as(
                "SELECT id, hash, kind, principal, projects, scopes, created_at, expires_at, revoked_at, description \
                 FROM credentials WHERE hash = $1",
            )
            .bind(hash)
            .fetch_optional(&self.pool)
            .await?)
        }

        pub(crate) async fn head(&self) -> Result<(i64, String), StoreError> {
            Ok(sqlx::query_as($crate::sql::HEAD)
                .fetch_one(&self.pool)
                .await?)
        }

        pub(crate) async fn query_audit(
            &self,
            f: &$crate::rows::AuditFilter,
        ) -> Result<Vec<$crate::rows::AuditRow>, StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::rows::AUDIT_COLUMNS);
            qb.push(" FROM audit WHERE 1 = 1");
            Self::audit_conditions(&mut qb, f);
            qb.push(if f.newest_first { " ORDER BY seq DESC" } else { " ORDER BY seq ASC" });
            qb.push(" LIMIT ").push_bind(f.limit.unwrap_or(100).clamp(1, 1_000_000));
            Ok(qb.build_query_as().fetch_all(&self.pool).await?)
        }

        /// How many runs [`Self::agent_runs`] and the run records know, of `agent` when given.
        pub(crate) async fn count_runs(&self, agent: Option<&str>) -> Result<i64, StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new(
                "SELECT COUNT(*) FROM (SELECT run_id FROM audit WHERE kind = 'run'",
            );
            if let Some(agent) = agent {
                qb.push(" AND agent = ").push_bind(agent.to_owned());
            }
            qb.push(" UNION SELECT id FROM agent_runs");
            if let Some(agent) = agent {
                qb.push(" WHERE agent = ").push_bind(agent.to_owned());
            }
            qb.push(") AS known");
            Ok(qb.build_query_scalar().fetch_one(&self.pool).await?)
        }

        /// How many records match `f`, whatever its limit and order.
        pub(crate) async fn count_audit(
            &self,
            f: &$crate::rows::AuditFilter,
        ) -> Result<i64, StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT COUNT(*) FROM audit WHERE 1 = 1");
            Self::audit_conditions(&mut qb, f);
            Ok(qb.build_query_scalar().fetch_one(&self.pool).await?)
        }

        /// The `AND …` conditions of `f`.
        fn audit_conditions(
            qb: &mut sqlx::QueryBuilder<$db>,
            f: &$crate::rows::AuditFilter,
        ) {
            let text_filters = [
                ("run_id", &f.run_id),
                ("principal", &f.principal),
                ("agent", &f.agent),
                ("tool", &f.tool),
                ("decision", &f.decision),
                ("code", &f.code),
                ("kind", &f.kind),
            ];
            for (column, value) in text_filters {
                if let Some(v) = value {
                    qb.push(" AND ").push(column).push(" = ").push_bind(v.clone());
                }
            }
            if let Some(since) = f.since {
                qb.push(" AND at >= ").push_bind(since.0);
            }
            if let Some(until) = f.until {
                qb.push(" AND at < ").push_bind(until.0);
            }
            if let Some(after) = f.after_seq {
                qb.push(if f.newest_first { " AND seq < " } else { " AND seq > " })
                    .push_bind(after);
            }
            if let Some(text) = f.contains.as_deref().filter(|t| !t.is_empty()) {
                // `%`, `_` and the escape itself stand for themselves. The escape is `!`, not a
                // backslash, whose reading in a literal depends on a PostgreSQL setting; both
                // sides are folded by the backend's own `LOWER`.
                let pattern = format!(
                    "%{}%",
                    text.replace('!', "!!").replace('%', "!%").replace('_', "!_")
                );
                qb.push(" AND (");
                let columns = ["run_id", "call_id", "principal", "agent", "tool", "code", "payload"];
                for (i, column) in columns.into_iter().enumerate() {
                    if i > 0 {
                        qb.push(" OR ");
                    }
                    qb.push("LOWER(COALESCE(")
                        .push(column)
                        .push(", '')) LIKE LOWER(")
                        .push_bind(pattern.clone())
                        .push(") ESCAPE '!'");
                }
                qb.push(")");
            }
        }

        /// Records with `after < seq <= through`, in order, at most `limit` of them.
        pub(crate) async fn scan_audit(
            &self,
            after: i64,
            through: i64,
            limit: i64,
        ) -> Result<Vec<$crate::rows::AuditRow>, StoreError> {
            Ok(sqlx::query_as(
                "SELECT seq, at, kind, run_id, call_id, principal, agent, tool, decision, code, payload, prev_hash, hash \
                 FROM audit WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT $3",
            )
            .bind(after)
            .bind(through)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?)
        }

        pub(crate) async fn insert_checkpoint(
            &self,
            c: &warden_core::audit::checkpoint::Checkpoint,
        ) -> Result<(), StoreError> {
            sqlx::query(
                "INSERT INTO audit_checkpoints (store, seq, hash, at, key, signature) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (seq) DO NOTHING",
            )
            .bind(&c.store)
            .bind(c.seq)
            .bind(&c.hash)
            .bind(c.at.0)
            .bind(&c.key)
            .bind(&c.signature)
            .execute(&self.pool)
            .await?;
            Ok(())
        }

        /// The latest checkpoints, newest first.
        pub(crate) async fn checkpoints(
            &self,
            limit: i64,
        ) -> Result<Vec<(Option<String>, i64, String, i64, String, String)>, StoreError> {
            Ok(sqlx::query_as(
                "SELECT store, seq, hash, at, key, signature FROM audit_checkpoints \
                 ORDER BY seq DESC LIMIT $1",
            )
            .bind(limit)
            .fetch_all(&self.pool)
            .await?)
        }

        /// The hash of the record at `seq`, if there is one.
        pub(crate) async fn audit_hash_at(&self, seq: i64) -> Result<Option<String>, StoreError> {
            Ok(sqlx::query_scalar("SELECT hash FROM audit WHERE seq = $1")
                .bind(seq)
                .fetch_optional(&self.pool)
                .await?)
        }

        /// Allowed calls in `(from, to]` decided before `before` that have no outcome record.
        pub(crate) async fn unfinished_calls(
            &self,
            from: i64,
            to: i64,
            before: i64,
        ) -> Result<Vec<$crate::rows::AuditRow>, StoreError> {
            Ok(sqlx::query_as(
                "SELECT seq, at, kind, run_id, call_id, principal, agent, tool, decision, code, payload, prev_hash, hash \
                 FROM audit d WHERE d.seq > $1 AND d.seq <= $2 AND d.kind = 'decision' \
                 AND d.decision = 'allow' AND d.call_id IS NOT NULL AND d.at < $3 \
                 AND NOT EXISTS (SELECT 1 FROM audit o WHERE o.run_id = d.run_id \
                 AND o.call_id = d.call_id AND o.kind = 'outcome') ORDER BY d.seq",
            )
            .bind(from)
            .bind(to)
            .bind(before)
            .fetch_all(&self.pool)
            .await?)
        }

        /// Claims `key` for the time `at` (a counter of one in the window `at`); forgets the
        /// claims of `key` before `forget_before`.
        pub(crate) async fn claim_once(&self, key: &str, at: i64, forget_before: i64) -> Result<bool, StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let claimed = sqlx::query(
                "INSERT INTO counters (key, window_start, count) VALUES ($1, $2, 1) ON CONFLICT DO NOTHING",
            )
            .bind(key)
            .bind(at)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            sqlx::query("DELETE FROM counters WHERE key = $1 AND window_start < $2")
                .bind(key)
                .bind(forget_before)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(claimed == 1)
        }

        pub(crate) async fn take(&self, key: &str, window: i64, limit: i64) -> Result<bool, StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let taken: Option<i64> = sqlx::query_scalar(
                "INSERT INTO counters (key, window_start, count) VALUES ($1, $2, 1) \
                 ON CONFLICT (key, window_start) DO UPDATE SET count = counters.count + 1 \
                 WHERE counters.count < $3 RETURNING count",
            )
            .bind(key)
            .bind(window)
            .bind(limit)
            .fetch_optional(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(taken.is_some())
        }

        pub(crate) async fn insert_agent_run(&self, run: &$crate::rows::AgentRun) -> Result<bool, StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let inserted = sqlx::query(
                "INSERT INTO agent_runs (id, agent, trigger, schedule_key, fire_at, status, requested_by, credential_id, queued_at, started_at, finished_at, exit_code, error, task_id) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT DO NOTHING",
            )
            .bind(&run.id)
            .bind(&run.agent)
            .bind(&run.trigger)
            .bind(&run.schedule_key)
            .bind(run.fire_at)
            .bind(&run.status)
            .bind(&run.requested_by)
            .bind(&run.credential_id)
            .bind(run.queued_at)
            .bind(run.started_at)
            .bind(run.finished_at)
            .bind(run.exit_code)
            .bind(&run.error)
            .bind(&run.task_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            Ok(inserted == 1)
        }

        pub(crate) async fn update_agent_run(&self, run: &$crate::rows::AgentRun) -> Result<(), StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            // A stopped run stays stopped, with the reason it was stopped for.
            sqlx::query(
                "UPDATE agent_runs SET status = CASE WHEN status = 'stopped' THEN status ELSE $2 END, credential_id = $3, started_at = $4, finished_at = $5, exit_code = $6, \
                 error = CASE WHEN status = 'stopped' THEN error ELSE $7 END, output = $8 WHERE id = $1",
            )
            .bind(&run.id)
            .bind(&run.status)
            .bind(&run.credential_id)
            .bind(run.started_at)
            .bind(run.finished_at)
            .bind(run.exit_code)
            .bind(&run.error)
            .bind(&run.output)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        }

        /// The newest `limit` agent runs, of `agent` when given, queued at or before `until`
        /// (ms) when given.
        pub(crate) async fn agent_runs(
            &self,
            agent: Option<&str>,
            until: Option<i64>,
            limit: i64,
        ) -> Result<Vec<$crate::rows::AgentRun>, StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::rows::AGENT_RUN_COLUMNS);
            qb.push(" FROM agent_runs WHERE 1 = 1");
            if let Some(agent) = agent {
                qb.push(" AND agent = ").push_bind(agent.to_owned());
            }
            if let Some(until) = until {
                qb.push(" AND queued_at <= ").push_bind(until);
            }
            qb.push(" ORDER BY queued_at DESC, id DESC LIMIT ").push_bind(limit);
            Ok(qb.build_query_as().fetch_all(&self.pool).await?)
        }

        /// Marks the run `id` stopped for `reason`, if it is queued or running.
        pub(crate) async fn stop_agent_run(&self, id: &str, reason: &str, at: i64) -> Result<bool, StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let stopped = sqlx::query(
                "UPDATE agent_runs SET status = 'stopped', error = $2, finished_at = $3 WHERE id = $1 AND status IN ('queued', 'running')",
            )
            .bind(id)
            .bind(reason)
            .bind(at)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            Ok(stopped == 1)
        }

        pub(crate) async fn agent_run(&self, id: &str) -> Result<Option<$crate::rows::AgentRun>, StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::rows::AGENT_RUN_COLUMNS);
            qb.push(" FROM agent_runs WHERE id = ").push_bind(id.to_owned());
            Ok(qb.build_query_as().fetch_optional(&self.pool).await?)
        }

        pub(crate) async fn insert_approval(&self, a: &$crate::approvals::Approval) -> Result<(), StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO approvals (id, kind, status, run_id, call_id, tool, project, args, args_hash, requested_by, principal, agent, policy_revision, rule, created_at, due_at, self_denied_by, deciders) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
            )
            .bind(&a.id)
            .bind(a.kind.as_str())
            .bind(a.status.as_str())
            .bind(&a.run_id)
            .bind(&a.call_id)
            .bind(&a.tool)
            .bind(&a.project)
            .bind(&a.args)
            .bind(&a.args_hash)
            .bind(&a.requested_by)
            .bind(&a.principal)
            .bind(&a.agent)
            .bind(a.policy_revision)
            .bind(&a.rule)
            .bind(a.created_at)
            .bind(a.due_at)
            .bind(&a.self_denied_by)
            .bind(a.deciders)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        }

        /// Adds `approver` to a pending approval whose approvers are still `before`.
        pub(crate) async fn add_approver(&self, id: &str, before: &str, after: &str) -> Result<bool, StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let added = sqlx::query(
                "UPDATE approvals SET approvers = $3 WHERE id = $1 AND status = 'pending' AND approvers = $2",
            )
            .bind(id)
            .bind(before)
            .bind(after)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            Ok(added == 1)
        }

        pub(crate) async fn approval(&self, id: &str) -> Result<Option<$crate::approvals::Approval>, StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::approvals::APPROVAL_COLUMNS);
            qb.push(" FROM approvals WHERE id = ").push_bind(id.to_owned());
            Ok(qb.build_query_as().fetch_optional(&self.pool).await?)
        }

        pub(crate) async fn approvals(
            &self,
            f: &$crate::approvals::ApprovalFilter,
        ) -> Result<Vec<$crate::approvals::Approval>, StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::approvals::APPROVAL_COLUMNS);
            qb.push(" FROM approvals WHERE 1 = 1");
            if !f.status.is_empty() {
                qb.push(" AND status IN (");
                let mut sep = qb.separated(", ");
                for st in &f.status {
                    sep.push_bind(st.as_str());
                }
                qb.push(")");
            }
            if let Some(due) = f.due_before {
                qb.push(" AND due_at <= ").push_bind(due);
            }
            if let Some(p) = &f.principal {
                qb.push(" AND principal = ").push_bind(p.clone());
            }
            if let Some(projects) = &f.projects {
                qb.push(" AND (project IS NULL");
                if !projects.is_empty() {
                    qb.push(" OR project IN (");
                    let mut sep = qb.separated(", ");
                    for p in projects {
                        sep.push_bind(p.clone());
                    }
                    qb.push(")");
                }
                qb.push(")");
            }
            qb.push(" ORDER BY created_at, id LIMIT ").push_bind(f.limit.unwrap_or(100).clamp(1, 100_000));
            Ok(qb.build_query_as().fetch_all(&self.pool).await?)
        }

        /// Parked calls waiting for a decision or their veto window, by status.
        pub(crate) async fn waiting_approvals(&self) -> Result<Vec<(String, i64)>, StoreError> {
            Ok(sqlx::query_as(
                "SELECT status, COUNT(*) FROM approvals WHERE status IN ('pending', 'staged') \
                 GROUP BY status",
            )
            .fetch_all(&self.pool)
            .await?)
        }

        pub(crate) async fn transition(
            &self,
            id: &str,
            from: &[warden_core::approval::ApprovalStatus],
            to: warden_core::approval::ApprovalStatus,
            set: &$crate::approvals::Transition,
        ) -> Result<bool, StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let mut qb = sqlx::QueryBuilder::<$db>::new("UPDATE approvals SET status = ");
            qb.push_bind(to.as_str());
            let fields: [(&str, Option<String>); 4] = [
                ("decided_by", set.decided_by.clone()),
                ("reason", set.reason.clone()),
                ("outcome_code", set.outcome_code.map(|c| c.as_str().to_owned())),
                ("outcome_message", set.outcome_message.clone()),
            ];
            for (column, value) in fields {
                if let Some(v) = value {
                    qb.push(", ").push(column).push(" = ").push_bind(v);
                }
            }
            if let Some(v) = set.result.clone() {
                qb.push(", result = ").push_bind(v);
            }
            let times: [(&str, Option<i64>); 3] = [
                ("decided_at", set.decided_at),
                ("claimed_at", set.claimed_at),
                ("finished_at", set.finished_at),
            ];
            for (column, value) in times {
                if let Some(v) = value {
                    qb.push(", ").push(column).push(" = ").push_bind(v);
                }
            }
            if set.clear_args {
                qb.push(", args = NULL");
            }
            qb.push(" WHERE id = ").push_bind(id.to_owned());
            qb.push(" AND status IN (");
            let mut sep = qb.separated(", ");
            for st in from {
                sep.push_bind(st.as_str());
            }
            qb.push(")");
            let changed = qb.build().execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            Ok(changed == 1)
        }

        #[cfg(any(test, feature = "testing"))]
        pub(crate) async fn execute_raw(&self, sql: &str) -> Result<u64, StoreError> {
            Ok(sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                .execute(&self.pool)
                .await?
                .rows_affected())
        }
    };
}

pub(crate) use shared_operations;

#[cfg(test)]
mod tests {
    #![allow(clippy::panic, clippy::indexing_slicing, reason = "tests")]

    use super::*;

    /// rusqlite numbers `$N` by first appearance: a statement both drivers run must name
    /// `$1`, `$2`, … in that order, each first appearing after the one before.
    #[test]
    fn shared_statements_name_their_placeholders_in_order() {
        for sql in RUN_BY_RUSQLITE {
            let mut seen: Vec<u32> = Vec::new();
            for (at, _) in sql.match_indices('$') {
                let digits: String = sql[at + 1..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                let n: u32 = digits
                    .parse()
                    .unwrap_or_else(|_| panic!("`{sql}`: a `$` without a number"));
                if !seen.contains(&n) {
                    seen.push(n);
                }
            }
            let in_order: Vec<u32> = (1..=u32::try_from(seen.len()).unwrap_or(0)).collect();
            assert_eq!(seen, in_order, "`{sql}`");
        }
    }
}
