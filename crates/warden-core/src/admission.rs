//! Task admission (TASK-2..TASK-8): who may create a task where, decided before anything
//! happens — before repositories are resolved against anything outside the configuration,
//! before an idempotency lookup returns task data, before a row is written or a session
//! launched. A pure function over plain values: the shell gathers the caller, the workspaces
//! and the parent, then acts only on [`Admitted`].
//!
//! The surface comes from the verified credential only: a session's run credential makes a
//! kanban or office *session* (its task's workspace), anything else verified is *external* — a
//! user's token, a service account, and the run credential of an agent run bound to no task,
//! which is no session (TASK-2: "a trusted external transport, not a session").
//!
//! | caller | over MCP | destination |
//! |---|---|---|
//! | kanban session | yes | authorised kanban workspaces |
//! | office session | no: its own path (`warden task create`, `POST /api/v1/tasks`) | — |
//! | external | yes | authorised workspaces of either mode |
//!
//! Unknown and inaccessible workspaces, parents and tasks answer alike (TASK-8); a refusal
//! carries a message for the caller and a reason for the operators' logs, never the task's
//! title or description.

use serde::{Deserialize, Serialize};

use crate::config::WorkspaceMode;
use crate::name::Name;

/// How a task's environment is materialised (TASK-5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MaterialisationMode {
    /// Reuse the parent's materialised workspace/worktree.
    InheritParent,
    /// A separate workspace/worktree of its own.
    NewWorkspace,
}

impl MaterialisationMode {
    /// As stored and written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InheritParent => "inherit_parent",
            Self::NewWorkspace => "new_workspace",
        }
    }

    /// Parses the stored form.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "inherit_parent" => Some(Self::InheritParent),
            "new_workspace" => Some(Self::NewWorkspace),
            _ => None,
        }
    }
}

/// A repository a task asks for: a repository of its workspace, optionally at a branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestedRepository {
    /// The workspace's name for the repository.
    pub repository: String,
    /// The branch; the workspace's branch for it when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

/// A workspace as admission sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceView {
    /// Its name.
    pub name: Name,
    /// Kanban or office.
    pub mode: WorkspaceMode,
    /// The owning project.
    pub project: Name,
    /// Whether the caller may create tasks in it (its project's tools and the capability).
    pub authorised: bool,
    /// Its repositories: name and configured branch.
    #[serde(default)]
    pub repositories: Vec<WorkspaceRepositoryView>,
}

/// A repository of a workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceRepositoryView {
    /// Its name.
    pub name: String,
    /// The configured branch, if any.
    #[serde(default)]
    pub branch: Option<String>,
}

/// State of a repository in a materialised environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepositoryState {
    /// Checked out and usable.
    Active,
    /// Removed.
    Deleted,
    /// Could not be materialised.
    Failed,
}

/// A repository of a materialised environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentRepository {
    /// The repository's name.
    pub repository: String,
    /// The branch checked out.
    pub branch: String,
    /// Its state.
    pub state: RepositoryState,
}

/// A stored task as admission sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskView {
    /// `task_…`.
    pub id: String,
    /// Its workspace.
    pub workspace: Name,
    /// Whether it was created from an office context (TASK-1).
    #[serde(default)]
    pub from_office: bool,
    /// Its materialised environment's repositories, when it has one.
    #[serde(default)]
    pub environment: Option<Vec<EnvironmentRepository>>,
}

/// Who calls, from the verified credential alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Caller {
    /// A session: an agent run bound to `task`, under its run credential.
    Session {
        /// The session (the agent run's id).
        session: String,
        /// The session's task.
        task: TaskView,
    },
    /// Any other verified credential: a user's token, a service account, an agent run bound
    /// to no task. Its capabilities and token ceiling make the workspaces' `authorised`.
    External,
    /// No verified identity.
    Unverified,
}

/// The creation request, as far as admission reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    /// `workspace_id`.
    #[serde(default)]
    pub workspace_id: Option<String>,
    /// `parent_id`.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// `workspace_mode`.
    #[serde(default)]
    pub workspace_mode: Option<MaterialisationMode>,
    /// `repositories`.
    #[serde(default)]
    pub repositories: Vec<RequestedRepository>,
    /// `source_session_id`: the session a caller says it creates from.
    #[serde(default)]
    pub source_session_id: Option<String>,
}

