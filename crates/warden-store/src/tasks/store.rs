//! The store's task operations ([`Store::insert_task`] and the rest): the row conversions of
//! [`super::sql`] around the backends' queries.

use warden_core::time::Millis;

use super::sql;
use super::{EnvironmentState, Task, TaskChange, TaskEnvironment, TaskFilter, TaskInsert};
use crate::Store;
use crate::error::StoreError;
use crate::rows::AgentRun;

/// The most rows one list returns.
const MAX_LIMIT: i64 = 100_000;

impl Store {
    /// Stores a new task. When another task of the workspace has its `external_id`, nothing
    /// is stored and the other's id is returned: of any number of racing inserts with one key,
    /// across replicas, exactly one is [`TaskInsert::Inserted`]. A parent that does not exist,
    /// or an id that another task has, is refused ([`StoreError::Invalid`]).
    pub async fn insert_task(&self, task: &Task) -> Result<TaskInsert, StoreError> {
        let row = sql::TaskRow::from_task(task)?;
        self.backend.insert_task(&row).await
    }

    /// One task; `None` when there is no such task.
    pub async fn task(&self, id: &str) -> Result<Option<Task>, StoreError> {
        self.backend
            .task(id)
            .await?
            .map(sql::TaskRow::into_task)
            .transpose()
    }

    /// The task of a workspace that has an idempotency key; `None` when none has it.
    pub async fn task_by_external_id(
        &self,
        workspace: &str,
        external_id: &str,
    ) -> Result<Option<Task>, StoreError> {
        self.backend
            .task_by_external_id(workspace, external_id)
            .await?
            .map(sql::TaskRow::into_task)
            .transpose()
    }

    /// Tasks, newest first (by creation time, then by id, descending).
    pub async fn tasks(&self, filter: &TaskFilter) -> Result<Vec<Task>, StoreError> {
        if filter.states.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
        let limit = filter.limit.unwrap_or(100).clamp(1, MAX_LIMIT);
        self.backend
            .tasks(filter, limit)
            .await?
            .into_iter()
            .map(sql::TaskRow::into_task)
            .collect()
    }

    /// The children of a task, newest first (at most 100 000); empty when it has none or
    /// there is no such task.
    pub async fn children(&self, id: &str) -> Result<Vec<Task>, StoreError> {
        self.tasks(&TaskFilter {
            parent: Some(id.to_owned()),
            limit: Some(MAX_LIMIT),
            ..TaskFilter::default()
        })
        .await
    }

    /// Changes a task and sets its `updated_at` to `now` (also when `change` changes
    /// nothing); returns the task as changed, or `None` when there is no such task.
    pub async fn update_task(
        &self,
        id: &str,
        change: &TaskChange,
        now: Millis,
    ) -> Result<Option<Task>, StoreError> {
        self.backend
            .update_task(id, change, now.0)
            .await?
            .map(sql::TaskRow::into_task)
            .transpose()
    }

    /// Deletes a task and its environment; `false` when there is no such task. A task with
    /// children is refused ([`StoreError::Conflict`], naming how many) and nothing is deleted.
    /// Agent runs bound to the task keep its id.
    pub async fn delete_task(&self, id: &str) -> Result<bool, StoreError> {
        self.backend.delete_task(id).await
    }

    /// Stores a task's environment and its repositories, in one transaction; `false` when the
    /// task has an environment already or the id is taken (nothing is stored then). A task
    /// that does not exist is refused ([`StoreError::Invalid`]).
    pub async fn insert_environment(&self, env: &TaskEnvironment) -> Result<bool, StoreError> {
        self.backend.insert_environment(env).await
    }

    /// A task's environment with its repositories in insertion order; `None` when it has none.
    pub async fn environment(&self, task_id: &str) -> Result<Option<TaskEnvironment>, StoreError> {
        let Some((env, repos)) = self.backend.environment(task_id).await? else {
            return Ok(None);
        };
        env.into_environment(repos).map(Some)
    }

    /// Sets an environment's state and error (`None` clears it), and its `updated_at` to
    /// `now`; `false` when there is no such environment.
    pub async fn set_environment_state(
        &self,
        id: &str,
        state: EnvironmentState,
        error: Option<&str>,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.backend
            .set_environment_state(id, state, error, now.0)
            .await
    }

    /// Sets the state and error (`None` clears it) of an environment's repository; returns
    /// how many rows changed: 0 when none matches, more than 1 when the environment has the
    /// repository and branch more than once (each of them changes).
    pub async fn set_environment_repo_state(
        &self,
        environment_id: &str,
        repository: &str,
        branch: &str,
        state: EnvironmentState,
        error: Option<&str>,
    ) -> Result<u64, StoreError> {
        self.backend
            .set_environment_repo_state(environment_id, repository, branch, state, error)
            .await
    }

    /// The agent runs (sessions) bound to a task, newest first.
    pub async fn runs_of_task(&self, task_id: &str) -> Result<Vec<AgentRun>, StoreError> {
        self.backend.runs_of_task(task_id).await
    }

    /// Stops the sessions of task `task` still queued or running: each is marked `stopped`
    /// with `reason` (and stays so whatever its runner reports later), and its run credential
    /// is revoked by `actor`. The runs it stopped.
    pub async fn stop_task_sessions(
        &self,
        task: &str,
        reason: &str,
        actor: &str,
        now: Millis,
    ) -> Result<Vec<String>, StoreError> {
        let mut stopped = Vec::new();
        for run in self.backend.runs_of_task(task).await? {
            if !matches!(run.status.as_str(), "queued" | "running")
                || !self.backend.stop_agent_run(&run.id, reason, now.0).await?
            {
                continue;
            }
            if let Some(credential) = &run.credential_id {
                self.revoke_token(credential, actor, now).await?;
            }
            stopped.push(run.id);
        }
        Ok(stopped)
    }

    /// Binds an agent run to a task, or unbinds it (`None`); `false` when there is no such
    /// run. The task is not looked up: a run may name a task that is gone (runs outlive their
    /// tasks). [`Store::insert_agent_run`] stores the binding a run starts with, and
    /// [`Store::update_agent_run`] never changes it.
    pub async fn set_run_task(
        &self,
        run_id: &str,
        task_id: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.backend.set_run_task(run_id, task_id).await
    }
}
