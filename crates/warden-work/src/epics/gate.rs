//! Reviews and acceptance of epic tasks (WORK-2): a review is recorded with the commit of the
//! work branch it saw; acceptance opens only when the core's review gate
//! ([`warden_core::work::review_gate`]) counts enough standing approvals of the branch's
//! current commit by principals other than the task's authors.
//!
//! The authors of an epic task are whoever added it, whoever created its task, and its
//! sessions: the agent of each run bound to the task, and whoever started it. The work branch's
//! commit is read from the workspace's repository with `git ls-remote`, as a push there is
//! seen; a review of another commit counts for nothing.

use std::collections::BTreeSet;

use serde::Serialize;
use warden_core::authority::Authority;
use warden_core::capability::{WORK_ACCEPT, WORK_ACCEPT_CRITICAL, WORK_REVIEW};
use warden_core::config::{Kind, Resource};
use warden_core::policy::Policy;
use warden_core::principal::Provenance;
use warden_core::time::Millis;
use warden_core::work::{Counted, EpicTaskState, State as _, Verdict, review_gate};
use warden_runtime::Secrets;
use warden_store::{EpicTask, Report, Review, Store};

use super::args::{AcceptArgs, ReviewArgs};
use super::merge::{Merge, merge};
use super::{
    EpicError, code, moved_meanwhile, no_epic_task, party, refused, require, visible_task,
};
use crate::git_auth::GitAuth;

/// The parties ([`party`]) that authored `task`.
async fn authors(store: &Store, task: &EpicTask) -> Result<BTreeSet<String>, EpicError> {
    // A creator or a requester is stored by reference (APR-3): the party it names.
    let referenced = |stored: &str| match serde_json::from_str::<Provenance>(stored) {
        Ok(provenance) => party(&provenance.principal()),
        Err(_) => party(stored),
    };
    let mut authors = BTreeSet::from([party(&task.created_by)]);
    if let Some(created) = store.task(&task.task_id).await? {
        authors.insert(referenced(&created.created_by));
    }
    for run in store.runs_of_task(&task.task_id).await? {
        authors.insert(format!("agent:{}", run.agent));
        authors.insert(referenced(&run.requested_by));
    }
    Ok(authors)
}

/// What the gate reaches a repository with: the configuration (its workspace, its forge and
/// the project's ReviewPolicy) and the secrets a forge's credentials are read from.
#[derive(Clone, Copy, Debug)]
pub struct Forge<'a> {
    /// The configuration in force.
    pub policy: &'a Policy,
    /// Where `${secret:…}` references are read.
    pub secrets: &'a Secrets,
}

/// The repository of `task` (its URL) and the commit its work branch points at there: refused
/// when the branch does not exist there (nothing to review or accept yet).
async fn head(
    store: &Store,
    forge: Forge<'_>,
    project: &str,
    task: &EpicTask,
) -> Result<(String, String, GitAuth), EpicError> {
    let Forge { policy, secrets } = forge;
    let workspace = match store.task(&task.task_id).await? {
        Some(t) => t.workspace,
        None => {
            return Err(refused(
                code::INVALID_ARGUMENT,
                format!(
                    "the task `{}` of epic task `{}` is gone",
                    task.task_id, task.id
                ),
            ));
        }
    };
    let url = policy
        .config
        .of_kind(Kind::Workspace)
        .find_map(|r| match r {
            Resource::Workspace(w) if w.name.as_str() == workspace => w
                .repositories
                .iter()
                .find(|r| r.name.as_str() == task.repository)
                .map(|r| r.url.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            refused(
                code::INVALID_ARGUMENT,
                format!(
                    "workspace `{workspace}` no longer has the repository `{}`",
                    task.repository
                ),
            )
        })?;
    let auth = GitAuth::for_repository(policy, secrets, project, &url)
        .map_err(|reason| refused(code::UNAVAILABLE, reason))?;
    let head = crate::materialise::remote_head(&url, &task.branch, &auth)
        .await
        .map_err(|reason| {
            refused(
                code::UNAVAILABLE,
                format!(
                    "the work branch `{}` of repository `{}` cannot be read: {reason}",
                    task.branch, task.repository
                ),
            )
        })?;
    let head = head.ok_or_else(|| {
        refused(
            code::INVALID_ARGUMENT,
            format!(
                "the work branch `{}` of epic task `{}` does not exist in repository `{}`; push it first",
                task.branch, task.id, task.repository
            ),
        )
    })?;
    Ok((url, head, auth))
}

/// Records a review of an epic task in `review`; `changes` moves it back to `in_progress`.
pub async fn review(
    store: &Store,
    forge: Forge<'_>,
    authority: &Authority,
    args: ReviewArgs,
    now: Millis,
) -> Result<Review, EpicError> {
    let (task, epic) = visible_task(store, authority, &args.id).await?;
    require(
        authority,
        WORK_REVIEW,
        &epic.project,
        "reviewing an epic task",
    )?;
    if task.state != EpicTaskState::Review {
        return Err(refused(
            code::INVALID_ARGUMENT,
            format!(
                "epic task `{}` is `{}`; it is reviewed while in `review`",
                task.id, task.state
            ),
        ));
    }
    let reviewer = party(&authority.principal.to_string());
    if authors(store, &task).await?.contains(&reviewer) {
        return Err(refused(
            code::FORBIDDEN,
            format!(
                "{reviewer} is an author of epic task `{}`; its reviews are by others",
                task.id
            ),
        ));
    }
    let mut review = Review {
        epic_task_id: task.id.clone(),
        seq: 0,
        reviewer,
        verdict: args.verdict,
        comment: args.comment.unwrap_or_default().trim().to_owned(),
        head: Some(head(store, forge, &epic.project, &task).await?.1),
        critical: authority.holds(WORK_ACCEPT_CRITICAL),
        at: now,
    };
    // Recorded only while the task is still in review, with the move `changes` makes, at once.
    let then = (review.verdict == Verdict::Changes).then_some(EpicTaskState::InProgress);
    review.seq = store
        .insert_review(&review, then)
        .await?
        .ok_or_else(|| moved_meanwhile("epic task", &task.id))?;
    tracing::info!(epic_task = %task.id, reviewer = %review.reviewer, verdict = review.verdict.as_str(), "epic task reviewed");
    Ok(review)
}

/// What an acceptance did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Acceptance {
    /// The epic task: `merged`, or `accepted` when its merge did not happen.
    pub epic_task: EpicTask,
    /// The paths its work branch conflicts with its base branch in (nothing was pushed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// Why it is not merged, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_merged: Option<String>,
}

