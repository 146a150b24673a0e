//! What a warehouse dialect cannot express (ARCHITECTURE decision 4: translation fails loudly,
//! never silently). A model's AST is printed for the target unchanged, so a construct
//! DataFusion accepts but the target's SQL lacks is reported here, at check time, at the
//! construct's own line and column — instead of as a runtime error, or a silent rewrite.
//!
//! Covered: data types the target has no name for (PostgreSQL has no `STRING`, `DOUBLE`,
//! `TINYINT`, unsigned integers or `DATETIME`; Trino no `STRING` or `TEXT`), DataFusion-only
//! functions (`arrow_cast`, `arrow_typeof`, `make_array`, `named_struct`), `QUALIFY` outside
//! DuckDB, `GROUP BY ALL` and `SELECT * EXCLUDE` outside DuckDB.

use datafusion::sql::sqlparser::ast::{
    DataType, Expr, GroupByExpr, Query, Select, SelectItem, Visit, Visitor,
};
use datafusion::sql::sqlparser::tokenizer::Span as SqlSpan;
use phlo_transform_core::diagnostic::{Location, Span};
use std::ops::ControlFlow;

/// One construct the target cannot express.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    pub message: String,
    pub help: String,
    pub span: Option<Span>,
}

/// Everything in `query` that `dialect` (`postgres`, `duckdb`, `trino`) cannot express; the
/// local engine's `datafusion` and unknown names accept everything.
pub fn unsupported(query: &Query, dialect: &str) -> Vec<Unsupported> {
    if !matches!(dialect, "postgres" | "duckdb" | "trino") {
        return Vec::new();
    }
    let mut v = Check {
        dialect,
        found: Vec::new(),
    };
    let _ = query.visit(&mut v);
    v.found
}

struct Check<'a> {
    dialect: &'a str,
    found: Vec<Unsupported>,
}

fn span(s: SqlSpan) -> Option<Span> {
    (s.start.line > 0).then_some(Span {
        start: Location {
            line: s.start.line as usize,
            column: s.start.column as usize,
        },
        end: Location {
            line: s.end.line as usize,
            column: s.end.column as usize,
        },
    })
}

impl Check<'_> {
    fn report(&mut self, what: String, help: String, at: SqlSpan) {
        self.found.push(Unsupported {
            message: format!("{what} cannot be expressed in {}", self.dialect),
            help,
            span: span(at),
        });
    }

    /// The target's name for `ty` when it has none of its own for the written one.
    fn missing_type(&self, ty: &DataType) -> Option<&'static str> {
        let written = ty.to_string().to_lowercase();
        let base = written.split('(').next().unwrap_or(&written).trim();
        match (self.dialect, base) {
            ("postgres", "string") => Some("text"),
            ("postgres", "double") => Some("double precision"),
            ("postgres", "tinyint") => Some("smallint"),
            ("postgres", "datetime") => Some("timestamp"),
            ("postgres", b) if b.contains("unsigned") || b.starts_with("uint") => {
                Some("a wider signed integer")
            }
            ("trino", "string") | ("trino", "text") => Some("varchar"),
            _ => None,
        }
    }
}

impl Visitor for Check<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        use datafusion::sql::sqlparser::ast::Spanned;
        match expr {
            Expr::Cast { data_type, .. } => {
                if let Some(instead) = self.missing_type(data_type) {
                    self.report(
                        format!("type `{data_type}`"),
                        format!("write `{instead}` instead"),
                        expr.span(),
                    );
                }
            }
            Expr::Function(f) => {
                let name = f.name.to_string().to_lowercase();
                if matches!(
                    name.as_str(),
                    "arrow_cast" | "arrow_typeof" | "make_array" | "named_struct"
                ) {
                    self.report(
                        format!("function `{name}` (DataFusion only)"),
                        "use the target's own function (dialects/<name>.toml lists them), or CAST"
                            .into(),
                        expr.span(),
                    );
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        use datafusion::sql::sqlparser::ast::{SetExpr, Spanned};
        if let SetExpr::Select(select) = q.body.as_ref() {
            self.select(select, q.span());
        }
        ControlFlow::Continue(())
    }
}

impl Check<'_> {
    fn select(&mut self, s: &Select, at: SqlSpan) {
        use datafusion::sql::sqlparser::ast::Spanned;
        if self.dialect != "duckdb" {
            if let Some(q) = &s.qualify {
                self.report(
                    "QUALIFY".into(),
                    "filter on the window function in an outer query".into(),
                    q.span(),
                );
            }
            if matches!(s.group_by, GroupByExpr::All(_)) {
                self.report(
                    "GROUP BY ALL".into(),
                    "list the grouping columns".into(),
                    at,
                );
            }
            for item in &s.projection {
                if let SelectItem::Wildcard(o) | SelectItem::QualifiedWildcard(_, o) = item {
                    if o.opt_exclude.is_some() || o.opt_except.is_some() {
                        self.report(
                            "SELECT * EXCLUDE / EXCEPT".into(),
                            "list the columns to keep".into(),
                            at,
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{default_dialect, parse_query};

    fn check(sql: &str, dialect: &str) -> Vec<Unsupported> {
        let q = parse_query(sql, "m.sql", &default_dialect()).unwrap().query;
        unsupported(&q, dialect)
    }

    #[test]
    fn types_the_target_lacks_are_found_where_written() {
        let found = check("select\n  cast(a as string) as s\nfrom t", "postgres");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].message.to_lowercase().contains("string") && found[0].help.contains("text"),
            "{found:?}"
        );
        // sqlparser spans a CAST by its operand (`a`), not the keyword.
        assert_eq!(
            found[0].span.unwrap().start,
            Location { line: 2, column: 8 }
        );
        assert!(check("select cast(a as string) as s from t", "duckdb").is_empty());
        assert!(check("select cast(a as string) as s from t", "datafusion").is_empty());
    }

    #[test]
    fn qualify_and_datafusion_functions_are_refused_outside_their_engines() {
        let q = "select a, row_number() over (order by a) as r from t qualify r = 1";
        assert_eq!(check(q, "postgres").len(), 1);
        assert!(check(q, "duckdb").is_empty());
        assert_eq!(
            check("select arrow_typeof(a) as t from x", "postgres").len(),
            1
        );
    }
}
