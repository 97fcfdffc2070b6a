//! The arguments of the `work` tool set's tools (WORK-1), which the admin API and `warden epic`
//! take too. The tools' schemas are derived from these types (GOV-1): only what the service
//! reads, unknown fields refused, closed sets as enums, no invented defaults.

use schemars::JsonSchema;
use serde::Deserialize;
use warden_core::work::{EpicState, EpicTaskState, Risk, Verdict};

/// Arguments of `work__create_epic`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEpicArgs {
    /// The project it belongs to.
    #[schemars(length(min = 1))]
    pub project: String,
    /// Its title.
    #[schemars(length(min = 1))]
    pub title: String,
    /// What it is about.
    pub description: Option<String>,
    /// Its acceptance criteria.
    pub criteria: Option<Vec<String>>,
    /// The trade-offs it makes.
    pub tradeoffs: Option<String>,
    /// How much is at stake: it sets how many reviews its tasks need (`medium` when omitted).
    pub risk: Option<Risk>,
}

/// Arguments of `work__update_epic`: what is given is changed.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEpicArgs {
    /// The epic (`epc_…`).
    pub id: String,
    /// A new title.
    #[schemars(length(min = 1))]
    pub title: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// New acceptance criteria, replacing the old.
    pub criteria: Option<Vec<String>>,
    /// New trade-offs.
    pub tradeoffs: Option<String>,
    /// A new risk.
    pub risk: Option<Risk>,
    /// A move of the epic: `draft → open → done`, or `archived` from any other state.
    pub status: Option<EpicState>,
}

/// Arguments of `work__add_task`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTaskArgs {
    /// The epic (`epc_…`).
    pub epic: String,
    /// The task's title.
    #[schemars(length(min = 1))]
    pub title: String,
    /// What is to be done.
    pub description: Option<String>,
    /// The workspace its task is created in (of the epic's project).
    #[schemars(length(min = 1))]
    pub workspace: String,
    /// The workspace's repository the work is in.
    #[schemars(length(min = 1))]
    pub repository: String,
    /// The work branch.
    #[schemars(length(min = 1))]
    pub branch: String,
    /// The branch the work is merged into; the workspace's branch for the repository when
    /// omitted.
    #[serde(rename = "baseBranch")]
    #[schemars(length(min = 1))]
    pub base_branch: Option<String>,
}

/// Arguments of `work__move_task`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveEpicTaskArgs {
    /// The epic task (`ept_…`).
    pub id: String,
    /// Where it moves.
    pub to: EpicTaskState,
}

/// Arguments of `work__get_epic`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpicIdArgs {
    /// The epic (`epc_…`).
    pub id: String,
}

/// Arguments of `work__list_epics`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListEpicsArgs {
    /// Only this project's.
    pub project: Option<String>,
    /// Only epics in this state.
    pub status: Option<EpicState>,
}

/// Arguments of `work__review`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewArgs {
    /// The epic task (`ept_…`), in `review`.
    pub id: String,
    /// `approve`, or `changes` (which moves the task back to `in_progress`).
    pub verdict: Verdict,
    /// What the reviewer says.
    pub comment: Option<String>,
}

/// Arguments of `work__accept`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptArgs {
    /// The epic task (`ept_…`), in `review`, whose review gate is open.
    pub id: String,
}
