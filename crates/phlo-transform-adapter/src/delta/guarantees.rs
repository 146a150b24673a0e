//! What a model's query proves about every row it returns, as Delta constraints: a conjunct
//! of the outermost `WHERE` that compares an output column (passed through unchanged by the
//! select list) with literals holds for every output row, so it becomes a CHECK constraint;
//! `col IS NOT NULL` makes the column NOT NULL. Anything less obvious proves nothing.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, Query, SelectItem, SelectItemQualifiedWildcardKind, SetExpr,
    UnaryOperator,
};
use std::collections::BTreeSet;

/// Guarantees proved from the query text.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Proved {
    /// CHECK expressions over output column names, in query order.
    pub checks: Vec<String>,
    /// Output columns proved non-null.
    pub not_null: BTreeSet<String>,
}

/// The guarantees of `query`'s outermost `WHERE`.
pub fn prove(query: &Query) -> Proved {
    let mut out = Proved::default();
    let SetExpr::Select(select) = query.body.as_ref() else {
        return out;
    };
    let Some(selection) = &select.selection else {
        return out;
    };
    let outputs = Outputs::of(&select.projection);
    let mut conjuncts = Vec::new();
    split_and(selection, &mut conjuncts);
    for c in conjuncts {
        if let Expr::IsNotNull(inner) = c {
            if let Some(name) = outputs.name(inner) {
                out.not_null.insert(name);
            }
            continue;
        }
        if let Some(check) = renamed(c, &outputs) {
            let text = check.to_string();
            if !out.checks.contains(&text) {
                out.checks.push(text);
            }
        }
    }
    out
}

fn split_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        Expr::Nested(inner) => split_and(inner, out),
        other => out.push(other),
    }
}

/// Which column references of the `WHERE` clause are output columns, and under what name.
struct Outputs {
    /// (reference as written, lower-cased parts; output name)
    passthrough: Vec<(Vec<String>, String)>,
    /// `*`: every unqualified column is an output column of the same name.
    wildcard: bool,
    /// `t.*`: every column qualified by `t` is an output column.
    qualified_wildcards: Vec<String>,
}

fn parts(e: &Expr) -> Option<Vec<String>> {
    match e {
        Expr::Identifier(i) => Some(vec![i.value.to_lowercase()]),
        Expr::CompoundIdentifier(ids) => Some(ids.iter().map(|i| i.value.to_lowercase()).collect()),
        _ => None,
    }
}

impl Outputs {
    fn of(projection: &[SelectItem]) -> Outputs {
        let mut out = Outputs {
            passthrough: Vec::new(),
            wildcard: false,
            qualified_wildcards: Vec::new(),
        };
        for item in projection {
            match item {
                SelectItem::UnnamedExpr(e) => {
                    if let Some(p) = parts(e) {
                        let name = p.last().expect("non-empty").clone();
                        out.passthrough.push((p, name));
                    }
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    if let Some(p) = parts(expr) {
                        out.passthrough.push((p, alias.value.to_lowercase()));
                    }
                }
                SelectItem::Wildcard(_) => out.wildcard = true,
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => {
                    if let Some(last) = n.0.last().and_then(|p| p.as_ident()) {
                        out.qualified_wildcards.push(last.value.to_lowercase());
                    }
                }
                SelectItem::QualifiedWildcard(..) => {}
            }
        }
        out
    }

    /// The output name of a column reference, if the select list passes it through.
    fn name(&self, e: &Expr) -> Option<String> {
        let p = parts(e)?;
        let mut names: BTreeSet<&String> = self
            .passthrough
            .iter()
            .filter(|(written, _)| {
                *written == p || (p.len() == 1 && written.last() == p.last() && written.len() > 1)
            })
            .map(|(_, name)| name)
            .collect();
        let last = p.last()?;
        if (p.len() == 1 && self.wildcard)
            || (p.len() == 2 && self.qualified_wildcards.contains(&p[0]))
        {
            names.insert(last);
        }
        // A column passed through under two names proves each; keep it simple: one name only.
        (names.len() == 1).then(|| names.into_iter().next().expect("one").clone())
    }
}

fn is_literal(e: &Expr) -> bool {
    match e {
        Expr::Value(_) => true,
        Expr::UnaryOp {
            op: UnaryOperator::Minus | UnaryOperator::Plus,
            expr,
        } => matches!(expr.as_ref(), Expr::Value(_)),
        Expr::Nested(inner) => is_literal(inner),
        _ => false,
    }
}

fn column(name: String) -> Box<Expr> {
    let simple = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    Box::new(Expr::Identifier(if simple {
        Ident::new(name)
    } else {
        Ident::with_quote('"', name)
    }))
}

/// The conjunct over output names, if it compares one output column with literals.
fn renamed(e: &Expr, outputs: &Outputs) -> Option<Expr> {
    match e {
        Expr::BinaryOp { left, op, right }
            if matches!(
                op,
                BinaryOperator::Gt
                    | BinaryOperator::GtEq
                    | BinaryOperator::Lt
                    | BinaryOperator::LtEq
                    | BinaryOperator::Eq
                    | BinaryOperator::NotEq
            ) =>
        {
            if is_literal(right) {
                Some(Expr::BinaryOp {
                    left: column(outputs.name(left)?),
                    op: op.clone(),
                    right: right.clone(),
                })
            } else if is_literal(left) {
                Some(Expr::BinaryOp {
                    left: left.clone(),
                    op: op.clone(),
                    right: column(outputs.name(right)?),
                })
            } else {
                None
            }
        }
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } if is_literal(low) && is_literal(high) => Some(Expr::Between {
            expr: column(outputs.name(expr)?),
            negated: *negated,
            low: low.clone(),
            high: high.clone(),
        }),
        Expr::InList {
            expr,
            list,
            negated,
        } if list.iter().all(is_literal) => Some(Expr::InList {
            expr: column(outputs.name(expr)?),
            list: list.clone(),
            negated: *negated,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn proved(sql: &str) -> Proved {
        let statement = Parser::parse_sql(&GenericDialect {}, sql)
            .unwrap()
            .remove(0);
        let datafusion::sql::sqlparser::ast::Statement::Query(q) = statement else {
            panic!("not a query")
        };
        prove(&q)
    }

    #[test]
    fn where_conjuncts_over_passed_through_columns_are_checks() {
        let p = proved(
            "select o.id, o.amount as total, upper(o.site) as site from orders o \
             where o.amount > 10 and o.id is not null and site in ('a', 'b') and o.amount < o.id",
        );
        assert_eq!(p.checks, vec!["total > 10"]);
        assert_eq!(p.not_null.into_iter().collect::<Vec<_>>(), vec!["id"]);
        let p = proved("select * from t where day between '2024-01-01' and '2024-12-31'");
        assert_eq!(p.checks, vec!["day BETWEEN '2024-01-01' AND '2024-12-31'"]);
        assert_eq!(
            proved("select a from t union select b from u"),
            Proved::default()
        );
    }
}
