//! The decision contract (GOV-3): the outcome of a governed call as the caller sees it, with
//! one serializer.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::decision::{Denial, DenyCode};

/// What an executed tool returned.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolOutput {
    /// A built-in tool's result: the contract's `data`.
    Data(Value),
    /// An upstream's `CallToolResult`, passed through intact (content, `structuredContent`,
    /// and the upstream's own `isError`).
    Upstream {
        /// The result object as the upstream sent it.
        result: Map<String, Value>,
        /// The upstream's `isError`.
        is_error: bool,
    },
    /// A 2026-07-28 upstream needs input from the client first (`input_required`, with
    /// `inputRequests` and an opaque `requestState`), passed through intact; the client's
    /// retry is a new governed call.
    InputRequired {
        /// The result object as the upstream sent it.
        result: Map<String, Value>,
    },
    /// A built-in tool refused what it was asked by its own rules (task admission, an unknown
    /// task): the call was admitted and executed, and the tool said no — an error result with
    /// the tool's code and message, not a pipeline denial.
    Failed {
        /// What kind of refusal (the tool's own closed set, e.g. `OFFICE_SESSION`).
        code: String,
        /// For the caller.
        message: String,
    },
    /// The upstream runs the call as a task (the tasks extension, for a client that declares
    /// it): its `CreateTaskResult` as it sent it. The client follows the task with `tasks/get`.
    Task {
        /// The result object as the upstream sent it.
        result: Map<String, Value>,
    },
    /// The upstream refused the call with a JSON-RPC error (`{code, message, data?}`), passed
    /// on to the caller as that error: a protocol error (a tampered `requestState`, a client
    /// capability the call needs) is not the tool's output. Audited as an executed call whose
    /// result is an error.
    Refused {
        /// The error object as the upstream sent it.
        error: Map<String, Value>,
    },
}

/// The verdict of a governed call.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Executed, with its output.
    Executed {
        /// The output.
        output: ToolOutput,
        /// The rule that allowed it.
        rule: String,
    },
    /// Parked for a human decision.
    Pending {
        /// The approval to decide.
        approval_id: String,
        /// The rule that parked it.
        rule: String,
        /// Waiting for an approval, or staged: running when its veto window ends.
        kind: crate::approval::ApprovalKind,
    },
    /// Refused.
    Denied(Denial),
}

/// The outcome of one governed `tools/call`.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    /// The run.
    pub run_id: String,
    /// The call within the run.
    pub call_id: String,
    /// The tool name as requested.
    pub tool: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Whether the call left audit records (false for kill-switch and validation refusals,
    /// and when the store was unreachable).
    pub audited: bool,
}

/// The wire shape of GOV-3:
/// `{"status", "code"?, "data"?, "approvalId"?, "runId"?, "message"}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionContract {
    /// `executed`, `pending_approval` or `denied`.
    pub status: &'static str,
    /// Only when denied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<DenyCode>,
    /// Only when executed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Only when pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// The run, exactly when this call left records in it (AUD-1), so that every `runId` a
    /// caller gets is one `warden describe run` finds. A refusal that records nothing — a
    /// kill switch or invalid input (GOV-2 steps 1 and 2), or a call the store could not
    /// record (`UNAVAILABLE`) — carries none: its run may not exist at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// One line for the caller.
    pub message: String,
}

