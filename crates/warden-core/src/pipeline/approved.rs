//! An approved (or staged, unvetoed) action, executed after its decision (APR-4).

use crate::approval::ApprovalQueue;
use crate::authority::Authority;
use crate::contract::{CallOutcome, Verdict};
use crate::decision::{self, Decision, Denial, DenyCode, Purpose};
use crate::policy::Policy;
use crate::tool::Catalog;

use super::execute::Admitted;
use super::ports::{ApprovedCall, AuditLog, Clock, Counters, Executor, Pipeline, RunState};
use super::record::{Recorder, Step};

impl<A: AuditLog, C: Counters, K: Clock, X: Executor, Q: ApprovalQueue>
    Pipeline<'_, A, C, K, X, Q>
{
    /// Executes an approved (or staged, unvetoed) action with `authority` — for an approval,
    /// the requester's authority intersected with the decider's (APR-4), both resolved again
    /// now. Steps 1, 2, 4 and the static part of 5 run again against the current policy;
    /// counters were taken when the call was parked, and autonomy is what the approval
    /// answered.
    pub async fn execute_approved(
        &self,
        policy: &Policy,
        catalog: &Catalog,
        authority: &Authority,
        approved: ApprovedCall<'_, X::Context>,
    ) -> CallOutcome {
        let run = RunState::recorded(approved.run_id);
        let mut outcome = CallOutcome {
            run_id: approved.run_id.to_owned(),
            call_id: approved.call_id.to_owned(),
            tool: approved.tool.to_owned(),
            verdict: Verdict::Denied(Denial::unknown_tool(approved.tool, "")),
            audited: false,
        };
        let rec = Recorder {
            policy,
            authority,
            run: &run,
            call_id: approved.call_id,
            tool: approved.tool,
        };
        let checked = (|| {
            let tool = catalog.get(approved.tool).ok_or_else(|| {
                Denial::new(
                    DenyCode::Unavailable,
                    "approval:tool-gone",
                    format!("`{}` is no longer in the catalog", approved.tool),
                )
            })?;
            if let Some(d) = decision::kill_switch(policy, authority, tool) {
                return Err(d);
            }
            if let Some(d) = decision::validate(tool, approved.args.as_ref()) {
                return Err(d);
            }
            if let Decision::Deny(d) = decision::decide(
                authority,
                tool,
                Purpose::Call {
                    args: approved.args.as_ref(),
                },
            ) {
                // Whatever hid or refused it, the approved action is outside the authority
                // it would run with.
                let d = if d.code == DenyCode::UnknownTool {
                    Denial::new(
                        DenyCode::Capability,
                        format!("approval:{}", d.rule),
                        format!(
                            "`{}` is outside the authority this approved action runs with",
                            approved.tool
                        ),
                    )
                } else {
                    d
                };
                return Err(d);
            }
            if let Some(d) = decision::tool_policy(tool) {
                return Err(d);
            }
            // The conditions in force now still refuse (a parked call was dangerous already).
            decision::conditions(authority, tool, approved.args.as_ref(), self.clock.now())?;
            Ok(tool)
        })();
        let tool = match checked {
            Ok(t) => t,
            Err(denial) => {
                let record = rec.decision(
                    self.clock.now(),
                    Step::Approval,
                    &Decision::Deny(denial.clone()),
                );
                return self
                    .finish_denied(outcome, &rec, vec![record], denial)
                    .await;
            }
        };
        let rule = match approved.decided_by {
            Some(by) => format!("approval:{}:{by}", approved.id),
            None => format!("staged:{}:veto-window-passed", approved.id),
        };
        // The run and the call were recorded when the action was parked.
        outcome.audited = true;
        let admitted = Admitted {
            records: Vec::new(),
            tool,
            args: approved.args,
            rule,
            step: Step::Approval,
            context: approved.context,
        };
        self.execute_and_record(outcome, &rec, admitted).await
    }
}