/// What admission sees of the world.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// The caller.
    pub caller: Caller,
    /// Every configured workspace, with whether the caller is authorised in it.
    pub workspaces: Vec<WorkspaceView>,
    /// The task `parent_id` names, when it exists.
    #[serde(default)]
    pub parent: Option<TaskView>,
}

/// Why a creation is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefusalCode {
    /// No verified identity.
    Unverified,
    /// Source ids that disagree with the principal.
    ConflictingIdentity,
    /// An office session creates over its own path.
    OfficeSession,
    /// A session creates over MCP in kanban workspaces only.
    KanbanOnly,
    /// A workspace or task whose records disagree (office marker vs workspace mode).
    Inconsistent,
    /// Unknown or inaccessible: a workspace, a parent, a repository (TASK-8).
    NotFound,
    /// Several workspaces could be meant: name one.
    AmbiguousDestination,
    /// A parent in another workspace than the destination.
    CrossWorkspaceParent,
    /// `inherit_parent` without a parent.
    InheritWithoutParent,
    /// Requested repositories the parent's environment cannot serve (TASK-6).
    InheritedRepositoryMismatch,
    /// A task with children is not deleted.
    HasChildren,
}

impl RefusalCode {
    /// As written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unverified => "UNVERIFIED",
            Self::ConflictingIdentity => "CONFLICTING_IDENTITY",
            Self::OfficeSession => "OFFICE_SESSION",
            Self::KanbanOnly => "KANBAN_ONLY",
            Self::Inconsistent => "INCONSISTENT",
            Self::NotFound => "NOT_FOUND",
            Self::AmbiguousDestination => "AMBIGUOUS_DESTINATION",
            Self::CrossWorkspaceParent => "CROSS_WORKSPACE_PARENT",
            Self::InheritWithoutParent => "INHERIT_WITHOUT_PARENT",
            Self::InheritedRepositoryMismatch => "INHERITED_REPOSITORY_MISMATCH",
            Self::HasChildren => "HAS_CHILDREN",
        }
    }
}

/// A refusal: the code, a message for the caller, and for the logs the reason (trusted ids
/// only).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// What kind.
    pub code: RefusalCode,
    /// For the caller.
    pub message: String,
    /// For operators.
    pub reason: String,
}

/// The rules a creation was admitted under; an idempotent retry is rechecked under the same
/// ([`recheck_existing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// A kanban session over MCP or its own path: kanban tasks only.
    KanbanSession,
    /// An office session on its own path: its office workspace only.
    OfficeSession,
    /// An external caller: authorised workspaces of either mode.
    External,
}

/// An admitted creation: where, with what, and how its environment is made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Admitted {
    /// The rules it was admitted under.
    pub surface: Surface,
    /// The destination workspace.
    pub workspace: Name,
    /// Its project.
    pub project: Name,
    /// The parent, when there is one.
    pub parent: Option<String>,
    /// The effective materialisation mode: `inherit_parent` for a child that names none;
    /// none for a root that names none.
    pub workspace_mode: Option<MaterialisationMode>,
    /// The repositories, at their effective branches, from the destination workspace only:
    /// those requested, or — none requested — all of the workspace's, except for a child that
    /// inherits its parent's environment as it is (none then: it asked for nothing).
    pub repositories: Vec<RequestedRepository>,
    /// The destination is an office workspace (the task is recognisably office's, TASK-1).
    pub from_office: bool,
    /// The session it is created from.
    pub created_in_session: Option<String>,
}

fn refuse(code: RefusalCode, message: impl Into<String>, reason: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
        reason: reason.into(),
    }
}

fn unknown_workspace(name: &str) -> Refusal {
    refuse(
        RefusalCode::NotFound,
        format!("no workspace `{name}`"),
        format!("workspace `{name}` is unknown or not authorised"),
    )
}

fn unknown_task(id: &str) -> Refusal {
    refuse(
        RefusalCode::NotFound,
        format!("no task `{id}`"),
        format!("task `{id}` is unknown or not visible"),
    )
}

fn kanban_only(detail: &str) -> Refusal {
    refuse(
        RefusalCode::KanbanOnly,
        format!("a session creates tasks over MCP in kanban workspaces only: {detail}"),
        format!("kanban session targeting office: {detail}"),
    )
}

/// Whether a task's office marker agrees with its workspace's mode.
fn consistent(task: &TaskView, workspace: &WorkspaceView) -> bool {
    task.from_office == (workspace.mode == WorkspaceMode::Office)
}

