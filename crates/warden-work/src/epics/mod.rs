//! Epics and their tasks (WORK-1): the one service that the `work` tool set ([`tool`]), the
//! admin API and `warden epic` call.
//!
//! An epic belongs to a project. A run sees it when it may use that project's tools
//! (`run:projects`, with its token's ceiling, RUN-3) and holds one of the `work` capabilities;
//! any other epic answers exactly as one that does not exist. Reading it needs `work:read`,
//! writing `work:write` in the project. Adding a task creates its task (`task_…`) through task admission
//! ([`crate::tasks::create`]), so the caller needs `tasks:create` in the workspace as well.
//! Moves follow the machines of [`warden_core::work`]; the moves to `accepted` and `merged`
//! belong to the review gate and the merge on acceptance ([`gate::accept`]), `reopened` to the
//! CI report (WORK-2, WORK-3), never to a plain move. Every refusal changes nothing.

pub mod args;
pub mod gate;
mod merge;
pub mod stale;
pub mod tool;

use serde::Serialize;
use warden_core::admission::Refusal;
use warden_core::authority::{Authority, Mode};
use warden_core::capability::{WORK_ACCEPT, WORK_READ, WORK_REVIEW, WORK_WRITE};
use warden_core::config::{Kind, Resource};
use warden_core::policy::Policy;
use warden_core::time::Millis;
use warden_core::work::{EpicState, EpicTaskState, Risk, State as _};
use warden_store::{Epic, EpicChange, EpicFilter, EpicTask, Review, Store, StoreError, WorkMove};

use crate::args::{CreateTaskArgs, RepositoryArg};
use crate::tasks::{self, Path, WorkError};
use args::{AddTaskArgs, CreateEpicArgs, ListEpicsArgs, MoveEpicTaskArgs, UpdateEpicArgs};

/// The most epics a list returns.
const LIST_LIMIT: i64 = 500;

/// Why an epic request was refused, as the tools' `code`.
pub mod code {
    /// An epic, an epic task, a project, a workspace or a repository that does not exist or
    /// that this run may not see.
    pub const NOT_FOUND: &str = "NOT_FOUND";
    /// Visible, but the capability the request needs is not held in the project.
    pub const FORBIDDEN: &str = "FORBIDDEN";
    /// A move the state machine does not have.
    pub const INVALID_MOVE: &str = "INVALID_MOVE";
    /// A move that only a gate makes (the review gate, the merge, a CI report).
    pub const GATED: &str = "GATED";
    /// An argument the service refuses (an empty title, a workspace of another project).
    pub const INVALID_ARGUMENT: &str = "INVALID_ARGUMENT";
    /// Something the request needs cannot be reached now (the work branch's repository).
    pub const UNAVAILABLE: &str = "UNAVAILABLE";
}

/// Why an epic request failed.
#[derive(Debug)]
pub enum EpicError {
    /// Refused, with one of [`code`]'s codes and a message naming what is wrong.
    Refused {
        /// The code.
        code: &'static str,
        /// What is wrong, and what would be right.
        message: String,
    },
    /// The task an added epic task needs was refused by task admission (its codes).
    Task(Refusal),
    /// The store could not be read or written.
    Store(StoreError),
}

impl EpicError {
    /// The refusal's code and message; `None` for a store failure.
    pub fn refusal(&self) -> Option<(&'static str, &str)> {
        match self {
            Self::Refused { code, message } => Some((code, message)),
            Self::Task(r) => Some((r.code.as_str(), &r.message)),
            Self::Store(_) => None,
        }
    }
}

impl From<StoreError> for EpicError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<WorkError> for EpicError {
    fn from(e: WorkError) -> Self {
        match e {
            WorkError::Refused(r) => Self::Task(r),
            WorkError::Store(e) => Self::Store(e),
        }
    }
}

fn refused(code: &'static str, message: impl Into<String>) -> EpicError {
    EpicError::Refused {
        code,
        message: message.into(),
    }
}

fn no_epic(id: &str) -> EpicError {
    refused(code::NOT_FOUND, format!("no epic `{id}`"))
}

fn no_epic_task(id: &str) -> EpicError {
    refused(code::NOT_FOUND, format!("no epic task `{id}`"))
}

/// An epic with its tasks and its recorded moves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EpicView {
    /// The epic.
    pub epic: Epic,
    /// Its tasks, in the order they were added, with their reviews.
    pub tasks: Vec<EpicTaskView>,
    /// Its moves, the first (its creation) first.
    pub moves: Vec<WorkMove>,
}

