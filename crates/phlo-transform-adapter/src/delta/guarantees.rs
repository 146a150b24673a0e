//! What a model's query proves about every row it returns, as Delta constraints: a conjunct
//! of the outermost `WHERE` that compares an output column (passed through unchanged by the
//! select list) with literals holds for every output row, so it becomes a CHECK constraint;
//! `col IS NOT NULL` makes the column NOT NULL. Anything less obvious proves nothing.
//!
//! The WHERE clause filters rows before grouping: a column the query's plan groups in a
//! grouping set (ROLLUP, CUBE, GROUPING SETS) is null in the subtotal rows whatever the WHERE
//! clause proved, so the plan's real nullability takes those guarantees back.

use datafusion::logical_expr::{Distinct, Expr as PlanExpr, LogicalPlan};
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, Query, SelectItem, SelectItemQualifiedWildcardKind, SetExpr,
    UnaryOperator,
};
use std::collections::BTreeSet;

/// Guarantees proved from the query text.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Proved {
    /// CHECK expressions over output column names, in query order, with the column each
    /// constrains.
    pub checks: Vec<(String, String)>,
    /// Output columns proved non-null.
    pub not_null: BTreeSet<String>,
}

/// The guarantees of `query`'s outermost `WHERE` that still hold for the rows of `plan` (the
/// query's plan).
pub fn prove(query: &Query, plan: &LogicalPlan) -> Proved {
    let mut proved = prove_where(query);
    if proved.not_null.is_empty() && proved.checks.is_empty() {
        return proved;
    }
    let nulled: BTreeSet<String> = (0..plan.schema().fields().len())
        .filter(|&k| from_grouping_set(plan, k))
        .map(|k| plan.schema().field(k).name().to_lowercase())
        .collect();
    proved.not_null.retain(|c| !nulled.contains(c));
    proved.checks.retain(|(column, _)| !nulled.contains(column));
    proved
}

/// Does output column `k` of `plan` come, through the outermost query's pass-through nodes,
/// from a grouping-set aggregate's group columns (null in subtotal rows)?
fn from_grouping_set(plan: &LogicalPlan, mut k: usize) -> bool {
    let mut node = plan;
    loop {
        node = match node {
            LogicalPlan::Projection(p) => {
                let mut e = &p.expr[k];
                while let PlanExpr::Alias(a) = e {
                    e = &a.expr;
                }
                let PlanExpr::Column(c) = e else {
                    return false;
                };
                let Ok(i) = p.input.schema().index_of_column(c) else {
                    return false;
                };
                k = i;
                &p.input
            }
            LogicalPlan::Sort(s) => &s.input,
            LogicalPlan::Limit(l) => &l.input,
            LogicalPlan::Filter(f) => &f.input,
            LogicalPlan::SubqueryAlias(a) => &a.input,
            LogicalPlan::Distinct(Distinct::All(input)) => input,
            LogicalPlan::Window(w) if k < w.input.schema().fields().len() => &w.input,
            LogicalPlan::Aggregate(a) => {
                let groups = a.group_expr_len().unwrap_or(0);
                return matches!(a.group_expr.as_slice(), [PlanExpr::GroupingSet(_)]) && k < groups;
            }
            _ => return false,
        };
    }
}