/// Admits or refuses the creation of a task (TASK-2..TASK-6).
pub fn admit(request: &CreateRequest, context: &Context) -> Result<Admitted, Refusal> {
    let find = |name: &str| context.workspaces.iter().find(|w| w.name.as_str() == name);

    // Identity: from the credential, and nothing in the arguments may contradict it.
    let session = match &context.caller {
        Caller::Unverified => {
            return Err(refuse(
                RefusalCode::Unverified,
                "no verified identity: present a valid credential",
                "unverified caller",
            ));
        }
        Caller::Session { session, task } => Some((session, task)),
        Caller::External => None,
    };
    match (&request.source_session_id, session) {
        (None, _) => {}
        (Some(claimed), Some((own, _))) if claimed == own => {}
        (Some(claimed), Some((own, _))) => {
            return Err(refuse(
                RefusalCode::ConflictingIdentity,
                "`source_session_id` names another session than the caller's",
                format!("session `{own}` claimed session `{claimed}`"),
            ));
        }
        (Some(claimed), None) => {
            return Err(refuse(
                RefusalCode::ConflictingIdentity,
                "`source_session_id` is only for sessions; this credential is not one",
                format!("external caller claimed session `{claimed}`"),
            ));
        }
    }

    // A session's surface is its task's workspace: office sessions use their own path.
    let own_workspace = match session {
        None => None,
        Some((own, task)) => {
            let Some(workspace) = find(task.workspace.as_str()) else {
                return Err(refuse(
                    RefusalCode::Inconsistent,
                    "this session's workspace cannot be classified; task creation waits until it is reconciled",
                    format!(
                        "session `{own}`: workspace `{}` of its task `{}` is not configured",
                        task.workspace, task.id
                    ),
                ));
            };
            if !consistent(task, workspace) {
                return Err(refuse(
                    RefusalCode::Inconsistent,
                    "this session's task and workspace disagree on its mode; task creation waits until they are reconciled",
                    format!(
                        "session `{own}`: task `{}` from_office={} in {:?} workspace `{}`",
                        task.id, task.from_office, workspace.mode, workspace.name
                    ),
                ));
            }
            if workspace.mode == WorkspaceMode::Office {
                return Err(refuse(
                    RefusalCode::OfficeSession,
                    "an office session does not create tasks over MCP: use its own path, `warden task create` or `POST /api/v1/tasks`, which apply the run's capabilities and its workspace, parent and project checks",
                    format!("office session `{own}`"),
                ));
            }
            Some(workspace)
        }
    };

    // TASK-5: `inherit_parent` needs a parent; a child that names no mode inherits.
    let workspace_mode = match (request.workspace_mode, &request.parent_id) {
        (Some(MaterialisationMode::InheritParent), None) => {
            return Err(refuse(
                RefusalCode::InheritWithoutParent,
                "`workspace_mode` `inherit_parent` needs a `parent_id`: a root task has no parent workspace to inherit; omit it or choose `new_workspace`",
                "inherit_parent without a parent",
            ));
        }
        (None, Some(_)) => Some(MaterialisationMode::InheritParent),
        (mode, _) => mode,
    };

    // The parent, when named: visible only through an authorised workspace.
    let parent = match &request.parent_id {
        None => None,
        Some(id) => {
            let parent = context
                .parent
                .as_ref()
                .filter(|p| &p.id == id)
                .ok_or_else(|| unknown_task(id))?;
            let workspace = find(parent.workspace.as_str())
                .filter(|w| w.authorised)
                .ok_or_else(|| unknown_task(id))?;
            Some((parent, workspace))
        }
    };

    // TASK-4: an explicit destination as given; else the parent's; else the session's own;
    // else, for an external root, the one authorised workspace.
    let destination = match (&request.workspace_id, parent, own_workspace) {
        (Some(name), _, _) => find(name)
            .filter(|w| w.authorised)
            .ok_or_else(|| unknown_workspace(name))?,
        (None, Some((_, workspace)), _) => workspace,
        (None, None, Some(own)) => {
            if !own.authorised {
                return Err(unknown_workspace(own.name.as_str()));
            }
            own
        }
        (None, None, None) => {
            let authorised: Vec<&WorkspaceView> =
                context.workspaces.iter().filter(|w| w.authorised).collect();
            match authorised.as_slice() {
                [one] => *one,
                [] => {
                    return Err(refuse(
                        RefusalCode::NotFound,
                        "no workspace this caller may create tasks in",
                        "external root: no authorised workspace",
                    ));
                }
                several => {
                    let names: Vec<&str> = several.iter().map(|w| w.name.as_str()).collect();
                    return Err(refuse(
                        RefusalCode::AmbiguousDestination,
                        format!(
                            "several workspaces are possible ({}): name one with `workspace_id`",
                            names.join(", ")
                        ),
                        "external root: several authorised workspaces",
                    ));
                }
            }
        }
    };
    if let Some((parent, workspace)) = parent
        && workspace.name != destination.name
    {
        return Err(refuse(
            RefusalCode::CrossWorkspaceParent,
            format!(
                "task `{}` is in workspace `{}`, not `{}`: a parent never crosses workspaces",
                parent.id, workspace.name, destination.name
            ),
            format!(
                "parent `{}` in `{}`, destination `{}`",
                parent.id, workspace.name, destination.name
            ),
        ));
    }

    // A kanban session creates in kanban only: no office workspace, no office-created parent —
    // also a legacy one in a kanban workspace, which a kanban session is told it cannot use
    // before being told the record is inconsistent.
    if session.is_some() {
        if destination.mode == WorkspaceMode::Office {
            return Err(kanban_only(&format!(
                "`{}` is an office workspace",
                destination.name
            )));
        }
        if let Some((parent, _)) = parent
            && parent.from_office
        {
            return Err(kanban_only(&format!(
                "parent task `{}` was created by office",
                parent.id
            )));
        }
    }
    if let Some((parent, workspace)) = parent
        && !consistent(parent, workspace)
    {
        return Err(refuse(
            RefusalCode::Inconsistent,
            format!(
                "task `{}` and its workspace disagree on its mode; it takes no children until they are reconciled",
                parent.id
            ),
            format!(
                "parent `{}` from_office={} in {:?} workspace `{}`",
                parent.id, parent.from_office, workspace.mode, workspace.name
            ),
        ));
    }

    let inherits = workspace_mode == Some(MaterialisationMode::InheritParent);
    let repositories = resolve_repositories(request, destination, inherits)?;
    if inherits
        && let Some((parent, _)) = parent
        && let Some(environment) = &parent.environment
    {
        check_inherited(parent, environment, &repositories)?;
    }

    Ok(Admitted {
        surface: if session.is_some() {
            Surface::KanbanSession
        } else {
            Surface::External
        },
        workspace: destination.name.clone(),
        project: destination.project.clone(),
        parent: parent.map(|(p, _)| p.id.clone()),
        workspace_mode,
        repositories,
        from_office: destination.mode == WorkspaceMode::Office,
        created_in_session: session.map(|(s, _)| s.clone()),
    })
}

