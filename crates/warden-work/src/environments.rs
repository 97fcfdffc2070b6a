//! A session's working directory (TASK-1): before the runner of an agent run bound to a task
//! starts, the task's environment is made ready — its own, materialised now as git worktrees
//! of the task's repositories (`new_workspace`, or a root task), or its parent's, reused as it
//! is (`inherit_parent`) — and recorded in the store with each repository's state. A task that
//! has an environment already keeps it: later sessions work in the same checkout.

use std::path::{Path, PathBuf};

use warden_core::admission::{self, RequestedRepository};
use warden_core::config::{Kind, Resource};
use warden_core::policy::Policy;
use warden_core::time::Millis;
use warden_store::{EnvironmentRepository, EnvironmentState, Store, Task, TaskEnvironment};

use crate::materialise::{self, RepositoryOutcome, RepositorySource};

/// Where a session of `task` works: the environment's directory, made ready (one made now is
/// stamped `now`). `root` is where environments live (the data dir's `environments/`).
pub async fn prepare(
    store: &Store,
    policy: &Policy,
    root: &Path,
    task: &Task,
    now: Millis,
) -> Result<PathBuf, String> {
    let existing = crate::tasks::effective_environment(store, task)
        .await
        .map_err(|e| format!("the store cannot be read: {e}"))?;
    let inherits = task.workspace_mode.as_deref() == Some("inherit_parent");
    match existing {
        Some(env) if env.state == EnvironmentState::Active => {
            if inherits && env.task_id != task.id {
                check_inherited_at_launch(store, task).await?;
            }
            Ok(PathBuf::from(env.path))
        }
        Some(env) => Err(format!(
            "the environment of task `{}` is {} ({}): create the task with `workspace_mode` `new_workspace` for a new one",
            env.task_id,
            env.state,
            env.error.unwrap_or_default()
        )),
        None if inherits => Err(format!(
            "task `{}` inherits its parent's environment, and `{}` has none yet: start a session of the parent first, or create the task with `workspace_mode` `new_workspace`",
            task.id,
            task.parent_id.clone().unwrap_or_default()
        )),
        None => materialise_new(store, policy, root, task, now).await,
    }
}

/// Launch-time TASK-6 for a child created while its parent had no environment: what the child
/// named explicitly (an inheriting child records nothing else) must match the environment it
/// inherits, which is its parent's — checked and named as the parent's.
async fn check_inherited_at_launch(store: &Store, task: &Task) -> Result<(), String> {
    if task.repositories.is_empty() {
        return Ok(());
    }
    let unreadable = |e: warden_store::StoreError| format!("the store cannot be read: {e}");
    let parent_id = task.parent_id.as_deref().unwrap_or_default();
    let parent = store
        .task(parent_id)
        .await
        .map_err(unreadable)?
        .ok_or_else(|| format!("the parent `{parent_id}` of task `{}` is gone", task.id))?;
    let parent = crate::tasks::view(store, &parent)
        .await
        .map_err(unreadable)?;
    let asked: Vec<RequestedRepository> = task
        .repositories
        .iter()
        .map(|r| RequestedRepository {
            repository: r.repository.clone(),
            branch: r.branch.clone(),
        })
        .collect();
    match &parent.environment {
        Some(environment) => admission::check_inherited(&parent, environment, &asked)
            .map_err(|refusal| refusal.message),
        None => Ok(()),
    }
}

/// Materialises a new environment for `task` and records it.
async fn materialise_new(
    store: &Store,
    policy: &Policy,
    root: &Path,
    task: &Task,
    now: Millis,
) -> Result<PathBuf, String> {
    let workspace = match policy.config.get(Kind::Workspace, &task.workspace) {
        Some(Resource::Workspace(w)) => w,
        _ => {
            return Err(format!(
                "workspace `{}` of task `{}` is not configured",
                task.workspace, task.id
            ));
        }
    };
    let mut sources = Vec::new();
    for asked in &task.repositories {
        let known = workspace
            .repositories
            .iter()
            .find(|r| r.name.as_str() == asked.repository)
            .ok_or_else(|| {
                format!(
                    "workspace `{}` has no repository `{}`",
                    workspace.name, asked.repository
                )
            })?;
        sources.push(RepositorySource {
            name: asked.repository.clone(),
            url: known.url.clone(),
            branch: asked.branch.clone().or_else(|| known.branch.clone()),
        });
    }
    let id = format!("env_{}", uuid::Uuid::now_v7().simple());
    let made = materialise::materialise(root, &id, &sources)
        .await
        .map_err(|e| format!("the environment cannot be made: {e}"))?;
    let failed: Vec<String> = made
        .repositories
        .iter()
        .filter_map(|r| match &r.outcome {
            RepositoryOutcome::Failed(why) => Some(format!("`{}`: {why}", r.name)),
            RepositoryOutcome::Active => None,
        })
        .collect();
    let now = now.0;
    let environment = TaskEnvironment {
        id,
        task_id: task.id.clone(),
        path: made.path.display().to_string(),
        state: if failed.is_empty() {
            EnvironmentState::Active
        } else {
            EnvironmentState::Failed
        },
        error: (!failed.is_empty()).then(|| failed.join("; ")),
        created_at: now,
        updated_at: now,
        repositories: made
            .repositories
            .iter()
            .map(|r| EnvironmentRepository {
                repository: r.name.clone(),
                branch: r.branch.clone().unwrap_or_default(),
                path: r.path.display().to_string(),
                state: match r.outcome {
                    RepositoryOutcome::Active => EnvironmentState::Active,
                    RepositoryOutcome::Failed(_) => EnvironmentState::Failed,
                },
                error: match &r.outcome {
                    RepositoryOutcome::Failed(why) => Some(why.clone()),
                    RepositoryOutcome::Active => None,
                },
            })
            .collect(),
    };
    let recorded = store
        .insert_environment(&environment)
        .await
        .map_err(|e| format!("the environment cannot be recorded: {e}"))?;
    if !recorded {
        // Another session made one first: work there, and leave this one unused.
        let _ = materialise::remove(root, &environment.id).await;
        return match store.environment(&task.id).await {
            Ok(Some(env)) => Ok(PathBuf::from(env.path)),
            _ => Err(format!(
                "the environment of task `{}` cannot be read",
                task.id
            )),
        };
    }
    if failed.is_empty() {
        Ok(made.path)
    } else {
        Err(format!(
            "the environment of task `{}` could not be materialised: {}",
            task.id,
            failed.join("; ")
        ))
    }
}
