//! The fields a rule reads, against the tool's input schema (GOV-10): `args.amount` when the
//! schema declares no `amount` is refused at apply, naming the rule and the position — once
//! Warden knows the tool's schema (its pinned definition, GOV-9); before, such a rule fails
//! closed at run time.

use cel::common::ast::{EntryExpr, Expr};

use super::rules::{compile, line_and_column};
use super::{ConfigError, Located, Resource, error_at};
use crate::name::Name;

/// The problems of the ToolPolicies among `resources` whose rules read an argument their
/// tool's schema does not declare. `declared(project, tool)` is the properties the tool's
/// input schema declares, when it is known and declares them.
pub fn undeclared_fields(
    resources: &[Located],
    declared: impl Fn(&Name, &str) -> Option<Vec<String>>,
) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    for located in resources {
        let Resource::ToolPolicy(t) = &located.resource else {
            continue;
        };
        if t.rules.is_empty() {
            continue;
        }
        let Some(fields) = declared(&t.project, &t.tool) else {
            continue;
        };
        for (i, rule) in t.rules.iter().enumerate() {
            let Ok(program) = compile(&rule.when) else {
                continue;
            };
            let mut read = Vec::new();
            args_fields(program.expression(), &mut read);
            let Some((id, field)) = read.into_iter().find(|(_, f)| !fields.contains(f)) else {
                continue;
            };
            let (line, column) = program
                .source_info()
                .offset_for(id)
                .map_or((1, 1), |(start, _)| line_and_column(&rule.when, start));
            let known = if fields.is_empty() {
                "declares no arguments".to_owned()
            } else {
                format!(
                    "declares {}",
                    fields
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            errors.push(error_at(
                located,
                Some(&format!("rules[{i}].when")),
                format!(
                    "rule `{}`: line {line}, column {column}: `args.{field}` is not an argument of `{}`, whose input schema {known}",
                    rule.label(i),
                    t.tool
                ),
            ));
        }
    }
    errors
}

/// Every `args.<field>` that `expr` reads, with its node's id.
fn args_fields(expr: &cel::IdedExpr, out: &mut Vec<(u64, String)>) {
    match &expr.expr {
        Expr::Select(select) => {
            if let Expr::Ident(root) = &select.operand.expr
                && root == "args"
            {
                // At `args`, where the reader looks for it.
                out.push((select.operand.id, select.field.clone()));
            }
            args_fields(&select.operand, out);
        }
        Expr::Call(call) => {
            for e in call.target.iter().map(|t| &**t).chain(call.args.iter()) {
                args_fields(e, out);
            }
        }
        Expr::Comprehension(c) => {
            for e in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                args_fields(e, out);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(|e| args_fields(e, out)),
        Expr::Map(map) => map.entries.iter().for_each(|e| entry(&e.expr, out)),
        Expr::Struct(st) => st.entries.iter().for_each(|e| entry(&e.expr, out)),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn entry(e: &EntryExpr, out: &mut Vec<(u64, String)>) {
    match e {
        EntryExpr::MapEntry(m) => {
            args_fields(&m.key, out);
            args_fields(&m.value, out);
        }
        EntryExpr::StructField(f) => args_fields(&f.value, out),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::undeclared_fields;
    use crate::config::parse_documents;

    const POLICY: &str = "kind: ToolPolicy\nproject: payments\ntool: ledger__refund\nrules:\n  - name: big\n    when: \"args.amount > 500\"\n    risk: dangerous\n  - name: acct\n    when: \"has(args.acount) && [1].exists(x, x > args.limit)\"\n    deny: \"no\"\n";

    /// GOV-10: a field the tool's schema does not declare is refused at apply, naming the
    /// file, the resource, the rule and the position; a tool whose schema is not known yet,
    /// or a schema that declares what is read, passes.
    #[test]
    fn a_rule_reading_an_undeclared_argument_is_refused_where_it_is_written() {
        let resources = parse_documents("policy.yaml", POLICY).unwrap();
        let schema = |_: &crate::name::Name, tool: &str| {
            (tool == "ledger__refund").then(|| vec!["amount".to_owned(), "account".to_owned()])
        };
        let errors = undeclared_fields(&resources, schema);
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "policy.yaml (document 1): ToolPolicy `payments/ledger__refund`: field `rules[1].when`: rule `acct`: line 1, column 5: `args.acount` is not an argument of `ledger__refund`, whose input schema declares `amount`, `account`"
            ]
        );
        assert!(undeclared_fields(&resources, |_, _| None).is_empty());
        let all = |_: &crate::name::Name, _: &str| {
            Some(["amount", "acount", "limit"].map(str::to_owned).to_vec())
        };
        assert!(undeclared_fields(&resources, all).is_empty());
        let inside =
            |_: &crate::name::Name, _: &str| Some(["amount", "acount"].map(str::to_owned).to_vec());
        let errors = undeclared_fields(&resources, inside);
        assert!(
            errors[0].to_string().contains("`args.limit`"),
            "inside a macro too: {errors:?}"
        );
    }
}
