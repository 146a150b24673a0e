//! Typing past an unknown column, so that `check` reports every problem at once (SPEC §44).
//!
//! DataFusion stops planning a query at its first unknown column, and a model that does not
//! plan has no schema, so its readers could not be typed either: removing a column from a
//! model showed one T001 and hid the rest until it was fixed. Instead, the column reference is
//! replaced by NULL (a bare select-list reference keeps its name: `NULL AS region`) and the
//! query planned again, reporting the next unknown column, until it plans. The model keeps its
//! errors and is never built; the relaxed schema only lets its readers be typed, and of their
//! errors only unknown columns are reported (a NULL where a value was can cause others).

use datafusion::common::SchemaError;
use datafusion::error::DataFusionError;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, Query, SelectItem, SetExpr, Value, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// Relaxation rounds per model: one per distinct unknown column it references.
pub(crate) const MAX_ROUNDS: usize = 32;

/// The column a planning error says is unknown: `(qualifier, name)`.
pub(crate) fn unknown_column(e: &DataFusionError) -> Option<(Option<String>, String)> {
    let DataFusionError::SchemaError(error, _) = e.find_root() else {
        return None;
    };
    match error.as_ref() {
        SchemaError::FieldNotFound { field, .. } => Some((
            field.relation.as_ref().map(|r| r.to_string()),
            field.name.clone(),
        )),
        _ => None,
    }
}

/// Replaces every reference to `column` (with `qualifier`, when the error named one) in
/// `query` by NULL. Returns whether anything was replaced; nothing means relaxing cannot
/// make progress.
pub(crate) fn null_out(query: &mut Query, qualifier: Option<&str>, column: &str) -> bool {
    let mut v = NullOut {
        qualifier,
        column,
        replaced: false,
    };
    let _ = query.visit(&mut v);
    v.replaced
}

struct NullOut<'a> {
    qualifier: Option<&'a str>,
    column: &'a str,
    replaced: bool,
}

fn same(ident: &Ident, name: &str) -> bool {
    match ident.quote_style {
        Some(_) => ident.value == name,
        None => ident.value.eq_ignore_ascii_case(name),
    }
}

impl NullOut<'_> {
    fn matches(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Identifier(ident) => self.qualifier.is_none() && same(ident, self.column),
            Expr::CompoundIdentifier(parts) => match parts.split_last() {
                Some((last, prefix)) if same(last, self.column) => match self.qualifier {
                    // `s.region` for the error's `s`, `schema.t.region` for its `schema.t`.
                    Some(q) => {
                        let written: Vec<&str> = prefix.iter().map(|p| p.value.as_str()).collect();
                        written.join(".").eq_ignore_ascii_case(q)
                            || prefix
                                .last()
                                .is_some_and(|p| q.rsplit('.').next().is_some_and(|t| same(p, t)))
                    }
                    None => prefix.is_empty(),
                },
                _ => false,
            },
            _ => false,
        }
    }

    /// `s.region` in a select list becomes `NULL AS region`: readers still find the column.
    fn relax_projection(&mut self, body: &mut SetExpr) {
        match body {
            SetExpr::Select(select) => {
                for item in &mut select.projection {
                    if let SelectItem::UnnamedExpr(expr) = item {
                        if self.matches(expr) {
                            let alias = match expr {
                                Expr::CompoundIdentifier(parts) => parts.last().cloned(),
                                Expr::Identifier(ident) => Some(ident.clone()),
                                _ => None,
                            }
                            .expect("matches only identifiers");
                            *item = SelectItem::ExprWithAlias {
                                expr: Expr::value(Value::Null),
                                alias,
                            };
                            self.replaced = true;
                        }
                    }
                }
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.relax_projection(left);
                self.relax_projection(right);
            }
            _ => {}
        }
    }
}

impl VisitorMut for NullOut<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        self.relax_projection(&mut query.body);
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.matches(expr) {
            *expr = Expr::value(Value::Null);
            self.replaced = true;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn query(sql: &str) -> Query {
        let statement = Parser::parse_sql(&GenericDialect {}, sql)
            .unwrap()
            .remove(0);
        match statement {
            datafusion::sql::sqlparser::ast::Statement::Query(q) => *q,
            _ => panic!("not a query"),
        }
    }

    #[test]
    fn references_become_null_and_select_items_keep_their_names() {
        let mut q = query(
            "select s.code, s.region, upper(s.region) as r from sites as s \
             where s.region = 'eu' group by s.code, s.region",
        );
        assert!(null_out(&mut q, Some("s"), "region"));
        assert_eq!(
            q.to_string(),
            "SELECT s.code, NULL AS region, upper(NULL) AS r FROM sites AS s \
             WHERE NULL = 'eu' GROUP BY s.code, NULL"
        );
        // Another table's column of the same name is left alone.
        let mut q = query("select t.region from t join s on t.id = s.id");
        assert!(!null_out(&mut q, Some("s"), "region"));
        let mut q = query("select region from t");
        assert!(null_out(&mut q, None, "region"));
        assert_eq!(q.to_string(), "SELECT NULL AS region FROM t");
    }
}
