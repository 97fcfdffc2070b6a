//! The governed call (GOV-2) as an explicit ordered sequence over small traits.
//!
//! ```text
//! resolve name ─► 1 kill switch ─► 2 validate ─► 3 audit (run + call) ─► 4 capability
//!   ─► 5 tool policy ─► 6 write budget ─► 7 autonomy ─► execute ─► outcome record
//! ```
//!
//! The order is part of the contract: a frozen scope creates nothing (1 before 3); invalid
//! input writes nothing (2 before 3); from 3 on every refusal is recorded. Any failure of the
//! machinery (store, counters) is a denial with code `UNAVAILABLE`, never an execution.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};

use crate::approval::{ApprovalQueue, ParkKind, Parked, provenance_of};
use crate::audit::{
    CanonicalObject, NewRecord, RecordKind, canonical_json, hash_arguments, hash_object,
    hash_value, redact,
};
use crate::authority::Authority;
use crate::contract::{CallOutcome, ToolOutput, Verdict};
use crate::decision::{self, Decision, Denial, DenyCode, Gate, Purpose};
use crate::policy::{CounterSpec, Policy};
use crate::time::Millis;
use crate::tool::{Catalog, ToolDescriptor};

/// A failure of the machinery behind the pipeline (store unreachable, …). The message is for
/// operators' logs, never for the caller.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EnvError(pub String);

/// Why an upstream could not execute a call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// The upstream is down, restarting or timed out; the message is safe for the caller.
    #[error("{0}")]
    Unavailable(String),
    /// The client cancelled the call.
    #[error("cancelled")]
    Cancelled,
}

/// Appends audit records durably (the store).
pub trait AuditLog: Send + Sync {
    /// Appends records in order; returns once they are durable.
    fn append(&self, records: Vec<NewRecord>) -> impl Future<Output = Result<(), EnvError>> + Send;
}

/// Exact counters for rate limits and write budgets (the store).
pub trait Counters: Send + Sync {
    /// Takes one unit from `counter` in the window containing `now`; `Ok(false)` when the
    /// limit is reached. Exact under concurrency.
    fn take(
        &self,
        counter: &CounterSpec,
        now: Millis,
    ) -> impl Future<Output = Result<bool, EnvError>> + Send;
}

/// The time.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Millis;
}

/// One call to execute.
#[derive(Debug)]
pub struct Execution<'a> {
    /// The tool.
    pub tool: &'a Arc<ToolDescriptor>,
    /// Validated arguments.
    pub args: Option<Map<String, Value>>,
    /// The run's authority.
    pub authority: &'a Authority,
    /// The run.
    pub run_id: &'a str,
    /// The call.
    pub call_id: &'a str,
}

/// Executes admitted calls (upstreams and built-in tool sets).
pub trait Executor: Send + Sync {
    /// Executes the call.
    fn execute(
        &self,
        call: Execution<'_>,
    ) -> impl Future<Output = Result<ToolOutput, ExecError>> + Send;
}

/// The state of a run shared by its calls: its id and whether its run record exists.
#[derive(Debug)]
pub struct RunState {
    id: String,
    opened: AtomicBool,
}

impl RunState {
    /// A run not yet recorded; its record is written with its first audited call.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            opened: AtomicBool::new(false),
        }
    }

    /// A run whose run record was already written (an unattended agent run, recorded when it
    /// started).
    pub fn recorded(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            opened: AtomicBool::new(true),
        }
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the run record was written.
    pub fn is_opened(&self) -> bool {
        self.opened.load(Ordering::Acquire)
    }
}

/// One `tools/call` request.
#[derive(Debug)]
pub struct CallRequest<'a> {
    /// The call's id (unique in the run).
    pub call_id: String,
    /// The tool name as the client sent it.
    pub name: &'a str,
    /// The arguments.
    pub args: Option<Map<String, Value>>,
}