/// An epic task with its reviews.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EpicTaskView {
    /// The epic task.
    #[serde(flatten)]
    pub task: EpicTask,
    /// Its reviews, the first first.
    pub reviews: Vec<Review>,
}

/// Whether `authority` may use its project `project`'s tools (RUN-3).
fn in_project(authority: &Authority, project: &str) -> bool {
    authority.projects.keys().any(|p| p.as_str() == project)
}

/// Whether `authority` sees the epics of `project`: it may use the project's tools and holds
/// one of the `work` capabilities.
fn sees(authority: &Authority, project: &str) -> bool {
    in_project(authority, project)
        && [WORK_READ, WORK_WRITE, WORK_REVIEW, WORK_ACCEPT]
            .iter()
            .any(|c| authority.holds(c))
}

/// Who acts, as the review gate tells people apart ([`warden_core::principal::party`]).
pub(crate) fn party(principal: &str) -> String {
    warden_core::principal::party(principal).to_owned()
}

/// The epic `id`, when `authority` sees it.
async fn visible(store: &Store, authority: &Authority, id: &str) -> Result<Epic, EpicError> {
    match store.epic(id).await? {
        Some(epic) if sees(authority, &epic.project) => Ok(epic),
        _ => Err(no_epic(id)),
    }
}

/// The epic of `task`, when `authority` sees it: otherwise `task` answers as one that does not
/// exist.
pub(crate) async fn visible_task_epic(
    store: &Store,
    authority: &Authority,
    task: &EpicTask,
) -> Result<Epic, EpicError> {
    match visible(store, authority, &task.epic_id).await {
        Err(EpicError::Refused { .. }) => Err(no_epic_task(&task.id)),
        other => other,
    }
}

/// The epic task `id` and its epic, when `authority` sees them.
pub(crate) async fn visible_task(
    store: &Store,
    authority: &Authority,
    id: &str,
) -> Result<(EpicTask, Epic), EpicError> {
    let task = store.epic_task(id).await?.ok_or_else(|| no_epic_task(id))?;
    let epic = visible_task_epic(store, authority, &task).await?;
    Ok((task, epic))
}

/// Refused unless `authority` holds `capability` (besides seeing the project) for `doing`.
fn require(
    authority: &Authority,
    capability: &str,
    project: &str,
    doing: &str,
) -> Result<(), EpicError> {
    if authority.holds(capability) {
        return Ok(());
    }
    Err(refused(
        code::FORBIDDEN,
        format!("{doing} needs `{capability}` in project `{project}`"),
    ))
}

/// `text` trimmed, refused when nothing is left.
fn filled(text: &str, what: &str) -> Result<String, EpicError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(refused(
            code::INVALID_ARGUMENT,
            format!("the {what} is empty"),
        ));
    }
    Ok(text.to_owned())
}

/// `name` as a branch: refused when git would not take it as one, or when it is one of the
/// branches Warden keeps for environments (`warden/…`).
fn branch_name(name: &str, what: &str) -> Result<String, EpicError> {
    let bad = name.is_empty()
        || name.starts_with(['-', '/', '.'])
        || name.ends_with(['/', '.'])
        || name.ends_with(".lock")
        || name.contains("..")
        || name.contains("//")
        || name.contains("@{")
        || name
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c));
    if bad {
        return Err(refused(
            code::INVALID_ARGUMENT,
            format!("the {what} `{name}` is not a name git takes for a branch"),
        ));
    }
    if name.starts_with("warden/") {
        return Err(refused(
            code::INVALID_ARGUMENT,
            format!("the {what} `{name}` is under `warden/`, which Warden keeps for environments"),
        ));
    }
    Ok(name.to_owned())
}

/// Criteria trimmed, each refused when empty (numbered from 1).
fn criteria(list: &[String]) -> Result<Vec<String>, EpicError> {
    list.iter()
        .enumerate()
        .map(|(i, c)| filled(c, &format!("criterion {}", i + 1)))
        .collect()
}

