//! The work domain's rows and its sqlx operations, written once in [`task_operations!`] and
//! expanded in each backend's `impl` block beside `crate::sql::shared_operations!`.
//!
//! Rows are read as plain columns and become [`Task`]s and [`TaskEnvironment`]s here, where a
//! state the binary does not know, or unreadable JSON, is a [`StoreError::Corrupt`].

use crate::error::StoreError;
use crate::tasks::{
    EnvironmentRepository, EnvironmentState, RequestedRepository, Task, TaskEnvironment, TaskState,
};

/// The columns of `tasks`, in [`TaskRow`]'s order.
pub(crate) const TASK_COLUMNS: &str = "id, workspace, parent_id, title, description, workflow_step, state, workspace_mode, repositories, external_id, created_by, created_in_session, from_office, agent_profile, created_at, updated_at";

/// A row of `tasks`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct TaskRow {
    pub(crate) id: String,
    pub(crate) workspace: String,
    pub(crate) parent_id: Option<String>,
    pub(crate) title: String,
    pub(crate) description: Option<String>,
    pub(crate) workflow_step: Option<String>,
    pub(crate) state: String,
    pub(crate) workspace_mode: Option<String>,
    pub(crate) repositories: String,
    pub(crate) external_id: Option<String>,
    pub(crate) created_by: String,
    pub(crate) created_in_session: Option<String>,
    pub(crate) from_office: bool,
    pub(crate) agent_profile: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl TaskRow {
    pub(crate) fn from_task(t: &Task) -> Result<Self, StoreError> {
        let repositories = serde_json::to_string(&t.repositories).map_err(|e| {
            StoreError::Invalid(format!(
                "the repositories of task `{}` cannot be stored: {e}",
                t.id
            ))
        })?;
        Ok(Self {
            id: t.id.clone(),
            workspace: t.workspace.clone(),
            parent_id: t.parent_id.clone(),
            title: t.title.clone(),
            description: t.description.clone(),
            workflow_step: t.workflow_step.clone(),
            state: t.state.as_str().to_owned(),
            workspace_mode: t.workspace_mode.clone(),
            repositories,
            external_id: t.external_id.clone(),
            created_by: t.created_by.clone(),
            created_in_session: t.created_in_session.clone(),
            from_office: t.from_office,
            agent_profile: t.agent_profile.clone(),
            created_at: t.created_at,
            updated_at: t.updated_at,
        })
    }

    pub(crate) fn into_task(self) -> Result<Task, StoreError> {
        let state = TaskState::parse(&self.state).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "task `{}` has an unknown state `{}`",
                self.id, self.state
            ))
        })?;
        let repositories: Vec<RequestedRepository> = serde_json::from_str(&self.repositories)
            .map_err(|e| {
                StoreError::Corrupt(format!(
                    "task `{}` has unreadable repositories: {e}",
                    self.id
                ))
            })?;
        Ok(Task {
            id: self.id,
            workspace: self.workspace,
            parent_id: self.parent_id,
            title: self.title,
            description: self.description,
            workflow_step: self.workflow_step,
            state,
            workspace_mode: self.workspace_mode,
            repositories,
            external_id: self.external_id,
            created_by: self.created_by,
            created_in_session: self.created_in_session,
            from_office: self.from_office,
            agent_profile: self.agent_profile,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

/// A row of `task_environments`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct EnvironmentRow {
    pub(crate) id: String,
    pub(crate) task_id: String,
    pub(crate) path: String,
    pub(crate) state: String,
    pub(crate) error: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

/// A row of `task_environment_repos`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct EnvironmentRepoRow {
    pub(crate) repository: String,
    pub(crate) branch: String,
    pub(crate) path: String,
    pub(crate) state: String,
    pub(crate) error: Option<String>,
}

impl EnvironmentRow {
    pub(crate) fn into_environment(
        self,
        repos: Vec<EnvironmentRepoRow>,
    ) -> Result<TaskEnvironment, StoreError> {
        let state = EnvironmentState::parse(&self.state).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "environment `{}` has an unknown state `{}`",
                self.id, self.state
            ))
        })?;
        let repositories = repos
            .into_iter()
            .map(|r| {
                let state = EnvironmentState::parse(&r.state).ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "repository `{}` of environment `{}` has an unknown state `{}`",
                        r.repository, self.id, r.state
                    ))
                })?;
                Ok(EnvironmentRepository {
                    repository: r.repository,
                    branch: r.branch,
                    path: r.path,
                    state,
                    error: r.error,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(TaskEnvironment {
            id: self.id,
            task_id: self.task_id,
            path: self.path,
            state,
            error: self.error,
            created_at: self.created_at,
            updated_at: self.updated_at,
            repositories,
        })
    }
}