/// The pipeline's dependencies.
#[derive(Debug)]
pub struct Pipeline<'a, A, C, K, X, Q> {
    /// Audit log.
    pub audit: &'a A,
    /// Counters.
    pub counters: &'a C,
    /// Clock.
    pub clock: &'a K,
    /// Executor.
    pub executor: &'a X,
    /// Where parked calls go.
    pub approvals: &'a Q,
}

/// What step 7 decided for an admitted call.
enum Admission {
    Execute {
        rule: String,
    },
    Park {
        rule: String,
        kind: ParkKind,
        due_in: std::time::Duration,
    },
}

/// An approved (or staged and unvetoed) action to execute now.
#[derive(Debug)]
pub struct ApprovedCall<'a> {
    /// The approval's id.
    pub id: &'a str,
    /// The run it was requested in.
    pub run_id: &'a str,
    /// The call it was requested by.
    pub call_id: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// The exact arguments approved.
    pub args: Option<Map<String, Value>>,
    /// Who decided (`None` for a staged action that ran after its veto window).
    pub decided_by: Option<&'a str>,
}

/// The step that decided a call, recorded with the decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Resolve,
    Capability,
    ToolPolicy,
    WriteBudget,
    Autonomy,
    Approval,
    Execute,
}

impl Step {
    fn as_str(self) -> &'static str {
        match self {
            Step::Resolve => "resolve",
            Step::Capability => "capability",
            Step::ToolPolicy => "tool-policy",
            Step::WriteBudget => "write-budget",
            Step::Autonomy => "autonomy",
            Step::Approval => "approval",
            Step::Execute => "execute",
        }
    }
}