/// Creates an epic in `draft`, recorded as made by `authority`'s principal at `now`.
pub async fn create_epic(
    store: &Store,
    authority: &Authority,
    args: CreateEpicArgs,
    now: Millis,
) -> Result<Epic, EpicError> {
    if !in_project(authority, &args.project) {
        return Err(refused(
            code::NOT_FOUND,
            format!("no project `{}` whose tools this run may use", args.project),
        ));
    }
    require(authority, WORK_WRITE, &args.project, "creating an epic")?;
    let epic = Epic {
        id: format!("epc_{}", uuid::Uuid::now_v7().simple()),
        title: filled(&args.title, "title")?,
        description: args.description.unwrap_or_default().trim().to_owned(),
        criteria: criteria(&args.criteria.unwrap_or_default())?,
        tradeoffs: args.tradeoffs.unwrap_or_default().trim().to_owned(),
        risk: args.risk.unwrap_or(Risk::Medium),
        state: EpicState::Draft,
        created_by: authority.principal.to_string(),
        created_at: now,
        updated_at: now,
        project: args.project,
    };
    store.insert_epic(&epic).await?;
    tracing::info!(epic = %epic.id, project = %epic.project, principal = %authority.principal, "epic created");
    Ok(epic)
}

/// Changes what `args` gives of an epic, and moves it when `status` is given. A refused move
/// changes nothing.
pub async fn update_epic(
    store: &Store,
    authority: &Authority,
    args: UpdateEpicArgs,
    now: Millis,
) -> Result<Epic, EpicError> {
    let epic = visible(store, authority, &args.id).await?;
    require(authority, WORK_WRITE, &epic.project, "changing an epic")?;
    let only_done = UpdateEpicArgs {
        id: args.id.clone(),
        status: Some(EpicState::Done),
        ..UpdateEpicArgs::default()
    };
    if authority.mode == Mode::AgentRole && args != only_done {
        return Err(refused(
            code::FORBIDDEN,
            "reconciliation changes an epic only by moving it to `done`".to_owned(),
        ));
    }
    // Everything is checked before anything is written.
    if let Some(to) = args.status {
        epic.state
            .check_move(to)
            .map_err(|e| refused(code::INVALID_MOVE, e.to_string()))?;
        if to == EpicState::Done {
            let open: Vec<String> = store
                .epic_tasks(&epic.id)
                .await?
                .into_iter()
                .filter(|t| t.state != EpicTaskState::Merged)
                .map(|t| format!("`{}` ({})", t.id, t.state))
                .collect();
            if !open.is_empty() {
                return Err(refused(
                    code::INVALID_MOVE,
                    format!(
                        "epic `{}` is done once every task is merged; not merged: {}",
                        epic.id,
                        open.join(", ")
                    ),
                ));
            }
        }
    }
    if let Some(risk) = args.risk
        && risk < epic.risk
    {
        let gated: Vec<String> = store
            .epic_tasks(&epic.id)
            .await?
            .into_iter()
            .filter(|t| matches!(t.state, EpicTaskState::Review | EpicTaskState::Accepted))
            .map(|t| format!("`{}` ({})", t.id, t.state))
            .collect();
        if !gated.is_empty() {
            return Err(refused(
                code::INVALID_ARGUMENT,
                format!(
                    "the risk of epic `{}` is not lowered while its tasks are under review: {}",
                    epic.id,
                    gated.join(", ")
                ),
            ));
        }
    }
    let change = EpicChange {
        title: args
            .title
            .as_deref()
            .map(|t| filled(t, "title"))
            .transpose()?,
        description: args.description.map(|d| d.trim().to_owned()),
        criteria: args.criteria.as_deref().map(criteria).transpose()?,
        tradeoffs: args.tradeoffs.map(|t| t.trim().to_owned()),
        risk: args.risk,
    };
    if let Some(to) = args.status {
        let moved = store
            .move_epic(
                &epic.id,
                epic.state,
                to,
                &authority.principal.to_string(),
                now,
            )
            .await?;
        if !moved {
            return Err(moved_meanwhile("epic", &epic.id));
        }
    }
    if change != EpicChange::default() && !store.update_epic(&epic.id, &change, now).await? {
        return Err(no_epic(&epic.id));
    }
    store.epic(&epic.id).await?.ok_or_else(|| no_epic(&epic.id))
}

fn moved_meanwhile(what: &str, id: &str) -> EpicError {
    refused(
        code::INVALID_MOVE,
        format!("{what} `{id}` moved meanwhile; read it again and choose its next move"),
    )
}

