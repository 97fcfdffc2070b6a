//! Deciding and executing parked calls (APR-1..APR-6).
//!
//! - Deciding needs `approvals:decide` *and* a scope covering the action: the decider must be
//!   able to perform the call itself. A member who could perform it but may not approve is
//!   refused, and so is an approver whose own authority does not reach the action.
//! - The approved action runs with the requester's authority (resolved again now, from its
//!   provenance reference) intersected with the decider's (APR-4). A requester that cannot be
//!   resolved refuses the action with the APR-5 code; the decider's authority alone is never
//!   used.
//! - Every status change is a conditional update: one decision among racing deciders, one
//!   execution (APR-6). An execution interrupted by a crash is marked `failed`, never retried.

use std::time::Duration;

use serde_json::{Map, Value, json};
use warden_core::approval::{ApprovalKind, ApprovalStatus, resolve_requester};
use warden_core::audit::{NewRecord, RecordKind, canonical_json, hash_value};
use warden_core::authority::Authority;
use warden_core::capability::APPROVALS_DECIDE;
use warden_core::contract::{ToolOutput, Verdict};
use warden_core::decision::DenyCode;
use warden_core::decision::{Decision, Purpose, decide};
use warden_core::pipeline::{ApprovedCall, Clock as _};
use warden_core::principal::{Credential, PrincipalRef, Provenance, party};
use warden_store::{Approval, ApprovalFilter, Transition};

use super::execution::GatewayExecutor;
use super::state::Gateway;

/// A decision on a parked call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Execute the approval.
    Approve,
    /// Refuse the approval.
    Reject,
    /// Stop a staged action before its veto window ends.
    Veto,
}

impl Verb {
    fn as_str(self) -> &'static str {
        match self {
            Verb::Approve => "approve",
            Verb::Reject => "reject",
            Verb::Veto => "veto",
        }
    }

    fn past(self) -> &'static str {
        match self {
            Verb::Approve => "approved",
            Verb::Reject => "rejected",
            Verb::Veto => "vetoed",
        }
    }
}

/// Why a decision was not taken. Messages are for the decider.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// No such approval.
    #[error("no approval `{0}`")]
    NotFound(String),
    /// The decider may not decide approvals, or not this one.
    #[error("{0}")]
    Forbidden(String),
    /// The approval is not in a state this decision applies to.
    #[error("{0}")]
    Conflict(String),
    /// The store failed.
    #[error("the store cannot be reached: {0}")]
    Store(String),
}

fn store_err(e: warden_store::StoreError) -> DecideError {
    DecideError::Store(e.to_string())
}

fn reference_of(credential: &Credential) -> String {
    serde_json::to_string(&Provenance::Principal {
        reference: PrincipalRef::ApiKey {
            id: credential.id.clone(),
            owner: credential.principal.clone(),
        },
    })
    .unwrap_or_default()
}

/// Four eyes (APR-8): refused when `decider` asked for the call itself and a rule keeps the
/// requester out (approving or rejecting; stopping a staged action stays open to all), or when
/// it already approved a call that needs several deciders.
fn check_four_eyes(approval: &Approval, decider: &str, verb: Verb) -> Result<(), DecideError> {
    if verb == Verb::Veto {
        return Ok(());
    }
    if let Some(rule) = &approval.self_denied_by
        && party(&approval.principal) == decider
    {
        return Err(DecideError::Forbidden(format!(
            "four eyes: {decider} asked for this call, and `selfApproval: deny` ({rule}) leaves its decision to someone else, whichever credential of {decider} asks"
        )));
    }
    let counted = i64::try_from(approval.approvers.len()).unwrap_or(i64::MAX);
    if verb == Verb::Approve
        && counted < approval.deciders
        && approval.approvers.iter().any(|a| a == decider)
    {
        return Err(DecideError::Conflict(format!(
            "{decider} already approved `{}`; it needs {} approvals by distinct deciders and has {}",
            approval.id,
            approval.deciders,
            approval.approvers.len()
        )));
    }
    Ok(())
}

