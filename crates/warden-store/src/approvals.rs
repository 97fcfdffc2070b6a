//! Parked calls in the store: approvals and staged actions (APR-2, APR-6).
//!
//! Every change of status is a conditional update (`… WHERE id = $1 AND status IN (…)`):
//! among racing deciders or replicas, exactly one wins, on SQLite and PostgreSQL alike.

use serde::{Deserialize, Serialize};
use sqlx::{ColumnIndex, Decode, Row, Type};
use warden_core::approval::{ApprovalKind, ApprovalStatus, Parked};
use warden_core::decision::DenyCode;

/// A parked call as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// `apr_…`.
    pub id: String,
    /// Approval or staged action.
    pub kind: ApprovalKind,
    /// Where it stands ([`ApprovalStatus`] has the state machine).
    pub status: ApprovalStatus,
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
    pub outcome_code: Option<DenyCode>,
    /// What happened, for people.
    pub outcome_message: Option<String>,
    /// The result of the executed action (JSON), for the requester to fetch (APR-7).
    pub result: Option<String>,
    /// The rule that keeps its requester from deciding it (APR-8), if one does.
    pub self_denied_by: Option<String>,
    /// How many distinct deciders approve it before it runs.
    pub deciders: i64,
    /// The principals who approved it so far, the first first.
    pub approvers: Vec<String>,
}

/// A stored value that is not one of its type's values: a corrupt row, read as an error rather
/// than as some default.
fn invalid(column: &str, value: &str) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: column.to_owned(),
        source: format!("`{value}` is not a valid {column}").into(),
    }
}

/// Rows become [`Approval`]s here, on both databases: the kind, the status and the outcome code
/// are read as text and parsed into their types.
impl<'r, R: Row> sqlx::FromRow<'r, R> for Approval
where
    &'r str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        let kind: String = row.try_get("kind")?;
        let status: String = row.try_get("status")?;
        let outcome_code: Option<String> = row.try_get("outcome_code")?;
        let approvers: String = row.try_get("approvers")?;
        Ok(Self {
            id: row.try_get("id")?,
            kind: ApprovalKind::parse(&kind).ok_or_else(|| invalid("kind", &kind))?,
            status: ApprovalStatus::parse(&status).ok_or_else(|| invalid("status", &status))?,
            run_id: row.try_get("run_id")?,
            call_id: row.try_get("call_id")?,
            tool: row.try_get("tool")?,
            project: row.try_get("project")?,
            args: row.try_get("args")?,
            args_hash: row.try_get("args_hash")?,
            requested_by: row.try_get("requested_by")?,
            principal: row.try_get("principal")?,
            agent: row.try_get("agent")?,
            policy_revision: row.try_get("policy_revision")?,
            rule: row.try_get("rule")?,
            created_at: row.try_get("created_at")?,
            due_at: row.try_get("due_at")?,
            decided_by: row.try_get("decided_by")?,
            decided_at: row.try_get("decided_at")?,
            reason: row.try_get("reason")?,
            claimed_at: row.try_get("claimed_at")?,
            finished_at: row.try_get("finished_at")?,
            outcome_code: outcome_code
                .map(|c| DenyCode::parse(&c).ok_or_else(|| invalid("outcome_code", &c)))
                .transpose()?,
            outcome_message: row.try_get("outcome_message")?,
            result: row.try_get("result")?,
            self_denied_by: row.try_get("self_denied_by")?,
            deciders: row.try_get("deciders")?,
            approvers: serde_json::from_str(&approvers)
                .map_err(|_| invalid("approvers", &approvers))?,
        })
    }
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
    pub outcome_code: Option<DenyCode>,
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
    pub status: Vec<ApprovalStatus>,
    /// Only approvals due at or before this time.
    pub due_before: Option<i64>,
    /// Only this requester.
    pub principal: Option<String>,
    /// Only approvals of built-in tools (no project) and of these projects.
    pub projects: Option<Vec<String>>,
    /// At most this many (default 100).
    pub limit: Option<i64>,
}

pub(crate) const APPROVAL_COLUMNS: &str = "id, kind, status, run_id, call_id, tool, project, args, args_hash, requested_by, principal, agent, policy_revision, rule, created_at, due_at, decided_by, decided_at, reason, claimed_at, finished_at, outcome_code, outcome_message, result, self_denied_by, deciders, approvers";

/// The row of a call being parked, under a new id.
pub(crate) fn parked(p: &Parked) -> Approval {
    Approval {
        id: format!("apr_{}", uuid::Uuid::now_v7().simple()),
        kind: p.kind,
        status: p.kind.initial_status(),
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
        self_denied_by: p.four_eyes.self_denied_by.clone(),
        deciders: i64::from(p.four_eyes.deciders),
        approvers: Vec::new(),
    }
}