/// Admits a creation on the operators' path (`warden task create`, `POST /api/v1/tasks`):
/// there an office session creates in its own office workspace, within its run's scope (its
/// workspace, a parent in it, the capability); every other caller is admitted as over MCP.
pub fn admit_on_own_path(request: &CreateRequest, context: &Context) -> Result<Admitted, Refusal> {
    let Caller::Session { session, task } = &context.caller else {
        return admit(request, context);
    };
    let own = context.workspaces.iter().find(|w| w.name == task.workspace);
    let Some(own) = own.filter(|w| w.mode == WorkspaceMode::Office) else {
        return admit(request, context);
    };
    if !consistent(task, own) {
        return admit(request, context);
    }
    // Its own workspace only: as a kanban session on the office side.
    let as_session_of_own = Context {
        caller: Caller::External,
        workspaces: context
            .workspaces
            .iter()
            .map(|w| WorkspaceView {
                authorised: w.authorised && w.name == own.name,
                ..w.clone()
            })
            .collect(),
        parent: context.parent.clone(),
    };
    let mut request = request.clone();
    if request.source_session_id.as_ref() == Some(session) {
        request.source_session_id = None;
    } else if request.source_session_id.is_some() {
        return Err(refuse(
            RefusalCode::ConflictingIdentity,
            "`source_session_id` names another session than the caller's",
            format!("office session `{session}` claimed another session"),
        ));
    }
    if request.workspace_id.is_none() && request.parent_id.is_none() {
        request.workspace_id = Some(own.name.to_string());
    }
    let mut admitted = admit(&request, &as_session_of_own)?;
    admitted.surface = Surface::OfficeSession;
    admitted.created_in_session = Some(session.clone());
    Ok(admitted)
}