impl<A: AuditLog, C: Counters, K: Clock, X: Executor, Q: ApprovalQueue>
    Pipeline<'_, A, C, K, X, Q>
{
    /// Runs one governed call through GOV-2.
    pub async fn call(
        &self,
        policy: &Policy,
        catalog: &Catalog,
        authority: &Authority,
        run: &RunState,
        request: CallRequest<'_>,
    ) -> CallOutcome {
        let CallRequest {
            call_id,
            name,
            args,
        } = request;
        let mut outcome = CallOutcome {
            run_id: run.id.clone(),
            call_id: call_id.clone(),
            tool: name.to_owned(),
            verdict: Verdict::Denied(Denial::unknown_tool(name, "")),
            audited: false,
        };
        let rec = Recorder {
            policy,
            authority,
            run,
            call_id: &call_id,
            tool: name,
        };

        // Name resolution comes first (RUN-6): a hidden tool is never validated.
        let tool = match decision::resolve_tool(catalog, authority, name) {
            Ok(t) => t,
            Err(denial) => {
                let now = self.clock.now();
                let mut records = rec.open(now, None, args.as_ref());
                records.push(rec.decision(now, Step::Resolve, &Decision::Deny(denial.clone())));
                return self.finish_denied(outcome, &rec, records, denial).await;
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
            .admit(policy, authority, run, tool, args.as_ref())
            .await
        {
            Ok(admitted) => admitted,
            Err((step, denial)) => {
                let record = rec.decision(self.clock.now(), step, &Decision::Deny(denial.clone()));
                opened.push(record);
                return self.finish_denied(outcome, &rec, opened, denial).await;
            }
        };

        let rule = match admitted {
            Admission::Execute { rule } => rule,
            Admission::Park { rule, kind, due_in } => {
                if let Err(e) = self.audit.append(std::mem::take(&mut opened)).await {
                    rec.reopen_on_failure();
                    outcome.verdict = Verdict::Denied(unavailable(&e));
                    return outcome;
                }
                outcome.audited = true;
                let now = self.clock.now();
                let parked = Parked {
                    kind,
                    run_id: run.id.clone(),
                    call_id: call_id.clone(),
                    tool: name.to_owned(),
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
                let mut record =
                    rec.decision(now, Step::Autonomy, &Decision::Allow { rule: rule.clone() });
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
                outcome.verdict = Verdict::Pending { approval_id, rule };
                return outcome;
            }
        };
        self.execute_admitted(
            outcome,
            &rec,
            opened,
            tool,
            args,
            authority,
            run,
            &call_id,
            rule,
            Step::Autonomy,
        )
        .await
    }

    /// Records the admission, executes, records the outcome.
    #[expect(clippy::too_many_arguments, reason = "the pieces of one admitted call")]
    async fn execute_admitted(
        &self,
        mut outcome: CallOutcome,
        rec: &Recorder<'_>,
        mut opened: Vec<NewRecord>,
        tool: &Arc<ToolDescriptor>,
        args: Option<Map<String, Value>>,
        authority: &Authority,
        run: &RunState,
        call_id: &str,
        rule: String,
        step: Step,
    ) -> CallOutcome {
        let allow = Decision::Allow { rule: rule.clone() };
        let opening = !opened.is_empty();
        opened.push(rec.decision(self.clock.now(), step, &allow));
        // The decision (with the call, when not yet recorded) is durable before any side
        // effect.
        if let Err(e) = self.audit.append(opened).await {
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
                authority,
                run_id: &run.id,
                call_id,
            })
            .await;
        let finished = self.clock.now();
        let (verdict, record) = match result {
            Ok(output) => {
                let record = rec.outcome(finished, started, Ok(&output));
                (Verdict::Executed { output, rule }, record)
            }
            Err(e) => {
                let record = rec.outcome(finished, started, Err(&e));
                let denial = match e {
                    ExecError::Unavailable(msg) => Denial::new(
                        DenyCode::Unavailable,
                        format!("upstream:{}", upstream_of(tool)),
                        msg,
                    ),
                    ExecError::Cancelled => Denial::new(
                        DenyCode::Unavailable,
                        "execute:cancelled",
                        "the call was cancelled",
                    ),
                };
                (Verdict::Denied(denial), record)
            }
        };
        // An outcome that cannot be recorded is still the truth of what happened:
        // the durable decision record above already shows the call was admitted.
        let _ = self.audit.append(vec![record]).await;
        outcome.verdict = verdict;
        outcome
    }

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
        approved: ApprovedCall<'_>,
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
        let deny = |d: Denial| (Step::Approval, d);
        let checked = (|| {
            let tool = catalog.get(approved.tool).ok_or_else(|| {
                deny(Denial::new(
                    DenyCode::Unavailable,
                    "approval:tool-gone",
                    format!("`{}` is no longer in the catalog", approved.tool),
                ))
            })?;
            if let Some(d) = decision::kill_switch(policy, authority, tool) {
                return Err(deny(d));
            }
            if let Some(d) = decision::validate(tool, approved.args.as_ref()) {
                return Err(deny(d));
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
                return Err(deny(d));
            }
            if let Some(d) = decision::tool_policy(tool) {
                return Err(deny(d));
            }
            Ok(tool)
        })();
        let tool = match checked {
            Ok(t) => t,
            Err((step, denial)) => {
                let record = rec.decision(self.clock.now(), step, &Decision::Deny(denial.clone()));
                return self
                    .finish_denied(outcome, &rec, vec![record], denial)
                    .await;
            }
        };
        let rule = match approved.decided_by {
            Some(by) => format!("approval:{}:{by}", approved.id),
            None => format!("staged:{}:veto-window-passed", approved.id),
        };
        outcome.audited = true;
        self.execute_admitted(
            outcome,
            &rec,
            Vec::new(),
            tool,
            approved.args,
            authority,
            &run,
            approved.call_id,
            rule,
            Step::Approval,
        )
        .await
    }

    /// Direct execution with governance `off` (GOV-6): no decision steps, every call still
    /// recorded (run, call, an `allow` decision with rule `governance:off`, outcome). Only
    /// for `warden stdio --governance off|auto`, never on the HTTP endpoints.
    pub async fn direct(
        &self,
        policy: &Policy,
        catalog: &Catalog,
        authority: &Authority,
        run: &RunState,
        request: CallRequest<'_>,
    ) -> CallOutcome {
        let CallRequest {
            call_id,
            name,
            args,
        } = request;
        let mut outcome = CallOutcome {
            run_id: run.id.clone(),
            call_id: call_id.clone(),
            tool: name.to_owned(),
            verdict: Verdict::Denied(Denial::unknown_tool(name, "resolve:no-such-tool")),
            audited: false,
        };
        let rec = Recorder {
            policy,
            authority,
            run,
            call_id: &call_id,
            tool: name,
        };
        let now = self.clock.now();
        let Some(tool) = catalog.get(name) else {
            let mut records = rec.open(now, None, args.as_ref());
            let denial = Denial::unknown_tool(name, "resolve:no-such-tool");
            records.push(rec.decision(now, Step::Resolve, &Decision::Deny(denial.clone())));
            return self.finish_denied(outcome, &rec, records, denial).await;
        };
        let rule = "governance:off".to_owned();
        let mut records = rec.open(now, Some(tool), args.as_ref());
        records.push(rec.decision(now, Step::Execute, &Decision::Allow { rule: rule.clone() }));
        if let Err(e) = self.audit.append(records).await {
            rec.reopen_on_failure();
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
                authority,
                run_id: &run.id,
                call_id: &call_id,
            })
            .await;
        let record = rec.outcome(self.clock.now(), started, result.as_ref());
        let _ = self.audit.append(vec![record]).await;
        outcome.verdict = match result {
            Ok(output) => Verdict::Executed { output, rule },
            Err(e) => Verdict::Denied(Denial::new(
                DenyCode::Unavailable,
                format!("upstream:{}", upstream_of(tool)),
                e.to_string(),
            )),
        };
        outcome
    }

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
            for budget in policy.write_budgets_for(authority, &run.id) {
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
        let level = policy.autonomy_for(authority, tool);
        match decision::autonomy_gate(tool, &level) {
            Gate::Execute { rule } => Ok(Admission::Execute { rule }),
            Gate::Deny(d) => Err((Step::Autonomy, d)),
            Gate::Park { rule } => Ok(Admission::Park {
                rule,
                kind: ParkKind::Approval,
                due_in: level.approval_ttl,
            }),
            Gate::Stage { rule, window } => Ok(Admission::Park {
                rule,
                kind: ParkKind::Staged,
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

    async fn finish_denied(
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

fn kind_decision(kind: ParkKind) -> &'static str {
    match kind {
        ParkKind::Approval => "park",
        ParkKind::Staged => "stage",
    }
}

fn unavailable(e: &EnvError) -> Denial {
    Denial::new(
        DenyCode::Unavailable,
        format!("store:{e}"),
        "governance is unavailable (the store cannot be reached); nothing was executed",
    )
}

fn upstream_of(tool: &ToolDescriptor) -> String {
    match &tool.source {
        crate::tool::ToolSource::Upstream { upstream, .. } => upstream.to_string(),
        crate::tool::ToolSource::Builtin { set, .. } => set.to_string(),
    }
}

/// Builds the audit records of one call.
struct Recorder<'a> {
    policy: &'a Policy,
    authority: &'a Authority,
    run: &'a RunState,
    call_id: &'a str,
    tool: &'a str,
}

impl Recorder<'_> {
    fn base(&self, at: Millis, kind: RecordKind, payload: String) -> NewRecord {
        NewRecord {
            at,
            kind,
            run_id: self.run.id.clone(),
            call_id: (kind != RecordKind::Run).then(|| self.call_id.to_owned()),
            principal: Some(self.authority.principal.to_string()),
            agent: self.authority.agent.as_ref().map(ToString::to_string),
            tool: (kind != RecordKind::Run).then(|| self.tool.to_owned()),
            decision: None,
            code: None,
            payload,
        }
    }

    /// The run record (first audited call of the run only) and the call record.
    fn open(
        &self,
        at: Millis,
        tool: Option<&ToolDescriptor>,
        args: Option<&Map<String, Value>>,
    ) -> Vec<NewRecord> {
        let mut records = Vec::with_capacity(2);
        if !self.run.opened.swap(true, Ordering::AcqRel) {
            records.push(self.base(
                at,
                RecordKind::Run,
                run_payload(self.authority, self.policy),
            ));
        }
        // Keys in sorted order: the canonical form (AUD).
        let payload = CanonicalObject::new()
            .value("args", &redact(args))
            .field("args_hash", &hash_arguments(args))
            .field("class", &tool.map(|t| t.class))
            .field("project", &tool.and_then(|t| t.project.as_ref()))
            .finish();
        records.push(self.base(at, RecordKind::Call, payload));
        records
    }

    /// A failed append of the run record must let the next call write it.
    fn reopen_on_failure(&self) {
        self.run.opened.store(false, Ordering::Release);
    }

    fn decision(&self, at: Millis, step: Step, decision: &Decision) -> NewRecord {
        let (verdict, code, rule, message) = match decision {
            Decision::Allow { rule } => ("allow", None, rule.as_str(), None),
            Decision::Deny(d) => (
                "deny",
                Some(d.code),
                d.rule.as_str(),
                Some(d.message.as_str()),
            ),
        };
        let payload = CanonicalObject::new()
            .field("code", &code)
            .field("decision", verdict)
            .field("message", &message)
            .field("policy_revision", &self.policy.revision)
            .field("rule", rule)
            .field("step", step.as_str())
            .finish();
        let mut r = self.base(at, RecordKind::Decision, payload);
        r.decision = Some(verdict.to_owned());
        r.code = code.map(|c| c.as_str().to_owned());
        r
    }

    fn outcome(
        &self,
        at: Millis,
        started: Millis,
        result: Result<&ToolOutput, &ExecError>,
    ) -> NewRecord {
        let duration_ms = at.0.saturating_sub(started.0);
        let timed = CanonicalObject::new().field("duration_ms", &duration_ms);
        let (status, payload) = match result {
            Ok(output) => {
                let (status, hash, is_error) = match output {
                    ToolOutput::Data(v) => ("executed", hash_value(v), false),
                    ToolOutput::Upstream { result, is_error } => {
                        ("executed", hash_object(result), *is_error)
                    }
                    ToolOutput::InputRequired { result } => {
                        ("input_required", hash_object(result), false)
                    }
                };
                let payload = timed
                    .field("is_error", &is_error)
                    .field("result_hash", &hash)
                    .field("status", status);
                (status, payload)
            }
            Err(ExecError::Cancelled) => {
                let payload = timed.field("error", "cancelled by the client");
                ("cancelled", payload.field("status", "cancelled"))
            }
            Err(e) => {
                let payload = timed.field("error", &e.to_string());
                ("failed", payload.field("status", "failed"))
            }
        };
        let payload = payload.field("step", Step::Execute.as_str()).finish();
        let mut r = self.base(at, RecordKind::Outcome, payload);
        r.decision = Some(status.to_owned());
        r
    }
}

/// The `run` record of a run, for runs recorded when they start (unattended agent runs).
pub fn run_record(authority: &Authority, policy: &Policy, run_id: &str, at: Millis) -> NewRecord {
    NewRecord {
        at,
        kind: RecordKind::Run,
        run_id: run_id.to_owned(),
        call_id: None,
        principal: Some(authority.principal.to_string()),
        agent: authority.agent.as_ref().map(ToString::to_string),
        tool: None,
        decision: None,
        code: None,
        payload: run_payload(authority, policy),
    }
}

/// The run record's payload, in canonical form (keys sorted; the maps are sorted by name).
fn run_payload(authority: &Authority, policy: &Policy) -> String {
    CanonicalObject::new()
        .field("agent", &authority.agent)
        .field("credential", &authority.credential_id)
        .field("knowledge_only", &authority.knowledge_only)
        .field("mode", &authority.mode)
        .field("policy_revision", &policy.revision)
        .field("principal", &authority.principal.to_string())
        .field("projects", &authority.projects)
        .field("withheld", &authority.withheld)
        .finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::authority::Mode;
    use crate::capability::Grant;
    use crate::principal::Principal;

    fn name(s: &str) -> crate::name::Name {
        crate::name::Name::new(s).unwrap()
    }

    /// AUD: the payloads written field by field are the canonical JSON of the objects the
    /// records always held (the form before `CanonicalObject`), values included.
    #[test]
    fn payloads_are_the_canonical_form_of_their_objects() {
        let policy = Policy::compile(crate::config::Config::default(), 7);
        let authority = Authority {
            mode: Mode::Agent,
            principal: Principal::User { name: name("ada") },
            credential_id: Some("cred-\"1\"".into()),
            agent: Some(name("triage")),
            intent: None,
            grant: Grant::default(),
            projects: BTreeMap::from([
                (name("zeta"), "member".into()),
                (name("alpha"), "bound \u{e9}".into()),
            ]),
            knowledge: BTreeSet::new(),
            knowledge_only: BTreeMap::from([(name("docs"), "knowledge only".into())]),
            withheld: Some("the store cannot be reached".into()),
            cosigner: None,
        };
        let run = RunState::new("run_1");
        let rec = Recorder {
            policy: &policy,
            authority: &authority,
            run: &run,
            call_id: "call_1",
            tool: "alpha__t",
        };
        let at = Millis(5);
        let args = json!({"b": [1, {"api-Key": "s"}], "a": "x"});
        let args = args.as_object();

        let opened = rec.open(at, None, args);
        assert_eq!(
            opened[0].payload,
            canonical_json(&json!({
                "mode": authority.mode,
                "principal": authority.principal.to_string(),
                "credential": authority.credential_id,
                "agent": authority.agent.as_ref().map(ToString::to_string),
                "projects": authority.projects,
                "knowledge_only": authority.knowledge_only,
                "withheld": authority.withheld,
                "policy_revision": policy.revision,
            }))
        );
        assert_eq!(
            opened[1].payload,
            canonical_json(&json!({
                "args_hash": hash_arguments(args),
                "args": redact(args),
                "project": None::<String>,
                "class": None::<crate::tool::ToolClass>,
            }))
        );

        let allow = Decision::Allow { rule: "r1".into() };
        let deny = Decision::Deny(Denial::new(DenyCode::Unavailable, "rule:2", "no \"way\""));
        for (decision, verdict, code, rule, message) in [
            (&allow, "allow", None, "r1", None),
            (
                &deny,
                "deny",
                Some(DenyCode::Unavailable),
                "rule:2",
                Some("no \"way\""),
            ),
        ] {
            assert_eq!(
                rec.decision(at, Step::ToolPolicy, decision).payload,
                canonical_json(&json!({
                    "decision": verdict,
                    "code": code,
                    "rule": rule,
                    "step": Step::ToolPolicy.as_str(),
                    "policy_revision": policy.revision,
                    "message": message,
                }))
            );
        }

        let started = Millis(2);
        let data = ToolOutput::Data(json!({"y": 1, "x": [true, null]}));
        let upstream = ToolOutput::Upstream {
            result: json!({"content": [], "isError": true})
                .as_object()
                .unwrap()
                .clone(),
            is_error: true,
        };
        for (output, hash, is_error) in [
            (
                &data,
                hash_value(&json!({"y": 1, "x": [true, null]})),
                false,
            ),
            (
                &upstream,
                hash_value(&json!({"content": [], "isError": true})),
                true,
            ),
        ] {
            assert_eq!(
                rec.outcome(at, started, Ok(output)).payload,
                canonical_json(
                    &json!({"status": "executed", "step": Step::Execute.as_str(), "duration_ms": 3, "result_hash": hash, "is_error": is_error})
                )
            );
        }
        assert_eq!(
            rec.outcome(at, started, Err(&ExecError::Cancelled)).payload,
            canonical_json(
                &json!({"status": "cancelled", "step": Step::Execute.as_str(), "duration_ms": 3, "error": "cancelled by the client"})
            )
        );
        let failed = ExecError::Unavailable("upstream `u` is down".into());
        assert_eq!(
            rec.outcome(at, started, Err(&failed)).payload,
            canonical_json(
                &json!({"status": "failed", "step": Step::Execute.as_str(), "duration_ms": 3, "error": failed.to_string()})
            )
        );
    }
}