impl CallOutcome {
    /// The contract of this outcome. For upstream results `data` is the upstream's
    /// `structuredContent` when it has one, else its result object.
    pub fn contract(&self) -> DecisionContract {
        let data = match &self.verdict {
            Verdict::Executed { output, .. } => Some(match output {
                ToolOutput::Data(v) => v.clone(),
                ToolOutput::Upstream { result, .. } => result
                    .get("structuredContent")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(result.clone())),
                ToolOutput::InputRequired { result } | ToolOutput::Task { result } => {
                    Value::Object(result.clone())
                }
                ToolOutput::Refused { error } => Value::Object(error.clone()),
                ToolOutput::Failed { code, message } => {
                    serde_json::json!({"code": code, "message": message})
                }
            }),
            Verdict::Pending { .. } | Verdict::Denied(_) => None,
        };
        DecisionContract {
            data,
            ..self.contract_meta()
        }
    }

    /// `status` and `code` of the contract, without building it.
    pub fn status(&self) -> (&'static str, Option<DenyCode>) {
        match &self.verdict {
            Verdict::Executed { .. } => ("executed", None),
            Verdict::Pending { .. } => ("pending_approval", None),
            Verdict::Denied(d) => ("denied", Some(d.code)),
        }
    }

    /// The contract without `data`, as attached to passed-through upstream results (the
    /// result is not copied).
    pub fn contract_meta(&self) -> DecisionContract {
        let (status, code) = self.status();
        let (approval_id, message) = match &self.verdict {
            Verdict::Executed {
                output: ToolOutput::Failed { message, .. },
                ..
            } => (None, message.clone()),
            Verdict::Executed { .. } => (None, format!("executed `{}`", self.tool)),
            Verdict::Pending {
                approval_id, kind, ..
            } => (
                Some(approval_id.clone()),
                match kind {
                    crate::approval::ApprovalKind::Approval => format!(
                        "`{}` is parked as `{approval_id}` until a human approves it; see `warden approvals get {approval_id}` or the console's page /approvals/{approval_id}",
                        self.tool
                    ),
                    crate::approval::ApprovalKind::Staged => format!(
                        "`{}` is staged as `{approval_id}`: it runs when its veto window ends, unless vetoed; see `warden approvals get {approval_id}` or the console's page /approvals/{approval_id}",
                        self.tool
                    ),
                },
            ),
            Verdict::Denied(d) => (None, d.message.clone()),
        };
        DecisionContract {
            status,
            code,
            data: None,
            approval_id,
            run_id: self.audited.then(|| self.run_id.clone()),
            message,
        }
    }

    /// `isError` of the MCP result: true exactly when denied (GOV-3); for upstream results,
    /// the upstream's own flag.
    pub fn is_error(&self) -> bool {
        match &self.verdict {
            Verdict::Denied(_) => true,
            Verdict::Pending { .. } => false,
            Verdict::Executed { output, .. } => match output {
                ToolOutput::Data(_)
                | ToolOutput::InputRequired { .. }
                | ToolOutput::Task { .. } => false,
                ToolOutput::Refused { .. } | ToolOutput::Failed { .. } => true,
                ToolOutput::Upstream { is_error, .. } => *is_error,
            },
        }
    }

    /// The denial, if refused.
    pub fn denial(&self) -> Option<&Denial> {
        match &self.verdict {
            Verdict::Denied(d) => Some(d),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn outcome(verdict: Verdict) -> CallOutcome {
        CallOutcome {
            run_id: "run_1".into(),
            call_id: "c1".into(),
            tool: "t".into(),
            verdict,
            audited: true,
        }
    }

    #[test]
    fn the_advertised_output_schema_admits_the_output_and_every_decision_only() {
        let original = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"entity": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
            "type": "object",
            "properties": {"entities": {"type": "array", "items": {"$ref": "#/$defs/entity"}}},
            "required": ["entities"],
            "additionalProperties": false
        });
        let Value::Object(original) = original else {
            unreachable!()
        };
        let advertised = Value::Object(crate::schema::output_schema_admitting_decisions(&original));
        assert_eq!(advertised["type"], "object");
        let v = jsonschema::validator_for(&advertised).unwrap();
        assert!(v.is_valid(&json!({"entities": [{"name": "a"}]})));
        assert!(
            !v.is_valid(&json!({"entities": [{"nom": "a"}]})),
            "$ref still resolves"
        );
        assert!(!v.is_valid(&json!({"entities": [], "extra": 1})));
        let decisions = [
            Verdict::Pending {
                approval_id: "apr_1".into(),
                rule: "r".into(),
                kind: crate::approval::ApprovalKind::Approval,
            },
            Verdict::Denied(Denial::new(DenyCode::KillSwitch, "kill_switch", "pulled")),
        ];
        for verdict in decisions {
            let contract = serde_json::to_value(outcome(verdict).contract()).unwrap();
            assert!(v.is_valid(&contract), "{contract}");
        }
        assert!(!v.is_valid(&json!({"status": "executed", "runId": "r", "message": "m"})));
    }

    #[test]
    fn the_contract_has_exactly_the_fields_of_its_status() {
        let executed = outcome(Verdict::Executed {
            output: ToolOutput::Data(json!({"x": 1})),
            rule: "r".into(),
        });
        assert_eq!(
            serde_json::to_value(executed.contract()).unwrap(),
            json!({"status":"executed","data":{"x":1},"runId":"run_1","message":"executed `t`"})
        );
        assert!(!executed.is_error());
        let pending = outcome(Verdict::Pending {
            approval_id: "apr_1".into(),
            rule: "r".into(),
            kind: crate::approval::ApprovalKind::Approval,
        });
        assert_eq!(
            serde_json::to_value(pending.contract()).unwrap(),
            json!({"status":"pending_approval","approvalId":"apr_1","runId":"run_1","message":"`t` is parked as `apr_1` until a human approves it; see `warden approvals get apr_1` or the console's page /approvals/apr_1"})
        );
        assert!(!pending.is_error());
        let staged = outcome(Verdict::Pending {
            approval_id: "apr_2".into(),
            rule: "r".into(),
            kind: crate::approval::ApprovalKind::Staged,
        });
        assert_eq!(
            serde_json::to_value(staged.contract()).unwrap(),
            json!({"status":"pending_approval","approvalId":"apr_2","runId":"run_1","message":"`t` is staged as `apr_2`: it runs when its veto window ends, unless vetoed; see `warden approvals get apr_2` or the console's page /approvals/apr_2"})
        );
        let denied = outcome(Verdict::Denied(Denial::new(
            DenyCode::Capability,
            "rule",
            "no",
        )));
        assert_eq!(
            serde_json::to_value(denied.contract()).unwrap(),
            json!({"status":"denied","code":"CAPABILITY","runId":"run_1","message":"no"})
        );
        assert!(denied.is_error());
    }

    #[test]
    fn a_refusal_that_recorded_nothing_names_no_run() {
        let mut frozen = outcome(Verdict::Denied(Denial::new(
            DenyCode::KillSwitch,
            "kill_switch:all",
            "frozen",
        )));
        frozen.audited = false;
        assert_eq!(
            serde_json::to_value(frozen.contract()).unwrap(),
            json!({"status":"denied","code":"KILL_SWITCH","message":"frozen"})
        );
        let Value::Object(original) =
            json!({"type": "object", "required": ["x"], "additionalProperties": false})
        else {
            unreachable!()
        };
        let advertised = Value::Object(crate::schema::output_schema_admitting_decisions(&original));
        let v = jsonschema::validator_for(&advertised).unwrap();
        assert!(v.is_valid(&serde_json::to_value(frozen.contract()).unwrap()));
    }
}
