//! A ToolPolicy's `rules` as written (GOV-10): each a CEL expression (`when:`) over
//! [`VARIABLES`] and one effect, checked when applied — a syntax error or an unknown variable
//! is refused naming the rule and the position. `crate::conditions` compiles and evaluates
//! them.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::name::Name;

/// The risk a rule can give a call: only ever more than its tool's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuleRisk {
    /// Parked or staged as a dangerous mutation (APR-1).
    Dangerous,
}

/// The variables an expression may read.
pub const VARIABLES: [&str; 7] = [
    "args",
    "principal",
    "agent",
    "project",
    "tool",
    "mode",
    "now",
];

/// One rule of a ToolPolicy, as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleSpec {
    /// Its name, in rule ids (`tool-policy:<key>:rule:<name>`); by default its position
    /// (`0`, `1`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    /// A CEL expression over [`VARIABLES`]; the effect applies when it is true.
    pub when: String,
    /// Refuse the call with this message (`TOOL_POLICY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<String>,
    /// `dangerous`: the call parks or stages as a dangerous mutation would (APR-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<RuleRisk>,
    /// A capability the run must hold as well (`CAPABILITY` when it does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
}

impl RuleSpec {
    /// Its name in rule ids: its own, or its position among the policy's rules.
    pub fn label(&self, index: usize) -> String {
        self.name
            .as_ref()
            .map_or_else(|| index.to_string(), ToString::to_string)
    }

    /// What is wrong with it, as (field, message), the field empty for the rule as a whole:
    /// nothing when it compiles and has exactly one effect.
    pub fn problems(&self, index: usize) -> Vec<(&'static str, String)> {
        let label = self.label(index);
        let mut out = Vec::new();
        if let Err(e) = compile(&self.when) {
            out.push(("when", format!("rule `{label}`: {e}")));
        }
        let effects = [
            self.deny.is_some(),
            self.risk.is_some(),
            self.capability.is_some(),
        ];
        if effects.iter().filter(|e| **e).count() != 1 {
            out.push((
                "",
                format!(
                    "rule `{label}` needs exactly one effect: `deny: message`, `risk: dangerous` or `capability: NAME`"
                ),
            ));
        }
        if self.deny.as_deref().is_some_and(|m| m.trim().is_empty()) {
            out.push(("deny", format!("rule `{label}`: say why calls are refused")));
        }
        if self
            .capability
            .as_deref()
            .is_some_and(|c| c.trim().is_empty() || c.contains(char::is_whitespace))
        {
            out.push(("capability", format!("rule `{label}`: name one capability")));
        }
        out
    }
}

/// Why an expression does not compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CompileError(String);

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Compiles `when`, refusing a syntax error and a name other than [`VARIABLES`] (or a
/// macro's own iteration variable inside it), or a field of `principal` other than `kind` and
/// `name` — each with its line and column.
pub(crate) fn compile(when: &str) -> Result<cel::Program, CompileError> {
    let program = cel::Program::compile(when).map_err(|errors| {
        let first = errors.errors.first();
        // cel's positions are 1-based already.
        let (line, column) = first.map_or((1, 1), |e| (e.pos.0.max(1), e.pos.1.max(1)));
        CompileError(format!(
            "line {line}, column {column}: {}",
            first.map_or_else(|| errors.to_string(), |e| e.msg.clone())
        ))
    })?;
    let mut scope = Vec::new();
    if let Some((id, problem)) = check(program.expression(), &mut scope) {
        let (line, column) = program
            .source_info()
            .offset_for(id)
            .map_or((1, 1), |(start, _)| line_and_column(when, start));
        return Err(CompileError(format!(
            "line {line}, column {column}: {problem}"
        )));
    }
    Ok(program)
}

/// The first name `expr` reads that is not a variable (nor a macro's iteration variable in
/// `scope`), or field of `principal` it has not: the node's id and what is wrong.
fn check(expr: &cel::IdedExpr, scope: &mut Vec<String>) -> Option<(u64, String)> {
    use cel::common::ast::{EntryExpr, Expr};
    match &expr.expr {
        Expr::Ident(name) => {
            let known = VARIABLES.contains(&name.as_str())
                || name.starts_with('@')
                || scope.iter().any(|s| s == name);
            (!known).then(|| {
                (
                    expr.id,
                    format!(
                        "unknown variable `{name}`; an expression reads {}",
                        VARIABLES
                            .iter()
                            .map(|v| format!("`{v}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
        }
        Expr::Select(select) => {
            if let Expr::Ident(root) = &select.operand.expr
                && root == "principal"
                && !scope.iter().any(|s| s == root)
                && !["kind", "name"].contains(&select.field.as_str())
            {
                return Some((
                    expr.id,
                    format!(
                        "`principal` has no field `{}`; it has `kind` and `name`",
                        select.field
                    ),
                ));
            }
            check(&select.operand, scope)
        }
        Expr::Call(call) => call
            .target
            .iter()
            .map(|t| &**t)
            .chain(call.args.iter())
            .find_map(|e| check(e, scope)),
        Expr::Comprehension(c) => check(&c.iter_range, scope)
            .or_else(|| check(&c.accu_init, scope))
            .or_else(|| {
                let bound = [Some(&c.iter_var), c.iter_var2.as_ref(), Some(&c.accu_var)];
                let before = scope.len();
                scope.extend(bound.into_iter().flatten().cloned());
                let found = [&c.loop_cond, &c.loop_step, &c.result]
                    .into_iter()
                    .find_map(|e| check(e, scope));
                scope.truncate(before);
                found
            }),
        Expr::List(list) => list.elements.iter().find_map(|e| check(e, scope)),
        Expr::Map(map) => map.entries.iter().find_map(|e| match &e.expr {
            EntryExpr::MapEntry(m) => check(&m.key, scope).or_else(|| check(&m.value, scope)),
            EntryExpr::StructField(f) => check(&f.value, scope),
        }),
        Expr::Struct(st) => st.entries.iter().find_map(|e| match &e.expr {
            EntryExpr::MapEntry(m) => check(&m.key, scope).or_else(|| check(&m.value, scope)),
            EntryExpr::StructField(f) => check(&f.value, scope),
        }),
        Expr::Literal(_) | Expr::Unspecified => None,
    }
}

/// The 1-based line and column of the byte `offset` of `text`.
pub(crate) fn line_and_column(text: &str, offset: u32) -> (usize, usize) {
    let offset = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