/// How long an execution may stay claimed before it counts as interrupted (for stores shared
/// by replicas).
const EXECUTION_LEASE: Duration = Duration::from_secs(120);

/// Deciding and executing parked calls, over the live snapshot.
#[derive(Debug)]
pub(super) struct Approvals<'a> {
    pub(super) gateway: &'a Gateway,
}

impl Approvals<'_> {
    fn authority(
        &self,
        credential: &Credential,
    ) -> Result<std::sync::Arc<Authority>, warden_core::authority::AuthorityError> {
        self.gateway
            .authorities
            .authority(&self.gateway.snapshot(), credential, None)
    }

    fn store(&self) -> &std::sync::Arc<warden_store::Store> {
        &self.gateway.store
    }

    fn snapshot(&self) -> std::sync::Arc<super::snapshot::Snapshot> {
        self.gateway.snapshot()
    }

    /// Decides a parked call as `decider`.
    pub(super) async fn decide(
        &self,
        id: &str,
        decider: &Credential,
        verb: Verb,
        reason: Option<String>,
    ) -> Result<Approval, DecideError> {
        let authority = self
            .authority(decider)
            .map_err(|e| DecideError::Forbidden(e.to_string()))?;
        if !authority.holds(APPROVALS_DECIDE) {
            return Err(DecideError::Forbidden(format!(
                "deciding approvals needs the `{APPROVALS_DECIDE}` capability"
            )));
        }
        let store = self.store();
        let approval = store
            .approval(id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| DecideError::NotFound(id.to_owned()))?;
        self.check_scope(&authority, &approval)?;
        let decider_name = party(&decider.principal.to_string()).to_owned();
        check_four_eyes(&approval, &decider_name, verb)?;
        let now = self.gateway.clock.now().0;
        let decided = Transition {
            decided_by: Some(reference_of(decider)),
            decided_at: Some(now),
            reason: reason.clone(),
            ..Transition::default()
        };
        let wrong_state = |a: &Approval| {
            DecideError::Conflict(format!(
                "approval `{}` is {}, it cannot be {}",
                a.id,
                a.status,
                verb.past()
            ))
        };
        match verb {
            Verb::Approve | Verb::Reject if approval.kind != ApprovalKind::Approval => {
                return Err(DecideError::Conflict(format!(
                    "`{id}` is a staged action: veto it, or let it run"
                )));
            }
            Verb::Veto if approval.kind != ApprovalKind::Staged => {
                return Err(DecideError::Conflict(format!(
                    "`{id}` waits for an approval: approve or reject it"
                )));
            }
            _ => {}
        }
        if approval.kind == ApprovalKind::Approval
            && approval.status == ApprovalStatus::Pending
            && approval.due_at <= now
        {
            self.expire(&approval).await.map_err(store_err)?;
            return Err(DecideError::Conflict(format!(
                "approval `{id}` expired undecided; ask again"
            )));
        }
        let counted = i64::try_from(approval.approvers.len()).unwrap_or(i64::MAX);
        // One of several deciders (APR-8): counted, and the call runs with the last. (Once
        // they are all counted, one of them may finish what a failure interrupted.)
        if verb == Verb::Approve && approval.deciders > 1 && counted < approval.deciders {
            if !store
                .add_approver(&approval, &decider_name)
                .await
                .map_err(store_err)?
            {
                return Err(DecideError::Conflict(format!(
                    "approval `{id}` was decided or approved by someone else meanwhile; look again"
                )));
            }
            if counted + 1 < approval.deciders {
                let mut progress = approval.clone();
                progress.approvers.push(decider_name.clone());
                self.record_decision(&progress, "approve", &decider_name, reason.as_deref(), None)
                    .await;
                return store
                    .approval(id)
                    .await
                    .map_err(store_err)?
                    .ok_or_else(|| DecideError::NotFound(id.to_owned()));
            }
        }
        let (from, to, code) = match verb {
            Verb::Approve => (ApprovalStatus::Pending, ApprovalStatus::Approved, None),
            Verb::Reject => (
                ApprovalStatus::Pending,
                ApprovalStatus::Rejected,
                Some(DenyCode::ApprovalRejected),
            ),
            Verb::Veto => (
                ApprovalStatus::Staged,
                ApprovalStatus::Vetoed,
                Some(DenyCode::Vetoed),
            ),
        };
        let mut transition = decided;
        if let Some(code) = code {
            transition.outcome_code = Some(code);
            transition.outcome_message = Some(format!("{} by {}", verb.past(), decider.principal));
            transition.finished_at = Some(now);
            transition.clear_args = true;
        }
        if !store
            .transition(id, &[from], to, transition)
            .await
            .map_err(store_err)?
        {
            let current = store
                .approval(id)
                .await
                .map_err(store_err)?
                .unwrap_or(approval);
            return Err(wrong_state(&current));
        }
        self.record_decision(
            &approval,
            verb.as_str(),
            &decider.principal.to_string(),
            reason.as_deref(),
            code,
        )
        .await;
        if verb == Verb::Approve {
            self.execute_parked(&approval, Some(decider)).await;
        }
        store
            .approval(id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| DecideError::NotFound(id.to_owned()))
    }

    /// The decider must be able to perform the action itself (APR-4).
    fn check_scope(&self, decider: &Authority, approval: &Approval) -> Result<(), DecideError> {
        let snapshot = self.snapshot();
        let args = parse_args(approval.args.as_deref());
        let allowed = snapshot.catalog.get(&approval.tool).is_some_and(|tool| {
            matches!(
                decide(
                    decider,
                    tool,
                    Purpose::Call {
                        args: args.as_ref()
                    }
                ),
                Decision::Allow { .. }
            )
        });
        if allowed {
            Ok(())
        } else {
            Err(DecideError::Forbidden(format!(
                "your own authority does not cover `{}` with these arguments, so you may not decide on it",
                approval.tool
            )))
        }
    }

    async fn expire(&self, approval: &Approval) -> Result<(), warden_store::StoreError> {
        let now = self.gateway.clock.now().0;
        let expired = self
            .store()
            .transition(
                &approval.id,
                &[ApprovalStatus::Pending],
                ApprovalStatus::Expired,
                Transition {
                    outcome_code: Some(DenyCode::ApprovalExpired),
                    outcome_message: Some("expired undecided".into()),
                    finished_at: Some(now),
                    clear_args: true,
                    ..Transition::default()
                },
            )
            .await?;
        if expired {
            self.record_decision(
                approval,
                "expire",
                "warden",
                None,
                Some(DenyCode::ApprovalExpired),
            )
            .await;
        }
        Ok(())
    }

    async fn record_decision(
        &self,
        a: &Approval,
        verb: &str,
        decider: &str,
        reason: Option<&str>,
        code: Option<DenyCode>,
    ) {
        let record = NewRecord {
            at: self.gateway.clock.now(),
            kind: RecordKind::Decision,
            run_id: a.run_id.clone(),
            call_id: Some(a.call_id.clone()),
            principal: Some(decider.to_owned()),
            agent: a.agent.clone(),
            tool: Some(a.tool.clone()),
            decision: Some(verb.to_owned()),
            code: code.map(|c| c.as_str().to_owned()),
            payload: canonical_json(&json!({
                "decision": verb,
                "approval_id": a.id,
                "requester": a.principal,
                "requested_by": a.requested_by.as_deref().and_then(|r| serde_json::from_str::<Value>(r).ok()),
                "decider": decider,
                "reason": reason,
                "args_hash": a.args_hash,
                "policy_revision": a.policy_revision,
                "rule": format!("approval:{}", a.id),
                "step": "approval",
                // Four eyes (APR-8): who approved so far, of how many.
                "approvers": (a.deciders > 1).then_some(&a.approvers),
                "deciders": (a.deciders > 1).then_some(a.deciders),
            })),
        };
        if let Err(e) = self.store().append_audit(vec![record]).await {
            tracing::error!(approval = %a.id, error = %e, "cannot record the decision");
        }
    }

    /// Executes an approved or due staged action exactly once: claim, execute, record.
    async fn execute_parked(&self, approval: &Approval, decider: Option<&Credential>) {
        let store = self.store();
        let snapshot = self.snapshot();
        let now = self.gateway.clock.now();
        let fail = |code: DenyCode, message: String| Transition {
            outcome_code: Some(code),
            outcome_message: Some(message),
            finished_at: Some(self.gateway.clock.now().0),
            clear_args: true,
            ..Transition::default()
        };
        let from: &[ApprovalStatus] = if decider.is_some() {
            &[ApprovalStatus::Approved]
        } else {
            &[ApprovalStatus::Staged]
        };
        // The requester, resolved again now (APR-3, APR-5).
        let requester = resolve_requester(
            &snapshot.policy,
            approval.requested_by.as_deref(),
            approval.agent.as_deref(),
            |id| snapshot.credential_by_id(id),
            now,
        );
        let authority = match (requester, decider) {
            (Err(denial), _) => {
                let _ = store
                    .transition(
                        &approval.id,
                        from,
                        ApprovalStatus::Failed,
                        fail(denial.code, denial.message.clone()),
                    )
                    .await;
                self.record_decision(
                    approval,
                    "refuse",
                    "warden",
                    Some(&denial.message),
                    Some(denial.code),
                )
                .await;
                return;
            }
            (Ok(requester), Some(decider)) => match self.authority(decider) {
                Ok(d) => requester.intersect(&d),
                Err(e) => {
                    let _ = store
                        .transition(
                            &approval.id,
                            from,
                            ApprovalStatus::Failed,
                            fail(
                                DenyCode::Unavailable,
                                format!("the decider's authority cannot be resolved: {e}"),
                            ),
                        )
                        .await;
                    return;
                }
            },
            (Ok(requester), None) => requester,
        };
        let claimed = store
            .transition(
                &approval.id,
                from,
                ApprovalStatus::Executing,
                Transition {
                    claimed_at: Some(self.gateway.clock.now().0),
                    ..Transition::default()
                },
            )
            .await;
        if !matches!(claimed, Ok(true)) {
            return;
        }
        let executor = GatewayExecutor {
            gateway: self.gateway,
            snapshot: &snapshot,
        };
        let pipeline = self.gateway.pipeline(&executor);
        let decided_by = decider.map(|d| d.principal.to_string());
        let outcome = pipeline
            .execute_approved(
                &snapshot.policy,
                &snapshot.catalog,
                &authority,
                ApprovedCall {
                    id: &approval.id,
                    run_id: &approval.run_id,
                    call_id: &approval.call_id,
                    tool: &approval.tool,
                    args: parse_args(approval.args.as_deref()),
                    decided_by: decided_by.as_deref(),
                    context: None,
                },
            )
            .await;
        let transition = match &outcome.verdict {
            Verdict::Executed { output, .. } => {
                let result = match output {
                    ToolOutput::Data(v) => v.clone(),
                    ToolOutput::Failed { code, message } => {
                        serde_json::json!({"code": code, "message": message})
                    }
                    ToolOutput::Upstream { result, .. }
                    | ToolOutput::InputRequired { result }
                    | ToolOutput::Task { result }
                    | ToolOutput::Refused { error: result } => Value::Object(result.clone()),
                };
                Transition {
                    outcome_message: Some(format!(
                        "executed (result sha256 {})",
                        hash_value(&result)
                    )),
                    result: Some(result.to_string()),
                    finished_at: Some(self.gateway.clock.now().0),
                    clear_args: true,
                    ..Transition::default()
                }
            }
            Verdict::Denied(d) => fail(d.code, d.message.clone()),
            Verdict::Pending { .. } => fail(
                DenyCode::Unavailable,
                "the approved action was parked again".into(),
            ),
        };
        let to = if matches!(outcome.verdict, Verdict::Executed { .. }) {
            ApprovalStatus::Executed
        } else {
            ApprovalStatus::Failed
        };
        if let Err(e) = store
            .transition(&approval.id, &[ApprovalStatus::Executing], to, transition)
            .await
        {
            tracing::error!(approval = %approval.id, error = %e, "cannot record the end of an approved action");
        }
    }

    /// One pass of the approvals sweeper: expire undecided approvals, run staged actions whose
    /// veto window passed, resume approved actions whose decider stopped before executing,
    /// and mark executions interrupted by a crash as failed. `startup` treats every execution
    /// in progress as interrupted (an embedded store has one server).
    pub(super) async fn sweep(&self, startup: bool) {
        let store = self.store();
        let now = self.gateway.clock.now().0;
        let due = |status: ApprovalStatus, due_before: Option<i64>| ApprovalFilter {
            status: vec![status],
            due_before,
            limit: Some(500),
            ..ApprovalFilter::default()
        };
        if let Ok(executing) = store.approvals(&due(ApprovalStatus::Executing, None)).await {
            for a in executing {
                let stale = a.claimed_at.is_none_or(|c| {
                    now - c > i64::try_from(EXECUTION_LEASE.as_millis()).unwrap_or(i64::MAX)
                });
                if startup || stale {
                    let marked = store
                        .transition(
                            &a.id,
                            &[ApprovalStatus::Executing],
                            ApprovalStatus::Failed,
                            Transition {
                                outcome_code: Some(DenyCode::Unavailable),
                                outcome_message: Some(
                                    "interrupted: Warden stopped while executing; the action was not retried and may or may not have taken effect upstream".into(),
                                ),
                                finished_at: Some(now),
                                clear_args: true,
                                ..Transition::default()
                            },
                        )
                        .await;
                    if matches!(marked, Ok(true)) {
                        tracing::warn!(approval = %a.id, tool = %a.tool, "approved action interrupted by a restart: marked failed, not retried");
                    }
                }
            }
        }
        if let Ok(expired) = store
            .approvals(&due(ApprovalStatus::Pending, Some(now)))
            .await
        {
            for a in expired {
                let _ = self.expire(&a).await;
            }
        }
        if let Ok(staged) = store
            .approvals(&due(ApprovalStatus::Staged, Some(now)))
            .await
        {
            for a in staged {
                self.execute_parked(&a, None).await;
            }
        }
        // Decided but never claimed: the decider's process stopped in between.
        if let Ok(approved) = store.approvals(&due(ApprovalStatus::Approved, None)).await {
            for a in approved {
                let settled = a.decided_at.is_some_and(|d| startup || now - d > 5_000);
                if !settled {
                    continue;
                }
                let decider = a
                    .decided_by
                    .as_deref()
                    .and_then(|r| serde_json::from_str::<Provenance>(r).ok())
                    .and_then(|p| match p {
                        Provenance::Principal {
                            reference: PrincipalRef::ApiKey { id, .. },
                        } => self.snapshot().credential_by_id(&id),
                        _ => None,
                    });
                match decider {
                    Some(d) => self.execute_parked(&a, Some(&d)).await,
                    None => {
                        let _ = store
                            .transition(
                                &a.id,
                                &[ApprovalStatus::Approved],
                                ApprovalStatus::Failed,
                                Transition {
                                    outcome_code: Some(DenyCode::ApprovalProvenanceInvalid),
                                    outcome_message: Some("the decider cannot be resolved".into()),
                                    finished_at: Some(now),
                                    clear_args: true,
                                    ..Transition::default()
                                },
                            )
                            .await;
                    }
                }
            }
        }
    }
}

fn parse_args(args: Option<&str>) -> Option<Map<String, Value>> {
    args.and_then(|a| serde_json::from_str::<Value>(a).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
}