/// Adds a task to an epic: its task is created through task admission in `workspace` (a
/// workspace of the epic's project), on the work branch, and the epic task starts `proposed`.
pub async fn add_task(
    store: &Store,
    policy: &Policy,
    authority: &Authority,
    args: AddTaskArgs,
    path: Path,
    now: Millis,
) -> Result<EpicTask, EpicError> {
    let epic = visible(store, authority, &args.epic).await?;
    require(
        authority,
        WORK_WRITE,
        &epic.project,
        "adding a task to an epic",
    )?;
    if !matches!(epic.state, EpicState::Draft | EpicState::Open) {
        return Err(refused(
            code::INVALID_ARGUMENT,
            format!(
                "epic `{}` is `{}`; tasks are added to a draft or open epic",
                epic.id, epic.state
            ),
        ));
    }
    let workspace = policy
        .config
        .of_kind(Kind::Workspace)
        .find_map(|r| match r {
            Resource::Workspace(w) if w.name.as_str() == args.workspace => Some(w),
            _ => None,
        })
        .filter(|w| in_project(authority, w.project.as_str()))
        .ok_or_else(|| {
            refused(
                code::NOT_FOUND,
                format!("no workspace `{}`", args.workspace),
            )
        })?;
    if workspace.project.as_str() != epic.project {
        return Err(refused(
            code::INVALID_ARGUMENT,
            format!(
                "workspace `{}` is of project `{}`, epic `{}` of project `{}`",
                workspace.name, workspace.project, epic.id, epic.project
            ),
        ));
    }
    let repository = workspace
        .repositories
        .iter()
        .find(|r| r.name.as_str() == args.repository)
        .ok_or_else(|| {
            refused(
                code::NOT_FOUND,
                format!(
                    "workspace `{}` has no repository `{}`",
                    workspace.name, args.repository
                ),
            )
        })?;
    let base_branch = match &args.base_branch {
        Some(b) => branch_name(b, "base branch")?,
        None => repository.branch.clone().unwrap_or_else(|| "main".into()),
    };
    let branch = branch_name(&args.branch, "branch")?;
    let title = filled(&args.title, "title")?;
    let created = tasks::create(
        store,
        policy,
        authority,
        CreateTaskArgs {
            title: title.clone(),
            description: args.description,
            workspace_id: Some(args.workspace.clone()),
            parent_id: None,
            repositories: Some(vec![RepositoryArg {
                repository: args.repository.clone(),
                branch: Some(branch.clone()),
            }]),
            workspace_mode: None,
            external_id: None,
            agent_profile_id: None,
            source_session_id: None,
        },
        path,
        now,
    )
    .await?;
    let task = EpicTask {
        id: format!("ept_{}", uuid::Uuid::now_v7().simple()),
        epic_id: epic.id.clone(),
        task_id: created.task.id,
        title,
        repository: args.repository,
        base_branch,
        branch,
        state: EpicTaskState::Proposed,
        created_by: authority.principal.to_string(),
        merge_commit: None,
        created_at: now,
        updated_at: now,
        conflicts: Vec::new(),
        ci_state: None,
        ci_url: None,
    };
    store.insert_epic_task(&task).await?;
    tracing::info!(epic = %epic.id, epic_task = %task.id, task = %task.task_id, principal = %authority.principal, "epic task added");
    Ok(task)
}

/// The gate that alone makes a move to `to`, if one does.
fn gate(to: EpicTaskState) -> Option<&'static str> {
    match to {
        EpicTaskState::Accepted => {
            Some("an epic task is accepted through its review gate (`work__accept`)")
        }
        EpicTaskState::Merged => {
            Some("only the merge on acceptance moves an epic task to `merged`")
        }
        EpicTaskState::Reopened => {
            Some("only a failed CI report for its merge commit reopens an epic task")
        }
        _ => None,
    }
}

/// Refused unless reconciliation may move `task` to `to` now: its one move, of a task still
/// stale for the Reconciler `authority` acts for (an approved move is checked again when it
/// runs).
async fn reconciled_move(
    store: &Store,
    policy: &Policy,
    authority: &Authority,
    task: &EpicTask,
    to: EpicTaskState,
    now: Millis,
) -> Result<(), EpicError> {
    if task.state.reconciled() != Some(to) {
        return Err(refused(
            code::INVALID_MOVE,
            format!(
                "reconciliation moves an epic task only from `in_progress` back to `ready`; `{}` is `{}`",
                task.id, task.state
            ),
        ));
    }
    let Some(reconciler) = policy.reconciler_of(&authority.principal) else {
        return Err(refused(
            code::FORBIDDEN,
            format!("{} is no Reconciler's agent role", authority.principal),
        ));
    };
    let cutoff = stale::cutoff(reconciler.stale_after(), now);
    if let Some(at) = stale::active_since(store, task, cutoff).await? {
        return Err(refused(
            code::INVALID_MOVE,
            format!(
                "epic task `{}` is no longer stale: it saw activity at {} (less than {} ago)",
                task.id,
                warden_core::time::rfc3339(at),
                warden_core::time::format_duration(reconciler.stale_after())
            ),
        ));
    }
    Ok(())
}

