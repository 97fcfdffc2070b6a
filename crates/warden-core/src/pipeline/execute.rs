//! The end every admitted call comes to, governed, ungoverned or approved: the decision made
//! durable before any side effect, the execution, the outcome recorded. One function, so that
//! every path records a failure and a cancellation alike.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::approval::ApprovalQueue;
use crate::audit::NewRecord;
use crate::contract::{CallOutcome, Verdict};
use crate::decision::{Decision, Denial, DenyCode};
use crate::error::{EnvError, ExecError};
use crate::tool::{ToolDescriptor, ToolSource};

use super::ports::{AuditLog, Clock, Counters, Execution, Executor, Pipeline};
use super::record::{Recorder, Step};

/// A call that passed its checks, with what is not yet recorded of it.
pub(super) struct Admitted<'a, Ctx> {
    /// The run and call records, when the call has not been recorded yet (an approved action
    /// was recorded when it was parked).
    pub(super) records: Vec<NewRecord>,
    pub(super) tool: &'a Arc<ToolDescriptor>,
    pub(super) args: Option<Map<String, Value>>,
    /// The rule that admitted it, and the step whose rule it is.
    pub(super) rule: String,
    pub(super) step: Step,
    pub(super) context: Ctx,
}

impl<A: AuditLog, C: Counters, K: Clock, X: Executor, Q: ApprovalQueue>
    Pipeline<'_, A, C, K, X, Q>
{
    /// Records the admission (durable before any side effect), executes, records the outcome.
    pub(super) async fn execute_and_record(
        &self,
        mut outcome: CallOutcome,
        rec: &Recorder<'_>,
        admitted: Admitted<'_, X::Context>,
    ) -> CallOutcome {
        let Admitted {
            mut records,
            tool,
            args,
            rule,
            step,
            context,
        } = admitted;
        let opening = !records.is_empty();
        let allow = Decision::Allow { rule: rule.clone() };
        records.push(rec.decision(self.clock.now(), step, &allow));
        if let Err(e) = self.audit.append(records).await {
            if opening {
                rec.reopen_on_failure();
            }
            outcome.verdict = Verdict::Denied(unavailable(&e));
            return outcome;
        }
        outcome.audited = true;
        let started = self.clock.now();
        let result = self
            .executor
            .execute(Execution {
                tool,
                args,
                authority: rec.authority,
                run_id: rec.run.id(),
                call_id: rec.call_id,
                context,
            })
            .await;
        let finished = self.clock.now();
        let record = rec.outcome(finished, started, result.as_ref());
        // An outcome that cannot be recorded is still the truth of what happened: the durable
        // decision record above already shows the call was admitted.
        let _ = self.audit.append(vec![record]).await;
        outcome.verdict = match result {
            Ok(output) => Verdict::Executed { output, rule },
            Err(ExecError::Unavailable(message)) => Verdict::Denied(Denial::new(
                DenyCode::Unavailable,
                format!("upstream:{}", source_of(tool)),
                message,
            )),
            Err(ExecError::Cancelled) => Verdict::Denied(Denial::new(
                DenyCode::Unavailable,
                "execute:cancelled",
                "the call was cancelled",
            )),
        };
        outcome
    }

    /// Appends the records of a refused call; a refusal that cannot be recorded becomes
    /// `UNAVAILABLE`.
    pub(super) async fn finish_denied(
        &self,
        mut outcome: CallOutcome,
        rec: &Recorder<'_>,
        records: Vec<NewRecord>,
        denial: Denial,
    ) -> CallOutcome {
        match self.audit.append(records).await {
            Ok(()) => {
                outcome.audited = true;
                outcome.verdict = Verdict::Denied(denial);
            }
            Err(e) => {
                rec.reopen_on_failure();
                outcome.verdict = Verdict::Denied(unavailable(&e));
            }
        }
        outcome
    }
}

/// The denial of a call the machinery could not govern.
pub(super) fn unavailable(e: &EnvError) -> Denial {
    Denial::new(
        DenyCode::Unavailable,
        format!("store:{e}"),
        "governance is unavailable (the store cannot be reached); nothing was executed",
    )
}

/// The upstream or built-in set a tool comes from.
fn source_of(tool: &ToolDescriptor) -> String {
    match &tool.source {
        ToolSource::Upstream { upstream, .. } => upstream.to_string(),
        ToolSource::Builtin { set, .. } => set.to_string(),
    }
}
