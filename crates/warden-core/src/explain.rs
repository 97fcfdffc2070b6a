//! Explain (GOV-7): what `tools/list` would show and what `tools/call` would decide, with the
//! rules — from the same functions the pipeline runs, without executing or recording anything.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::authority::Authority;
use crate::decision::{self, Decision, Denial, DenyCode, Gate, Purpose};
use crate::policy::Policy;
use crate::tool::Catalog;

/// One step of the explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExplainStep {
    /// `resolve`, `kill-switch`, `validate`, `capability`, `tool-policy`, `condition` (one per
    /// rule of the tool's policy, GOV-10), `write-budget`, `autonomy`.
    pub step: &'static str,
    /// `pass`, `deny`, `park`, `stage` or `limit` (a counter that would be consumed); for a
    /// condition `match`, `no-match` or `error`.
    pub outcome: &'static str,
    /// The rule, when one applies (hidden for tools the run cannot see, unless revealed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Details for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The answer of explain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The tool asked about.
    pub tool: String,
    /// Whether `tools/list` shows it to this run.
    pub visible: bool,
    /// What `tools/call` would answer: `executed`, `pending_approval` or `denied`.
    pub would: &'static str,
    /// The denial code, when denied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<DenyCode>,
    /// The message the caller would get, when denied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The rule that decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Every step evaluated, in GOV-2 order.
    pub steps: Vec<ExplainStep>,
    /// The policy version explained.
    pub policy_revision: u64,
}

/// Explains a call. `reveal` shows the rules of hidden tools (operators); without it, a hidden
/// tool is explained exactly like a tool that does not exist (RUN-6).
pub fn explain(
    policy: &Policy,
    catalog: &Catalog,
    authority: &Authority,
    name: &str,
    args: Option<&Map<String, Value>>,
    reveal: bool,
    now: crate::time::Millis,
) -> Explanation {
    let mut steps = Vec::new();
    let mut out = Explanation {
        tool: name.to_owned(),
        visible: false,
        would: "denied",
        code: None,
        message: None,
        rule: None,
        steps: Vec::new(),
        policy_revision: policy.revision,
    };
    let deny = |out: &mut Explanation,
                steps: &mut Vec<ExplainStep>,
                step: &'static str,
                d: Denial,
                show_rule: bool| {
        steps.push(ExplainStep {
            step,
            outcome: "deny",
            rule: show_rule.then(|| d.rule.clone()),
            detail: None,
        });
        out.code = Some(d.code);
        out.message = Some(d.message);
        out.rule = show_rule.then_some(d.rule);
        out.steps = std::mem::take(steps);
    };
    let tool = match decision::resolve_tool(catalog, authority, name) {
        Ok(t) => t,
        Err(d) => {
            deny(&mut out, &mut steps, "resolve", d, reveal);
            return out;
        }
    };
    out.visible = true;
    steps.push(pass("resolve", None));
    if let Some(d) = decision::kill_switch(policy, authority, tool) {
        deny(&mut out, &mut steps, "kill-switch", d, true);
        return out;
    }
    steps.push(pass("kill-switch", None));
    if let Some(d) = decision::validate(tool, args) {
        deny(&mut out, &mut steps, "validate", d, true);
        return out;
    }
    steps.push(pass("validate", None));
    match decision::decide(authority, tool, Purpose::Call { args }) {
        Decision::Deny(d) => {
            deny(&mut out, &mut steps, "capability", d, true);
            return out;
        }
        Decision::Allow { rule } => steps.push(pass("capability", Some(rule))),
    }
    if let Some(d) = decision::tool_policy(tool) {
        deny(&mut out, &mut steps, "tool-policy", d, true);
        return out;
    }
    // Each condition (GOV-10), whether it held and why.
    let verdict =
        crate::conditions::evaluate(&tool.rules, &decision::facts(authority, tool, args, now));
    for (rule, held) in &verdict.trace {
        let when = tool
            .rules
            .iter()
            .find(|r| &r.id == rule)
            .map(|r| r.when.as_str())
            .unwrap_or_default();
        steps.push(ExplainStep {
            step: "condition",
            outcome: match held {
                Ok(true) => "match",
                Ok(false) => "no-match",
                Err(_) => "error",
            },
            rule: Some(rule.clone()),
            detail: Some(match held {
                Ok(b) => format!("`{when}` is {b}"),
                Err(e) => format!("`{when}` could not be evaluated: {e}"),
            }),
        });
    }
    if let Err(d) = decision::conditions(authority, tool, args, now) {
        deny(&mut out, &mut steps, "tool-policy", d, true);
        return out;
    }
    let risk = if verdict.dangerous.is_some() {
        crate::tool::Risk::Dangerous
    } else {
        tool.risk
    };
    match policy.rate_limit_for(tool) {
        Some(limit) => steps.push(ExplainStep {
            step: "tool-policy",
            outcome: "limit",
            rule: Some(limit.rule),
            detail: Some(format!("{} calls per minute for everyone", limit.limit)),
        }),
        None => steps.push(pass("tool-policy", None)),
    }
    if tool.is_mutation() {
        let budgets = policy.write_budgets_for(authority.actor(), "<run>");
        if budgets.is_empty() {
            steps.push(pass("write-budget", None));
        }
        for b in budgets {
            steps.push(ExplainStep {
                step: "write-budget",
                outcome: "limit",
                rule: Some(b.rule),
                detail: Some(format!("{} writes per minute", b.limit)),
            });
        }
    }
    let level = policy.autonomy_for(authority.actor(), tool);
    match decision::autonomy_gate(tool, risk, &level) {
        Gate::Execute { rule } => {
            steps.push(pass("autonomy", Some(rule.clone())));
            out.would = "executed";
            out.rule = Some(rule);
        }
        Gate::Deny(d) => {
            deny(&mut out, &mut steps, "autonomy", d, true);
            return out;
        }
        Gate::Park { rule } => {
            steps.push(ExplainStep {
                step: "autonomy",
                outcome: "park",
                rule: Some(rule.clone()),
                detail: Some(format!(
                    "autonomy level {} parks it for a human approval (expires after {}s)",
                    level.level,
                    level.approval_ttl.as_secs()
                )),
            });
            out.would = "pending_approval";
            out.rule = Some(rule);
        }
        Gate::Stage { rule, window } => {
            steps.push(ExplainStep {
                step: "autonomy",
                outcome: "stage",
                rule: Some(rule.clone()),
                detail: Some(format!(
                    "autonomy level {} stages it: it runs after a {}s veto window unless vetoed",
                    level.level,
                    window.as_secs()
                )),
            });
            out.would = "pending_approval";
            out.rule = Some(rule);
        }
    }
    out.steps = steps;
    out
}

fn pass(step: &'static str, rule: Option<String>) -> ExplainStep {
    ExplainStep {
        step,
        outcome: "pass",
        rule,
        detail: None,
    }
}
