//! The epics' rows and their sqlx operations, the same SQL on both backends. A move updates
//! only from the state the caller read and records itself in the same transaction.

use warden_core::time::Millis;
use warden_core::work::{EpicState, EpicTaskState, Risk, State as _};

use super::{Epic, EpicTask, WorkMove};
use crate::error::StoreError;

fn corrupt(what: &str, value: &str) -> StoreError {
    StoreError::Corrupt(format!(
        "{what} `{value}` is stored, which this warden does not know"
    ))
}

/// A row of `epics`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct EpicRow {
    id: String,
    project: String,
    title: String,
    description: String,
    criteria: String,
    tradeoffs: String,
    risk: String,
    state: String,
    created_by: String,
    created_at: i64,
    updated_at: i64,
}

impl EpicRow {
    pub(crate) fn into_epic(self) -> Result<Epic, StoreError> {
        Ok(Epic {
            criteria: serde_json::from_str(&self.criteria)
                .map_err(|_| corrupt("an epic's criteria", &self.criteria))?,
            risk: Risk::parse(&self.risk).ok_or_else(|| corrupt("the risk", &self.risk))?,
            state: EpicState::parse(&self.state)
                .ok_or_else(|| corrupt("the epic state", &self.state))?,
            id: self.id,
            project: self.project,
            title: self.title,
            description: self.description,
            tradeoffs: self.tradeoffs,
            created_by: self.created_by,
            created_at: Millis(self.created_at),
            updated_at: Millis(self.updated_at),
        })
    }
}

/// A row of `epic_tasks`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct EpicTaskRow {
    id: String,
    epic_id: String,
    task_id: String,
    title: String,
    repository: String,
    base_branch: String,
    branch: String,
    state: String,
    created_by: String,
    merge_commit: Option<String>,
    created_at: i64,
    updated_at: i64,
    ci_state: Option<String>,
    ci_url: Option<String>,
    conflicts: String,
}

impl EpicTaskRow {
    pub(crate) fn into_task(self) -> Result<EpicTask, StoreError> {
        Ok(EpicTask {
            state: EpicTaskState::parse(&self.state)
                .ok_or_else(|| corrupt("the epic task state", &self.state))?,
            id: self.id,
            epic_id: self.epic_id,
            task_id: self.task_id,
            title: self.title,
            repository: self.repository,
            base_branch: self.base_branch,
            branch: self.branch,
            created_by: self.created_by,
            merge_commit: self.merge_commit,
            created_at: Millis(self.created_at),
            updated_at: Millis(self.updated_at),
            conflicts: serde_json::from_str(&self.conflicts)
                .map_err(|_| corrupt("an epic task's conflicts", &self.conflicts))?,
            ci_state: self.ci_state,
            ci_url: self.ci_url,
        })
    }
}

/// A row of `work_moves`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct MoveRow {
    subject: String,
    seq: i64,
    moved_by: String,
    from_state: Option<String>,
    to_state: String,
    at: i64,
}

impl MoveRow {
    pub(crate) fn into_move(self) -> WorkMove {
        WorkMove {
            subject: self.subject,
            seq: self.seq,
            moved_by: self.moved_by,
            from: self.from_state,
            to: self.to_state,
            at: Millis(self.at),
        }
    }
}

/// A row of `epic_task_reviews`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct ReviewRow {
    pub(crate) epic_task_id: String,
    pub(crate) seq: i64,
    pub(crate) reviewer: String,
    pub(crate) verdict: String,
    pub(crate) comment: String,
    pub(crate) head: Option<String>,
    pub(crate) critical: i64,
    pub(crate) at: i64,
}

/// One move of a row of `table` (`epics`, `epic_tasks`): from `from` to `to` by `moved_by`
/// at `at`, setting its `merge_commit` when given.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step<'a> {
    pub(crate) table: &'static str,
    pub(crate) id: &'a str,
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
    pub(crate) moved_by: &'a str,
    pub(crate) merge_commit: Option<&'a str>,
    pub(crate) at: i64,
}

/// The columns of `epics`, in [`EpicRow`]'s order.
pub(crate) const EPIC_COLUMNS: &str = "id, project, title, description, criteria, tradeoffs, \
     risk, state, created_by, created_at, updated_at";
