//! The work domain in the store: tasks, the environments materialised for them, and the
//! agent runs (sessions) bound to them.
//!
//! The store keeps what it is given: it checks no workflow (which states may follow which, who
//! may create what) — the admission logic above it does. What it guarantees, on SQLite and
//! PostgreSQL alike:
//!
//! - one task per idempotency key (`external_id`) in a workspace: of racing creators, exactly
//!   one inserts and every other learns which task has the key ([`TaskInsert`]);
//! - a task with children is never deleted, and a child never names a missing parent;
//! - at most one environment per task, its repositories kept in the order given, duplicates
//!   included (an ambiguous match is for the caller to refuse, not for the store to hide);
//! - a stored state the binary does not know is an error ([`StoreError::Corrupt`]), never a
//!   default.

pub(crate) mod sql;
mod store;

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a task stands. The store does not restrict which state may follow which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Not started.
    Todo,
    /// Being worked on.
    InProgress,
    /// Waiting for review.
    Review,
    /// Finished.
    Done,
    /// Put away: kept, no longer worked on.
    Archived,
}

impl TaskState {
    /// Every state.
    pub const ALL: [TaskState; 5] = [
        TaskState::Todo,
        TaskState::InProgress,
        TaskState::Review,
        TaskState::Done,
        TaskState::Archived,
    ];

    /// The stored form (`todo`, `in_progress`, `review`, `done`, `archived`), also the JSON
    /// form.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Todo => "todo",
            TaskState::InProgress => "in_progress",
            TaskState::Review => "review",
            TaskState::Done => "done",
            TaskState::Archived => "archived",
        }
    }

    /// Parses the stored form; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an environment, or one repository of it, stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvironmentState {
    /// Materialised and in use.
    Active,
    /// Removed from disk.
    Deleted,
    /// Materialising (or removing) it failed; the row's `error` says why.
    Failed,
}

impl EnvironmentState {
    /// Every state.
    pub const ALL: [EnvironmentState; 3] = [
        EnvironmentState::Active,
        EnvironmentState::Deleted,
        EnvironmentState::Failed,
    ];

    /// The stored form (`active`, `deleted`, `failed`), also the JSON form.
    pub fn as_str(self) -> &'static str {
        match self {
            EnvironmentState::Active => "active",
            EnvironmentState::Deleted => "deleted",
            EnvironmentState::Failed => "failed",
        }
    }

    /// Parses the stored form; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl fmt::Display for EnvironmentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A repository a task asks for, as its creator asked: the branch may be left to the
/// admission logic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestedRepository {
    /// The repository's name.
    pub repository: String,
    /// The branch asked for, if one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

/// A task as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// `task_…`, made by the creator.
    pub id: String,
    /// The Workspace resource it belongs to.
    pub workspace: String,
    /// The task it is a subtask of. The parent must exist when the task is inserted.
    pub parent_id: Option<String>,
    /// A one-line title.
    pub title: String,
    /// What is to be done, at length.
    pub description: Option<String>,
    /// The workflow step it is at, in the workspace's own vocabulary.
    pub workflow_step: Option<String>,
    /// Where it stands.
    pub state: TaskState,
    /// How its environment is materialised (`inherit_parent`, `new_workspace`), validated by
    /// the caller; `None` for the workspace's default.
    pub workspace_mode: Option<String>,
    /// The repositories it asks for, in the order asked.
    pub repositories: Vec<RequestedRepository>,
    /// The creator's idempotency key, unique in the workspace.
    pub external_id: Option<String>,
    /// Who created it, by reference (APR-3), as JSON.
    pub created_by: String,
    /// The agent run (session) it was created from, if any.
    pub created_in_session: Option<String>,
    /// Whether it was created from an office context.
    pub from_office: bool,
    /// The agent profile that is to work on it.
    pub agent_profile: Option<String>,
    /// When it was created (ms).
    pub created_at: i64,
    /// When it last changed (ms).
    pub updated_at: i64,
}

/// What [`Store::insert_task`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskInsert {
    /// The task is stored.
    Inserted,
    /// Another task of the workspace has the same `external_id`; nothing was stored. A retried
    /// insert of a task that is stored already finds itself here.
    ExternalIdTaken {
        /// The id of the task that has the key.
        existing: String,
    },
}