/// The guarantees of `query`'s outermost `WHERE`, from its text alone.
fn prove_where(query: &Query) -> Proved {
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
        if let Some((column, check)) = renamed(c, &outputs) {
            let text = check.to_string();
            if !out.checks.iter().any(|(_, t)| *t == text) {
                out.checks.push((column, text));
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

/// The conjunct over output names, and the column it constrains, if it compares one output
/// column with literals.
fn renamed(e: &Expr, outputs: &Outputs) -> Option<(String, Expr)> {
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
                let name = outputs.name(left)?;
                Some((
                    name.clone(),
                    Expr::BinaryOp {
                        left: column(name),
                        op: op.clone(),
                        right: right.clone(),
                    },
                ))
            } else if is_literal(left) {
                let name = outputs.name(right)?;
                Some((
                    name.clone(),
                    Expr::BinaryOp {
                        left: left.clone(),
                        op: op.clone(),
                        right: column(name),
                    },
                ))
            } else {
                None
            }
        }
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } if is_literal(low) && is_literal(high) => {
            let name = outputs.name(expr)?;
            Some((
                name.clone(),
                Expr::Between {
                    expr: column(name),
                    negated: *negated,
                    low: low.clone(),
                    high: high.clone(),
                },
            ))
        }
        Expr::InList {
            expr,
            list,
            negated,
        } if list.iter().all(is_literal) => {
            let name = outputs.name(expr)?;
            Some((
                name.clone(),
                Expr::InList {
                    expr: column(name),
                    list: list.clone(),
                    negated: *negated,
                },
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::empty::EmptyTable;
    use datafusion::execution::context::SessionContext;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    use std::sync::Arc;

    fn query(sql: &str) -> Query {
        let statement = Parser::parse_sql(&GenericDialect {}, sql)
            .unwrap()
            .remove(0);
        let datafusion::sql::sqlparser::ast::Statement::Query(q) = statement else {
            panic!("not a query")
        };
        *q
    }

    fn proved(sql: &str) -> Proved {
        prove_where(&query(sql))
    }

    fn checks(p: &Proved) -> Vec<&str> {
        p.checks.iter().map(|(_, t)| t.as_str()).collect()
    }

    #[test]
    fn where_conjuncts_over_passed_through_columns_are_checks() {
        let p = proved(
            "select o.id, o.amount as total, upper(o.site) as site from orders o \
             where o.amount > 10 and o.id is not null and site in ('a', 'b') and o.amount < o.id",
        );
        assert_eq!(checks(&p), vec!["total > 10"]);
        assert_eq!(p.not_null.into_iter().collect::<Vec<_>>(), vec!["id"]);
        let p = proved("select * from t where day between '2024-01-01' and '2024-12-31'");
        assert_eq!(
            checks(&p),
            vec!["day BETWEEN '2024-01-01' AND '2024-12-31'"]
        );
        assert_eq!(
            proved("select a from t union select b from u"),
            Proved::default()
        );
    }

    /// Proves `sql` against its plan over a table of NOT NULL columns.
    async fn proved_with_plan(sql: &str) -> Proved {
        let ctx = SessionContext::new();
        let schema = Arc::new(Schema::new(vec![
            Field::new("region", DataType::Utf8, false),
            Field::new("product", DataType::Utf8, false),
            Field::new("amount", DataType::Int64, false),
        ]));
        ctx.register_table("sales", Arc::new(EmptyTable::new(schema)))
            .unwrap();
        let plan = ctx.state().create_logical_plan(sql).await.unwrap();
        prove(&query(sql), &plan)
    }

    #[tokio::test]
    async fn grouping_sets_take_back_what_the_where_clause_proved() {
        let plain = proved_with_plan(
            "select region, product, sum(amount) as total from sales \
             where region is not null and product > 'a' group by region, product",
        )
        .await;
        assert_eq!(plain.not_null.iter().collect::<Vec<_>>(), vec!["region"]);
        assert_eq!(checks(&plain), vec!["product > 'a'"]);
        for grouping in [
            "rollup (region, product)",
            "cube (region, product)",
            "grouping sets ((region, product), (region), ())",
        ] {
            let p = proved_with_plan(&format!(
                "select region, product, sum(amount) as total from sales \
                 where region is not null and product > 'a' group by {grouping}"
            ))
            .await;
            assert_eq!(p, Proved::default(), "{grouping}");
        }
        // A column not grouped in the grouping set keeps its guarantee through a window.
        let w = proved_with_plan(
            "select region, amount, rank() over (order by amount) as r from sales \
             where amount > 0",
        )
        .await;
        assert_eq!(checks(&w), vec!["amount > 0"]);
    }
}
