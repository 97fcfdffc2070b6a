//! A `tools/call`: resolved, checked in the order of GOV-2, then parked or executed — or, with
//! governance off (GOV-6), resolved and executed, still recorded.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::approval::{ApprovalKind, ApprovalQueue, Parked, provenance_of};
use crate::audit::{NewRecord, canonical_json, hash_arguments};
use crate::authority::Authority;
use crate::contract::{CallOutcome, Verdict};
use crate::decision::{self, Decision, Denial, DenyCode, Gate, Purpose};
use crate::policy::{CounterSpec, Policy};
use crate::tool::{Catalog, ToolDescriptor};

use super::execute::{Admitted, unavailable};
use super::ports::{
    AuditLog, CallRequest, Clock, Counters, Executor, Governance, Pipeline, RunState,
};
use super::record::{Recorder, Step};

/// What step 7 decided for an admitted call.
enum Admission {
    Execute {
        rule: String,
    },
    Park {
        rule: String,
        kind: ApprovalKind,
        due_in: std::time::Duration,
    },
}

impl<A: AuditLog, C: Counters, K: Clock, X: Executor, Q: ApprovalQueue>
    Pipeline<'_, A, C, K, X, Q>
{
    /// Runs one `tools/call`: through GOV-2, or with governance off as the request says.
    pub async fn call(
        &self,
        policy: &Policy,
        catalog: &Catalog,
        authority: &Authority,
        run: &RunState,
        request: CallRequest<'_, X::Context>,
    ) -> CallOutcome {
        let outcome = CallOutcome {
            run_id: run.id().to_owned(),
            call_id: request.call_id.clone(),
            tool: request.name.to_owned(),
            verdict: Verdict::Denied(Denial::unknown_tool(request.name, "")),
            audited: false,
        };
        let rec = Recorder {
            policy,
            authority,
            run,
            call_id: &request.call_id,
            tool: request.name,
        };
        match request.governance {
            Governance::On => {
                self.governed(outcome, &rec, catalog, request.args, request.context)
                    .await
            }
            Governance::Off => {
                self.ungoverned(outcome, &rec, catalog, request.args, request.context)
                    .await
            }
        }
    }

    /// GOV-2, in order.
    async fn governed(
        &self,
        mut outcome: CallOutcome,
        rec: &Recorder<'_>,
        catalog: &Catalog,
        args: Option<Map<String, Value>>,
        context: X::Context,
    ) -> CallOutcome {
        let (policy, authority) = (rec.policy, rec.authority);
        // Name resolution comes first (RUN-6): a hidden tool is never validated.
        let tool = match decision::resolve_tool(catalog, authority, rec.tool) {
            Ok(t) => t,
            Err(denial) => {
                let now = self.clock.now();
                let mut records = rec.open(now, None, args.as_ref());
                records.push(rec.decision(now, Step::Resolve, &Decision::Deny(denial.clone())));
                return self.finish_denied(outcome, rec, records, denial).await;
            }
        };

        // 1. kill switch: a frozen scope creates nothing, not even a run.
        if let Some(denial) = decision::kill_switch(policy, authority, tool) {
            outcome.verdict = Verdict::Denied(denial);
            return outcome;
        }

        // 2. validate input against the advertised schema, before any write.
        if let Some(denial) = decision::validate(tool, args.as_ref()) {
            outcome.verdict = Verdict::Denied(denial);
            return outcome;
        }

        // 3. the run and the call are recorded: from here on everything is. They become
        // durable together with the decision of steps 4..7, in one append, before anything
        // executes or is parked (one write per decision instead of two on the hot path).
        let now = self.clock.now();
        let mut opened = rec.open(now, Some(tool), args.as_ref());

        // 4..7, each a refusal recorded as such.
        let admitted = match self
            .admit(policy, authority, rec.run, tool, args.as_ref())
            .await
        {
            Ok(admitted) => admitted,
            Err((step, denial)) => {
                let record = rec.decision(self.clock.now(), step, &Decision::Deny(denial.clone()));
                opened.push(record);
                return self.finish_denied(outcome, rec, opened, denial).await;
            }
        };
        match admitted {
            Admission::Execute { rule } => {
                let admitted = Admitted {
                    records: opened,
                    tool,
                    args,
                    rule,
                    step: Step::Autonomy,
                    context,
                };
                self.execute_and_record(outcome, rec, admitted).await
            }
            Admission::Park { rule, kind, due_in } => {
                self.park(outcome, rec, opened, tool, args, rule, kind, due_in)
                    .await
            }
        }
    }

    /// Governance off (GOV-6): no decision steps, every call still recorded (run, call, an
    /// `allow` decision with rule `governance:off`, outcome).
    async fn ungoverned(
        &self,
        outcome: CallOutcome,
        rec: &Recorder<'_>,
        catalog: &Catalog,
        args: Option<Map<String, Value>>,
        context: X::Context,
    ) -> CallOutcome {
        let now = self.clock.now();
        let Some(tool) = catalog.get(rec.tool) else {
            let mut records = rec.open(now, None, args.as_ref());
            let denial = Denial::unknown_tool(rec.tool, "resolve:no-such-tool");
            records.push(rec.decision(now, Step::Resolve, &Decision::Deny(denial.clone())));
            return self.finish_denied(outcome, rec, records, denial).await;
        };
        let admitted = Admitted {
            records: rec.open(now, Some(tool), args.as_ref()),
            tool,
            args,
            rule: "governance:off".to_owned(),
            step: Step::Execute,
            context,
        };
        self.execute_and_record(outcome, rec, admitted).await
    }

    /// Steps 4 to 7.
    async fn admit(
        &self,
        policy: &Policy,
        authority: &Authority,
        run: &RunState,
        tool: &ToolDescriptor,
        args: Option<&Map<String, Value>>,
    ) -> Result<Admission, (Step, Denial)> {
        // 4. capability (RBAC, run authority, token ceiling, arguments naming projects).
        if let Decision::Deny(d) = decision::decide(authority, tool, Purpose::Call { args }) {
            return Err((Step::Capability, d));
        }
        // 5. tool policy: governance status, explicit refusals, rate limit.
        if let Some(d) = decision::tool_policy(tool) {
            return Err((Step::ToolPolicy, d));
        }
        // Conditions on the validated arguments (GOV-10): none for most tools, which pay
        // nothing for them.
        let dangerous = if tool.rules.is_empty() {
            None
        } else {
            match decision::conditions(authority, tool, args, self.clock.now()) {
                Ok(dangerous) => dangerous,
                Err(d) => return Err((Step::ToolPolicy, d)),
            }
        };
        if let Some(limit) = policy.rate_limit_for(tool) {
            self.take(&limit, Step::ToolPolicy, DenyCode::RateLimited, || {
                format!(
                    "`{}` allows {} calls per minute; try again later",
                    tool.name, limit.limit
                )
            })
            .await?;
        }
        // 6. write budget (mutations only).
        if tool.is_mutation() {
            for budget in policy.write_budgets_for(authority.actor(), run.id()) {
                self.take(&budget, Step::WriteBudget, DenyCode::WriteBudget, || {
                    format!(
                        "the write budget of {} writes per minute is spent; try again later",
                        budget.limit
                    )
                })
                .await?;
            }
        }
        // 7. risk and autonomy.
        let level = policy.autonomy_for(authority.actor(), tool);
        let risk = match dangerous {
            Some(_) => crate::tool::Risk::Dangerous,
            None => tool.risk,
        };
        // A call a condition made dangerous says so in the rule that parks it.
        let parked_by = |rule: String| match &dangerous {
            Some(condition) => format!("{rule}+{condition}"),
            None => rule,
        };
        match decision::autonomy_gate(tool, risk, &level) {
            Gate::Execute { rule } => Ok(Admission::Execute { rule }),
            Gate::Deny(d) => Err((Step::Autonomy, d)),
            Gate::Park { rule } => Ok(Admission::Park {
                rule: parked_by(rule),
                kind: ApprovalKind::Approval,
                due_in: level.approval_ttl,
            }),
            // A tool that needs several deciders (APR-8) waits for them rather than for a veto.
            Gate::Stage { rule, .. } if policy.four_eyes(authority.actor(), tool).deciders > 1 => {
                Ok(Admission::Park {
                    rule: parked_by(rule),
                    kind: ApprovalKind::Approval,
                    due_in: level.approval_ttl,
                })
            }
            Gate::Stage { rule, window } => Ok(Admission::Park {
                rule: parked_by(rule),
                kind: ApprovalKind::Staged,
                due_in: window,
            }),
        }
    }

    async fn take(
        &self,
        counter: &CounterSpec,
        step: Step,
        code: DenyCode,
        message: impl FnOnce() -> String,
    ) -> Result<(), (Step, Denial)> {
        // Boxed: a store round trip only rate-limited tools and mutations with a write budget
        // make, whose state would otherwise widen every call's future, which each inline
        // request copies into its box (docs/benchmarks.md).
        match Box::pin(self.counters.take(counter, self.clock.now())).await {
            Ok(true) => Ok(()),
            Ok(false) => Err((step, Denial::new(code, counter.rule.clone(), message()))),
            Err(e) => Err((step, unavailable(&e))),
        }
    }

    /// Step 7 parked the call: the call is recorded, then parked, then the parking recorded.
    #[expect(clippy::too_many_arguments, reason = "the pieces of one parked call")]
    async fn park(
        &self,
        mut outcome: CallOutcome,
        rec: &Recorder<'_>,
        opened: Vec<NewRecord>,
        tool: &Arc<ToolDescriptor>,
        args: Option<Map<String, Value>>,
        rule: String,
        kind: ApprovalKind,
        due_in: std::time::Duration,
    ) -> CallOutcome {
        let (policy, authority) = (rec.policy, rec.authority);
        if let Err(e) = self.audit.append(opened).await {
            rec.reopen_on_failure();
            outcome.verdict = Verdict::Denied(unavailable(&e));
            return outcome;
        }
        outcome.audited = true;
        let now = self.clock.now();
        let parked = Parked {
            kind,
            run_id: rec.run.id().to_owned(),
            call_id: rec.call_id.to_owned(),
            tool: rec.tool.to_owned(),
            project: tool.project.clone(),
            args_hash: hash_arguments(args.as_ref()),
            args,
            requested_by: provenance_of(authority),
            principal: authority.principal.to_string(),
            agent: authority.agent.as_ref().map(ToString::to_string),
            policy_revision: policy.revision,
            created_at: now,
            due_at: now.plus(due_in),
            rule: rule.clone(),
            four_eyes: policy.four_eyes(authority.actor(), tool),
        };
        // Boxed, like the counters' `take`: a rare store round trip whose state would
        // otherwise widen every call's future (docs/benchmarks.md).
        let approval_id = match Box::pin(self.approvals.park(&parked)).await {
            Ok(id) => id,
            Err(e) => {
                outcome.verdict = Verdict::Denied(unavailable(&e));
                return outcome;
            }
        };
        let mut record = rec.decision(now, Step::Autonomy, &Decision::Allow { rule: rule.clone() });
        record.decision = Some(kind_decision(kind).into());
        record.payload = canonical_json(&json!({
            "decision": kind_decision(kind),
            "rule": rule,
            "step": Step::Autonomy.as_str(),
            "policy_revision": policy.revision,
            "approval_id": approval_id,
            "due_at": parked.due_at.0,
        }));
        if let Err(e) = self.audit.append(vec![record]).await {
            outcome.verdict = Verdict::Denied(unavailable(&e));
            return outcome;
        }
        outcome.verdict = Verdict::Pending {
            approval_id,
            rule,
            kind,
        };
        outcome
    }
}

/// The decision recorded when a call is parked.
fn kind_decision(kind: ApprovalKind) -> &'static str {
    match kind {
        ApprovalKind::Approval => "park",
        ApprovalKind::Staged => "stage",
    }
}
