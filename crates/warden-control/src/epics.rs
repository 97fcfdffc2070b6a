//! Epics and their tasks (WORK-1) for the operators' doors: `/api/v1/epics` and `warden epic`.
//! The rules are the work domain's (`warden_work::epics`), the same the `work` tool set applies
//! over MCP; here they run on the services' store and clock.

use warden_core::authority::Authority;
use warden_core::policy::Policy;
use warden_store::{Epic, EpicTask, Review};
use warden_work::epics::args::{
    AcceptArgs, AddTaskArgs, CreateEpicArgs, ListEpicsArgs, MoveEpicTaskArgs, ReviewArgs,
    UpdateEpicArgs,
};
use warden_work::epics::gate::{Acceptance, Forge};
use warden_work::epics::{self, EpicError, EpicTaskPage, EpicView};
use warden_work::tasks::Path;

use crate::Control;

/// Creates an epic in `draft`.
pub async fn create(
    control: &Control,
    authority: &Authority,
    args: CreateEpicArgs,
) -> Result<Epic, EpicError> {
    epics::create_epic(control.store(), authority, args, control.now()).await
}

/// Changes an epic, or moves it.
pub async fn update(
    control: &Control,
    authority: &Authority,
    args: UpdateEpicArgs,
) -> Result<Epic, EpicError> {
    epics::update_epic(control.store(), authority, args, control.now()).await
}

/// Adds a task to an epic, its task created by the operators' path of task admission.
pub async fn add_task(
    control: &Control,
    policy: &Policy,
    authority: &Authority,
    args: AddTaskArgs,
) -> Result<EpicTask, EpicError> {
    epics::add_task(
        control.store(),
        policy,
        authority,
        args,
        Path::Own,
        control.now(),
    )
    .await
}

/// Moves an epic task.
pub async fn move_task(
    control: &Control,
    policy: &Policy,
    authority: &Authority,
    args: MoveEpicTaskArgs,
) -> Result<EpicTask, EpicError> {
    epics::move_task(control.store(), policy, authority, args, control.now()).await
}

/// An epic the caller sees, with its tasks and moves.
pub async fn get(
    control: &Control,
    authority: &Authority,
    id: &str,
) -> Result<EpicView, EpicError> {
    epics::get_epic(control.store(), authority, id).await
}

/// An epic task the caller sees, with its reviews, moves and epic.
pub async fn get_task(
    control: &Control,
    authority: &Authority,
    id: &str,
) -> Result<EpicTaskPage, EpicError> {
    epics::get_epic_task(control.store(), authority, id).await
}

/// The epics the caller sees.
pub async fn list(
    control: &Control,
    authority: &Authority,
    args: &ListEpicsArgs,
) -> Result<Vec<Epic>, EpicError> {
    epics::list_epics(control.store(), authority, args).await
}

/// Reviews an epic task.
pub async fn review(
    control: &Control,
    policy: &Policy,
    authority: &Authority,
    args: ReviewArgs,
) -> Result<Review, EpicError> {
    let forge = Forge {
        policy,
        secrets: control.secrets(),
    };
    epics::gate::review(control.store(), forge, authority, args, control.now()).await
}

/// Accepts an epic task whose review gate is open, and merges it.
pub async fn accept(
    control: &Control,
    policy: &Policy,
    authority: &Authority,
    args: AcceptArgs,
) -> Result<Acceptance, EpicError> {
    let forge = Forge {
        policy,
        secrets: control.secrets(),
    };
    epics::gate::accept(control.store(), forge, authority, args, control.now()).await
}
