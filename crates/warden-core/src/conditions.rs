//! Conditions on arguments (GOV-10): a ToolPolicy's `rules`, each a CEL expression (`when:`)
//! over the call and an effect — refuse it (`deny: message`), treat it as dangerous
//! (`risk: dangerous`, parked or staged under APR-1), or require one more capability
//! (`capability: NAME`).
//!
//! An expression is checked when its policy is applied (`crate::config::RuleSpec`): a syntax
//! error or an unknown variable is refused there, naming the rule and the position. Tools carry their
//! compiled rules ([`Rules`]), built with the catalog from the policy in force, so a call pays
//! evaluation only. Evaluation runs at GOV-2 step 5 on the arguments that passed step 2's
//! schema — the very arguments that execute — never on headers. An error at run time (a field
//! the arguments lack, a value of the wrong type, a result that is not a boolean) refuses the
//! call, naming the rule: a condition never fails open.
//!
//! The interpreter is the `cel` crate (cel-rust), a maintained implementation of the Common
//! Expression Language built for exactly this: small side-effect-free expressions over
//! request data. Cedar was not chosen: its policies decide permit/forbid over a principal, an
//! action and a resource, while these rules read arbitrary JSON arguments and choose among
//! three effects; CEL reads the arguments as they are.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::config::RuleSpec;
use crate::config::rules::compile;
use crate::name::Name;
use crate::principal::Principal;
use crate::time::Millis;

/// What a rule does when its expression holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Refuse, with this message.
    Deny(String),
    /// Treat the call as dangerous.
    Dangerous,
    /// Require this capability as well.
    Capability(String),
}

/// A compiled rule.
#[derive(Debug)]
pub struct Rule {
    /// `tool-policy:<key>:rule:<label>`.
    pub id: String,
    /// The expression as written.
    pub when: String,
    /// Its effect.
    pub effect: Effect,
    /// The compiled expression; none when it did not compile (a configuration that bypassed
    /// apply): the rule then refuses every call.
    program: Option<cel::Program>,
}

/// The compiled rules of one tool's policy, in order.
pub type Rules = Arc<[Rule]>;

/// Compiles the rules of the ToolPolicy `key`.
pub fn compile_rules(key: &str, specs: &[RuleSpec]) -> Rules {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| Rule {
            id: format!("tool-policy:{key}:rule:{}", spec.label(i)),
            when: spec.when.clone(),
            effect: match (&spec.deny, &spec.capability) {
                (Some(message), _) => Effect::Deny(message.clone()),
                (None, Some(cap)) => Effect::Capability(cap.clone()),
                (None, None) => Effect::Dangerous,
            },
            program: compile(&spec.when).ok(),
        })
        .collect()
}

/// What a call's rules say, in order: the first that refuses ends the evaluation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The rule that refused it, why, and whether for a missing capability.
    pub refused: Option<Refused>,
    /// The rule that made it dangerous, if one did.
    pub dangerous: Option<String>,
    /// Each rule evaluated: its id, whether it held, and the error if it failed (for
    /// explain).
    pub trace: Vec<(String, Result<bool, String>)>,
}

/// A refusal by a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The rule.
    pub rule: String,
    /// For the caller.
    pub message: String,
    /// A capability the run lacks (else a `deny` or an evaluation error).
    pub capability: bool,
}

/// Whether a run holds a concrete capability (the run's authority).
pub trait Holds {
    /// Whether it holds `cap`.
    fn holds(&self, cap: &str) -> bool;
}

/// The call's facts an expression reads.
pub struct Facts<'a> {
    /// The validated arguments.
    pub args: Option<&'a Map<String, Value>>,
    /// Who calls.
    pub principal: &'a Principal,
    /// The agent of the run.
    pub agent: Option<&'a Name>,
    /// The run's mode (`caller`, `agent`, …).
    pub mode: String,
    /// What the run holds.
    pub holds: &'a dyn Holds,
    /// The tool.
    pub tool: &'a str,
    /// Its project.
    pub project: Option<&'a Name>,
    /// When.
    pub now: Millis,
}