/// Which tasks to list. Every field narrows the list; the default lists the newest 100 tasks.
#[derive(Clone, Debug, Default)]
pub struct TaskFilter {
    /// Only the tasks of this workspace.
    pub workspace: Option<String>,
    /// Only the children of this task.
    pub parent: Option<String>,
    /// Only tasks in one of these states (`None`: any state; an empty list: no task).
    pub states: Option<Vec<TaskState>>,
    /// At most this many (default 100, at most 100 000).
    pub limit: Option<i64>,
}

/// A change to a task: each field that is `Some` replaces the stored value, each `None`
/// keeps it.
#[derive(Clone, Debug, Default)]
pub struct TaskChange {
    /// A new title.
    pub title: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// A new workflow step.
    pub workflow_step: Option<String>,
    /// A new state.
    pub state: Option<TaskState>,
}

/// A task's materialised environment, with its repositories.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskEnvironment {
    /// `env_…`, made by the caller.
    pub id: String,
    /// The task whose environment it is (one environment per task).
    pub task_id: String,
    /// Its directory.
    pub path: String,
    /// Where it stands.
    pub state: EnvironmentState,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// When it was created (ms).
    pub created_at: i64,
    /// When its state last changed (ms).
    pub updated_at: i64,
    /// Its repositories, in the order they were inserted; the same repository and branch may
    /// appear more than once.
    pub repositories: Vec<EnvironmentRepository>,
}

/// One repository checked out in an environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentRepository {
    /// The repository's name.
    pub repository: String,
    /// The branch checked out.
    pub branch: String,
    /// Its directory.
    pub path: String,
    /// Where it stands.
    pub state: EnvironmentState,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::*;

    #[test]
    fn every_state_is_read_back_from_its_stored_form_and_nothing_else() {
        for st in TaskState::ALL {
            assert_eq!(TaskState::parse(st.as_str()), Some(st));
            assert_eq!(serde_json::to_value(st).unwrap(), json!(st.as_str()));
            assert_eq!(st.to_string(), st.as_str());
        }
        for st in EnvironmentState::ALL {
            assert_eq!(EnvironmentState::parse(st.as_str()), Some(st));
            assert_eq!(serde_json::to_value(st).unwrap(), json!(st.as_str()));
            assert_eq!(st.to_string(), st.as_str());
        }
        for unknown in ["", "frozen", "Todo", "in-progress", " done"] {
            assert_eq!(TaskState::parse(unknown), None, "`{unknown}`");
        }
        for unknown in ["", "paused", "Active"] {
            assert_eq!(EnvironmentState::parse(unknown), None, "`{unknown}`");
        }
    }

    /// The CLI prints these rows with `-o json`.
    #[test]
    fn a_task_prints_as_camel_case_json_with_snake_case_states() {
        let task = Task {
            id: "task_1".into(),
            workspace: "ws".into(),
            parent_id: None,
            title: "t".into(),
            description: None,
            workflow_step: Some("plan".into()),
            state: TaskState::InProgress,
            workspace_mode: Some("inherit_parent".into()),
            repositories: vec![
                RequestedRepository {
                    repository: "ledger".into(),
                    branch: Some("main".into()),
                },
                RequestedRepository {
                    repository: "docs".into(),
                    branch: None,
                },
            ],
            external_id: Some("k".into()),
            created_by: "{}".into(),
            created_in_session: Some("run_1".into()),
            from_office: true,
            agent_profile: None,
            created_at: 1,
            updated_at: 2,
        };
        let printed = serde_json::to_value(&task).unwrap();
        assert_eq!(
            printed,
            json!({
                "id": "task_1",
                "workspace": "ws",
                "parentId": null,
                "title": "t",
                "description": null,
                "workflowStep": "plan",
                "state": "in_progress",
                "workspaceMode": "inherit_parent",
                "repositories": [{"repository": "ledger", "branch": "main"}, {"repository": "docs"}],
                "externalId": "k",
                "createdBy": "{}",
                "createdInSession": "run_1",
                "fromOffice": true,
                "agentProfile": null,
                "createdAt": 1,
                "updatedAt": 2
            })
        );
        assert_eq!(serde_json::from_value::<Task>(printed).unwrap(), task);
    }
}