/// The requested repositories at their effective branches, each a repository of the
/// destination (never of the source workspace); none requested means all of them — or, for a
/// child inheriting its parent's environment, none: it takes that environment as it is, and
/// only what it names explicitly is checked against it (TASK-6).
fn resolve_repositories(
    request: &CreateRequest,
    destination: &WorkspaceView,
    inherits: bool,
) -> Result<Vec<RequestedRepository>, Refusal> {
    if request.repositories.is_empty() && inherits {
        return Ok(Vec::new());
    }
    if request.repositories.is_empty() {
        return Ok(destination
            .repositories
            .iter()
            .map(|r| RequestedRepository {
                repository: r.name.clone(),
                branch: r.branch.clone(),
            })
            .collect());
    }
    request
        .repositories
        .iter()
        .map(|asked| {
            let known = destination
                .repositories
                .iter()
                .find(|r| r.name == asked.repository)
                .ok_or_else(|| {
                    refuse(
                        RefusalCode::NotFound,
                        format!(
                            "workspace `{}` has no repository `{}`",
                            destination.name, asked.repository
                        ),
                        format!(
                            "repository `{}` not in workspace `{}`",
                            asked.repository, destination.name
                        ),
                    )
                })?;
            Ok(RequestedRepository {
                repository: asked.repository.clone(),
                branch: asked.branch.clone().or_else(|| known.branch.clone()),
            })
        })
        .collect()
}

/// TASK-6: every requested repository (at its effective branch) matches exactly one active
/// repository of the parent's environment. Nothing is rewritten. Also the launch-time check of
/// a child whose parent had no environment when it was created.
pub fn check_inherited(
    parent: &TaskView,
    environment: &[EnvironmentRepository],
    repositories: &[RequestedRepository],
) -> Result<(), Refusal> {
    for wanted in repositories {
        let matches: Vec<&EnvironmentRepository> = environment
            .iter()
            .filter(|r| {
                r.repository == wanted.repository
                    && wanted.branch.as_ref().is_none_or(|b| *b == r.branch)
            })
            .collect();
        let problem = match matches.as_slice() {
            [] => Some("is not in"),
            [one] if one.state == RepositoryState::Active => None,
            [one] if one.state == RepositoryState::Deleted => Some("was deleted from"),
            [_] => Some("failed to materialise in"),
            _ => Some("matches more than one repository of"),
        };
        if let Some(problem) = problem {
            let asked = match &wanted.branch {
                Some(b) => format!("{}@{b}", wanted.repository),
                None => wanted.repository.clone(),
            };
            return Err(refuse(
                RefusalCode::InheritedRepositoryMismatch,
                format!(
                    "`{asked}` {problem} the environment of parent task `{}`, which `inherit_parent` reuses as it is; choose `workspace_mode` `new_workspace` for an environment of its own",
                    parent.id
                ),
                format!(
                    "inherited repository `{asked}` {problem} the environment of `{}`",
                    parent.id
                ),
            ));
        }
    }
    Ok(())
}

/// TASK-7: the task an idempotent retry found (the destination's task of that external id) is
/// returned only when the caller, under the rules it was just admitted by, could have created
/// it: in the admitted destination, visible, consistent, and of a mode that surface may use —
/// an office session on its own path gets its office workspace's tasks, a kanban session
/// kanban tasks, an external caller either. Anything else is refused like an unknown task,
/// and nothing of it is given.
pub fn recheck_existing(
    admitted: &Admitted,
    existing: &TaskView,
    workspaces: &[WorkspaceView],
    external_id: &str,
) -> Result<(), Refusal> {
    let hidden = || {
        refuse(
            RefusalCode::NotFound,
            format!("external id `{external_id}` cannot be used here"),
            format!(
                "retry with external id `{external_id}` found task `{}`, not returned to this caller",
                existing.id
            ),
        )
    };
    let workspace = workspaces
        .iter()
        .find(|w| w.name == existing.workspace && w.name == admitted.workspace && w.authorised)
        .ok_or_else(hidden)?;
    if !consistent(existing, workspace) {
        return Err(hidden());
    }
    let usable = match admitted.surface {
        Surface::External => true,
        Surface::KanbanSession => !existing.from_office,
        Surface::OfficeSession => existing.from_office,
    };
    if usable { Ok(()) } else { Err(hidden()) }
}

#[cfg(test)]
mod tests;