/// Accepts an epic task in `review` whose review gate is open — it moves to `accepted` — and
/// merges its work branch at the approved commit into its base branch: only a pushed merge
/// moves it to `merged` (its merge commit recorded). A task left `accepted` (a conflict, a
/// repository that refused the push) is merged by accepting it again, through the gate again.
pub async fn accept(
    store: &Store,
    forge: Forge<'_>,
    authority: &Authority,
    args: AcceptArgs,
    now: Millis,
) -> Result<Acceptance, EpicError> {
    let (task, epic) = visible_task(store, authority, &args.id).await?;
    require(
        authority,
        WORK_ACCEPT,
        &epic.project,
        "accepting an epic task",
    )?;
    if task.state != EpicTaskState::Accepted {
        task.state
            .check_move(EpicTaskState::Accepted)
            .map_err(|e| refused(code::INVALID_MOVE, e.to_string()))?;
    }
    let authors = authors(store, &task).await?;
    let (url, head, auth) = head(store, forge, &epic.project, &task).await?;
    let reviews = store.reviews(&task.id).await?;
    let counted: Vec<Counted<'_>> = reviews
        .iter()
        .filter(|r| !authors.contains(&party(&r.reviewer)))
        .map(|r| Counted {
            reviewer: &r.reviewer,
            approves: r.verdict == Verdict::Approve,
            current: r.head.as_deref() == Some(head.as_str()),
            critical: r.critical,
        })
        .collect();
    let needed = forge.policy.approvals(&epic.project).needed(epic.risk);
    if let Err(closed) = review_gate(epic.risk, needed, &counted) {
        return Err(refused(
            code::GATED,
            format!("epic task `{}` cannot be accepted: {closed}", task.id),
        ));
    }
    let principal = authority.principal.to_string();
    if task.state == EpicTaskState::Review {
        let moved = store
            .move_epic_task(
                &task.id,
                EpicTaskState::Review,
                EpicTaskState::Accepted,
                &principal,
                None,
                now,
            )
            .await?;
        if !moved {
            return Err(moved_meanwhile("epic task", &task.id));
        }
        tracing::info!(epic_task = %task.id, %principal, "epic task accepted");
    }
    let message = format!(
        "Merge {} of epic task {} into {}",
        task.branch, task.id, task.base_branch
    );
    let outcome = merge(
        &url,
        &task.base_branch,
        &task.branch,
        &head,
        &message,
        &auth,
    )
    .await;
    let (mut conflicts, mut not_merged) = (Vec::new(), None);
    match outcome {
        Merge::Merged(commit) => {
            let moved = store
                .move_epic_task(
                    &task.id,
                    EpicTaskState::Accepted,
                    EpicTaskState::Merged,
                    &principal,
                    Some(&commit),
                    now,
                )
                .await?;
            if !moved {
                return Err(moved_meanwhile("epic task", &task.id));
            }
            tracing::info!(epic_task = %task.id, %commit, "epic task merged");
        }
        Merge::Conflict(paths) => {
            not_merged = Some(format!(
                "`{}` conflicts with `{}`; nothing was pushed",
                task.branch, task.base_branch
            ));
            conflicts = paths;
        }
        Merge::Moved => {
            not_merged = Some(format!(
                "`{}` moved while it was being merged; nothing was pushed",
                task.branch
            ));
        }
        Merge::Failed(reason) => not_merged = Some(format!("the merge failed: {reason}")),
    }
    if let Some(why) = &not_merged {
        tracing::warn!(epic_task = %task.id, reason = %why, "epic task accepted, not merged");
    }
    if conflicts != task.conflicts {
        // Kept for its page: what the last attempt conflicted in, nothing once merged.
        store
            .report_epic_task(&task.id, Report::Conflicts(&conflicts), now)
            .await?;
    }
    Ok(Acceptance {
        epic_task: store
            .epic_task(&task.id)
            .await?
            .ok_or_else(|| no_epic_task(&task.id))?,
        conflicts,
        not_merged,
    })
}