impl std::fmt::Debug for Facts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Facts")
            .field("principal", &self.principal)
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

/// Evaluates `rules` on `facts`, in order.
pub fn evaluate(rules: &[Rule], facts: &Facts<'_>) -> Verdict {
    let mut verdict = Verdict::default();
    if rules.is_empty() {
        return verdict;
    }
    let context = context(facts);
    for rule in rules {
        let held = match &rule.program {
            None => Err("the expression does not compile".to_owned()),
            Some(program) => match program.execute(&context) {
                Ok(cel::Value::Bool(b)) => Ok(b),
                Ok(other) => Err(format!(
                    "the expression gave {}, not true or false",
                    kind_of(&other)
                )),
                Err(e) => Err(e.to_string()),
            },
        };
        verdict.trace.push((rule.id.clone(), held.clone()));
        match held {
            Err(e) => {
                verdict.refused = Some(Refused {
                    rule: rule.id.clone(),
                    message: format!(
                        "`{}` is refused: its condition `{}` could not be evaluated ({e})",
                        facts.tool, rule.when
                    ),
                    capability: false,
                });
                return verdict;
            }
            Ok(false) => {}
            Ok(true) => match &rule.effect {
                Effect::Deny(message) => {
                    verdict.refused = Some(Refused {
                        rule: rule.id.clone(),
                        message: format!("`{}` is refused by policy: {message}", facts.tool),
                        capability: false,
                    });
                    return verdict;
                }
                Effect::Capability(cap) if !facts.holds.holds(cap) => {
                    verdict.refused = Some(Refused {
                        rule: rule.id.clone(),
                        message: format!(
                            "this run lacks the capability `{cap}` that `{}` requires when `{}`",
                            facts.tool, rule.when
                        ),
                        capability: true,
                    });
                    return verdict;
                }
                Effect::Capability(_) => {}
                Effect::Dangerous => {
                    verdict.dangerous.get_or_insert_with(|| rule.id.clone());
                }
            },
        }
    }
    verdict
}

fn kind_of(value: &cel::Value) -> &'static str {
    match value {
        cel::Value::Int(_) | cel::Value::UInt(_) | cel::Value::Float(_) => "a number",
        cel::Value::String(_) => "a string",
        cel::Value::Null => "null",
        cel::Value::List(_) => "a list",
        cel::Value::Map(_) => "a map",
        _ => "a value",
    }
}

/// CEL's standard library, built once: `cel::Context::default()` builds it anew, which cost
/// each call with a rule more than the rest of the governed call (`scripts/bench.sh rule`).
fn stdlib() -> Arc<cel::Env> {
    static STDLIB: std::sync::OnceLock<Arc<cel::Env>> = std::sync::OnceLock::new();
    STDLIB.get_or_init(|| Arc::new(cel::Env::stdlib())).clone()
}

/// The variables of one call.
fn context(facts: &Facts<'_>) -> cel::Context<'static, 'static> {
    let mut context = cel::Context::with_env(stdlib());
    let (kind, name) = match facts.principal {
        Principal::User { name } => ("user", name.to_string()),
        Principal::ServiceAccount { name } => ("serviceAccount", name.to_string()),
        Principal::AgentRun { agent, .. } => ("agentRun", agent.to_string()),
        Principal::AgentRole { role, .. } => ("agentRole", role.to_string()),
    };
    let values = [
        (
            "args",
            Value::Object(facts.args.cloned().unwrap_or_default()),
        ),
        ("principal", json!({"kind": kind, "name": name})),
        ("agent", json!(facts.agent.map(ToString::to_string))),
        ("project", json!(facts.project.map(ToString::to_string))),
        ("tool", json!(facts.tool)),
        ("mode", json!(facts.mode)),
        ("now", json!(facts.now.0)),
    ];
    for (name, value) in values {
        // A JSON value always converts; were it not to, the variable stays unset and the
        // expression reading it fails (refusing the call).
        let _ = context.add_variable(name, value);
    }
    context
}
