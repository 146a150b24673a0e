//! Where in the model's SQL an expression the analyzer rejected is written. DataFusion's
//! expressions keep source spans only on column references; the SQL expression around them
//! is the smallest one in the parsed query that contains all of them and has the rejected
//! expression's shape (the same operator, the same function, a CASE, …).

use datafusion::common::Span as DfSpan;
use datafusion::sql::sqlparser::ast::{visit_expressions, BinaryOperator, Expr, Query, Spanned};
use datafusion::sql::sqlparser::tokenizer::Span as SqlSpan;
use phlo_transform_core::diagnostic::{Location, Span};
use std::ops::ControlFlow;

use crate::analysis::Shape;

/// The span of the SQL expression shaped `shape` around the column references `anchors`;
/// with no anchors, the first call of the named function. `None` when nothing fits.
pub(crate) fn expression_span(query: &Query, anchors: &[DfSpan], shape: &Shape) -> Option<Span> {
    let covering = anchors
        .iter()
        .filter(|s| s.start.line > 0)
        .map(|s| ((s.start.line, s.start.column), (s.end.line, s.end.column)))
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
    let mut best: Option<SqlSpan> = None;
    let _ = visit_expressions(query, |e: &Expr| {
        let s = e.span();
        if s.start.line == 0 || !fits(shape, e) {
            return ControlFlow::<()>::Continue(());
        }
        let inside = |outer: &SqlSpan, inner: ((u64, u64), (u64, u64))| {
            (outer.start.line, outer.start.column) <= inner.0
                && (outer.end.line, outer.end.column) >= inner.1
        };
        let candidate = match covering {
            Some(c) => inside(&s, c),
            // Nothing to anchor to: only a named function call is unambiguous enough.
            None => matches!(shape, Shape::Function(_)) && best.is_none(),
        };
        let smaller = best.is_none_or(|b| {
            inside(
                &b,
                ((s.start.line, s.start.column), (s.end.line, s.end.column)),
            )
        });
        if candidate && smaller {
            best = Some(s);
        }
        ControlFlow::Continue(())
    });
    let span = match (best, covering) {
        (Some(s), _) => ((s.start.line, s.start.column), (s.end.line, s.end.column)),
        (None, Some(c)) => c,
        (None, None) => return None,
    };
    let at = |(line, column): (u64, u64)| Location {
        line: line as usize,
        column: column as usize,
    };
    Some(Span {
        start: at(span.0),
        end: at(span.1),
    })
}

fn fits(shape: &Shape, e: &Expr) -> bool {
    match (shape, e) {
        (Shape::Binary(op), Expr::BinaryOp { op: o, .. }) => same_operator(op, o),
        (Shape::Binary(op), Expr::Between { .. }) => op == "BETWEEN",
        (Shape::Function(name), Expr::Function(f)) => f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .is_some_and(|i| i.value.eq_ignore_ascii_case(name)),
        (Shape::Case, Expr::Case { .. }) => true,
        (Shape::InSubquery, Expr::InSubquery { .. }) => true,
        (Shape::InList, Expr::InList { .. }) => true,
        (Shape::Like, Expr::Like { .. } | Expr::ILike { .. } | Expr::SimilarTo { .. }) => true,
        (Shape::Cast, Expr::Cast { .. }) => true,
        (Shape::Node, _) => true,
        _ => false,
    }
}

/// DataFusion's operator spelling against sqlparser's (`!=` is `<>` there).
fn same_operator(datafusion: &str, sql: &BinaryOperator) -> bool {
    let sql = sql.to_string();
    let norm = |s: &str| {
        if s == "<>" {
            "!=".to_string()
        } else {
            s.to_uppercase()
        }
    };
    norm(datafusion) == norm(&sql)
}
