//! Parked calls in the store: approvals and staged actions (APR-2, APR-6).
//!
//! Every change of status is a conditional update (`… WHERE id = $1 AND status IN (…)`):
//! among racing deciders or replicas, exactly one wins, on SQLite and PostgreSQL alike.

use serde::{Deserialize, Serialize};
use warden_core::approval::Parked;

/// A parked call as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// `apr_…`.
    pub id: String,
    /// `approval` or `staged`.
    pub kind: String,
    /// See the state machine in the migration.
    pub status: String,
    /// The run it was requested in.
    pub run_id: String,
    /// The call that parked it.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The tool's project.
    pub project: Option<String>,
    /// The exact arguments (JSON), cleared once the action is done.
    #[serde(skip_serializing)]
    pub args: Option<String>,
    /// SHA-256 of the canonical arguments.
    pub args_hash: String,
    /// Who asked (provenance reference, JSON).
    pub requested_by: Option<String>,
    /// The requester, for display.
    pub principal: String,
    /// The agent of the run.
    pub agent: Option<String>,
    /// The policy version in force when parked.
    pub policy_revision: i64,
    /// The rule that parked it.
    pub rule: String,
    /// When parked (ms).
    pub created_at: i64,
    /// Approval: expiry; staged: execution time (ms).
    pub due_at: i64,
    /// The decider (provenance reference, JSON).
    pub decided_by: Option<String>,
    /// When decided (ms).
    pub decided_at: Option<i64>,
    /// The decider's reason.
    pub reason: Option<String>,
    /// When execution was claimed (ms).
    pub claimed_at: Option<i64>,
    /// When it ended (ms).
    pub finished_at: Option<i64>,
    /// The denial code of a refused or failed action.
    pub outcome_code: Option<String>,
    /// What happened, for people.
    pub outcome_message: Option<String>,
    /// The result of the executed action (JSON), for the requester to fetch (APR-7).
    pub result: Option<String>,
}

/// Fields set by a transition (unset ones keep their value).
#[derive(Clone, Debug, Default)]
pub struct Transition {
    /// The decider.
    pub decided_by: Option<String>,
    /// When decided.
    pub decided_at: Option<i64>,
    /// Why.
    pub reason: Option<String>,
    /// When execution was claimed.
    pub claimed_at: Option<i64>,
    /// When it ended.
    pub finished_at: Option<i64>,
    /// Denial code.
    pub outcome_code: Option<String>,
    /// Message.
    pub outcome_message: Option<String>,
    /// Result.
    pub result: Option<String>,
    /// Forget the arguments (the action is done).
    pub clear_args: bool,
}

/// Which approvals to list.
#[derive(Clone, Debug, Default)]
pub struct ApprovalFilter {
    /// Only these statuses.
    pub status: Vec<String>,
    /// Only approvals due at or before this time.
    pub due_before: Option<i64>,
    /// Only this requester.
    pub principal: Option<String>,
    /// At most this many (default 100).
    pub limit: Option<i64>,
}

pub(crate) const APPROVAL_COLUMNS: &str = "id, kind, status, run_id, call_id, tool, project, args, args_hash, requested_by, principal, agent, policy_revision, rule, created_at, due_at, decided_by, decided_at, reason, claimed_at, finished_at, outcome_code, outcome_message, result";

/// The row of a call being parked, under a new id.
pub(crate) fn parked(p: &Parked) -> Approval {
    Approval {
        id: format!("apr_{}", uuid::Uuid::now_v7().simple()),
        kind: p.kind.as_str().into(),
        status: p.kind.initial_status().as_str().into(),
        run_id: p.run_id.clone(),
        call_id: p.call_id.clone(),
        tool: p.tool.clone(),
        project: p.project.as_ref().map(ToString::to_string),
        args: p
            .args
            .as_ref()
            .map(|a| serde_json::Value::Object(a.clone()).to_string()),
        args_hash: p.args_hash.clone(),
        requested_by: serde_json::to_string(&p.requested_by).ok(),
        principal: p.principal.clone(),
        agent: p.agent.clone(),
        policy_revision: i64::try_from(p.policy_revision).unwrap_or(i64::MAX),
        rule: p.rule.clone(),
        created_at: p.created_at.0,
        due_at: p.due_at.0,
        decided_by: None,
        decided_at: None,
        reason: None,
        claimed_at: None,
        finished_at: None,
        outcome_code: None,
        outcome_message: None,
        result: None,
    }
}
