//! The work domain's epics and epic tasks (WORK-1), kept where every replica reads them, with
//! every move of either recorded (who, when, from, to).
//!
//! A move here is a compare-and-set: it happens only from the state the caller read, so that
//! two replicas moving the same task cannot both succeed. Which moves exist is the core's
//! ([`warden_core::work`]); who may make them, and the gates in front of some, the work
//! service's (`warden-work`).

mod reviews;
pub(crate) mod sql;
mod store;

use serde::{Deserialize, Serialize};
use warden_core::time::Millis;
use warden_core::work::{EpicState, EpicTaskState, Risk, Verdict};

/// A stored epic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Epic {
    /// `epc_…`.
    pub id: String,
    /// The project it belongs to.
    pub project: String,
    /// Its title.
    pub title: String,
    /// What it is about.
    pub description: String,
    /// Its acceptance criteria.
    pub criteria: Vec<String>,
    /// The trade-offs it makes.
    pub tradeoffs: String,
    /// How much is at stake (sets its tasks' review gate).
    pub risk: Risk,
    /// Where it stands.
    pub state: EpicState,
    /// The principal that created it (`user:alice`).
    pub created_by: String,
    /// When it was created.
    pub created_at: Millis,
    /// When it was last changed.
    pub updated_at: Millis,
}

/// A change to an epic's text or risk: each field that is `Some` is set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EpicChange {
    /// A new title.
    pub title: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// New acceptance criteria, replacing the old.
    pub criteria: Option<Vec<String>>,
    /// New trade-offs.
    pub tradeoffs: Option<String>,
    /// A new risk.
    pub risk: Option<Risk>,
}

/// Which epics a listing returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EpicFilter {
    /// Only these projects' (none: no epics).
    pub projects: Vec<String>,
    /// Only epics in this state.
    pub state: Option<EpicState>,
}

/// A stored epic task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EpicTask {
    /// `ept_…`.
    pub id: String,
    /// The epic it belongs to.
    pub epic_id: String,
    /// Its task (`task_…`), which keeps its sessions and environment.
    pub task_id: String,
    /// Its title.
    pub title: String,
    /// The repository its work is in.
    pub repository: String,
    /// The branch its work is merged into.
    pub base_branch: String,
    /// The branch its work is on.
    pub branch: String,
    /// Where it stands.
    pub state: EpicTaskState,
    /// The principal that added it.
    pub created_by: String,
    /// The merge commit, once merged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_commit: Option<String>,
    /// When it was added.
    pub created_at: Millis,
    /// When it last changed.
    pub updated_at: Millis,
    /// The paths its last merge on acceptance conflicted in (empty once merged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// The last CI status its forge reported for its merge commit (WORK-3): `success`,
    /// `pending`, `failure` or `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_state: Option<String>,
    /// The link of that report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_url: Option<String>,
}

/// What a forge or a merge reports of an epic task.
#[derive(Clone, Copy, Debug)]
pub enum Report<'a> {
    /// Its merge commit's CI status and link.
    Ci {
        /// `success`, `pending`, `failure` or `error`.
        state: &'a str,
        /// The report's link, if any.
        url: Option<&'a str>,
    },
    /// The paths its merge conflicted in (empty: none).
    Conflicts(&'a [String]),
}

/// One recorded move of an epic or an epic task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkMove {
    /// What moved (`epc_…`, `ept_…`).
    pub subject: String,
    /// 1, 2, … per subject.
    pub seq: i64,
    /// The principal that moved it.
    pub moved_by: String,
    /// Where it stood; `None` for its creation.
    pub from: Option<String>,
    /// Where it went.
    pub to: String,
    /// When.
    pub at: Millis,
}

/// One review of an epic task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    /// The epic task reviewed.
    pub epic_task_id: String,
    /// 1, 2, … per epic task; given by the store.
    pub seq: i64,
    /// The principal that reviewed it.
    pub reviewer: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// What the reviewer said.
    pub comment: String,
    /// The commit of the work branch reviewed.
    pub head: Option<String>,
    /// Whether the reviewer held `work:accept-critical`.
    pub critical: bool,
    /// When.
    pub at: Millis,
}