/// Whether a statement failed on a foreign key: a missing parent, or a child that appeared.
pub(crate) fn is_foreign_key_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_foreign_key_violation())
}

/// The refusal to delete a task that has children.
pub(crate) fn has_children(id: &str, children: i64) -> StoreError {
    let noun = if children == 1 {
        "child task"
    } else {
        "child tasks"
    };
    StoreError::Conflict(format!(
        "task `{id}` has {children} {noun}; delete them first"
    ))
}

/// The work domain's operations, expanded inside each backend's `impl` block. Every write
/// takes the backend's `begin_write`, as the shared operations do.
macro_rules! task_operations {
    ($db:ty) => {
        pub(crate) async fn insert_task(
            &self,
            t: &$crate::tasks::sql::TaskRow,
        ) -> Result<$crate::tasks::TaskInsert, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            // INVARIANT: `ON CONFLICT DO NOTHING` covers the id and the partial unique index
            // on (workspace, external_id). A racing insert with the same key waits for the
            // first to commit (PostgreSQL) or for the write lock (SQLite), then inserts
            // nothing, and the lookup below, a later statement, sees the winner.
            let inserted = sqlx::query(
                "INSERT INTO tasks (id, workspace, parent_id, title, description, workflow_step, state, workspace_mode, repositories, external_id, created_by, created_in_session, from_office, agent_profile, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT DO NOTHING",
            )
            .bind(&t.id)
            .bind(&t.workspace)
            .bind(&t.parent_id)
            .bind(&t.title)
            .bind(&t.description)
            .bind(&t.workflow_step)
            .bind(&t.state)
            .bind(&t.workspace_mode)
            .bind(&t.repositories)
            .bind(&t.external_id)
            .bind(&t.created_by)
            .bind(&t.created_in_session)
            .bind(t.from_office)
            .bind(&t.agent_profile)
            .bind(t.created_at)
            .bind(t.updated_at)
            .execute(&mut *tx)
            .await;
            let inserted = match inserted {
                Ok(done) => done.rows_affected() == 1,
                Err(e) if $crate::tasks::sql::is_foreign_key_violation(&e) => {
                    return Err($crate::error::StoreError::Invalid(format!(
                        "there is no task `{}` to be the parent of task `{}`",
                        t.parent_id.as_deref().unwrap_or_default(),
                        t.id
                    )));
                }
                Err(e) => return Err(e.into()),
            };
            if inserted {
                tx.commit().await?;
                return Ok($crate::tasks::TaskInsert::Inserted);
            }
            let existing: Option<String> = match &t.external_id {
                Some(key) => {
                    sqlx::query_scalar("SELECT id FROM tasks WHERE workspace = $1 AND external_id = $2")
                        .bind(&t.workspace)
                        .bind(key)
                        .fetch_optional(&mut *tx)
                        .await?
                }
                None => None,
            };
            tx.commit().await?;
            match existing {
                Some(existing) => Ok($crate::tasks::TaskInsert::ExternalIdTaken { existing }),
                None => Err($crate::error::StoreError::Invalid(format!(
                    "a task `{}` exists already",
                    t.id
                ))),
            }
        }

        pub(crate) async fn task(
            &self,
            id: &str,
        ) -> Result<Option<$crate::tasks::sql::TaskRow>, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::tasks::sql::TASK_COLUMNS);
            qb.push(" FROM tasks WHERE id = ").push_bind(id.to_owned());
            Ok(qb.build_query_as().fetch_optional(&self.pool).await?)
        }

        pub(crate) async fn task_by_external_id(
            &self,
            workspace: &str,
            external_id: &str,
        ) -> Result<Option<$crate::tasks::sql::TaskRow>, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::tasks::sql::TASK_COLUMNS);
            qb.push(" FROM tasks WHERE workspace = ").push_bind(workspace.to_owned());
            qb.push(" AND external_id = ").push_bind(external_id.to_owned());
            Ok(qb.build_query_as().fetch_optional(&self.pool).await?)
        }

        pub(crate) async fn tasks(
            &self,
            f: &$crate::tasks::TaskFilter,
            limit: i64,
        ) -> Result<Vec<$crate::tasks::sql::TaskRow>, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::tasks::sql::TASK_COLUMNS);
            qb.push(" FROM tasks WHERE 1 = 1");
            if let Some(workspace) = &f.workspace {
                qb.push(" AND workspace = ").push_bind(workspace.clone());
            }
            if let Some(parent) = &f.parent {
                qb.push(" AND parent_id = ").push_bind(parent.clone());
            }
            if let Some(states) = &f.states {
                qb.push(" AND state IN (");
                let mut sep = qb.separated(", ");
                for st in states {
                    sep.push_bind(st.as_str());
                }
                qb.push(")");
            }
            qb.push(" ORDER BY created_at DESC, id DESC LIMIT ").push_bind(limit);
            Ok(qb.build_query_as().fetch_all(&self.pool).await?)
        }

        pub(crate) async fn update_task(
            &self,
            id: &str,
            c: &$crate::tasks::TaskChange,
            now: i64,
        ) -> Result<Option<$crate::tasks::sql::TaskRow>, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let mut qb = sqlx::QueryBuilder::<$db>::new("UPDATE tasks SET updated_at = ");
            qb.push_bind(now);
            let texts = [
                ("title", &c.title),
                ("description", &c.description),
                ("workflow_step", &c.workflow_step),
            ];
            for (column, value) in texts {
                if let Some(v) = value {
                    qb.push(", ").push(column).push(" = ").push_bind(v.clone());
                }
            }
            if let Some(state) = c.state {
                qb.push(", state = ").push_bind(state.as_str());
            }
            qb.push(" WHERE id = ").push_bind(id.to_owned());
            qb.push(" RETURNING ").push($crate::tasks::sql::TASK_COLUMNS);
            let row = qb.build_query_as().fetch_optional(&mut *tx).await?;
            tx.commit().await?;
            Ok(row)
        }

        pub(crate) async fn delete_task(&self, id: &str) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let children: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tasks WHERE parent_id = $1")
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
            if children > 0 {
                // Dropping the transaction rolls it back: nothing is deleted.
                return Err($crate::tasks::sql::has_children(id, children));
            }
            sqlx::query(
                "DELETE FROM task_environment_repos WHERE environment_id IN \
                 (SELECT id FROM task_environments WHERE task_id = $1)",
            )
            .bind(id)
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM task_environments WHERE task_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            let deleted = match sqlx::query("DELETE FROM tasks WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
            {
                Ok(done) => done.rows_affected(),
                // A child inserted on PostgreSQL after the count, by another replica.
                Err(e) if $crate::tasks::sql::is_foreign_key_violation(&e) => {
                    return Err($crate::error::StoreError::Conflict(format!(
                        "task `{id}` gained a child task while it was being deleted; nothing was deleted"
                    )));
                }
                Err(e) => return Err(e.into()),
            };
            tx.commit().await?;
            Ok(deleted == 1)
        }

        pub(crate) async fn insert_environment(
            &self,
            env: &$crate::tasks::TaskEnvironment,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let inserted = sqlx::query(
                "INSERT INTO task_environments (id, task_id, path, state, error, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            )
            .bind(&env.id)
            .bind(&env.task_id)
            .bind(&env.path)
            .bind(env.state.as_str())
            .bind(&env.error)
            .bind(env.created_at)
            .bind(env.updated_at)
            .execute(&mut *tx)
            .await;
            let inserted = match inserted {
                Ok(done) => done.rows_affected() == 1,
                Err(e) if $crate::tasks::sql::is_foreign_key_violation(&e) => {
                    return Err($crate::error::StoreError::Invalid(format!(
                        "there is no task `{}` to have environment `{}`",
                        env.task_id, env.id
                    )));
                }
                Err(e) => return Err(e.into()),
            };
            if !inserted {
                return Ok(false);
            }
            for (position, r) in (0_i64..).zip(&env.repositories) {
                sqlx::query(
                    "INSERT INTO task_environment_repos (environment_id, position, repository, branch, path, state, error) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(&env.id)
                .bind(position)
                .bind(&r.repository)
                .bind(&r.branch)
                .bind(&r.path)
                .bind(r.state.as_str())
                .bind(&r.error)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(true)
        }

        pub(crate) async fn environment(
            &self,
            task_id: &str,
        ) -> Result<
            Option<(
                $crate::tasks::sql::EnvironmentRow,
                Vec<$crate::tasks::sql::EnvironmentRepoRow>,
            )>,
            $crate::error::StoreError,
        > {
            // One transaction: on SQLite, the environment and its repositories are one snapshot.
            let mut tx = self.pool.begin().await?;
            let env: Option<$crate::tasks::sql::EnvironmentRow> = sqlx::query_as(
                "SELECT id, task_id, path, state, error, created_at, updated_at \
                 FROM task_environments WHERE task_id = $1",
            )
            .bind(task_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(env) = env else {
                tx.commit().await?;
                return Ok(None);
            };
            let repos = sqlx::query_as(
                "SELECT repository, branch, path, state, error FROM task_environment_repos \
                 WHERE environment_id = $1 ORDER BY position",
            )
            .bind(&env.id)
            .fetch_all(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Some((env, repos)))
        }

        pub(crate) async fn set_environment_state(
            &self,
            id: &str,
            state: $crate::tasks::EnvironmentState,
            error: Option<&str>,
            now: i64,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let changed = sqlx::query(
                "UPDATE task_environments SET state = $1, error = $2, updated_at = $3 WHERE id = $4",
            )
            .bind(state.as_str())
            .bind(error)
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            Ok(changed == 1)
        }

        pub(crate) async fn set_environment_repo_state(
            &self,
            environment_id: &str,
            repository: &str,
            branch: &str,
            state: $crate::tasks::EnvironmentState,
            error: Option<&str>,
        ) -> Result<u64, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let changed = sqlx::query(
                "UPDATE task_environment_repos SET state = $1, error = $2 \
                 WHERE environment_id = $3 AND repository = $4 AND branch = $5",
            )
            .bind(state.as_str())
            .bind(error)
            .bind(environment_id)
            .bind(repository)
            .bind(branch)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            Ok(changed)
        }

        pub(crate) async fn runs_of_task(
            &self,
            task_id: &str,
        ) -> Result<Vec<$crate::rows::AgentRun>, $crate::error::StoreError> {
            let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT ");
            qb.push($crate::rows::AGENT_RUN_COLUMNS);
            qb.push(" FROM agent_runs WHERE task_id = ").push_bind(task_id.to_owned());
            qb.push(" ORDER BY queued_at DESC, id DESC");
            Ok(qb.build_query_as().fetch_all(&self.pool).await?)
        }

        pub(crate) async fn set_run_task(
            &self,
            run_id: &str,
            task_id: Option<&str>,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let changed = sqlx::query("UPDATE agent_runs SET task_id = $1 WHERE id = $2")
                .bind(task_id)
                .bind(run_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            Ok(changed == 1)
        }
    };
}

pub(crate) use task_operations;