/// Moves an epic task along its machine (not through a gate: see [`gate`]).
pub async fn move_task(
    store: &Store,
    policy: &Policy,
    authority: &Authority,
    args: MoveEpicTaskArgs,
    now: Millis,
) -> Result<EpicTask, EpicError> {
    let (task, epic) = visible_task(store, authority, &args.id).await?;
    require(authority, WORK_WRITE, &epic.project, "moving an epic task")?;
    let reconciling = authority.mode == Mode::AgentRole;
    if reconciling {
        reconciled_move(store, policy, authority, &task, args.to, now).await?;
    } else {
        task.state.check_move(args.to).map_err(|e| {
            let mut message = e.to_string();
            if task.state.reconciled() == Some(args.to) {
                message.push_str(
                    "; only reconciliation moves a stale task back (a Reconciler's `staleAfter`)",
                );
            }
            refused(code::INVALID_MOVE, message)
        })?;
        if let Some(gate) = gate(args.to) {
            return Err(refused(code::GATED, gate));
        }
    }
    if reconciling {
        // Its sessions stop first: a failure leaves the task stale, for the next pass. Their
        // credentials die now, their processes within seconds.
        let stopped = store
            .stop_task_sessions(
                &task.task_id,
                &format!(
                    "stopped by {}: epic task `{}` went back to `ready`",
                    authority.principal, task.id
                ),
                &authority.principal.to_string(),
                now,
            )
            .await?;
        tracing::info!(epic_task = %task.id, principal = %authority.principal, ?stopped, "stale epic task moving back to ready");
    }
    let moved = store
        .move_epic_task(
            &task.id,
            task.state,
            args.to,
            &authority.principal.to_string(),
            None,
            now,
        )
        .await?;
    if !moved {
        return Err(moved_meanwhile("epic task", &task.id));
    }
    store
        .epic_task(&task.id)
        .await?
        .ok_or_else(|| no_epic_task(&task.id))
}

/// An epic, with its tasks and moves.
pub async fn get_epic(
    store: &Store,
    authority: &Authority,
    id: &str,
) -> Result<EpicView, EpicError> {
    let epic = visible(store, authority, id).await?;
    require(authority, WORK_READ, &epic.project, "reading an epic")?;
    let mut tasks = Vec::new();
    for task in store.epic_tasks(&epic.id).await? {
        tasks.push(EpicTaskView {
            reviews: store.reviews(&task.id).await?,
            task,
        });
    }
    Ok(EpicView {
        tasks,
        moves: store.work_moves(&epic.id).await?,
        epic,
    })
}

/// An epic task with its reviews and moves, and its epic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EpicTaskPage {
    /// Its epic.
    pub epic: Epic,
    /// The epic task, with its reviews.
    pub task: EpicTaskView,
    /// Its moves, the first (its creation) first.
    pub moves: Vec<WorkMove>,
}

/// An epic task `authority` may read (`work:read`), with its reviews, moves and epic.
pub async fn get_epic_task(
    store: &Store,
    authority: &Authority,
    id: &str,
) -> Result<EpicTaskPage, EpicError> {
    let (task, epic) = visible_task(store, authority, id).await?;
    require(authority, WORK_READ, &epic.project, "reading an epic task")?;
    Ok(EpicTaskPage {
        moves: store.work_moves(&task.id).await?,
        task: EpicTaskView {
            reviews: store.reviews(&task.id).await?,
            task,
        },
        epic,
    })
}

/// The epics `authority` may read (of `project`, in `status`, when given), the last changed
/// first: those of the projects where it holds `work:read` and may use the tools.
pub async fn list_epics(
    store: &Store,
    authority: &Authority,
    args: &ListEpicsArgs,
) -> Result<Vec<Epic>, EpicError> {
    if !authority.holds(WORK_READ) {
        return Ok(Vec::new());
    }
    let projects: Vec<String> = authority
        .projects
        .keys()
        .map(|p| p.to_string())
        .filter(|p| args.project.as_ref().is_none_or(|wanted| wanted == p))
        .collect();
    let filter = EpicFilter {
        projects,
        state: args.status,
    };
    Ok(store.epics(&filter, LIST_LIMIT).await?)
}
