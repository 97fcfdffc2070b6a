//! The audit records of one call (AUD-1), their payloads written in canonical form (keys
//! sorted) field by field.

use serde_json::{Map, Value};

use crate::audit::{
    AuditRecord, CanonicalObject, NewRecord, RecordKind, hash_arguments, hash_object, hash_value,
    keep, redact,
};
use crate::authority::Authority;
use crate::contract::ToolOutput;
use crate::decision::Decision;
use crate::error::ExecError;
use crate::policy::Policy;
use crate::time::Millis;
use crate::tool::ToolDescriptor;

use super::ports::RunState;

/// The step that decided a call, recorded with the decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    Resolve,
    Capability,
    ToolPolicy,
    WriteBudget,
    Autonomy,
    Approval,
    Execute,
}

impl Step {
    pub(super) fn as_str(self) -> &'static str {
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

/// Builds the audit records of one call.
pub(super) struct Recorder<'a> {
    pub(super) policy: &'a Policy,
    pub(super) authority: &'a Authority,
    pub(super) run: &'a RunState,
    pub(super) call_id: &'a str,
    pub(super) tool: &'a str,
}

impl Recorder<'_> {
    fn base(&self, at: Millis, kind: RecordKind, payload: String) -> NewRecord {
        NewRecord {
            at,
            kind,
            run_id: self.run.id().to_owned(),
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
    pub(super) fn open(
        &self,
        at: Millis,
        tool: Option<&ToolDescriptor>,
        args: Option<&Map<String, Value>>,
    ) -> Vec<NewRecord> {
        let mut records = Vec::with_capacity(2);
        if self.run.open_once() {
            records.push(self.base(
                at,
                RecordKind::Run,
                run_payload(self.authority, self.policy),
            ));
        }
        // Keys in sorted order: the canonical form (AUD).
        let payload = CanonicalObject::new()
            .value("args", &kept_arguments(tool, args))
            .field("args_hash", &hash_arguments(args))
            .field("class", &tool.map(|t| t.class));
        // Only a caller the upstream acts for: any other is refused at the capability step.
        let payload = match tool.and_then(|t| t.on_behalf_of.as_ref()) {
            Some(issuer) if self.authority.authenticated_by(issuer.as_str()) => {
                payload.value("on_behalf_of", &self.acting(issuer))
            }
            _ => payload,
        };
        let payload = payload
            .field("project", &tool.and_then(|t| t.project.as_ref()))
            .finish();
        records.push(self.base(at, RecordKind::Call, payload));
        records
    }

    /// Whom a call to an upstream that acts as its caller (AUTH-6) acts for, and who acts:
    /// the subject (the caller, authenticated by `issuer`), then the actors — the agent and
    /// its run when an agent calls, and Warden, as the issuer's client that exchanges.
    fn acting(&self, issuer: &crate::name::Name) -> Value {
        let mut actors = Vec::new();
        if let Some(agent) = &self.authority.agent {
            actors.push(serde_json::json!({"agent": agent, "run": self.run.id()}));
        }
        let client = self
            .policy
            .issuers()
            .iter()
            .find(|i| i.name == *issuer)
            .and_then(|i| i.exchange.as_ref());
        if let Some(client) = client {
            actors.push(serde_json::json!({"client": client.client_id}));
        }
        serde_json::json!({
            "actor": actors,
            "issuer": issuer,
            "subject": self.authority.principal.to_string(),
        })
    }

    /// A failed append of the run record must let the next call write it.
    pub(super) fn reopen_on_failure(&self) {
        self.run.reopen();
    }

    pub(super) fn decision(&self, at: Millis, step: Step, decision: &Decision) -> NewRecord {
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

    pub(super) fn outcome(
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
                    ToolOutput::Task { result } => ("task", hash_object(result), false),
                    ToolOutput::Failed { code, message } => (
                        "executed",
                        hash_value(&serde_json::json!({"code": code, "message": message})),
                        true,
                    ),
                    ToolOutput::Refused { error } => ("executed", hash_object(error), true),
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

/// What the call record keeps of the arguments: as the tool's policy says, never what its
/// schema marks secret; for a name that resolved to no tool, the redacted copy.
fn kept_arguments(tool: Option<&ToolDescriptor>, args: Option<&Map<String, Value>>) -> Value {
    match tool {
        Some(t) => keep(args, t.audit_arguments, &t.secret_arguments),
        None => redact(args),
    }
}

/// The outcome record of a call that was allowed and whose process stopped before its
/// outcome was recorded (REL-3): `interrupted`. The call is never run again; it may or may not
/// have taken effect upstream. `decision` is the call's allow record.
pub fn interrupted_record(decision: &AuditRecord, at: Millis) -> NewRecord {
    let payload = CanonicalObject::new()
        .field("decision_seq", &decision.seq)
        .field(
            "error",
            "interrupted: Warden stopped after allowing the call and before recording its \
             outcome; it was not run again and may or may not have taken effect upstream",
        )
        .field("status", INTERRUPTED)
        .field("step", Step::Execute.as_str())
        .finish();
    let d = &decision.record;
    NewRecord {
        at,
        kind: RecordKind::Outcome,
        run_id: d.run_id.clone(),
        call_id: d.call_id.clone(),
        principal: d.principal.clone(),
        agent: d.agent.clone(),
        tool: d.tool.clone(),
        decision: Some(INTERRUPTED.to_owned()),
        code: None,
        payload,
    }
}

/// The outcome of a call whose process stopped while it ran.
pub const INTERRUPTED: &str = "interrupted";

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