/// The columns of `epic_tasks`, in [`EpicTaskRow`]'s order.
pub(crate) const EPIC_TASK_COLUMNS: &str = "id, epic_id, task_id, title, repository, \
     base_branch, branch, state, created_by, merge_commit, created_at, updated_at, ci_state, \
     ci_url, conflicts";

/// The epics' sqlx operations, expanded in each backend's `impl` block.
macro_rules! epic_operations {
    ($db:ty) => {
        /// Records that `subject` moved from `from` to `to`, numbered after its last move.
        async fn record_work_move(
            tx: &mut sqlx::Transaction<'_, $db>,
            subject: &str,
            moved_by: &str,
            from: Option<&str>,
            to: &str,
            at: i64,
        ) -> Result<(), $crate::error::StoreError> {
            let last: Option<i64> =
                sqlx::query_scalar("SELECT MAX(seq) FROM work_moves WHERE subject = $1")
                    .bind(subject)
                    .fetch_one(&mut **tx)
                    .await?;
            sqlx::query(
                "INSERT INTO work_moves (subject, seq, moved_by, from_state, to_state, at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(subject)
            .bind(last.unwrap_or(0) + 1)
            .bind(moved_by)
            .bind(from)
            .bind(to)
            .bind(at)
            .execute(&mut **tx)
            .await?;
            Ok(())
        }

        pub(crate) async fn insert_epic(
            &self,
            e: &$crate::epics::Epic,
        ) -> Result<(), $crate::error::StoreError> {
            let criteria = serde_json::to_string(&e.criteria)
                .map_err(|err| $crate::error::StoreError::Corrupt(err.to_string()))?;
            let (_guard, mut tx) = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO epics (id, project, title, description, criteria, tradeoffs, risk, \
                 state, created_by, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            )
            .bind(&e.id)
            .bind(&e.project)
            .bind(&e.title)
            .bind(&e.description)
            .bind(criteria)
            .bind(&e.tradeoffs)
            .bind(e.risk.as_str())
            .bind(warden_core::work::State::as_str(e.state))
            .bind(&e.created_by)
            .bind(e.created_at.0)
            .bind(e.updated_at.0)
            .execute(&mut *tx)
            .await?;
            let state = warden_core::work::State::as_str(e.state);
            Self::record_work_move(&mut tx, &e.id, &e.created_by, None, state, e.created_at.0)
                .await?;
            tx.commit().await?;
            Ok(())
        }

        pub(crate) async fn epic_row(
            &self,
            id: &str,
        ) -> Result<Option<$crate::epics::sql::EpicRow>, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::epics::sql::EPIC_COLUMNS);
            qb.push(" FROM epics WHERE id = ").push_bind(id.to_owned());
            Ok(qb.build_query_as().fetch_optional(&self.pool).await?)
        }

        pub(crate) async fn epic_rows(
            &self,
            filter: &$crate::epics::EpicFilter,
            limit: i64,
        ) -> Result<Vec<$crate::epics::sql::EpicRow>, $crate::error::StoreError> {
            if filter.projects.is_empty() {
                return Ok(Vec::new());
            }
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::epics::sql::EPIC_COLUMNS);
            qb.push(" FROM epics WHERE project IN (");
            let mut projects = qb.separated(", ");
            for project in &filter.projects {
                projects.push_bind(project.clone());
            }
            qb.push(")");
            if let Some(state) = filter.state {
                qb.push(" AND state = ")
                    .push_bind(warden_core::work::State::as_str(state));
            }
            qb.push(" ORDER BY updated_at DESC, id DESC LIMIT ")
                .push_bind(limit);
            Ok(qb.build_query_as().fetch_all(&self.pool).await?)
        }

        pub(crate) async fn update_epic(
            &self,
            id: &str,
            change: &$crate::epics::EpicChange,
            now: i64,
        ) -> Result<bool, $crate::error::StoreError> {
            let criteria = change
                .criteria
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(|err| $crate::error::StoreError::Corrupt(err.to_string()))?;
            let (_guard, mut tx) = self.begin_write().await?;
            let done = sqlx::query(
                "UPDATE epics SET title = COALESCE($2, title), \
                 description = COALESCE($3, description), criteria = COALESCE($4, criteria), \
                 tradeoffs = COALESCE($5, tradeoffs), risk = COALESCE($6, risk), \
                 updated_at = $7 WHERE id = $1",
            )
            .bind(id)
            .bind(&change.title)
            .bind(&change.description)
            .bind(criteria)
            .bind(&change.tradeoffs)
            .bind(change.risk.map(|r| r.as_str()))
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }

        /// Makes `step`: false when its row is not in `step.from` (moved meanwhile, on any
        /// replica, or gone).
        pub(crate) async fn move_work(
            &self,
            step: &$crate::epics::sql::Step<'_>,
        ) -> Result<bool, $crate::error::StoreError> {
            let $crate::epics::sql::Step {
                table,
                id,
                from,
                to,
                moved_by,
                merge_commit,
                at: now,
            } = *step;
            let (_guard, mut tx) = self.begin_write().await?;
            let mut qb = sqlx::QueryBuilder::<$db>::new("UPDATE ");
            qb.push(table).push(" SET state = ").push_bind(to.to_owned());
            qb.push(", updated_at = ").push_bind(now);
            if let Some(commit) = merge_commit {
                // A new merge commit: what CI said of the last one no longer holds.
                qb.push(", merge_commit = ").push_bind(commit.to_owned());
                qb.push(", ci_state = NULL, ci_url = NULL");
            }
            qb.push(" WHERE id = ").push_bind(id.to_owned());
            qb.push(" AND state = ").push_bind(from.to_owned());
            let done = qb.build().execute(&mut *tx).await?;
            if done.rows_affected() != 1 {
                return Ok(false);
            }
            Self::record_work_move(&mut tx, id, moved_by, Some(from), to, now).await?;
            tx.commit().await?;
            Ok(true)
        }

        pub(crate) async fn insert_epic_task(
            &self,
            t: &$crate::epics::EpicTask,
        ) -> Result<(), $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let state = warden_core::work::State::as_str(t.state);
            sqlx::query(
                "INSERT INTO epic_tasks (id, epic_id, task_id, title, repository, base_branch, \
                 branch, state, created_by, merge_commit, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(&t.id)
            .bind(&t.epic_id)
            .bind(&t.task_id)
            .bind(&t.title)
            .bind(&t.repository)
            .bind(&t.base_branch)
            .bind(&t.branch)
            .bind(state)
            .bind(&t.created_by)
            .bind(&t.merge_commit)
            .bind(t.created_at.0)
            .bind(t.updated_at.0)
            .execute(&mut *tx)
            .await?;
            Self::record_work_move(&mut tx, &t.id, &t.created_by, None, state, t.created_at.0)
                .await?;
            tx.commit().await?;
            Ok(())
        }

        pub(crate) async fn epic_task_row(
            &self,
            id: &str,
        ) -> Result<Option<$crate::epics::sql::EpicTaskRow>, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::epics::sql::EPIC_TASK_COLUMNS);
            qb.push(" FROM epic_tasks WHERE id = ").push_bind(id.to_owned());
            Ok(qb.build_query_as().fetch_optional(&self.pool).await?)
        }

        pub(crate) async fn epic_task_rows(
            &self,
            epic_id: &str,
        ) -> Result<Vec<$crate::epics::sql::EpicTaskRow>, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::epics::sql::EPIC_TASK_COLUMNS);
            qb.push(" FROM epic_tasks WHERE epic_id = ")
                .push_bind(epic_id.to_owned());
            qb.push(" ORDER BY created_at, id");
            Ok(qb.build_query_as().fetch_all(&self.pool).await?)
        }

        pub(crate) async fn insert_review(
            &self,
            r: &$crate::epics::Review,
            then: Option<&str>,
        ) -> Result<Option<i64>, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            // Only while in review; locks the task's row (PostgreSQL) before numbering.
            let held = sqlx::query(
                "UPDATE epic_tasks SET state = COALESCE($2, state), updated_at = $3 \
                 WHERE id = $1 AND state = 'review'",
            )
            .bind(&r.epic_task_id)
            .bind(then)
            .bind(r.at.0)
            .execute(&mut *tx)
            .await?;
            if held.rows_affected() != 1 {
                return Ok(None);
            }
            if let Some(to) = then {
                Self::record_work_move(&mut tx, &r.epic_task_id, &r.reviewer, Some("review"), to, r.at.0)
                    .await?;
            }
            let last: Option<i64> = sqlx::query_scalar(
                "SELECT MAX(seq) FROM epic_task_reviews WHERE epic_task_id = $1",
            )
            .bind(&r.epic_task_id)
            .fetch_one(&mut *tx)
            .await?;
            let seq = last.unwrap_or(0) + 1;
            sqlx::query(
                "INSERT INTO epic_task_reviews (epic_task_id, seq, reviewer, verdict, comment, \
                 head, critical, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(&r.epic_task_id)
            .bind(seq)
            .bind(&r.reviewer)
            .bind(r.verdict.as_str())
            .bind(&r.comment)
            .bind(&r.head)
            .bind(i64::from(r.critical))
            .bind(r.at.0)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Some(seq))
        }

        pub(crate) async fn merged_epic_task_rows(
            &self,
            project: &str,
            commit: &str,
        ) -> Result<Vec<$crate::epics::sql::EpicTaskRow>, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::epics::sql::EPIC_TASK_COLUMNS);
            qb.push(" FROM epic_tasks WHERE state = 'merged' AND merge_commit = ")
                .push_bind(commit.to_owned());
            qb.push(" AND epic_id IN (SELECT id FROM epics WHERE project = ")
                .push_bind(project.to_owned());
            qb.push(") ORDER BY created_at, id");
            Ok(qb.build_query_as().fetch_all(&self.pool).await?)
        }

        pub(crate) async fn set_epic_task_report(
            &self,
            id: &str,
            report: &$crate::epics::Report<'_>,
            now: i64,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let done = match report {
                $crate::epics::Report::Ci { state, url } => sqlx::query(
                    "UPDATE epic_tasks SET ci_state = $2, ci_url = $3, updated_at = $4 \
                     WHERE id = $1",
                )
                .bind(id)
                .bind(*state)
                .bind(*url)
                .bind(now),
                $crate::epics::Report::Conflicts(paths) => sqlx::query(
                    "UPDATE epic_tasks SET conflicts = $2, updated_at = $3 WHERE id = $1",
                )
                .bind(id)
                .bind(serde_json::to_string(paths).unwrap_or_else(|_| "[]".into()))
                .bind(now),
            }
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }

        pub(crate) async fn git_delivery_seen(
            &self,
            provider: &str,
            ids: &[String],
        ) -> Result<bool, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new(
                "SELECT COUNT(*) FROM git_deliveries WHERE provider = ",
            );
            qb.push_bind(provider.to_owned()).push(" AND delivery IN (");
            let mut each = qb.separated(", ");
            for id in ids {
                each.push_bind(id.clone());
            }
            qb.push(")");
            let seen: i64 = qb.build_query_scalar().fetch_one(&self.pool).await?;
            Ok(seen > 0)
        }

        pub(crate) async fn insert_git_deliveries(
            &self,
            provider: &str,
            ids: &[String],
            at: i64,
            forget_before: i64,
        ) -> Result<(), $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            sqlx::query("DELETE FROM git_deliveries WHERE provider = $1 AND at < $2")
                .bind(provider)
                .bind(forget_before)
                .execute(&mut *tx)
                .await?;
            for id in ids {
                sqlx::query(
                    "INSERT INTO git_deliveries (provider, delivery, at) VALUES ($1, $2, $3) \
                     ON CONFLICT (provider, delivery) DO NOTHING",
                )
                .bind(provider)
                .bind(id)
                .bind(at)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        }

        pub(crate) async fn review_rows(
            &self,
            epic_task_id: &str,
        ) -> Result<Vec<$crate::epics::sql::ReviewRow>, $crate::error::StoreError> {
            Ok(sqlx::query_as(
                "SELECT epic_task_id, seq, reviewer, verdict, comment, head, critical, at \
                 FROM epic_task_reviews WHERE epic_task_id = $1 ORDER BY seq",
            )
            .bind(epic_task_id)
            .fetch_all(&self.pool)
            .await?)
        }

        pub(crate) async fn work_move_rows(
            &self,
            subject: &str,
        ) -> Result<Vec<$crate::epics::sql::MoveRow>, $crate::error::StoreError> {
            Ok(sqlx::query_as(
                "SELECT subject, seq, moved_by, from_state, to_state, at FROM work_moves \
                 WHERE subject = $1 ORDER BY seq",
            )
            .bind(subject)
            .fetch_all(&self.pool)
            .await?)
        }
    };
}

pub(crate) use epic_operations;
